/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>

#include "conf.h"
#include "log.h"
#include "path-util.h"

static const char *const view_propagation_table[_VIEW_PROPAGATION_MAX] = {
        [VIEW_PROPAGATION_SLAVE] = "slave",
        [VIEW_PROPAGATION_PRIVATE] = "private",
        [VIEW_PROPAGATION_SHARED] = "shared",
};

const char *view_propagation_to_string(ViewPropagation p) {
        if (p < 0 || p >= _VIEW_PROPAGATION_MAX)
                return NULL;
        return view_propagation_table[p];
}

ViewPropagation view_propagation_from_string(const char *s) {
        for (int i = 0; s && i < _VIEW_PROPAGATION_MAX; i++)
                if (streq(view_propagation_table[i], s))
                        return i;
        return _VIEW_PROPAGATION_INVALID;
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        for (; l && *l; l++)
                n++;
        return n;
}

int strv_extend(char ***l, const char *s) {
        size_t n = strv_length(*l);
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        char **nl = realloc(*l, (n + 2) * sizeof(char *));
        if (!nl) {
                free(c);
                return -ENOMEM;
        }
        nl[n] = c;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

char **strv_split_whitespace(const char *s) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return NULL;
        while (s && *s) {
                s += strspn(s, " \t");
                size_t n = strcspn(s, " \t");
                if (n == 0)
                        break;
                _cleanup_free_ char *w = strndup(s, n);
                if (!w || strv_extend(&l, w) < 0)
                        return NULL;
                s += n;
        }
        return TAKE_PTR(l);
}

int parse_boolean(const char *s) {
        if (STR_IN_SET(s, "1", "yes", "y", "true", "t", "on"))
                return 1;
        if (STR_IN_SET(s, "0", "no", "n", "false", "f", "off"))
                return 0;
        return -EINVAL;
}

typedef struct UnitSuffix {
        const char *suffix;
        uint64_t factor;
} UnitSuffix;

static int parse_number_with_suffix(const char *s, const UnitSuffix *table, size_t n_table, uint64_t default_factor,
                                    uint64_t *ret) {
        char *end;
        uint64_t total = 0;

        if (!s || !*s)
                return -EINVAL;
        /* Sums like "1min 30s" are accepted, as systemd does. */
        while (*s) {
                s += strspn(s, " ");
                if (!*s)
                        break;
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                errno = 0;
                unsigned long long v = strtoull(s, &end, 10);
                if (errno != 0)
                        return -ERANGE;
                s = end;
                size_t n = strcspn(s, " 0123456789");
                uint64_t factor = 0;
                if (n == 0)
                        factor = default_factor;
                else
                        for (size_t i = 0; i < n_table; i++)
                                if (strlen(table[i].suffix) == n && strncmp(table[i].suffix, s, n) == 0) {
                                        factor = table[i].factor;
                                        break;
                                }
                if (factor == 0)
                        return -EINVAL;
                if (v > UINT64_MAX / factor || total + v * factor < total)
                        return -ERANGE;
                total += v * factor;
                s += n;
        }
        *ret = total;
        return 0;
}

int parse_sec(const char *s, uint64_t *ret_usec) {
        static const UnitSuffix table[] = {
                { "us", 1 }, { "usec", 1 }, { "ms", USEC_PER_MSEC }, { "msec", USEC_PER_MSEC },
                { "s", USEC_PER_SEC }, { "sec", USEC_PER_SEC }, { "min", 60 * USEC_PER_SEC },
                { "m", 60 * USEC_PER_SEC }, { "h", 3600 * USEC_PER_SEC }, { "hr", 3600 * USEC_PER_SEC },
        };
        if (s && streq(s, "infinity")) {
                *ret_usec = UINT64_MAX;
                return 0;
        }
        return parse_number_with_suffix(s, table, ELEMENTSOF(table), USEC_PER_SEC, ret_usec);
}

int parse_size(const char *s, uint64_t *ret_bytes) {
        static const UnitSuffix table[] = {
                { "B", 1 }, { "K", 1024 }, { "M", 1024 * 1024 }, { "G", 1024 * 1024 * 1024 },
                { "T", UINT64_C(1024) * 1024 * 1024 * 1024 },
        };
        return parse_number_with_suffix(s, table, ELEMENTSOF(table), 1, ret_bytes);
}

void manager_config_init(ManagerConfig *c) {
        *c = (ManagerConfig) {
                .stop_delay_usec = 10 * USEC_PER_SEC,
                .min_uid = 1000,
                .view_propagation = VIEW_PROPAGATION_SLAVE,
        };
        c->subtree_root = strdup("/subtree");
        c->state_directory = strdup("/run/nsmanager");
        c->shared_subtrees = strv_split_whitespace("/mnt");
        c->exclude_users = strv_split_whitespace("");
}

void manager_config_done(ManagerConfig *c) {
        free(c->subtree_root);
        free(c->state_directory);
        strv_free(c->shared_subtrees);
        strv_free(c->exclude_users);
        *c = (ManagerConfig) {};
}

void view_policy_done(ViewPolicy *p) {
        strv_free(p->bind_paths);
        strv_free(p->bind_read_only_paths);
        strv_free(p->temporary_file_system);
        strv_free(p->inaccessible_paths);
        *p = (ViewPolicy) {};
}

/* One assignment: returns 0, or -EINVAL with a message in *ret_msg. */
typedef int (*ConfigParser)(const char *value, void *data, char **ret_msg);

static _printf_(2, 3) int config_error(char **ret_msg, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(ret_msg, fmt, ap) < 0)
                *ret_msg = NULL;
        va_end(ap);
        return -EINVAL;
}

static int config_parse_absolute_path(const char *value, void *data, char **ret_msg) {
        char **p = data;
        if (!path_is_absolute_normalized(value) || streq(value, "/"))
                return config_error(ret_msg, "'%s' is not an absolute, normalized path other than /", value);
        char *c = strdup(value);
        if (!c)
                return -ENOMEM;
        free(*p);
        *p = c;
        return 0;
}

/* Lists accumulate; an empty assignment resets (systemd's rule). */
static int config_parse_strv(const char *value, void *data, bool (*valid)(const char *), const char *what, char **ret_msg) {
        char ***l = data;
        if (!*value) {
                *l = strv_free(*l);
                return 0;
        }
        _cleanup_strv_free_ char **words = strv_split_whitespace(value);
        if (!words)
                return -ENOMEM;
        for (char **w = words; *w; w++) {
                if (valid && !valid(*w))
                        return config_error(ret_msg, "'%s' is not a valid %s", *w, what);
                if (strv_contains((const char *const *) *l, *w))
                        continue;
                if (strv_extend(l, *w) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static bool valid_shared_subtree(const char *p) {
        return path_is_absolute_normalized(p) && !streq(p, "/");
}

static int config_parse_path_list(const char *value, void *data, char **ret_msg) {
        return config_parse_strv(value, data, valid_shared_subtree, "absolute, normalized path", ret_msg);
}

static bool valid_user_name_or_number(const char *s) {
        return *s && strlen(s) <= 256 && !strpbrk(s, "/:\n");
}

static int config_parse_user_list(const char *value, void *data, char **ret_msg) {
        return config_parse_strv(value, data, valid_user_name_or_number, "user name", ret_msg);
}

static int config_parse_raw_list(const char *value, void *data, char **ret_msg) {
        /* Entries are checked once specifiers are expanded, when a view is built. */
        return config_parse_strv(value, data, NULL, NULL, ret_msg);
}

static int config_parse_sec_value(const char *value, void *data, char **ret_msg) {
        if (parse_sec(value, data) < 0)
                return config_error(ret_msg, "'%s' is not a time span (e.g. 10s, 500ms, 1min)", value);
        return 0;
}

static int config_parse_size_value(const char *value, void *data, char **ret_msg) {
        if (parse_size(value, data) < 0)
                return config_error(ret_msg, "'%s' is not a size (e.g. 512M, 2G)", value);
        return 0;
}

static int config_parse_uid_value(const char *value, void *data, char **ret_msg) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(value, &end, 10);
        if (!*value || *end || errno != 0 || v >= UINT32_MAX || value[0] == '-')
                return config_error(ret_msg, "'%s' is not a valid UID", value);
        *(uid_t *) data = (uid_t) v;
        return 0;
}

static int config_parse_bool_value(const char *value, void *data, char **ret_msg) {
        int b = parse_boolean(value);
        if (b < 0)
                return config_error(ret_msg, "'%s' is not a boolean (yes/no)", value);
        *(bool *) data = b;
        return 0;
}

static int config_parse_view_propagation(const char *value, void *data, char **ret_msg) {
        ViewPropagation p = view_propagation_from_string(value);
        if (p < 0)
                return config_error(ret_msg, "'%s' is not one of slave, private, shared", value);
        *(ViewPropagation *) data = p;
        return 0;
}

typedef struct ConfigItem {
        const char *section;
        const char *key;
        ConfigParser parse;
        size_t offset;
} ConfigItem;

static const ConfigItem manager_items[] = {
        { "Manager", "SubtreeRoot", config_parse_absolute_path, offsetof(ManagerConfig, subtree_root) },
        { "Manager", "SharedSubtrees", config_parse_path_list, offsetof(ManagerConfig, shared_subtrees) },
        { "Manager", "StopDelaySec", config_parse_sec_value, offsetof(ManagerConfig, stop_delay_usec) },
        { "Manager", "MinUID", config_parse_uid_value, offsetof(ManagerConfig, min_uid) },
        { "Manager", "ExcludeUsers", config_parse_user_list, offsetof(ManagerConfig, exclude_users) },
        { "Manager", "StateDirectory", config_parse_absolute_path, offsetof(ManagerConfig, state_directory) },
        { "Manager", "ViewPropagation", config_parse_view_propagation, offsetof(ManagerConfig, view_propagation) },
};

static const ConfigItem view_items[] = {
        { "View", "PrivateTmp", config_parse_bool_value, offsetof(ViewPolicy, private_tmp) },
        { "View", "TmpSize", config_parse_size_value, offsetof(ViewPolicy, tmp_size) },
        { "View", "BindPaths", config_parse_raw_list, offsetof(ViewPolicy, bind_paths) },
        { "View", "BindReadOnlyPaths", config_parse_raw_list, offsetof(ViewPolicy, bind_read_only_paths) },
        { "View", "TemporaryFileSystem", config_parse_raw_list, offsetof(ViewPolicy, temporary_file_system) },
        { "View", "InaccessiblePaths", config_parse_raw_list, offsetof(ViewPolicy, inaccessible_paths) },
        { "View", "HideOtherHomes", config_parse_bool_value, offsetof(ViewPolicy, hide_other_homes) },
};

static const ConfigItem *find_item(const char *section, const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(manager_items); i++)
                if (streq(manager_items[i].section, section) && streq(manager_items[i].key, key))
                        return &manager_items[i];
        for (size_t i = 0; i < ELEMENTSOF(view_items); i++)
                if (streq(view_items[i].section, section) && streq(view_items[i].key, key))
                        return &view_items[i];
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

/* Parses one file; assignments of 'want_section' are applied to 'data', others are checked for
 * syntax only (so a typo in [View] is reported when the manager config is read, too). */
static int config_parse_file(const char *path, const char *want_section, void *data, char **ret_error) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ char *section = NULL;
        size_t allocated = 0;
        unsigned lineno = 0;

        if (!f)
                return errno == ENOENT ? 0 : -errno;

        while (getline(&line, &allocated, f) >= 0) {
                _cleanup_free_ char *msg = NULL;
                char *l = strip(line), *eq;

                lineno++;
                if (!*l || *l == '#' || *l == ';')
                        continue;
                if (*l == '[') {
                        size_t n = strlen(l);
                        if (l[n - 1] != ']') {
                                (void) config_error(&msg, "invalid section header '%s'", l);
                                goto fail;
                        }
                        free(section);
                        section = strndup(l + 1, n - 2);
                        if (!section)
                                return -ENOMEM;
                        if (!STR_IN_SET(section, "Manager", "View"))
                                log_warning("%s:%u: unknown section [%s], ignoring.", path, lineno, section);
                        continue;
                }
                eq = strchr(l, '=');
                if (!eq) {
                        (void) config_error(&msg, "'%s' is not an assignment (KEY=VALUE)", l);
                        goto fail;
                }
                if (!section) {
                        (void) config_error(&msg, "assignment outside of a section");
                        goto fail;
                }
                *eq = 0;
                const char *key = strip(l), *value = strip(eq + 1);
                const ConfigItem *item = find_item(section, key);
                if (!item) {
                        if (STR_IN_SET(section, "Manager", "View"))
                                log_warning("%s:%u: unknown setting %s= in [%s], ignoring.", path, lineno, key, section);
                        continue;
                }
                if (streq(item->section, want_section)) {
                        int r = item->parse(value, (uint8_t *) data + item->offset, &msg);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                goto fail;
                }
                continue;
        fail:
                if (ret_error && asprintf(ret_error, "%s:%u: %s", path, lineno, msg ?: "invalid line") < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        return 0;
}

static int dropin_filter(const struct dirent *de) {
        size_t n = strlen(de->d_name);
        return de->d_name[0] != '.' && n > 5 && streq(de->d_name + n - 5, ".conf");
}

static int config_parse_with_dropins(const char *file, const char *section, void *data, char **ret_error) {
        _cleanup_free_ char *dir = NULL;
        struct dirent **entries = NULL;
        int r, n;

        r = config_parse_file(file, section, data, ret_error);
        if (r < 0)
                return r;

        if (asprintf(&dir, "%s.d", file) < 0)
                return -ENOMEM;
        n = scandir(dir, &entries, dropin_filter, alphasort);
        if (n < 0)
                return errno == ENOENT ? 0 : -errno;
        r = 0;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                if (r >= 0) {
                        if (asprintf(&p, "%s/%s", dir, entries[i]->d_name) < 0)
                                r = -ENOMEM;
                        else
                                r = config_parse_file(p, section, data, ret_error);
                }
                free(entries[i]);
        }
        free(entries);
        return r;
}

int manager_config_load(const char *file, ManagerConfig *c, char **ret_error) {
        return config_parse_with_dropins(file ?: NSM_CONFIG_FILE, "Manager", c, ret_error);
}

int view_policy_load(const char *file, const char *user, char *const *groups, ViewPolicy *p, char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        const char *dir;
        int r;

        file = file ?: NSM_CONFIG_FILE;
        r = config_parse_with_dropins(file, "View", p, ret_error);
        if (r < 0)
                return r;

        copy = strdup(file);
        if (!copy)
                return -ENOMEM;
        char *slash = strrchr(copy, '/');
        if (slash)
                *slash = 0;
        dir = slash ? (*copy ? copy : "/") : ".";

        for (char *const *g = groups; g && *g; g++) {
                _cleanup_free_ char *path = NULL;
                if (!filename_is_valid(*g))
                        continue;
                if (asprintf(&path, "%s/group.d/%s.conf", dir, *g) < 0)
                        return -ENOMEM;
                r = config_parse_file(path, "View", p, ret_error);
                if (r < 0)
                        return r;
        }

        _cleanup_free_ char *path = NULL;
        if (!filename_is_valid(user))
                return -EINVAL;
        if (asprintf(&path, "%s/user.d/%s.conf", dir, user) < 0)
                return -ENOMEM;
        return config_parse_file(path, "View", p, ret_error);
}
