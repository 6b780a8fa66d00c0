/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* text_escape_control(), which nsctl puts between a user's names and root's terminal: for any
 * input the output holds no control character (C0, DEL, C1) and is valid UTF-8. */
#include "fuzz.h"
#include "text-escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size), *e = NULL;

        if (!s)
                return 0;
        e = text_escape_control(s);
        if (!e)
                return 0;
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
        return 0;
}
