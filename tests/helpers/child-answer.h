/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* A real killable child (child.c) in a C test: started with a request, and the event loop run
 * until it has answered. For the tests of the children's messages. */
#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include "child.h"
#include "tap.h"

typedef struct Answer {
        bool done;
        NsmError error;
} Answer;

static inline void answer_done(const NsmError *error, IpcMessage *final, const char *data, size_t size,
                               void *userdata) {
        Answer *a = userdata;

        a->done = true;
        (void) nsm_error_copy(&a->error, error);
}

/* An event loop and a child set, as the daemon has them: sd-event watches children only with
 * SIGCHLD blocked. A failed check, and nothing to free, if either cannot be made. */
static inline bool child_test_setup(sd_event **ret_event, ChildSet **ret_set) {
        sigset_t ss;

        sigemptyset(&ss);
        sigaddset(&ss, SIGCHLD);
        (void) sigprocmask(SIG_BLOCK, &ss, NULL);
        *ret_event = NULL;
        *ret_set = NULL;
        if (sd_event_new(ret_event) < 0 || !(*ret_set = child_set_new(*ret_event))) {
                check(false, "an event loop and a child set");
                *ret_event = sd_event_unref(*ret_event);
                return false;
        }
        return true;
}

/* run: the function the child runs; fd: the one fd of its request, or -EBADF. Ten seconds. */
static inline int run_child(sd_event *e, ChildSet *s, ChildRequestFunc run, const void *request, size_t size, int fd,
                            Answer *a) {
        struct timespec ts;
        ChildSpec spec = { .description = "A test child", .run_request = run, .request = request,
                           .request_size = size, .request_fds = &fd, .n_request_fds = fd >= 0 ? 1 : 0,
                           .done = answer_done, .userdata = a };
        int r;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        spec.deadline = (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U + 10U * 1000000U;
        r = child_start(s, &spec);
        while (r >= 0 && !a->done)
                r = sd_event_run(e, UINT64_MAX);
        return r;
}
