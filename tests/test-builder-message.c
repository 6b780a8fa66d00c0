/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/builder/builder-message.c: the daemon's requests to the view builder, encoded and decoded
 * (every kind round-trips; what the decoder refuses), and a builder process that gets a
 * malformed request answering it as one and serving the next. TAP output. */
#include <sys/socket.h>
#include <sys/wait.h>

#include "builder-message.h"
#include "ipc-fields.h"
#include "ipc.h"
#include "strv.h"
#include "tap.h"

static bool round_trip(const BuilderCall *in, BuilderCall *out) {
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;

        return builder_call_encode(in, &msg, &size) == 0 && builder_call_decode(msg, size, out) == 0;
}

static void test_round_trips(void) {
        char *const shared[] = { (char *) "/mnt", (char *) "/media/usb", NULL };
        _cleanup_(builder_call_done) BuilderCall a = {}, b = {}, c = {}, d = {}, e = {}, f = {}, g = {};

        check(round_trip(&(BuilderCall) { .kind = BUILDER_OPEN_REGISTRY, .registry_pin = (char *) "/var/lib/nsmanager/registry",
                                          .pins_dir = (char *) "/var/lib/nsmanager/pins" }, &a) &&
              a.kind == BUILDER_OPEN_REGISTRY && streq(a.registry_pin, "/var/lib/nsmanager/registry") &&
              streq(a.pins_dir, "/var/lib/nsmanager/pins"), "OPEN_REGISTRY round-trips");
        check(round_trip(&(BuilderCall) { .kind = BUILDER_BUILD, .name = (char *) "alice", .subtree_root = (char *) "/subtree",
                                          .propagation = VIEW_PROPAGATION_SHARED, .shared_subtrees = (char **) shared }, &b) &&
              b.kind == BUILDER_BUILD && streq(b.name, "alice") && streq(b.subtree_root, "/subtree") &&
              b.propagation == VIEW_PROPAGATION_SHARED && strv_length(b.shared_subtrees) == 2 &&
              streq(b.shared_subtrees[0], "/mnt") && streq(b.shared_subtrees[1], "/media/usb"),
              "BUILD round-trips, its shared subtrees in order");
        check(round_trip(&(BuilderCall) { .kind = BUILDER_BUILD, .name = (char *) "bob", .subtree_root = (char *) "/s",
                                          .propagation = VIEW_PROPAGATION_SLAVE }, &c) &&
              c.propagation == VIEW_PROPAGATION_SLAVE && !c.shared_subtrees, "BUILD without shared subtrees");
        check(round_trip(&(BuilderCall) { .kind = BUILDER_UNPIN, .name = (char *) "carol" }, &d) &&
              d.kind == BUILDER_UNPIN && streq(d.name, "carol"), "UNPIN round-trips");
        check(round_trip(&(BuilderCall) { .kind = BUILDER_LIST }, &e) && e.kind == BUILDER_LIST &&
              builder_call_n_fds(&e) == 0, "LIST round-trips, with no fd");
        check(round_trip(&(BuilderCall) { .kind = BUILDER_READ_MOUNTS, .with_fd = true }, &f) && f.with_fd &&
              !f.with_ids && builder_call_n_fds(&f) == 1, "READ_MOUNTS of a view: one fd");
        _cleanup_(builder_call_done) BuilderCall h = {};
        check(round_trip(&(BuilderCall) { .kind = BUILDER_READ_MOUNTS, .with_ids = true }, &h) && !h.with_fd &&
              h.with_ids && builder_call_n_fds(&h) == 0, "READ_MOUNTS of the host with ids (GetMountsEx)");
        check(round_trip(&(BuilderCall) { .kind = BUILDER_OPEN_MOUNTINFO }, &g) && g.with_fd && builder_call_n_fds(&g) == 1,
              "OPEN_MOUNTINFO always takes the namespace's fd");
}

static int decode_fields(uint8_t kind, void (*put)(FieldWriter *w)) {
        _cleanup_(builder_call_done) BuilderCall c = {};
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;
        FieldWriter w;

        field_writer_init(&w, kind);
        put(&w);
        if (field_writer_finish(&w, &msg, &size) < 0)
                return -ENOMEM;
        return builder_call_decode(msg, size, &c);
}

/* Tags as builder-message.c numbers them (docs/processes.md). */
static void put_none(FieldWriter *w) {
}
static void put_unpin_traversal(FieldWriter *w) {
        field_put_string(w, 3, "../../etc");
}
static void put_unpin_twice(FieldWriter *w) {
        field_put_string(w, 3, "alice");
        field_put_string(w, 3, "bob");
}
static void put_unpin_with_root(FieldWriter *w) {
        field_put_string(w, 3, "alice");
        field_put_string(w, 4, "/subtree");
}
static void put_unpin_file_name(FieldWriter *w) {
        field_put_string(w, 3, "not a user");
}
static void put_build_file_name(FieldWriter *w) {
        field_put_string(w, 3, "not\na user");
        field_put_string(w, 4, "/subtree");
        field_put_u64(w, 5, 0);
}
static void put_build_qualified(FieldWriter *w) {
        field_put_string(w, 3, "alice@corp.example");
        field_put_string(w, 4, "/subtree");
        field_put_u64(w, 5, 0);
}
static void put_unknown_tag(FieldWriter *w) {
        field_put_string(w, 3, "alice");
        field_put_u64(w, 63, 1);
}
static void put_build_relative(FieldWriter *w) {
        field_put_string(w, 3, "alice");
        field_put_string(w, 4, "subtree");
        field_put_u64(w, 5, 0);
}
static void put_build_bad_propagation(FieldWriter *w) {
        field_put_string(w, 3, "alice");
        field_put_string(w, 4, "/subtree");
        field_put_u64(w, 5, _VIEW_PROPAGATION_MAX);
}
static void put_build_dotdot_shared(FieldWriter *w) {
        field_put_string(w, 3, "alice");
        field_put_string(w, 4, "/subtree");
        field_put_u64(w, 5, 0);
        field_put_string(w, 6, "/mnt/../etc");
}
static void put_build_ok(FieldWriter *w) {
        field_put_string(w, 3, "alice");
        field_put_string(w, 4, "/subtree");
        field_put_u64(w, 5, 0);
        field_put_string(w, 6, "/mnt");
        field_put_string(w, 6, "/media");
}
static void put_read_mounts_bad_flag(FieldWriter *w) {
        field_put(w, 7, "\2", 1);
}

static void test_refusals(void) {
        BuilderCall c = {};

        check(decode_fields(BUILDER_BUILD, put_build_ok) == 0, "the decoder reads what the refusals below change");
        check(decode_fields(0, put_none) == -EBADMSG && decode_fields(_BUILDER_CALL_KIND_MAX, put_none) == -EBADMSG,
              "an unknown kind is refused");
        check(decode_fields(BUILDER_UNPIN, put_none) == -EBADMSG, "UNPIN without a name is refused");
        check(decode_fields(BUILDER_UNPIN, put_unpin_traversal) == -EBADMSG,
              "a name that is more than one path component is refused");
        check(decode_fields(BUILDER_UNPIN, put_unpin_file_name) == 0,
              "UNPIN takes any file name LIST can give (a pin someone else named)");
        check(decode_fields(BUILDER_BUILD, put_build_file_name) == -EBADMSG,
              "BUILD takes a name that can name a view only (no control characters)");
        check(decode_fields(BUILDER_BUILD, put_build_qualified) == 0,
              "BUILD takes the fully-qualified names of sssd and winbind");
        check(decode_fields(BUILDER_UNPIN, put_unpin_twice) == -EBADMSG, "a single field given twice is refused");
        check(decode_fields(BUILDER_UNPIN, put_unpin_with_root) == -EBADMSG, "a field of another kind is refused");
        check(decode_fields(BUILDER_UNPIN, put_unknown_tag) == -EBADMSG, "an unknown tag is refused");
        check(decode_fields(BUILDER_BUILD, put_build_relative) == -EBADMSG, "a relative SubtreeRoot= is refused");
        check(decode_fields(BUILDER_BUILD, put_build_bad_propagation) == -EBADMSG, "an unknown propagation is refused");
        check(decode_fields(BUILDER_BUILD, put_build_dotdot_shared) == -EBADMSG,
              "a shared subtree that is not normalized is refused");
        check(decode_fields(BUILDER_READ_MOUNTS, put_read_mounts_bad_flag) == -EBADMSG &&
              decode_fields(BUILDER_READ_MOUNTS, put_none) == -EBADMSG, "READ_MOUNTS says whether an fd comes");
        check(builder_call_decode("\1", 1, &c) == -EBADMSG && !c.name, "a message cut short is refused");

        _cleanup_free_ void *msg = NULL;
        size_t size = 0;
        check(builder_call_encode(&(BuilderCall) { .kind = BUILDER_UNPIN, .name = (char *) "a/b" }, &msg, &size) == -EINVAL &&
              !msg, "the daemon does not send what the builder would refuse");
}

/* A builder process on a socket pair: a request that is none gets "Malformed request." and the
 * builder stays; so does a well-formed one it cannot serve (no registry open). */
static void test_builder_process(void) {
        _cleanup_free_ IpcMessage *m = malloc(sizeof(IpcMessage));
        _cleanup_(nsm_error_done) NsmError e1 = {}, e2 = {};
        _cleanup_free_ void *list = NULL;
        size_t size = 0;
        int pair[2], status = 0;
        pid_t pid;

        if (!m || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
                check(false, "a socket pair");
                return;
        }
        pid = fork();
        if (pid == 0)
                builder_main(pair[1]);
        safe_close(pair[1]);
        check(ipc_send_request(pair[0], "\1\2\3", 3, NULL, 0) == 0 && ipc_recv(pair[0], m, 0) == 1 &&
              ipc_message_error(m, &e1) < 0 && e1.code == NSM_ERROR_SYSTEM && e1.errno_value == EBADMSG &&
              streq_ptr(e1.message, "Malformed request."), "a malformed request is answered as one");
        check(builder_call_encode(&(BuilderCall) { .kind = BUILDER_LIST }, &list, &size) == 0 &&
              ipc_send_request(pair[0], list, size, NULL, 0) == 0 && ipc_recv(pair[0], m, 0) == 1 &&
              ipc_message_error(m, &e2) < 0 && e2.errno_value != EBADMSG,
              "the builder serves the next request (%s)", e2.message ?: "no answer");
        check(ipc_send_request(pair[0], list, size, &pair[0], 1) == 0 && ipc_recv(pair[0], m, 0) == 1 &&
              m->error == NSM_ERROR_SYSTEM && m->result == -EBADMSG, "a request with an fd it does not take is refused");
        safe_close(pair[0]);
        check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the builder exits when the daemon closes its socket");
}

int main(void) {
        test_round_trips();
        test_refusals();
        test_builder_process();
        return tap_finish();
}
