/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/text-escape.c: what nsctl shows of text it did not write. TAP output. */
#include <string.h>

#include "tap.h"
#include "text-escape.h"

static void expect(const char *in, const char *want, const char *what) {
        char *got = text_escape_control(in);

        check(got && strcmp(got, want) == 0, "%s: got '%s'", what, got ?: "(null)");
        free(got);
}

int main(void) {
        expect("/home/alice/x", "/home/alice/x", "plain text is kept");
        expect("", "", "empty");
        expect(NULL, "", "NULL is empty");
        expect("caf\xc3\xa9 \xe2\x94\x9c\xe2\x94\x80 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x94\x9c\xe2\x94\x80 \xf0\x9f\x98\x80",
               "UTF-8 letters, box drawing and emoji are kept");
        /* A user's mount name as an attack: a title change, a screen clear, a bell. */
        expect("/home/alice/\x1b]0;PWNED\a\x1b[2J", "/home/alice/\\x1b]0;PWNED\\a\\x1b[2J", "ESC and BEL are escaped");
        expect("a\nb\tc\rd\be\ff\vg", "a\\nb\\tc\\rd\\be\\ff\\vg", "named C0 escapes");
        expect("\x01\x1f\x7f", "\\x01\\x1f\\x7f", "other C0 and DEL as hex");
        expect("x\xc2\x9b" "31m", "x\\u009b31m", "C1 CSI (U+009B) is escaped");
        expect("\xc2\x80\xc2\x9f\xc2\xa0", "\\u0080\\u009f\xc2\xa0", "C1 range bounds; U+00A0 is kept");
        expect("\x9b" "31m", "\\x9b31m", "a lone C1 byte (invalid UTF-8) is escaped");
        expect("\xff\xfe", "\\xff\\xfe", "invalid bytes as hex");
        expect("\xc0\xaf", "\\xc0\\xaf", "overlong encoding is not valid UTF-8");
        expect("\xed\xa0\x80", "\\xed\\xa0\\x80", "a surrogate is not valid UTF-8");
        expect("\xe2\x94", "\\xe2\\x94", "a truncated sequence at the end");
        expect("a\\x1b", "a\\\\x1b", "a backslash is doubled, so an escape is never ambiguous");
        return tap_finish();
}
