/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "login-filter.h"
#include "macros.h"

/* The daemon's configuration: nsmanagerd.conf and its drop-ins, section [Manager], and the
 * per-user view policy, section [View], in the same files and in group.d/ and user.d/.
 * nsmanagerd.conf(5) describes every key. */

/* /etc/nsmanager/nsmanagerd.conf with the default prefix=/usr */
#define NSM_CONFIG_FILE SYSCONFDIR "/nsmanager/nsmanagerd.conf"

typedef enum ViewPropagation {
        VIEW_PROPAGATION_SLAVE,
        VIEW_PROPAGATION_PRIVATE,
        VIEW_PROPAGATION_SHARED,
        _VIEW_PROPAGATION_MAX,
        _VIEW_PROPAGATION_INVALID = -EINVAL,
} ViewPropagation;

const char *view_propagation_to_string(ViewPropagation p) _pure_;
ViewPropagation view_propagation_from_string(const char *s) _pure_;

typedef struct ManagerConfig {
        char *subtree_root;            /* SubtreeRoot= (/subtree) */
        char **shared_subtrees;        /* SharedSubtrees= (/mnt) */
        uint64_t stop_delay_usec;      /* StopDelaySec= (10s) */
        uid_t min_uid;                 /* MinUID= (1000) */
        char **exclude_users;          /* ExcludeUsers= */
        char *state_directory;         /* StateDirectory= (/run/nsmanager) */
        ViewPropagation view_propagation; /* ViewPropagation= (slave) */
        LoginWithoutView login_without_view; /* LoginWithoutView= (restricted), for pam_nsmanager (login-filter.h) */

        /* Limits: whatever one user's view holds, or however one user calls, nobody else waits. */
        uint64_t operation_timeout_usec; /* OperationTimeoutSec= (5s): deadline of every mount operation */
        unsigned max_stuck_operations; /* MaxStuckOperations= (4): per user, operations past their deadline that
                                        * could not be killed (a hung file system); 0: no limit */
        unsigned max_user_mounts;      /* MaxUserMounts= (64): mounts an unprivileged user's binds hold in their view */
        uint64_t rate_limit_interval_usec; /* RateLimitIntervalSec= (10s) … */
        unsigned rate_limit_burst;     /* RateLimitBurst= (200): calls per interval per unprivileged caller */
        unsigned attach_tasks_max;     /* AttachTasksMax= (4096): tasks of one uid's attached commands */
} ManagerConfig;

/* Per-user view policy, section [View]; list settings accumulate across files, an empty
 * assignment resets. */
typedef struct ViewPolicy {
        bool private_tmp;
        uint64_t tmp_size;             /* bytes, 0 = tmpfs default */
        char **bind_paths;             /* [-]SOURCE[:DEST[:OPTIONS]], specifiers not yet expanded */
        char **bind_read_only_paths;
        char **temporary_file_system;  /* PATH[:OPTIONS] */
        char **inaccessible_paths;     /* [-]PATH */
        bool hide_other_homes;
} ViewPolicy;

void manager_config_init(ManagerConfig *c);
void manager_config_done(ManagerConfig *c);
void view_policy_done(ViewPolicy *p);
bool view_policy_is_empty(const ViewPolicy *p);

/* Reads 'file' (NULL: NSM_CONFIG_FILE) and then its drop-ins 'file'.d/NAME.conf in lexical
 * order. A missing main file is fine; a syntax error or an invalid value is -EINVAL with
 * "FILE:LINE: message" in *ret_error. Unknown settings are logged as warnings. */
int manager_config_load(const char *file, ManagerConfig *c, char **ret_error);

/* [View] policy for one user: the main file, its drop-ins, then DIR/group.d/GROUP.conf for
 * each of 'groups' (in the order given), then DIR/user.d/USER.conf, DIR being the main
 * file's directory. */
int view_policy_load(const char *file, const char *user, char *const *groups, ViewPolicy *p, char **ret_error);
/* The groups that have a policy of their own (DIR/group.d/GROUP.conf), NULL if none: where
 * there are none, a user's groups need not be looked up. */
int view_policy_groups_with_files(const char *file, char ***ret);
/* The same for DIR/user.d/USER.conf. */
int view_policy_users_with_files(const char *file, char ***ret);
/* The [View] section of one file of the policy on top of *p: the main file 'file' (NULL:
 * NSM_CONFIG_FILE) with its drop-ins where 'group' and 'user' are NULL, else group.d/GROUP.conf
 * or user.d/USER.conf next to it (a missing one changes nothing). */
int view_policy_load_one(const char *file, const char *group, const char *user, ViewPolicy *p, char **ret_error);
