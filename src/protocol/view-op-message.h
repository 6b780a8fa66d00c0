/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

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
 * The request and the answer are view-op-message.h's. The answer: a ViewOpResult, or the failure, named where it was
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

/* The child's function (ChildRequestFunc, child-main.h): decodes its request
 * (view-op-message.h), runs the operation and answers on sock. */
int view_op_child_run(int sock, const void *request, size_t size, int *fds, size_t n_fds, NsmError *error);

const char *view_op_type_to_string(ViewOpType t) _pure_;
ViewOpType view_op_type_from_string(const char *s) _pure_;

/* The daemon ↔ mount child boundary (docs/processes.md): the request, one
 * ipc-fields.h message of kind VIEW_OP_MESSAGE_REQUEST with the view's fd beside it, and the
 * answer, one of kind VIEW_OP_MESSAGE_RESULT (or a failure, ipc_send_error()). The child reads
 * nothing but its request: the operation, the caller's credentials, the namespace's records
 * the rules need and, for the [View] policy, the policy and the user. */

enum {
        VIEW_OP_MESSAGE_REQUEST = 1,
        VIEW_OP_MESSAGE_RESULT = 2,
};

/* A decoded request: 'op' points into the rest, which it owns. */
typedef struct ViewOpRequest {
        ViewOp op;
        bool with_fd;            /* the view's fd comes with it (else: the host) */
        char *path, *source;
        Credentials caller;
        MountId *own, *binds, *policy_ids;
        ViewPolicy policy;
        UserRecord user;
} ViewOpRequest;

void view_op_request_done(ViewOpRequest *r);

/* 'op' as a request (malloc'ed); op->ns_fd is not in it: the view's fd goes beside it. -EINVAL
 * for an operation the decoder would refuse. */
int view_op_request_encode(const ViewOp *op, void **ret, size_t *ret_size);
/* -EBADMSG for a malformed request (an unknown or repeated field, a field of another
 * operation, a path that is not absolute and normalized, a missing one); ret->op.ns_fd is
 * -EBADF. */
int view_op_request_decode(const void *data, size_t size, ViewOpRequest *ret);

int view_op_result_encode(const ViewOpResult *res, void **ret, size_t *ret_size);
/* -EBADMSG for a malformed answer (more than VIEW_OP_MOUNTS_MAX ids of a kind, say). */
int view_op_result_decode(const void *data, size_t size, ViewOpResult *ret);
