/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one escaping rule (text-escape.h), both ways: for any input, text_escape() and
 * text_show() give valid UTF-8 without a control character (C0, DEL, C1), text_escape_word()
 * one word of printable ASCII, and text_unescape() of either escape gives the input back;
 * unescaping any string either fails or gives one whose escape unescapes to it again. */
#include <errno.h>

#include "fuzz.h"
#include "text-escape.h"

static void check_clean(const char *e) {
        for (const unsigned char *c = (const unsigned char *) e; *c;) {
                size_t n;

                FUZZ_CHECK(*c >= 0x20 && *c != 0x7f);
                if (*c < 0x80) {
                        c++;
                        continue;
                }
                n = *c >= 0xf0 ? 4 : *c >= 0xe0 ? 3 : 2;
                FUZZ_CHECK(*c >= 0xc2 && *c <= 0xf4);
                FUZZ_CHECK(!(c[0] == 0xc2 && c[1] < 0xa0));      /* no C1 */
                for (size_t i = 1; i < n; i++)
                        FUZZ_CHECK((c[i] & 0xc0) == 0x80);
                c += n;
        }
        FUZZ_CHECK(text_is_clean(e));
}

static void check_word(const char *w) {
        for (const unsigned char *c = (const unsigned char *) w; *c; c++)
                FUZZ_CHECK(*c > ' ' && *c < 0x7f);
}

static void check_reverses(const char *escaped, const char *original) {
        _cleanup_free_ char *back = NULL;
        int r = text_unescape(escaped, &back);

        FUZZ_CHECK(r == 0 || r == -ENOMEM);
        if (r == 0)
                FUZZ_CHECK(streq(back, original));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size), *e = NULL, *w = NULL, *shown = NULL, *u = NULL,
                            *u_escaped = NULL;
        int r;

        if (!s)
                return 0;

        e = text_escape(s);
        if (e) {
                check_clean(e);
                check_reverses(e, s);
        }
        w = text_escape_word(s);
        if (w) {
                check_word(w);
                check_reverses(w, s);
        }
        shown = text_show(s);
        if (shown)
                check_clean(shown);

        r = text_unescape(s, &u);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0)
                return 0;
        FUZZ_CHECK(strlen(u) <= strlen(s));
        u_escaped = text_escape(u);
        if (u_escaped)
                check_reverses(u_escaped, u);
        return 0;
}
