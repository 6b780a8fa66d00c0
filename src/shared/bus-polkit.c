/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-creds.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "list.h"
#include "macros.h"
#include "strv.h"

/* How it works, for one method call M whose handler asks for action A:
 *
 *   handler(M) → bus_verify_polkit_async(M, A) → no answer for (M, A) yet: send CheckAuthorization
 *                                                 asynchronously, return 0 → handler returns 1, no reply
 *   … the event loop serves other clients …
 *   polkit answers → on_check_authorization_reply() records the verdict for (M, A), rewinds M and puts it
 *                    back into the bus's read queue (sd_bus_enqueue_for_read)
 *   handler(M) → bus_verify_polkit_async(M, A) → the recorded verdict: 1, or an error → handler acts/fails
 *   idle → the query for M is dropped (it must outlive the second dispatch, and nothing tells us when
 *          the handler is done with M, so we wait until the loop has nothing more urgent to do: the
 *          re-queued message keeps the bus's event source pending at a higher priority until it was
 *          dispatched).
 *
 * The query is keyed by the message object itself (we hold a reference, so the pointer stays unique),
 * never by anything the client sent.
 *
 * The questions share budgets, because every user's go through one connection to one polkitd:
 *   - dbus-daemon lets a connection wait for at most 128 replies (max_replies_per_connection on the
 *     system bus) and refuses every call beyond, ours to systemd for root included. At most
 *     POLKIT_MAX_IN_FLIGHT questions are in flight at once, POLKIT_MAX_INTERACTIVE of them
 *     interactive (those wait for a person, or for an agent that may never answer); the rest of the
 *     bus's 128 is the daemon's other calls' (root's attach).
 *   - A question counts as in flight until polkitd has answered it, not until we stop waiting:
 *     the bus counts it that long. At the deadline (the limits' timeout) the caller is answered
 *     TimedOut and polkitd is told to give up (CancelCheckAuthorization, sent without expecting a
 *     reply, so that it needs no room among the 128), and it answers the check soon after; the
 *     check's own sd-bus timeout is longer than the deadline so that this answer is still ours.
 *   - One uid has at most questions_per_uid interactive questions waiting or in flight; beyond,
 *     its calls are refused LimitExceeded at once.
 *   - Questions that wait for a slot wait per uid, and the uids take turns (round robin): one uid's
 *     hundred questions delay another's by one each, not by a hundred. */

#define POLKIT_BUS_NAME "org.freedesktop.PolicyKit1"
#define POLKIT_OBJECT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_INTERFACE "org.freedesktop.PolicyKit1.Authority"

/* CheckAuthorization flags, from polkit's D-Bus API */
#define POLKIT_CHECK_ALLOW_USER_INTERACTION 0x1U

/* Half of dbus-daemon's default max_replies_per_connection: room for the daemon's other calls. */
#define POLKIT_MAX_IN_FLIGHT 64
/* Of those, at most this many wait for people (or agents): the others stay for questions
 * polkitd answers by its rules alone. */
#define POLKIT_MAX_INTERACTIVE 32
#define POLKIT_QUESTIONS_PER_UID_DEFAULT 4U
#define POLKIT_TIMEOUT_USEC_DEFAULT (20 * USEC_PER_SEC)
/* How long after our deadline polkitd has to answer the cancelled check before sd-bus gives up
 * on it too (and the slot is ours again, whatever the bus thinks). */
#define POLKIT_CANCEL_GRACE_USEC (25 * USEC_PER_SEC)

typedef enum PolkitVerdict {
        POLKIT_VERDICT_PENDING,
        POLKIT_VERDICT_YES,
        POLKIT_VERDICT_NO,
        POLKIT_VERDICT_CHALLENGE,  /* polkit would allow it after authentication */
        POLKIT_VERDICT_FAILED,     /* polkit did not answer the question (not running, broken, …) */
        POLKIT_VERDICT_TIMED_OUT,  /* … not within the deadline */
} PolkitVerdict;

typedef struct PolkitCheck {
        char *action;
        char **details;
        bool test;                 /* a question for Can(): never interactive, the verdict is the answer */
        PolkitVerdict verdict;
        char *failure;             /* for POLKIT_VERDICT_FAILED: why, for the caller's error message */
        struct PolkitCheck *next;
} PolkitCheck;

typedef struct PolkitUser PolkitUser;
typedef struct PolkitCall PolkitCall;

typedef struct PolkitQuery {
        PolkitRegistry *registry;
        sd_bus_message *request;   /* the method call being authorized */
        PolkitUser *user;          /* the uid that sent it */
        PolkitCall *call;          /* its CheckAuthorization in flight, if any */
        bool waiting;              /* its question waits for a free slot (in its user's queue) */
        bool interactive;          /* … and is interactive: counted in its user's n_interactive */
        PolkitCheck *checks;       /* newest first; at most one is pending, and only while in flight or waiting */
        sd_event_source *release_source;
        sd_event_source *timeout_source;   /* the pending check's deadline */
        struct PolkitQuery *prev, *next;
        struct PolkitQuery *wait_next;
} PolkitQuery;

/* A CheckAuthorization polkitd has not answered: it may outlive its query (cancelled at the deadline). */
struct PolkitCall {
        PolkitRegistry *registry;
        PolkitQuery *query;        /* NULL once nobody waits for the answer */
        PolkitUser *user;
        sd_bus_slot *slot;
        bool interactive;          /* counted in user->n_interactive and registry->n_interactive */
        char cancellation_id[32];
        PolkitCall *prev, *next;
};

/* A uid with questions waiting or in flight. */
struct PolkitUser {
        uid_t uid;
        unsigned n_interactive;    /* its interactive questions waiting or in flight */
        unsigned n_calls;          /* its questions in flight */
        PolkitQuery *wait_head, *wait_tail;   /* oldest first */
        bool in_turn;              /* in the registry's round (it has questions waiting) */
        PolkitUser *turn_next;
        PolkitUser *prev, *next;
};

struct PolkitRegistry {
        BusCreds *creds;           /* the owner's, to learn who sent a message (NULL: asked each time) */
        const unsigned *questions_per_uid;
        const uint64_t *timeout_usec;
        PolkitQuery *queries;
        PolkitCall *calls;
        PolkitUser *users;
        unsigned n_in_flight;      /* calls */
        unsigned n_interactive;    /* interactive calls */
        uint64_t cancellation_counter;
        PolkitUser *turn_head, *turn_tail;    /* users with questions waiting, the next to send first */
};

static unsigned registry_questions_per_uid(const PolkitRegistry *r) {
        return r->questions_per_uid ? *r->questions_per_uid : POLKIT_QUESTIONS_PER_UID_DEFAULT;
}

static uint64_t registry_timeout_usec(const PolkitRegistry *r) {
        return r->timeout_usec ? *r->timeout_usec : POLKIT_TIMEOUT_USEC_DEFAULT;
}

static PolkitCheck *polkit_check_free(PolkitCheck *c) {
        if (!c)
                return NULL;
        free(c->action);
        strv_free(c->details);
        free(c->failure);
        free(c);
        return NULL;
}

static PolkitUser *polkit_user_get(PolkitRegistry *r, uid_t uid) {
        PolkitUser *u;

        for (u = r->users; u; u = u->next)
                if (u->uid == uid)
                        return u;
        u = calloc(1, sizeof(PolkitUser));
        if (!u)
                return NULL;
        u->uid = uid;
        LIST_PREPEND(r->users, u);
        return u;
}

/* Drops the entry once nothing of the uid is left. */
static void polkit_user_unref_maybe(PolkitRegistry *r, PolkitUser *u) {
        if (!u || u->n_interactive > 0 || u->n_calls > 0 || u->wait_head || u->in_turn)
                return;
        for (PolkitQuery *q = r->queries; q; q = q->next)
                if (q->user == u)
                        return;
        LIST_REMOVE(r->users, u);
        free(u);
}

static void polkit_turn_remove(PolkitRegistry *r, PolkitUser *u) {
        PolkitUser **p = &r->turn_head, *prev = NULL;

        if (!u->in_turn)
                return;
        while (*p && *p != u) {
                prev = *p;
                p = &(*p)->turn_next;
        }
        if (*p)
                *p = u->turn_next;
        if (r->turn_tail == u)
                r->turn_tail = prev;
        u->turn_next = NULL;
        u->in_turn = false;
}

static void polkit_turn_append(PolkitRegistry *r, PolkitUser *u) {
        if (u->in_turn)
                return;
        u->turn_next = NULL;
        if (r->turn_tail)
                r->turn_tail->turn_next = u;
        else
                r->turn_head = u;
        r->turn_tail = u;
        u->in_turn = true;
}

/* Takes the query out of its user's queue (it is sent, answered or dropped). */
static void polkit_query_unwait(PolkitQuery *q) {
        PolkitUser *u = q->user;
        PolkitQuery **p, *prev = NULL;

        if (!q->waiting)
                return;
        q->waiting = false;
        for (p = &u->wait_head; *p && *p != q; p = &(*p)->wait_next)
                prev = *p;
        if (*p)
                *p = q->wait_next;
        if (u->wait_tail == q)
                u->wait_tail = prev;
        q->wait_next = NULL;
        if (!u->wait_head)
                polkit_turn_remove(q->registry, u);
}

static void polkit_call_free(PolkitCall *c) {
        PolkitRegistry *r = c->registry;

        LIST_REMOVE(r->calls, c);
        r->n_in_flight--;
        c->user->n_calls--;
        if (c->interactive) {
                r->n_interactive--;
                c->user->n_interactive--;
        }
        if (c->query)
                c->query->call = NULL;
        /* Dropping the slot cancels a pending reply callback. */
        sd_bus_slot_unref(c->slot);
        polkit_user_unref_maybe(r, c->user);
        free(c);
}

/* Tells polkitd to stop asking: no reply wanted (the bus would count one), the check itself then
 * answers (an error) and frees its slot. */
static void polkit_call_cancel(PolkitCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        sd_bus *bus = sd_bus_slot_get_bus(c->slot);
        int r;

        r = sd_bus_message_new_method_call(bus, &m, POLKIT_BUS_NAME, POLKIT_OBJECT_PATH, POLKIT_INTERFACE,
                                           "CancelCheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", c->cancellation_id);
        if (r >= 0)
                r = sd_bus_message_set_expect_reply(m, false);
        if (r >= 0)
                r = sd_bus_send(bus, m, NULL);
        if (r < 0)
                /* The check's sd-bus timeout frees it then. */
                return;
}

static PolkitQuery *polkit_query_free(PolkitQuery *q) {
        PolkitUser *u;

        if (!q)
                return NULL;

        u = q->user;
        if (q->registry)
                LIST_REMOVE(q->registry->queries, q);

        if (q->waiting) {
                polkit_query_unwait(q);
                if (q->interactive)
                        u->n_interactive--;
        }
        if (q->call) {
                /* Nobody waits for this answer any more; polkitd need not ask anybody either. It
                 * stays in flight until polkitd answers. */
                q->call->query = NULL;
                polkit_call_cancel(q->call);
                q->call = NULL;
        }
        sd_event_source_disable_unref(q->release_source);
        sd_event_source_disable_unref(q->timeout_source);
        sd_bus_message_unref(q->request);

        while (q->checks) {
                PolkitCheck *c = q->checks;
                q->checks = c->next;
                polkit_check_free(c);
        }

        q->user = NULL;
        if (q->registry)
                polkit_user_unref_maybe(q->registry, u);
        free(q);
        return NULL;
}

int polkit_registry_new(BusCreds *creds, PolkitRegistry **ret) {
        PolkitRegistry *r = calloc(1, sizeof(PolkitRegistry));

        if (!r)
                return -ENOMEM;
        r->creds = creds;
        *ret = r;
        return 0;
}

void polkit_registry_set_limits(PolkitRegistry *r, const unsigned *questions_per_uid, const uint64_t *timeout_usec) {
        r->questions_per_uid = questions_per_uid;
        r->timeout_usec = timeout_usec;
}

PolkitRegistry *polkit_registry_free(PolkitRegistry *r) {
        if (!r)
                return NULL;

        while (r->queries)
                polkit_query_free(r->queries);
        while (r->calls)
                polkit_call_free(r->calls);
        while (r->users) {
                PolkitUser *u = r->users;
                LIST_REMOVE(r->users, u);
                free(u);
        }

        free(r);
        return NULL;
}

static char **details_copy(const char **details) {
        size_t n = 0;
        char **copy;

        while (details && details[n])
                n++;

        copy = calloc(n + 1, sizeof(char *));
        if (!copy)
                return NULL;

        for (size_t i = 0; i < n; i++) {
                copy[i] = strdup(details[i]);
                if (!copy[i])
                        return strv_free(copy);
        }

        return copy;
}

static bool details_equal(char **a, const char **b) {
        size_t i = 0;

        for (; a[i] && b && b[i]; i++)
                if (!streq(a[i], b[i]))
                        return false;

        return !a[i] && (!b || !b[i]);
}

static PolkitQuery *polkit_registry_find(PolkitRegistry *r, sd_bus_message *m) {
        for (PolkitQuery *q = r ? r->queries : NULL; q; q = q->next)
                if (q->request == m)
                        return q;
        return NULL;
}

bool polkit_registry_knows(const PolkitRegistry *r, sd_bus_message *m) {
        return polkit_registry_find((PolkitRegistry *) r, m);
}

static PolkitCheck *polkit_query_find_check(PolkitQuery *q, const char *action, const char **details, bool test) {
        /* The details are part of the question: a handler that asks about other details (because
         * the state it derives them from changed) must not get an answer given for different ones. */
        for (PolkitCheck *c = q->checks; c; c = c->next)
                if (streq(c->action, action) && details_equal(c->details, details) && c->test == test)
                        return c;
        return NULL;
}

static int on_release(sd_event_source *s _unused_, void *userdata) {
        polkit_query_free(userdata);
        return 0;
}

static int polkit_query_arm_release(PolkitQuery *q) {
        sd_event *e;
        int r;

        if (q->release_source)
                return sd_event_source_set_enabled(q->release_source, SD_EVENT_ONESHOT);

        /* Without an event loop there is no "idle": the query then stays until the registry is freed. */
        e = sd_bus_get_event(sd_bus_message_get_bus(q->request));
        if (!e)
                return 0;

        r = sd_event_add_defer(e, &q->release_source, on_release, q);
        if (r < 0)
                return r;

        /* Below the bus's priority, so that the re-queued message is dispatched first. */
        r = sd_event_source_set_priority(q->release_source, SD_EVENT_PRIORITY_IDLE);
        if (r < 0)
                return r;

        return sd_event_source_set_enabled(q->release_source, SD_EVENT_ONESHOT);
}

static void polkit_check_set_failure(PolkitCheck *c, const sd_bus_error *e) {
        const char *what;

        /* Errors from the bus itself (no such name, activation failed, timeout) mean polkit is not
         * there; errors in polkit's own namespace mean it could not evaluate the question (for example
         * because the action is not installed). Both deny, with a hint at what to fix. */
        if (strncmp(e->name, "org.freedesktop.DBus.Error.", strlen("org.freedesktop.DBus.Error.")) == 0)
                what = "polkit is unavailable";
        else
                what = "polkit could not check the authorization";

        c->verdict = POLKIT_VERDICT_FAILED;
        if (asprintf(&c->failure, "%s (%s: %s)", what, e->name, e->message ?: "no message") < 0)
                c->failure = NULL;
}

static int polkit_query_send(PolkitQuery *q);

/* Run the method handler again from the start; it will find the verdict. */
static void polkit_query_redispatch(PolkitQuery *q) {
        int r;

        q->timeout_source = sd_event_source_disable_unref(q->timeout_source);
        r = sd_bus_message_rewind(q->request, /* complete= */ true);
        if (r >= 0)
                r = sd_bus_enqueue_for_read(sd_bus_message_get_bus(q->request), q->request);
        if (r < 0) {
                /* The handler will not run again, so answer here rather than leave the caller hanging. */
                (void) bus_reply_method_errorf(q->request, NSM_ERROR_ACCESS_DENIED,
                                               "Cannot finish the authorization check: %s", strerror(-r));
                polkit_query_free(q);
                return;
        }

        /* Should this fail, the query merely stays until the registry is freed. */
        (void) polkit_query_arm_release(q);
}

/* Whether a question may be sent now: a slot is free, and for an interactive one a slot of theirs. */
static bool polkit_registry_can_send(const PolkitRegistry *registry, bool interactive) {
        return registry->n_in_flight < POLKIT_MAX_IN_FLIGHT &&
               (!interactive || registry->n_interactive < POLKIT_MAX_INTERACTIVE);
}

/* Questions that waited for a free slot: the users in turn, each user's oldest first. A user whose
 * oldest question is interactive while the interactive slots are taken lets the others pass. */
static void polkit_registry_send_waiting(PolkitRegistry *registry) {
        PolkitUser *u, *stop = NULL;

        while ((u = registry->turn_head) && registry->n_in_flight < POLKIT_MAX_IN_FLIGHT) {
                PolkitQuery *q = u->wait_head;
                int r;

                /* Its turn passes to the next user either way. */
                polkit_turn_remove(registry, u);
                if (!polkit_registry_can_send(registry, q->interactive)) {
                        polkit_turn_append(registry, u);
                        if (stop == u)
                                break;   /* a whole round and nothing could go */
                        if (!stop)
                                stop = u;
                        continue;
                }
                stop = NULL;
                polkit_query_unwait(q);
                if (u->wait_head)
                        polkit_turn_append(registry, u);
                if (q->interactive)
                        u->n_interactive--;   /* the call counts it from now on */
                r = polkit_query_send(q);
                if (r < 0) {
                        /* The handler answers with the reason. */
                        polkit_check_set_failure(q->checks, &SD_BUS_ERROR_MAKE_CONST(SD_BUS_ERROR_FAILED, strerror(-r)));
                        polkit_query_redispatch(q);
                }
        }
}

static int on_check_authorization_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error _unused_) {
        PolkitCall *call = userdata;
        PolkitRegistry *registry = call->registry;
        PolkitQuery *q = call->query;
        PolkitCheck *c = q ? q->checks : NULL;
        int authorized, challenge, r;

        /* polkitd answered: the question is no longer in flight, whether anybody still waits for it. */
        polkit_call_free(call);

        if (c) {
                if (sd_bus_message_is_method_error(reply, NULL))
                        polkit_check_set_failure(c, sd_bus_message_get_error(reply));
                else {
                        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
                        if (r >= 0)
                                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
                        if (r < 0)
                                polkit_check_set_failure(c, &SD_BUS_ERROR_MAKE_CONST(
                                                                 SD_BUS_ERROR_INVALID_SIGNATURE,
                                                                 "unexpected CheckAuthorization reply"));
                        else
                                c->verdict = authorized ? POLKIT_VERDICT_YES :
                                             challenge ? POLKIT_VERDICT_CHALLENGE : POLKIT_VERDICT_NO;
                }
                polkit_query_redispatch(q);
        }

        polkit_registry_send_waiting(registry);
        return 0;
}

/* The deadline of the query's pending check: the caller is answered now, and a question in flight
 * is cancelled (it stays counted until polkitd answered). */
static int on_check_timeout(sd_event_source *s _unused_, uint64_t usec _unused_, void *userdata) {
        PolkitQuery *q = userdata;
        PolkitRegistry *registry = q->registry;

        if (q->waiting) {
                polkit_query_unwait(q);
                if (q->interactive)
                        q->user->n_interactive--;
        }
        if (q->call) {
                q->call->query = NULL;
                polkit_call_cancel(q->call);
                q->call = NULL;
        }
        q->checks->verdict = POLKIT_VERDICT_TIMED_OUT;
        polkit_query_redispatch(q);
        polkit_registry_send_waiting(registry);
        return 0;
}

/* Sends the question of the query's newest check. */
static int polkit_query_send(PolkitQuery *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        sd_bus *bus = sd_bus_message_get_bus(q->request);
        PolkitRegistry *registry = q->registry;
        PolkitCheck *c = q->checks;
        PolkitCall *call;
        const char *sender;
        unsigned flags = 0;
        int r;

        /* polkit resolves the bus name to the caller's uid, pid and session itself, from the bus
         * driver: nothing the client wrote into the message decides who it is. */
        sender = sd_bus_message_get_sender(q->request);
        if (!sender)
                return -EBADMSG;

        if (q->interactive)
                flags |= POLKIT_CHECK_ALLOW_USER_INTERACTION;

        r = sd_bus_message_new_method_call(bus, &m, POLKIT_BUS_NAME, POLKIT_OBJECT_PATH,
                                           POLKIT_INTERFACE, "CheckAuthorization");
        if (r < 0)
                return r;

        r = sd_bus_message_append(m, "(sa{sv})s", "system-bus-name", 1, "name", "s", sender, c->action);
        if (r < 0)
                return r;

        r = sd_bus_message_open_container(m, 'a', "{ss}");
        if (r < 0)
                return r;
        for (char **k = c->details; k[0] && k[1]; k += 2) {
                r = sd_bus_message_append(m, "{ss}", k[0], k[1]);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;

        call = calloc(1, sizeof(PolkitCall));
        if (!call)
                return -ENOMEM;
        /* Unique among our checks in flight: polkitd keys cancellations by it and our connection. */
        (void) snprintf(call->cancellation_id, sizeof call->cancellation_id, "nsm-%" PRIu64,
                        ++registry->cancellation_counter);

        r = sd_bus_message_append(m, "us", flags, call->cancellation_id);
        if (r < 0) {
                free(call);
                return r;
        }

        /* Longer than our deadline: polkitd's answer to the cancelled check must still find us. */
        r = sd_bus_call_async(bus, &call->slot, m, on_check_authorization_reply, call,
                              registry_timeout_usec(registry) + POLKIT_CANCEL_GRACE_USEC);
        if (r < 0) {
                free(call);
                return r;
        }
        call->registry = registry;
        call->user = q->user;
        call->query = q;
        call->interactive = q->interactive;
        LIST_PREPEND(registry->calls, call);
        registry->n_in_flight++;
        q->user->n_calls++;
        if (call->interactive) {
                registry->n_interactive++;
                q->user->n_interactive++;
        }
        q->call = call;
        return 0;
}

static int polkit_query_arm_timeout(PolkitQuery *q) {
        sd_event *e = sd_bus_get_event(sd_bus_message_get_bus(q->request));
        uint64_t usec = registry_timeout_usec(q->registry);
        int r;

        if (!e)
                return 0;   /* no event loop, no deadline: sd-bus's timeout answers */
        if (q->timeout_source) {
                r = sd_event_source_set_time_relative(q->timeout_source, usec);
                if (r < 0)
                        return r;
                return sd_event_source_set_enabled(q->timeout_source, SD_EVENT_ONESHOT);
        }
        return sd_event_add_time_relative(e, &q->timeout_source, CLOCK_MONOTONIC, usec, 0, on_check_timeout, q);
}

static int polkit_query_start_check(PolkitQuery *q, const char *action, const char **details, bool test,
                                    sd_bus_error *error) {
        PolkitRegistry *registry = q->registry;
        PolkitUser *u = q->user;
        unsigned per_uid = registry_questions_per_uid(registry);
        PolkitCheck *c;
        bool interactive;
        int r;

        /* A test asks what polkit would say without asking anybody, whatever the caller allowed. */
        interactive = !test && sd_bus_message_get_allow_interactive_authorization(q->request) > 0;
        if (interactive && per_uid > 0 && u->n_interactive >= per_uid)
                return bus_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED,
                                      "uid %" PRIu32 " has %u authorizations waiting (PolkitQuestionsPerUID=%u); try again "
                                      "once one of them was answered, at the latest after PolkitTimeoutSec=%" PRIu64 "s.",
                                      (uint32_t) u->uid, u->n_interactive, per_uid,
                                      (uint64_t) (registry_timeout_usec(registry) / USEC_PER_SEC));

        c = calloc(1, sizeof(PolkitCheck));
        if (!c)
                return bus_error_set_errnof(error, -ENOMEM, NULL);
        c->verdict = POLKIT_VERDICT_PENDING;
        c->test = test;
        c->action = strdup(action);
        c->details = details_copy(details);
        if (!c->action || !c->details) {
                polkit_check_free(c);
                return bus_error_set_errnof(error, -ENOMEM, NULL);
        }
        c->next = q->checks;
        q->checks = c;
        q->interactive = interactive;

        r = polkit_query_arm_timeout(q);
        if (r >= 0 && !u->wait_head && polkit_registry_can_send(registry, interactive))
                r = polkit_query_send(q);
        else if (r >= 0) {
                q->waiting = true;
                if (u->wait_tail)
                        u->wait_tail->wait_next = q;
                else
                        u->wait_head = q;
                u->wait_tail = q;
                if (interactive)
                        u->n_interactive++;
                polkit_turn_append(registry, u);
        }
        if (r < 0) {
                q->checks = c->next;
                polkit_check_free(c);
                q->timeout_source = sd_event_source_disable_unref(q->timeout_source);
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Cannot ask polkit to authorize '%s': %s", action, strerror(-r));
        }

        /* A second question about the same message: keep the first answer until this one is in. */
        if (q->release_source)
                (void) sd_event_source_set_enabled(q->release_source, SD_EVENT_OFF);

        return 0;
}

static int polkit_check_to_result(PolkitCheck *c, PolkitRegistry *registry, sd_bus_message *m, sd_bus_error *error) {
        switch (c->verdict) {

        case POLKIT_VERDICT_YES:
                return 1;

        case POLKIT_VERDICT_CHALLENGE:
                /* With interaction allowed polkit has already tried to authenticate the caller (through
                 * their agent) before answering; a challenge left over then means it failed. */
                if (sd_bus_message_get_allow_interactive_authorization(m) <= 0)
                        return bus_error_setf(error, NSM_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED, "Authentication is "
                                              "required for '%s', and the call did not allow interactive "
                                              "authorization.", c->action);
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Authentication for '%s' failed or was dismissed.", c->action);

        case POLKIT_VERDICT_NO:
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Not authorized: polkit denies '%s' to this caller.", c->action);

        case POLKIT_VERDICT_FAILED:
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Cannot authorize '%s': %s.", c->action,
                                      c->failure ?: "polkit is unavailable");

        case POLKIT_VERDICT_TIMED_OUT:
                return bus_error_setf(error, NSM_ERROR_TIMED_OUT,
                                      "No authorization for '%s' within PolkitTimeoutSec=%" PRIu64 "s (an "
                                      "authentication agent that did not answer, or polkit busy); the question "
                                      "was withdrawn.", c->action, (uint64_t) (registry_timeout_usec(registry) / USEC_PER_SEC));

        case POLKIT_VERDICT_PENDING:
        default:
                /* Not reachable: the message is only dispatched again once the answer is in. */
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Authorization for '%s' is still pending.", c->action);
        }
}

/* The common part of both entry points: 1 with *ret_check the answered check (NULL: the sender is
 * root), 0 while asking, < 0 with 'error' set when the question cannot be asked. */
static int polkit_async(
                sd_bus_message *m,
                const char *action,
                const char **details,
                bool test,
                PolkitRegistry **registry,
                PolkitCheck **ret_check,
                sd_bus_error *error) {

        PolkitQuery *q;
        PolkitCheck *c;
        bool new_query = false;
        uid_t uid;
        int r;

        if (!m || !action || !registry)
                return -EINVAL;

        /* The uid the bus driver authenticated for the sender's connection. */
        r = bus_creds_sender_uid(*registry ? (*registry)->creds : NULL, m, &uid);
        if (r < 0)
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Cannot determine the caller's identity: %s", strerror(-r));
        if (uid == 0) {
                *ret_check = NULL;
                return 1;
        }

        q = polkit_registry_find(*registry, m);
        if (q) {
                if (q->call || q->waiting)
                        return 0; /* Still waiting for polkit; we will be called again. */

                c = polkit_query_find_check(q, action, details, test);
                if (c) {
                        *ret_check = c;
                        return 1;
                }
        } else {
                if (!*registry) {
                        r = polkit_registry_new(NULL, registry);
                        if (r < 0)
                                return bus_error_set_errnof(error, r, NULL);
                }

                q = calloc(1, sizeof(PolkitQuery));
                if (!q)
                        return bus_error_set_errnof(error, -ENOMEM, NULL);
                q->user = polkit_user_get(*registry, uid);
                if (!q->user) {
                        free(q);
                        return bus_error_set_errnof(error, -ENOMEM, NULL);
                }

                q->request = sd_bus_message_ref(m);
                q->registry = *registry;
                LIST_PREPEND((*registry)->queries, q);
                new_query = true;
        }

        r = polkit_query_start_check(q, action, details, test, error);
        if (r < 0) {
                if (new_query)
                        polkit_query_free(q);
                return r;
        }

        return 0;
}

int bus_verify_polkit_async(
                sd_bus_message *m,
                const char *action,
                const char **details,
                PolkitRegistry **registry,
                sd_bus_error *error) {

        PolkitCheck *c = NULL;
        int r;

        r = polkit_async(m, action, details, /* test= */ false, registry, &c, error);
        if (r <= 0 || !c)
                return r;
        return polkit_check_to_result(c, *registry, m, error);
}

int bus_test_polkit_async(
                sd_bus_message *m,
                const char *action,
                const char **details,
                PolkitRegistry **registry,
                PolkitResult *ret,
                sd_bus_error *error) {

        PolkitCheck *c = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        r = polkit_async(m, action, details, /* test= */ true, registry, &c, error);
        if (r <= 0)
                return r;
        if (!c) {
                *ret = POLKIT_RESULT_YES;
                return 1;
        }
        switch (c->verdict) {
        case POLKIT_VERDICT_YES:
                *ret = POLKIT_RESULT_YES;
                return 1;
        case POLKIT_VERDICT_CHALLENGE:
                *ret = POLKIT_RESULT_CHALLENGE;
                return 1;
        case POLKIT_VERDICT_NO:
                *ret = POLKIT_RESULT_NO;
                return 1;
        default:
                /* polkit did not answer: that is no verdict, and the caller learns why. */
                return polkit_check_to_result(c, *registry, m, error);
        }
}
