/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/namespace.c: the state names, session ids, and the namespace set (lookups,
 * listeners, drops) without a Manager, a bus or a mount. The set's state directory is
 * NULL-rooted, so nothing is saved. TAP output. */
#include <errno.h>
#include <string.h>

#include "macros.h"
#include "namespace.h"
#include "strv.h"
#include "tap.h"
#include "time-util.h"

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

static char **heard;

static void note(const char *who, const char *what, Namespace *ns) {
        char *s = NULL;

        if (asprintf(&s, "%s:%s:%s", who, what, ns->name) < 0 || strv_extend(&heard, s) < 0)
                abort();
        free(s);
}

static void a_ready(Namespace *ns, void *userdata) {
        note(userdata, "ready", ns);
}
static void a_changed(Namespace *ns, void *userdata) {
        note(userdata, "changed", ns);
}
static void a_gone(Namespace *ns, void *userdata) {
        note(userdata, "gone", ns);
}

static const NamespaceListener listener_a = { .ready = a_ready, .changed = a_changed, .gone = a_gone };
/* Hears of nothing but a namespace that goes: any hook may be NULL. */
static const NamespaceListener listener_b = { .gone = a_gone };

static Namespace *add(NamespaceSet *set, const char *name, uid_t uid) {
        UserRecord u = { .name = (char *) name, .uid = uid, .gid = uid, .home = (char *) "/home/x" };
        Namespace *ns = NULL;
        int r = namespace_new(set, &u, &ns);

        check(r == 0 && ns && ns->set == set, "namespace_new('%s')", name);
        return ns;
}

static void test_set(sd_event *event) {
        ManagerConfig config = { .operation_timeout_usec = 1000 };
        StateDir state = {};
        NamespaceSet set;
        Namespace *alice, *bob;
        UserRecord other = { .name = (char *) "alias", .uid = 1001, .gid = 1001 };
        Namespace *dup = NULL;

        check(namespace_set_init(&set, event, &config, &state) == 0, "namespace_set_init");
        check(namespace_set_listen(&set, &listener_a, (void *) "A") == 0 &&
              namespace_set_listen(&set, &listener_b, (void *) "B") == 0, "two listeners");
        check(namespace_set_listen(&set, &listener_a, (void *) "C") == -ENOSPC, "a third is refused: -ENOSPC");

        alice = add(&set, "alice", 1001);
        bob = add(&set, "bob", 1002);
        check(namespace_set_get(&set, "alice") == alice && namespace_set_get_by_uid(&set, 1002) == bob &&
              !namespace_set_get(&set, "carol") && !namespace_set_get(&set, NULL) && !namespace_set_get_by_uid(&set, 0),
              "found by name and by uid, and nothing else");
        check(namespace_new(&set, &other, &dup) == -EEXIST && !dup && !namespace_set_get(&set, "alias") &&
              namespace_set_get_by_uid(&set, 1001) == alice,
              "one view per uid: another name of alice's uid is refused, and left in neither map");
        uint64_t before = now_usec(CLOCK_MONOTONIC), deadline = namespace_set_deadline(&set);
        check(deadline >= before + 1000 && deadline <= now_usec(CLOCK_MONOTONIC) + 1000,
              "the deadline is OperationTimeoutSec= from now");

        namespace_notify_ready(alice);
        namespace_notify_changed(bob);
        check(strv_length(heard) == 2 && streq(heard[0], "A:ready:alice") && streq(heard[1], "A:changed:bob"),
              "ready and changed reach the listener that has them");
        heard = strv_free(heard);

        namespace_ref(alice);
        namespace_drop(alice);
        check(strv_length(heard) == 2 && streq(heard[0], "A:gone:alice") && streq(heard[1], "B:gone:alice"),
              "a drop is heard by every listener, in the order they listened");
        check(!alice->set && !namespace_set_get(&set, "alice") && !namespace_set_get_by_uid(&set, 1001),
              "a dropped namespace is in neither map and knows no set");
        heard = strv_free(heard);
        namespace_notify_changed(alice);
        check(!heard, "a dropped namespace tells nobody");
        namespace_unref(alice);

        namespace_set_unlisten(&set, &listener_a, (void *) "A");
        namespace_set_done(&set);
        check(strv_length(heard) == 1 && streq(heard[0], "B:gone:bob"),
              "namespace_set_done() drops what is left; an unlistened listener hears nothing");
        heard = strv_free(heard);
        check(!set.by_name && !set.by_uid, "and frees the maps");
}

int main(void) {
        sd_event *event = NULL;

        test_namespace_state_table();
        test_session_ids();
        check(sd_event_new(&event) >= 0, "an event loop");
        test_set(event);
        sd_event_unref(event);
        return tap_finish();
}
