/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/bus-request.c: a method call's request as one state machine. Its table, every
 * pair of state and event; then real calls over a peer-to-peer sd-bus connection on a socketpair
 * (no bus daemon, no root), each answered exactly once whichever way its step goes; and the
 * illegal transitions abort the daemon (in a forked child). TAP output. */
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bus-request.h"
#include "tap.h"

/* ---- the table ---- */

static const struct {
        BusRequestState from;
        BusRequestEvent event;
        BusRequestState to;
} legal[] = {
        { BUS_REQUEST_NEW, BUS_REQUEST_STEP, BUS_REQUEST_RUNNING },
        { BUS_REQUEST_RUNNING, BUS_REQUEST_WAIT, BUS_REQUEST_RUNNING_WAITS },
        { BUS_REQUEST_RUNNING, BUS_REQUEST_REPLY, BUS_REQUEST_REPLIED },
        { BUS_REQUEST_RUNNING, BUS_REQUEST_RETURN, BUS_REQUEST_DONE },
        { BUS_REQUEST_RUNNING, BUS_REQUEST_FAIL, BUS_REQUEST_DONE },
        { BUS_REQUEST_RUNNING_WAITS, BUS_REQUEST_WAIT, BUS_REQUEST_RUNNING_WAITS },
        { BUS_REQUEST_RUNNING_WAITS, BUS_REQUEST_UNWAIT, BUS_REQUEST_RUNNING },
        { BUS_REQUEST_RUNNING_WAITS, BUS_REQUEST_REPLY, BUS_REQUEST_REPLIED },
        { BUS_REQUEST_RUNNING_WAITS, BUS_REQUEST_RETURN, BUS_REQUEST_WAITING },
        { BUS_REQUEST_RUNNING_WAITS, BUS_REQUEST_FAIL, BUS_REQUEST_DONE },
        { BUS_REQUEST_REPLIED, BUS_REQUEST_RETURN, BUS_REQUEST_DONE },
        { BUS_REQUEST_WAITING, BUS_REQUEST_STEP, BUS_REQUEST_RUNNING },
        { BUS_REQUEST_WAITING, BUS_REQUEST_WAIT, BUS_REQUEST_WAITING },
        { BUS_REQUEST_WAITING, BUS_REQUEST_REPLY, BUS_REQUEST_DONE },
};

static void test_table(void) {
        size_t n_legal = 0;

        for (BusRequestState s = 0; s < _BUS_REQUEST_STATE_MAX; s++)
                for (BusRequestEvent e = 0; e < _BUS_REQUEST_EVENT_MAX; e++) {
                        BusRequestState want = _BUS_REQUEST_STATE_INVALID;

                        for (size_t i = 0; i < ELEMENTSOF(legal); i++)
                                if (legal[i].from == s && legal[i].event == e)
                                        want = legal[i].to;
                        n_legal += want >= 0;
                        BusRequestState got = bus_request_state_next(s, e);
                        check(got == want, "%s + %s → %s (got %s)", bus_request_state_to_string(s),
                              bus_request_event_to_string(e), want >= 0 ? bus_request_state_to_string(want) : "illegal",
                              got >= 0 ? bus_request_state_to_string(got) : "illegal");
                }
        check(n_legal == ELEMENTSOF(legal), "the table has the %zu legal transitions and no other", ELEMENTSOF(legal));
        check(bus_request_state_next(_BUS_REQUEST_STATE_MAX, BUS_REQUEST_STEP) < 0 &&
              bus_request_state_next(BUS_REQUEST_NEW, _BUS_REQUEST_EVENT_MAX) < 0 &&
              bus_request_state_next(_BUS_REQUEST_STATE_INVALID, BUS_REQUEST_STEP) < 0,
              "out of range is illegal, not a read past the table");
        for (BusRequestState s = 0; s < _BUS_REQUEST_STATE_MAX; s++)
                check(bus_request_state_to_string(s) != NULL, "state %d has a name", s);
        for (BusRequestEvent e = 0; e < _BUS_REQUEST_EVENT_MAX; e++)
                check(bus_request_event_to_string(e) != NULL, "event %d has a name", e);
}

/* ---- real calls ---- */

typedef enum Script {
        SCRIPT_REPLY_DIRECTLY,   /* sd_bus_reply_method_return() in the step */
        SCRIPT_REPLY_IN_STEP,    /* bus_request_reply_result() in the step */
        SCRIPT_WAIT_IN_STEP,     /* waits, and what it started answers before the step returns */
        SCRIPT_WAIT,             /* waits; the test answers later */
        SCRIPT_WAIT_REDISPATCH,  /* waits; the message is dispatched again, the step then replies */
        SCRIPT_FAIL,             /* returns an error */
        SCRIPT_UNWAIT_FAIL,      /* waits, the start fails: unwaits and returns an error */
        SCRIPT_FAIL_WAITING,     /* waits (polkit asked, say), then fails */
        SCRIPT_REPLY_TWICE,      /* a bug: answers twice */
        SCRIPT_WAIT_AFTER_REPLY, /* a bug: answered, then says it waits */
        SCRIPT_UNWAIT,           /* a bug: unwaits what never waited */
} Script;

typedef struct Test {
        Manager manager;
        sd_bus *server, *client;
        Script script;
        unsigned n_steps;
        BusRequest *req;                 /* the request the step ran for */
        BusRequestState seen[4];         /* its state at the start of each step */
        unsigned n_replies;
        char *reply_error;               /* the error name the client read, or NULL */
} Test;

static int step(BusRequest *req, sd_bus_error *error) {
        Test *t = (Test *) req->manager;

        if (t->n_steps < ELEMENTSOF(t->seen))
                t->seen[t->n_steps] = req->state;
        t->n_steps++;
        t->req = req;
        switch (t->script) {
        case SCRIPT_REPLY_DIRECTLY:
                return sd_bus_reply_method_return(req->message, NULL);
        case SCRIPT_REPLY_IN_STEP:
                bus_request_reply_result(req, NULL);
                return 1;
        case SCRIPT_WAIT_IN_STEP:
                bus_request_wait(req);
                bus_request_reply_result(req, NULL);
                return 1;
        case SCRIPT_WAIT:
                bus_request_wait(req);
                return 1;
        case SCRIPT_WAIT_REDISPATCH:
                if (t->n_steps == 1) {
                        bus_request_wait(req);
                        (void) sd_bus_message_rewind(req->message, true);
                        (void) sd_bus_enqueue_for_read(t->server, req->message);
                        return 0;
                }
                return sd_bus_reply_method_return(req->message, NULL);
        case SCRIPT_FAIL:
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "No.");
        case SCRIPT_UNWAIT_FAIL:
                bus_request_wait(req);
                bus_request_unwait(req);
                return sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED, "Could not start.");
        case SCRIPT_FAIL_WAITING:
                bus_request_wait(req);
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "Refused.");
        case SCRIPT_REPLY_TWICE:
                bus_request_reply_result(req, NULL);
                bus_request_reply_result(req, NULL);
                return 1;
        case SCRIPT_WAIT_AFTER_REPLY:
                bus_request_reply_result(req, NULL);
                bus_request_wait(req);
                return 1;
        case SCRIPT_UNWAIT:
                bus_request_unwait(req);
                return 1;
        }
        return -EINVAL;
}

static int method_frobnicate(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Test *t = userdata;
        return bus_request_run(m, &t->manager, error, step);
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Frobnicate", "", "", method_frobnicate, 0),
        SD_BUS_VTABLE_END,
};

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Test *t = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        t->n_replies++;
        free(t->reply_error);
        t->reply_error = e && e->name ? strdup(e->name) : NULL;
        return 0;
}

static void pump(Test *t) {
        /* Until neither end has anything left to do. */
        for (int idle = 0; idle < 20;) {
                int a = sd_bus_process(t->server, NULL), b = sd_bus_process(t->client, NULL);
                if (a > 0 || b > 0)
                        idle = 0;
                else {
                        idle++;
                        usleep(1000);
                }
        }
}

static bool test_open(Test *t, Script script) {
        static ManagerConfig config = { .operation_timeout_usec = 25 * 1000000ULL };
        sd_id128_t id = { .qwords = { 1, 2 } };
        int pair[2];

        *t = (Test) { .script = script };
        t->manager.namespaces.config = &config;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0)
                return false;
        if (sd_bus_new(&t->server) < 0 || sd_bus_set_fd(t->server, pair[0], pair[0]) < 0 ||
            sd_bus_set_server(t->server, true, id) < 0 || sd_bus_set_anonymous(t->server, true) < 0 ||
            sd_bus_add_object_vtable(t->server, NULL, "/test", "org.example.Test", vtable, t) < 0 ||
            sd_bus_start(t->server) < 0)
                return false;
        if (sd_bus_new(&t->client) < 0 || sd_bus_set_fd(t->client, pair[1], pair[1]) < 0 ||
            sd_bus_set_anonymous(t->client, true) < 0 || sd_bus_start(t->client) < 0)
                return false;
        return sd_bus_call_method_async(t->client, NULL, NULL, "/test", "org.example.Test", "Frobnicate", on_reply, t,
                                        "") >= 0;
}

static void test_close(Test *t) {
        bus_requests_free(&t->manager);
        sd_bus_flush_close_unref(t->client);
        sd_bus_flush_close_unref(t->server);
        free(t->reply_error);
}

static unsigned n_requests(Test *t) {
        unsigned n = 0;
        for (BusRequest *r = t->manager.requests; r; r = r->next)
                n++;
        return n;
}

static void test_calls(void) {
        static const struct {
                Script script;
                const char *name;
                const char *error;       /* the error the client reads, NULL: an empty reply */
        } cases[] = {
                { SCRIPT_REPLY_DIRECTLY, "a step that replies with sd-bus", NULL },
                { SCRIPT_REPLY_IN_STEP, "a step that replies through the request", NULL },
                { SCRIPT_WAIT_IN_STEP, "what a step starts answers at once", NULL },
                { SCRIPT_FAIL, "a step that fails", SD_BUS_ERROR_INVALID_ARGS },
                { SCRIPT_UNWAIT_FAIL, "a step whose work fails to start", SD_BUS_ERROR_LIMITS_EXCEEDED },
                { SCRIPT_FAIL_WAITING, "a step that fails after asking", SD_BUS_ERROR_ACCESS_DENIED },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Test t;

                if (!test_open(&t, cases[i].script)) {
                        check(false, "%s: a peer-to-peer connection", cases[i].name);
                        continue;
                }
                pump(&t);
                check(t.n_steps == 1 && t.seen[0] == BUS_REQUEST_RUNNING, "%s: one step, running", cases[i].name);
                check(t.n_replies == 1, "%s: the caller has one answer (%u)", cases[i].name, t.n_replies);
                check(cases[i].error ? t.reply_error && streq(t.reply_error, cases[i].error) : !t.reply_error,
                      "%s: it is %s (%s)", cases[i].name, cases[i].error ?: "a return", t.reply_error ?: "a return");
                check(n_requests(&t) == 0, "%s: the request is gone", cases[i].name);
                test_close(&t);
        }
}

static void test_wait_then_reply(void) {
        Test t;

        if (!test_open(&t, SCRIPT_WAIT)) {
                check(false, "a peer-to-peer connection");
                return;
        }
        pump(&t);
        check(t.n_steps == 1 && t.n_replies == 0 && n_requests(&t) == 1 && t.req->state == BUS_REQUEST_WAITING,
              "a step that waits leaves its request waiting, unanswered");
        bus_request_reply_result(t.req, NULL);
        pump(&t);
        check(t.n_replies == 1 && !t.reply_error && n_requests(&t) == 0,
              "its answer later reaches the caller once, and ends the request");
        test_close(&t);

        if (!test_open(&t, SCRIPT_WAIT_REDISPATCH)) {
                check(false, "a peer-to-peer connection");
                return;
        }
        pump(&t);
        check(t.n_steps == 2 && t.seen[0] == BUS_REQUEST_RUNNING && t.seen[1] == BUS_REQUEST_RUNNING,
              "a re-dispatched message runs its step again (%u steps)", t.n_steps);
        check(t.n_replies == 1 && !t.reply_error && n_requests(&t) == 0,
              "the second step's answer is the only one, and the request ends");
        test_close(&t);

        /* The request of a re-dispatch is the first one: what the step kept survives. */
        if (!test_open(&t, SCRIPT_WAIT)) {
                check(false, "a peer-to-peer connection");
                return;
        }
        pump(&t);
        BusRequest *first = t.req;
        t.script = SCRIPT_REPLY_DIRECTLY;
        (void) sd_bus_message_rewind(first->message, true);
        (void) sd_bus_enqueue_for_read(t.server, first->message);
        pump(&t);
        check(t.n_steps == 2 && t.req == first && t.seen[1] == BUS_REQUEST_RUNNING && t.n_replies == 1 &&
              n_requests(&t) == 0, "the re-dispatched step finds its request");
        test_close(&t);
}

/* A bug in a method aborts the daemon (systemd asserts likewise) rather than answer twice or
 * free a request something still points to. */
static void test_illegal(void) {
#ifdef NDEBUG
        tap_skip("built with NDEBUG: assert() is compiled out");
#else
        static const struct {
                Script script;
                const char *name;
        } cases[] = {
                { SCRIPT_REPLY_TWICE, "a second answer in a step" },
                { SCRIPT_WAIT_AFTER_REPLY, "a wait after the answer" },
                { SCRIPT_UNWAIT, "an unwait without a wait" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int status = 0;

                fflush(stdout);
                pid_t pid = fork();
                if (pid == 0) {
                        Test t;
                        /* The abort's log line goes to stderr; TAP reads stdout. */
                        if (!test_open(&t, cases[i].script))
                                _exit(2);
                        pump(&t);
                        _exit(0);
                }
                check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
                      "%s aborts (status %#x)", cases[i].name, status);
        }

        /* And an answer to a request that was answered and freed cannot happen: one that was
         * answered in its step is gone when the step returned, and a waiting one when answered. */
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
                Test t;
                if (!test_open(&t, SCRIPT_WAIT))
                        _exit(2);
                pump(&t);
                t.req->state = BUS_REQUEST_NEW;   /* as if its step never ran */
                bus_request_reply_result(t.req, NULL);
                _exit(0);
        }
        int status = 0;
        check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
              "an answer before the step ran aborts (status %#x)", status);
#endif
}

int main(void) {
        test_table();
        test_calls();
        test_wait_then_reply();
        test_illegal();
        return tap_finish();
}
