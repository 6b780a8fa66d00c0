/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Scope-bound cleanup, in the spirit of systemd's _cleanup_ helpers (written anew here:
 * libsystemd does not export them). */
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _pure_ __attribute__((pure))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void *memdup(const void *p, size_t n) {
        void *q = malloc(n);
        return q ? memcpy(q, p, n) : NULL;
}

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand ownership of a pointer or fd to the caller: the cleanup handler then sees NULL / -EBADF. */
#define TAKE_PTR(p)                             \
        ({                                      \
                __typeof__(p) _tp = (p);        \
                (p) = NULL;                     \
                _tp;                            \
        })
#define TAKE_FD(fd)                             \
        ({                                      \
                int _tf = (fd);                 \
                (fd) = -EBADF;                  \
                _tf;                            \
        })
#define TAKE_STRUCT(s)                          \
        ({                                      \
                __typeof__(s) _ts = (s);        \
                (s) = (__typeof__(s)) {};       \
                _ts;                            \
        })

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

static inline int streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}
#define streq(a, b) (strcmp((a), (b)) == 0)

#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL
