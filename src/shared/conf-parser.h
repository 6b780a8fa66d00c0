/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macros.h"

/* A small parser of systemd-style INI files ("[Section]", "Key=value", '#' and ';' comments)
 * and their drop-in directories (FILE.d/NAME.conf in lexical order). It never logs. Every
 * problem is an error, never a warning: an unknown section or setting (a typo), a setting in
 * the wrong section, a value its parser refuses. A file is read to its end whatever it holds,
 * so that each error is reported ("FILE:LINE: message", appended to the caller's list), not
 * only the first. */

/* Parses one value into data (a field of the caller's struct): 0, -ENOMEM, or -EINVAL with a
 * malloc'ed sentence in *ret_message (may be left NULL). */
typedef int (*ConfigParseFunc)(const char *value, void *data, char **ret_message);
/* A parser's refusal: the sentence (FILE:LINE: is put in front of it by the caller) in *ret,
 * and -EINVAL. */
int config_message(char **ret, const char *fmt, ...) _printf_(2, 3);

typedef struct ConfigItem {
        const char *section;
        const char *key;
        ConfigParseFunc parse;
        size_t offset;           /* of the field in the struct of its section (ConfigSection.data) */
} ConfigItem;

/* A section a file may hold, and the struct its assignments are parsed into. */
typedef struct ConfigSection {
        const char *name;
        void *data;
} ConfigSection;

/* One assignment, kept to be applied again later (config_assignments_apply()). */
typedef struct ConfigAssignment {
        const ConfigItem *item;
        char *value;
} ConfigAssignment;

typedef struct ConfigAssignments {
        ConfigAssignment *items;
        size_t n;
} ConfigAssignments;

typedef struct ConfigContext {
        const ConfigItem *items;   /* every setting of every section: the table of what exists */
        size_t n_items;
        /* The sections this file may hold. A section of the table that is not listed is an
         * error too ("does not belong in this file"). */
        const ConfigSection *sections;
        size_t n_sections;
        /* May be NULL: receives each assignment whose value parsed, in order, for the section
         * named record_section (0 or -ENOMEM). */
        const char *record_section;
        ConfigAssignments *record;
} ConfigContext;

/* Returns 0 if the file (or set) is valid. Otherwise the first error's negative errno: -EINVAL
 * for a line it refuses, the errno of a file it cannot read (-ENOENT where the file must
 * exist), each error appended to *errors as "FILE:LINE: message" (or "FILE: message"); and
 * -ENOMEM. Assignments of a file with an error may have been applied: parse into a struct of
 * your own and throw it away on error. */
int config_parse_file(const ConfigContext *c, const char *path, bool must_exist, char ***errors);
/* path, then path.d/NAME.conf (a missing directory has none). */
int config_parse_file_with_dropins(const ConfigContext *c, const char *path, bool must_exist, char ***errors);
/* The NAME of each NAME.conf in dir, in lexical order; a missing dir has none (*ret = NULL). */
int config_dir_conf_names(const char *dir, char ***ret);

void config_assignments_done(ConfigAssignments *a);
int config_assignments_add(ConfigAssignments *a, const ConfigItem *item, const char *value);
/* Applies the assignments to data, the struct of their section, in the order they were made:
 * values were checked when they were recorded, so only -ENOMEM can fail. */
int config_assignments_apply(const ConfigAssignments *a, void *data);

/* "a:1: x; b:2: y", at most 'max' of them, then how many more there are; NULL on OOM. */
char *config_errors_join(char *const *errors, size_t max);

/* Value parsers for ConfigItem.parse. Lists accumulate across assignments and files, and an
 * empty assignment resets them (systemd's rule); duplicates are dropped. */
int config_parse_bool(const char *value, void *data, char **ret_message);              /* bool */
int config_parse_sec(const char *value, void *data, char **ret_message);               /* uint64_t µs */
int config_parse_size(const char *value, void *data, char **ret_message);              /* uint64_t bytes */
int config_parse_uid(const char *value, void *data, char **ret_message);               /* uid_t */
int config_parse_unsigned(const char *value, void *data, char **ret_message);          /* unsigned */
int config_parse_absolute_path(const char *value, void *data, char **ret_message);     /* char *, not "/" */
int config_parse_absolute_path_list(const char *value, void *data, char **ret_message);/* char **, not "/" */
int config_parse_name_list(const char *value, void *data, char **ret_message);         /* char **: user names or numbers */
/* char **: whitespace-separated words, each checked by 'check' (0, -ENOMEM, or -EINVAL with a
 * sentence), for the value parsers of list settings with a syntax of their own. */
int config_parse_checked_list(const char *value, void *data, int (*check)(const char *word, char **ret_message),
                              char **ret_message);
