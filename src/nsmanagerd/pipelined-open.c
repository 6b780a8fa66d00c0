/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "bus-errors.h"
#include "bus-wire.h"
#include "kept-connection.h"
#include "log.h"
#include "namespace-dbus.h"
#include "namespace.h"
#include "pipelined-open.h"

/* The authentication and an OpenSession with the longest user name and session id accepted
 * are some 450 bytes; more waiting than this is not a login's OpenSession alone. */
#define REQUEST_MAX 1024U

/* The answer: the authentication's (some 60 bytes) and the method return, whose object path
 * is the manager's prefix and a uid. */
#define ANSWER_MAX 512U

/* The call, if 'buf' holds exactly the authentication as root and, behind it, one
 * OpenSession(user, id) that asks for a reply: 1 and its serial and strings (pointing into
 * buf), 0 otherwise. */
static int parse_request(const uint8_t *buf, size_t size, uint32_t *ret_serial, const char **ret_user,
                         const char **ret_id) {
        BusWireMessage m;
        int r;

        if (size <= BUS_WIRE_AUTH_ROOT_SIZE || memcmp(buf, BUS_WIRE_AUTH_ROOT, BUS_WIRE_AUTH_ROOT_SIZE) != 0)
                return 0;
        r = bus_wire_parse_message(buf + BUS_WIRE_AUTH_ROOT_SIZE, size - BUS_WIRE_AUTH_ROOT_SIZE, &m);
        if (r <= 0 || (size_t) r != size - BUS_WIRE_AUTH_ROOT_SIZE)
                return 0;
        if (m.type != BUS_WIRE_METHOD_CALL || (m.flags & BUS_WIRE_FLAG_NO_REPLY_EXPECTED) || m.n_unix_fds > 0 ||
            !streq(m.path, NSM_MANAGER_PATH) || !streq_ptr(m.interface, NSM_MANAGER_INTERFACE) ||
            !streq(m.member, "OpenSession") || bus_wire_read_string_pair(&m, ret_user, ret_id) < 0)
                return 0;
        *ret_serial = m.serial;
        return 1;
}

/* The answer to the authentication and the call, in one write, with the namespace's fd. */
static int send_answer(Manager *m, int fd, uint32_t reply_serial, Namespace *ns) {
        _cleanup_free_ char *path = NULL;
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        uint8_t answer[ANSWER_MAX];
        struct iovec iov = { .iov_base = answer };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof control };
        struct cmsghdr *c;
        ssize_t n;
        int k, r;

        path = namespace_bus_path(ns);
        if (!path)
                return -ENOMEM;
        k = snprintf((char *) answer, sizeof answer, BUS_WIRE_AUTH_OK_FMT, SD_ID128_TO_STRING(m->private_bus_id));
        if (k < 0 || (size_t) k >= sizeof answer)
                return -ENOBUFS;
        /* Our first message: serial 1. */
        r = bus_wire_return_oh(1, reply_serial, path, answer + k, sizeof answer - (size_t) k);
        if (r < 0)
                return r;
        iov.iov_len = (size_t) k + (size_t) r;

        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &ns->mntns_fd, sizeof(int));

        /* A new connection's buffer is empty and far larger than this: all of it goes, or the
         * peer has gone. */
        n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
                return -errno;
        if ((size_t) n != iov.iov_len)
                return -EIO;
        return 0;
}

int pipelined_open(Manager *m, int fd, const struct ucred *peer) {
        uint8_t buf[REQUEST_MAX];
        const char *user, *id;
        uint32_t serial;
        Namespace *ns;
        ssize_t n;
        int r;

        n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : 0;
        if ((size_t) n >= sizeof buf || parse_request(buf, (size_t) n, &serial, &user, &id) <= 0)
                return 0;
        /* The checks of OpenSession's own success (manager-dbus.c); the peer is root. */
        if (!valid_session_id(id))
                return 0;
        ns = manager_get_namespace(m, user);
        if (!ns || !ns->ready)
                return 0;
        /* Recorded before anything is taken from the socket: if it fails, sd-bus serves the
         * call and answers the error. */
        r = manager_open_session(m, ns, id, peer->pid);
        if (r < 0)
                return 0;

        /* What was peeked, taken: the same bytes (nobody else reads this socket). What the
         * peer wrote since stays, for kept-connection.c to judge. */
        if (recv(fd, buf, (size_t) n, MSG_DONTWAIT) != n) {
                /* Not expected to happen; the session ends with its leader. */
                log_warning("Failed to take the OpenSession of session '%s' of '%s' from its connection, closing it.",
                            id, user);
                safe_close(fd);
                return 1;
        }
        r = send_answer(m, fd, serial, ns);
        if (r < 0) {
                log_debug_errno(r, "Failed to answer OpenSession of session '%s' of '%s' (the login has gone?): %m",
                                id, user);
                safe_close(fd);
                return 1;
        }
        r = kept_connection_new(m, fd, user, id);
        if (r < 0 && r != -EDQUOT)
                log_warning_errno(r, "Failed to keep the connection of session '%s', its CloseSession comes on a new one: %m",
                                  id);
        return 1;
}
