/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <syslog.h>

#include "macros.h"

/* Minimal logging to stderr. The errno-taking variants set errno so "%m" prints the error,
 * and return the negative errno, so a caller can write:
 * return log_error_errno(r, "Failed to …: %m"); */

typedef enum LogTarget {
        /* "<N>message": journald reads the level from the prefix of a service's stderr
         * stream. The default: the daemon runs as a service. */
        LOG_TARGET_JOURNAL,
        /* "message": plain lines for a person at a terminal (nsctl). */
        LOG_TARGET_CONSOLE,
} LogTarget;

void log_set_target(LogTarget target);
void log_set_max_level(int level);
int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);
int log_internalv(int level, int error, const char *fmt, va_list ap) _printf_(3, 0);

#define log_full_errno(level, error, ...) log_internal((level), (error), __VA_ARGS__)
#define log_debug(...) (void) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) (void) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) (void) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) (void) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) (void) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal(LOG_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_ERR, (e), __VA_ARGS__)
#define log_oom() log_internal(LOG_ERR, -ENOMEM, "Out of memory.")
