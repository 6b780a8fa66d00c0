/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <time.h>

#include "log.h"
#include "macros.h"
#include "op-queue.h"
#include "time-util.h"

struct QueuedOp {
        OpQueue *queue;
        uint64_t deadline;
        sd_event_source *timer;  /* the deadline, while it waits */
        OpStartFunc start;
        OpFailFunc fail;
        void *userdata;
        QueuedOp *next;
};

struct OpQueue {
        sd_event *event;
        QueuedOp *head, *tail;
        QueuedOp *running;
        sd_event_source *defer;  /* starts the next operation from the event loop */
        bool freeing;
};

static QueuedOp *queued_op_free(QueuedOp *op);

OpQueue *op_queue_new(sd_event *event) {
        assert(event);

        OpQueue *q = calloc(1, sizeof(OpQueue));
        if (!q)
                return NULL;
        q->event = sd_event_ref(event);
        return q;
}

OpQueue *op_queue_free_with(OpQueue *q, const NsmError *why) {
        if (!q)
                return NULL;
        q->freeing = true;
        while (q->head) {
                QueuedOp *op = q->head;
                q->head = op->next;
                op->fail(why, op->userdata);
                queued_op_free(op);
        }
        /* A running operation answers later through op_queue_complete(), which must not find a
         * dead queue: detach it. */
        if (q->running)
                q->running->queue = NULL;
        sd_event_source_disable_unref(q->defer);
        sd_event_unref(q->event);
        free(q);
        return NULL;
}

OpQueue *op_queue_free(OpQueue *q) {
        _cleanup_(nsm_error_done) NsmError why = {};

        (void) nsm_error_set(&why, NSM_ERROR_SYSTEM, -ECANCELED, "The operation was cancelled.");
        return op_queue_free_with(q, &why);
}

/* An operation whose deadline passed before it could start. */
static void op_timed_out(QueuedOp *op) {
        _cleanup_(nsm_error_done) NsmError e = {};

        (void) nsm_error_set(&e, NSM_ERROR_TIMED_OUT, 0, "The operation waited too long behind others "
                             "(OperationTimeoutSec=).");
        op->fail(&e, op->userdata);
}

static void op_unlink(OpQueue *q, QueuedOp *op) {
        QueuedOp *prev = NULL;

        for (QueuedOp *i = q->head; i; prev = i, i = i->next)
                if (i == op) {
                        if (prev)
                                prev->next = op->next;
                        else
                                q->head = op->next;
                        if (q->tail == op)
                                q->tail = prev;
                        op->next = NULL;
                        return;
                }
}

static QueuedOp *queued_op_free(QueuedOp *op) {
        if (!op)
                return NULL;
        sd_event_source_disable_unref(op->timer);
        free(op);
        return NULL;
}

static void op_queue_run(OpQueue *q) {
        while (!q->running && q->head) {
                QueuedOp *op = q->head;
                int r;

                op_unlink(q, op);
                op->timer = sd_event_source_disable_unref(op->timer);

                if (op->deadline > 0 && now_usec(CLOCK_MONOTONIC) >= op->deadline)
                        op_timed_out(op);
                else {
                        _cleanup_(nsm_error_done) NsmError e = {};

                        q->running = op;
                        r = op->start(op, op->userdata);
                        if (r >= 0)
                                continue;
                        q->running = NULL;
                        (void) nsm_error_set_errnof(&e, r, "The operation could not start: %m.");
                        op->fail(&e, op->userdata);
                }
                queued_op_free(op);
        }
}

/* The deadline passed while it waited: answered now, not when the queue gets to it. */
static int on_queued_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        QueuedOp *op = userdata;

        op_unlink(op->queue, op);
        op_timed_out(op);
        queued_op_free(op);
        return 0;
}

static int on_defer(sd_event_source *s, void *userdata) {
        op_queue_run(userdata);
        return 0;
}

static void queued_op_freep(QueuedOp **op) {
        if (*op)
                queued_op_free(*op);
}

int op_queue_add(OpQueue *q, uint64_t deadline, OpStartFunc start, OpFailFunc fail, void *userdata) {
        _cleanup_(queued_op_freep) QueuedOp *op = calloc(1, sizeof(QueuedOp));
        int r;

        assert(q);
        assert(start);
        assert(fail);

        if (!op)
                return -ENOMEM;
        *op = (QueuedOp) { .queue = q, .deadline = deadline, .start = start, .fail = fail, .userdata = userdata };

        /* Started from the event loop, never from inside the caller: 'start' may complete at
         * once, and a caller half-way through setting up must not see that. */
        if (!q->defer) {
                r = sd_event_add_defer(q->event, &q->defer, on_defer, q);
                if (r < 0)
                        return r;
        }
        if (deadline > 0) {
                r = sd_event_add_time(q->event, &op->timer, CLOCK_MONOTONIC, deadline, 0, on_queued_deadline, op);
                if (r < 0)
                        return r;
        }
        r = sd_event_source_set_enabled(q->defer, SD_EVENT_ONESHOT);
        if (r < 0)
                return r;

        if (q->tail)
                q->tail->next = op;
        else
                q->head = op;
        q->tail = TAKE_PTR(op);
        return 0;
}

void op_queue_complete(QueuedOp *op) {
        assert(op);

        OpQueue *q = op->queue;

        if (q) {
                q->running = NULL;
                if (q->head && !q->freeing)
                        (void) sd_event_source_set_enabled(q->defer, SD_EVENT_ONESHOT);
        }
        queued_op_free(op);
}

bool op_queue_running(const OpQueue *q) {
        return q && q->running;
}
