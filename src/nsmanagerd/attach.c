/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The commands started by Attach(), as the Manager keeps them: one AttachProcess each, in
 * Manager.attach_processes, from the moment the call is authorized until the command has
 * ended and its status was written to the caller's status fd. How a command is started lives
 * elsewhere: attach-unit.c (systemd), attach-fork.c (no systemd); the bus handler in
 * attach-dbus.c.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach-process.h"
#include "attach.h"
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

        sd_event_source_disable_unref(p->child_source);
        sd_event_source_disable_unref(p->hangup_source);
        sd_bus_slot_unref(p->start_slot);
        sd_bus_slot_unref(p->job_slot);
        sd_bus_slot_unref(p->properties_slot);
        sd_bus_slot_unref(p->call_slot);
        sd_bus_message_unref(p->call);
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

/* SIGPIPE is blocked around the write and a SIGPIPE we caused is dropped: the daemon must not
 * die because a client went away. The write never waits (RWF_NOWAIT, for pipes and sockets
 * alike) however full the pipe: O_NONBLOCK would not do, as the fd shares its open file
 * description with the caller, who may clear the flag again. */
static int write_status(int fd, const char *line) {
        struct timespec zero = {};
        sigset_t pipe_set, old, pending;
        bool was_pending;
        ssize_t k;
        int r = 0;

        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        if (sigprocmask(SIG_BLOCK, &pipe_set, &old) < 0)
                return -errno;
        was_pending = sigpending(&pending) >= 0 && sigismember(&pending, SIGPIPE);

        k = pwritev2(fd, &(struct iovec) { .iov_base = (char *) line, .iov_len = strlen(line) }, 1, -1, RWF_NOWAIT);
        if (k < 0) {
                r = -errno;
                if (r == -EPIPE && !was_pending)
                        (void) sigtimedwait(&pipe_set, NULL, &zero);
        } else if ((size_t) k != strlen(line))
                r = -EAGAIN;

        (void) sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}

void attach_process_report(AttachProcess *p, int code, int status) {
        char line[64];
        int r;

        (void) snprintf(line, sizeof(line), "%s %d\n", code == CLD_EXITED ? "EXITED" : "KILLED", status);
        log_debug("Attached command '%s' (PID %d, uid %u) in the namespace of '%s' ended: %.*s", p->command,
                  (int) p->pid, (unsigned) p->uid, p->user, (int) strlen(line) - 1, line);

        r = write_status(p->status_fd, line);
        if (r < 0)
                log_debug_errno(r, "Failed to report the status of PID %d, ignoring: %m", (int) p->pid);
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

unsigned attach_tasks_of_uid(Manager *m, uid_t uid) {
        unsigned n = 0;

        for (AttachProcess *p = m->attach_processes; p; p = p->next)
                if (p->uid == uid)
                        n += p->unit ? attach_unit_tasks(p) : 1;
        return n;
}

void attach_done(Manager *m) {
        while (m->attach_processes)
                attach_process_free(m->attach_processes);
}
