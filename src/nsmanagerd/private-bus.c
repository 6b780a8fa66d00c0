/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "bus-errors.h"
#include "fs-util.h"
#include "list.h"
#include "log.h"
#include "manager-dbus.h"
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
        sd_bus *bus;
        sd_event_source *free_source;    /* frees it from the event loop, not from its own callback */
        sd_event_source *lifetime_source;
        PrivateBus *prev, *next;
};

static PrivateBus *private_bus_free(PrivateBus *p) {
        Manager *m;

        if (!p)
                return NULL;
        m = p->manager;
        LIST_REMOVE(m->private_buses, p);
        m->n_private_buses--;
        /* A free place: take the next connection from the backlog. */
        if (m->private_source && m->n_private_buses < PRIVATE_BUS_CONNECTIONS_MAX)
                (void) sd_event_source_set_enabled(m->private_source, SD_EVENT_ON);
        sd_event_source_disable_unref(p->free_source);
        sd_event_source_disable_unref(p->lifetime_source);
        /* Not flushed: a peer that went away reads nothing, and one that stays must not make us
         * wait. */
        sd_bus_close_unref(p->bus);
        free(p);
        return NULL;
}

static int on_free(sd_event_source *s, void *userdata) {
        private_bus_free(userdata);
        return 0;
}

static int on_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        PrivateBus *p = userdata;
        int r;

        if (p->free_source)
                return 0;
        r = sd_event_add_defer(p->manager->event, &p->free_source, on_free, p);
        if (r < 0)
                log_warning_errno(r, "Failed to schedule freeing a private connection, keeping it: %m");
        return 0;
}

static int on_lifetime_over(sd_event_source *s, uint64_t usec, void *userdata) {
        log_debug("Closing a private connection that outlived any call's deadline.");
        private_bus_free(userdata);
        return 0;
}

static int private_bus_new(Manager *m, int fd) {
        PrivateBus *p;
        int r;

        p = calloc(1, sizeof(PrivateBus));
        if (!p) {
                safe_close(fd);
                return -ENOMEM;
        }
        p->manager = m;
        LIST_PREPEND(m->private_buses, p);
        m->n_private_buses++;

        r = sd_bus_new(&p->bus);
        if (r < 0) {
                safe_close(fd);
                private_bus_free(p);
                return r;
        }
        r = sd_bus_set_fd(p->bus, fd, fd);
        if (r < 0) {
                safe_close(fd);
                private_bus_free(p);
                return r;
        }
        if ((r = sd_bus_set_server(p->bus, true, m->private_bus_id)) < 0 ||
            (r = sd_bus_negotiate_fds(p->bus, true)) < 0 ||
            (r = sd_bus_start(p->bus)) < 0 ||
            (r = sd_bus_match_signal_async(p->bus, NULL, "org.freedesktop.DBus.Local", "/org/freedesktop/DBus/Local",
                                           "org.freedesktop.DBus.Local", "Disconnected", on_disconnected, NULL, p)) < 0 ||
            (r = manager_bus_add_objects(m, p->bus)) < 0 ||
            (r = sd_bus_attach_event(p->bus, m->event, SD_EVENT_PRIORITY_NORMAL)) < 0 ||
            (r = sd_event_add_time_relative(m->event, &p->lifetime_source, CLOCK_MONOTONIC,
                                            m->config.operation_timeout_usec + PRIVATE_BUS_LIFETIME_SLACK_USEC, 0,
                                            on_lifetime_over, p)) < 0) {
                private_bus_free(p);
                return r;
        }
        return 0;
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
                        if (errno != EAGAIN && errno != EINTR)
                                log_warning_errno(errno, "Failed to accept a private connection, ignoring: %m");
                        return 0;
                }
                /* The socket's mode keeps others out; this keeps them out whatever the mode. */
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &ucred, &len) < 0 || ucred.uid != 0) {
                        safe_close(fd);
                        continue;
                }
                r = private_bus_new(m, fd);
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
        if (m->private_source) {
                m->private_source = sd_event_source_disable_unref(m->private_source);
                (void) unlink(NSM_PRIVATE_SOCKET);
        }
        while (m->private_buses)
                private_bus_free(m->private_buses);
}
