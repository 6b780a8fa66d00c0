/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macros.h"

typedef enum ViewPropagation {
        VIEW_PROPAGATION_SLAVE,
        VIEW_PROPAGATION_PRIVATE,
        VIEW_PROPAGATION_SHARED,
        _VIEW_PROPAGATION_MAX,
        _VIEW_PROPAGATION_INVALID = -EINVAL,
} ViewPropagation;

const char *view_propagation_to_string(ViewPropagation p) _pure_;
ViewPropagation view_propagation_from_string(const char *s) _pure_;

#include "config.h"

/* /etc/nsmanager/nsmanagerd.conf with the default prefix=/usr */
#define NSM_CONFIG_FILE SYSCONFDIR "/nsmanager/nsmanagerd.conf"

typedef struct ManagerConfig {
        char *subtree_root;            /* SubtreeRoot= (/subtree) */
        char **shared_subtrees;        /* SharedSubtrees= (/mnt) */
        uint64_t stop_delay_usec;      /* StopDelaySec= (10s) */
        uid_t min_uid;                 /* MinUID= (1000) */
        char **exclude_users;          /* ExcludeUsers= */
        char *state_directory;         /* StateDirectory= (/run/nsmanager) */
        ViewPropagation view_propagation; /* ViewPropagation= (slave) */
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

/* Reads 'file' (NULL: NSM_CONFIG_FILE) and then 'file'.d/ drop-ins in lexical order. A missing
 * main file is fine; a syntax error or an invalid value is an error (-EINVAL), reported
 * through 'ret_error' (malloc'ed "FILE:LINE: message") when non-NULL. */
int manager_config_load(const char *file, ManagerConfig *c, char **ret_error);

/* [View] policy for one user: the main file, its drop-ins, then DIR/group.d/GROUP.conf for
 * each of 'groups' (in the order given), then DIR/user.d/USER.conf, DIR being the main
 * file's directory. */
int view_policy_load(const char *file, const char *user, char *const *groups, ViewPolicy *p, char **ret_error);

/* "10s", "500ms", "1min", "2h", plain numbers are seconds. */
int parse_sec(const char *s, uint64_t *ret_usec);
/* "64M", "1G", "4096", "50%" is refused (-EINVAL). */
int parse_size(const char *s, uint64_t *ret_bytes);
int parse_boolean(const char *s);
/* Splits on whitespace; quotes are not interpreted. */
char **strv_split_whitespace(const char *s);
size_t strv_length(char *const *l);
int strv_extend(char ***l, const char *s);
