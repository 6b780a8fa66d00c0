/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's decoder of a mount child's answer (src/children/view-op-message.c). The child
 * runs where a user's file systems are, and what it answers is recorded in the namespace's
 * state: whatever arrives, no more ids than an answer holds, and what is accepted encodes to
 * an answer that decodes the same. */
#include "fuzz.h"
#include "view-op-message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ ViewOpResult *res = calloc(1, sizeof(ViewOpResult)), *again = calloc(1, sizeof(ViewOpResult));
        _cleanup_free_ void *msg = NULL;
        size_t n = 0;
        int r;

        if (!res || !again)
                return 0;
        r = view_op_result_decode(data, size, res);
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        if (r < 0)
                return 0;
        FUZZ_CHECK(res->n_gone <= VIEW_OP_MOUNTS_MAX && res->n_policy_mounts <= VIEW_OP_MOUNTS_MAX);

        r = view_op_result_encode(res, &msg, &n);
        if (r == -ENOMEM)
                return 0;
        FUZZ_CHECK(r == 0);
        FUZZ_CHECK(view_op_result_decode(msg, n, again) == 0);
        FUZZ_CHECK(again->n_gone == res->n_gone && again->n_policy_mounts == res->n_policy_mounts &&
                   again->n_mounts == res->n_mounts && again->mounted.unique == res->mounted.unique &&
                   again->mounted.old == res->mounted.old && again->replaced.unique == res->replaced.unique &&
                   again->replaced.old == res->replaced.old &&
                   mount_id_lists_identical(again->gone, again->n_gone, res->gone, res->n_gone) &&
                   mount_id_lists_identical(again->policy_mounts, again->n_policy_mounts, res->policy_mounts,
                                            res->n_policy_mounts));
        return 0;
}
