/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "manager.h"
#include "own-view-rules.h"
#include "user-util.h"

/* A method call in flight. Every method follows the same steps: read, validate, authorize,
 * act, reply. Authorizing may wait for polkit (the message is dispatched to the method again
 * once polkit answered: bus-polkit.h), acting may wait for a child or the builder; the
 * request keeps what must survive that: when the call arrived (its deadline, OperationTimeoutSec=
 * from arrival — time waiting in a queue included; time waiting for a person to authenticate
 * interactively is not), and whether the rules of own-view-rules.h asked for 'manage'.
 *
 * Only this and the *-dbus.c files build sd_bus_error: the core returns an NsmError, named
 * where the condition was known (nsm-error.h), and the glue turns it into the reply's error in
 * one step (bus_error_set_nsm(), bus_request_reply_error()). */

/* Where a request is. It is made at its call's first dispatch; its method's step function
 * runs (again at each re-dispatch), and either answers within it or starts what answers later.
 * The request is freed once answered and its step has returned. */
typedef enum BusRequestState {
        BUS_REQUEST_NEW,            /* made, its step not run yet */
        BUS_REQUEST_RUNNING,        /* the step runs */
        BUS_REQUEST_RUNNING_WAITS,  /* the step runs and started what answers later */
        BUS_REQUEST_REPLIED,        /* answered while the step still runs: ends when it returns */
        BUS_REQUEST_WAITING,        /* the step returned; an answer or a re-dispatch comes later */
        BUS_REQUEST_DONE,           /* answered and returned: to be freed */
        _BUS_REQUEST_STATE_MAX,
        _BUS_REQUEST_STATE_INVALID = -EINVAL,
} BusRequestState;

typedef enum BusRequestEvent {
        BUS_REQUEST_STEP,           /* its method runs (first dispatch, or again) */
        BUS_REQUEST_WAIT,           /* the step starts what answers later (bus_request_wait()) */
        BUS_REQUEST_UNWAIT,         /* ... which then failed to start (bus_request_unwait()) */
        BUS_REQUEST_REPLY,          /* answered (bus_request_reply*()) */
        BUS_REQUEST_RETURN,         /* the step returned ≥ 0 */
        BUS_REQUEST_FAIL,           /* the step returned < 0: sd-bus answers with its error */
        _BUS_REQUEST_EVENT_MAX,
} BusRequestEvent;

/* The state 'event' leads to from 'state', or _BUS_REQUEST_STATE_INVALID where it is a bug (a
 * second answer, a wait outside a step, a step within a step). */
BusRequestState bus_request_state_next(BusRequestState state, BusRequestEvent event);
const char *bus_request_state_to_string(BusRequestState state);
const char *bus_request_event_to_string(BusRequestEvent event);

struct BusRequest {
        Manager *manager;
        sd_bus_message *message;
        uint64_t deadline;
        BusRequestState state;
        bool escalated;          /* the rules asked for manage: ask polkit for it */
        bool charged;            /* counted against the caller's RateLimitBurst= */
        bool own;                /* acting for a user on their own view, held to the rules */
        char *rule;              /* the rule that asked for manage, for a refusal */
        Credentials caller;      /* NSS credentials of the caller, when 'own' */
        bool caller_known;       /* 'caller' was looked up (kept across the call's dispatches) */
        void *data;              /* the method's own */
        void (*free_data)(void *data);
        BusRequest *prev, *next;
};

/* The polkit actions (policy/org.example.NSManager.policy). */
#define ACTION_MANAGE "org.example.NSManager.manage"
#define ACTION_MANAGE_OWN "org.example.NSManager.manage-own"
#define ACTION_ATTACH "org.example.NSManager.attach"
#define ACTION_ATTACH_OWN "org.example.NSManager.attach-own"

typedef int (*BusRequestStep)(BusRequest *req, sd_bus_error *error);

/* The method's handler: runs 'step' for this message's request (created at its first
 * dispatch). 'step' returns < 0 (sd-bus replies that error), or ≥ 0 having replied, or having
 * called bus_request_wait() (a reply or a re-dispatch comes later, bus_request_reply*()). */
int bus_request_run(sd_bus_message *message, Manager *m, sd_bus_error *error, BusRequestStep step);
/* The same, with req->data set (at the first dispatch) to 'data', freed with 'free_data'. */
int bus_request_run_with(sd_bus_message *message, Manager *m, sd_bus_error *error, BusRequestStep step, void *data,
                         void (*free_data)(void *data));

/* From a step: what it starts answers later (call it before starting it, as it may answer at
 * once); bus_request_unwait() if it then failed to start. Anywhere else they abort. */
void bus_request_wait(BusRequest *req);
void bus_request_unwait(BusRequest *req);

/* Replies from an asynchronous completion, and ends the request. */
void bus_request_reply(BusRequest *req, sd_bus_message *reply);
void bus_request_reply_error(BusRequest *req, const NsmError *e);
/* The same for a system call of the glue that failed with 'r' (message NULL: r's text). */
void bus_request_reply_errno(BusRequest *req, int r, const char *message);
/* For a method that returns nothing: the error 'e', or (NULL) an empty reply. */
void bus_request_reply_result(BusRequest *req, const NsmError *e);

/* Drops every request (at exit): their callers get no reply from us. */
void bus_requests_free(Manager *m);

/* The caller's uid, as the bus driver authenticated it. */
int bus_request_caller_uid(BusRequest *req, uid_t *ret);
/* The same, or AccessDenied in 'error' if it cannot be learnt. */
int bus_message_caller_uid(Manager *m, sd_bus_message *message, uid_t *ret, sd_bus_error *error);
/* AccessDenied ("'what' is only available to root") unless the caller is root. */
int bus_message_require_root(Manager *m, sd_bus_message *message, const char *what, sd_bus_error *error);
/* Unprivileged callers' calls that make the daemon work are rate-limited per uid (once per
 * call, whatever it is dispatched again for): LimitExceeded (manager_rate_limit()). Every call
 * that asks polkit is charged before it asks (bus_request_authorize()), refused ones included. */
int bus_request_rate_limit(BusRequest *req, sd_bus_error *error);
/* The same for a call without a BusRequest (Attach): counts the call of 'uid' (root is not
 * limited) and sets LimitExceeded beyond the burst. */
int bus_rate_limit_uid(Manager *m, uid_t uid, sd_bus_error *error);

/* The user a method names (any spelling NSS knows, or a UID in decimal; docs/interface.md),
 * resolved once to uid and canonical name: 1 with *ret; 0 while NSS is asked in a child
 * (user-lookup.h), and the message is dispatched to its method again when it answered (the
 * method then finds the answer); < 0 with 'error' set (NoSuchUser, LimitExceeded, TimedOut, …).
 * A user with a namespace is known without NSS, by the namespace's name or uid. */
int bus_resolve_user(Manager *m, sd_bus_message *message, const char *user, uint64_t deadline, UserRecord *ret,
                     sd_bus_error *error);
/* The same for a request (its deadline), charged to the caller's rate limit first when NSS
 * must be asked; 0 has called bus_request_wait(). */
int bus_request_resolve_user(BusRequest *req, const char *user, UserRecord *ret, sd_bus_error *error);
/* Who the caller 'uid' is to the kernel, as the daemon acts as her: her record (her view's, or
 * NSS's in a child) and her groups (NSS's initgroups in a child, group-lookup.h), never asked on
 * the loop. 1 with *ret (and *ret_record unless NULL); 0 while a child asks, and the message is
 * dispatched to its method again when it answered; < 0 with 'error' set (TimedOut at 'deadline',
 * NoSuchUser, LimitExceeded, …). */
int bus_caller_credentials(Manager *m, sd_bus_message *message, uid_t uid, uint64_t deadline, UserRecord *ret_record,
                           Credentials *ret, sd_bus_error *error);
/* The namespace a spelling names without NSS: by the namespace's name, or a decimal UID. */
Namespace *bus_namespace_of_user(Manager *m, const char *user);
/* Whether resolving 'user' would start or join an NSS lookup (no namespace, no cached answer). */
bool bus_user_needs_lookup(Manager *m, const char *user);

/* polkit for 'action' (details: key, value, …, NULL), the call charged to the caller's rate
 * limit first. 1: go on; 0: waiting (bus_request_wait() called); < 0: refused (error set). Root is
 * always allowed. */
int bus_request_authorize(BusRequest *req, const char *action, const char **details, sd_bus_error *error);

/* For a change to a user's view: root goes on; a user acting on their own view needs
 * manage-own where own-view-rules.h allows the request (req->own is then set and
 * req->caller loaded), manage otherwise; anybody else manage. */
int bus_request_authorize_view(BusRequest *req, const char *user, uid_t owner, OwnViewRequest what, const char **details,
                               sd_bus_error *error);

/* An operation run for req->own failed with a rule's refusal (AccessDenied): asks polkit for
 * manage; if it agrees, the method runs again with full power, else the caller gets the
 * rule's sentence. Returns true if it took over the reply. */
bool bus_request_escalate(BusRequest *req, const NsmError *e, const char **details);

/* Can(method, user): answers "yes", "challenge" or "no" for the caller calling the Manager's
 * 'method' on user's view (NULL or "": the host), of which 'owner' is the user, as the methods
 * choose the action before they look at paths or files: root yes; what everyone may call yes;
 * what can never succeed there (EnslaveSubtree of the host, BindMount of the host, a root-only
 * method for anybody else) no; otherwise what polkit says, asked without interaction, of the
 * action the method would ask for (on one's own view, the request-level rules': manage-own,
 * attach-own). InvalidArgs for a method the Manager does not have. Replies itself (≥ 0) or
 * waits (bus_request_wait()); < 0 with 'error' set. */
int bus_request_can(BusRequest *req, const char *method, const char *user, uid_t owner, sd_bus_error *error);
