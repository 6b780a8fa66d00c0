/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "view-ops.h"

/* The daemon ↔ mount child boundary of view-ops.h (docs/processes.md): the request, one
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
