/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stddef.h>

#include "conf-parser.h"
#include "log.h"
#include "manager-config.h"
#include "path-util.h"
#include "string-table.h"
#include "strv.h"

static const char *const view_propagation_table[_VIEW_PROPAGATION_MAX] = {
        [VIEW_PROPAGATION_SLAVE] = "slave",
        [VIEW_PROPAGATION_PRIVATE] = "private",
        [VIEW_PROPAGATION_SHARED] = "shared",
};

DEFINE_STRING_TABLE_LOOKUP(view_propagation, ViewPropagation);

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
        };
        c->subtree_root = strdup("/subtree");
        c->state_directory = strdup("/run/nsmanager");
        c->shared_subtrees = strv_split_whitespace("/mnt");
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

bool view_policy_is_empty(const ViewPolicy *p) {
        return !p->private_tmp && !p->hide_other_homes && strv_length(p->bind_paths) == 0 &&
               strv_length(p->bind_read_only_paths) == 0 && strv_length(p->temporary_file_system) == 0 &&
               strv_length(p->inaccessible_paths) == 0;
}

static int config_parse_view_propagation(const char *value, void *data, char **ret_message) {
        ViewPropagation p = view_propagation_from_string(value);
        if (p < 0) {
                if (asprintf(ret_message, "'%s' is not one of slave, private, shared", value) < 0)
                        *ret_message = NULL;
                return -EINVAL;
        }
        *(ViewPropagation *) data = p;
        return 0;
}

static int config_parse_login_without_view(const char *value, void *data, char **ret_message) {
        LoginWithoutView v = login_without_view_from_string(value);
        if (v < 0) {
                if (asprintf(ret_message, "'%s' is not one of restricted, allow, deny", value) < 0)
                        *ret_message = NULL;
                return -EINVAL;
        }
        *(LoginWithoutView *) data = v;
        return 0;
}

static int config_parse_timeout(const char *value, void *data, char **ret_message) {
        uint64_t *t = data;
        int r = config_parse_sec(value, data, ret_message);
        if (r >= 0 && (*t == 0 || *t == UINT64_MAX)) {
                if (asprintf(ret_message, "'%s' must be a finite time span above 0", value) < 0)
                        *ret_message = NULL;
                return -EINVAL;
        }
        return r;
}

/* One table for both sections, so a typo in either is found whichever is being read. */
static const ConfigItem config_items[] = {
        { "Manager", "SubtreeRoot",          config_parse_absolute_path,      offsetof(ManagerConfig, subtree_root) },
        { "Manager", "SharedSubtrees",       config_parse_absolute_path_list, offsetof(ManagerConfig, shared_subtrees) },
        { "Manager", "StopDelaySec",         config_parse_sec,                offsetof(ManagerConfig, stop_delay_usec) },
        { "Manager", "MinUID",               config_parse_uid,                offsetof(ManagerConfig, min_uid) },
        { "Manager", "ExcludeUsers",         config_parse_name_list,          offsetof(ManagerConfig, exclude_users) },
        { "Manager", "StateDirectory",       config_parse_absolute_path,      offsetof(ManagerConfig, state_directory) },
        { "Manager", "ViewPropagation",      config_parse_view_propagation,   offsetof(ManagerConfig, view_propagation) },
        { "Manager", "LoginWithoutView",     config_parse_login_without_view, offsetof(ManagerConfig, login_without_view) },
        { "Manager", "OperationTimeoutSec",  config_parse_timeout,            offsetof(ManagerConfig, operation_timeout_usec) },
        { "Manager", "MaxStuckOperations",   config_parse_unsigned,           offsetof(ManagerConfig, max_stuck_operations) },
        { "Manager", "MaxUserMounts",        config_parse_unsigned,           offsetof(ManagerConfig, max_user_mounts) },
        { "Manager", "RateLimitIntervalSec", config_parse_timeout,            offsetof(ManagerConfig, rate_limit_interval_usec) },
        { "Manager", "RateLimitBurst",       config_parse_unsigned,           offsetof(ManagerConfig, rate_limit_burst) },
        { "Manager", "AttachTasksMax",       config_parse_unsigned,           offsetof(ManagerConfig, attach_tasks_max) },
        { "View",    "PrivateTmp",           config_parse_bool,               offsetof(ViewPolicy, private_tmp) },
        { "View",    "TmpSize",              config_parse_size,               offsetof(ViewPolicy, tmp_size) },
        { "View",    "BindPaths",            config_parse_raw_list,           offsetof(ViewPolicy, bind_paths) },
        { "View",    "BindReadOnlyPaths",    config_parse_raw_list,           offsetof(ViewPolicy, bind_read_only_paths) },
        { "View",    "TemporaryFileSystem",  config_parse_raw_list,           offsetof(ViewPolicy, temporary_file_system) },
        { "View",    "InaccessiblePaths",    config_parse_raw_list,           offsetof(ViewPolicy, inaccessible_paths) },
        { "View",    "HideOtherHomes",       config_parse_bool,               offsetof(ViewPolicy, hide_other_homes) },
};

static void log_config_warning(const char *file, unsigned line, const char *message, void *userdata) {
        log_warning("%s:%u: %s.", file, line, message);
}

static ConfigContext config_context(const char *section, void *data) {
        return (ConfigContext) {
                .items = config_items,
                .n_items = ELEMENTSOF(config_items),
                .section = section,
                .data = data,
                .warn = log_config_warning,
        };
}

int manager_config_load(const char *file, ManagerConfig *c, char **ret_error) {
        ConfigContext ctx = config_context("Manager", c);
        return config_parse_file_with_dropins(&ctx, file ?: NSM_CONFIG_FILE, ret_error);
}

/* The directory of the main file, where group.d/ and user.d/ are. */
static char *config_dir(const char *file) {
        const char *slash = strrchr(file, '/');
        if (!slash)
                return strdup(".");
        return slash == file ? strdup("/") : strndup(file, slash - file);
}

int view_policy_groups_with_files(const char *file, char ***ret) {
        _cleanup_free_ char *dir = config_dir(file ?: NSM_CONFIG_FILE), *groups = NULL;

        if (!dir || asprintf(&groups, "%s/group.d", dir) < 0)
                return -ENOMEM;
        return config_dir_conf_names(groups, ret);
}

int view_policy_users_with_files(const char *file, char ***ret) {
        _cleanup_free_ char *dir = config_dir(file ?: NSM_CONFIG_FILE), *users = NULL;

        if (!dir || asprintf(&users, "%s/user.d", dir) < 0)
                return -ENOMEM;
        return config_dir_conf_names(users, ret);
}

int view_policy_load_one(const char *file, const char *group, const char *user, ViewPolicy *p, char **ret_error) {
        ConfigContext ctx = config_context("View", p);
        _cleanup_free_ char *dir = NULL, *path = NULL;

        file = file ?: NSM_CONFIG_FILE;
        if (!group && !user)
                return config_parse_file_with_dropins(&ctx, file, ret_error);
        if (!filename_is_valid(group ?: user))
                return -EINVAL;
        dir = config_dir(file);
        if (!dir || asprintf(&path, "%s/%s/%s.conf", dir, group ? "group.d" : "user.d", group ?: user) < 0)
                return -ENOMEM;
        return config_parse_file(&ctx, path, ret_error);
}

int view_policy_load(const char *file, const char *user, char *const *groups, ViewPolicy *p, char **ret_error) {
        ConfigContext ctx = config_context("View", p);
        _cleanup_free_ char *dir = NULL, *path = NULL;
        int r;

        file = file ?: NSM_CONFIG_FILE;
        r = config_parse_file_with_dropins(&ctx, file, ret_error);
        if (r < 0)
                return r;

        dir = config_dir(file);
        if (!dir)
                return -ENOMEM;
        for (char *const *g = groups; g && *g; g++) {
                _cleanup_free_ char *gpath = NULL;
                if (!filename_is_valid(*g))
                        continue;
                if (asprintf(&gpath, "%s/group.d/%s.conf", dir, *g) < 0)
                        return -ENOMEM;
                r = config_parse_file(&ctx, gpath, ret_error);
                if (r < 0)
                        return r;
        }

        if (!filename_is_valid(user))
                return -EINVAL;
        if (asprintf(&path, "%s/user.d/%s.conf", dir, user) < 0)
                return -ENOMEM;
        return config_parse_file(&ctx, path, ret_error);
}
