/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"
#include "string-table.h"
#include "text-escape.h"

static int max_level = LOG_INFO;
static LogTarget log_target = LOG_TARGET_AUTO;
static const char *log_identifier = NULL;
static int export_fd = -EBADF;

static const char *const log_target_table[_LOG_TARGET_MAX] = {
        [LOG_TARGET_AUTO] = "auto",
        [LOG_TARGET_CONSOLE] = "console",
        [LOG_TARGET_CONSOLE_PREFIXED] = "console-prefixed",
        [LOG_TARGET_JOURNAL] = "journal",
        [LOG_TARGET_NULL] = "null",
};
DEFINE_STRING_TABLE_LOOKUP(log_target, LogTarget);

static const char *const log_level_table[LOG_DEBUG + 1] = {
        [LOG_EMERG] = "emerg",   [LOG_ALERT] = "alert", [LOG_CRIT] = "crit", [LOG_ERR] = "err",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

const char *log_level_to_string(int level) {
        return level >= 0 && level <= LOG_DEBUG ? log_level_table[level] : NULL;
}

int log_level_from_string(const char *s) {
        for (int i = 0; s && i <= LOG_DEBUG; i++)
                if (strcmp(s, log_level_table[i]) == 0)
                        return i;
        return -EINVAL;
}

void log_set_target(LogTarget target) {
        log_target = target;
}

LogTarget log_get_target(void) {
        return log_target;
}

/* $JOURNAL_STREAM is "DEV:INO" of the stream systemd connected to stderr; it is inherited, so
 * it counts only if stderr is still that stream. */
static int stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return 0;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_target_resolve(void) {
        if (log_target != LOG_TARGET_AUTO)
                return;
        if (stderr_is_journal())
                log_target = LOG_TARGET_JOURNAL;
        else if (isatty(STDERR_FILENO))
                log_target = LOG_TARGET_CONSOLE;
        else
                log_target = LOG_TARGET_CONSOLE_PREFIXED;
}

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

void log_set_identifier(const char *identifier) {
        log_identifier = identifier;
}

const char *log_get_identifier(void) {
        return log_identifier ?: program_invocation_short_name;
}

void log_set_export_fd(int fd) {
        export_fd = fd;
}

/* --- the journal's export format ----------------------------------------------------- */

typedef struct Buffer {
        char *data;
        size_t size, allocated;
        bool oom;
} Buffer;

static void buffer_append(Buffer *b, const void *p, size_t n) {
        if (b->oom)
                return;
        if (b->size + n > b->allocated) {
                size_t a = (b->size + n) * 2 + 256;
                char *d = realloc(b->data, a);

                if (!d) {
                        b->oom = true;
                        return;
                }
                b->data = d;
                b->allocated = a;
        }
        memcpy(b->data + b->size, p, n);
        b->size += n;
}

/* "KEY=value\n", or where the value has a newline the binary form: "KEY\n", its size as a
 * little-endian 64-bit number, the value, "\n". */
static void export_field(Buffer *b, const char *field, size_t len) {
        const char *eq = memchr(field, '=', len);
        uint64_t n;
        unsigned char le[8];

        if (!eq)
                return;
        if (!memchr(eq + 1, '\n', len - (size_t) (eq + 1 - field))) {
                buffer_append(b, field, len);
                buffer_append(b, "\n", 1);
                return;
        }
        n = len - (size_t) (eq + 1 - field);
        for (int i = 0; i < 8; i++)
                le[i] = (unsigned char) (n >> (8 * i));
        buffer_append(b, field, (size_t) (eq - field));
        buffer_append(b, "\n", 1);
        buffer_append(b, le, sizeof le);
        buffer_append(b, eq + 1, (size_t) n);
        buffer_append(b, "\n", 1);
}

static void export_record(const struct iovec *iov, size_t n) {
        Buffer b = {};
        struct timespec ts;
        char stamp[64];
        int k;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        k = snprintf(stamp, sizeof stamp, "__REALTIME_TIMESTAMP=%llu",
                     (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000);
        export_field(&b, stamp, (size_t) k);
        k = snprintf(stamp, sizeof stamp, "_PID=%d", (int) getpid());
        export_field(&b, stamp, (size_t) k);
        for (size_t i = 0; i < n; i++)
                export_field(&b, iov[i].iov_base, iov[i].iov_len);
        buffer_append(&b, "\n", 1);
        /* One write to an O_APPEND file: the helpers that share it never interleave. */
        if (!b.oom)
                (void) !write(export_fd, b.data, b.size);
        free(b.data);
}

/* --- records ----------------------------------------------------------------------- */

#define LOG_FIELDS_MAX 32

static void log_dispatch(int level, int error, char *const *fields, const char *message) {
        char priority[sizeof "PRIORITY=" + 1], errno_field[32];
        _cleanup_free_ char *message_field = NULL, *identifier_field = NULL;
        struct iovec iov[LOG_FIELDS_MAX + 4];
        size_t n = 0;

        if (log_target == LOG_TARGET_CONSOLE || log_target == LOG_TARGET_AUTO)
                fprintf(stderr, "%s\n", message);
        else if (log_target == LOG_TARGET_CONSOLE_PREFIXED)
                fprintf(stderr, "<%d>%s\n", level, message);

        if (log_target != LOG_TARGET_JOURNAL && export_fd < 0)
                return;

        if (asprintf(&message_field, "MESSAGE=%s", message) < 0 ||
            asprintf(&identifier_field, "SYSLOG_IDENTIFIER=%s", log_get_identifier()) < 0)
                return;
        (void) snprintf(priority, sizeof priority, "PRIORITY=%d", level & LOG_PRIMASK);
        iov[n++] = (struct iovec) { message_field, strlen(message_field) };
        iov[n++] = (struct iovec) { priority, strlen(priority) };
        iov[n++] = (struct iovec) { identifier_field, strlen(identifier_field) };
        if (error != 0) {
                (void) snprintf(errno_field, sizeof errno_field, "ERRNO=%d", error < 0 ? -error : error);
                iov[n++] = (struct iovec) { errno_field, strlen(errno_field) };
        }
        for (size_t i = 0; fields && fields[i] && i < LOG_FIELDS_MAX; i++)
                iov[n++] = (struct iovec) { fields[i], strlen(fields[i]) };

        if (log_target == LOG_TARGET_JOURNAL)
                (void) sd_journal_sendv(iov, (int) n);
        if (export_fd >= 0)
                export_record(iov, n);
}

_printf_(4, 0)
static int log_format(int level, int error, char *const *fields, const char *fmt, va_list ap) {
        int saved_errno = errno, e = error < 0 ? -error : error;
        _cleanup_free_ char *escaped = NULL;
        char buf[2048];

        if (level > max_level)
                return error < 0 ? error : -e;

        errno = e;
        (void) vsnprintf(buf, sizeof buf, fmt, ap);
        /* One message, one line, valid UTF-8 (text-escape.h): a newline in something a user named
         * (a path, a command) would start a line of theirs, with a "<N>" priority of their
         * choice, and an escape sequence would reach the terminal of whoever reads the log. */
        escaped = text_escape(buf);

        log_dispatch(level, error, fields, escaped ?: "(out of memory)");
        errno = saved_errno;
        return error < 0 ? error : -e;
}

int log_internalv(int level, int error, const char *fmt, va_list ap) {
        return log_format(level, error, NULL, fmt, ap);
}

int log_internal(int level, int error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_format(level, error, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int log_struct_internal(int level, int error, char *const *fields, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_format(level, error, fields, fmt, ap);
        va_end(ap);
        return r;
}
