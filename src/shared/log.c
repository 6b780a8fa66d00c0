/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>

#include "log.h"

static int max_level = LOG_INFO;
static LogTarget log_target = LOG_TARGET_JOURNAL;
void log_set_target(LogTarget target) {
        log_target = target;
}

void log_set_max_level(int level) {
        max_level = level;
}

int log_internalv(int level, int error, const char *fmt, va_list ap) {
        int e = error < 0 ? -error : error;

        if (level <= max_level) {
                char buf[2048];

                errno = e;
                (void) vsnprintf(buf, sizeof buf, fmt, ap);
                /* One message, one line: a newline in something a user named (a path, a command)
                 * would start a line of theirs, with a "<N>" priority of their choice. */
                for (char *c = buf; *c; c++)
                        if ((unsigned char) *c < ' ' && *c != '\t')
                                *c = '?';
                if (log_target == LOG_TARGET_CONSOLE)
                        fprintf(stderr, "%s\n", buf);
                else
                        /* "<N>" prefixes are understood by journald on stderr streams. */
                        fprintf(stderr, "<%d>%s\n", level, buf);
        }
        return error < 0 ? error : -e;
}

int log_internal(int level, int error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_internalv(level, error, fmt, ap);
        va_end(ap);
        return r;
}
