/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* escape_word()/unescape_word(), which keep paths one word in the state files: escaping any
 * string gives a word that unescapes to it, and unescaping any string either fails or gives
 * one whose escape unescapes to it again. */
#include "fuzz.h"
#include "path-util.h"

static void check_word(const char *w) {
        for (const unsigned char *c = (const unsigned char *) w; *c; c++)
                FUZZ_CHECK(*c > ' ' && *c < 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size), *escaped = NULL, *back = NULL, *u = NULL, *u_escaped = NULL,
                            *u_back = NULL;
        int r;

        if (!s)
                return 0;

        escaped = escape_word(s);
        if (!escaped)
                return 0;
        check_word(escaped);
        r = unescape_word(escaped, &back);
        FUZZ_CHECK(r == 0 || r == -ENOMEM);
        if (r == 0)
                FUZZ_CHECK(streq(back, s));

        r = unescape_word(s, &u);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0)
                return 0;
        FUZZ_CHECK(strlen(u) <= strlen(s));
        u_escaped = escape_word(u);
        if (!u_escaped)
                return 0;
        check_word(u_escaped);
        if (unescape_word(u_escaped, &u_back) == 0)
                FUZZ_CHECK(streq(u_back, u));
        return 0;
}
