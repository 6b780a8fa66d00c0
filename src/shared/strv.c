/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "macros.h"
#include "strv.h"

size_t strv_length(char *const *l) {
        size_t n = 0;
        for (; l && *l; l++)
                n++;
        return n;
}

bool strv_equal(char *const *a, char *const *b) {
        for (; a && *a && b && *b; a++, b++)
                if (!streq(*a, *b))
                        return false;
        return !(a && *a) && !(b && *b);
}

int strv_consume(char ***l, char *s) {
        _cleanup_free_ char *c = s;
        size_t n = strv_length(*l);
        char **nl;

        if (!c)
                return -ENOMEM;
        nl = realloc(*l, (n + 2) * sizeof(char *));
        if (!nl)
                return -ENOMEM;
        nl[n] = TAKE_PTR(c);
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        return strv_consume(l, strdup(s));
}

bool strv_remove(char **l, const char *s) {
        size_t k = 0;
        bool found = false;

        for (size_t i = 0; l && l[i]; i++)
                if (strcmp(l[i], s) == 0) {
                        free(l[i]);
                        found = true;
                } else
                        l[k++] = l[i];
        if (l)
                l[k] = NULL;
        return found;
}

char **strv_split_whitespace(const char *s) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));

        if (!l)
                return NULL;
        while (s && *s) {
                s += strspn(s, " \t");
                size_t n = strcspn(s, " \t");
                if (n == 0)
                        break;
                _cleanup_free_ char *w = strndup(s, n);
                if (!w || strv_extend(&l, w) < 0)
                        return NULL;
                s += n;
        }
        return TAKE_PTR(l);
}

char *strv_join(char *const *l, const char *separator) {
        size_t n = 0, k = strlen(separator);
        char *s, *p;

        for (char *const *i = l; i && *i; i++)
                n += strlen(*i) + (i == l ? 0 : k);
        s = p = malloc(n + 1);
        if (!s)
                return NULL;
        for (char *const *i = l; i && *i; i++) {
                if (i != l)
                        p = stpcpy(p, separator);
                p = stpcpy(p, *i);
        }
        *p = 0;
        return s;
}
