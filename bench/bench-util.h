/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the timing tools of bench/ share. */
#pragma once

#include <stdlib.h>
#include <time.h>

static inline double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static inline int compare_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* Sorts t[0..n) and returns its median (the upper one for even n). */
static inline double median_of(double *t, size_t n) {
        qsort(t, n, sizeof(double), compare_double);
        return t[n / 2];
}
