/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "conf-parser.h"
#include "macros.h"
#include "parse-util.h"
#include "path-util.h"
#include "strv.h"

static _printf_(2, 3) int message(char **ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(ret, fmt, ap) < 0)
                *ret = NULL;
        va_end(ap);
        return -EINVAL;
}

static void warn(const ConfigContext *c, const char *path, unsigned line, const char *fmt, ...) _printf_(4, 5);
static void warn(const ConfigContext *c, const char *path, unsigned line, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;
        va_list ap;

        if (!c->warn)
                return;
        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (m)
                c->warn(path, line, m, c->userdata);
}

static bool section_is_known(const ConfigContext *c, const char *section) {
        for (size_t i = 0; i < c->n_items; i++)
                if (streq(c->items[i].section, section))
                        return true;
        return false;
}

static const ConfigItem *find_item(const ConfigContext *c, const char *section, const char *key) {
        for (size_t i = 0; i < c->n_items; i++)
                if (streq(c->items[i].section, section) && streq(c->items[i].key, key))
                        return &c->items[i];
        return NULL;
}

static char *strip(char *s) {
        while (isspace((unsigned char) *s))
                s++;
        char *e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

/* One line: 0, -ENOMEM, or -EINVAL with *ret_message. *section tracks the current section. */
static int parse_line(const ConfigContext *c, const char *path, unsigned lineno, char *l, char **section,
                      char **ret_message) {
        const ConfigItem *item;
        char *eq;

        l = strip(l);
        if (!*l || *l == '#' || *l == ';')
                return 0;
        if (*l == '[') {
                size_t n = strlen(l);
                if (n < 3 || l[n - 1] != ']')
                        return message(ret_message, "invalid section header '%s'", l);
                free(*section);
                *section = strndup(l + 1, n - 2);
                if (!*section)
                        return -ENOMEM;
                if (!section_is_known(c, *section))
                        warn(c, path, lineno, "unknown section [%s], ignoring", *section);
                return 0;
        }
        eq = strchr(l, '=');
        if (!eq)
                return message(ret_message, "'%s' is not an assignment (KEY=VALUE)", l);
        if (!*section)
                return message(ret_message, "assignment outside of a section");
        *eq = 0;
        const char *key = strip(l), *value = strip(eq + 1);
        item = find_item(c, *section, key);
        if (!item) {
                if (section_is_known(c, *section))
                        warn(c, path, lineno, "unknown setting %s= in [%s], ignoring", key, *section);
                return 0;
        }
        if (!streq(item->section, c->section))
                return 0;
        return item->parse(value, (uint8_t *) c->data + item->offset, ret_message);
}

int config_parse_file(const ConfigContext *c, const char *path, char **ret_error) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL, *section = NULL;
        size_t allocated = 0;
        unsigned lineno = 0;

        if (!f)
                return errno == ENOENT ? 0 : -errno;
        while (getline(&line, &allocated, f) >= 0) {
                _cleanup_free_ char *msg = NULL;
                int r;

                lineno++;
                r = parse_line(c, path, lineno, line, &section, &msg);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (ret_error && asprintf(ret_error, "%s:%u: %s", path, lineno, msg ?: "invalid line") < 0)
                                *ret_error = NULL;
                        return -EINVAL;
                }
        }
        return ferror(f) ? -EIO : 0;
}

static int dropin_filter(const struct dirent *de) {
        size_t n = strlen(de->d_name);
        return de->d_name[0] != '.' && n > 5 && streq(de->d_name + n - 5, ".conf");
}

int config_dir_conf_names(const char *dir, char ***ret) {
        _cleanup_strv_free_ char **names = NULL;
        struct dirent **entries = NULL;
        int r = 0, n;

        n = scandir(dir, &entries, dropin_filter, alphasort);
        if (n < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                n = 0;
        }
        for (int i = 0; i < n; i++) {
                if (r >= 0) {
                        entries[i]->d_name[strlen(entries[i]->d_name) - 5] = 0;   /* drop ".conf" */
                        r = strv_extend(&names, entries[i]->d_name);
                }
                free(entries[i]);
        }
        free(entries);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(names);
        return 0;
}

int config_parse_file_with_dropins(const ConfigContext *c, const char *path, char **ret_error) {
        _cleanup_free_ char *dir = NULL;
        struct dirent **entries = NULL;
        int r, n;

        r = config_parse_file(c, path, ret_error);
        if (r < 0)
                return r;

        if (asprintf(&dir, "%s.d", path) < 0)
                return -ENOMEM;
        n = scandir(dir, &entries, dropin_filter, alphasort);
        if (n < 0)
                return errno == ENOENT ? 0 : -errno;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                if (r >= 0) {
                        if (asprintf(&p, "%s/%s", dir, entries[i]->d_name) < 0)
                                r = -ENOMEM;
                        else
                                r = config_parse_file(c, p, ret_error);
                }
                free(entries[i]);
        }
        free(entries);
        return r;
}

/* ---- value parsers ---- */

int config_parse_bool(const char *value, void *data, char **ret_message) {
        int b = parse_boolean(value);
        if (b < 0)
                return message(ret_message, "'%s' is not a boolean (yes/no)", value);
        *(bool *) data = b;
        return 0;
}

int config_parse_sec(const char *value, void *data, char **ret_message) {
        if (parse_sec(value, data) < 0)
                return message(ret_message, "'%s' is not a time span (e.g. 10s, 500ms, 1min)", value);
        return 0;
}

int config_parse_size(const char *value, void *data, char **ret_message) {
        if (parse_size(value, data) < 0)
                return message(ret_message, "'%s' is not a size (e.g. 512M, 2G)", value);
        return 0;
}

int config_parse_uid(const char *value, void *data, char **ret_message) {
        if (parse_uid(value, data) < 0)
                return message(ret_message, "'%s' is not a valid UID", value);
        return 0;
}

int config_parse_unsigned(const char *value, void *data, char **ret_message) {
        if (parse_unsigned(value, data) < 0)
                return message(ret_message, "'%s' is not a non-negative number", value);
        return 0;
}

static bool valid_absolute_path(const char *p) {
        return path_is_absolute_normalized(p) && !streq(p, "/");
}

int config_parse_absolute_path(const char *value, void *data, char **ret_message) {
        char **p = data, *c;

        if (!valid_absolute_path(value))
                return message(ret_message, "'%s' is not an absolute, normalized path other than /", value);
        c = strdup(value);
        if (!c)
                return -ENOMEM;
        free(*p);
        *p = c;
        return 0;
}

static int parse_list(const char *value, void *data, bool (*valid)(const char *), const char *what,
                      char **ret_message) {
        _cleanup_strv_free_ char **words = NULL;
        char ***l = data;

        if (!*value) {
                *l = strv_free(*l);
                return 0;
        }
        words = strv_split_whitespace(value);
        if (!words)
                return -ENOMEM;
        for (char **w = words; *w; w++) {
                if (valid && !valid(*w))
                        return message(ret_message, "'%s' is not a valid %s", *w, what);
                if (strv_contains((const char *const *) *l, *w))
                        continue;
                if (strv_extend(l, *w) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int config_parse_absolute_path_list(const char *value, void *data, char **ret_message) {
        return parse_list(value, data, valid_absolute_path, "absolute, normalized path other than /", ret_message);
}

static bool valid_name_or_number(const char *s) {
        return *s && strlen(s) <= 256 && !strpbrk(s, "/:\n");
}

int config_parse_name_list(const char *value, void *data, char **ret_message) {
        return parse_list(value, data, valid_name_or_number, "user name", ret_message);
}

int config_parse_raw_list(const char *value, void *data, char **ret_message) {
        /* Whitespace-separated like the others: entries are checked later by their user (a
         * [View] entry once its specifiers are expanded). */
        return parse_list(value, data, NULL, NULL, ret_message);
}
