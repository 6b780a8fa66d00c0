/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <syslog.h>

#include "macros.h"

/* Logging for the daemon and nsctl. The errno-taking variants set errno for the format only,
 * so "%m" prints the error (the caller's errno is left as it was), and return the negative
 * errno, so a caller can write: return log_error_errno(r, "Failed to …: %m");
 *
 * A record is a message and a priority and, where the caller has them, fields in the
 * journal's sense ("NSM_USER=alice", "MESSAGE_ID=…": log_struct()). Where the record goes is
 * the target; a target that cannot carry fields shows the message alone. */

typedef enum LogTarget {
        /* Chosen at start (log_target_resolve()): the journal if stderr is the journal's
         * stream ($JOURNAL_STREAM, as systemd sets it for a service), plain lines if stderr is a
         * terminal, "<N>" lines otherwise. */
        LOG_TARGET_AUTO,
        /* "message" on stderr: for a person at a terminal (nsctl, a daemon run by hand). */
        LOG_TARGET_CONSOLE,
        /* "<N>message" on stderr: for a reader that takes the level from the prefix (journald
         * reads a service's stderr stream that way, without the fields). */
        LOG_TARGET_CONSOLE_PREFIXED,
        /* sd_journal_send(): the journal, with every field. */
        LOG_TARGET_JOURNAL,
        /* Nowhere. */
        LOG_TARGET_NULL,
        _LOG_TARGET_MAX,
        _LOG_TARGET_INVALID = -EINVAL,
} LogTarget;

const char *log_target_to_string(LogTarget t);
LogTarget log_target_from_string(const char *s);

/* LOG_EMERG … LOG_DEBUG as syslog names them ("err", "warning", "info", "debug", …). */
const char *log_level_to_string(int level);
int log_level_from_string(const char *s);

void log_set_target(LogTarget target);
LogTarget log_get_target(void);
/* LOG_TARGET_AUTO resolved as described above; any other target stays. */
void log_target_resolve(void);
void log_set_max_level(int level);
int log_get_max_level(void);
/* SYSLOG_IDENTIFIER= of journal records (default: the program's name). */
void log_set_identifier(const char *identifier);
const char *log_get_identifier(void);

/* Besides the target, a copy of every record logged (all its fields) in the journal's
 * export format, appended to an open file descriptor: for a daemon run where there is no
 * journald (the test sandbox), to read the fields back. -EBADF: none. The fd is kept. */
void log_set_export_fd(int fd);

int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);
int log_internalv(int level, int error, const char *fmt, va_list ap) _printf_(3, 0);

/* A record with fields: 'fields' is a NULL-terminated list of "KEY=value" strings (keys as
 * the journal wants them: capitals, digits, '_'; values may hold any byte but NUL), then the
 * message's format. */
int log_struct_internal(int level, int error, char *const *fields, const char *fmt, ...) _printf_(4, 5);

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
