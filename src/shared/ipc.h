/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macros.h"
#include "nsm-error.h"

/* The answers of the children that still run on the daemon's memory as the fork left it
 * (ChildSpec.run: none is left; the others speak sd-bus, docs/processes.md)
 * over a SOCK_SEQPACKET socketpair: an int result (an answer's
 * value), an error (an NsmErrorCode: NSM_ERROR_NONE, or what went wrong, named by the process
 * that knew), flags, a payload, and up to IPC_FDS_MAX fds (SCM_RIGHTS). A reply may span
 * several messages: all but the last carry IPC_MORE (a mount table larger than one message,
 * say). A failure is a last message with its error, its errno in 'result' (for
 * NSM_ERROR_SYSTEM), and its sentence as the payload (NUL-terminated). */

#define IPC_PAYLOAD_MAX (16U * 1024U)
#define IPC_FDS_MAX 4U
#define IPC_MORE 0x1U

typedef struct IpcMessage {
        int result;
        NsmErrorCode error;
        uint32_t flags;
        size_t size;
        int fds[IPC_FDS_MAX];
        size_t n_fds;
        char payload[IPC_PAYLOAD_MAX];
} IpcMessage;

/* A message without error. */
int ipc_send(int sock, int result, uint32_t flags, const void *payload, size_t size, const int *fds, size_t n_fds);
/* The final message of a failure: e's code, errno and sentence. */
int ipc_send_error(int sock, const NsmError *e);
/* Sends data of any size as IPC_MORE messages, then a final empty one. */
int ipc_send_data(int sock, const void *data, size_t size);

/* 1 for a message, 0 at EOF, -EAGAIN with MSG_DONTWAIT when nothing is queued, else negative
 * errno. Received fds are owned by the caller (O_CLOEXEC). */
int ipc_recv(int sock, IpcMessage *m, int flags);
void ipc_message_close_fds(IpcMessage *m);
/* The payload as a string: NULL unless it is non-empty and NUL-terminated. */
const char *ipc_message_text(const IpcMessage *m);
/* The failure a final message carries into *ret (left unset if it carries none). */
int ipc_message_error(const IpcMessage *m, NsmError *ret);
