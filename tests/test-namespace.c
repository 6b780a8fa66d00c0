/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/namespace.c: the state names and session ids. TAP output. */
#include "namespace.h"
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

int main(void) {
        test_namespace_state_table();
        test_session_ids();
        return tap_finish();
}
