/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A small parser of systemd-style INI files ("[Section]", "Key=value", '#' and ';' comments)
 * and their drop-in directories (FILE.d/NAME.conf in lexical order). It never logs: a fatal
 * problem is returned as -EINVAL with "FILE:LINE: message" in *ret_error, and what is only
 * worth a warning (an unknown section or setting) goes to the caller's warn callback, so the
 * daemon can log it and a library user can stay silent. */

/* Parses one value into data (a field of the caller's struct): 0, -ENOMEM, or -EINVAL with a
 * malloc'ed sentence in *ret_message (may be left NULL). */
typedef int (*ConfigParseFunc)(const char *value, void *data, char **ret_message);

typedef struct ConfigItem {
        const char *section;
        const char *key;
        ConfigParseFunc parse;
        size_t offset;           /* of the field in the struct the context's data points to */
} ConfigItem;

typedef void (*ConfigWarnFunc)(const char *file, unsigned line, const char *message, void *userdata);

typedef struct ConfigContext {
        const ConfigItem *items;
        size_t n_items;
        /* Assignments of this section are applied to data; those of the other sections of the
         * table are checked only (so a typo in one section is found whichever is read). */
        const char *section;
        void *data;
        ConfigWarnFunc warn;     /* may be NULL */
        void *userdata;
} ConfigContext;

/* A missing file is not an error (0). */
int config_parse_file(const ConfigContext *c, const char *path, char **ret_error);
/* path, then path.d/NAME.conf. */
int config_parse_file_with_dropins(const ConfigContext *c, const char *path, char **ret_error);
/* The NAME of each NAME.conf in dir, in lexical order; a missing dir has none (*ret = NULL). */
int config_dir_conf_names(const char *dir, char ***ret);

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
int config_parse_raw_list(const char *value, void *data, char **ret_message);          /* char **: checked by their user */
