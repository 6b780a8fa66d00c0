/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's side of a mount reader (mount-reader-client.h). */
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/sched.h>

#include "child.h"
#include "log.h"
#include "macros.h"
#include "mount-reader-client.h"

struct MountReader {
        sd_event *event;
        const MountReaderOps *ops;
        void *userdata;
        sd_bus *bus;
        pid_t pid;
        int pidfd;
        sd_event_source *exit_source;
        sd_bus_slot *match;
        unsigned load;
        bool busy;               /* between its Reading and its Changed */
        bool gone;
};

static void reader_gone(MountReader *r) {
        if (r->gone)
                return;
        r->gone = true;
        r->busy = false;
        r->ops->gone(r, r->userdata);
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        MountReader *r = userdata;

        if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.Local", "Disconnected")) {
                log_warning("A mount reader's connection ended; its views are watched by another.");
                reader_gone(r);
                return 1;
        }
        if (!sd_bus_message_is_signal(m, MOUNT_READER_INTERFACE, NULL))
                return 0;
        if (streq_ptr(sd_bus_message_get_member(m), "Reading")) {
                r->busy = true;
                r->ops->reading(r, r->userdata);
        } else if (streq_ptr(sd_bus_message_get_member(m), "Changed")) {
                r->busy = false;
                r->ops->changed(r, m, r->userdata);
        }
        return 1;
}

static int on_reader_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        MountReader *r = userdata;

        log_warning("A mount reader (pid %d) exited (code %d, status %d); its views are watched by another.",
                    (int) si->si_pid, si->si_code, si->si_status);
        r->exit_source = sd_event_source_disable_unref(r->exit_source);
        r->pidfd = safe_close(r->pidfd);
        reader_gone(r);
        return 0;
}

int mount_reader_new(sd_event *event, const MountReaderOps *ops, void *userdata, MountReader **ret) {
        MountReader *r;
        int pair[2], k;

        r = calloc(1, sizeof(MountReader));
        if (!r)
                return -ENOMEM;
        *r = (MountReader) { .event = sd_event_ref(event), .ops = ops, .userdata = userdata, .pidfd = -EBADF };
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                k = -errno;
                mount_reader_free(r);
                return k;
        }
        struct clone_args args = { .flags = CLONE_PIDFD, .pidfd = (uint64_t) (uintptr_t) &r->pidfd, .exit_signal = SIGCHLD };
        r->pid = (pid_t) syscall(SYS_clone3, &args, sizeof args);
        if (r->pid < 0 && (errno == ENOSYS || errno == EPERM)) {
                r->pid = fork();
                if (r->pid > 0)
                        r->pidfd = (int) syscall(SYS_pidfd_open, r->pid, 0);
        }
        if (r->pid == 0)
                mount_reader_main(pair[1]);
        safe_close(pair[1]);
        if (r->pid < 0 || r->pidfd < 0) {
                k = -errno;
                safe_close(pair[0]);
                mount_reader_free(r);
                return k;
        }
        k = sd_event_add_child_pidfd(event, &r->exit_source, r->pidfd, WEXITED, on_reader_exit, r);
        if (k >= 0)
                k = sd_bus_new(&r->bus);
        if (k >= 0)
                k = sd_bus_set_fd(r->bus, pair[0], pair[0]);
        else
                safe_close(pair[0]);
        if (k >= 0)
                k = sd_bus_set_description(r->bus, "mount-reader");
        if (k >= 0)
                k = sd_bus_negotiate_fds(r->bus, true);
        if (k >= 0)
                k = sd_bus_add_filter(r->bus, &r->match, on_signal, r);
        if (k >= 0)
                k = sd_bus_start(r->bus);
        if (k >= 0)
                k = sd_bus_attach_event(r->bus, event, 0);
        if (k < 0) {
                mount_reader_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

MountReader *mount_reader_free(MountReader *r) {
        if (!r)
                return NULL;
        r->match = sd_bus_slot_unref(r->match);
        /* Closing the connection ends the reader (it exits on disconnect). */
        if (r->bus) {
                sd_bus_detach_event(r->bus);
                r->bus = sd_bus_close_unref(r->bus);
        }
        r->exit_source = sd_event_source_disable_unref(r->exit_source);
        if (r->pidfd >= 0)
                pidfd_kill_and_reap(r->pidfd, USEC_PER_SEC);
        safe_close(r->pidfd);
        sd_event_unref(r->event);
        free(r);
        return NULL;
}

int mount_reader_watch(MountReader *r, uint32_t key, int ns_fd, bool initial, bool detail,
                       sd_bus_message_handler_t callback, void *userdata, sd_bus_slot **ret_slot) {
        return sd_bus_call_method_async(r->bus, ret_slot, NULL, MOUNT_READER_PATH, MOUNT_READER_INTERFACE, "Watch",
                                        callback, userdata, MOUNT_READER_WATCH_SIGNATURE, key, ns_fd, initial, detail);
}

int mount_reader_set_detail(MountReader *r, uint32_t key, bool detail, sd_bus_message_handler_t callback,
                            void *userdata, sd_bus_slot **ret_slot) {
        return sd_bus_call_method_async(r->bus, ret_slot, NULL, MOUNT_READER_PATH, MOUNT_READER_INTERFACE,
                                        "SetDetail", callback, userdata, "ub", key, detail);
}

void mount_reader_unwatch(MountReader *r, uint32_t key) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int k;

        if (r->gone)
                return;
        k = sd_bus_message_new_method_call(r->bus, &m, NULL, MOUNT_READER_PATH, MOUNT_READER_INTERFACE, "Unwatch");
        if (k >= 0)
                k = sd_bus_message_append(m, "u", key);
        if (k >= 0)
                k = sd_bus_message_set_expect_reply(m, false);
        if (k >= 0)
                k = sd_bus_send(r->bus, m, NULL);
        if (k < 0)
                log_warning_errno(k, "Failed to tell a mount reader to stop watching a view, ignoring: %m");
}

unsigned *mount_reader_load(MountReader *r) {
        return &r->load;
}

bool mount_reader_busy(const MountReader *r) {
        return r->busy;
}

bool mount_reader_gone(const MountReader *r) {
        return r->gone;
}
