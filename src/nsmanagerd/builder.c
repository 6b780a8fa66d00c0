/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "builder.h"
#include "log.h"
#include "mount-util.h"
#include "registry.h"
#include "strv.h"

/* Requests: an ipc.h message whose 'result' field is the request type, the payload a list of
 * NUL-terminated strings, and at most one fd. */
typedef enum BuilderRequestType {
        BUILDER_OPEN_REGISTRY = 1,  /* registry_pin, pins_dir */
        BUILDER_BUILD,              /* name, subtree_root, propagation, shared subtrees…; the result is the
                                     * view's number of mounts */
        BUILDER_UNPIN,              /* name */
        BUILDER_LIST,               /* (nothing) */
        BUILDER_READ_MOUNTS,        /* fd: the namespace, or none for the host */
        BUILDER_OPEN_MOUNTINFO,     /* fd: the namespace; the reply's fd is its /proc/self/mountinfo */
} BuilderRequestType;

#define BUILDER_MAX_ARGS 64

/* ======== the builder process ======== */

typedef struct BuilderProcess {
        int sock;
        int host_ns_fd;
        int host_uts_fd;
        int registry_fd;
        int cpu;
        char *pins_dir;
        MountTableCache host_mounts;     /* the host's, read again only after it changed */
} BuilderProcess;

/* Splits a payload of NUL-terminated strings. */
static size_t split_args(IpcMessage *m, const char **args, size_t max) {
        size_t n = 0;
        for (size_t i = 0; i < m->size && n < max;) {
                size_t len = strnlen(m->payload + i, m->size - i);
                if (i + len == m->size)
                        break;   /* not terminated: ignore the rest */
                args[n++] = m->payload + i;
                i += len + 1;
        }
        return n;
}

/* Each handler sends its answer, or returns a negative errno with the failure in 'error', which
 * builder_dispatch() sends. */
static int handle_open_registry(BuilderProcess *p, const char **args, size_t n, NsmError *error) {
        int r;

        if (n != 2)
                return nsm_error_set_errnof(error, -EBADMSG, "Malformed request.");
        free(p->pins_dir);
        p->pins_dir = strdup(args[1]);
        if (!p->pins_dir)
                return -ENOMEM;
        p->registry_fd = safe_close(p->registry_fd);
        r = registry_open(args[0], args[1], p->host_ns_fd, &p->cpu, &p->registry_fd);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to set up the namespace registry '%s': %m", args[0]);
        return ipc_send(p->sock, r, 0, NULL, 0, NULL, 0);
}

static int handle_build(BuilderProcess *p, const char **args, size_t n, NsmError *error) {
        _cleanup_strv_free_ char **shared = NULL;
        _cleanup_close_ int ns_fd = -EBADF;
        _cleanup_free_ char *where = NULL;
        ViewStage stage = VIEW_STAGE_NONE;
        size_t n_mounts = 0;
        int r = -EINVAL;

        if (n < 3 || view_propagation_from_string(args[2]) < 0)
                return nsm_error_set_errnof(error, -EBADMSG, "Malformed request.");
        for (size_t i = 3; i < n; i++)
                if (strv_extend(&shared, args[i]) < 0)
                        return -ENOMEM;
        if (p->registry_fd < 0)
                return nsm_error_set_errnof(error, -EBADFD, "The registry is not open.");
        /* Opened in the host namespace, where the builder is between requests. */
        r = mount_table_cache_refresh(&p->host_mounts);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the host's mount table: %m");
        ViewSpec spec = { .name = args[0], .subtree_root = args[1], .shared_subtrees = shared,
                          .propagation = view_propagation_from_string(args[2]),
                          .host_mounts = &p->host_mounts };

        for (int tries = 0; tries < 3; tries++) {
                r = set_cpu(p->cpu);
                if (r >= 0)
                        r = view_build(&spec, p->host_ns_fd, &ns_fd, &n_mounts, &stage);
                if (r < 0)
                        break;
                stage = VIEW_STAGE_PIN;
                r = registry_pin(p->registry_fd, p->host_ns_fd, p->pins_dir, spec.name, ns_fd);
                if (r != -EINVAL)
                        break;
                /* Made on a CPU whose namespace ids are older than the registry's (registry.h):
                 * move that CPU's ids on and build it again there. */
                ns_fd = safe_close(ns_fd);
                r = namespace_ids_pass(mntns_get_id(p->registry_fd), p->host_uts_fd);
                if (r < 0)
                        break;
                r = -EINVAL;
        }
        if (r < 0) {
                /* The mount point directory is all a failed build leaves on the host. */
                if (asprintf(&where, "%s/%s", spec.subtree_root, spec.name) >= 0)
                        (void) rmdir(where);
                /* Each stage works on the paths of the configuration (SubtreeRoot=, SharedSubtrees=):
                 * what its errno says about them names it. */
                return nsm_error_set_path_errnof(error, r, "Failed to build the view of '%s' while %s: %m", spec.name,
                                                 view_stage_to_string(stage));
        }
        /* The result of a build is its number of mounts. */
        return ipc_send(p->sock, (int) MIN(n_mounts, (size_t) INT32_MAX), 0, NULL, 0, &ns_fd, 1);
}

static int handle_unpin(BuilderProcess *p, const char **args, size_t n, NsmError *error) {
        int r;

        if (n != 1)
                return nsm_error_set_errnof(error, -EBADMSG, "Malformed request.");
        r = registry_unpin(p->registry_fd, p->host_ns_fd, p->pins_dir, args[0]);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to unpin the namespace of '%s': %m", args[0]);
        return ipc_send(p->sock, 0, 0, NULL, 0, NULL, 0);
}

static int send_pin(const char *name, int fd, void *userdata) {
        BuilderProcess *p = userdata;
        int r = ipc_send(p->sock, 0, IPC_MORE, name, strlen(name) + 1, &fd, fd >= 0 ? 1 : 0);
        safe_close(fd);
        return r;
}

static int handle_list(BuilderProcess *p, NsmError *error) {
        int r = registry_list(p->registry_fd, p->host_ns_fd, p->pins_dir, send_pin, p);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to list the pinned namespaces: %m");
        return ipc_send(p->sock, 0, 0, NULL, 0, NULL, 0);
}

static int read_mountinfo(char **ret, size_t *ret_size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        if (!f)
                return -errno;
        for (;;) {
                if (allocated - size < 4096) {
                        allocated = MAX(allocated * 2, (size_t) 65536);
                        char *b = realloc(buf, allocated);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                size_t k = fread(buf + size, 1, allocated - size, f);
                size += k;
                if (k == 0)
                        break;
        }
        if (ferror(f))
                return -EIO;
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

static int handle_read_mounts(BuilderProcess *p, IpcMessage *m, NsmError *error) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        /* Reading mountinfo asks no file system anything (d_path and show_options only): safe
         * for the builder even where a view holds a hung FUSE or NFS mount. */
        if (m->n_fds == 1 && setns(m->fds[0], CLONE_NEWNS) < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to enter the namespace: %m");
        r = read_mountinfo(&buf, &size);
        if (m->n_fds == 1 && setns(p->host_ns_fd, CLONE_NEWNS) < 0)
                _exit(EXIT_FAILURE);   /* stranded outside the host: the daemon starts another */
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the mount table: %m");
        return ipc_send_data(p->sock, buf, size);
}

/* An open mountinfo of a namespace flags every change in it (POLLPRI), whoever holds it and
 * wherever: for mount-events-view.c, which holds it without reading it. */
static int handle_open_mountinfo(BuilderProcess *p, IpcMessage *m, NsmError *error) {
        _cleanup_close_ int fd = -EBADF;

        if (m->n_fds != 1)
                return nsm_error_set_errnof(error, -EBADMSG, "Malformed request.");
        if (setns(m->fds[0], CLONE_NEWNS) < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to enter the namespace: %m");
        fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        int r = fd < 0 ? -errno : 0;
        if (setns(p->host_ns_fd, CLONE_NEWNS) < 0)
                _exit(EXIT_FAILURE);   /* stranded outside the host: the daemon starts another */
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to open the namespace's mount table: %m");
        return ipc_send(p->sock, 0, 0, NULL, 0, &fd, 1);
}

static int builder_handle(BuilderProcess *p, IpcMessage *m, NsmError *error) {
        const char *args[BUILDER_MAX_ARGS];
        size_t n = split_args(m, args, ELEMENTSOF(args));

        switch (m->result) {
        case BUILDER_OPEN_REGISTRY:
                return handle_open_registry(p, args, n, error);
        case BUILDER_BUILD:
                return handle_build(p, args, n, error);
        case BUILDER_UNPIN:
                return handle_unpin(p, args, n, error);
        case BUILDER_LIST:
                return handle_list(p, error);
        case BUILDER_READ_MOUNTS:
                return handle_read_mounts(p, m, error);
        case BUILDER_OPEN_MOUNTINFO:
                return handle_open_mountinfo(p, m, error);
        default:
                return nsm_error_set_errnof(error, -EOPNOTSUPP, "Unknown request %d.", m->result);
        }
}

/* Answers one request; the result of sending the answer. */
static int builder_dispatch(BuilderProcess *p, IpcMessage *m) {
        _cleanup_(nsm_error_done) NsmError error = {};
        int r = builder_handle(p, m, &error);

        if (r >= 0 || r == -EPIPE || r == -ECONNRESET)
                return r;
        if (!nsm_error_is_set(&error))
                (void) nsm_error_set_errnof(&error, r, NULL);
        return ipc_send_error(p->sock, &error);
}

_noreturn_ static void builder_main(int sock) {
        _cleanup_free_ IpcMessage *m = malloc(sizeof(IpcMessage));
        BuilderProcess p = { .sock = sock, .registry_fd = -EBADF, .cpu = sched_getcpu(),
                             .host_mounts = MOUNT_TABLE_CACHE_INIT };

        p.host_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        p.host_uts_fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
        if (!m || p.host_ns_fd < 0 || p.host_uts_fd < 0)
                _exit(EXIT_FAILURE);
        for (;;) {
                int r = ipc_recv(sock, m, 0);
                if (r <= 0)
                        _exit(r == 0 ? EXIT_SUCCESS : EXIT_FAILURE);   /* the daemon is gone */
                r = builder_dispatch(&p, m);
                ipc_message_close_fds(m);
                /* A reply that cannot be sent means the daemon gave up on us. */
                if (r == -EPIPE || r == -ECONNRESET)
                        _exit(EXIT_FAILURE);
        }
}

/* ======== the daemon's side ======== */

typedef struct BuilderRequest BuilderRequest;
struct BuilderRequest {
        BuilderRequestType type;
        char *payload;
        size_t size;
        int fd;
        uint64_t deadline;
        BuilderDoneFunc done;
        void *userdata;
        BuilderRequest *next;
};

struct Builder {
        sd_event *event;
        ChildSet *children;
        char *registry_pin;
        char *pins_dir;

        pid_t pid;
        int pidfd;
        int sock;
        sd_event_source *io_source, *exit_source, *timer_source;
        unsigned restarts;

        BuilderRequest *queue, *queue_tail;
        BuilderRequest *running;
        /* the reply being received */
        char *data;
        size_t size;
        BuilderItem *items;
        size_t n_items;
};

static BuilderRequest *builder_request_free(BuilderRequest *q) {
        if (!q)
                return NULL;
        free(q->payload);
        safe_close(q->fd);
        free(q);
        return NULL;
}

static void builder_reply_reset(Builder *b) {
        for (size_t i = 0; i < b->n_items; i++) {
                free(b->items[i].name);
                safe_close(b->items[i].fd);
        }
        free(b->items);
        b->items = NULL;
        b->n_items = 0;
        b->data = mfree(b->data);
        b->size = 0;
}

/* Answers the running request: 'error' (NULL: it succeeded with 'result'). */
static void builder_finish(Builder *b, int result, const NsmError *error, int *fd) {
        BuilderRequest *q = TAKE_PTR(b->running);
        BuilderReply reply = {
                .result = error ? 0 : result,
                .error = error,
                .fd = fd ? *fd : -EBADF,
                .data = b->data,
                .size = b->size,
                .items = b->items,
                .n_items = b->n_items,
        };

        /* The timer stays armed: re-arming a timer costs a syscall (and on a VM an exit) each
         * time, twice per request. It fires at the earliest deadline it was set to and
         * looks at what runs then (on_builder_timeout). */
        if (q) {
                q->done(&reply, q->userdata);
                builder_request_free(q);
        }
        if (fd)
                *fd = reply.fd;
        /* The callee may have taken the items (and the fds in them). */
        b->items = reply.items;
        b->n_items = reply.n_items;
        builder_reply_reset(b);
}

static int builder_send_next(Builder *b);
static int builder_enqueue(Builder *b, bool first, BuilderRequestType type, const char *const *args, int fd,
                           uint64_t deadline, BuilderDoneFunc done, void *userdata);

static int on_builder_timeout(sd_event_source *s, uint64_t usec, void *userdata);

static void builder_stop_process(Builder *b, const char *why) {
        b->io_source = sd_event_source_disable_unref(b->io_source);
        b->exit_source = sd_event_source_disable_unref(b->exit_source);
        b->sock = safe_close(b->sock);
        if (b->pidfd >= 0) {
                (void) syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
                /* It may be unkillable for a while (D state): reap it whenever it ends. */
                if (child_set_adopt(b->children, TAKE_FD(b->pidfd), "The view builder that was given up", 0) < 0)
                        log_warning("Cannot watch the view builder %d that was given up; it stays a zombie.", (int) b->pid);
        }
        log_warning("Restarting the view builder (PID %d): %s.", (int) b->pid, why);
        b->pid = 0;
}

static int builder_spawn(Builder *b);
static void builder_fail_running(Builder *b, NsmErrorCode code, int r, const char *message);

static void builder_restart(Builder *b, const char *why) {
        int r;

        builder_stop_process(b, why);
        r = builder_spawn(b);
        if (r < 0) {
                log_error_errno(r, "Failed to start a new view builder: %m");
                /* Everything queued fails now rather than wait for nothing. */
                while (b->queue) {
                        b->running = b->queue;
                        b->queue = b->queue->next;
                        builder_fail_running(b, NSM_ERROR_SYSTEM, r, "The view builder could not be restarted.");
                }
                b->queue_tail = NULL;
        }
}

/* The running request failed for the daemon's side of the work: 'code' (NSM_ERROR_SYSTEM: the
 * errno 'r'). */
static void builder_fail_running(Builder *b, NsmErrorCode code, int r, const char *message) {
        _cleanup_(nsm_error_done) NsmError e = {};

        (void) nsm_error_set(&e, code, r, message);
        builder_reply_reset(b);
        builder_finish(b, 0, &e, NULL);
}

/* The timer at the running request's deadline, unless it already fires earlier. */
static int builder_arm_timer(Builder *b, uint64_t deadline) {
        uint64_t armed;
        int enabled = SD_EVENT_OFF, r;

        if (deadline == 0)
                return 0;
        if (!b->timer_source)
                return sd_event_add_time(b->event, &b->timer_source, CLOCK_MONOTONIC, deadline, 0, on_builder_timeout, b);
        if (sd_event_source_get_enabled(b->timer_source, &enabled) >= 0 && enabled != SD_EVENT_OFF &&
            sd_event_source_get_time(b->timer_source, &armed) >= 0 && armed <= deadline)
                return 0;
        r = sd_event_source_set_time(b->timer_source, deadline);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(b->timer_source, SD_EVENT_ONESHOT);
}

static int on_builder_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Builder *b = userdata;
        uint64_t now = 0;

        /* Armed for an earlier request: the one running now may have time left. */
        (void) sd_event_now(b->event, CLOCK_MONOTONIC, &now);
        if (!b->running || b->running->deadline == 0)
                return 0;
        if (now < b->running->deadline) {
                if (builder_arm_timer(b, b->running->deadline) < 0)
                        log_warning("Cannot re-arm the view builder's deadline, ignoring.");
                return 0;
        }
        builder_fail_running(b, NSM_ERROR_TIMED_OUT, 0,
                             "The view builder did not answer in time (OperationTimeoutSec=).");
        builder_restart(b, "it missed a deadline");
        return 0;
}

static int on_builder_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Builder *b = userdata;

        b->exit_source = sd_event_source_disable_unref(b->exit_source);
        b->pidfd = safe_close(b->pidfd);
        if (b->running)
                builder_fail_running(b, NSM_ERROR_SYSTEM, -EPROTO, "The view builder died while it worked on this.");
        builder_restart(b, si->si_code == CLD_EXITED ? "it exited" : "it was killed");
        return 0;
}

static int builder_add_item(Builder *b, IpcMessage *m) {
        const char *name = ipc_message_text(m);
        BuilderItem *items;

        if (!name)
                return -EBADMSG;
        items = realloc(b->items, (b->n_items + 1) * sizeof(BuilderItem));
        if (!items)
                return -ENOMEM;
        b->items = items;
        items[b->n_items] = (BuilderItem) { .name = strdup(name), .fd = m->n_fds == 1 ? m->fds[0] : -ENOENT };
        if (!items[b->n_items].name)
                return -ENOMEM;
        m->n_fds = 0;
        b->n_items++;
        return 0;
}

static int builder_add_data(Builder *b, IpcMessage *m) {
        char *d = realloc(b->data, b->size + m->size + 1);
        if (!d)
                return -ENOMEM;
        memcpy(d + b->size, m->payload, m->size);
        b->data = d;
        b->size += m->size;
        d[b->size] = 0;
        return 0;
}

static int on_builder_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Builder *b = userdata;
        _cleanup_free_ IpcMessage *m = malloc(sizeof(IpcMessage));
        int r;

        if (!m)
                return log_oom();
        for (;;) {
                r = ipc_recv(b->sock, m, MSG_DONTWAIT);
                if (r == -EAGAIN)
                        return 0;
                if (r <= 0) {
                        /* EOF or garbage: the exit handler, or this, restarts it. */
                        if (b->running)
                                builder_fail_running(b, NSM_ERROR_SYSTEM, -EPROTO,
                                                     "The view builder broke the protocol.");
                        builder_restart(b, "its socket failed");
                        return 0;
                }
                if (!b->running) {
                        ipc_message_close_fds(m);
                        continue;
                }
                if (m->flags & IPC_MORE) {
                        r = b->running->type == BUILDER_LIST ? builder_add_item(b, m) : builder_add_data(b, m);
                        ipc_message_close_fds(m);
                        if (r < 0) {
                                builder_fail_running(b, NSM_ERROR_SYSTEM, r,
                                                     "Failed to receive the view builder's answer.");
                                builder_restart(b, "its answer could not be received");
                                return 0;
                        }
                        continue;
                }
                _cleanup_(nsm_error_done) NsmError failed = {};
                int ns_fd = m->n_fds == 1 ? m->fds[0] : -EBADF;
                m->n_fds = 0;
                builder_finish(b, m->result, ipc_message_error(m, &failed) < 0 ? &failed : NULL, &ns_fd);
                safe_close(ns_fd);
                (void) builder_send_next(b);
        }
}

static void on_registry_opened(BuilderReply *reply, void *userdata) {
        if (reply->error)
                log_error("%s", nsm_error_message(reply->error));
        else if (reply->result > 0)
                log_debug("Created the namespace registry.");
}

static int builder_send_next(Builder *b) {
        BuilderRequest *q;
        int r;

        if (b->running || !b->queue || b->sock < 0)
                return 0;
        q = b->queue;
        b->queue = q->next;
        if (!b->queue)
                b->queue_tail = NULL;
        q->next = NULL;
        b->running = q;

        r = ipc_send(b->sock, q->type, 0, q->payload, q->size, &q->fd, q->fd >= 0 ? 1 : 0);
        if (r >= 0)
                r = builder_arm_timer(b, q->deadline);
        if (r < 0) {
                builder_fail_running(b, NSM_ERROR_SYSTEM, r, "Failed to send the request to the view builder.");
                builder_restart(b, "a request could not be sent");
                return r;
        }
        return 0;
}

/* Queues a request: args (NULL-terminated) become the payload. 'first' puts it ahead of the
 * queue. The fd is dup'ed. */
static int builder_enqueue(Builder *b, bool first, BuilderRequestType type, const char *const *args, int fd,
                           uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        BuilderRequest *q;
        size_t size = 0;
        char *p;

        if (!b)
                return -ESHUTDOWN;
        q = calloc(1, sizeof(BuilderRequest));
        if (!q)
                return -ENOMEM;
        *q = (BuilderRequest) { .type = type, .fd = -EBADF, .deadline = deadline, .done = done, .userdata = userdata };
        for (const char *const *a = args; a && *a; a++)
                size += strlen(*a) + 1;
        if (size > IPC_PAYLOAD_MAX) {
                builder_request_free(q);
                return -E2BIG;
        }
        q->payload = p = malloc(size + 1);
        if (!p) {
                builder_request_free(q);
                return -ENOMEM;
        }
        for (const char *const *a = args; a && *a; a++)
                p = stpcpy(p, *a) + 1;
        q->size = size;
        if (fd >= 0) {
                q->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (q->fd < 0) {
                        int r = -errno;
                        builder_request_free(q);
                        return r;
                }
        }
        if (first) {
                q->next = b->queue;
                b->queue = q;
                if (!b->queue_tail)
                        b->queue_tail = q;
        } else {
                if (b->queue_tail)
                        b->queue_tail->next = q;
                else
                        b->queue = q;
                b->queue_tail = q;
        }
        return builder_send_next(b);
}

static int builder_spawn(Builder *b) {
        int pair[2], r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        struct clone_args args = { .flags = CLONE_PIDFD, .pidfd = (uint64_t) (uintptr_t) &b->pidfd, .exit_signal = SIGCHLD };
        b->pid = (pid_t) syscall(SYS_clone3, &args, sizeof args);
        if (b->pid < 0 && (errno == ENOSYS || errno == EPERM)) {
                b->pid = fork();
                if (b->pid > 0)
                        b->pidfd = (int) syscall(SYS_pidfd_open, b->pid, 0);
        }
        if (b->pid < 0) {
                r = -errno;
                safe_close(pair[0]);
                safe_close(pair[1]);
                return r;
        }
        if (b->pid == 0) {
                if (child_setup(pair[1], NULL, 0) < 0)
                        _exit(EXIT_FAILURE);
                builder_main(pair[1]);
        }
        safe_close(pair[1]);
        b->sock = pair[0];
        b->restarts++;
        if (b->pidfd < 0)
                return -errno;
        r = sd_event_add_io(b->event, &b->io_source, b->sock, EPOLLIN, on_builder_io, b);
        if (r < 0)
                return r;
        r = sd_event_add_child_pidfd(b->event, &b->exit_source, b->pidfd, WEXITED, on_builder_exit, b);
        if (r < 0)
                return r;

        /* Every builder first opens the registry (the pin at registry_pin, or a new one), ahead
         * of whatever waits. */
        return builder_enqueue(b, true, BUILDER_OPEN_REGISTRY, (const char *const[]) { b->registry_pin, b->pins_dir, NULL },
                               -EBADF, 0, on_registry_opened, b);
}

int builder_new(sd_event *event, ChildSet *children, const char *registry_pin, const char *pins_dir, Builder **ret) {
        _cleanup_(builder_freep) Builder *b = calloc(1, sizeof(Builder));
        int r;

        if (!b)
                return -ENOMEM;
        b->event = sd_event_ref(event);
        b->children = children;
        b->pidfd = b->sock = -EBADF;
        b->registry_pin = strdup(registry_pin);
        b->pins_dir = strdup(pins_dir);
        if (!b->registry_pin || !b->pins_dir)
                return -ENOMEM;
        r = builder_spawn(b);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(b);
        return 0;
}

Builder *builder_free(Builder *b) {
        if (!b)
                return NULL;
        /* Whoever waits hears that we are going (and frees what it kept for the answer). */
        if (b->running)
                builder_fail_running(b, NSM_ERROR_SYSTEM, -ESHUTDOWN, "nsmanagerd is shutting down.");
        while (b->queue) {
                b->running = b->queue;
                b->queue = b->queue->next;
                builder_fail_running(b, NSM_ERROR_SYSTEM, -ESHUTDOWN, "nsmanagerd is shutting down.");
        }
        b->queue_tail = NULL;
        /* Closing the socket ends the builder (it exits on EOF); no reply is awaited. */
        b->io_source = sd_event_source_disable_unref(b->io_source);
        b->exit_source = sd_event_source_disable_unref(b->exit_source);
        b->timer_source = sd_event_source_disable_unref(b->timer_source);
        safe_close(b->sock);
        pidfd_kill_and_reap(b->pidfd, USEC_PER_SEC);
        safe_close(b->pidfd);
        builder_request_free(b->running);
        while (b->queue) {
                BuilderRequest *q = b->queue;
                b->queue = q->next;
                builder_request_free(q);
        }
        builder_reply_reset(b);
        free(b->registry_pin);
        free(b->pins_dir);
        sd_event_unref(b->event);
        free(b);
        return NULL;
}

int builder_build(Builder *b, const ViewSpec *spec, uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        size_t n = strv_length(spec->shared_subtrees);
        _cleanup_free_ const char **args = calloc(n + 4, sizeof(char *));

        if (!args)
                return -ENOMEM;
        args[0] = spec->name;
        args[1] = spec->subtree_root;
        args[2] = view_propagation_to_string(spec->propagation);
        for (size_t i = 0; i < n; i++)
                args[3 + i] = spec->shared_subtrees[i];
        return builder_enqueue(b, false, BUILDER_BUILD, args, -EBADF, deadline, done, userdata);
}

int builder_unpin(Builder *b, const char *name, uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        return builder_enqueue(b, false, BUILDER_UNPIN, (const char *const[]) { name, NULL }, -EBADF, deadline, done, userdata);
}

int builder_list(Builder *b, uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        return builder_enqueue(b, false, BUILDER_LIST, NULL, -EBADF, deadline, done, userdata);
}

int builder_read_mounts(Builder *b, int ns_fd, uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        return builder_enqueue(b, false, BUILDER_READ_MOUNTS, NULL, ns_fd, deadline, done, userdata);
}

int builder_open_mountinfo(Builder *b, int ns_fd, uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        return builder_enqueue(b, false, BUILDER_OPEN_MOUNTINFO, NULL, ns_fd, deadline, done, userdata);
}

void builder_sync_done(BuilderReply *reply, void *userdata) {
        BuilderSync *s = userdata;

        s->finished = true;
        s->result = reply->error ? nsm_error_to_errno(reply->error) : reply->result;
        if (nsm_error_copy(&s->error, reply->error) < 0)
                s->error.message = NULL;   /* the table's sentence then */
        s->fd = TAKE_FD(reply->fd);
        s->items = TAKE_PTR(reply->items);
        s->n_items = reply->n_items;
        reply->n_items = 0;
}

void builder_sync_done_free(BuilderSync *s) {
        for (size_t i = 0; i < s->n_items; i++) {
                free(s->items[i].name);
                safe_close(s->items[i].fd);
        }
        free(s->items);
        nsm_error_done(&s->error);
        safe_close(s->fd);
        *s = (BuilderSync) { .fd = -EBADF };
}

int builder_sync_wait(sd_event *event, BuilderSync *s) {
        while (!s->finished) {
                int r = sd_event_run(event, UINT64_MAX);
                if (r < 0)
                        return r;
        }
        return s->result;
}
