/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "log.h"
#include "macros.h"
#include "mount-entry.h"
#include "nsctl-bus.h"
#include "strv.h"
#include "text-escape.h"

/* Exit codes of nsctl (see nsctl(1)) */
#define NSCTL_EXIT_SUCCESS 0
#define NSCTL_EXIT_FAILURE 1
#define NSCTL_EXIT_USAGE 2

typedef enum JsonMode {
        JSON_OFF,
        JSON_SHORT,
        JSON_PRETTY,
} JsonMode;

/* Command line state, shared by the verbs */
extern JsonMode arg_json;
extern bool arg_no_pager;
extern bool arg_no_legend;
extern bool arg_graph;
extern bool arg_follow;
extern bool arg_lazy;

/* Reported by a verb for bad usage: prints "nsctl VERB: message" and the verb's usage line. */
int verb_usage_error(const char *verb, const char *fmt, ...) _printf_(2, 3);

/* Output (nsctl-output.c) */
bool colors_enabled(void);
const char *ansi_highlight(void);
const char *ansi_green(void);
const char *ansi_yellow(void);
const char *ansi_red(void);
const char *ansi_grey(void);
const char *ansi_normal(void);
const char *ansi_underline(void);

void pager_open(void);
void pager_close(void);

char *format_timestamp(uint64_t usec);           /* "Wed 2025-12-03 07:09:01 UTC" */
char *format_timestamp_relative(uint64_t usec);  /* "5min ago" */

/* A column table in the systemd style. Cells are copied. A cell may carry a colour (an ANSI
 * sequence, ignored unless colours are enabled). */
typedef struct Table Table;
Table *table_new(size_t n_columns, const char *const *headers);
Table *table_free(Table *t);
static inline void table_freep(Table **t) {
        if (*t)
                table_free(*t);
}
int table_add_cell(Table *t, const char *text, const char *color);
int table_add_cellf(Table *t, const char *color, const char *fmt, ...) _printf_(3, 4);
void table_set_align_right(Table *t, size_t column, bool right);
int table_print(Table *t, FILE *f);
size_t table_get_rows(Table *t);

/* A minimal streaming JSON writer: keeps track of commas and indentation. */
typedef struct JsonWriter {
        FILE *f;
        bool pretty;
        unsigned depth;
        bool need_comma;
        bool after_key;
} JsonWriter;

void json_begin(JsonWriter *w, FILE *f, JsonMode mode);
void json_end(JsonWriter *w);
void json_object_begin(JsonWriter *w);
void json_object_end(JsonWriter *w);
void json_array_begin(JsonWriter *w);
void json_array_end(JsonWriter *w);
void json_key(JsonWriter *w, const char *key);
void json_string(JsonWriter *w, const char *s); /* NULL → null */
void json_unsigned(JsonWriter *w, uint64_t u);
void json_boolean(JsonWriter *w, bool b);
void json_null(JsonWriter *w);
void json_strv(JsonWriter *w, char **l);
void json_mount_entry(JsonWriter *w, const MountEntry *m);

/* Verbs */
int verb_mounts(sd_bus *bus, int argc, char **argv);
/* nsctl mounts as findmnt: -o/--output, --real, -t/--types (nsctl-mounts.c) */
extern char *arg_output;
extern bool arg_real;
extern char *arg_types;
/* The usage of mounts' arguments and options, checked before any connection (exit status 2). */
int verb_mounts_check(int argc, char **argv);
/* nsctl mounts [USER] --follow (nsctl-follow.c); user NULL: the host. */
int verb_mounts_follow(sd_bus *bus, const char *user);
int verb_eject(sd_bus *bus, int argc, char **argv);
/* nsctl status USER (nsctl-status.c), with list's helpers of nsctl.c. */
int verb_status(sd_bus *bus, int argc, char **argv);
const char *state_color(const char *state);
void json_namespace(JsonWriter *w, const NamespaceInfo *i);
int verb_attach(sd_bus *bus, int argc, char **argv);
/* nsctl-verify.c: reads files, never connects (bus is NULL). */
extern const char *arg_config; /* --config=FILE, as nsmanagerd's */
extern const char *arg_verify_user; /* --user=NAME: only that user's next login */
int verb_verify(sd_bus *bus, int argc, char **argv);

/* helpers for the verbs */
size_t utf8_width(const char *s);
int strv_push(char ***l, size_t *n, char *s);
