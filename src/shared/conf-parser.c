/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <strings.h>

#include "conf-parser.h"
#include "macros.h"
#include "parse-util.h"
#include "path-util.h"
#include "strv.h"

int config_message(char **ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(ret, fmt, ap) < 0)
                *ret = NULL;
        va_end(ap);
        return -EINVAL;
}

/* Appends "FILE:LINE: text" (LINE 0: "FILE: text") to *errors; -ENOMEM, or r. */
static int add_error(char ***errors, const char *path, unsigned line, const char *text, int r) {
        _cleanup_free_ char *e = NULL;
        int k = line > 0 ? asprintf(&e, "%s:%u: %s", path, line, text) : asprintf(&e, "%s: %s", path, text);

        if (k < 0 || strv_extend(errors, e) < 0)
                return -ENOMEM;
        return r;
}

static bool section_in_table(const ConfigContext *c, const char *section) {
        for (size_t i = 0; i < c->n_items; i++)
                if (streq(c->items[i].section, section))
                        return true;
        return false;
}

static const ConfigSection *find_section(const ConfigContext *c, const char *name) {
        for (size_t i = 0; i < c->n_sections; i++)
                if (streq(c->sections[i].name, name))
                        return &c->sections[i];
        return NULL;
}

static const ConfigItem *find_item(const ConfigContext *c, const char *section, const char *key) {
        for (size_t i = 0; i < c->n_items; i++)
                if ((!section || streq(c->items[i].section, section)) && streq(c->items[i].key, key))
                        return &c->items[i];
        return NULL;
}

/* Levenshtein distance, ignoring case, for "did you mean" (keys are short: a row each). */
static size_t edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b), row[64];

        if (lb >= ELEMENTSOF(row))
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t diag = row[0];
                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t up = row[j];
                        size_t cost = tolower((unsigned char) a[i - 1]) != tolower((unsigned char) b[j - 1]);
                        row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
                        diag = up;
                }
        }
        return row[lb];
}

/* The key of 'section' that 'key' most likely meant: a letter or two off, another case, or
 * the start of it ("StopDelay" for "StopDelaySec"). */
static const char *closest_key(const ConfigContext *c, const char *section, const char *key) {
        const char *best = NULL;
        size_t best_d = 3;

        for (size_t i = 0; i < c->n_items; i++) {
                if (!streq(c->items[i].section, section))
                        continue;
                size_t d = edit_distance(key, c->items[i].key);
                if (strlen(key) >= 4 && strncasecmp(c->items[i].key, key, strlen(key)) == 0)
                        d = MIN(d, (size_t) 1);
                if (d < best_d) {
                        best = c->items[i].key;
                        best_d = d;
                }
        }
        return best;
}

static const char *section_with_other_case(const ConfigContext *c, const char *section) {
        for (size_t i = 0; i < c->n_items; i++)
                if (strcasecmp(c->items[i].section, section) == 0)
                        return c->items[i].section;
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

typedef struct ParseState {
        char *section;           /* the current section, NULL before the first */
        bool section_refused;    /* its header was an error: its assignments are not looked at */
} ParseState;

static int section_header(const ConfigContext *c, ParseState *s, char *l, char **ret_message) {
        size_t n = strlen(l);
        const char *other;

        free(s->section);
        s->section = NULL;
        s->section_refused = true;
        if (n < 3 || l[n - 1] != ']')
                return config_message(ret_message, "invalid section header '%s'", l);
        s->section = strndup(l + 1, n - 2);
        if (!s->section)
                return -ENOMEM;
        if (find_section(c, s->section)) {
                s->section_refused = false;
                return 0;
        }
        if (section_in_table(c, s->section)) {
                _cleanup_free_ char *allowed = NULL;
                char **names = NULL;
                for (size_t i = 0; i < c->n_sections; i++)
                        if (strv_extend(&names, c->sections[i].name) < 0) {
                                strv_free(names);
                                return -ENOMEM;
                        }
                allowed = strv_join(names, "], [");
                strv_free(names);
                return config_message(ret_message, "section [%s] does not belong in this file, which holds only [%s]",
                                      s->section, allowed ?: "");
        }
        other = section_with_other_case(c, s->section);
        if (other)
                return config_message(ret_message, "unknown section [%s] (names are case-sensitive: [%s])", s->section,
                                      other);
        return config_message(ret_message, "unknown section [%s]", s->section);
}

/* One line: 0, -ENOMEM, or -EINVAL with *ret_message. */
static int parse_line(const ConfigContext *c, ParseState *s, char *l, char **ret_message) {
        const ConfigSection *section;
        const ConfigItem *item;
        const char *hint;
        char *eq;
        int r;

        l = strip(l);
        if (!*l || *l == '#' || *l == ';')
                return 0;
        if (*l == '[')
                return section_header(c, s, l, ret_message);
        eq = strchr(l, '=');
        if (!eq)
                return config_message(ret_message, "'%s' is not an assignment (KEY=VALUE)", l);
        if (s->section_refused)
                return 0;        /* reported once, at the header (a malformed one too) */
        if (!s->section)
                return config_message(ret_message, "assignment outside of a section");
        *eq = 0;
        const char *key = strip(l), *value = strip(eq + 1);
        item = find_item(c, s->section, key);
        if (!item) {
                const ConfigItem *elsewhere = find_item(c, NULL, key);
                if (elsewhere)
                        return config_message(ret_message, "%s= belongs in [%s], not in [%s]", key, elsewhere->section,
                                              s->section);
                hint = closest_key(c, s->section, key);
                if (hint)
                        return config_message(ret_message, "unknown setting %s= in [%s] (did you mean %s=?)", key,
                                              s->section, hint);
                return config_message(ret_message, "unknown setting %s= in [%s]", key, s->section);
        }
        section = find_section(c, s->section);
        r = item->parse(value, (uint8_t *) section->data + item->offset, ret_message);
        if (r < 0)
                return r;
        if (c->record && c->record_section && streq(item->section, c->record_section))
                return config_assignments_add(c->record, item, value);
        return 0;
}

int config_parse_file(const ConfigContext *c, const char *path, bool must_exist, char ***errors) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        ParseState s = {};
        size_t allocated = 0;
        unsigned lineno = 0;
        int r = 0;

        if (!f) {
                if (errno == ENOENT && !must_exist)
                        return 0;
                r = -errno;
                return add_error(errors, path, 0, strerror(-r), r);
        }
        while (getline(&line, &allocated, f) >= 0) {
                _cleanup_free_ char *msg = NULL;
                int k;

                lineno++;
                k = parse_line(c, &s, line, &msg);
                if (k == -ENOMEM) {
                        r = k;
                        break;
                }
                if (k < 0) {
                        k = add_error(errors, path, lineno, msg ?: "invalid line", -EINVAL);
                        if (r >= 0 || k == -ENOMEM)
                                r = k;
                        if (r == -ENOMEM)
                                break;
                }
        }
        free(s.section);
        if (r >= 0 && ferror(f))
                r = add_error(errors, path, 0, "read error", -EIO);
        return r;
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

int config_parse_file_with_dropins(const ConfigContext *c, const char *path, bool must_exist, char ***errors) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *dir = NULL;
        int r, k;

        r = config_parse_file(c, path, must_exist, errors);
        if (r == -ENOMEM)
                return r;

        if (asprintf(&dir, "%s.d", path) < 0)
                return -ENOMEM;
        k = config_dir_conf_names(dir, &names);
        if (k < 0)
                return k == -ENOMEM ? k : add_error(errors, dir, 0, strerror(-k), r < 0 ? r : k);
        for (char **n = names; n && *n; n++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s/%s.conf", dir, *n) < 0)
                        return -ENOMEM;
                k = config_parse_file(c, p, true, errors);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && r >= 0)
                        r = k;
        }
        return r;
}

/* ---- kept assignments ---- */

void config_assignments_done(ConfigAssignments *a) {
        for (size_t i = 0; i < a->n; i++)
                free(a->items[i].value);
        free(a->items);
        *a = (ConfigAssignments) {};
}

int config_assignments_add(ConfigAssignments *a, const ConfigItem *item, const char *value) {
        ConfigAssignment *n = realloc(a->items, (a->n + 1) * sizeof(ConfigAssignment));
        char *v;

        if (!n)
                return -ENOMEM;
        a->items = n;
        v = strdup(value);
        if (!v)
                return -ENOMEM;
        a->items[a->n++] = (ConfigAssignment) { .item = item, .value = v };
        return 0;
}

int config_assignments_apply(const ConfigAssignments *a, void *data) {
        for (size_t i = 0; i < a->n; i++) {
                _cleanup_free_ char *msg = NULL;
                int r = a->items[i].item->parse(a->items[i].value, (uint8_t *) data + a->items[i].item->offset, &msg);
                if (r < 0)
                        /* Checked when recorded: only memory can run out. */
                        return r == -ENOMEM ? r : -EINVAL;
        }
        return 0;
}

char *config_errors_join(char *const *errors, size_t max) {
        size_t n = strv_length(errors);
        char *s = NULL;
        FILE *f;

        f = open_memstream(&s, &(size_t) { 0 });
        if (!f)
                return NULL;
        for (size_t i = 0; i < n && i < max; i++)
                fprintf(f, "%s%s", i > 0 ? "; " : "", errors[i]);
        if (n > max)
                fprintf(f, "; and %zu more (nsctl verify lists them all)", n - max);
        if (fclose(f) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

/* ---- value parsers ---- */

int config_parse_bool(const char *value, void *data, char **ret_message) {
        int b = parse_boolean(value);
        if (b < 0)
                return config_message(ret_message, "'%s' is not a boolean (yes/no)", value);
        *(bool *) data = b;
        return 0;
}

int config_parse_sec(const char *value, void *data, char **ret_message) {
        if (parse_sec(value, data) < 0)
                return config_message(ret_message, "'%s' is not a time span (e.g. 10s, 500ms, 1min)", value);
        return 0;
}

int config_parse_size(const char *value, void *data, char **ret_message) {
        /* Empty: the default (0: whatever the user of the size takes as its default). */
        if (!*value) {
                *(uint64_t *) data = 0;
                return 0;
        }
        if (parse_size(value, data) < 0)
                return config_message(ret_message, "'%s' is not a size (e.g. 512M, 2G)", value);
        return 0;
}

int config_parse_uid(const char *value, void *data, char **ret_message) {
        if (parse_uid(value, data) < 0)
                return config_message(ret_message, "'%s' is not a valid UID", value);
        return 0;
}

int config_parse_unsigned(const char *value, void *data, char **ret_message) {
        if (parse_unsigned(value, data) < 0)
                return config_message(ret_message, "'%s' is not a non-negative number", value);
        return 0;
}

static bool valid_absolute_path(const char *p) {
        return path_is_absolute_normalized(p) && !streq(p, "/");
}

int config_parse_absolute_path(const char *value, void *data, char **ret_message) {
        char **p = data, *c;

        if (!valid_absolute_path(value))
                return config_message(ret_message, "'%s' is not an absolute, normalized path other than /", value);
        c = strdup(value);
        if (!c)
                return -ENOMEM;
        free(*p);
        *p = c;
        return 0;
}

int config_parse_checked_list(const char *value, void *data, int (*check)(const char *word, char **ret_message),
                              char **ret_message) {
        _cleanup_strv_free_ char **words = NULL;
        char ***l = data;
        int r;

        if (!*value) {
                *l = strv_free(*l);
                return 0;
        }
        words = strv_split_whitespace(value);
        if (!words)
                return -ENOMEM;
        /* All words first: a refused value changes nothing. */
        for (char **w = words; check && *w; w++) {
                r = check(*w, ret_message);
                if (r < 0)
                        return r;
        }
        for (char **w = words; *w; w++) {
                if (strv_contains((const char *const *) *l, *w))
                        continue;
                if (strv_extend(l, *w) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int check_absolute_path(const char *w, char **ret_message) {
        if (!valid_absolute_path(w))
                return config_message(ret_message, "'%s' is not an absolute, normalized path other than /", w);
        return 0;
}

int config_parse_absolute_path_list(const char *value, void *data, char **ret_message) {
        return config_parse_checked_list(value, data, check_absolute_path, ret_message);
}

static int check_name_or_number(const char *w, char **ret_message) {
        if (!*w || strlen(w) > 256 || strpbrk(w, "/:\n"))
                return config_message(ret_message, "'%s' is not a valid user name", w);
        return 0;
}

int config_parse_name_list(const char *value, void *data, char **ret_message) {
        return config_parse_checked_list(value, data, check_name_or_number, ret_message);
}
