/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Mount work that changes the caller's mount namespace (unshare, setns, pivot_root) runs in a
 * short-lived child, so the daemon itself never leaves the host namespace. The child answers
 * over a socketpair: an int result (0 or negative errno), a "stage" telling which step
 * failed, optional bytes, and optional fds (SCM_RIGHTS). */

typedef struct ChildReply {
        int result;
        int stage;
        char data[4096];
        size_t data_size;
        int fds[4];
        size_t n_fds;
} ChildReply;

typedef int (*ChildFunc)(int sock, void *userdata);

/* Sends one reply from the child. */
int child_send(int sock, int result, int stage, const void *data, size_t size, const int *fds, size_t n_fds);

/* Forks (sharing the fd table: fn must close everything it opens, and nothing else),
 * runs fn(sock, userdata) in the child, and collects every reply until the child exits;
 * on_reply is called for each (may be NULL: then only the last reply is kept in *ret_last).
 * Returns -EPROTO if the child died without answering. Received fds belong to the caller. */
int child_run(ChildFunc fn, void *userdata, int (*on_reply)(const ChildReply *reply, void *userdata),
              void *reply_userdata, ChildReply *ret_last);

void child_reply_close_fds(ChildReply *r);
