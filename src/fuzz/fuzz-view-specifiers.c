/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Specifier expansion in [View] entries (%u %U %h %g %G %%), on any string. */
#include "fuzz.h"
#include "view-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* gid 0: %g looks up a group every machine has. */
        const UserRecord u = { .name = (char *) "alice", .uid = 2001, .gid = 0, .home = (char *) "/home/alice",
                               .shell = (char *) "/bin/sh" };
        _cleanup_free_ char *s = fuzz_string(data, size), *expanded = NULL;
        int r;

        if (!s)
                return 0;
        r = view_policy_expand_specifiers(s, &u, &expanded);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        FUZZ_CHECK((r == 0) == !!expanded);
        if (r == 0 && !strchr(s, '%'))
                FUZZ_CHECK(streq(expanded, s));
        return 0;
}
