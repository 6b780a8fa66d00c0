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

#include "builder-message.h"
#include "builder.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "log.h"
#include "path-util.h"
#include "strv.h"

/* The daemon's client of the view builder process (src/builder/builder-main.c): the queue of
 * requests, their deadlines, the answers, a new builder when one fails. */

typedef struct BuilderRequest BuilderRequest;
struct BuilderRequest {
        BuilderCall call;                /* our copies */
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
        sd_bus *bus;                     /* the builder's interface, its socket */
        uint64_t cookie;                 /* the running request's call */
        sd_event_source *exit_source, *timer_source;
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
        free(q->call.registry_pin);
        free(q->call.pins_dir);
        free(q->call.name);
        free(q->call.subtree_root);
        strv_free(q->call.shared_subtrees);
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
static int builder_enqueue(Builder *b, bool first, const BuilderCall *call, int fd, uint64_t deadline,
                           BuilderDoneFunc done, void *userdata);

static int on_builder_timeout(sd_event_source *s, uint64_t usec, void *userdata);

static void builder_close_bus(Builder *b) {
        if (b->bus) {
                (void) sd_bus_detach_event(b->bus);
                b->bus = sd_bus_close_unref(b->bus);
        }
}

static void builder_stop_process(Builder *b, const char *why) {
        b->exit_source = sd_event_source_disable_unref(b->exit_source);
        builder_close_bus(b);
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

/* LIST's answer: per pin its name, a file name of the pins' directory, and its namespace's fd
 * (none: a pin file that holds no namespace). */
static int builder_read_items(Builder *b, sd_bus_message *reply) {
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(ayah)");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'r', "ayah")) > 0) {
                _cleanup_free_ char *name = NULL;
                BuilderItem *items;
                int fd = -ENOENT;

                r = bus_message_read_bytes(reply, &name);
                if (r >= 0)
                        r = sd_bus_message_enter_container(reply, 'a', "h");
                if (r >= 0 && sd_bus_message_read(reply, "h", &fd) > 0) {
                        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                        if (fd < 0)
                                return -errno;
                }
                items = realloc(b->items, (b->n_items + 1) * sizeof(BuilderItem));
                if (!items) {
                        safe_close(fd);
                        return -ENOMEM;
                }
                b->items = items;
                items[b->n_items++] = (BuilderItem) { .name = TAKE_PTR(name), .fd = fd };
                if (r < 0 || !filename_is_valid(items[b->n_items - 1].name))
                        return -EBADMSG;
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        return r < 0 ? r : sd_bus_message_exit_container(reply);
}

/* READ_MOUNTS' answer as its callers read it (builder-message.h): the table, NUL-terminated,
 * and after that NUL with ids, per mount a BuilderMountIds. */
static int builder_read_table(Builder *b, sd_bus_message *reply) {
        const void *table;
        size_t n, k = 0;
        int r;

        r = sd_bus_message_read_array(reply, 'y', &table, &n);
        if (r < 0)
                return r;
        if (memchr(table, 0, n))
                return -EBADMSG;
        b->data = malloc(n + 1);
        if (!b->data)
                return -ENOMEM;
        if (n > 0)
                memcpy(b->data, table, n);
        b->data[n] = 0;
        b->size = n;
        if (!b->running->call.with_ids)
                return 0;
        r = sd_bus_message_enter_container(reply, 'a', "(tt)");
        for (BuilderMountIds m; r >= 0 && (r = sd_bus_message_read(reply, "(tt)", &m.old, &m.unique)) > 0;) {
                char *d = realloc(b->data, b->size + 1 + (k + 1) * sizeof m);
                if (!d)
                        return -ENOMEM;
                memcpy(d + n + 1 + k++ * sizeof m, &m, sizeof m);
                b->data = d;
        }
        if (k > 0)
                b->size = n + 1 + k * sizeof(BuilderMountIds);
        return r < 0 ? r : 0;
}

static int on_builder_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        const sd_bus_error *error = sd_bus_message_get_error(reply);
        Builder *b = userdata;
        uint64_t cookie = 0;
        int r = 0, result = 0, fd = -EBADF;

        if (!b->running || sd_bus_message_get_reply_cookie(reply, &cookie) < 0 || cookie != b->cookie)
                return 0;
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY)) {
                /* Its connection went: it died, or broke the protocol. */
                builder_fail_running(b, NSM_ERROR_SYSTEM, -EPROTO, "The view builder died while it worked on this.");
                builder_restart(b, "its connection was closed");
                return 0;
        }
        if (error) {
                (void) nsm_error_from_bus(&e, error);
                builder_finish(b, 0, &e, NULL);
                (void) builder_send_next(b);
                return 0;
        }
        switch (b->running->call.kind) {
        case BUILDER_OPEN_REGISTRY:
                r = sd_bus_message_read(reply, "b", &result);
                break;
        case BUILDER_BUILD:
                r = sd_bus_message_read(reply, "uh", &result, &fd);
                if (r >= 0) {
                        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                        r = fd < 0 ? -errno : 0;
                }
                result = (int) MIN((unsigned) result, (unsigned) INT32_MAX);
                break;
        case BUILDER_LIST:
                r = builder_read_items(b, reply);
                break;
        case BUILDER_READ_MOUNTS:
                r = builder_read_table(b, reply);
                break;
        default:
                break;
        }
        if (r < 0) {
                safe_close(fd);
                builder_fail_running(b, NSM_ERROR_SYSTEM, -EPROTO, "The view builder broke the protocol.");
                builder_restart(b, "its answer could not be read");
                return 0;
        }
        builder_finish(b, result, NULL, &fd);
        safe_close(fd);
        (void) builder_send_next(b);
        return 0;
}

static void on_registry_opened(BuilderReply *reply, void *userdata) {
        if (reply->error)
                log_error("%s", nsm_error_message(reply->error));
        else if (reply->result > 0)
                log_debug("Created the namespace registry.");
}

static const char *const builder_methods[_BUILDER_CALL_KIND_MAX] = {
        [BUILDER_OPEN_REGISTRY] = "OpenRegistry",
        [BUILDER_BUILD] = "Build",
        [BUILDER_UNPIN] = "Unpin",
        [BUILDER_LIST] = "List",
        [BUILDER_READ_MOUNTS] = "ReadMounts",
};

/* The request as a call of the builder's interface (builder-message.h), without waiting: the
 * bus writes what the socket takes and the rest as the loop finds room. */
static int builder_call(Builder *b, const BuilderRequest *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const BuilderCall *c = &q->call;
        int r;

        r = sd_bus_message_new_method_call(b->bus, &m, NULL, CHILD_OBJECT_PATH, BUILDER_INTERFACE,
                                           builder_methods[c->kind]);
        if (r < 0)
                return r;
        switch (c->kind) {
        case BUILDER_OPEN_REGISTRY:
                r = bus_message_append_bytes(m, c->registry_pin);
                if (r >= 0)
                        r = bus_message_append_bytes(m, c->pins_dir);
                break;
        case BUILDER_BUILD:
                r = sd_bus_message_append(m, "s", c->name);
                if (r >= 0)
                        r = bus_message_append_bytes(m, c->subtree_root);
                if (r >= 0)
                        r = sd_bus_message_append(m, "u", (uint32_t) c->propagation);
                if (r >= 0)
                        r = bus_message_append_bytes_strv(m, c->shared_subtrees);
                break;
        case BUILDER_UNPIN:
                r = bus_message_append_bytes(m, c->name);
                break;
        case BUILDER_READ_MOUNTS:
                r = sd_bus_message_open_container(m, 'a', "h");
                if (r >= 0 && q->fd >= 0)
                        r = sd_bus_message_append(m, "h", q->fd);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_append(m, "b", c->with_ids);
                break;
        default:
                break;
        }
        if (r < 0)
                return r;
        /* Its deadline is the timer's (on_builder_timeout), not sd-bus's. */
        r = sd_bus_call_async(b->bus, NULL, m, on_builder_reply, b, UINT64_MAX);
        if (r < 0)
                return r;
        return sd_bus_message_get_cookie(m, &b->cookie);
}

static int builder_send_next(Builder *b) {
        BuilderRequest *q;
        int r;

        if (b->running || !b->queue || !b->bus)
                return 0;
        q = b->queue;
        b->queue = q->next;
        if (!b->queue)
                b->queue_tail = NULL;
        q->next = NULL;
        b->running = q;

        r = builder_call(b, q);
        if (r >= 0)
                r = builder_arm_timer(b, q->deadline);
        if (r < 0) {
                builder_fail_running(b, NSM_ERROR_SYSTEM, r, "Failed to send the request to the view builder.");
                builder_restart(b, "a request could not be sent");
                return r;
        }
        return 0;
}

static int builder_copy_strv(char **l, char ***ret) {
        for (char **i = l; i && *i; i++)
                if (strv_extend(ret, *i) < 0)
                        return -ENOMEM;
        return 0;
}

/* Queues a request (builder-message.h). 'first' puts it ahead of the queue. The fd is dup'ed. */
static int builder_enqueue(Builder *b, bool first, const BuilderCall *call, int fd, uint64_t deadline,
                           BuilderDoneFunc done, void *userdata) {
        BuilderRequest *q;
        int r;

        if (!b)
                return -ESHUTDOWN;
        q = calloc(1, sizeof(BuilderRequest));
        if (!q)
                return -ENOMEM;
        *q = (BuilderRequest) { .call = { .kind = call->kind, .propagation = call->propagation,
                                          .with_fd = call->with_fd, .with_ids = call->with_ids },
                                .fd = -EBADF, .deadline = deadline, .done = done, .userdata = userdata };
        if ((call->registry_pin && !(q->call.registry_pin = strdup(call->registry_pin))) ||
            (call->pins_dir && !(q->call.pins_dir = strdup(call->pins_dir))) ||
            (call->name && !(q->call.name = strdup(call->name))) ||
            (call->subtree_root && !(q->call.subtree_root = strdup(call->subtree_root))) ||
            builder_copy_strv(call->shared_subtrees, &q->call.shared_subtrees) < 0) {
                builder_request_free(q);
                return -ENOMEM;
        }
        if (fd >= 0) {
                q->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (q->fd < 0) {
                        r = -errno;
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

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
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
        if (b->pid == 0)
                builder_main(pair[1]);
        safe_close(pair[1]);
        b->restarts++;
        if (b->pidfd < 0) {
                safe_close(pair[0]);
                return -errno;
        }
        /* Its handshake once per builder, then each request a call. */
        r = sd_bus_new(&b->bus);
        if (r < 0) {
                safe_close(pair[0]);
                return r;
        }
        r = sd_bus_set_fd(b->bus, pair[0], pair[0]);
        if (r < 0) {
                safe_close(pair[0]);
                return r;
        }
        r = sd_bus_negotiate_fds(b->bus, true);
        if (r >= 0)
                r = sd_bus_start(b->bus);
        if (r >= 0)
                r = sd_bus_attach_event(b->bus, b->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        r = sd_event_add_child_pidfd(b->event, &b->exit_source, b->pidfd, WEXITED, on_builder_exit, b);
        if (r < 0)
                return r;

        /* Every builder first opens the registry (the pin at registry_pin, or a new one), ahead
         * of whatever waits. */
        return builder_enqueue(b, true, &(BuilderCall) { .kind = BUILDER_OPEN_REGISTRY, .registry_pin = b->registry_pin,
                                                         .pins_dir = b->pins_dir },
                               -EBADF, 0, on_registry_opened, b);
}

int builder_new(sd_event *event, ChildSet *children, const char *registry_pin, const char *pins_dir, Builder **ret) {
        _cleanup_(builder_freep) Builder *b = calloc(1, sizeof(Builder));
        int r;

        if (!b)
                return -ENOMEM;
        b->event = sd_event_ref(event);
        b->children = children;
        b->pidfd = -EBADF;
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
                builder_fail_running(b, NSM_ERROR_SYSTEM, -ESHUTDOWN, NSM_SHUTTING_DOWN);
        while (b->queue) {
                b->running = b->queue;
                b->queue = b->queue->next;
                builder_fail_running(b, NSM_ERROR_SYSTEM, -ESHUTDOWN, NSM_SHUTTING_DOWN);
        }
        b->queue_tail = NULL;
        /* Closing the socket ends the builder (it exits on EOF); no reply is awaited. */
        b->exit_source = sd_event_source_disable_unref(b->exit_source);
        b->timer_source = sd_event_source_disable_unref(b->timer_source);
        builder_close_bus(b);
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
        BuilderCall c = { .kind = BUILDER_BUILD, .name = (char *) spec->name, .subtree_root = (char *) spec->subtree_root,
                          .propagation = spec->propagation, .shared_subtrees = spec->shared_subtrees };
        return builder_enqueue(b, false, &c, -EBADF, deadline, done, userdata);
}

int builder_unpin(Builder *b, const char *name, uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        return builder_enqueue(b, false, &(BuilderCall) { .kind = BUILDER_UNPIN, .name = (char *) name }, -EBADF,
                               deadline, done, userdata);
}

int builder_list(Builder *b, uint64_t deadline, BuilderDoneFunc done, void *userdata) {
        return builder_enqueue(b, false, &(BuilderCall) { .kind = BUILDER_LIST }, -EBADF, deadline, done, userdata);
}

int builder_read_mounts(Builder *b, int ns_fd, bool with_ids, uint64_t deadline, BuilderDoneFunc done,
                        void *userdata) {
        return builder_enqueue(b, false,
                               &(BuilderCall) { .kind = BUILDER_READ_MOUNTS, .with_fd = ns_fd >= 0, .with_ids = with_ids },
                               ns_fd, deadline, done, userdata);
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
