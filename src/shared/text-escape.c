/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text-escape.h"

/* The length of the valid UTF-8 sequence at 's' (1–4), or 0 if it is not one: overlong
 * forms, surrogates and code points above U+10FFFF are not valid. */
static size_t utf8_sequence_length(const unsigned char *s, uint32_t *ret_codepoint) {
        uint32_t c;
        size_t n;

        if (s[0] < 0x80) {
                *ret_codepoint = s[0];
                return 1;
        }
        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                n = 2;
                c = s[0] & 0x1f;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                n = 3;
                c = s[0] & 0x0f;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                n = 4;
                c = s[0] & 0x07;
        } else
                return 0;

        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret_codepoint = c;
        return n;
}

bool text_is_clean(const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        while (*p) {
                uint32_t c;
                size_t n = utf8_sequence_length(p, &c);

                if (n == 0 || c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f))
                        return false;
                p += n;
        }
        return true;
}

char *text_escape_control(const char *s) {
        const unsigned char *p = (const unsigned char *) (s ?: "");
        size_t len = strlen((const char *) p);
        char *out, *o;

        /* At most 6 bytes out ("\u009b") per 2 in, 4 ("\xff") per 1 in. */
        out = malloc(len * 4 + 1);
        if (!out)
                return NULL;

        for (o = out; *p;) {
                uint32_t c;
                size_t n = utf8_sequence_length(p, &c);

                if (n == 0) {
                        o += sprintf(o, "\\x%02x", *p);
                        p++;
                        continue;
                }
                if (n == 1) {
                        static const char named[] = { ['\a'] = 'a', ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n',
                                                      ['\v'] = 'v', ['\f'] = 'f', ['\r'] = 'r' };

                        if (c == '\\') {
                                *o++ = '\\';
                                *o++ = '\\';
                        } else if (c < sizeof named && named[c]) {
                                *o++ = '\\';
                                *o++ = named[c];
                        } else if (c < 0x20 || c == 0x7f)
                                o += sprintf(o, "\\x%02x", (unsigned) c);
                        else
                                *o++ = (char) c;
                        p++;
                        continue;
                }
                if (c >= 0x80 && c <= 0x9f)
                        o += sprintf(o, "\\u%04x", (unsigned) c);
                else {
                        memcpy(o, p, n);
                        o += n;
                }
                p += n;
        }
        *o = '\0';
        return out;
}
