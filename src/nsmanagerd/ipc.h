/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macros.h"

/* Messages between the daemon and its helper processes (the view builder and the mount-work
 * children) over a SOCK_SEQPACKET socketpair: an int result (0, or a negative errno), flags,
 * a payload, and up to IPC_FDS_MAX fds (SCM_RIGHTS). A reply may span several messages: all
 * but the last carry IPC_MORE (a mount table larger than one message, say). On failure the
 * payload of the last message is a NUL-terminated sentence for the person who asked. */

#define IPC_PAYLOAD_MAX (16U * 1024U)
#define IPC_FDS_MAX 4U
#define IPC_MORE 0x1U

typedef struct IpcMessage {
        int result;
        uint32_t flags;
        size_t size;
        int fds[IPC_FDS_MAX];
        size_t n_fds;
        char payload[IPC_PAYLOAD_MAX];
} IpcMessage;

int ipc_send(int sock, int result, uint32_t flags, const void *payload, size_t size, const int *fds, size_t n_fds);
/* A final message with no payload (result 0) or a sentence (result < 0). Returns 'result'
 * (so a failing step can write: return ipc_send_error(sock, r, "…")), unless sending fails. */
int ipc_send_result(int sock, int result, const char *fmt, ...) _printf_(3, 4);
/* Sends data of any size as IPC_MORE messages, then a final empty one with 'result'. */
int ipc_send_data(int sock, const void *data, size_t size);

/* 1 for a message, 0 at EOF, -EAGAIN with MSG_DONTWAIT when nothing is queued, else negative
 * errno. Received fds are owned by the caller (O_CLOEXEC). */
int ipc_recv(int sock, IpcMessage *m, int flags);
void ipc_message_close_fds(IpcMessage *m);
/* The payload as a string: NULL unless it is non-empty and NUL-terminated. */
const char *ipc_message_text(const IpcMessage *m);
