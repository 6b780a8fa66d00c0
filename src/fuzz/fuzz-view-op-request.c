/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A mount child's decoder of its request (src/children/view-op-message.c): the one input the
 * child reads, as root, before it enters a view and mounts. Whatever it accepts holds what
 * view-ops.c takes for granted (an absolute, normalized path; a caller with a uid and a gid;
 * the [View] policy with its user), and encoded again decodes to the same operation. */
#include "fuzz.h"
#include "path-util.h"
#include "strv.h"
#include "view-op-message.h"

static bool same(const ViewOpRequest *a, const ViewOpRequest *b) {
        const ViewOp *x = &a->op, *y = &b->op;

        if (x->type != y->type || a->with_fd != b->with_fd || !streq_ptr(x->path, y->path) ||
            !streq_ptr(x->source, y->source) || !x->caller != !y->caller || x->max_own_binds != y->max_own_binds ||
            x->expected_id != y->expected_id ||
            !mount_id_lists_identical(x->own_mounts, x->n_own_mounts, y->own_mounts, y->n_own_mounts) ||
            !mount_id_lists_identical(x->bind_mounts, x->n_bind_mounts, y->bind_mounts, y->n_bind_mounts) ||
            !mount_id_lists_identical(x->policy_mounts, x->n_policy_mounts, y->policy_mounts, y->n_policy_mounts))
                return false;
        if (x->type == VIEW_OP_SET_PROPAGATION && (x->mode != y->mode || x->recursive != y->recursive))
                return false;
        if (x->type == VIEW_OP_JOIN && x->join != y->join)
                return false;
        if (x->type == VIEW_OP_BIND && (x->read_only != y->read_only || x->make_dir != y->make_dir ||
                                        x->host_propagates != y->host_propagates))
                return false;
        if (x->caller && (x->caller->uid != y->caller->uid || x->caller->gid != y->caller->gid ||
                          x->caller->n_groups != y->caller->n_groups ||
                          (x->caller->n_groups > 0 && /* no memcmp() of NULL, even for 0 bytes */
                           memcmp(x->caller->groups, y->caller->groups, x->caller->n_groups * sizeof(gid_t)) != 0)))
                return false;
        if (x->type == VIEW_OP_APPLY_POLICY &&
            (x->policy->private_tmp != y->policy->private_tmp || x->policy->tmp_size != y->policy->tmp_size ||
             x->policy->hide_other_homes != y->policy->hide_other_homes ||
             !strv_equal(x->policy->bind_paths, y->policy->bind_paths) ||
             !strv_equal(x->policy->bind_read_only_paths, y->policy->bind_read_only_paths) ||
             !strv_equal(x->policy->temporary_file_system, y->policy->temporary_file_system) ||
             !strv_equal(x->policy->inaccessible_paths, y->policy->inaccessible_paths) ||
             !streq(x->user->name, y->user->name) || x->user->uid != y->user->uid || x->user->gid != y->user->gid ||
             !streq_ptr(x->user->home, y->user->home) || !streq_ptr(x->user->shell, y->user->shell)))
                return false;
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(view_op_request_done) ViewOpRequest q = {}, again = {};
        _cleanup_free_ void *msg = NULL;
        size_t n = 0;
        int r;

        r = view_op_request_decode(data, size, &q);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0)
                return 0;
        FUZZ_CHECK(q.op.type >= 0 && q.op.type < _VIEW_OP_TYPE_MAX && q.op.ns_fd < 0);
        if (q.op.type == VIEW_OP_APPLY_POLICY)
                FUZZ_CHECK(q.op.policy && q.op.user && q.op.user->name && !q.op.caller);
        else
                FUZZ_CHECK(q.op.path && path_is_absolute_normalized(q.op.path) && !q.op.policy);
        if (q.op.type == VIEW_OP_BIND)
                FUZZ_CHECK(q.op.source && path_is_absolute_normalized(q.op.source));
        FUZZ_CHECK(!q.op.caller || (q.op.caller->uid != (uid_t) -1 && q.op.caller->gid != (gid_t) -1));

        /* Encoded again, it is the same request; the fd goes beside it. */
        q.op.ns_fd = q.with_fd ? 0 : -EBADF;
        r = view_op_request_encode(&q.op, &msg, &n);
        if (r == -ENOMEM || r == -E2BIG)
                return 0;
        FUZZ_CHECK(r == 0);
        r = view_op_request_decode(msg, n, &again);
        FUZZ_CHECK(r == 0 || r == -ENOMEM);
        FUZZ_CHECK(r < 0 || same(&q, &again));
        return 0;
}
