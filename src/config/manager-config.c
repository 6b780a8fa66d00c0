/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stddef.h>
#include <stdio.h>

#include "conf-parser.h"
#include "manager-config.h"
#include "path-util.h"
#include "string-table.h"
#include "strv.h"

void manager_config_init(ManagerConfig *c) {
        *c = (ManagerConfig) {
                .stop_delay_usec = 10 * USEC_PER_SEC,
                .min_uid = 1000,
                .view_propagation = VIEW_PROPAGATION_SLAVE,
                .login_without_view = LOGIN_WITHOUT_VIEW_RESTRICTED,
                .operation_timeout_usec = 5 * USEC_PER_SEC,
                .max_stuck_operations = 4,
                .max_user_mounts = 64,
                .rate_limit_interval_usec = 10 * USEC_PER_SEC,
                .rate_limit_burst = 200,
                .attach_tasks_max = 4096,
                .polkit_questions_per_uid = 4,
                .polkit_timeout_usec = 20 * USEC_PER_SEC,
                .audit_burst = 100,
                .audit_burst_all = 2000,
                .audit_interval_usec = 30 * USEC_PER_SEC,
                .release_with_host = true,
        };
        c->subtree_root = strdup("/subtree");
        c->state_directory = strdup("/run/nsmanager");
        c->shared_subtrees = strv_split_whitespace("/mnt");
}

static void policy_files_free(PolicyFile *files, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(files[i].name);
                free(files[i].path);
                config_assignments_done(&files[i].view);
        }
        free(files);
}

void manager_config_done(ManagerConfig *c) {
        free(c->subtree_root);
        free(c->state_directory);
        strv_free(c->shared_subtrees);
        strv_free(c->exclude_users);
        free(c->login_refused_message);
        config_assignments_done(&c->view);
        policy_files_free(c->group_policies, c->n_group_policies);
        policy_files_free(c->user_policies, c->n_user_policies);
        *c = (ManagerConfig) {};
}

void view_policy_done(ViewPolicy *p) {
        strv_free(p->bind_paths);
        strv_free(p->bind_read_only_paths);
        strv_free(p->temporary_file_system);
        strv_free(p->inaccessible_paths);
        *p = (ViewPolicy) {};
}

bool view_policy_is_empty(const ViewPolicy *p) {
        return !p->private_tmp && !p->hide_other_homes && strv_length(p->bind_paths) == 0 &&
               strv_length(p->bind_read_only_paths) == 0 && strv_length(p->temporary_file_system) == 0 &&
               strv_length(p->inaccessible_paths) == 0;
}

static int config_parse_view_propagation(const char *value, void *data, char **ret_message) {
        ViewPropagation p = view_propagation_from_string(value);
        if (p < 0)
                return config_message(ret_message, "'%s' is not one of slave, private, shared", value);
        *(ViewPropagation *) data = p;
        return 0;
}

static int config_parse_login_without_view(const char *value, void *data, char **ret_message) {
        LoginWithoutView v = login_without_view_from_string(value);
        if (v < 0)
                return config_message(ret_message, "'%s' is not one of restricted, allow, deny", value);
        *(LoginWithoutView *) data = v;
        return 0;
}

/* Shown on the terminal of every login the module refuses: one line of plain text. Empty: the
 * module's own sentence. */
static int config_parse_refused_message(const char *value, void *data, char **ret_message) {
        char **s = data, *copy = NULL;

        if (value[0]) {
                if (!login_refused_message_valid(value))
                        return config_message(ret_message, "'%s' is not one line of at most %d bytes of text without "
                                              "control characters or '\\'", value, LOGIN_REFUSED_MESSAGE_MAX);
                copy = strdup(value);
                if (!copy)
                        return -ENOMEM;
        }
        free(*s);
        *s = copy;
        return 0;
}

static int config_parse_timeout(const char *value, void *data, char **ret_message) {
        uint64_t *t = data;
        int r = config_parse_sec(value, data, ret_message);
        if (r >= 0 && (*t == 0 || *t == UINT64_MAX))
                return config_message(ret_message, "'%s' must be a finite time span above 0", value);
        return r;
}

/* ---- [View] entries, checked when they are read ---- */

/* A view is built long after its files were read, for users nobody had in mind when writing
 * them: whatever can be wrong with an entry for every user is refused here, when the file is
 * read, with its file and line (view-policy.c checks each entry again for the user at hand). */

/* One field of an entry with its specifiers expanded as for a typical user ('u', uid 1000, home
 * /home/u, group 'g'): what a path becomes then tells whether it can be valid for a user at
 * all (%u stays one path component, %h an absolute path, whoever the user is). */
static int expand_typical(const char *entry, const char *field, size_t len, char **ret, char **ret_message) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_fclose_ FILE *f = NULL;   /* declared after buf: closed (flushing into buf) first */
        size_t size = 0;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (field[i] != '%') {
                        fputc(field[i], f);
                        continue;
                }
                if (++i >= len)
                        return config_message(ret_message, "'%s': a lone '%%' at the end of a field (write %%%% for a "
                                              "%%)", entry);
                switch (field[i]) {
                case 'u':
                        fputs("u", f);
                        break;
                case 'g':
                        fputs("g", f);
                        break;
                case 'U':
                case 'G':
                        fputs("1000", f);
                        break;
                case 'h':
                        fputs("/home/u", f);
                        break;
                case '%':
                        fputc('%', f);
                        break;
                default:
                        return config_message(ret_message, "'%s': '%%%c' is not a specifier (%%u %%U %%h %%g %%G %%%%)",
                                              entry, field[i]);
                }
        }
        if (fclose(TAKE_PTR(f)) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* Splits at ':' into at most 'max' fields (before expanding, as view-policy.c does, so that no
 * expansion adds one) and expands each; fields not present are NULL. */
static int split_entry(const char *entry, const char *s, size_t max, char **ret_fields, char **ret_message) {
        size_t n = 0;
        int r;

        for (size_t i = 0; i < max; i++)
                ret_fields[i] = NULL;
        for (;;) {
                size_t len = strcspn(s, ":");
                if (n >= max)
                        r = config_message(ret_message, "'%s': more than %zu fields separated by ':'", entry, max);
                else
                        r = expand_typical(entry, s, len, &ret_fields[n++], ret_message);
                if (r < 0) {
                        for (size_t i = 0; i < max; i++)
                                ret_fields[i] = mfree(ret_fields[i]);
                        return r;
                }
                if (!s[len])
                        return 0;
                s += len + 1;
        }
}

/* Where a mount may go: absolute, normalized, and not "/" (that would cover the whole machine). */
static bool valid_target(const char *p) {
        return path_is_absolute_normalized(p) && !streq(p, "/");
}

static int check_bind_entry(const char *entry, char **ret_message) {
        char *f[3];
        int r;

        r = split_entry(entry, entry + (entry[0] == '-'), 3, f, ret_message);
        if (r < 0)
                return r;
        _cleanup_free_ char *source = f[0], *dest = f[1], *options = f[2];
        if (!path_is_absolute_normalized(source))
                return config_message(ret_message, "'%s': the source is not an absolute, normalized path "
                                      "([-]SOURCE[:DEST[:rbind|norbind]])", entry);
        if (dest && !valid_target(dest))
                return config_message(ret_message, "'%s': the destination is not an absolute, normalized path other "
                                      "than / ([-]SOURCE[:DEST[:rbind|norbind]])", entry);
        if (!dest && !valid_target(source))
                return config_message(ret_message, "'%s': binding onto / would cover the whole machine", entry);
        if (options && !STR_IN_SET(options, "rbind", "norbind"))
                return config_message(ret_message, "'%s': '%s' is not rbind or norbind", entry, options);
        return 0;
}

static int check_tmpfs_entry(const char *entry, char **ret_message) {
        char *f[2];
        int r;

        r = split_entry(entry, entry, 2, f, ret_message);
        if (r < 0)
                return r;
        _cleanup_free_ char *path = f[0], *options = f[1];
        if (!valid_target(path))
                return config_message(ret_message, "'%s': not an absolute, normalized path other than / "
                                      "(PATH[:OPTIONS])", entry);
        if (!options)
                return 0;
        /* The values of tmpfs's own options are the kernel's to judge when the view is built;
         * the list's form is ours. */
        for (const char *o = options;;) {
                size_t len = strcspn(o, ",");
                if (len == 0)
                        return config_message(ret_message, "'%s': an empty mount option", entry);
                if (strncmp(o, "source=", 7) == 0 || (len == 6 && strncmp(o, "source", 6) == 0))
                        return config_message(ret_message, "'%s': source= is not a mount option of a tmpfs", entry);
                if (!o[len])
                        return 0;
                o += len + 1;
        }
}

static int check_inaccessible_entry(const char *entry, char **ret_message) {
        _cleanup_free_ char *path = NULL;
        const char *s = entry + (entry[0] == '-');
        int r;

        /* The whole entry is the path: ':' has no meaning here. */
        r = expand_typical(entry, s, strlen(s), &path, ret_message);
        if (r < 0)
                return r;
        if (!valid_target(path))
                return config_message(ret_message, "'%s': not an absolute, normalized path other than / ([-]PATH)",
                                      entry);
        return 0;
}

static int config_parse_bind_list(const char *value, void *data, char **ret_message) {
        return config_parse_checked_list(value, data, check_bind_entry, ret_message);
}

static int config_parse_tmpfs_list(const char *value, void *data, char **ret_message) {
        return config_parse_checked_list(value, data, check_tmpfs_entry, ret_message);
}

static int config_parse_inaccessible_list(const char *value, void *data, char **ret_message) {
        return config_parse_checked_list(value, data, check_inaccessible_entry, ret_message);
}

/* One table for both sections: a setting in the wrong one, or a typo in either, is named. */
static const ConfigItem config_items[] = {
        { "Manager", "SubtreeRoot",          config_parse_absolute_path,      offsetof(ManagerConfig, subtree_root) },
        { "Manager", "SharedSubtrees",       config_parse_absolute_path_list, offsetof(ManagerConfig, shared_subtrees) },
        { "Manager", "StopDelaySec",         config_parse_sec,                offsetof(ManagerConfig, stop_delay_usec) },
        { "Manager", "MinUID",               config_parse_uid,                offsetof(ManagerConfig, min_uid) },
        { "Manager", "ExcludeUsers",         config_parse_name_list,          offsetof(ManagerConfig, exclude_users) },
        { "Manager", "StateDirectory",       config_parse_absolute_path,      offsetof(ManagerConfig, state_directory) },
        { "Manager", "ViewPropagation",      config_parse_view_propagation,   offsetof(ManagerConfig, view_propagation) },
        { "Manager", "LoginWithoutView",     config_parse_login_without_view, offsetof(ManagerConfig, login_without_view) },
        { "Manager", "LoginRefusedMessage",  config_parse_refused_message,    offsetof(ManagerConfig, login_refused_message) },
        { "Manager", "OperationTimeoutSec",  config_parse_timeout,            offsetof(ManagerConfig, operation_timeout_usec) },
        { "Manager", "MaxStuckOperations",   config_parse_unsigned,           offsetof(ManagerConfig, max_stuck_operations) },
        { "Manager", "MaxUserMounts",        config_parse_unsigned,           offsetof(ManagerConfig, max_user_mounts) },
        { "Manager", "RateLimitIntervalSec", config_parse_timeout,            offsetof(ManagerConfig, rate_limit_interval_usec) },
        { "Manager", "RateLimitBurst",       config_parse_unsigned,           offsetof(ManagerConfig, rate_limit_burst) },
        { "Manager", "AttachTasksMax",       config_parse_unsigned,           offsetof(ManagerConfig, attach_tasks_max) },
        { "Manager", "PolkitQuestionsPerUID", config_parse_unsigned,          offsetof(ManagerConfig, polkit_questions_per_uid) },
        { "Manager", "PolkitTimeoutSec",     config_parse_timeout,            offsetof(ManagerConfig, polkit_timeout_usec) },
        { "Manager", "AuditRateLimitIntervalSec", config_parse_timeout,       offsetof(ManagerConfig, audit_interval_usec) },
        { "Manager", "AuditRateLimitBurst",  config_parse_unsigned,           offsetof(ManagerConfig, audit_burst) },
        { "Manager", "AuditRateLimitBurstAll", config_parse_unsigned,         offsetof(ManagerConfig, audit_burst_all) },
        { "Manager", "ReleaseWithHost",      config_parse_bool,               offsetof(ManagerConfig, release_with_host) },
        { "View",    "PrivateTmp",           config_parse_bool,               offsetof(ViewPolicy, private_tmp) },
        { "View",    "TmpSize",              config_parse_size,               offsetof(ViewPolicy, tmp_size) },
        { "View",    "BindPaths",            config_parse_bind_list,          offsetof(ViewPolicy, bind_paths) },
        { "View",    "BindReadOnlyPaths",    config_parse_bind_list,          offsetof(ViewPolicy, bind_read_only_paths) },
        { "View",    "TemporaryFileSystem",  config_parse_tmpfs_list,         offsetof(ViewPolicy, temporary_file_system) },
        { "View",    "InaccessiblePaths",    config_parse_inaccessible_list,  offsetof(ViewPolicy, inaccessible_paths) },
        { "View",    "HideOtherHomes",       config_parse_bool,               offsetof(ViewPolicy, hide_other_homes) },
};

/* The directory of the main file, where group.d/ and user.d/ are. */
static char *config_dir(const char *file) {
        const char *slash = strrchr(file, '/');
        if (!slash)
                return strdup(".");
        return slash == file ? strdup("/") : strndup(file, slash - file);
}

/* Parses one [View]-only file, keeping its assignments in pf->view. */
static int load_policy_file(const char *path, PolicyFile *pf, char ***errors) {
        _cleanup_(view_policy_done) ViewPolicy scratch = {};
        const ConfigSection sections[] = { { "View", &scratch } };
        const ConfigContext ctx = {
                .items = config_items, .n_items = ELEMENTSOF(config_items),
                .sections = sections, .n_sections = ELEMENTSOF(sections),
                .record_section = "View", .record = pf ? &pf->view : NULL,
        };
        return config_parse_file(&ctx, path, true, errors);
}

/* Every NAME.conf of DIR/sub (group.d or user.d). */
static int load_policy_dir(const char *dir, const char *sub, PolicyFile **ret, size_t *ret_n, char ***errors) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *d = NULL;
        int r = 0, k;

        if (asprintf(&d, "%s/%s", dir, sub) < 0)
                return -ENOMEM;
        k = config_dir_conf_names(d, &names);
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                _cleanup_free_ char *e = NULL;
                if (asprintf(&e, "%s: %s", d, strerror(-k)) < 0 || strv_extend(errors, e) < 0)
                        return -ENOMEM;
                return k;
        }
        *ret = calloc(strv_length(names) + 1, sizeof(PolicyFile));
        if (!*ret)
                return -ENOMEM;
        for (char **n = names; n && *n; n++) {
                PolicyFile *pf = &(*ret)[(*ret_n)++];

                pf->name = strdup(*n);
                if (!pf->name || asprintf(&pf->path, "%s/%s.conf", d, *n) < 0)
                        return -ENOMEM;
                k = load_policy_file(pf->path, pf, errors);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && r >= 0)
                        r = k;
        }
        return r;
}

/* Every view's build call carries SharedSubtrees= (builder.c): bounded here, where an
 * administrator reads why, not at each login. */
static int check_shared_subtrees_size(const char *file, char **paths, char ***errors) {
        _cleanup_free_ char *e = NULL;
        size_t total = 0;

        for (char **p = paths; p && *p; p++)
                total += SHARED_SUBTREE_BYTES_EACH + strlen(*p);
        if (total <= SHARED_SUBTREES_BYTES_MAX)
                return 0;
        if (asprintf(&e, "%s: SharedSubtrees= takes %zu bytes in every view's build request, more than %d: fewer "
                     "or shorter paths", file, total, SHARED_SUBTREES_BYTES_MAX) < 0 || strv_extend(errors, e) < 0)
                return -ENOMEM;
        return -EINVAL;
}

int manager_config_load(const char *file, ManagerConfig *c, char ***errors) {
        _cleanup_(view_policy_done) ViewPolicy scratch = {};
        _cleanup_free_ char *dir = NULL;
        bool must_exist = file;
        int r, k;

        file = file ?: NSM_CONFIG_FILE;
        const ConfigSection sections[] = { { "Manager", c }, { "View", &scratch } };
        const ConfigContext ctx = {
                .items = config_items, .n_items = ELEMENTSOF(config_items),
                .sections = sections, .n_sections = ELEMENTSOF(sections),
                .record_section = "View", .record = &c->view,
        };
        r = config_parse_file_with_dropins(&ctx, file, must_exist, errors);
        if (r == -ENOMEM)
                return r;
        k = check_shared_subtrees_size(file, c->shared_subtrees, errors);
        if (k == -ENOMEM)
                return k;
        if (k < 0 && r >= 0)
                r = k;

        dir = config_dir(file);
        if (!dir)
                return -ENOMEM;
        k = load_policy_dir(dir, "group.d", &c->group_policies, &c->n_group_policies, errors);
        if (k == -ENOMEM)
                return k;
        if (k < 0 && r >= 0)
                r = k;
        k = load_policy_dir(dir, "user.d", &c->user_policies, &c->n_user_policies, errors);
        if (k == -ENOMEM)
                return k;
        if (k < 0 && r >= 0)
                r = k;
        return r;
}

/* A file in group.d/ or user.d/ holds a [View] policy only. */
static bool is_policy_file(const char *path) {
        _cleanup_free_ char *dir = config_dir(path);
        const char *base;

        if (!dir)
                return false;
        base = strrchr(dir, '/');
        base = base ? base + 1 : dir;
        return STR_IN_SET(base, "group.d", "user.d");
}

int manager_config_check_file(const char *path, char ***errors) {
        _cleanup_(view_policy_done) ViewPolicy scratch = {};
        ManagerConfig c;
        int r;

        if (is_policy_file(path))
                return load_policy_file(path, NULL, errors);

        manager_config_init(&c);
        if (!c.subtree_root || !c.state_directory) {
                manager_config_done(&c);
                return -ENOMEM;
        }
        const ConfigSection sections[] = { { "Manager", &c }, { "View", &scratch } };
        const ConfigContext ctx = {
                .items = config_items, .n_items = ELEMENTSOF(config_items),
                .sections = sections, .n_sections = ELEMENTSOF(sections),
        };
        r = config_parse_file(&ctx, path, true, errors);
        manager_config_done(&c);
        return r;
}

int manager_config_start_only_changes(const ManagerConfig *running, const ManagerConfig *loaded, char **ret) {
        _cleanup_free_ char *s = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&s, &size);
        if (!f)
                return -ENOMEM;
        bool subtree = !streq(running->subtree_root, loaded->subtree_root);
        if (subtree)
                fprintf(f, "SubtreeRoot= (%s → %s)", running->subtree_root, loaded->subtree_root);
        if (!streq(running->state_directory, loaded->state_directory))
                fprintf(f, "%sStateDirectory= (%s → %s)", subtree ? ", " : "", running->state_directory,
                        loaded->state_directory);
        if (fclose(f) != 0)
                return -ENOMEM;
        *ret = s && *s ? TAKE_PTR(s) : NULL;
        return 0;
}

static const PolicyFile *find_policy(const PolicyFile *files, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (streq(files[i].name, name))
                        return &files[i];
        return NULL;
}

int view_policy_groups_with_files(const ManagerConfig *c, char ***ret) {
        _cleanup_strv_free_ char **names = NULL;

        for (size_t i = 0; i < c->n_group_policies; i++)
                if (strv_extend(&names, c->group_policies[i].name) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(names);
        return 0;
}

int view_policy_load(const ManagerConfig *c, const char *user, char *const *groups, ViewPolicy *p) {
        const PolicyFile *pf;
        int r;

        r = config_assignments_apply(&c->view, p);
        if (r < 0)
                return r;
        for (char *const *g = groups; g && *g; g++) {
                pf = find_policy(c->group_policies, c->n_group_policies, *g);
                if (pf) {
                        r = config_assignments_apply(&pf->view, p);
                        if (r < 0)
                                return r;
                }
        }
        pf = find_policy(c->user_policies, c->n_user_policies, user);
        return pf ? config_assignments_apply(&pf->view, p) : 0;
}
