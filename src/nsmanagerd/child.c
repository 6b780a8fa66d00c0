/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "bus-errors.h"
#include "child.h"
#include "list.h"
#include "log.h"

typedef struct Child Child;

/* Messages read from one child's connection per turn of the loop, so that a child that
 * floods its socket (warnings) cannot hold the daemon's loop; the rest on the next turn. */
#define CHILD_MESSAGES_PER_WAKEUP 64
/* After its exit the socket holds what it wrote, no more: read it to find its answer, with a
 * bound all the same (more than a socket buffer holds of the smallest messages). */
#define CHILD_MESSAGES_AFTER_EXIT 8192

struct Child {
        ChildSet *set;
        char *description;
        pid_t pid;
        int pidfd;
        int sock;
        sd_event_source *exit_source, *io_source, *deadline_source;
        sd_event_source *more_source;    /* messages left over from a capped wakeup */
        uid_t owner;
        uint64_t deadline;
        bool answered;           /* 'done' was called */
        bool stuck;              /* past its deadline and not exited */
        ChildReplyFunc reply;
        void *userdata;

        sd_bus *bus;             /* our end of the child's socket, the client */
        sd_bus_slot *call;       /* its call */
        Child *prev, *next;
};

struct ChildSet {
        sd_event *event;
        Child *children;
};

ChildSet *child_set_new(sd_event *event) {
        ChildSet *s = calloc(1, sizeof(ChildSet));
        if (!s)
                return NULL;
        s->event = sd_event_ref(event);
        return s;
}

static void child_close_bus(Child *c) {
        c->call = sd_bus_slot_unref(c->call);
        c->more_source = sd_event_source_disable_unref(c->more_source);
        if (c->bus) {
                c->io_source = sd_event_source_disable_unref(c->io_source);
                c->bus = sd_bus_close_unref(c->bus);
        }
}

static Child *child_free(Child *c) {
        if (!c)
                return NULL;
        if (c->set)
                LIST_REMOVE(c->set->children, c);
        sd_event_source_disable_unref(c->exit_source);
        c->io_source = sd_event_source_disable_unref(c->io_source);
        sd_event_source_disable_unref(c->deadline_source);
        child_close_bus(c);
        safe_close(c->sock);
        safe_close(c->pidfd);
        free(c->description);
        free(c);
        return NULL;
}

void pidfd_kill_and_reap(int pidfd, uint64_t usec) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        if (pidfd < 0)
                return;
        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        if (poll(&p, 1, (int) (usec / USEC_PER_MSEC)) > 0)
                (void) waitid(P_PIDFD, (id_t) pidfd, NULL, WEXITED | WNOHANG);
}

/* Why there is no reply: its deadline passed, it died, the daemon is shutting down. */
static void child_answer(Child *c, const NsmError *error) {
        if (c->answered)
                return;
        c->answered = true;
        c->reply(error, NULL, c->userdata);
}

ChildSet *child_set_free(ChildSet *s) {
        if (!s)
                return NULL;
        for (Child *c = s->children; c; c = c->next)
                if (c->pidfd >= 0)
                        (void) syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
        while (s->children) {
                Child *c = s->children;
                pidfd_kill_and_reap(c->pidfd, c->stuck ? 0 : USEC_PER_SEC);
                /* Whoever waits for it hears that we are going. */
                _cleanup_(nsm_error_done) NsmError e = {};
                (void) nsm_error_set_shutting_down(&e);
                child_answer(c, &e);
                child_free(c);
        }
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

unsigned child_set_stuck(ChildSet *s, uid_t owner) {
        unsigned n = 0;
        for (Child *c = s->children; c; c = c->next)
                if (c->stuck && c->owner == owner)
                        n++;
        return n;
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Child *c = userdata;

        if (c->bus)
                /* Its answer may still wait on the socket: read it first. */
                for (unsigned n = 0; n < CHILD_MESSAGES_AFTER_EXIT; n++)
                        if (c->answered || sd_bus_process(c->bus, NULL) <= 0)
                                break;
        if (c->stuck)
                log_info("%s: the helper process that was stuck past its deadline has ended.", c->description);
        if (!c->answered) {
                /* The caller logs or reports it, with this sentence rather than "Protocol error". */
                _cleanup_(nsm_error_done) NsmError e = {};
                (void) nsm_error_set_errnof(&e, -EPROTO, "%s: the helper process %s %d without answering.",
                                            c->description,
                                            si->si_code == CLD_EXITED ? "exited with status" : "was killed by signal",
                                            si->si_status);
                child_answer(c, &e);
        }
        child_free(c);
        return 0;
}

static int on_child_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        Child *c = userdata;
        _cleanup_(nsm_error_done) NsmError e = {};

        c->deadline_source = sd_event_source_disable_unref(c->deadline_source);
        if (c->answered)
                return 0;
        log_warning("%s did not finish in time (a file system that does not answer?); killing it.", c->description);
        (void) syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
        c->stuck = true;
        /* Late answers are not read: the caller has been told it timed out. */
        child_close_bus(c);
        (void) nsm_error_setf(&e, NSM_ERROR_TIMED_OUT, "%s did not finish within the deadline (OperationTimeoutSec=): "
                              "a file system on the way does not answer. Nothing was changed after the step it was "
                              "stuck in.", c->description);
        child_answer(c, &e);
        return 0;
}

static pid_t clone_with_pidfd(int *ret_pidfd) {
        struct clone_args args = {
                .flags = CLONE_PIDFD,
                .pidfd = (uint64_t) (uintptr_t) ret_pidfd,
                .exit_signal = SIGCHLD,
        };
        pid_t pid = (pid_t) syscall(SYS_clone3, &args, sizeof args);
        if (pid >= 0 || (errno != ENOSYS && errno != EPERM))
                return pid;

        /* clone3 filtered (some seccomp policies answer ENOSYS so that glibc falls back to
         * clone): fork, then a pidfd of the child, which cannot have been reaped yet. */
        pid = fork();
        if (pid <= 0)
                return pid;
        *ret_pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (*ret_pidfd < 0) {
                int r = -errno;
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                errno = -r;
                return -1;
        }
        return pid;
}

static int on_child_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        const sd_bus_error *error = sd_bus_message_get_error(reply);
        Child *c = userdata;

        /* sd-bus's own NoReply: the connection went (the child died) or the call's timeout
         * passed; the child's exit or its deadline answers then, with what happened. */
        if (c->answered || sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY))
                return 0;
        c->answered = true;
        if (error) {
                (void) nsm_error_from_bus(&e, error);
                c->reply(&e, NULL, c->userdata);
        } else
                c->reply(NULL, reply, c->userdata);
        return 0;
}

/* What the child sent for the log ahead of its answer (child_warn()), already escaped. */
static int on_child_warning(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Child *c = userdata;
        const char *text;

        if (!c->answered && sd_bus_message_read(m, "s", &text) >= 0)
                log_warning("%s: %s", c->description, text);
        return 0;
}

/* The loop watches the child's bus for what sd-bus waits for (its handshake, the rest of a
 * large call, the answer). Not sd_bus_attach_event(): that runs a prepare callback of every
 * bus at every iteration of the loop, and a burst of logins has hundreds of children. */
static int child_bus_arm(Child *c) {
        int events = sd_bus_get_events(c->bus);

        if (events < 0) {
                /* Closed: its exit answers. */
                c->io_source = sd_event_source_disable_unref(c->io_source);
                return 0;
        }
        return sd_event_source_set_io_events(c->io_source, (uint32_t) events);
}

static int on_child_bus_more(sd_event_source *s, void *userdata);

static void child_bus_process(Child *c) {
        unsigned n = 0;
        int r;

        while ((r = sd_bus_process(c->bus, NULL)) > 0)
                if (++n >= CHILD_MESSAGES_PER_WAKEUP)
                        break;
        if (r < 0) {
                c->io_source = sd_event_source_disable_unref(c->io_source);
                return;
        }
        if (r > 0 && !c->more_source) {
                /* Capped: what was already read sits in sd-bus's queue, which no poll reports. */
                r = sd_event_add_defer(c->set->event, &c->more_source, on_child_bus_more, c);
                if (r >= 0)
                        r = sd_event_source_set_enabled(c->more_source, SD_EVENT_ONESHOT);
                if (r < 0)
                        c->more_source = sd_event_source_disable_unref(c->more_source);
        }
        if (child_bus_arm(c) < 0)
                log_warning("%s: cannot watch the helper process's connection, leaving it to its exit.",
                            c->description);
}

static int on_child_bus_more(sd_event_source *s, void *userdata) {
        Child *c = userdata;

        c->more_source = sd_event_source_disable_unref(c->more_source);
        if (c->bus)
                child_bus_process(c);
        return 0;
}

static int on_child_bus_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        child_bus_process(userdata);
        return 0;
}

/* Our end of the child's socket as a client of its interface, with the call queued: written
 * as the loop finds room, never waited for. */
static int child_call(Child *c, ChildSet *s, int sock, const ChildSpec *spec) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r, fd;

        r = sd_bus_new(&c->bus);
        if (r < 0) {
                safe_close(sock);
                return r;
        }
        r = sd_bus_set_fd(c->bus, sock, sock);
        if (r < 0) {
                safe_close(sock);
                return r;
        }
        r = sd_bus_negotiate_fds(c->bus, true);
        if (r >= 0)
                r = sd_bus_start(c->bus);
        if (r >= 0)
                r = sd_bus_match_signal(c->bus, NULL, NULL, CHILD_OBJECT_PATH, NULL, "Warning", on_child_warning, c);
        if (r >= 0 && spec->prepare)
                r = spec->prepare(c->bus, spec->userdata);
        if (r >= 0)
                r = sd_bus_message_new_method_call(c->bus, &m, NULL, CHILD_OBJECT_PATH, spec->interface->name,
                                                   spec->method);
        if (r >= 0 && spec->append)
                r = spec->append(m, spec->userdata);
        if (r < 0)
                return r;
        /* The deadline is child.c's (on_child_deadline()), not sd-bus's. */
        r = sd_bus_call_async(c->bus, &c->call, m, on_child_reply, c, UINT64_MAX);
        if (r < 0)
                return r;
        /* On a copy of the bus's fd, which the source owns: sd-bus closes its own when the
         * connection ends, and the loop must never watch an fd that another process (a child
         * not yet through child_setup()) may keep open after ours is closed. */
        fd = fcntl(sd_bus_get_fd(c->bus), F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        r = sd_event_add_io(s->event, &c->io_source, fd, EPOLLIN, on_child_bus_io, c);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        (void) sd_event_source_set_io_fd_own(c->io_source, true);
        return child_bus_arm(c);
}

int child_start(ChildSet *s, const ChildSpec *spec) {
        int pair[2], r;
        Child *c;

        c = calloc(1, sizeof(Child));
        if (!c)
                return -ENOMEM;
        *c = (Child) { .pidfd = -EBADF, .sock = -EBADF, .owner = spec->owner, .deadline = spec->deadline,
                       .reply = spec->reply, .userdata = spec->userdata };
        c->description = strdup(spec->description ?: "A helper process");
        if (!c->description) {
                child_free(c);
                return -ENOMEM;
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
                r = -errno;
                child_free(c);
                return r;
        }
        c->sock = pair[0];

        c->pid = clone_with_pidfd(&c->pidfd);
        if (c->pid < 0) {
                r = -errno;
                safe_close(pair[1]);
                child_free(c);
                return r;
        }
        if (c->pid == 0)
                child_main(pair[1], spec->interface, spec->keep_fds, spec->n_keep_fds);
        safe_close(pair[1]);

        /* From here on the child is ours to watch: linked first, so child_free() unlinks it. */
        c->set = s;
        LIST_PREPEND(s->children, c);

        r = sd_event_add_child_pidfd(s->event, &c->exit_source, c->pidfd, WEXITED, on_child_exit, c);
        if (r >= 0)
                r = child_call(c, s, TAKE_FD(c->sock), spec);
        if (r >= 0 && spec->deadline > 0)
                r = sd_event_add_time(s->event, &c->deadline_source, CLOCK_MONOTONIC, spec->deadline, 0,
                                      on_child_deadline, c);
        if (r < 0) {
                /* It cannot have done much yet, but it may already wait on a file system: never
                 * block on it. If it has not exited by now it stays a zombie until we exit. */
                (void) syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
                (void) waitid(P_PIDFD, (id_t) c->pidfd, NULL, WEXITED | WNOHANG);
                child_free(c);
                return r;
        }
        return 0;
}

int child_set_adopt(ChildSet *s, int pidfd, const char *description, uid_t owner) {
        Child *c = calloc(1, sizeof(Child));
        int r;

        if (!c) {
                safe_close(pidfd);
                return -ENOMEM;
        }
        *c = (Child) { .pidfd = pidfd, .sock = -EBADF, .owner = owner, .stuck = true, .answered = true };
        c->description = strdup(description);
        c->set = s;
        LIST_PREPEND(s->children, c);
        if (!c->description) {
                child_free(c);
                return -ENOMEM;
        }
        r = sd_event_add_child_pidfd(s->event, &c->exit_source, c->pidfd, WEXITED, on_child_exit, c);
        if (r < 0) {
                child_free(c);
                return r;
        }
        return 0;
}
