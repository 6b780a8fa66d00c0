/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/children/view-op-message.c: a mount child's request and answer, encoded and decoded
 * (every operation round-trips with what it carries; what the decoders refuse), and a real
 * child (child.c, child-main.c, view-ops.c) answering a malformed request as one. TAP output. */
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <time.h>

#include "child-answer.h"
#include "child.h"
#include "ipc-fields.h"
#include "strv.h"
#include "tap.h"
#include "view-op-message.h"

static bool request_round_trip(const ViewOp *in, ViewOpRequest *out) {
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;

        return view_op_request_encode(in, &msg, &size) == 0 && view_op_request_decode(msg, size, out) == 0;
}

static void test_requests(void) {
        const MountId own[] = { { UINT64_C(0x80000001), 41 }, { MOUNT_ID_FINGERPRINT | 7, 42 } };
        const MountId binds[] = { { UINT64_C(0x80000001), 41 }, { UINT64_C(0x80000002), 43 }, { 0, 44 } };
        const MountId policy[] = { { UINT64_C(0x80000009), 50 } };
        gid_t groups[] = { 2001, 2100, 0 };
        Credentials alice = { .uid = 2001, .gid = 2001, .groups = groups, .n_groups = ELEMENTSOF(groups) };

        for (ViewOpType t = 0; t < _VIEW_OP_TYPE_MAX; t++) {
                if (t == VIEW_OP_APPLY_POLICY)
                        continue;
                _cleanup_(view_op_request_done) ViewOpRequest q = {};
                ViewOp op = { .type = t, .ns_fd = t == VIEW_OP_HOST_SHARE ? -EBADF : 3, .path = "/home/alice/dst",
                              .source = t == VIEW_OP_BIND ? "/home/alice/src" : NULL, .mode = PROPAGATION_SLAVE,
                              .recursive = t == VIEW_OP_UNMOUNT || t == VIEW_OP_SET_PROPAGATION, .join = JOIN_SLAVE,
                              .read_only = true, .make_dir = true, .host_propagates = true };
                bool caller = t != VIEW_OP_HOST_SHARE;
                if (caller)
                        op = (ViewOp) { .type = op.type, .ns_fd = op.ns_fd, .path = op.path, .source = op.source,
                                        .mode = op.mode, .recursive = op.recursive, .join = op.join,
                                        .read_only = op.read_only, .make_dir = op.make_dir,
                                        .host_propagates = op.host_propagates, .caller = &alice, .own_mounts = own,
                                        .n_own_mounts = ELEMENTSOF(own), .bind_mounts = binds,
                                        .n_bind_mounts = ELEMENTSOF(binds), .policy_mounts = policy,
                                        .n_policy_mounts = ELEMENTSOF(policy), .max_own_binds = 17 };

                bool ok = request_round_trip(&op, &q);
                check(ok && q.op.type == t && streq(q.op.path, op.path) && streq_ptr(q.op.source, op.source) &&
                      q.with_fd == (op.ns_fd >= 0) && q.op.ns_fd < 0, "%s: the operation, its path and source, whether "
                      "the view's fd comes", view_op_type_to_string(t));
                if (!ok)
                        continue;
                check((t != VIEW_OP_SET_PROPAGATION || (q.op.mode == PROPAGATION_SLAVE && q.op.recursive)) &&
                      (t != VIEW_OP_JOIN || q.op.join == JOIN_SLAVE) &&
                      (t != VIEW_OP_BIND || (q.op.read_only && q.op.make_dir && q.op.host_propagates)) &&
                      (t != VIEW_OP_UNMOUNT || q.op.recursive), "%s: its flags", view_op_type_to_string(t));
                if (caller)
                        check(q.op.caller && q.op.caller->uid == 2001 && q.op.caller->gid == 2001 &&
                              q.op.caller->n_groups == 3 && q.op.caller->groups[1] == 2100 && q.op.caller->groups[2] == 0 &&
                              q.op.max_own_binds == 17 && mount_id_lists_identical(q.op.own_mounts, q.op.n_own_mounts, own, ELEMENTSOF(own)) &&
                              mount_id_lists_identical(q.op.bind_mounts, q.op.n_bind_mounts, binds, ELEMENTSOF(binds)) &&
                              mount_id_lists_identical(q.op.policy_mounts, q.op.n_policy_mounts, policy, ELEMENTSOF(policy)),
                              "%s: the caller, her groups, MaxUserMounts= and the records", view_op_type_to_string(t));
                else
                        check(!q.op.caller && q.op.n_own_mounts == 0, "%s: full power, no caller",
                              view_op_type_to_string(t));
        }

        /* Full power: no caller on the other side either. */
        _cleanup_(view_op_request_done) ViewOpRequest root = {};
        check(request_round_trip(&(ViewOp) { .type = VIEW_OP_UNMOUNT, .ns_fd = 3, .path = "/mnt/x", .bind_mounts = binds,
                                             .n_bind_mounts = ELEMENTSOF(binds) }, &root) &&
              !root.op.caller && root.op.max_own_binds == 0 &&
              mount_id_lists_identical(root.op.bind_mounts, root.op.n_bind_mounts, binds, ELEMENTSOF(binds)),
              "root's Unmount: no caller, the records still");
        _cleanup_(view_op_request_done) ViewOpRequest by_id = {}, prop_id = {};
        check(request_round_trip(&(ViewOp) { .type = VIEW_OP_UNMOUNT, .ns_fd = 3, .path = "/mnt/x",
                                             .expected_id = UINT64_C(2147483653) }, &by_id) &&
              by_id.op.expected_id == UINT64_C(2147483653) && root.op.expected_id == 0,
              "UnmountById: the mount's id comes across, and none without one");
        check(request_round_trip(&(ViewOp) { .type = VIEW_OP_SET_PROPAGATION, .ns_fd = 3, .path = "/mnt/x",
                                             .mode = PROPAGATION_PRIVATE, .expected_id = 42 }, &prop_id) &&
              prop_id.op.expected_id == 42, "SetPropagationById: the mount's id comes across");

        char *bind_paths[] = { (char *) "-%h/src:/srv/%u:ro", NULL };
        char *tmpfs[] = { (char *) "/var/tmp:size=1m", (char *) "/scratch", NULL };
        char *inaccessible[] = { (char *) "-/home/%u/.secret", NULL };
        ViewPolicy p = { .private_tmp = true, .tmp_size = 1 << 20, .bind_paths = bind_paths, .temporary_file_system = tmpfs,
                         .inaccessible_paths = inaccessible, .hide_other_homes = true };
        UserRecord u = { .name = (char *) "alice", .uid = 2001, .gid = 2001, .home = (char *) "/home/alice",
                         .shell = (char *) "/bin/bash" };
        _cleanup_(view_op_request_done) ViewOpRequest pq = {};
        check(request_round_trip(&(ViewOp) { .type = VIEW_OP_APPLY_POLICY, .ns_fd = 3, .path = "/", .policy = &p, .user = &u },
                                 &pq) &&
              pq.op.policy && pq.op.policy->private_tmp && pq.op.policy->tmp_size == 1 << 20 &&
              pq.op.policy->hide_other_homes && strv_equal(pq.op.policy->bind_paths, bind_paths) &&
              !pq.op.policy->bind_read_only_paths && strv_equal(pq.op.policy->temporary_file_system, tmpfs) &&
              strv_equal(pq.op.policy->inaccessible_paths, inaccessible) && pq.op.user && streq(pq.op.user->name, "alice") &&
              pq.op.user->uid == 2001 && pq.op.user->gid == 2001 && streq(pq.op.user->home, "/home/alice") &&
              streq(pq.op.user->shell, "/bin/bash"), "the [View] policy and its user, entries in order");
}

static int decode_fields(void (*put)(FieldWriter *w)) {
        _cleanup_(view_op_request_done) ViewOpRequest q = {};
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;
        FieldWriter w;

        field_writer_init(&w, VIEW_OP_MESSAGE_REQUEST);
        put(&w);
        if (field_writer_finish(&w, &msg, &size) < 0)
                return -ENOMEM;
        return view_op_request_decode(msg, size, &q);
}

/* Tags as view-op-message.c numbers them (docs/processes.md). */
static void put_unmount(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_UNMOUNT);
        field_put_bool(w, 2, true);
        field_put_string(w, 3, "/home/alice/x");
}
static void put_unmount_ok(FieldWriter *w) {
        put_unmount(w);
        field_put_u64(w, 11, 2001);
        field_put_u64(w, 12, 2001);
}
static void put_type_not_first(FieldWriter *w) {
        field_put_bool(w, 2, true);
        field_put_u64(w, 1, VIEW_OP_UNMOUNT);
        field_put_string(w, 3, "/x");
}
static void put_unknown_type(FieldWriter *w) {
        field_put_u64(w, 1, _VIEW_OP_TYPE_MAX);
        field_put_bool(w, 2, true);
        field_put_string(w, 3, "/x");
}
static void put_relative_path(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_UNMOUNT);
        field_put_bool(w, 2, true);
        field_put_string(w, 3, "home/alice/x");
}
static void put_dotdot_path(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_UNMOUNT);
        field_put_bool(w, 2, true);
        field_put_string(w, 3, "/home/alice/../../etc");
}
static void put_no_path(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_UNMOUNT);
        field_put_bool(w, 2, true);
}
static void put_source_on_unmount(FieldWriter *w) {
        put_unmount(w);
        field_put_string(w, 4, "/etc");
}
static void put_policy_on_unmount(FieldWriter *w) {
        put_unmount(w);
        field_put_string(w, 20, "/etc:/home/alice/etc");
}
static void put_uid_without_gid(FieldWriter *w) {
        put_unmount(w);
        field_put_u64(w, 11, 2001);
}
static void put_groups_without_caller(FieldWriter *w) {
        put_unmount(w);
        field_put_u64(w, 13, 0);
}
static void put_uid_minus_one(FieldWriter *w) {
        put_unmount(w);
        field_put_u64(w, 11, UINT32_MAX);
        field_put_u64(w, 12, 2001);
}
static void put_path_twice(FieldWriter *w) {
        put_unmount(w);
        field_put_string(w, 3, "/etc");
}
static void put_short_mount_id(FieldWriter *w) {
        put_unmount(w);
        field_put(w, 14, "12345678", 8);
}
static void put_bind_without_source(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_BIND);
        field_put_bool(w, 2, true);
        field_put_string(w, 3, "/home/alice/x");
}
static void put_policy_without_user(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_APPLY_POLICY);
        field_put_bool(w, 2, true);
        field_put_bool(w, 18, true);
}
static void put_unmount_of_a_user_on_the_host(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_UNMOUNT);
        field_put_bool(w, 2, false);
        field_put_string(w, 3, "/home/alice/x");
        field_put_u64(w, 11, 2001);
        field_put_u64(w, 12, 2001);
}
static void put_policy_on_the_host(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_APPLY_POLICY);
        field_put_bool(w, 2, false);
        field_put_bool(w, 18, true);
        field_put_string(w, 25, "alice");
        field_put_u64(w, 26, 2001);
        field_put_u64(w, 27, 2001);
}
static void put_policy_ok(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_APPLY_POLICY);
        field_put_bool(w, 2, true);
        field_put_bool(w, 18, true);
        field_put_string(w, 25, "alice");
        field_put_u64(w, 26, 2001);
        field_put_u64(w, 27, 2001);
}
static void put_bad_mode(FieldWriter *w) {
        field_put_u64(w, 1, VIEW_OP_SET_PROPAGATION);
        field_put_bool(w, 2, true);
        field_put_string(w, 3, "/mnt");
        field_put_u64(w, 5, _PROPAGATION_MODE_MAX);
}

static void test_request_refusals(void) {
        ViewOpRequest q = {};

        check(decode_fields(put_unmount_ok) == 0, "the decoder reads what the refusals below change");
        check(decode_fields(put_type_not_first) == -EBADMSG, "the operation comes first");
        check(decode_fields(put_unknown_type) == -EBADMSG, "an unknown operation is refused");
        check(decode_fields(put_relative_path) == -EBADMSG && decode_fields(put_dotdot_path) == -EBADMSG,
              "a path that is not absolute and normalized is refused");
        check(decode_fields(put_no_path) == -EBADMSG, "an operation without its path is refused");
        check(decode_fields(put_source_on_unmount) == -EBADMSG && decode_fields(put_policy_on_unmount) == -EBADMSG,
              "a field of another operation is refused");
        check(decode_fields(put_uid_without_gid) == -EBADMSG && decode_fields(put_groups_without_caller) == -EBADMSG,
              "a caller is a uid and a gid, or none at all");
        check(decode_fields(put_uid_minus_one) == -EBADMSG, "uid -1 is nobody's");
        check(decode_fields(put_path_twice) == -EBADMSG, "a single field given twice is refused");
        check(decode_fields(put_short_mount_id) == -EBADMSG, "a mount id of another length is refused");
        check(decode_fields(put_bind_without_source) == -EBADMSG, "BindMount without a source is refused");
        check(decode_fields(put_policy_without_user) == -EBADMSG, "the [View] policy without its user is refused");
        check(decode_fields(put_bad_mode) == -EBADMSG, "an unknown propagation is refused");
        check(decode_fields(put_policy_ok) == 0 && decode_fields(put_policy_on_the_host) == -EBADMSG,
              "the [View] policy without the view's fd (the host's tree) is refused");
        check(decode_fields(put_unmount_of_a_user_on_the_host) == -EBADMSG,
              "a user's operation without the view's fd (the host's tree) is refused");
        check(view_op_request_decode("\1\2", 2, &q) == -EBADMSG && view_op_request_decode(NULL, 0, &q) == -EBADMSG,
              "a message without fields is refused");

        _cleanup_free_ void *msg = NULL;
        size_t size = 0;
        check(view_op_request_encode(&(ViewOp) { .type = VIEW_OP_BIND, .ns_fd = 3, .path = "/x" }, &msg, &size) == -EINVAL &&
              !msg, "the daemon does not send what the child would refuse");
        Credentials alice = { .uid = 2001, .gid = 2001 };
        check(view_op_request_encode(&(ViewOp) { .type = VIEW_OP_HOST_SHARE, .path = "/mnt", .caller = &alice }, &msg,
                                     &size) == -EINVAL && !msg,
              "a caller on an operation that cannot carry one is refused, not dropped (full power)");
        check(view_op_request_encode(&(ViewOp) { .type = VIEW_OP_UNMOUNT, .ns_fd = -EBADF, .path = "/x", .caller = &alice },
                                     &msg, &size) == -EINVAL && !msg,
              "a user's operation is not sent without the view's fd");
}

static void test_results(void) {
        _cleanup_free_ ViewOpResult *in = calloc(1, sizeof(ViewOpResult)), *out = calloc(1, sizeof(ViewOpResult));
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;

        if (!in || !out) {
                check(false, "memory");
                return;
        }
        *in = (ViewOpResult) { .mounted = { UINT64_C(0x80000010), 60 }, .replaced = { MOUNT_ID_FINGERPRINT | 3, 61 },
                               .n_mounts = 123, .n_gone = VIEW_OP_MOUNTS_MAX, .n_policy_mounts = 2 };
        for (uint32_t i = 0; i < VIEW_OP_MOUNTS_MAX; i++)
                in->gone[i] = (MountId) { UINT64_C(0x80000100) + i, 100 + i };
        in->policy_mounts[0] = (MountId) { 1, 2 };
        in->policy_mounts[1] = (MountId) { 3, 4 };
        check(view_op_result_encode(in, &msg, &size) == 0 && size <= IPC_PAYLOAD_MAX,
              "the largest answer fits one message (%zu bytes)", size);
        check(view_op_result_decode(msg, size, out) == 0 && out->mounted.unique == in->mounted.unique &&
              out->mounted.old == 60 && out->replaced.unique == in->replaced.unique && out->replaced.old == 61 &&
              out->n_mounts == 123 && mount_id_lists_identical(out->gone, out->n_gone, in->gone, in->n_gone) &&
              mount_id_lists_identical(out->policy_mounts, out->n_policy_mounts, in->policy_mounts, 2), "an answer round-trips");
        msg = mfree(msg);

        in->n_gone = VIEW_OP_MOUNTS_MAX + 1;
        check(view_op_result_encode(in, &msg, &size) == -EINVAL, "more ids than VIEW_OP_MOUNTS_MAX are not sent");

        /* One id more than the answer holds, written by hand. */
        FieldWriter w;
        field_writer_init(&w, VIEW_OP_MESSAGE_RESULT);
        for (unsigned i = 0; i <= VIEW_OP_MOUNTS_MAX; i++)
                field_put(&w, 4, "0123456789abcdef", 16);
        check(field_writer_finish(&w, &msg, &size) == 0 && view_op_result_decode(msg, size, out) == -EBADMSG,
              "an answer with more gone ids than VIEW_OP_MOUNTS_MAX is refused");
        msg = mfree(msg);
        field_writer_init(&w, VIEW_OP_MESSAGE_RESULT);
        field_put_u64(&w, 3, UINT64_C(1) << 32);
        check(field_writer_finish(&w, &msg, &size) == 0 && view_op_result_decode(msg, size, out) == -EBADMSG,
              "a mount count past 32 bits is refused");
        msg = mfree(msg);
        field_writer_init(&w, VIEW_OP_MESSAGE_REQUEST);
        check(field_writer_finish(&w, &msg, &size) == 0 && view_op_result_decode(msg, size, out) == -EBADMSG,
              "a request is no answer");
}

/* A real child, in a throwaway mount namespace of the test's (it enters none: the host is
 * "ours"), so that nothing it could do reaches the machine. */
static void test_child(void) {
        _cleanup_free_ void *msg = NULL;
        Answer bad = {}, good = {};
        sd_event *e = NULL;
        ChildSet *s = NULL;
        size_t size = 0;

        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                tap_skip("a real child: needs root and a mount namespace of its own");
                return;
        }
        if (!child_test_setup(&e, &s))
                return;
        /* Run first: the sentence is printed with the result. */
        int r = run_child(e, s, view_op_child_run, "\1\1\0\0\0\0\0", 7, -EBADF, &bad);
        check(r >= 0 && bad.done && bad.error.code == NSM_ERROR_SYSTEM && bad.error.errno_value == EBADMSG &&
              streq_ptr(bad.error.message, "Malformed request."), "a child answers a malformed request as one (%s)",
              bad.error.message ?: "no message");
        r = view_op_request_encode(&(ViewOp) { .type = VIEW_OP_SET_PROPAGATION, .ns_fd = -EBADF,
                                               .path = "/nonexistent-nsmanager-test/x", .mode = PROPAGATION_PRIVATE },
                                   &msg, &size);
        if (r >= 0)
                r = run_child(e, s, view_op_child_run, msg, size, -EBADF, &good);
        check(r >= 0 && good.done && good.error.code == NSM_ERROR_INVALID_PATH &&
              strstr(good.error.message ?: "", "/nonexistent-nsmanager-test/x"),
              "a well-formed request is served: the path it names is looked up (%s)", good.error.message ?: "no message");
        nsm_error_done(&bad.error);
        nsm_error_done(&good.error);
        child_set_free(s);
        sd_event_unref(e);
}

int main(void) {
        test_requests();
        test_request_refusals();
        test_results();
        test_child();
        return tap_finish();
}
