/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "manager-config.h"
#include "mount-util.h"
#include "user-util.h"

/* Building, pinning and inspecting users' mount namespaces. Mount logic only: no bus types. */

typedef struct ViewSpec {
        const UserRecord *user;
        const char *subtree_root;
        char *const *shared_subtrees;
        ViewPropagation propagation;
        const ViewPolicy *policy;        /* may be NULL */
        int registry_fd;                 /* pins live in this mount namespace … */
        const char *pin_dir;             /* … in this directory (a path inside it) */
} ViewSpec;

/* Stages reported by a failing child, for log messages. */
typedef enum ViewStage {
        VIEW_STAGE_NONE,
        VIEW_STAGE_CLONE,
        VIEW_STAGE_PEERS,
        VIEW_STAGE_UNSHARE,
        VIEW_STAGE_ATTACH,
        VIEW_STAGE_PIVOT,
        VIEW_STAGE_POLICY,
        VIEW_STAGE_PIN,
        _VIEW_STAGE_MAX,
} ViewStage;

const char *view_stage_to_string(int stage);

/* Builds the user's view in a new mount namespace and pins it in the registry; returns an
 * nsfs fd of it. *cpu is the CPU to create it on (-1: any) and is updated to the one that
 * worked (see pin_retry in view.c). On failure *ret_stage says which step failed and
 * *ret_message (if the step said more, e.g. which [View] entry) why. */
int view_create(const ViewSpec *spec, int *cpu, int *ret_ns_fd, int *ret_stage, char **ret_message);

/* The registry: one mount namespace, pinned at STATE/registry in the host, that holds a pin
 * per user namespace under STATE/pins, so the host's mount table does not grow with users. */
int registry_open(const char *state_dir, int *cpu, int *ret_fd);
int registry_unpin(int registry_fd, const char *pin_dir, const char *name);
/* Calls cb(name, fd) for every pin; fd is owned by the callee. */
int registry_list(int registry_fd, const char *pin_dir, int (*cb)(const char *name, int fd, void *userdata), void *userdata);

/* The mount table of the namespace ns_fd (-1: our own), as its processes see it. */
int mntns_read_mounts(int ns_fd, MountEntry **ret, size_t *ret_n);
/* The number of mounts in the namespace ns_fd (a user's: never -1). */
int mntns_count_mounts(int ns_fd, size_t *ret_n);

/* Host start-up: '/' shared, SubtreeRoot and StateDirectory unbindable, SharedSubtrees shared. */
int host_prepare(const char *subtree_root, const char *state_dir, char *const *shared_subtrees);
/* One shared subtree on the host: created, bound onto itself, shared in a group of its own. */
int host_prepare_shared(const char *path);
