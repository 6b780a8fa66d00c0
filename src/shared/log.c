/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internal(int level, int error, const char *fmt, ...) {
        int e = error < 0 ? -error : error;

        if (level <= max_level) {
                va_list ap;
                char buf[2048];

                errno = e;
                va_start(ap, fmt);
                (void) vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);
                /* "<N>" prefixes are understood by journald on stderr streams. */
                fprintf(stderr, "<%d>%s\n", level, buf);
        }
        return error < 0 ? error : -e;
}
