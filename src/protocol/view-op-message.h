/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "child-main.h"
#include "manager-config.h"
#include "mount-util.h"
#include "nsm-error.h"
#include "user-util.h"

/* Live changes to a running view (or to the host), each run in a killable child (child.c)
 * that enters the namespace: the daemon never leaves the host's. Paths are absolute and
 * normalized, resolved inside the namespace without following any symlink.
 *
 * Who asks decides how: a caller with full power (root, or authorized for manage) is served
 * as root; a user acting on their own view with manage-own alone is held to the rules of
 * own-view-rules.h, checked in the child on the fds it acts on.
 *
 * The answer: a ViewOpResult, or the failure, named where it was
 * found: InvalidPath (the path does not qualify), AccessDenied (a rule of own-view-rules.h,
 * the sentence names it; or the caller's permissions), Busy, LimitExceeded (MaxUserMounts=),
 * else the system call's errno. */

typedef enum ViewOpType {
        VIEW_OP_SET_PROPAGATION,
        VIEW_OP_JOIN,            /* ShareSubtree(user)/EnslaveSubtree, and ShareSubtree("") in each view */
        VIEW_OP_BIND,
        VIEW_OP_UNMOUNT,
        VIEW_OP_HOST_SHARE,      /* the host's side of ShareSubtree("") */
        VIEW_OP_APPLY_POLICY,    /* the [View] policy, in a view just built */
        _VIEW_OP_TYPE_MAX,
        _VIEW_OP_TYPE_INVALID = -EINVAL,
} ViewOpType;

typedef enum JoinMode {
        JOIN_PEER,               /* a peer of the host's mount at the path again */
        JOIN_SLAVE,              /* a slave of it (of whatever it follows now, where the host has no
                                  * shared mount there) */
        _JOIN_MODE_MAX,
        _JOIN_MODE_INVALID = -EINVAL,
} JoinMode;

typedef struct ViewOp {
        ViewOpType type;
        int ns_fd;                       /* the view; < 0: the host */
        const char *path;
        const char *source;              /* BIND */
        PropagationMode mode;            /* SET_PROPAGATION */
        bool recursive;                  /* SET_PROPAGATION, UNMOUNT (detach) */
        JoinMode join;                   /* JOIN */
        bool read_only, make_dir;        /* BIND */
        bool host_propagates;            /* BIND: ViewPropagation=shared, the bind is a peer of its source */
        uint64_t expected_id;            /* SET_PROPAGATION, UNMOUNT: 0, or the id (GetMountsEx's) the mount at
                                          * 'path' must have, else MountChanged and nothing done */

        /* Who: NULL for full power, else the user acting on their own view. */
        const Credentials *caller;
        const MountId *own_mounts;       /* binds made for the caller: Unmount, replaced by BindMount */
        size_t n_own_mounts;
        const MountId *bind_mounts;      /* every recorded bind of the view: replaced, not stacked */
        size_t n_bind_mounts;
        const MountId *policy_mounts;    /* the [View] policy's */
        size_t n_policy_mounts;
        unsigned max_own_binds;          /* BIND for a user: MaxUserMounts= (0: no limit) */

        /* APPLY_POLICY */
        const ViewPolicy *policy;
        const UserRecord *user;
} ViewOp;

/* What a successful operation did to mounts. */
#define VIEW_OP_MOUNTS_MAX 256
typedef struct ViewOpResult {
        MountId mounted;                 /* BIND: the new bind's top mount; HOST_SHARE: the bind of the
                                          * path onto itself, if it made one */
        MountId replaced;                /* BIND: the earlier bind it replaced; UNMOUNT: the mount removed */
        uint32_t n_mounts;               /* the namespace's mounts afterwards (0: unknown) */
        uint32_t n_gone;                 /* recorded binds found unmounted (by root, with a parent) */
        MountId gone[VIEW_OP_MOUNTS_MAX];
        uint32_t n_policy_mounts;        /* APPLY_POLICY: the mounts it made */
        MountId policy_mounts[VIEW_OP_MOUNTS_MAX];
} ViewOpResult;

const char *view_op_type_to_string(ViewOpType t) _pure_;

/* The daemon ↔ mount child boundary (docs/processes.md): the child serves this interface, one
 * method per operation, served in src/children/view-ops.c. The child reads nothing but its
 * call: the operation, the view's fd (none: the host's namespace), the caller and the
 * namespace's records the rules need and, for the [View] policy, the policy and the user.
 *
 *   SetPropagation(ah view, ay path, u mode, b recursive, t expected_id, RULES) → RESULT
 *   Join(ah view, ay path, u join_mode, RULES) → RESULT
 *   BindMount(ah view, ay path, ay source, b read_only, b make_dir, b host_propagates, RULES) → RESULT
 *   Unmount(ah view, ay path, b detach, t expected_id, RULES) → RESULT
 *   HostShare(ah view, ay path) → RESULT
 *   ApplyPolicy(h view, (btaayaayaayaayb) policy, (suuayay) user) → RESULT
 *
 * Paths are "ay": any bytes but NUL, as the kernel allows them. RULES, "a(uuauu)a(tt)a(tt)a(tt)": the caller (none: full power; else her uid, gid, groups
 * and MaxUserMounts=), the binds made for her, every recorded bind, the policy's mounts.
 * RESULT, "(tt)(tt)ua(tt)a(tt)": ViewOpResult. Warnings for the daemon's log come ahead of it
 * as Warning(s) signals (child-main.h). */

#define VIEW_OPS_INTERFACE "org.example.NSManager.ViewOps"
#define VIEW_OPS_RULES "a(uuauu)a(tt)a(tt)a(tt)"
#define VIEW_OPS_RESULT "(tt)(tt)ua(tt)a(tt)"

/* Its method for an operation. */
const char *view_op_type_to_method(ViewOpType t) _pure_;

extern const ChildInterface view_ops_interface;
