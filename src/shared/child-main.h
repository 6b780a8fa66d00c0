/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "ipc.h"

/* The child's side of a killable child (the daemon's side, ChildSet, is child.h).
 * docs/processes.md: who runs what. */

/* Runs in the child with the request the daemon queued on 'sock' before the fork (one
 * ipc-fields.h message, ipc_send_request()) and the fds that came with it (the callee owns
 * them). Returns ≥ 0 once it sent its final answer on 'sock', or a negative errno with 'error'
 * naming the failure (unset: the errno names it), which is then sent as the answer. A request
 * it cannot decode is -EBADMSG. */
typedef int (*ChildRequestFunc)(int sock, const void *request, size_t size, int *fds, size_t n_fds, NsmError *error);

/* The older form, for children that read the daemon's memory as it was at the fork instead of a
 * request ('userdata' is the parent's pointer). docs/processes.md lists which still do, and
 * why. */
typedef int (*ChildFunc)(int sock, void *userdata, NsmError *error);

/* A killable child, from the fork to its exit: child_setup(), then 'run_request' on the
 * request read from 'sock' (or 'run' on 'userdata', when run_request is NULL), then the
 * failure as the answer if there is one. */
_noreturn_ void child_main(int sock, ChildRequestFunc run_request, ChildFunc run, void *userdata, const int *keep,
                           size_t n_keep);
