/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/namespace.c: the state names, session ids, and the state file read back. TAP output. */
#include <stdio.h>

#include "namespace.h"
#include "strv.h"
#include "tap.h"

/* The names of a namespace's states (the State property), both ways. */
static void test_namespace_state_table(void) {
        for (int i = 0; i < _NAMESPACE_STATE_MAX; i++)
                check(namespace_state_from_string(namespace_state_to_string(i)) == (NamespaceState) i,
                      "namespace state %d round-trips", i);
}

/* Which session ids are kept (a PAM session's, as the bus may carry them). */
static void test_session_ids(void) {
        check(valid_session_id("pam-sshd-pts_3-42") && !valid_session_id("") && !valid_session_id("a b") &&
              !valid_session_id("a:b") && !valid_session_id("caf\xc3\xa9"), "valid_session_id");
}

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
        test_namespace_state_table();
        test_state_file();
        test_session_ids();
        return tap_finish();
}
