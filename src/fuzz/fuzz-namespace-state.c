/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A namespace's state file (StateDirectory/namespaces/NAME) as namespace_load() reads it after
 * a restart. The daemon writes it, but a file written by another version, or cut short by a
 * crash, must cost at most its malformed records. The Namespace here belongs to no set:
 * namespace_parse_state() needs none, and watches no session leader. */
#include "fd-store.h"
#include "fuzz.h"
#include "namespace-session.h"
#include "namespace-state.h"
#include "namespace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_fclose_ FILE *f = fuzz_stream(data, size, &buf);
        _cleanup_(namespace_unrefp) Namespace *ns = NULL;
        bool had_sessions = false;
        int r;

        if (!f)
                return 0;
        ns = calloc(1, sizeof(Namespace));
        if (!ns)
                return 0;
        *ns = (Namespace) { .n_ref = 1, .mntns_fd = -EBADF, .name = strdup("fuzz") };
        if (!ns->name)
                return 0;

        r = namespace_parse_state(ns, f, &had_sessions);
        FUZZ_CHECK(r == 0 || r == -ENOMEM);
        for (Session *s = ns->sessions; s; s = s->next) {
                FUZZ_CHECK(had_sessions && valid_session_id(s->id));
                FUZZ_CHECK(s->pidfd < 0 && !s->pidfd_source);
                /* Nothing is watched or taken from the fd store while parsing. */
                FUZZ_CHECK(s->fd < 0 && !s->fd_source);
                FUZZ_CHECK(!s->fdname || (*s->fdname && strlen(s->fdname) < FD_STORE_NAME_MAX &&
                                          !streq(s->fdname, "-")));
        }
        for (size_t i = 0; i < ns->n_binds; i++)
                FUZZ_CHECK(ns->binds[i].destination);
        for (size_t i = 0; i < ns->n_choices; i++)
                FUZZ_CHECK(ns->choices[i].path && ns->choices[i].mode);
        return 0;
}
