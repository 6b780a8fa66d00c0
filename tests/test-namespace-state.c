/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/namespace-state.c: the state file read back, and what a view operation hands
 * back to a namespace. TAP output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"
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
                "PENDING_JOIN=/run/media\n"
                "MOUNT_POINT=relative\n"
                "MOUNT_POINT=/home/alice/x\\x20y\n";
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
        check(strv_length(ns->mount_points) == 1 && streq(ns->mount_points[0], "/home/alice/x y"),
              "MOUNT_POINT: an absolute path kept, unescaped; a relative one dropped");
        fclose(f);
        namespace_unref(ns);
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
        test_state_file();
        test_view_results();
        return tap_finish();
}
