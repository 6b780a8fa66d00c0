/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf-parser.h"
#include "config.h"
#include "login-filter.h"
#include "macros.h"
#include "mount-util.h"   /* ViewPropagation */

/* The daemon's configuration: nsmanagerd.conf and its drop-ins, section [Manager], and the
 * per-user view policy, section [View], in the same files and in group.d/ and user.d/.
 * nsmanagerd.conf(5) describes every key.
 *
 * Every file is read and checked at once, at start and at ReloadConfig: a ManagerConfig holds
 * all of it, the [View] assignments of every file included, so a configuration is taken whole
 * or not at all, and a view is built from the configuration in force, never from files edited
 * since (a broken user.d file is refused at the reload, and the old policy stays). nsctl verify
 * runs the same code. */

/* /etc/nsmanager/nsmanagerd.conf with the default prefix=/usr */
#define NSM_CONFIG_FILE SYSCONFDIR "/nsmanager/nsmanagerd.conf"
/* SharedSubtrees= in bytes as every view's build call carries it (each path, its length and
 * its NUL): a bound that keeps a login's call to the builder small (builder.c). */
#define SHARED_SUBTREES_BYTES_MAX 8192
#define SHARED_SUBTREE_BYTES_EACH 5U

/* The [View] assignments of one group.d/NAME.conf or user.d/NAME.conf. */
typedef struct PolicyFile {
        char *name;
        char *path;
        ConfigAssignments view;
} PolicyFile;

typedef struct ManagerConfig {
        char *subtree_root;            /* SubtreeRoot= (/subtree) */
        char **shared_subtrees;        /* SharedSubtrees= (/mnt) */
        uint64_t stop_delay_usec;      /* StopDelaySec= (10s) */
        uid_t min_uid;                 /* MinUID= (1000) */
        char **exclude_users;          /* ExcludeUsers= */
        char *state_directory;         /* StateDirectory= (/run/nsmanager) */
        ViewPropagation view_propagation; /* ViewPropagation= (slave) */
        LoginWithoutView login_without_view; /* LoginWithoutView= (restricted), for pam_nsmanager (login-filter.h) */
        char *login_refused_message;   /* LoginRefusedMessage= (NULL: the module's own sentence), ditto */

        /* Limits: whatever one user's view holds, or however one user calls, nobody else waits. */
        uint64_t operation_timeout_usec; /* OperationTimeoutSec= (5s): deadline of every mount operation */
        unsigned max_stuck_operations; /* MaxStuckOperations= (4): per user, operations past their deadline that
                                        * could not be killed (a hung file system); 0: no limit */
        unsigned max_user_mounts;      /* MaxUserMounts= (64): mounts an unprivileged user's binds hold in their view */
        uint64_t rate_limit_interval_usec; /* RateLimitIntervalSec= (10s) … */
        unsigned rate_limit_burst;     /* RateLimitBurst= (200): calls per interval per unprivileged caller */
        unsigned attach_tasks_max;     /* AttachTasksMax= (4096): tasks of one uid's attached commands */
        unsigned polkit_questions_per_uid; /* PolkitQuestionsPerUID= (4): interactive polkit questions of one
                                        * uid waiting or in flight; 0: no limit */
        uint64_t polkit_timeout_usec;  /* PolkitTimeoutSec= (20s): a polkit question not answered by then is
                                        * withdrawn, its caller answered TimedOut */
        unsigned audit_burst;          /* AuditRateLimitBurst= (100): refusal records per uid other than root … */
        unsigned audit_burst_all;      /* AuditRateLimitBurstAll= (2000): … and of all of them together, per
                                        * AuditRateLimitIntervalSec= (30s); 0: no limit */
        uint64_t audit_interval_usec;

        /* The [View] assignments of every file, checked (view_policy_load() composes them). */
        ConfigAssignments view;        /* the main file and its drop-ins */
        PolicyFile *group_policies; /* group.d/GROUP.conf, by name */
        size_t n_group_policies;
        PolicyFile *user_policies;  /* user.d/USER.conf, by name */
        size_t n_user_policies;
        bool release_with_host;        /* ReleaseWithHost= (yes): the host's eject detaches the views' copies */
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

/* Reads every file: 'file' (NULL: NSM_CONFIG_FILE, which may be missing; a file named here must
 * exist), its drop-ins 'file'.d/NAME.conf in lexical order, and DIR/group.d/NAME.conf and
 * DIR/user.d/NAME.conf, DIR being the main file's directory, into c (manager_config_init()'ed).
 * 0, or the first error's negative errno with every error, "FILE:LINE: reason", in *ret_errors
 * (an unknown section or setting is one, a setting in a section it does not belong to, a bad
 * value, a [View] entry that cannot be valid for any user); c is then to be thrown away. */
int manager_config_load(const char *file, ManagerConfig *c, char ***ret_errors);
/* One file alone, as what its place makes it: a group.d/ or user.d/ file holds [View] only,
 * any other [Manager] and [View] (nsctl verify FILE). Errors as above. */
int manager_config_check_file(const char *path, char ***ret_errors);
/* Names the start-only settings (SubtreeRoot=, StateDirectory=) that differ between 'running'
 * and 'loaded': "SubtreeRoot= (/a → /b)", NULL if none (*ret). */
int manager_config_start_only_changes(const ManagerConfig *running, const ManagerConfig *loaded, char **ret);

/* The [View] policy of one user, as the files of 'c' add up: the main file and its drop-ins,
 * then group.d/GROUP.conf for each of 'groups' (in the order given), then user.d/USER.conf. */
int view_policy_load(const ManagerConfig *c, const char *user, char *const *groups, ViewPolicy *p);
/* The groups that have a policy of their own (group.d/GROUP.conf), NULL if none: where there
 * are none, a user's groups need not be looked up. */
int view_policy_groups_with_files(const ManagerConfig *c, char ***ret);
