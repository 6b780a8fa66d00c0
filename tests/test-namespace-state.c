/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/namespace-state.c: the state file read back. TAP output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "namespace-state.h"
#include "namespace.h"
#include "strv.h"
#include "tap.h"

/* namespace_parse_state(): a malformed record costs only itself. */
static void test_state_file(void) {
        static const char state[] =
                "LINGER=yes\n"
                "BIND=garbage\n"
                "SESSION=c1:2 10 0\n"
                "CHOICE=private\n"
                "BIND=1 2 admin /a\\x2\n"
                "BIND=3 4 user /kept\\x20too\n"
                "SESSION=c17 0 0\n"
                "CHOICE=slave recursive /media\n"
                "PENDING_JOIN=/run/media\n";
        Namespace *ns = calloc(1, sizeof(Namespace));
        bool had_sessions = false;
        FILE *f = fmemopen((void *) state, sizeof state - 1, "r");

        check(ns && f, "state file set up");
        if (!ns || !f)
                return;
        *ns = (Namespace) { .n_ref = 1, .mntns_fd = -EBADF };
        check(namespace_parse_state(ns, f, &had_sessions) == 0, "a state file with malformed records is read");
        check(ns->linger && had_sessions, "LINGER and SESSION seen");
        check(ns->n_binds == 1 && streq(ns->binds[0].destination, "/kept too") && ns->binds[0].for_user,
              "records after a malformed one are kept, paths unescaped");
        check(ns->sessions && streq(ns->sessions->id, "c17") && !ns->sessions->next && ns->sessions->pidfd < 0,
              "a session id the bus would refuse is dropped; sessions are not watched while parsing");
        check(ns->n_choices == 1 && ns->choices[0].recursive && strv_length(ns->pending_joins) == 1, "CHOICE and PENDING_JOIN");
        fclose(f);
        namespace_unref(ns);
}

int main(void) {
        test_state_file();
        return tap_finish();
}
