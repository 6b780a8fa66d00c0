/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The view builder's decoder of the daemon's requests (src/builder/builder-message.c). Only the
 * daemon writes them, but a builder must answer whatever arrives with "Malformed request." and
 * never act on a name or a path the decoder did not check. What it accepts, the daemon could
 * have sent: encoded again, it decodes to the same call. */
#include "builder-message.h"
#include "fuzz.h"
#include "path-util.h"
#include "strv.h"
#include "user-util.h"

static bool same(const BuilderCall *a, const BuilderCall *b) {
        if (a->kind != b->kind || !streq_ptr(a->registry_pin, b->registry_pin) || !streq_ptr(a->pins_dir, b->pins_dir) ||
            !streq_ptr(a->name, b->name) || !streq_ptr(a->subtree_root, b->subtree_root) ||
            a->propagation != b->propagation || a->with_fd != b->with_fd || a->with_ids != b->with_ids)
                return false;
        return strv_equal(a->shared_subtrees, b->shared_subtrees);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(builder_call_done) BuilderCall c = {}, again = {};
        _cleanup_free_ void *msg = NULL;
        size_t n = 0;
        int r;

        r = builder_call_decode(data, size, &c);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0) {
                FUZZ_CHECK(!c.name && !c.registry_pin && !c.shared_subtrees);
                return 0;
        }
        FUZZ_CHECK(c.kind >= BUILDER_OPEN_REGISTRY && c.kind < _BUILDER_CALL_KIND_MAX);
        FUZZ_CHECK(!c.name || filename_is_valid(c.name));
        FUZZ_CHECK(c.kind != BUILDER_BUILD || valid_user_name(c.name));
        FUZZ_CHECK(!c.subtree_root || path_is_absolute_normalized(c.subtree_root));
        for (char **s = c.shared_subtrees; s && *s; s++)
                FUZZ_CHECK(path_is_absolute_normalized(*s));
        FUZZ_CHECK(builder_call_n_fds(&c) <= 1);

        r = builder_call_encode(&c, &msg, &n);
        if (r == -ENOMEM)
                return 0;
        FUZZ_CHECK(r == 0);
        r = builder_call_decode(msg, n, &again);
        FUZZ_CHECK(r == 0 || r == -ENOMEM);
        FUZZ_CHECK(r < 0 || same(&c, &again));
        return 0;
}
