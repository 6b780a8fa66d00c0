/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "child.h"
#include "macros.h"

typedef struct ReplyHeader {
        int result;
        int stage;
} ReplyHeader;

int child_send(int sock, int result, int stage, const void *data, size_t size, const int *fds, size_t n_fds) {
        ReplyHeader h = { .result = result, .stage = stage };
        struct iovec iov[2] = {
                { .iov_base = &h, .iov_len = sizeof h },
                { .iov_base = (void *) data, .iov_len = data ? size : 0 },
        };
        union {
                struct cmsghdr cmsg;
                char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

        if (size > sizeof(((ChildReply *) NULL)->data) || n_fds > 4)
                return -E2BIG;
        if (n_fds > 0) {
                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
        }
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
                return -errno;
        return 0;
}

static int child_recv(int sock, ChildReply *r) {
        ReplyHeader h;
        union {
                struct cmsghdr cmsg;
                char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control = {};
        *r = (ChildReply) {};
        struct iovec iov[2] = {
                { .iov_base = &h, .iov_len = sizeof h },
                { .iov_base = r->data, .iov_len = sizeof r->data },
        };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = &control, .msg_controllen = sizeof control };
        ssize_t n;

        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -errno;
        if (n == 0)
                return 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        r->n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        memcpy(r->fds, CMSG_DATA(c), sizeof(int) * r->n_fds);
                }
        if ((size_t) n < sizeof h) {
                child_reply_close_fds(r);
                return -EPROTO;
        }
        r->result = h.result;
        r->stage = h.stage;
        r->data_size = (size_t) n - sizeof h;
        return 1;
}

void child_reply_close_fds(ChildReply *r) {
        for (size_t i = 0; i < r->n_fds; i++)
                r->fds[i] = safe_close(r->fds[i]);
        r->n_fds = 0;
}

int child_run(ChildFunc fn, void *userdata, int (*on_reply)(const ChildReply *reply, void *userdata),
              void *reply_userdata, ChildReply *ret_last) {
        int pair[2];
        ChildReply last = { .result = -EPROTO };
        bool got = false;
        pid_t pid;
        int r = 0, status;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;

        pid = fork();
        if (pid < 0) {
                r = -errno;
                (void) close(pair[0]);
                (void) close(pair[1]);
                return r;
        }
        if (pid == 0) {
                sigset_t ss;
                /* The daemon blocks these for sd-event; a child doing mount work should die
                 * normally if the daemon is killed with it. */
                sigemptyset(&ss);
                (void) sigprocmask(SIG_SETMASK, &ss, NULL);
                (void) close(pair[0]);
                int cr = fn(pair[1], userdata);
                _exit(cr < 0 ? 1 : 0);
        }
        (void) close(pair[1]);

        for (;;) {
                ChildReply reply;
                int k = child_recv(pair[0], &reply);
                if (k == -EINTR)
                        continue;
                if (k <= 0) {
                        if (k < 0 && r == 0)
                                r = k;
                        break;
                }
                got = true;
                if (on_reply) {
                        int q = on_reply(&reply, reply_userdata);
                        if (q < 0 && r == 0)
                                r = q;
                        child_reply_close_fds(&reply);
                        last.result = reply.result;
                        last.stage = reply.stage;
                } else {
                        child_reply_close_fds(&last);
                        last = reply;
                }
        }
        (void) close(pair[0]);

        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        break;

        /* With a callback, a child may legitimately have nothing to say (an empty list). */
        if (!got && !on_reply)
                r = r ?: -EPROTO;
        if (ret_last)
                *ret_last = last;
        else
                child_reply_close_fds(&last);
        return r;
}
