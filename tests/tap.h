/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A minimal TAP producer for the C unit tests (meson test, protocol : 'tap'). */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n_tests, tap_n_failed;

static inline __attribute__((format(printf, 2, 3))) void check(bool ok, const char *fmt, ...) {
        va_list ap;
        tap_n_tests++;
        if (!ok)
                tap_n_failed++;
        printf("%s %d - ", ok ? "ok" : "not ok", tap_n_tests);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

/* Prints the plan and returns the exit status. */
static inline int tap_finish(void) {
        printf("1..%d\n", tap_n_tests);
        return tap_n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
