/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <sys/socket.h>

#include "ipc.h"

typedef struct IpcHeader {
        int32_t result;
        uint32_t error;
        uint32_t flags;
} IpcHeader;

static int ipc_send_full(int sock, int result, NsmErrorCode error, uint32_t flags, const void *payload, size_t size,
                         const int *fds, size_t n_fds) {
        IpcHeader h = { .result = result, .error = (uint32_t) error, .flags = flags };
        struct iovec iov[2] = {
                { .iov_base = &h, .iov_len = sizeof h },
                { .iov_base = (void *) payload, .iov_len = payload ? size : 0 },
        };
        union {
                struct cmsghdr cmsg;
                char buf[CMSG_SPACE(sizeof(int) * IPC_FDS_MAX)];
        } control = {};
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

        if (size > IPC_PAYLOAD_MAX || n_fds > IPC_FDS_MAX)
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
        while (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

int ipc_send(int sock, int result, uint32_t flags, const void *payload, size_t size, const int *fds, size_t n_fds) {
        return ipc_send_full(sock, result, NSM_ERROR_NONE, flags, payload, size, fds, n_fds);
}

int ipc_send_error(int sock, const NsmError *e) {
        const char *text = nsm_error_message(e);
        size_t n = text ? MIN(strlen(text), (size_t) IPC_PAYLOAD_MAX - 1) : 0;
        _cleanup_free_ char *buf = n > 0 ? strndup(text, n) : NULL;
        int result = nsm_error_is_set(e) ? nsm_error_to_errno(e) : -EIO;

        return ipc_send_full(sock, result, nsm_error_is_set(e) ? e->code : NSM_ERROR_SYSTEM, 0, buf, buf ? n + 1 : 0,
                             NULL, 0);
}

int ipc_send_data(int sock, const void *data, size_t size) {
        const char *p = data;
        int r;

        while (size > 0) {
                size_t k = MIN(size, (size_t) IPC_PAYLOAD_MAX);
                r = ipc_send(sock, 0, IPC_MORE, p, k, NULL, 0);
                if (r < 0)
                        return r;
                p += k;
                size -= k;
        }
        return ipc_send(sock, 0, 0, NULL, 0, NULL, 0);
}

void ipc_message_close_fds(IpcMessage *m) {
        for (size_t i = 0; i < m->n_fds; i++)
                m->fds[i] = safe_close(m->fds[i]);
        m->n_fds = 0;
}

int ipc_recv(int sock, IpcMessage *m, int flags) {
        IpcHeader h;
        union {
                struct cmsghdr cmsg;
                char buf[CMSG_SPACE(sizeof(int) * IPC_FDS_MAX)];
        } control = {};
        struct iovec iov[2] = {
                { .iov_base = &h, .iov_len = sizeof h },
                { .iov_base = m->payload, .iov_len = sizeof m->payload },
        };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = &control, .msg_controllen = sizeof control };
        ssize_t n;

        m->n_fds = 0;
        m->size = 0;
        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        for (size_t i = 0; i < k; i++) {
                                int fd;
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                if (m->n_fds < IPC_FDS_MAX)
                                        m->fds[m->n_fds++] = fd;
                                else
                                        safe_close(fd);
                        }
                }
        if (n == 0 && m->n_fds == 0)
                return 0;
        if ((size_t) n < sizeof h || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                ipc_message_close_fds(m);
                return -EBADMSG;
        }
        if (h.error >= _NSM_ERROR_CODE_MAX) {
                ipc_message_close_fds(m);
                return -EBADMSG;
        }
        m->result = h.result;
        m->error = (NsmErrorCode) h.error;
        m->flags = h.flags;
        m->size = (size_t) n - sizeof h;
        return 1;
}

const char *ipc_message_text(const IpcMessage *m) {
        if (m->size == 0 || m->payload[m->size - 1] != 0)
                return NULL;
        return m->payload;
}

int ipc_message_error(const IpcMessage *m, NsmError *ret) {
        if (m->error == NSM_ERROR_NONE)
                return 0;
        if (m->error == NSM_ERROR_SYSTEM)
                return nsm_error_set_errnof(ret, m->result < 0 ? m->result : -EIO, "%s",
                                            ipc_message_text(m) ?: strerror(m->result < 0 ? -m->result : EIO));
        return nsm_error_setf(ret, m->error, "%s", ipc_message_text(m) ?: nsm_error_code_to_message(m->error));
}
