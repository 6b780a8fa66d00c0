/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "bus-errors.h"
#include "fs-util.h"
#include "list.h"
#include "log.h"
#include "private-bus.h"
#include "process-util.h"

/* Connections served at once; the others wait, in order, until some go. sd-event asks every
 * attached connection for its events and timeout at each turn of the loop, so a turn costs
 * O(connections): a burst of 1,000 logins served all at once took three times as long as 64
 * at a time (bench/bench_burst.py). */
#define PRIVATE_BUS_CONNECTIONS_MAX 64U

/* Places by the real uid of the process that connected. Every login through su or sudo is
 * root's (the socket refuses anybody else), but its real uid is the user's who ran it, and she
 * may stop her own su (SIGSTOP) while its pam_nsmanager holds a connection, as many times as she
 * likes: without this, 64 of them kept every login on the machine out until they outlived their
 * deadline. A real uid other than root's is served 4 at a time, and has at most 16 more waiting;
 * beyond that its connections are closed at once (those logins follow LoginWithoutView=).
 * Root's own logins (sshd, login, cron, systemd --user) share the rest, in order. A waiting
 * connection costs an fd, nothing per turn of the loop. */
#define PRIVATE_BUS_PER_UID_MAX 4U
#define PRIVATE_BUS_WAITING_PER_UID_MAX 16U
/* Waiting connections of all uids: beyond this, new ones stay in the listen backlog. */
#define PRIVATE_BUS_WAITING_MAX 256U
/* Every per-uid cap has a global one below the limit it protects, with a reserve for root:
 * users other than root together are served at most 48 at a time and have at most 192
 * waiting, beyond that their connections are closed at once. 12 users (or 16 waiting lists)
 * would fill the places otherwise, and root's logins would wait in the backlog behind them. */
#define PRIVATE_BUS_USERS_MAX (PRIVATE_BUS_CONNECTIONS_MAX - 16U)
#define PRIVATE_BUS_USERS_WAITING_MAX (PRIVATE_BUS_WAITING_MAX - 64U)

/* A login's connection lives for one call, answered by its deadline (OperationTimeoutSec=,
 * from the call's arrival, right after connecting). One still open after that and this much
 * more is nobody's login any more: a login process stopped half-way would otherwise hold its
 * place for ever. Counted from when it is served: a connection that waited for its place has
 * not written its call yet (sd-bus has not answered its authentication). */
#define PRIVATE_BUS_LIFETIME_SLACK_USEC USEC_PER_SEC

/* After running out of fds, accept() is tried again this much later (or when a connection goes). */
#define PRIVATE_BUS_RETRY_USEC (100 * USEC_PER_MSEC)

typedef struct PrivateBus PrivateBus;

/* The listening socket and the connections it accepted. */
struct PrivateServer {
        sd_event *event;
        const ManagerConfig *config;     /* the owner's: OperationTimeoutSec= as it is now */
        PrivateServerAddObjects add_objects;
        void *userdata;
        sd_id128_t id;
        sd_event_source *source;         /* the listening socket */
        sd_event_source *retry_source;   /* listens again after running out of fds */
        bool accept_failing;             /* logged once until accept() works again */
        bool closing;                    /* private_server_free() runs */
        PrivateBus *served;              /* connections served */
        unsigned n_served;
        PrivateBus *waiting, *waiting_tail; /* accepted, waiting for a place, oldest first */
        unsigned n_waiting;
        unsigned n_served_users, n_waiting_users; /* of those, real uid other than root */
};

struct PrivateBus {
        PrivateServer *server;
        uid_t ruid;                      /* the real uid of the process that connected */
        bool served;                     /* in the server's served list, else waiting */
        int fd;                          /* while it waits; then sd-bus has it */
        sd_bus *bus;
        sd_event_source *free_source;    /* frees it from the event loop, not from its own callback */
        sd_event_source *lifetime_source;
        PrivateBus *prev, *next;
};

static unsigned count_uid(PrivateBus *list, uid_t ruid) {
        unsigned n = 0;
        for (PrivateBus *p = list; p; p = p->next)
                n += p->ruid == ruid;
        return n;
}

static bool may_serve(PrivateServer *m, uid_t ruid) {
        return m->n_served < PRIVATE_BUS_CONNECTIONS_MAX &&
               (ruid == 0 || (m->n_served_users < PRIVATE_BUS_USERS_MAX &&
                              count_uid(m->served, ruid) < PRIVATE_BUS_PER_UID_MAX));
}

static void accept_more(PrivateServer *m) {
        if (m->source && !m->retry_source && m->n_waiting < PRIVATE_BUS_WAITING_MAX)
                (void) sd_event_source_set_enabled(m->source, SD_EVENT_ON);
}

static int private_bus_start(PrivateBus *p);

static void waiting_remove(PrivateServer *m, PrivateBus *p) {
        if (p->next)
                p->next->prev = p->prev;
        else
                m->waiting_tail = p->prev;
        if (p->prev)
                p->prev->next = p->next;
        else
                m->waiting = p->next;
        p->prev = p->next = NULL;
        m->n_waiting--;
        m->n_waiting_users -= p->ruid != 0;
}

static void waiting_append(PrivateServer *m, PrivateBus *p) {
        p->next = NULL;
        p->prev = m->waiting_tail;
        if (p->prev)
                p->prev->next = p;
        else
                m->waiting = p;
        m->waiting_tail = p;
        m->n_waiting++;
        m->n_waiting_users += p->ruid != 0;
}

static PrivateBus *private_bus_free(PrivateBus *p) {
        if (!p)
                return NULL;
        if (p->served) {
                LIST_REMOVE(p->server->served, p);
                p->server->n_served--;
                p->server->n_served_users -= p->ruid != 0;
        } else
                waiting_remove(p->server, p);
        sd_event_source_disable_unref(p->free_source);
        sd_event_source_disable_unref(p->lifetime_source);
        /* Not flushed: a peer that went away reads nothing, and one that stays must not make us
         * wait. */
        sd_bus_close_unref(p->bus);
        safe_close(p->fd);
        free(p);
        return NULL;
}

/* A place came free: the longest waiting connection that may have it, then the backlog. */
static void serve_waiting(PrivateServer *m) {
        PrivateBus *p = m->waiting;

        while (p && m->n_served < PRIVATE_BUS_CONNECTIONS_MAX) {
                PrivateBus *next = p->next;
                int r;

                if (may_serve(m, p->ruid)) {
                        waiting_remove(m, p);
                        r = private_bus_start(p);
                        if (r < 0) {
                                log_warning_errno(r, "Failed to set up a private connection, closing it: %m");
                                private_bus_free(p);
                        }
                }
                p = next;
        }
        accept_more(m);
}

static void private_bus_free_and_serve(PrivateBus *p) {
        PrivateServer *m = p->server;

        private_bus_free(p);
        if (!m->closing)
                serve_waiting(m);
}

static int on_free(sd_event_source *s, void *userdata) {
        private_bus_free_and_serve(userdata);
        return 0;
}

static int on_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        PrivateBus *p = userdata;
        int r;

        if (p->free_source)
                return 0;
        r = sd_event_add_defer(p->server->event, &p->free_source, on_free, p);
        if (r < 0)
                log_warning_errno(r, "Failed to schedule freeing a private connection, keeping it: %m");
        return 0;
}

static int on_lifetime_over(sd_event_source *s, uint64_t usec, void *userdata) {
        PrivateBus *p = userdata;

        log_debug("Closing a private connection (real uid %u) that outlived any call's deadline.", (unsigned) p->ruid);
        private_bus_free_and_serve(p);
        return 0;
}

/* sd-bus takes the connection, with what a login needs on it and nothing else. */
static int private_bus_start(PrivateBus *p) {
        PrivateServer *m = p->server;
        int r;

        LIST_PREPEND(m->served, p);
        m->n_served++;
        m->n_served_users += p->ruid != 0;
        p->served = true;
        r = sd_bus_new(&p->bus);
        if (r < 0)
                return r;
        r = sd_bus_set_fd(p->bus, p->fd, p->fd);
        if (r < 0)
                return r;
        p->fd = -EBADF;
        if ((r = sd_event_add_time_relative(m->event, &p->lifetime_source, CLOCK_MONOTONIC,
                                            m->config->operation_timeout_usec + PRIVATE_BUS_LIFETIME_SLACK_USEC, 0,
                                            on_lifetime_over, p)) < 0 ||
            (r = sd_bus_set_server(p->bus, true, m->id)) < 0 ||
            (r = sd_bus_negotiate_fds(p->bus, true)) < 0 ||
            (r = sd_bus_start(p->bus)) < 0 ||
            /* A local match: on a peer-to-peer connection sd-bus sends no AddMatch, so there is
             * nothing to install and nothing the bus could refuse. */
            (r = sd_bus_match_signal_async(p->bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                           "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, NULL, p)) < 0 ||
            (r = m->add_objects(p->bus, m->userdata)) < 0 ||
            /* Not flushed when the loop exits (sd-bus's default): flushing a connection that has
             * not authenticated waits for its authentication, up to sd-bus's 25 s, and a
             * peer that says nothing would hold up the daemon's exit that long. */
            (r = sd_bus_set_close_on_exit(p->bus, false)) < 0 ||
            (r = sd_bus_attach_event(p->bus, m->event, SD_EVENT_PRIORITY_NORMAL)) < 0)
                return r;
        return 0;
}

/* Takes 'fd': served now, waiting for a place, or closed (too many of this real uid's). */
static int private_bus_new(PrivateServer *m, int fd, uid_t ruid) {
        bool serve = may_serve(m, ruid);
        PrivateBus *p;
        int r;

        if (!serve && ruid != 0 && count_uid(m->waiting, ruid) >= PRIVATE_BUS_WAITING_PER_UID_MAX) {
                log_debug("Real uid %u has %u private connections waiting (%u per uid); closing its next.",
                          (unsigned) ruid, PRIVATE_BUS_WAITING_PER_UID_MAX, PRIVATE_BUS_WAITING_PER_UID_MAX);
                safe_close(fd);
                return 0;
        }
        if (!serve && ruid != 0 && m->n_waiting_users >= PRIVATE_BUS_USERS_WAITING_MAX) {
                log_debug("Users other than root have %u private connections waiting (%u in all); closing real uid "
                          "%u's next.", m->n_waiting_users, PRIVATE_BUS_USERS_WAITING_MAX, (unsigned) ruid);
                safe_close(fd);
                return 0;
        }
        p = calloc(1, sizeof(PrivateBus));
        if (!p) {
                safe_close(fd);
                return -ENOMEM;
        }
        *p = (PrivateBus) { .server = m, .fd = fd, .ruid = ruid };
        if (serve)
                r = private_bus_start(p);
        else {
                waiting_append(m, p);
                r = 0;
        }
        if (r < 0) {
                private_bus_free(p);
                return r;
        }
        return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        PrivateServer *m = userdata;

        m->retry_source = sd_event_source_disable_unref(m->retry_source);
        accept_more(m);
        return 0;
}

/* accept() failed for want of fds (the daemon's or the system's) and the connection stays in
 * the backlog, so the socket stays readable: without a pause the loop would spin on it, and
 * log as fast as it spins. */
static void pause_accepting(PrivateServer *m, sd_event_source *s, int error) {
        int r;

        if (m->retry_source)
                return;
        log_full_errno(m->accept_failing ? LOG_DEBUG : LOG_WARNING, error,
                       "Failed to accept a private connection, trying again every %llu ms: %m",
                       (unsigned long long) (PRIVATE_BUS_RETRY_USEC / USEC_PER_MSEC));
        m->accept_failing = true;
        r = sd_event_add_time_relative(m->event, &m->retry_source, CLOCK_MONOTONIC, PRIVATE_BUS_RETRY_USEC, 0,
                                       on_retry, m);
        if (r < 0) {
                log_warning_errno(r, "Failed to schedule accepting again, listening on: %m");
                return;
        }
        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

static int on_connection(sd_event_source *s, int listen_fd, uint32_t revents, void *userdata) {
        PrivateServer *m = userdata;

        for (;;) {
                struct ucred ucred;
                socklen_t len = sizeof ucred;
                uid_t ruid;
                int fd, r;

                if (m->n_waiting >= PRIVATE_BUS_WAITING_MAX) {
                        /* The rest waits in the backlog until a connection goes (serve_waiting()). */
                        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        return 0;
                }
                fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                                pause_accepting(m, s, errno);
                        else if (errno != EAGAIN && errno != EINTR)
                                log_warning_errno(errno, "Failed to accept a private connection, ignoring: %m");
                        return 0;
                }
                if (m->accept_failing) {
                        log_info("Accepting private connections again.");
                        m->accept_failing = false;
                }
                /* The socket's mode keeps others out; this keeps them out whatever the mode. */
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &ucred, &len) < 0 || ucred.uid != 0) {
                        safe_close(fd);
                        continue;
                }
                /* SO_PEERCRED has the effective uid, root for every su; the real one says who ran
                 * it. Read from /proc: should the process be gone already (and its pid reused),
                 * its connection is gone with it, as the module never hands it on. */
                r = process_real_uid(ucred.pid, &ruid);
                if (r < 0) {
                        safe_close(fd);
                        continue;
                }
                r = private_bus_new(m, fd, ruid);
                if (r < 0)
                        log_warning_errno(r, "Failed to set up a private connection, ignoring: %m");
        }
}

static int private_server_listen(PrivateServer *m) {
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
        } addr = { .un.sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = sd_id128_randomize(&m->id);
        if (r < 0)
                return r;
        r = mkdir_parents(NSM_PRIVATE_SOCKET, 0755);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        strncpy(addr.un.sun_path, NSM_PRIVATE_SOCKET, sizeof addr.un.sun_path - 1);
        (void) unlink(NSM_PRIVATE_SOCKET);
        /* Created 0600 (umask), never world-connectable for a moment. */
        mode_t old = umask(0177);
        r = bind(fd, &addr.sa, sizeof addr.un) < 0 ? -errno : 0;
        umask(old);
        if (r < 0)
                return r;
        if (listen(fd, SOMAXCONN) < 0)
                return -errno;
        r = sd_event_add_io(m->event, &m->source, fd, EPOLLIN, on_connection, m);
        if (r < 0)
                return r;
        r = sd_event_source_set_io_fd_own(m->source, true);
        if (r < 0)
                return r;
        TAKE_FD(fd);
        return 0;
}

int private_server_new(sd_event *event, const ManagerConfig *config, PrivateServerAddObjects add_objects,
                       void *userdata, PrivateServer **ret) {
        PrivateServer *m;
        int r;

        m = calloc(1, sizeof(PrivateServer));
        if (!m)
                return -ENOMEM;
        *m = (PrivateServer) { .event = sd_event_ref(event), .config = config, .add_objects = add_objects,
                               .userdata = userdata };
        r = private_server_listen(m);
        if (r < 0) {
                private_server_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

PrivateServer *private_server_free(PrivateServer *m) {
        if (!m)
                return NULL;
        m->closing = true;
        m->retry_source = sd_event_source_disable_unref(m->retry_source);
        if (m->source) {
                m->source = sd_event_source_disable_unref(m->source);
                (void) unlink(NSM_PRIVATE_SOCKET);
        }
        while (m->served)
                private_bus_free(m->served);
        while (m->waiting)
                private_bus_free(m->waiting);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}
