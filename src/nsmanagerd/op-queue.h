/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macros.h"
#include "nsm-error.h"

/* Operations on one user's namespace (or on the host) run one at a time, in order of arrival;
 * different namespaces proceed in parallel. Every operation has a deadline counted from its
 * arrival, so time spent waiting behind a slow one counts: one whose deadline passes while
 * it waits is answered TimedOut without ever starting.
 *
 * An operation starts with its 'start' function, which begins asynchronous work (a child, a
 * request to the builder) and calls op_queue_complete() when that work has answered — or
 * has been given up at its deadline: a stuck child does not hold up the queue. */

typedef struct OpQueue OpQueue;
typedef struct QueuedOp QueuedOp;

/* Begins the work; returns a negative errno if it could not start (then 'fail' is called with
 * that error). */
typedef int (*OpStartFunc)(QueuedOp *op, void *userdata);
/* The operation never ran: 'error' says why (its deadline passed in the queue, the queue was
 * freed, it could not start). */
typedef void (*OpFailFunc)(const NsmError *error, void *userdata);

OpQueue *op_queue_new(sd_event *event);
/* Fails what is still queued with 'why'; a running operation is left to finish. */
OpQueue *op_queue_free_with(OpQueue *q, const NsmError *why);
/* The same, with ECANCELED. */
OpQueue *op_queue_free(OpQueue *q);
static inline void op_queue_freep(OpQueue **q) {
        op_queue_free(*q);
}

int op_queue_add(OpQueue *q, uint64_t deadline, OpStartFunc start, OpFailFunc fail, void *userdata);
/* An operation is running (it may be making mounts whose records are not there yet). */
bool op_queue_running(const OpQueue *q);
/* The running operation 'op' is finished: the next one starts. */
void op_queue_complete(QueuedOp *op);
