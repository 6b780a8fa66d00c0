/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>

#include "log.h"

static int max_level = LOG_INFO;
static char last_error[1024];

const char *log_last_error(void) {
        return last_error;
}

void log_set_max_level(int level) {
        max_level = level;
}

int log_internal(int level, int error, const char *fmt, ...) {
        int e = error < 0 ? -error : error;

        if (level <= max_level || level <= LOG_ERR) {
                va_list ap;
                char buf[2048];

                errno = e;
                va_start(ap, fmt);
                (void) vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);
                if (level <= LOG_ERR) {
                        size_t n = strnlen(buf, sizeof last_error - 1);
                        memcpy(last_error, buf, n);
                        last_error[n] = 0;
                }
                /* "<N>" prefixes are understood by journald on stderr streams. */
                if (level <= max_level)
                        fprintf(stderr, "<%d>%s\n", level, buf);
        }
        return error < 0 ? error : -e;
}
