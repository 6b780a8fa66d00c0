/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
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

static int child_recv(int sock, ChildReply *r, int flags) {
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

        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
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

/* fork() copies the daemon's fd table — one nsfs fd per namespace — and the child's exit drops
 * every one of those references again: measured here, that made each child (and so each
 * CreateNamespace) cost about 0.1 ms more per 1,000 namespaces. The child therefore shares the
 * daemon's fd table (CLONE_FILES; memory is still copied, as with fork). In exchange, a child
 * closes exactly what it opened and nothing else, and the daemon learns that the child is done
 * from a pidfd, not from EOF on the socket (the child's end stays open in the shared table). */
static pid_t clone_sharing_files(int *ret_pidfd) {
        struct clone_args args = {
                .flags = CLONE_FILES | CLONE_PIDFD,
                .pidfd = (uint64_t) (uintptr_t) ret_pidfd,
                .exit_signal = SIGCHLD,
        };
        pid_t pid = (pid_t) syscall(SYS_clone3, &args, sizeof args);
        if (pid >= 0 || (errno != ENOSYS && errno != EPERM))
                return pid;

        /* clone3 filtered (some seccomp policies answer ENOSYS so that glibc falls back to
         * clone) or missing: a plain fork, which only costs the copy of the fd table. */
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

static void child_record(ChildReply *reply, ChildReply *last, bool *got, int *r,
                         int (*on_reply)(const ChildReply *reply, void *userdata), void *reply_userdata) {
        *got = true;
        if (on_reply) {
                int q = on_reply(reply, reply_userdata);
                if (q < 0 && *r == 0)
                        *r = q;
                child_reply_close_fds(reply);
                last->result = reply->result;
                last->stage = reply->stage;
        } else {
                child_reply_close_fds(last);
                *last = *reply;
        }
}

int child_run(ChildFunc fn, void *userdata, int (*on_reply)(const ChildReply *reply, void *userdata),
              void *reply_userdata, ChildReply *ret_last) {
        _cleanup_close_ int pidfd = -EBADF;
        int pair[2];
        ChildReply last = { .result = -EPROTO };
        bool got = false, exited = false;
        pid_t pid;
        int r = 0, status;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;

        pid = clone_sharing_files(&pidfd);
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
                int cr = fn(pair[1], userdata);
                _exit(cr < 0 ? 1 : 0);
        }

        /* Replies as they come (a large mount table does not fit the socket's buffer); once the
         * child has exited, what is still queued. */
        while (!exited) {
                struct pollfd p[2] = { { .fd = pair[0], .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        if (r == 0)
                                r = -errno;
                        break;
                }
                exited = p[1].revents & POLLIN;
                for (;;) {
                        ChildReply reply;
                        int k = child_recv(pair[0], &reply, MSG_DONTWAIT);
                        if (k == -EINTR)
                                continue;
                        if (k == -EAGAIN || k == 0)
                                break;
                        if (k < 0) {
                                if (r == 0)
                                        r = k;
                                break;
                        }
                        child_record(&reply, &last, &got, &r, on_reply, reply_userdata);
                }
        }
        (void) close(pair[0]);
        (void) close(pair[1]);

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
