/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsctl.h"

/* ---- colours ---- */

bool colors_enabled(void) {
        static int cached = -1;

        if (cached < 0) {
                const char *term = getenv("TERM");

                cached = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !streq_ptr(term, "dumb") &&
                         !arg_json;
        }
        return cached;
}

#define DEFINE_ANSI(name, seq)                          \
        const char *name(void) {                        \
                return colors_enabled() ? (seq) : "";   \
        }

DEFINE_ANSI(ansi_highlight, "\x1B[0;1;39m")
DEFINE_ANSI(ansi_green, "\x1B[0;1;32m")
DEFINE_ANSI(ansi_yellow, "\x1B[0;1;33m")
DEFINE_ANSI(ansi_red, "\x1B[0;1;31m")
DEFINE_ANSI(ansi_grey, "\x1B[0;38;5;245m")
DEFINE_ANSI(ansi_normal, "\x1B[0m")
DEFINE_ANSI(ansi_underline, "\x1B[0;4m")

/* ---- pager ---- */

static pid_t pager_pid = 0;
static int saved_stdout = -EBADF;

void pager_open(void) {
        const char *pager;
        int fds[2];
        pid_t pid;

        if (arg_no_pager || pager_pid > 0)
                return;
        if (!isatty(STDOUT_FILENO))
                return;

        pager = getenv("NSCTL_PAGER");
        if (!pager)
                pager = getenv("PAGER");
        if (pager && (pager[0] == '\0' || streq(pager, "cat")))
                return;

        fflush(stdout);
        if (pipe2(fds, O_CLOEXEC) < 0)
                return;

        /* Keep the terminal's width for the pager's input: the tables are sized from it. */
        pid = fork();
        if (pid < 0) {
                (void) close(fds[0]);
                (void) close(fds[1]);
                return;
        }
        if (pid == 0) {
                sigset_t ss;

                sigemptyset(&ss);
                (void) sigprocmask(SIG_SETMASK, &ss, NULL);
                (void) dup2(fds[0], STDIN_FILENO);
                (void) close(fds[1]);
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
                /* F: quit if one screen, R: colours, X: no init, K: quit on ^C */
                (void) setenv("LESS", "FRXMK", 0);
                (void) setenv("LESSCHARSET", "utf-8", 0);
                if (pager) {
                        execlp("/bin/sh", "sh", "-c", pager, (char *) NULL);
                        _exit(EXIT_FAILURE);
                }
                execlp("less", "less", (char *) NULL);
                execlp("more", "more", (char *) NULL);
                /* No pager at all: copy through. */
                execlp("cat", "cat", (char *) NULL);
                _exit(EXIT_FAILURE);
        }

        saved_stdout = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        (void) dup2(fds[1], STDOUT_FILENO);
        (void) close(fds[0]);
        (void) close(fds[1]);
        pager_pid = pid;

        /* The pager handles ^C; we just stop when it goes away. */
        (void) signal(SIGINT, SIG_IGN);
}

void pager_close(void) {
        if (pager_pid <= 0)
                return;

        fflush(stdout);
        if (saved_stdout >= 0) {
                (void) dup2(saved_stdout, STDOUT_FILENO);
                saved_stdout = safe_close(saved_stdout);
        } else
                (void) close(STDOUT_FILENO);

        while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pager_pid = 0;
}

/* ---- time ---- */

char *format_timestamp(uint64_t usec) {
        char buf[64];
        struct tm tm;
        time_t t;

        if (usec == 0 || usec == UINT64_MAX)
                return strdup("n/a");

        t = (time_t) (usec / USEC_PER_SEC);
        if (!localtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                return strdup("n/a");
        return strdup(buf);
}

char *format_timestamp_relative(uint64_t usec) {
        struct timespec ts;
        uint64_t now, d;
        char *s = NULL;

        if (usec == 0 || usec == UINT64_MAX)
                return strdup("n/a");

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        now = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
        if (usec > now)
                return strdup("in the future");

        d = (now - usec) / USEC_PER_SEC;
        if (d < 60)
                (void) asprintf(&s, "%" PRIu64 "s ago", d);
        else if (d < 3600)
                (void) asprintf(&s, "%" PRIu64 "min %" PRIu64 "s ago", d / 60, d % 60);
        else if (d < 86400)
                (void) asprintf(&s, "%" PRIu64 "h %" PRIu64 "min ago", d / 3600, (d % 3600) / 60);
        else
                (void) asprintf(&s, "%" PRIu64 " days %" PRIu64 "h ago", d / 86400, (d % 86400) / 3600);
        return s;
}

/* ---- strings ---- */

size_t utf8_width(const char *s) {
        size_t w = 0;

        /* One column per code point: enough for the tree drawing characters and names. */
        for (; *s; s++)
                if (((unsigned char) *s & 0xC0) != 0x80)
                        w++;
        return w;
}

int strv_push(char ***l, size_t *n, char *s) {
        char **c;

        if (!s)
                return -ENOMEM;
        c = realloc(*l, (*n + 2) * sizeof(char *));
        if (!c) {
                free(s);
                return -ENOMEM;
        }
        c[(*n)++] = s;
        c[*n] = NULL;
        *l = c;
        return 0;
}

/* ---- tables ---- */

typedef struct Cell {
        char *text;
        const char *color;
} Cell;

struct Table {
        size_t n_columns;
        char **headers;
        bool *align_right;
        Cell *cells;
        size_t n_cells, allocated;
};

Table *table_new(size_t n_columns, const char *const *headers) {
        Table *t;

        t = calloc(1, sizeof(Table));
        if (!t)
                return NULL;
        t->n_columns = n_columns;
        t->headers = calloc(n_columns, sizeof(char *));
        t->align_right = calloc(n_columns, sizeof(bool));
        if (!t->headers || !t->align_right)
                return table_free(t);
        for (size_t i = 0; i < n_columns; i++) {
                t->headers[i] = strdup(headers[i]);
                if (!t->headers[i])
                        return table_free(t);
        }
        return t;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; t->headers && i < t->n_columns; i++)
                free(t->headers[i]);
        free(t->headers);
        free(t->align_right);
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i].text);
        free(t->cells);
        free(t);
        return NULL;
}

int table_add_cell(Table *t, const char *text, const char *color) {
        if (t->n_cells >= t->allocated) {
                size_t a = t->allocated ? t->allocated * 2 : 64;
                Cell *c = realloc(t->cells, a * sizeof(Cell));

                if (!c)
                        return -ENOMEM;
                t->cells = c;
                t->allocated = a;
        }
        /* Cells hold what the daemon sent (mount points, sources: a user's choice): escaped. */
        t->cells[t->n_cells] = (Cell) {
                .text = text_show(text),
                .color = color,
        };
        if (!t->cells[t->n_cells].text)
                return -ENOMEM;
        t->n_cells++;
        return 0;
}

int table_add_cellf(Table *t, const char *color, const char *fmt, ...) {
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return table_add_cell(t, s, color);
}

void table_set_align_right(Table *t, size_t column, bool right) {
        if (column < t->n_columns)
                t->align_right[column] = right;
}

size_t table_get_rows(Table *t) {
        return t->n_cells / t->n_columns;
}

static void print_padded(FILE *f, const char *text, const char *color, size_t width, bool right,
                         bool last) {
        size_t w = utf8_width(text);
        size_t pad = width > w ? width - w : 0;
        bool colored = color && *color && colors_enabled();

        if (right)
                fprintf(f, "%*s", (int) pad, "");
        if (colored)
                fputs(color, f);
        fputs(text, f);
        if (colored)
                fputs(ansi_normal(), f);
        if (!right && !last)
                fprintf(f, "%*s", (int) pad, "");
}

int table_print(Table *t, FILE *f) {
        _cleanup_free_ size_t *width = NULL;
        size_t rows = table_get_rows(t);

        width = calloc(t->n_columns, sizeof(size_t));
        if (!width)
                return -ENOMEM;

        for (size_t c = 0; c < t->n_columns; c++) {
                width[c] = utf8_width(t->headers[c]);
                for (size_t r = 0; r < rows; r++) {
                        size_t w = utf8_width(t->cells[r * t->n_columns + c].text);
                        if (w > width[c])
                                width[c] = w;
                }
        }

        if (!arg_no_legend) {
                for (size_t c = 0; c < t->n_columns; c++) {
                        bool last = c == t->n_columns - 1;

                        if (c > 0)
                                fputc(' ', f);
                        /* underline the whole header row, as systemd does */
                        print_padded(f, t->headers[c], ansi_underline(), width[c], t->align_right[c],
                                     last && !colors_enabled());
                }
                fputc('\n', f);
        }

        for (size_t r = 0; r < rows; r++) {
                for (size_t c = 0; c < t->n_columns; c++) {
                        const Cell *cell = t->cells + r * t->n_columns + c;

                        if (c > 0)
                                fputc(' ', f);
                        print_padded(f, cell->text, cell->color, width[c], t->align_right[c],
                                     c == t->n_columns - 1);
                }
                fputc('\n', f);
        }

        return 0;
}

/* ---- JSON ---- */

static void json_newline(JsonWriter *w) {
        if (!w->pretty)
                return;
        fputc('\n', w->f);
        for (unsigned i = 0; i < w->depth; i++)
                fputs("  ", w->f);
}

/* Called before every value or key */
static void json_prefix(JsonWriter *w) {
        if (w->after_key) {
                w->after_key = false;
                return;
        }
        if (w->need_comma)
                fputc(',', w->f);
        if (w->depth > 0)
                json_newline(w);
}

void json_begin(JsonWriter *w, FILE *f, JsonMode mode) {
        *w = (JsonWriter) {
                .f = f,
                .pretty = mode == JSON_PRETTY,
        };
}

void json_end(JsonWriter *w) {
        fputc('\n', w->f);
}

static void json_open(JsonWriter *w, char c) {
        json_prefix(w);
        fputc(c, w->f);
        w->depth++;
        w->need_comma = false;
}

static void json_close(JsonWriter *w, char c) {
        bool empty = !w->need_comma;

        w->depth--;
        if (!empty)
                json_newline(w);
        fputc(c, w->f);
        w->need_comma = true;
}

void json_object_begin(JsonWriter *w) {
        json_open(w, '{');
}
void json_object_end(JsonWriter *w) {
        json_close(w, '}');
}
void json_array_begin(JsonWriter *w) {
        json_open(w, '[');
}
void json_array_end(JsonWriter *w) {
        json_close(w, ']');
}

static void json_quote(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                switch (*p) {
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                case '\t':
                        fputs("\\t", f);
                        break;
                case '\r':
                        fputs("\\r", f);
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                fprintf(f, "\\u%04x", *p);
                        else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
                                /* C1 controls (U+0080–U+009F) are valid in JSON strings, but some
                                 * terminals act on them: escaped too, as JSON allows. */
                                fprintf(f, "\\u%04x", p[1]);
                                p++;
                        } else
                                fputc(*p, f); /* D-Bus strings are valid UTF-8 */
                }
        fputc('"', f);
}

void json_key(JsonWriter *w, const char *key) {
        json_prefix(w);
        json_quote(w->f, key);
        fputs(w->pretty ? ": " : ":", w->f);
        w->after_key = true;
        w->need_comma = true;
}

void json_string(JsonWriter *w, const char *s) {
        if (!s) {
                json_null(w);
                return;
        }
        json_prefix(w);
        json_quote(w->f, s);
        w->need_comma = true;
}

void json_unsigned(JsonWriter *w, uint64_t u) {
        json_prefix(w);
        fprintf(w->f, "%" PRIu64, u);
        w->need_comma = true;
}

void json_boolean(JsonWriter *w, bool b) {
        json_prefix(w);
        fputs(b ? "true" : "false", w->f);
        w->need_comma = true;
}

void json_null(JsonWriter *w) {
        json_prefix(w);
        fputs("null", w->f);
        w->need_comma = true;
}

void json_strv(JsonWriter *w, char **l) {
        json_array_begin(w);
        for (char **i = l; i && *i; i++)
                json_string(w, *i);
        json_array_end(w);
}

/* The fields of one mount, the same in `mounts --json` and in each line of `mounts --follow --json`. */
void json_mount_entry(JsonWriter *w, const MountEntry *m) {
        json_key(w, "mount_id");
        json_unsigned(w, m->id);
        json_key(w, "parent_id");
        json_unsigned(w, m->parent_id);
        json_key(w, "peer_group");
        json_unsigned(w, m->peer_group);
        json_key(w, "master_group");
        json_unsigned(w, m->master_group);
        json_key(w, "target");
        json_string(w, m->target);
        json_key(w, "source");
        json_string(w, m->source);
        json_key(w, "fstype");
        json_string(w, m->fstype);
        json_key(w, "propagation");
        json_string(w, m->propagation);
}
