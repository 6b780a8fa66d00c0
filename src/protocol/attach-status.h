/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "nsm-error.h"

/* The status writer of an attached command (attach-process.c, docs/attach.md): a killable child that
 * writes the command's status line ("EXITED 0\n") into the caller's status fd. Writing to a
 * pipe or a socket takes its lock, which a user can hold as long as she likes: the daemon
 * never writes it itself.
 *
 * Its request (docs/processes.md): an ipc-fields.h message of kind ATTACH_STATUS_REQUEST with
 * one field, the line (1 to ATTACH_STATUS_LINE_MAX bytes, no NUL), and the status fd beside
 * it. The answer is an empty message, or the failure. */

enum {
        ATTACH_STATUS_REQUEST = 1,
};

#define ATTACH_STATUS_LINE_MAX 64U

/* -EINVAL for a line the decoder would refuse. */
int attach_status_request_encode(const char *line, void **ret, size_t *ret_size);
/* The line (malloc'ed), or -EBADMSG. */
int attach_status_request_decode(const void *data, size_t size, char **ret_line);

/* The child's function (ChildRequestFunc, child-main.h), in src/children/attach-status-writer.c. */
int attach_status_child_run(int sock, const void *request, size_t size, int *fds, size_t n_fds, NsmError *error);
