/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/path-util.c: paths and file names. TAP output. */
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

int main(void) {
        test_paths();
        return tap_finish();
}
