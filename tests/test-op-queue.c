/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/op-queue.c: one operation at a time in order of arrival, deadlines counted
 * from arrival, failures answered once. On a real sd-event loop; no root needed. TAP output. */
#include <string.h>
#include <time.h>

#include "op-queue.h"
#include "tap.h"
#include "time-util.h"

typedef struct Op {
        const char *name;
        int start_result;        /* what start returns */
        bool complete_at_once;   /* op_queue_complete() from start */
        QueuedOp *running;       /* set by start until the test completes it */
        int n_started, n_failed;
        NsmErrorCode failed_code;
        int failed_errno;
        char *order;             /* the shared record of starts, "ABC" */
} Op;

static int op_start(QueuedOp *q, void *userdata) {
        Op *op = userdata;

        op->n_started++;
        strncat(op->order, op->name, 1);
        if (op->start_result < 0)
                return op->start_result;
        if (op->complete_at_once)
                op_queue_complete(q);
        else
                op->running = q;
        return 0;
}

static void op_fail(const NsmError *error, void *userdata) {
        Op *op = userdata;

        op->n_failed++;
        op->failed_code = error->code;
        op->failed_errno = error->errno_value;
}

/* Runs the loop until nothing is pending now, or until 'until' says stop (then 1). */
static int run(sd_event *e, bool (*until)(void *), void *userdata) {
        for (int i = 0; i < 200; i++) {   /* at most 20 s: a deadline that never fires fails the test */
                if (until && until(userdata))
                        return 1;
                int r = sd_event_run(e, until ? 100 * USEC_PER_MSEC : 0);
                if (r < 0)
                        return r;
                if (r == 0 && !until)
                        return 0;
        }
        return until ? 0 : 1;
}

static bool has_failed(void *userdata) {
        return ((Op *) userdata)->n_failed > 0;
}

static void test_one_at_a_time_in_order(void) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        char order[8] = "";
        Op a = { .name = "A", .order = order }, b = { .name = "B", .order = order },
           c = { .name = "C", .order = order, .complete_at_once = true };
        OpQueue *q;

        check(sd_event_new(&e) >= 0, "an event loop");
        q = op_queue_new(e);
        check(q, "a queue");
        check(op_queue_add(q, 0, op_start, op_fail, &a) == 0, "A queued");
        check(op_queue_add(q, 0, op_start, op_fail, &b) == 0, "B queued");
        check(op_queue_add(q, 0, op_start, op_fail, &c) == 0, "C queued");
        check(a.n_started == 0, "nothing starts inside op_queue_add()");
        run(e, NULL, NULL);
        check(strcmp(order, "A") == 0, "A alone runs (%s)", order);
        op_queue_complete(TAKE_PTR(a.running));
        run(e, NULL, NULL);
        check(strcmp(order, "AB") == 0, "B follows A (%s)", order);
        op_queue_complete(TAKE_PTR(b.running));
        run(e, NULL, NULL);
        check(strcmp(order, "ABC") == 0, "C follows B (%s)", order);
        check(a.n_failed + b.n_failed + c.n_failed == 0, "none failed");
        op_queue_free(q);
}

static void test_deadline_passes_in_the_queue(void) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        char order[8] = "";
        Op a = { .name = "A", .order = order }, b = { .name = "B", .order = order };
        OpQueue *q;

        check(sd_event_new(&e) >= 0, "an event loop");
        q = op_queue_new(e);
        check(op_queue_add(q, 0, op_start, op_fail, &a) == 0, "A queued, no deadline");
        check(op_queue_add(q, now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_MSEC, op_start, op_fail, &b) == 0,
              "B queued with a deadline");
        check(run(e, has_failed, &b) == 1, "B fails while A still runs");
        check(b.n_started == 0 && b.n_failed == 1, "B never started, failed once");
        check(b.failed_code == NSM_ERROR_TIMED_OUT, "B failed as TimedOut (%d)", (int) b.failed_code);
        check(a.n_started == 1 && a.running && a.n_failed == 0, "A runs on");
        op_queue_complete(TAKE_PTR(a.running));
        run(e, NULL, NULL);
        check(b.n_started == 0 && b.n_failed == 1, "B is not started nor failed again after A");
        op_queue_free(q);
}

static void test_failed_start_and_free(void) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        char order[8] = "";
        Op a = { .name = "A", .order = order, .start_result = -EIO }, b = { .name = "B", .order = order },
           c = { .name = "C", .order = order };
        OpQueue *q;

        check(sd_event_new(&e) >= 0, "an event loop");
        q = op_queue_new(e);
        check(op_queue_add(q, 0, op_start, op_fail, &a) == 0, "A queued");
        check(op_queue_add(q, 0, op_start, op_fail, &b) == 0, "B queued");
        check(op_queue_add(q, 0, op_start, op_fail, &c) == 0, "C queued");
        run(e, NULL, NULL);
        check(a.n_failed == 1 && a.failed_code == NSM_ERROR_SYSTEM && a.failed_errno == EIO,
              "A's start failed: answered with its errno");
        check(strcmp(order, "AB") == 0 && b.running, "B runs after A's failure (%s)", order);
        /* Freed with B running and C waiting: C fails as cancelled, B finishes later. */
        op_queue_free(q);
        check(c.n_started == 0 && c.n_failed == 1 && c.failed_errno == ECANCELED, "C cancelled with the queue");
        check(b.n_failed == 0, "B, running, is not failed by the free");
        op_queue_complete(TAKE_PTR(b.running));
        check(true, "B completes after its queue is gone");
}

int main(void) {
        test_one_at_a_time_in_order();
        test_deadline_passes_in_the_queue();
        test_failed_start_and_free();
        return tap_finish();
}
