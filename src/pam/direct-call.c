/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "bus-errors.h"
#include "bus-wire.h"
#include "direct-call.h"
#include "macros.h"
#include "time-util.h"

/* fds one read may bring: the reply's one, and room to see that more came (then it is not ours). */
#define FDS_MAX 4U

void direct_reply_done(DirectReply *reply) {
        reply->error_name = mfree(reply->error_name);
        reply->error_message = mfree(reply->error_message);
        reply->object = mfree(reply->object);
        reply->fd = safe_close(reply->fd);
}

int direct_connect(int *ret_fd) {
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
        } addr = { .un = { .sun_family = AF_UNIX, .sun_path = NSM_PRIVATE_SOCKET } };
        _cleanup_close_ int fd = -EBADF;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A Unix socket connects at once or not at all (-EAGAIN: the daemon's backlog is full). */
        if (connect(fd, &addr.sa, sizeof addr.un) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Waits for 'events' on fd until the deadline. */
static int wait_for(int fd, short events, uint64_t deadline) {
        for (;;) {
                uint64_t n = now_usec(CLOCK_MONOTONIC);
                struct pollfd p = { .fd = fd, .events = events };
                int r;

                if (n >= deadline)
                        return -ETIMEDOUT;
                r = poll(&p, 1, (int) MIN((deadline - n + 999) / 1000, (uint64_t) INT32_MAX));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r > 0)
                        return 0;
        }
}

static int write_all(int fd, const uint8_t *p, size_t n, uint64_t deadline) {
        while (n > 0) {
                /* MSG_NOSIGNAL: a daemon gone is -EPIPE here, not a SIGPIPE for the login. */
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
                int r;

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        r = wait_for(fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* nsmanagerd's answers to a login are a few hundred bytes (an error's sentence included): a
 * reply that does not fit is not one of them. Small enough for the login's stack, so no
 * allocation on every login. */
#define INBOX_MAX 4096U

/* What came from the daemon, not yet parsed, and the fds that came with it. */
typedef struct Inbox {
        uint8_t buf[INBOX_MAX];
        size_t size;
        int fds[FDS_MAX];
        size_t n_fds;
} Inbox;

static void inbox_done(Inbox *in) {
        for (size_t i = 0; i < in->n_fds; i++)
                safe_close(in->fds[i]);
        in->n_fds = 0;
}

static void inbox_consume(Inbox *in, size_t n) {
        memmove(in->buf, in->buf + n, in->size - n);
        in->size -= n;
}

/* Reads what is there: 0 with at least one byte more, -EAGAIN if nothing was, -ECONNRESET at
 * the end of the stream, -EPROTO for fds we had no room for. */
static int inbox_read(Inbox *in, int fd) {
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = in->buf + in->size, .iov_len = sizeof in->buf - in->size };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof control,
        };
        bool truncated;
        ssize_t n;

        if (iov.iov_len == 0)
                return -EBADMSG; /* more than a message of ours, and not one yet */
        n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;

        truncated = mh.msg_flags & MSG_CTRUNC;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                size_t k;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int received;

                        memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (in->n_fds < FDS_MAX)
                                in->fds[in->n_fds++] = received;
                        else {
                                safe_close(received);
                                truncated = true;
                        }
                }
        }
        if (truncated)
                return -EPROTO;
        if (n == 0)
                return -ECONNRESET;
        in->size += (size_t) n;
        return 0;
}

/* Reads more, waiting for it until the deadline, which is checked on every turn, also while
 * there is always more to read: a daemon that keeps writing anything but the answer holds no
 * login past timeout= (as bus_run_until_answered() in pam_nsmanager.c on the bus). */
static int inbox_read_more(Inbox *in, int fd, uint64_t deadline) {
        int r;

        if (now_usec(CLOCK_MONOTONIC) >= deadline)
                return -ETIMEDOUT;
        r = inbox_read(in, fd);
        if (r == -EAGAIN)
                r = wait_for(fd, POLLIN, deadline);
        return r;
}

static int reply_fill(const BusWireMessage *m, Inbox *in, DirectReply *ret) {
        const char *s;

        if (m->n_unix_fds > in->n_fds)
                return -EBADMSG;
        if (m->type == BUS_WIRE_ERROR) {
                ret->error_name = strdup(m->error_name);
                s = bus_wire_error_message(m);
                if (s)
                        ret->error_message = strdup(s);
                if (!ret->error_name || (s && !ret->error_message))
                        return -ENOMEM;
                return 0;
        }
        /* A method return: OpenSession's carries the namespace. */
        if (m->signature[0]) {
                uint32_t index;
                int r = bus_wire_read_object_and_fd(m, &s, &index);
                if (r < 0)
                        return r;
                ret->object = strdup(s);
                if (!ret->object)
                        return -ENOMEM;
                ret->fd = TAKE_FD(in->fds[index]);
        }
        return 0;
}

/* Reads the authentication's answer. */
static int read_auth(int fd, Inbox *in, uint64_t deadline) {
        for (;;) {
                int r = bus_wire_parse_auth_reply((const char *) in->buf, in->size);
                if (r > 0) {
                        inbox_consume(in, (size_t) r);
                        return 0;
                }
                if (r < 0)
                        return r;
                r = inbox_read_more(in, fd, deadline);
                if (r < 0)
                        return r;
        }
}

/* Reads until the answer to 'serial' is there, skipping anything else. */
static int read_reply(int fd, Inbox *in, uint32_t serial, uint64_t deadline, DirectReply *ret) {
        for (;;) {
                BusWireMessage m;
                int r;

                r = bus_wire_parse_message(in->buf, in->size, &m);
                if (r < 0)
                        return r;
                if (r > 0 && (m.type == BUS_WIRE_METHOD_RETURN || m.type == BUS_WIRE_ERROR) && m.reply_serial == serial)
                        return reply_fill(&m, in, ret);
                if (r > 0) {
                        /* Not ours (nsmanagerd sends no signals here, but a peer may): its fds,
                         * which came first, go with it. */
                        size_t k = MIN((size_t) m.n_unix_fds, in->n_fds);
                        for (size_t i = 0; i < k; i++)
                                safe_close(in->fds[i]);
                        memmove(in->fds, in->fds + k, (in->n_fds - k) * sizeof(int));
                        in->n_fds -= k;
                        inbox_consume(in, (size_t) r);
                        continue;
                }
                r = inbox_read_more(in, fd, deadline);
                if (r < 0)
                        return r;
        }
}

int direct_call(int fd, DirectAuth auth, uint32_t serial, const char *method, const char *user, const char *id,
                uint64_t deadline, DirectReply *reply) {
        _cleanup_free_ uint8_t *call = NULL, *request = NULL;
        Inbox in = {};
        size_t call_size, size;
        int r;

        r = bus_wire_method_call_ss(serial, reply, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, method, user, id, &call,
                                    &call_size);
        if (r < 0)
                return r;
        if (auth == DIRECT_AUTH_WAIT) {
                r = write_all(fd, (const uint8_t *) BUS_WIRE_AUTH_ROOT, BUS_WIRE_AUTH_ROOT_SIZE, deadline);
                if (r >= 0)
                        r = read_auth(fd, &in, deadline);
                if (r < 0)
                        goto finish;
        }
        /* One write: the authentication (pipelined) and the call behind it. */
        size = (auth == DIRECT_AUTH_PIPELINED ? BUS_WIRE_AUTH_ROOT_SIZE : 0) + call_size;
        request = malloc(size);
        if (!request) {
                r = -ENOMEM;
                goto finish;
        }
        if (auth == DIRECT_AUTH_PIPELINED)
                memcpy(request, BUS_WIRE_AUTH_ROOT, BUS_WIRE_AUTH_ROOT_SIZE);
        memcpy(request + size - call_size, call, call_size);

        r = write_all(fd, request, size, deadline);
        if (r < 0 || !reply)
                goto finish;
        *reply = (DirectReply) { .fd = -EBADF };
        if (auth == DIRECT_AUTH_PIPELINED)
                r = read_auth(fd, &in, deadline);
        if (r >= 0)
                r = read_reply(fd, &in, serial, deadline, reply);
        if (r < 0)
                direct_reply_done(reply);
finish:
        inbox_done(&in);
        return r;
}
