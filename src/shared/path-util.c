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
