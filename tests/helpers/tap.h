/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A minimal TAP producer for the C unit tests (meson test, protocol : 'tap'), and the files a
 * test makes. */

#include <errno.h>
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

/* A test that cannot run here, said as TAP says it (meson shows it as skipped, not passed). */
static inline void tap_skip(const char *why) {
        printf("ok %d - # SKIP %s\n", ++tap_n_tests, why);
        fflush(stdout);
}

/* Prints the plan and returns the exit status. */
static inline int tap_finish(void) {
        printf("1..%d\n", tap_n_tests);
        return tap_n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A directory of the test's own, "$NSM_TEST_TMPDIR/nsm-test-NAME.XXXXXX" (meson sets it to the
 * build directory): never in the machine's /tmp. Fails a check if it cannot be made. */
static inline bool test_mkdtemp(char *dir, size_t size, const char *name) {
        snprintf(dir, size, "%s/nsm-test-%s.XXXXXX", getenv("NSM_TEST_TMPDIR") ?: ".", name);
        if (!mkdtemp(dir)) {
                check(false, "mkdtemp");
                return false;
        }
        return true;
}

static inline int test_write_file(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        fputs(content, f);
        return fclose(f) == 0 ? 0 : -errno;
}

static inline void test_rm_rf(const char *dir) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) system(cmd);
}
