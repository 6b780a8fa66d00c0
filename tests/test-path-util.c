/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/path-util.c: paths, file names and the escaped words of the state file. TAP output. */
#include "macros.h"
#include "path-util.h"
#include "tap.h"

static void test_paths(void) {
        static const char *good[] = { "/", "/mnt", "/a/b/c", "/a.b/..c/c..", "/with space" };
        static const char *bad[] = { "", "mnt", "./mnt", "/mnt/", "//mnt", "/a//b", "/a/./b", "/a/../b", "/..", "/.", "/a/.." };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                check(path_is_absolute_normalized(good[i]), "path '%s' is absolute and normalized", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                check(!path_is_absolute_normalized(bad[i]), "path '%s' is refused", bad[i]);
        check(streq(path_skip_root("///a/b"), "a/b"), "path_skip_root strips leading slashes");
        check(filename_is_valid("alice") && !filename_is_valid("..") && !filename_is_valid("a/b") && !filename_is_valid(""),
              "filename_is_valid");
}

static void test_escape_words(void) {
        static const char *words[] = { "/home/alice", "/with space/and\ttab", "/back\\slash", "/new\nline",
                                       "/\xc3\xa4\xc3\xb6", "" };
        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                _cleanup_free_ char *e = escape_word(words[i]), *u = NULL;
                check(e && !strpbrk(e, " \t\n") && unescape_word(e, &u) == 0 && streq(u, words[i]),
                      "escape/unescape round-trips word %zu as '%s'", i, e ?: "(null)");
        }
        _cleanup_free_ char *u = NULL;
        check(unescape_word("\\x0", &u) < 0 && unescape_word("\\q", &u) < 0 && unescape_word("\\x00", &u) < 0,
              "malformed escapes and NUL are refused");
}

int main(void) {
        test_paths();
        test_escape_words();
        return tap_finish();
}
