/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The namespace set and what a view operation hands back (src/nsmanagerd/namespace.c,
 * namespace-state.c): without a Manager, a bus or a mount. The set's state directory is
 * NULL-rooted, so nothing is saved: namespace_save() of a namespace without a set, and of one
 * in this set, writes nothing. */
#include <errno.h>
#include <string.h>

#include "macros.h"
#include "namespace-state.h"
#include "namespace.h"
#include "strv.h"
#include "tap.h"
#include "time-util.h"

/* What the listeners heard, in order: "A:ready:alice", "B:gone:alice", … */
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

static bool has_choice(Namespace *ns, const char *path, const char *mode) {
        for (size_t i = 0; i < ns->n_choices; i++)
                if (streq(ns->choices[i].path, path))
                        return streq(ns->choices[i].mode, mode);
        return false;
}

/* namespace_note_view_op(): what a child did, recorded; namespace_mount_ids(): the ids the rules
 * of a user's own view get back. */
static void test_view_results(void) {
        Namespace *ns = calloc(1, sizeof(Namespace));
        Credentials caller = { .uid = 1001, .gid = 1001 };
        NamespaceMountIds ids = {};
        MountId a = { .unique = 11, .old = 1 }, b = { .unique = 12, .old = 2 }, c = { .unique = 13, .old = 3 };

        check(ns != NULL, "a namespace without a set");
        if (!ns)
                return;
        *ns = (Namespace) { .n_ref = 1, .name = strdup("alice"), .mntns_fd = -EBADF };

        ViewOp bind_user = { .type = VIEW_OP_BIND, .path = "/home/alice/mnt", .caller = &caller };
        namespace_note_view_op(ns, &bind_user, &(ViewOpResult) { .mounted = a, .n_mounts = 40 }, "test");
        ViewOp bind_admin = { .type = VIEW_OP_BIND, .path = "/srv/data" };
        namespace_note_view_op(ns, &bind_admin, &(ViewOpResult) { .mounted = b }, "test");
        check(ns->n_binds == 2 && ns->n_mounts == 40, "two binds recorded, NMounts as the child counted");
        check(ns->binds[0].for_user && !ns->binds[1].for_user,
              "a bind is the user's own only when the operation ran for a caller held to the rules");

        ns->policy_mounts = memdup(&c, sizeof c);
        ns->n_policy_mounts = 1;
        check(namespace_mount_ids(ns, &ids) == 0, "namespace_mount_ids");
        check(ids.n_own == 1 && mount_id_equal(ids.own[0], a) && ids.n_binds == 2 && ids.n_policy == 1 &&
              mount_id_equal(ids.policy[0], c), "own binds apart, every bind, the policy's mounts");
        free(ids.own);
        free(ids.binds);
        free(ids.policy);

        ViewOp prop = { .type = VIEW_OP_SET_PROPAGATION, .path = "/srv/data/x", .mode = PROPAGATION_PRIVATE };
        namespace_note_view_op(ns, &prop, &(ViewOpResult) {}, "test");
        check(has_choice(ns, "/srv/data/x", "private"), "a propagation change is a choice");
        ViewOp slave = { .type = VIEW_OP_JOIN, .path = "/media", .join = JOIN_SLAVE };
        namespace_note_view_op(ns, &slave, &(ViewOpResult) {}, "test");
        check(has_choice(ns, "/media", "slave"), "EnslaveSubtree is the choice 'slave'");
        check(namespace_set_pending_join(ns, "/run/media", true) == 0, "a pending join");
        ViewOp join = { .type = VIEW_OP_JOIN, .path = "/run/media", .join = JOIN_PEER };
        namespace_note_view_op(ns, &join, &(ViewOpResult) {}, "test");
        check(!ns->pending_joins || !ns->pending_joins[0], "a join done is no longer pending");

        /* The bind under which the choice was made goes: the choice goes with it. */
        namespace_note_view_op(ns, &(ViewOp) { .type = VIEW_OP_UNMOUNT, .path = "/srv/data" },
                               &(ViewOpResult) { .replaced = b }, "test");
        check(ns->n_binds == 1 && mount_id_equal(ns->binds[0].id, a) && !has_choice(ns, "/srv/data/x", "private") &&
              has_choice(ns, "/media", "slave"), "an unmount forgets the bind and the choices below it");
        /* Mounts the child saw go (the user's own bind, unmounted from inside) are forgotten too. */
        namespace_note_view_op(ns, &(ViewOp) { .type = VIEW_OP_SET_PROPAGATION, .path = "/" },
                               &(ViewOpResult) { .gone = { a }, .n_gone = 1 }, "test");
        check(ns->n_binds == 0, "what the child saw gone is forgotten");
        namespace_unref(ns);
}

int main(void) {
        sd_event *event = NULL;

        check(sd_event_new(&event) >= 0, "an event loop");
        test_set(event);
        test_view_results();
        sd_event_unref(event);
        return tap_finish();
}
