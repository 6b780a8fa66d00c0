/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"
#include "path-util.h"

bool filename_is_valid(const char *s) {
        if (!s || !*s || streq(s, ".") || streq(s, ".."))
                return false;
        return !strchr(s, '/') && strlen(s) <= NAME_MAX;
}

bool path_is_absolute_normalized(const char *p) {
        if (!p || p[0] != '/' || strlen(p) >= PATH_MAX)
                return false;
        if (streq(p, "/"))
                return true;
        for (const char *c = p + 1;;) {
                size_t n = strcspn(c, "/");
                if (n == 0)             /* "//" or a trailing "/" */
                        return false;
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (n > NAME_MAX)
                        return false;
                if (!c[n])
                        return true;
                c += n + 1;
        }
}

const char *path_skip_root(const char *p) {
        while (*p == '/')
                p++;
        return p;
}

char *escape_word(const char *s) {
        char *r = malloc(strlen(s) * 4 + 1), *p = r;

        if (!r)
                return NULL;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                if (*c <= ' ' || *c >= 0x7f || *c == '\\')
                        p += sprintf(p, "\\x%02x", *c);
                else
                        *p++ = (char) *c;
        *p = 0;
        return r;
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

int unescape_word(const char *s, char **ret) {
        char *r = malloc(strlen(s) + 1), *p = r;

        if (!r)
                return -ENOMEM;
        while (*s) {
                if (*s != '\\') {
                        *p++ = *s++;
                        continue;
                }
                int hi = s[1] == 'x' ? hex_digit(s[2]) : -1, lo = hi >= 0 ? hex_digit(s[3]) : -1;
                if (lo < 0 || (hi == 0 && lo == 0)) {
                        free(r);
                        return -EINVAL;
                }
                *p++ = (char) (hi * 16 + lo);
                s += 4;
        }
        *p = 0;
        *ret = r;
        return 0;
}
