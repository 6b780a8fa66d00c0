/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/text-escape.c: the one escaping rule for text from the kernel or a user, both
 * ways. TAP output. */
#include <errno.h>
#include <string.h>

#include "macros.h"
#include "tap.h"
#include "text-escape.h"

static void expect(const char *in, const char *want, const char *what) {
        _cleanup_free_ char *got = text_escape(in), *back = NULL;

        check(got && strcmp(got, want) == 0, "%s: got '%s'", what, got ?: "(null)");
        check(got && text_is_clean(got), "%s: the escape is clean", what);
        check(got && text_unescape(got, &back) == 0 && streq(back, in ?: ""), "%s: the escape reverses", what);
}

static void test_escape(void) {
        expect("/home/alice/x", "/home/alice/x", "plain text is kept");
        expect("", "", "empty");
        expect(NULL, "", "NULL is empty");
        expect("caf\xc3\xa9 \xe2\x94\x9c\xe2\x94\x80 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x94\x9c\xe2\x94\x80 \xf0\x9f\x98\x80",
               "UTF-8 letters, blanks, box drawing and emoji are kept");
        expect("\xe2\x80\x8f\xe2\x80\xaeRTL", "\xe2\x80\x8f\xe2\x80\xaeRTL", "RTL marks are text, kept");
        /* A user's mount name as an attack: a title change, a screen clear, a bell. */
        expect("/home/alice/\x1b]0;PWNED\a\x1b[2J", "/home/alice/\\x1b]0;PWNED\\x07\\x1b[2J", "ESC and BEL are escaped");
        expect("a\nb\tc", "a\\x0ab\\x09c", "newline and tab as hex");
        expect("\x01\x1f\x7f", "\\x01\\x1f\\x7f", "other C0 and DEL as hex");
        expect("x\xc2\x9b" "31m", "x\\xc2\\x9b31m", "C1 CSI (U+009B) is escaped byte by byte");
        expect("\xc2\x80\xc2\x9f\xc2\xa0", "\\xc2\\x80\\xc2\\x9f\xc2\xa0", "C1 range bounds; U+00A0 is kept");
        expect("\x9b" "31m", "\\x9b31m", "a lone C1 byte (invalid UTF-8) is escaped");
        expect("\xff\xfe", "\\xff\\xfe", "invalid bytes as hex");
        expect("\xc0\xaf", "\\xc0\\xaf", "overlong encoding is not valid UTF-8");
        expect("\xed\xa0\x80", "\\xed\\xa0\\x80", "a surrogate is not valid UTF-8");
        expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", "above U+10FFFF is not valid UTF-8");
        expect("\xe2\x94", "\\xe2\\x94", "a truncated sequence at the end");
        expect("a\\x1b", "a\\x5cx1b", "a backslash is escaped, so an escape is never ambiguous");
}

static void test_bytes(void) {
        _cleanup_free_ char *e = text_escape_bytes("a\0b\xff", 4), *z = text_escape_bytes(NULL, 3);

        check(e && streq(e, "a\\x00b\\xff"), "NUL in an ay is escaped: '%s'", e ?: "(null)");
        check(z && streq(z, ""), "NULL bytes are empty");
}

static void test_words(void) {
        static const char *words[] = { "/home/alice", "/with space/and\ttab", "/back\\slash", "/new\nline",
                                       "/\xc3\xa4\xc3\xb6", "/\xff\x7f", "" };
        _cleanup_free_ char *u = NULL, *w = text_escape_word("/a b/\xc3\xa4\\");

        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                _cleanup_free_ char *e = text_escape_word(words[i]), *back = NULL;
                bool ascii = true;

                for (const char *c = e ?: ""; *c; c++)
                        ascii = ascii && *c > ' ' && *c < 0x7f;
                check(e && ascii && text_unescape(e, &back) == 0 && streq(back, words[i]),
                      "word %zu round-trips as '%s'", i, e ?: "(null)");
        }
        check(w && streq(w, "/a\\x20b/\\xc3\\xa4\\x5c"), "a word escapes blanks and non-ASCII: '%s'", w ?: "(null)");
        check(text_unescape("\\x0", &u) == -EINVAL && text_unescape("\\q", &u) == -EINVAL &&
              text_unescape("\\x00", &u) == -EINVAL && text_unescape("a\\", &u) == -EINVAL,
              "malformed escapes and NUL are refused");
        check(text_unescape("\\x4A\\x6b", &u) == 0 && streq(u, "Jk"), "either case of hex digit");
}

static void test_show(void) {
        _cleanup_free_ char *a = text_show("/a\\x1bb"), *b = text_show("/a\x1b\\"), *c = text_show(NULL);

        check(a && streq(a, "/a\\x1bb"), "clean text another process escaped is shown as it came");
        check(b && streq(b, "/a\\x1b\\x5c"), "text that is not clean is escaped: '%s'", b ?: "(null)");
        check(c && streq(c, ""), "NULL shows as empty");
        check(text_is_clean("caf\xc3\xa9") && !text_is_clean("\xc2\x9b") && !text_is_clean("\xff") && !text_is_clean("\t"),
              "text_is_clean");
}

int main(void) {
        test_escape();
        test_bytes();
        test_words();
        test_show();
        return tap_finish();
}
