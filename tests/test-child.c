/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/child.c and src/shared/child-main.c: a real child serving an interface peer to
 * peer. A call of any size reaches it whole with its fd; its failure arrives under the error
 * table's name with its sentence, byte for byte; its warnings come ahead of the answer; a
 * child that dies without answering is said to; the status writer writes its line; the mount
 * points' remover refuses a path it cannot trust; the groups' lookup answers NSS's groups for a
 * name of any bytes and refuses an empty one. TAP. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach-status.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "child.h"
#include "group-lookup-child.h"
#include "macros.h"
#include "mount-points-remove.h"
#include "strv.h"
#include "tap.h"

#define TEST_INTERFACE "org.example.NSManager.Test"

/* Echo(ay data, h fd) → (t size): the data must be byte i = (i * 7) & 0xff. */
static int method_echo(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const unsigned char *p;
        size_t size;
        int fd, r;

        r = sd_bus_message_read_array(m, 'y', (const void **) &p, &size);
        if (r >= 0)
                r = sd_bus_message_read(m, "h", &fd);
        if (r < 0 || fcntl(fd, F_GETFD) < 0)
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
        for (size_t i = 0; i < size; i++)
                if (p[i] != (unsigned char) (i * 7))
                        return bus_error_setf(error, NSM_ERROR_FAILED, "byte %zu differs", i);
        (void) child_warn(m, "a warning, ahead of the answer");
        return sd_bus_reply_method_return(m, "t", (uint64_t) size);
}

/* Fail(s sentence): InvalidPath with that sentence. */
static int method_fail(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        const char *text;

        if (sd_bus_message_read(m, "s", &text) < 0)
                return -EBADMSG;
        (void) nsm_error_setf(&e, NSM_ERROR_INVALID_PATH, "Path '%s\xff' does not exist.", text);
        return bus_error_set_nsm(error, &e);
}

static int method_die(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _exit(3);
}

static const sd_bus_vtable test_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Echo", "ayh", "t", method_echo, 0),
        SD_BUS_METHOD("Fail", "s", "", method_fail, 0),
        SD_BUS_METHOD("Die", "", "", method_die, 0),
        SD_BUS_VTABLE_END,
};

static const ChildInterface test_interface = { TEST_INTERFACE, test_vtable };

typedef struct Call {
        size_t size;             /* Echo's */
        const char *line;        /* WriteStatus's */
        bool no_args;            /* Die's */
        char **paths;            /* Remove's */
        bool groups;             /* LookUp's (groups): the uid, the primary gid, names wanted */
        uint32_t uid;
        uint32_t gid;
        bool with_names;
        uint32_t first_gid;      /* its answer: the first gid, how many, the names, the primary's */
        size_t n_gids;
        char **names;
        char *primary;
        char *name;              /* the name it asked NSS by */
        int fd;
        bool done;
        uint64_t echoed;
        NsmError error;
} Call;

static int append(sd_bus_message *m, void *userdata) {
        Call *c = userdata;
        _cleanup_free_ unsigned char *data = NULL;

        if (c->no_args)
                return 0;
        if (c->line)
                return sd_bus_message_append(m, "sh", c->line, c->fd);
        if (c->groups)
                return sd_bus_message_append(m, "uub", c->uid, c->gid, (int) c->with_names);
        if (c->paths) {
                int r = sd_bus_message_append(m, "utb", 1000U, UINT64_C(4026531841), 0);
                return r < 0 ? r : bus_message_append_bytes_strv(m, c->paths);
        }
        if (c->size == 0)
                return sd_bus_message_append(m, "s", "/nowhere");
        data = malloc(c->size);
        if (!data)
                return -ENOMEM;
        for (size_t i = 0; i < c->size; i++)
                data[i] = (unsigned char) (i * 7);
        int r = sd_bus_message_append_array(m, 'y', data, c->size);
        return r < 0 ? r : sd_bus_message_append(m, "h", c->fd);
}

static void on_reply(const NsmError *error, sd_bus_message *reply, void *userdata) {
        Call *c = userdata;

        c->done = true;
        if (error)
                (void) nsm_error_copy(&c->error, error);
        else if (c->groups) {
                const void *gids;
                size_t size = 0;
                if (sd_bus_message_read_array(reply, 'u', &gids, &size) >= 0 && size >= sizeof(uint32_t))
                        c->first_gid = *(const uint32_t *) gids;
                c->n_gids = size / sizeof(uint32_t);
                if (bus_message_read_bytes_strv(reply, &c->names) < 0 || bus_message_read_bytes(reply, &c->primary) < 0 ||
                    bus_message_read_bytes(reply, &c->name) < 0)
                        c->n_gids = 0;
        } else if (!c->line && !c->paths && c->size > 0 && sd_bus_message_read(reply, "t", &c->echoed) < 0)
                c->echoed = UINT64_MAX;
}

/* Ten seconds. */
static int run_child(sd_event *e, ChildSet *s, const ChildInterface *interface, const char *method, Call *c) {
        struct timespec ts;
        int r;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        ChildSpec spec = { .description = "A test child", .interface = interface, .method = method, .append = append,
                           .reply = on_reply, .userdata = c,
                           .deadline = (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U + 10000000U };
        r = child_start(s, &spec);
        while (r >= 0 && !c->done)
                r = sd_event_run(e, UINT64_MAX);
        return r;
}

int main(void) {
        sd_event *e = NULL;
        ChildSet *s = NULL;
        sigset_t ss;
        char buf[64] = {};
        int p[2];

        /* sd-event watches children only with SIGCHLD blocked, as in the daemon. */
        sigemptyset(&ss);
        sigaddset(&ss, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &ss, NULL);
        if (sd_event_new(&e) < 0 || !(s = child_set_new(e))) {
                check(false, "an event loop and a child set");
                return tap_finish();
        }

        /* Past the socket's buffer and far past it: a caller with many groups, a view with
         * many recorded binds, a policy of many entries. */
        const size_t sizes[] = { 100, 40 * 1024, 4 * 1024 * 1024 };
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                Call c = { .size = sizes[i], .fd = STDIN_FILENO };
                int r = run_child(e, s, &test_interface, "Echo", &c);
                check(r >= 0 && c.done && !nsm_error_is_set(&c.error) && c.echoed == sizes[i],
                      "a call of %zu bytes and an fd reaches the child whole (%s)", sizes[i],
                      c.error.message ?: (r < 0 ? strerror(-r) : "ok"));
                nsm_error_done(&c.error);
        }

        Call failed = {};
        (void) run_child(e, s, &test_interface, "Fail", &failed);
        check(failed.done && failed.error.code == NSM_ERROR_INVALID_PATH &&
              streq_ptr(failed.error.message, "Path '/nowhere\xff' does not exist."),
              "the child's failure arrives under its name with its sentence, byte for byte (%s)",
              failed.error.message ?: "none");
        nsm_error_done(&failed.error);

        Call died = { .no_args = true };
        (void) run_child(e, s, &test_interface, "Die", &died);
        check(died.done && died.error.code == NSM_ERROR_SYSTEM && died.error.errno_value == EPROTO &&
              died.error.message && strstr(died.error.message, "exited with status 3 without answering"),
              "a child that dies without answering is said to (%s)", died.error.message ?: "none");
        nsm_error_done(&died.error);

        /* The status writer into a pipe; the daemon's copy of the write end is closed as soon as
         * the child is started, as attach-process.c does. */
        if (pipe2(p, O_CLOEXEC) < 0)
                check(false, "a pipe");
        else {
                Call w = { .line = "EXITED 3\n", .fd = p[1] };
                int r = run_child(e, s, &attach_status_interface, "WriteStatus", &w);
                safe_close(p[1]);
                ssize_t n = r >= 0 ? read(p[0], buf, sizeof buf - 1) : -1;
                check(w.done && !nsm_error_is_set(&w.error) && n == 9 && streq(buf, "EXITED 3\n"),
                      "the status writer writes the line of its call into the fd that came with it");
                safe_close(p[0]);
                nsm_error_done(&w.error);
                Call empty = { .line = "", .fd = STDIN_FILENO };
                (void) run_child(e, s, &attach_status_interface, "WriteStatus", &empty);
                check(empty.done && empty.error.code == NSM_ERROR_SYSTEM && empty.error.errno_value == EBADMSG,
                      "an empty status line is refused as malformed");
                nsm_error_done(&empty.error);
        }

        /* Every path is checked before anything is removed. */
        char *paths[] = { (char *) "/nowhere/x", (char *) "nowhere/y", NULL };
        Call removal = { .paths = paths };
        (void) run_child(e, s, &mount_points_remove_interface, "Remove", &removal);
        check(removal.done && removal.error.code == NSM_ERROR_SYSTEM && removal.error.errno_value == EBADMSG,
              "the mount points' remover refuses a relative path as malformed (%s)",
              removal.error.message ?: "none");
        nsm_error_done(&removal.error);

        /* root by uid: gid 0 first, its name, the primary group's, and the name it asked by. */
        Call root = { .groups = true, .uid = 0, .gid = 0, .with_names = true };
        (void) run_child(e, s, &group_lookup_interface, "LookUp", &root);
        check(root.done && !nsm_error_is_set(&root.error) && root.n_gids >= 1 && root.first_gid == 0 &&
              root.names && streq_ptr(root.names[0], "root") && streq_ptr(root.primary, "root") &&
              streq_ptr(root.name, "root"),
              "the groups' lookup answers root's groups, primary first, with their names (%s)",
              root.error.message ?: "ok");
        nsm_error_done(&root.error);
        strv_free(root.names);
        free(root.primary);
        free(root.name);
        Call unasked = { .groups = true, .uid = 0, .gid = 0 };
        (void) run_child(e, s, &group_lookup_interface, "LookUp", &unasked);
        check(unasked.done && !nsm_error_is_set(&unasked.error) && unasked.n_gids >= 1 &&
              strv_length(unasked.names) == 0 && streq_ptr(unasked.primary, ""),
              "the groups' lookup answers no names unasked (%s)", unasked.error.message ?: "ok");
        nsm_error_done(&unasked.error);
        strv_free(unasked.names);
        free(unasked.primary);
        free(unasked.name);
        /* A uid NSS has no user for: no groups of a name kept elsewhere. */
        Call nobody = { .groups = true, .uid = 4000004, .gid = 4000004 };
        (void) run_child(e, s, &group_lookup_interface, "LookUp", &nobody);
        check(nobody.done && nobody.error.code == NSM_ERROR_NO_SUCH_USER,
              "the groups' lookup of a uid without a user is NoSuchUser (%s)", nobody.error.message ?: "ok");
        nsm_error_done(&nobody.error);
        Call malformed = { .groups = true, .uid = (uint32_t) -1, .gid = 0 };
        (void) run_child(e, s, &group_lookup_interface, "LookUp", &malformed);
        check(malformed.done && malformed.error.code == NSM_ERROR_SYSTEM && malformed.error.errno_value == EBADMSG,
              "the groups' lookup refuses a uid of -1 as malformed");
        nsm_error_done(&malformed.error);

        child_set_free(s);
        sd_event_unref(e);
        return tap_finish();
}
