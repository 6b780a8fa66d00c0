/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "bus-errors.h"
#include "fs-util.h"
#include "kept-connection.h"
#include "list.h"
#include "log.h"
#include "manager-dbus.h"
#include "pipelined-open.h"
#include "private-bus.h"

/* Connections served at once; the others wait in the listen backlog (SOMAXCONN), in order,
 * until some go. sd-event asks every attached connection for its events and timeout at each
 * turn of the loop, so a turn costs O(connections): a burst of 1,000 logins served all at
 * once took three times as long as 64 at a time (bench/bench_burst.py). */
#define PRIVATE_BUS_CONNECTIONS_MAX 64U

/* A login's connection lives for one call, answered by its deadline (OperationTimeoutSec=,
 * from the call's arrival, right after connecting). One still open after that and this
 * much more is nobody's login any more: a login process stopped half-way (a user may stop
 * her own su: its real uid is hers) would otherwise hold its place for ever, and 64 of them
 * every login on the machine. */
#define PRIVATE_BUS_LIFETIME_SLACK_USEC USEC_PER_SEC

struct PrivateBus {
        Manager *manager;
        int fd;                          /* until sd-bus has it (or pipelined-open.h took it) */
        struct ucred peer;
        sd_bus *bus;
        sd_event_source *first_source;   /* waits for the first bytes, before there is a bus */
        sd_event_source *free_source;    /* frees it from the event loop, not from its own callback */
        sd_event_source *lifetime_source;
        sd_event_source *auth_source;    /* drives the authentication (on_authenticating()) */
        sd_event_source *keep_source;    /* hands it to kept-connection.c once OpenSession is answered */
        sd_bus_slot *session_filter;     /* from then on: kept-connection.h's rule */
        char *session_user, *session_id; /* that OpenSession's */
        PrivateBus *prev, *next;
};

/* After running out of fds, accept() is tried again this much later (or when a connection goes). */
#define PRIVATE_BUS_RETRY_USEC (100 * USEC_PER_MSEC)

/* A free place: take the next connection from the backlog (unless accept() is pausing). */
static void accept_more(Manager *m) {
        if (m->private_source && !m->private_retry_source && m->n_private_buses < PRIVATE_BUS_CONNECTIONS_MAX)
                (void) sd_event_source_set_enabled(m->private_source, SD_EVENT_ON);
}

static PrivateBus *private_bus_free(PrivateBus *p) {
        Manager *m;

        if (!p)
                return NULL;
        m = p->manager;
        LIST_REMOVE(m->private_buses, p);
        m->n_private_buses--;
        accept_more(m);
        sd_event_source_disable_unref(p->free_source);
        sd_event_source_disable_unref(p->first_source);
        sd_event_source_disable_unref(p->lifetime_source);
        sd_event_source_disable_unref(p->auth_source);
        sd_event_source_disable_unref(p->keep_source);
        sd_bus_slot_unref(p->session_filter);
        /* Not flushed: a peer that went away reads nothing, and one that stays must not make us
         * wait. */
        sd_bus_close_unref(p->bus);
        safe_close(p->fd);
        free(p->session_user);
        free(p->session_id);
        free(p);
        return NULL;
}

static int on_free(sd_event_source *s, void *userdata) {
        private_bus_free(userdata);
        return 0;
}

static void private_bus_free_later(PrivateBus *p) {
        int r;

        if (p->free_source)
                return;
        r = sd_event_add_defer(p->manager->event, &p->free_source, on_free, p);
        if (r < 0)
                log_warning_errno(r, "Failed to schedule freeing a private connection, keeping it: %m");
}

static int on_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        private_bus_free_later(userdata);
        return 0;
}

static int on_lifetime_over(sd_event_source *s, uint64_t usec, void *userdata) {
        log_debug("Closing a private connection that outlived any call's deadline.");
        private_bus_free(userdata);
        return 0;
}

/* A login writes its call right behind the authentication, in one write (direct-call.h). The
 * sd-bus of Debian 12 (systemd 252), as a server, answers the authentication when it reads it
 * but leaves BEGIN, and the call behind it, for its next read of the socket, which never comes:
 * the login would wait for an answer to a call that is already in the daemon's buffer. (Later
 * sd-bus versions look again once the answer is written.) So while a connection
 * authenticates, it is processed again after every turn of the event loop; once it is up,
 * once more, which dispatches the call from the buffer, and no more: what the peer writes
 * after that is for the loop to read, or for kept-connection.c (on_keep()). */
static int on_authenticating(sd_event_source *s, void *userdata) {
        PrivateBus *p = userdata;
        int r;

        for (;;) {
                if (sd_bus_is_ready(p->bus) > 0) {
                        (void) sd_bus_process(p->bus, NULL);
                        break;
                }
                r = sd_bus_process(p->bus, NULL);
                if (r == 0)
                        return 0; /* still authenticating: more is to come from the peer */
                if (r < 0)
                        break; /* sd-bus's to handle: it disconnects, and on_disconnected() frees */
        }
        p->auth_source = sd_event_source_disable_unref(p->auth_source);
        return 0;
}

/* OpenSession was answered: the connection goes to kept-connection.c, as a plain socket. Only
 * once the reply is out and nothing else came, neither into sd-bus's queue nor into the
 * socket: a login that closes its session at once (pamtester) has its CloseSession served
 * here as any call. This runs ahead of the bus's own processing at the loop's next turn, so
 * sd-bus has read nothing more (it reads when it processes); what it would have read, and
 * drops with the bus, is only a message a client wrote behind OpenSession before its answer
 * came, which a login does not do. */
static int on_keep(sd_event_source *s, void *userdata) {
        PrivateBus *p = userdata;
        uint64_t n_write = 1, n_read = 1;
        int fd, waiting = 1, r;

        p->keep_source = sd_event_source_disable_unref(p->keep_source);
        if (p->free_source)
                return 0;
        if (sd_bus_get_n_queued_write(p->bus, &n_write) < 0 || n_write > 0 ||
            sd_bus_get_n_queued_read(p->bus, &n_read) < 0 || n_read > 0 ||
            ioctl(sd_bus_get_fd(p->bus), FIONREAD, &waiting) < 0 || waiting > 0)
                return 0;
        /* Our own reference to the socket: sd-bus closes its own with the bus (and only closes it). */
        fd = fcntl(sd_bus_get_fd(p->bus), F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                r = -errno;
        else
                r = kept_connection_new(p->manager, fd, p->session_user, p->session_id);
        if (r < 0 && r != -EDQUOT)
                log_warning_errno(r, "Failed to keep the connection of session '%s', its CloseSession comes on a new one: %m",
                                  p->session_id);
        private_bus_free(p);
        return 0;
}

/* Once OpenSession is answered, a connection carries that session's CloseSession and nothing
 * else, here as in kept-connection.c. */
static int on_session_message(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        PrivateBus *p = userdata;
        const char *user = NULL, *id = NULL, *what;
        uint8_t type;

        if (sd_bus_message_get_type(message, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL)
                return 0; /* the Disconnected sd-bus makes up, or nothing we would act on */
        if (streq_ptr(sd_bus_message_get_signature(message, true), "ss") &&
            sd_bus_message_read(message, "ss", &user, &id) >= 0)
                (void) sd_bus_message_rewind(message, true);
        what = kept_call_refusal(p->session_user, p->session_id, sd_bus_message_get_path(message),
                                 sd_bus_message_get_interface(message), sd_bus_message_get_member(message), user, id);
        if (!what)
                return 0;
        log_warning(KEPT_REFUSAL_FMT, p->session_id, p->session_user, what);
        private_bus_free_later(p);
        return 1; /* neither dispatched nor answered */
}

void private_bus_keep_for_session(Manager *m, sd_bus *bus, const char *user, const char *id) {
        PrivateBus *p;
        int r;

        for (p = m->private_buses; p; p = p->next)
                if (p->bus == bus)
                        break;
        if (!p || p->session_id)
                return; /* the system bus; or a second OpenSession on one connection: only the first */
        p->session_user = strdup(user);
        p->session_id = strdup(id);
        if (!p->session_user || !p->session_id) {
                log_oom();
                private_bus_free_later(p); /* unkept, and unrestricted: not served on */
                return;
        }
        r = sd_bus_add_filter(bus, &p->session_filter, on_session_message, p);
        if (r < 0) {
                log_warning_errno(r, "Failed to restrict the connection of session '%s', closing it: %m", id);
                private_bus_free_later(p);
                return;
        }
        /* From the event loop, once the reply is out, not from inside the bus's own dispatch;
         * and before the bus is processed again (on_keep()). */
        r = sd_event_add_defer(m->event, &p->keep_source, on_keep, p);
        if (r >= 0)
                r = sd_event_source_set_priority(p->keep_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0) {
                log_warning_errno(r, "Failed to keep the connection of session '%s', ignoring: %m", id);
                p->keep_source = sd_event_source_disable_unref(p->keep_source);
        }
}

/* sd-bus takes the connection: the bytes that came are still in the socket, for it to read. */
static int private_bus_start(PrivateBus *p) {
        Manager *m = p->manager;
        int r;

        r = sd_bus_new(&p->bus);
        if (r < 0)
                return r;
        r = sd_bus_set_fd(p->bus, p->fd, p->fd);
        if (r < 0)
                return r;
        p->fd = -EBADF;
        if ((r = sd_bus_set_server(p->bus, true, m->private_bus_id)) < 0 ||
            (r = sd_bus_negotiate_fds(p->bus, true)) < 0 ||
            (r = sd_bus_start(p->bus)) < 0 ||
            (r = sd_bus_match_signal_async(p->bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                           "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, NULL, p)) < 0 ||
            (r = manager_bus_add_objects(m, p->bus)) < 0 ||
            /* Not flushed when the loop exits (sd-bus's default): flushing a connection that has
             * not authenticated waits for its authentication, up to sd-bus's 25 s, and a
             * peer that says nothing would hold up the daemon's exit that long. */
            (r = sd_bus_set_close_on_exit(p->bus, false)) < 0 ||
            (r = sd_bus_attach_event(p->bus, m->event, SD_EVENT_PRIORITY_NORMAL)) < 0 ||
            (r = sd_event_add_post(m->event, &p->auth_source, on_authenticating, p)) < 0)
                return r;
        return 0;
}

/* The first bytes came (or the peer hung up): the login's OpenSession answered at once, or
 * the connection goes to sd-bus. */
static int on_first_bytes(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PrivateBus *p = userdata;
        int r;

        /* Out of the event loop's epoll first: kept-connection.c adds the fd to it again. */
        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
        r = pipelined_open(p->manager, p->fd, &p->peer);
        if (r == -EAGAIN && !(revents & (EPOLLHUP | EPOLLERR)) && sd_event_source_set_enabled(s, SD_EVENT_ON) >= 0)
                return 0;
        p->first_source = sd_event_source_disable_unref(p->first_source);
        if (r > 0) {
                p->fd = -EBADF; /* taken */
                private_bus_free(p);
                return 0;
        }
        r = private_bus_start(p);
        if (r < 0) {
                log_warning_errno(r, "Failed to set up a private connection, closing it: %m");
                private_bus_free(p);
        }
        return 0;
}

/* Takes 'fd'. With 'wait', its first bytes are awaited before anything else
 * (on_first_bytes()); else sd-bus serves it at once. */
static int private_bus_new(Manager *m, int fd, const struct ucred *peer, bool wait) {
        PrivateBus *p;
        int r;

        p = calloc(1, sizeof(PrivateBus));
        if (!p) {
                safe_close(fd);
                return -ENOMEM;
        }
        *p = (PrivateBus) { .manager = m, .fd = fd, .peer = *peer };
        LIST_PREPEND(m->private_buses, p);
        m->n_private_buses++;

        r = sd_event_add_time_relative(m->event, &p->lifetime_source, CLOCK_MONOTONIC,
                                       m->config.operation_timeout_usec + PRIVATE_BUS_LIFETIME_SLACK_USEC, 0,
                                       on_lifetime_over, p);
        if (r >= 0)
                r = wait ? sd_event_add_io(m->event, &p->first_source, fd, EPOLLIN, on_first_bytes, p)
                         : private_bus_start(p);
        if (r < 0) {
                private_bus_free(p);
                return r;
        }
        return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->private_retry_source = sd_event_source_disable_unref(m->private_retry_source);
        accept_more(m);
        return 0;
}

/* accept() failed for want of fds (the daemon's or the system's) and the connection stays in
 * the backlog, so the socket stays readable: without a pause the loop would spin on it, and
 * log as fast as it spins. */
static void pause_accepting(Manager *m, sd_event_source *s, int error) {
        int r;

        if (m->private_retry_source)
                return;
        log_full_errno(m->private_accept_failing ? LOG_DEBUG : LOG_WARNING, error,
                       "Failed to accept a private connection, trying again every %llu ms: %m",
                       (unsigned long long) (PRIVATE_BUS_RETRY_USEC / USEC_PER_MSEC));
        m->private_accept_failing = true;
        r = sd_event_add_time_relative(m->event, &m->private_retry_source, CLOCK_MONOTONIC, PRIVATE_BUS_RETRY_USEC, 0,
                                       on_retry, m);
        if (r < 0) {
                log_warning_errno(r, "Failed to schedule accepting again, listening on: %m");
                return;
        }
        (void) sd_event_source_set_enabled(s, SD_EVENT_OFF);
}

static int on_connection(sd_event_source *s, int listen_fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;

        for (;;) {
                struct ucred ucred;
                socklen_t len = sizeof ucred;
                int fd, r;

                if (m->n_private_buses >= PRIVATE_BUS_CONNECTIONS_MAX) {
                        /* The rest waits in the backlog until a connection goes (private_bus_free). */
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
                if (m->private_accept_failing) {
                        log_info("Accepting private connections again.");
                        m->private_accept_failing = false;
                }
                /* The socket's mode keeps others out; this keeps them out whatever the mode. */
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &ucred, &len) < 0 || ucred.uid != 0) {
                        safe_close(fd);
                        continue;
                }
                /* Most logins are answered here, from what they wrote right behind connecting. */
                r = pipelined_open(m, fd, &ucred);
                if (r > 0)
                        continue;
                r = private_bus_new(m, fd, &ucred, /* wait= */ r == -EAGAIN);
                if (r < 0)
                        log_warning_errno(r, "Failed to set up a private connection, ignoring: %m");
        }
}

int private_bus_listen(Manager *m) {
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
        } addr = { .un.sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = sd_id128_randomize(&m->private_bus_id);
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
        r = sd_event_add_io(m->event, &m->private_source, fd, EPOLLIN, on_connection, m);
        if (r < 0)
                return r;
        r = sd_event_source_set_io_fd_own(m->private_source, true);
        if (r < 0)
                return r;
        TAKE_FD(fd);
        return 0;
}

void private_bus_done(Manager *m) {
        m->private_retry_source = sd_event_source_disable_unref(m->private_retry_source);
        if (m->private_source) {
                m->private_source = sd_event_source_disable_unref(m->private_source);
                (void) unlink(NSM_PRIVATE_SOCKET);
        }
        while (m->private_buses)
                private_bus_free(m->private_buses);
        kept_connections_free(m);
}
