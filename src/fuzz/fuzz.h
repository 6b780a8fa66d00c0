/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the fuzz targets share. Each target defines LLVMFuzzerTestOneInput(): libFuzzer calls it
 * with generated inputs (-Dfuzz=true, clang), fuzz-main.c with the files of its corpus (every
 * other build, as a regression test). Both run it many times in one process: a target frees
 * what it allocates (the sanitizers count a leak as a crash) and keeps no state between
 * inputs. A check that fails is a bug found: FUZZ_CHECK aborts, which both drivers report. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                        \
        do {                                                                                    \
                if (!(cond)) {                                                                  \
                        fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                                \
                }                                                                               \
        } while (0)

/* The input as a C string: a copy up to its first NUL (strings from the bus, from a file read
 * line by line, never hold one). NULL only on OOM: the target then returns. */
static inline char *fuzz_string(const uint8_t *data, size_t size) {
        return strndup((const char *) data, size);
}

/* The input as a stream, for the parsers that read a FILE (a copy: fmemopen wants a writable
 * buffer even to read). NULL only on OOM; the caller frees *ret_buf after closing the stream. */
static inline FILE *fuzz_stream(const uint8_t *data, size_t size, char **ret_buf) {
        char *buf = malloc(size + 1);   /* + 1: malloc(0) may be NULL */
        FILE *f;

        *ret_buf = NULL;
        if (!buf)
                return NULL;
        if (size > 0)
                memcpy(buf, data, size);
        f = fmemopen(buf, size, "r");
        if (!f) {
                free(buf);
                return NULL;
        }
        *ret_buf = buf;
        return f;
}
