/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/resource.h>
#include <sys/socket.h>

#include "bus-errors.h"
#include "bus-wire.h"
#include "kept-connection.h"
#include "list.h"
#include "log.h"

/* A CloseSession with the longest user name and session id nsmanagerd accepts is some 400
 * bytes; anything longer is not one. */
#define KEPT_MESSAGE_MAX 1024U

#define KEPT_CONNECTIONS_MAX 65536U

struct KeptConnection {
        Manager *manager;
        int fd;
        sd_event_source *io_source;
        char *user, *id;          /* the session it is kept for */
        uint8_t *buf;             /* what came so far (allocated when something comes) */
        size_t size;
        KeptConnection *prev, *next;
};

static KeptConnection *kept_connection_free(KeptConnection *k) {
        if (!k)
                return NULL;
        LIST_REMOVE(k->manager->kept_connections, k);
        k->manager->n_kept_connections--;
        sd_event_source_disable_unref(k->io_source);
        safe_close(k->fd);
        free(k->user);
        free(k->id);
        free(k->buf);
        free(k);
        return NULL;
}

void kept_connections_free(Manager *m) {
        while (m->kept_connections)
                kept_connection_free(m->kept_connections);
}

unsigned kept_connections_max_for_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                return KEPT_CONNECTIONS_MAX;
        return (unsigned) MIN((rlim_t) KEPT_CONNECTIONS_MAX, rl.rlim_cur / 4);
}

const char *kept_call_refusal(const char *session_user, const char *session_id, const char *path,
                              const char *interface, const char *member, const char *user, const char *id) {
        if (!streq_ptr(path, NSM_MANAGER_PATH) || !streq_ptr(interface, NSM_MANAGER_INTERFACE) ||
            !streq_ptr(member, "CloseSession"))
                return member ?: "a method call without a member";
        if (!user || !id)
                return "CloseSession with arguments other than two strings";
        if (!streq(user, session_user) || !streq(id, session_id))
                return "CloseSession of another session";
        return NULL;
}

/* The message that came, if it is the CloseSession this connection was kept for: 1 if it is
 * all there and is that, 0 if more is to come, -EBADMSG (with *ret_what saying what came)
 * otherwise. */
static int kept_connection_check(KeptConnection *k, const char **ret_what) {
        const char *user = NULL, *id = NULL;
        BusWireMessage m;
        int r;

        *ret_what = "something that is not a D-Bus message nsmanagerd reads there";
        r = bus_wire_parse_message(k->buf, k->size, &m);
        if (r == 0)
                return k->size < KEPT_MESSAGE_MAX ? 0 : -EBADMSG;
        if (r < 0)
                return r;
        if (m.type != BUS_WIRE_METHOD_CALL) {
                *ret_what = "a message that is not a method call";
                return -EBADMSG;
        }
        if (m.n_unix_fds > 0) {
                *ret_what = "a message with file descriptors";
                return -EBADMSG;
        }
        if ((size_t) r != k->size) {
                *ret_what = "more than one message";
                return -EBADMSG;
        }
        (void) bus_wire_read_string_pair(&m, &user, &id);
        *ret_what = kept_call_refusal(k->user, k->id, m.path, m.interface, m.member, user, id);
        return *ret_what ? -EBADMSG : 1;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        KeptConnection *k = userdata;
        const char *what;
        ssize_t n;
        int r;

        if (!k->buf) {
                k->buf = malloc(KEPT_MESSAGE_MAX);
                if (!k->buf) {
                        log_oom();
                        kept_connection_free(k);
                        return 0;
                }
        }
        /* Any fds sent along are closed by the kernel: no room for them here. */
        n = recv(k->fd, k->buf + k->size, KEPT_MESSAGE_MAX - k->size, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (n <= 0) {
                /* Hung up without CloseSession (or half of one): the session ends with its
                 * leader. */
                kept_connection_free(k);
                return 0;
        }
        k->size += (size_t) n;

        r = kept_connection_check(k, &what);
        if (r == 0)
                return 0;
        if (r < 0) {
                log_warning(KEPT_REFUSAL_FMT, k->id, k->user, what);
                kept_connection_free(k);
                return 0;
        }
        r = manager_close_session(k->manager, k->user, k->id);
        if (r < 0)
                log_debug_errno(r, "CloseSession of session '%s' of '%s' on its kept connection: %m", k->id, k->user);
        kept_connection_free(k);
        return 0;
}

int kept_connection_new(Manager *m, int fd, const char *user, const char *id) {
        KeptConnection *k;
        int r;

        /* Asked each time: an administrator may raise the limit of a running daemon (prlimit). */
        if (m->n_kept_connections >= kept_connections_max_for_limit()) {
                log_debug("%u connections kept, not keeping the one of session '%s'.", m->n_kept_connections, id);
                safe_close(fd);
                return -EDQUOT;
        }
        k = calloc(1, sizeof(KeptConnection));
        if (!k) {
                safe_close(fd);
                return -ENOMEM;
        }
        k->manager = m;
        k->fd = fd;
        LIST_PREPEND(m->kept_connections, k);
        m->n_kept_connections++;

        k->user = strdup(user);
        k->id = strdup(id);
        if (!k->user || !k->id) {
                kept_connection_free(k);
                return -ENOMEM;
        }
        log_debug("Kept the connection of session '%s' of '%s'.", id, user);
        /* Edge-triggered, as the session leaders' pidfds (namespace.c): a thousand logins ending
         * at once leave a thousand connections readable (at their end), and level-triggered
         * each turn of the loop would see all those not handled yet. on_readable() reads all
         * that can be there (what does not fit is refused), so no edge is missed. */
        r = sd_event_add_io(m->event, &k->io_source, fd, EPOLLIN | EPOLLET, on_readable, k);
        if (r >= 0)
                /* Ahead of the session leader's pidfd (namespace.c), which becomes readable at
                 * the same turn when the login writes CloseSession and exits: the session is
                 * to end by the call, not as a login that "exited without closing it". */
                r = sd_event_source_set_priority(k->io_source, SD_EVENT_PRIORITY_IMPORTANT);
        if (r < 0) {
                kept_connection_free(k);
                return r;
        }
        return 0;
}
