/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
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
 * At most POLKIT_MAX_IN_FLIGHT questions are in flight at once; the others wait their turn, oldest
 * first. dbus-daemon lets a connection wait for at most 128 replies (max_replies_per_connection on
 * the system bus), and refuses every call beyond: in a burst of 200 unprivileged calls, 70 would be
 * denied because of the bus, not polkit. */

#define POLKIT_BUS_NAME "org.freedesktop.PolicyKit1"
#define POLKIT_OBJECT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_INTERFACE "org.freedesktop.PolicyKit1.Authority"

/* CheckAuthorization flags, from polkit's D-Bus API */
#define POLKIT_CHECK_ALLOW_USER_INTERACTION 0x1U

/* Half of dbus-daemon's default max_replies_per_connection: room for the daemon's other calls. */
#define POLKIT_MAX_IN_FLIGHT 64

typedef enum PolkitVerdict {
        POLKIT_VERDICT_PENDING,
        POLKIT_VERDICT_YES,
        POLKIT_VERDICT_NO,
        POLKIT_VERDICT_CHALLENGE,  /* polkit would allow it after authentication */
        POLKIT_VERDICT_FAILED,     /* polkit did not answer the question (not running, broken, …) */
} PolkitVerdict;

typedef struct PolkitCheck {
        char *action;
        char **details;
        bool test;                 /* a question for Can(): never interactive, the verdict is the answer */
        PolkitVerdict verdict;
        char *failure;             /* for POLKIT_VERDICT_FAILED: why, for the caller's error message */
        struct PolkitCheck *next;
} PolkitCheck;

typedef struct PolkitQuery {
        PolkitRegistry *registry;
        sd_bus_message *request;   /* the method call being authorized */
        sd_bus_slot *slot;         /* the CheckAuthorization call in flight, if any */
        bool waiting;              /* its question waits for a free slot (in the registry's queue) */
        PolkitCheck *checks;       /* newest first; at most one is pending, and only while in flight or waiting */
        sd_event_source *release_source;
        struct PolkitQuery *prev, *next;
        struct PolkitQuery *wait_next;
} PolkitQuery;

struct PolkitRegistry {
        BusCreds *creds;           /* the owner's, to learn who sent a message (NULL: asked each time) */
        PolkitQuery *queries;
        unsigned n_in_flight;
        PolkitQuery *wait_head, *wait_tail;   /* oldest first */
};

static PolkitCheck *polkit_check_free(PolkitCheck *c) {
        if (!c)
                return NULL;
        free(c->action);
        strv_free(c->details);
        free(c->failure);
        free(c);
        return NULL;
}

static PolkitQuery *polkit_query_free(PolkitQuery *q) {
        if (!q)
                return NULL;

        if (q->registry)
                LIST_REMOVE(q->registry->queries, q);

        if (q->waiting && q->registry) {
                PolkitQuery **p = &q->registry->wait_head, *prev = NULL;
                while (*p && *p != q) {
                        prev = *p;
                        p = &(*p)->wait_next;
                }
                if (*p)
                        *p = q->wait_next;
                if (q->registry->wait_tail == q)
                        q->registry->wait_tail = prev;
        }

        /* Dropping the slot cancels a pending reply callback. */
        if (q->slot && q->registry)
                q->registry->n_in_flight--;
        sd_bus_slot_unref(q->slot);
        sd_event_source_disable_unref(q->release_source);
        sd_bus_message_unref(q->request);

        while (q->checks) {
                PolkitCheck *c = q->checks;
                q->checks = c->next;
                polkit_check_free(c);
        }

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

PolkitRegistry *polkit_registry_free(PolkitRegistry *r) {
        if (!r)
                return NULL;

        while (r->queries)
                polkit_query_free(r->queries);

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

/* Questions that waited for a free slot, oldest first. */
static void polkit_registry_send_waiting(PolkitRegistry *registry) {
        while (registry->wait_head && registry->n_in_flight < POLKIT_MAX_IN_FLIGHT) {
                PolkitQuery *q = registry->wait_head;
                int r;

                registry->wait_head = q->wait_next;
                if (!registry->wait_head)
                        registry->wait_tail = NULL;
                q->wait_next = NULL;
                q->waiting = false;
                r = polkit_query_send(q);
                if (r < 0) {
                        /* The handler answers with the reason. */
                        polkit_check_set_failure(q->checks, &SD_BUS_ERROR_MAKE_CONST(SD_BUS_ERROR_FAILED, strerror(-r)));
                        polkit_query_redispatch(q);
                }
        }
}

static int on_check_authorization_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error _unused_) {
        PolkitQuery *q = userdata;
        PolkitRegistry *registry = q->registry;
        PolkitCheck *c = q->checks;
        int authorized, challenge, r;

        q->slot = sd_bus_slot_unref(q->slot);
        registry->n_in_flight--;

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
        polkit_registry_send_waiting(registry);
        return 0;
}

/* Sends the question of the query's newest check. */
static int polkit_query_send(PolkitQuery *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        sd_bus *bus = sd_bus_message_get_bus(q->request);
        PolkitCheck *c = q->checks;
        const char *sender;
        unsigned flags = 0;
        int r;

        /* polkit resolves the bus name to the caller's uid, pid and session itself, from the bus
         * driver: nothing the client wrote into the message decides who it is. */
        sender = sd_bus_message_get_sender(q->request);
        if (!sender)
                return -EBADMSG;

        /* A test asks what polkit would say without asking anybody, whatever the caller allowed. */
        if (!c->test && sd_bus_message_get_allow_interactive_authorization(q->request) > 0)
                flags |= POLKIT_CHECK_ALLOW_USER_INTERACTION;

        r = sd_bus_message_new_method_call(bus, &call, POLKIT_BUS_NAME, POLKIT_OBJECT_PATH,
                                           POLKIT_INTERFACE, "CheckAuthorization");
        if (r < 0)
                return r;

        r = sd_bus_message_append(call, "(sa{sv})s", "system-bus-name", 1, "name", "s", sender, c->action);
        if (r < 0)
                return r;

        r = sd_bus_message_open_container(call, 'a', "{ss}");
        if (r < 0)
                return r;
        for (char **k = c->details; k[0] && k[1]; k += 2) {
                r = sd_bus_message_append(call, "{ss}", k[0], k[1]);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(call);
        if (r < 0)
                return r;

        r = sd_bus_message_append(call, "us", flags, /* cancellation_id= */ "");
        if (r < 0)
                return r;

        /* Default timeout: an authentication dialog that takes longer would outlast our caller's own
         * method call timeout anyway. */
        r = sd_bus_call_async(bus, &q->slot, call, on_check_authorization_reply, q, /* usec= */ 0);
        if (r < 0)
                return r;
        q->registry->n_in_flight++;
        return 0;
}

static int polkit_query_start_check(PolkitQuery *q, const char *action, const char **details, bool test) {
        PolkitRegistry *registry = q->registry;
        PolkitCheck *c;
        int r;

        c = calloc(1, sizeof(PolkitCheck));
        if (!c)
                return -ENOMEM;
        c->verdict = POLKIT_VERDICT_PENDING;
        c->test = test;
        c->action = strdup(action);
        c->details = details_copy(details);
        if (!c->action || !c->details) {
                polkit_check_free(c);
                return -ENOMEM;
        }
        c->next = q->checks;
        q->checks = c;

        if (registry->n_in_flight < POLKIT_MAX_IN_FLIGHT) {
                r = polkit_query_send(q);
                if (r < 0) {
                        q->checks = c->next;
                        polkit_check_free(c);
                        return r;
                }
        } else {
                q->waiting = true;
                if (registry->wait_tail)
                        registry->wait_tail->wait_next = q;
                else
                        registry->wait_head = q;
                registry->wait_tail = q;
        }

        /* A second question about the same message: keep the first answer until this one is in. */
        if (q->release_source)
                (void) sd_event_source_set_enabled(q->release_source, SD_EVENT_OFF);

        return 0;
}

static int polkit_check_to_result(PolkitCheck *c, sd_bus_message *m, sd_bus_error *error) {
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

        case POLKIT_VERDICT_PENDING:
        default:
                /* Not reachable: the message is only dispatched again once the answer is in. */
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Authorization for '%s' is still pending.", c->action);
        }
}

/* 1 if the sender's effective UID (from the bus credentials) is 0, 0 if not, negative errno on failure. */
static int bus_sender_is_root(BusCreds *creds, sd_bus_message *m) {
        uid_t uid;
        int r;

        if (!m)
                return -EINVAL;
        /* The uid the bus driver authenticated for the sender's connection. */
        r = bus_creds_sender_uid(creds, m, &uid);
        if (r < 0)
                return r;
        return uid == 0;
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
        int r;

        if (!m || !action || !registry)
                return -EINVAL;

        r = bus_sender_is_root(*registry ? (*registry)->creds : NULL, m);
        if (r < 0)
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Cannot determine the caller's identity: %s", strerror(-r));
        if (r > 0) {
                *ret_check = NULL;
                return 1;
        }

        q = polkit_registry_find(*registry, m);
        if (q) {
                if (q->slot || q->waiting)
                        return 0; /* Still waiting for polkit; we will be called again. */

                c = polkit_query_find_check(q, action, details, test);
                if (c) {
                        *ret_check = c;
                        return 1;
                }
        } else {
                if (!*registry) {
                        *registry = calloc(1, sizeof(PolkitRegistry));
                        if (!*registry)
                                return bus_error_set_errnof(error, -ENOMEM, NULL);
                }

                q = calloc(1, sizeof(PolkitQuery));
                if (!q)
                        return bus_error_set_errnof(error, -ENOMEM, NULL);

                q->request = sd_bus_message_ref(m);
                q->registry = *registry;
                LIST_PREPEND((*registry)->queries, q);
                new_query = true;
        }

        r = polkit_query_start_check(q, action, details, test);
        if (r < 0) {
                if (new_query)
                        polkit_query_free(q);
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Cannot ask polkit to authorize '%s': %s", action, strerror(-r));
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
        return polkit_check_to_result(c, m, error);
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
                return polkit_check_to_result(c, m, error);
        }
}
