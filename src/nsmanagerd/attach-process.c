/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The commands started by Attach(), as the Manager keeps them: one AttachProcess each, in
 * Manager.attach_processes, from the moment the call is authorized until the command has
 * ended and its status was written to the caller's status fd. How a command is started lives
 * above, in attach-unit.c (systemd) and attach-fork.c (no systemd), and the bus handler above
 * them in attach-dbus.c: this file calls none of them, and answers no bus call.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach-process.h"
#include "attach-status.h"
#include "fd-release.h"
#include "child.h"
#include "log.h"

int attach_process_new(Manager *m, uid_t uid, const char *user, const char *command, int status_fd,
                       AttachProcess **ret) {
        _cleanup_(attach_process_freep) AttachProcess *p = NULL;

        p = calloc(1, sizeof(AttachProcess));
        if (!p) {
                safe_close(status_fd);
                return -ENOMEM;
        }
        *p = (AttachProcess) {
                .manager = m,
                .uid = uid,
                .status_fd = status_fd,
                .user = strdup(user),
                .command = strdup(command),
                .reply_fds = { -EBADF, -EBADF, -EBADF, -EBADF },
        };
        p->next = m->attach_processes;
        m->attach_processes = p;
        if (!p->user || !p->command)
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

AttachProcess *attach_process_free(AttachProcess *p) {
        if (!p)
                return NULL;

        for (AttachProcess **i = &p->manager->attach_processes; *i; i = &(*i)->next)
                if (*i == p) {
                        *i = p->next;
                        break;
                }

        if (p->forget)
                p->forget(p);
        sd_event_source_disable_unref(p->child_source);
        sd_event_source_disable_unref(p->hangup_source);
        sd_bus_slot_unref(p->start_slot);
        sd_bus_slot_unref(p->call_slot);
        sd_bus_message_unref(p->start_message);
        sd_bus_message_unref(p->call);
        attach_process_release_fds(p);
        if (p->env_file)
                (void) unlink(p->env_file);
        safe_close(p->status_fd);
        free(p->env_file);
        free(p->cgroup);
        free(p->job_result);
        free(p->job);
        free(p->unit);
        free(p->command);
        free(p->user);
        free(p);
        return NULL;
}

int attach_process_keep_fd(AttachProcess *p, int fd) {
        if (p->n_made_fds >= ATTACH_MADE_FDS_MAX) {
                safe_close(fd);
                return -ENOBUFS;
        }
        p->made_fds[p->n_made_fds++] = fd;
        return 0;
}

static void on_released(const NsmError *error, sd_bus_message *reply, void *userdata) {
        if (error)
                log_debug("Failed to let go of the fds of an attached command, ignoring: %s", nsm_error_message(error));
}

void attach_process_release_fds(AttachProcess *p) {
        _cleanup_free_ char *description = NULL;
        int r;

        if (p->n_made_fds == 0)
                return;
        if (asprintf(&description, "Letting go of the fds of attached command '%s' of uid %u", p->command,
                     (unsigned) p->uid) < 0)
                description = NULL;
        /* The child holds copies from the fork on, so none of our closes below is the last. */
        ChildSpec spec = {
                .description = description,
                .interface = &fd_release_interface,
                .method = "Release",
                .reply = on_released,
                .keep_fds = p->made_fds,
                .n_keep_fds = p->n_made_fds,
                .deadline = manager_deadline(p->manager),
                .owner = p->uid,
        };
        r = child_start(p->manager->children, &spec);
        if (r < 0)
                /* Then we close them ourselves, which may wait: rare (no memory, no process). */
                log_warning_errno(r, "Failed to start a child to let go of the fds of PID %d, closing them here: %m",
                                  (int) p->pid);
        for (size_t i = 0; i < p->n_made_fds; i++)
                safe_close(p->made_fds[i]);
        p->n_made_fds = 0;
        for (size_t i = 0; i < ELEMENTSOF(p->reply_fds); i++)
                p->reply_fds[i] = -EBADF;   /* some of made_fds[], closed with them */
}

/* The status line is written by a child of its own (child.h), never by the daemon. Writing to
 * a pipe takes the pipe's lock whatever the flags (RWF_NOWAIT and O_NONBLOCK only spare the
 * wait for room), and writing to a TCP socket the socket's; the caller's other writers hold
 * them while they copy from their own memory. A user who writes into her status pipe from a
 * mapping of a file on her FUSE mount whose server never answers holds the lock as long as she
 * likes, and a daemon writing to it would wait, uninterruptibly, with every login behind it.
 * The child may wait there; past the deadline it is killed, or stays stuck, charged to the
 * command's owner (MaxStuckOperations=). */
typedef struct StatusWrite {
        int fd;
        char line[64];
} StatusWrite;

static void on_status_written(const NsmError *error, sd_bus_message *reply, void *userdata) {
        if (error)
                log_debug("Failed to report the status of an attached command, ignoring: %s", nsm_error_message(error));
}

static int append_status(sd_bus_message *call, void *userdata) {
        const StatusWrite *w = userdata;
        return sd_bus_message_append(call, "sh", w->line, w->fd);
}

static int start_status_write(AttachProcess *p, const StatusWrite *w) {
        Manager *m = p->manager;
        _cleanup_free_ char *description = NULL;

        /* Each writer stuck on her pipe is a process of ours that nothing ends until what
         * holds its lock lets go (her FUSE server answers); past her MaxStuckOperations=, no
         * more of them. */
        if (p->uid != 0 && m->config.max_stuck_operations > 0 &&
            child_set_stuck(m->children, p->uid) >= m->config.max_stuck_operations)
                return -EDQUOT;
        if (asprintf(&description, "Reporting the status of attached command '%s' of uid %u", p->command,
                     (unsigned) p->uid) < 0)
                description = NULL;
        /* 'w' is read while the call is made, within child_start(). */
        ChildSpec spec = {
                .description = description,
                .interface = &attach_status_interface,
                .method = "WriteStatus",
                .append = append_status,
                .reply = on_status_written,
                .userdata = (void *) w,
                .deadline = manager_deadline(m),
                .owner = p->uid,
        };
        return child_start(m->children, &spec);
}

void attach_process_report(AttachProcess *p, int code, int status) {
        StatusWrite w = { .fd = p->status_fd };
        int r;

        (void) snprintf(w.line, sizeof w.line, "%s %d\n", code == CLD_EXITED ? "EXITED" : "KILLED", status);
        log_debug("Attached command '%s' (PID %d, uid %u) in the namespace of '%s' ended: %.*s", p->command,
                  (int) p->pid, (unsigned) p->uid, p->user, (int) strlen(w.line) - 1, w.line);

        r = start_status_write(p, &w);
        if (r == -EDQUOT)
                log_warning("Not reporting the status of PID %d of uid %u: as many of its status writes as "
                            "MaxStuckOperations= are stuck.", (int) p->pid, (unsigned) p->uid);
        else if (r < 0)
                log_warning_errno(r, "Failed to start reporting the status of PID %d, dropping it: %m", (int) p->pid);
        p->hangup_source = sd_event_source_disable_unref(p->hangup_source);
        p->status_fd = safe_close(p->status_fd);
}

/* EPOLLERR on a pipe's write end (EPOLLHUP on a socket): the reader has gone. */
static int on_client_gone(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        AttachProcess *p = userdata;

        log_debug("The client of attached command '%s' (PID %d) went away.", p->command, (int) p->pid);
        p->hangup_source = sd_event_source_disable_unref(p->hangup_source);
        p->on_client_gone(p);
        return 0;
}

int attach_process_watch_client(AttachProcess *p, void (*on_gone)(AttachProcess *p)) {
        p->on_client_gone = on_gone;
        return sd_event_add_io(p->manager->event, &p->hangup_source, p->status_fd, EPOLLERR | EPOLLHUP,
                               on_client_gone, p);
}

void attach_done(Manager *m) {
        while (m->attach_processes)
                attach_process_free(m->attach_processes);
}
