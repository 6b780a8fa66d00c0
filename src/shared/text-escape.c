/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text-escape.h"

/* The length of the valid UTF-8 sequence at 's' (1–4) within 'left' bytes, or 0 if it is not
 * one: overlong forms, surrogates and code points above U+10FFFF are not valid. */
static size_t utf8_sequence_length(const unsigned char *s, size_t left, uint32_t *ret_codepoint) {
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
        if (n > left)
                return 0;

        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret_codepoint = c;
        return n;
}

static bool codepoint_is_control(uint32_t c) {
        return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f);
}

static char *hex_byte(char *o, unsigned char b) {
        static const char hex[] = "0123456789abcdef";

        *o++ = '\\';
        *o++ = 'x';
        *o++ = hex[b >> 4];
        *o++ = hex[b & 15];
        return o;
}

static char *escape(const unsigned char *p, size_t len, bool word) {
        char *out, *o;

        /* At most 4 bytes out ("\xff") per byte in. */
        if (len > (SIZE_MAX - 1) / 4)
                return NULL;
        out = malloc(len * 4 + 1);
        if (!out)
                return NULL;

        for (o = out; len > 0;) {
                uint32_t c;
                size_t n = utf8_sequence_length(p, len, &c);

                if (n == 0 || codepoint_is_control(c) || c == '\\' || (word && (n > 1 || c == ' '))) {
                        /* Each byte of it, so that the reverse needs to know nothing of UTF-8. */
                        n = n ?: 1;
                        for (size_t i = 0; i < n; i++)
                                o = hex_byte(o, p[i]);
                } else {
                        memcpy(o, p, n);
                        o += n;
                }
                p += n;
                len -= n;
        }
        *o = '\0';
        return out;
}

char *text_escape(const char *s) {
        s = s ?: "";
        return escape((const unsigned char *) s, strlen(s), false);
}

char *text_escape_bytes(const void *p, size_t n) {
        return escape(p ?: "", p ? n : 0, false);
}

char *text_escape_word(const char *s) {
        s = s ?: "";
        return escape((const unsigned char *) s, strlen(s), true);
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int text_unescape(const char *s, char **ret) {
        char *r, *p;

        if (!s)
                return -EINVAL;
        r = p = malloc(strlen(s) + 1);
        if (!r)
                return -ENOMEM;
        while (*s) {
                int hi, lo;

                if (*s != '\\') {
                        *p++ = *s++;
                        continue;
                }
                hi = s[1] == 'x' ? hex_digit(s[2]) : -1;
                lo = hi >= 0 ? hex_digit(s[3]) : -1;
                if (lo < 0 || (hi == 0 && lo == 0)) {
                        free(r);
                        return -EINVAL;
                }
                *p++ = (char) (hi * 16 + lo);
                s += 4;
        }
        *p = '\0';
        *ret = r;
        return 0;
}

bool text_is_clean(const char *s) {
        const unsigned char *p = (const unsigned char *) (s ?: "");
        size_t len = strlen((const char *) p);

        while (len > 0) {
                uint32_t c;
                size_t n = utf8_sequence_length(p, len, &c);

                if (n == 0 || codepoint_is_control(c))
                        return false;
                p += n;
                len -= n;
        }
        return true;
}

char *text_show(const char *s) {
        if (text_is_clean(s))
                return strdup(s ?: "");
        return text_escape(s);
}
