/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* NULL-terminated arrays of malloc'ed strings ("strv", as systemd calls them). A NULL strv
 * is the empty list everywhere. */

static inline char **strv_free(char **l) {
        if (l) {
                for (char **i = l; *i; i++)
                        free(*i);
                free(l);
        }
        return NULL;
}
static inline void strv_freep(char ***l) {
        *l = strv_free(*l);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))

static inline bool strv_contains(const char *const *l, const char *s) {
        if (!s)
                return false;
        for (; l && *l; l++)
                if (strcmp(*l, s) == 0)
                        return true;
        return false;
}
#define STR_IN_SET(s, ...) strv_contains((const char *const[]){ __VA_ARGS__, NULL }, (s))

size_t strv_length(char *const *l);
/* The same strings in the same order (NULL and empty alike). */
bool strv_equal(char *const *a, char *const *b);
/* Appends a copy of s. */
int strv_extend(char ***l, const char *s);
/* Appends s itself, which it takes (freed on failure; NULL: -ENOMEM, for strv_consume(l, strdup(x))). */
int strv_consume(char ***l, char *s);
/* Removes every entry equal to s; whether there was one. */
bool strv_remove(char **l, const char *s);
/* Splits on spaces and tabs; quotes are not interpreted. NULL on OOM. */
char **strv_split_whitespace(const char *s);
/* "a b c": NULL on OOM; "" for an empty list. */
char *strv_join(char *const *l, const char *separator);
