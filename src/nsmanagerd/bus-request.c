/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <inttypes.h>

#include "audit.h"
#include "bus-creds.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "bus-request.h"
#include "list.h"
#include "log.h"
#include "namespace.h"
#include "parse-util.h"
#include "user-lookup.h"
#include "text-escape.h"

static BusRequest *bus_request_free(BusRequest *req) {
        if (!req)
                return NULL;
        LIST_REMOVE(req->manager->requests, req);
        if (req->free_data)
                req->free_data(req->data);
        sd_bus_message_unref(req->message);
        credentials_done(&req->caller);
        free(req->rule);
        free(req);
        return NULL;
}

void bus_requests_free(Manager *m) {
        while (m->requests)
                bus_request_free(m->requests);
}

static BusRequest *bus_request_find(Manager *m, sd_bus_message *message) {
        for (BusRequest *r = m->requests; r; r = r->next)
                if (r->message == message)
                        return r;
        return NULL;
}

/* Every legal transition; anything else is a bug in a method (a second answer, a wait outside
 * its step). */
static const BusRequestState transitions[_BUS_REQUEST_STATE_MAX][_BUS_REQUEST_EVENT_MAX] = {
        [BUS_REQUEST_NEW] = {
                [BUS_REQUEST_STEP] = BUS_REQUEST_RUNNING,
        },
        [BUS_REQUEST_RUNNING] = {
                [BUS_REQUEST_WAIT] = BUS_REQUEST_RUNNING_WAITS,
                [BUS_REQUEST_REPLY] = BUS_REQUEST_REPLIED,
                [BUS_REQUEST_RETURN] = BUS_REQUEST_DONE,       /* it replied with sd-bus directly */
                [BUS_REQUEST_FAIL] = BUS_REQUEST_DONE,
        },
        [BUS_REQUEST_RUNNING_WAITS] = {
                [BUS_REQUEST_WAIT] = BUS_REQUEST_RUNNING_WAITS,
                [BUS_REQUEST_UNWAIT] = BUS_REQUEST_RUNNING,
                [BUS_REQUEST_REPLY] = BUS_REQUEST_REPLIED,     /* what it started answered at once */
                [BUS_REQUEST_RETURN] = BUS_REQUEST_WAITING,
                /* A polkit question or a lookup in flight holds the message, not the request. */
                [BUS_REQUEST_FAIL] = BUS_REQUEST_DONE,
        },
        [BUS_REQUEST_REPLIED] = {
                [BUS_REQUEST_RETURN] = BUS_REQUEST_DONE,
        },
        [BUS_REQUEST_WAITING] = {
                [BUS_REQUEST_STEP] = BUS_REQUEST_RUNNING,      /* re-dispatched (polkit, NSS) */
                /* A completion that asks again before it answers (escalation to polkit). */
                [BUS_REQUEST_WAIT] = BUS_REQUEST_WAITING,
                [BUS_REQUEST_REPLY] = BUS_REQUEST_DONE,
        },
};

static const char *const state_names[_BUS_REQUEST_STATE_MAX] = {
        [BUS_REQUEST_NEW] = "new",
        [BUS_REQUEST_RUNNING] = "running",
        [BUS_REQUEST_RUNNING_WAITS] = "running-waits",
        [BUS_REQUEST_REPLIED] = "replied",
        [BUS_REQUEST_WAITING] = "waiting",
        [BUS_REQUEST_DONE] = "done",
};

static const char *const event_names[_BUS_REQUEST_EVENT_MAX] = {
        [BUS_REQUEST_STEP] = "step",
        [BUS_REQUEST_WAIT] = "wait",
        [BUS_REQUEST_UNWAIT] = "unwait",
        [BUS_REQUEST_REPLY] = "reply",
        [BUS_REQUEST_RETURN] = "return",
        [BUS_REQUEST_FAIL] = "fail",
};

const char *bus_request_state_to_string(BusRequestState state) {
        return state >= 0 && state < _BUS_REQUEST_STATE_MAX ? state_names[state] : NULL;
}

const char *bus_request_event_to_string(BusRequestEvent event) {
        return event >= 0 && event < _BUS_REQUEST_EVENT_MAX ? event_names[event] : NULL;
}

BusRequestState bus_request_state_next(BusRequestState state, BusRequestEvent event) {
        if (state < 0 || state >= _BUS_REQUEST_STATE_MAX || event < 0 || event >= _BUS_REQUEST_EVENT_MAX)
                return _BUS_REQUEST_STATE_INVALID;
        /* NEW is 0 and never a transition's target: 0 in the table is "no such transition". */
        return transitions[state][event] ?: _BUS_REQUEST_STATE_INVALID;
}

static void bus_request_transition(BusRequest *req, BusRequestEvent event) {
        BusRequestState next = bus_request_state_next(req->state, event);

        if (next < 0)
                log_error("%s(): a request in state '%s' cannot take '%s'.",
                          sd_bus_message_get_member(req->message) ?: "?", bus_request_state_to_string(req->state),
                          bus_request_event_to_string(event));
        assert(next >= 0);
        req->state = next;
}

void bus_request_wait(BusRequest *req) {
        bus_request_transition(req, BUS_REQUEST_WAIT);
}

void bus_request_unwait(BusRequest *req) {
        bus_request_transition(req, BUS_REQUEST_UNWAIT);
}

/* The request replied: it ends now, or when its step function returns. */
static void bus_request_finish(BusRequest *req) {
        bus_request_transition(req, BUS_REQUEST_REPLY);
        if (req->state == BUS_REQUEST_DONE)
                bus_request_free(req);
}

int bus_request_run(sd_bus_message *message, Manager *m, sd_bus_error *error, BusRequestStep step) {
        return bus_request_run_with(message, m, error, step, NULL, NULL);
}

int bus_request_run_with(sd_bus_message *message, Manager *m, sd_bus_error *error, BusRequestStep step, void *data,
                         void (*free_data)(void *data)) {
        BusRequest *req;
        int r;

        req = bus_request_find(m, message);
        if (req) {
                if (free_data)
                        free_data(data);
        } else {
                req = calloc(1, sizeof(BusRequest));
                if (!req)
                        return -ENOMEM;
                /* The deadline counts from the call's arrival: time in a queue counts too. */
                *req = (BusRequest) { .manager = m, .message = sd_bus_message_ref(message), .deadline = manager_deadline(m),
                                      .data = data, .free_data = free_data };
                LIST_PREPEND(m->requests, req);
                if (log_get_max_level() >= LOG_DEBUG) {
                        uid_t uid = (uid_t) -1;
                        pid_t pid = 0;

                        (void) bus_creds_sender_uid(m->creds, message, &uid);
                        (void) bus_creds_sender_pid(m->creds, message, &pid);
                        log_debug("%s() from %s, uid %" PRIu32 ", pid %d.", sd_bus_message_get_member(message),
                                  sd_bus_message_get_sender(message) ?: "a private connection", (uint32_t) uid, (int) pid);
                }
        }
        bus_request_transition(req, BUS_REQUEST_STEP);
        r = step(req, error);
        /* Answered now: the step failed (sd-bus sends 'error'), or replied itself. Answers
         * from bus_request_reply*() were recorded there. */
        if (r < 0 || req->state == BUS_REQUEST_RUNNING)
                audit_call_result(m, message, error, r);
        bus_request_transition(req, r < 0 ? BUS_REQUEST_FAIL : BUS_REQUEST_RETURN);
        if (req->state == BUS_REQUEST_DONE)
                bus_request_free(req);
        /* Handled, now or later: 0 would tell sd-bus to look for another handler. */
        return r < 0 ? r : 1;
}

void bus_request_reply(BusRequest *req, sd_bus_message *reply) {
        int r;

        audit_call(req->manager, req->message, NULL);
        r = sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to send a reply, ignoring (the caller has gone?): %m");
        bus_request_finish(req);
}

void bus_request_reply_error(BusRequest *req, const NsmError *e) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        (void) bus_error_set_nsm(&error, e);
        audit_call(req->manager, req->message, &error);
        r = sd_bus_reply_method_error(req->message, &error);
        if (r < 0)
                log_debug_errno(r, "Failed to send an error reply, ignoring (the caller has gone?): %m");
        bus_request_finish(req);
}

void bus_request_reply_errno(BusRequest *req, int r, const char *message) {
        _cleanup_(nsm_error_done) NsmError e = {};

        (void) nsm_error_set(&e, NSM_ERROR_SYSTEM, r, message);
        bus_request_reply_error(req, &e);
}

void bus_request_reply_result(BusRequest *req, const NsmError *e) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        if (e)
                bus_request_reply_error(req, e);
        else if (sd_bus_message_new_method_return(req->message, &reply) < 0)
                bus_request_reply_errno(req, -ENOMEM, NULL);
        else
                bus_request_reply(req, reply);
}

int bus_request_caller_uid(BusRequest *req, uid_t *ret) {
        return bus_creds_sender_uid(req->manager->creds, req->message, ret);
}

int bus_message_caller_uid(Manager *m, sd_bus_message *message, uid_t *ret, sd_bus_error *error) {
        int r = bus_creds_sender_uid(m->creds, message, ret);
        if (r < 0)
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Cannot determine the caller: %s", strerror(-r));
        return 0;
}

int bus_message_require_root(Manager *m, sd_bus_message *message, const char *what, sd_bus_error *error) {
        uid_t uid;
        int r = bus_message_caller_uid(m, message, &uid, error);
        if (r < 0)
                return r;
        if (uid != 0)
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED, "%s is only available to root.", what);
        return 0;
}

int bus_rate_limit_uid(Manager *m, uid_t uid, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        int r = manager_rate_limit(m, uid, &e);

        if (r >= 0)
                return 0;
        if (!nsm_error_is_set(&e))
                return bus_error_set_errnof(error, r, "Failed to count the call of UID %u: %m", (unsigned) uid);
        return bus_error_set_nsm(error, &e);
}

int bus_request_rate_limit(BusRequest *req, sd_bus_error *error) {
        uid_t uid;

        if (req->charged || bus_request_caller_uid(req, &uid) < 0)
                return 0;
        req->charged = true;
        return bus_rate_limit_uid(req->manager, uid, error);
}

typedef struct LookupWaiter {
        Manager *manager;
        sd_bus_message *message;
} LookupWaiter;

/* NSS answered (the answer is cached): the method runs again from the start, and finds it. */
static void on_user_looked_up(void *userdata) {
        LookupWaiter *w = userdata;
        sd_bus_message *message = w->message;
        int r;

        r = sd_bus_message_rewind(message, /* complete= */ true);
        if (r >= 0)
                r = sd_bus_enqueue_for_read(sd_bus_message_get_bus(message), message);
        if (r < 0) {
                log_debug_errno(r, "Failed to run %s() again after a user lookup, answering it: %m",
                                sd_bus_message_get_member(message));
                (void) sd_bus_reply_method_errorf(message, SD_BUS_ERROR_FAILED,
                                                  "Cannot finish the call after looking up the user: %s", strerror(-r));
                /* Its connection is gone (a login's private one, say): the request ends here, or
                 * it would hold the message, and the connection with it, until the daemon exits. */
                bus_request_free(bus_request_find(w->manager, message));
        }
        sd_bus_message_unref(message);
        free(w);
}

static int user_record_of_namespace(const Namespace *ns, UserRecord *ret) {
        *ret = (UserRecord) { .name = strdup(ns->name), .uid = ns->uid, .gid = ns->gid, .home = strdup(ns->home),
                              .shell = strdup(ns->shell) };
        if (!ret->name || !ret->home || !ret->shell) {
                user_record_done(ret);
                return -ENOMEM;
        }
        return 1;
}

int bus_resolve_user(Manager *m, sd_bus_message *message, const char *user, uint64_t deadline, UserRecord *ret,
                     sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        Namespace *ns;
        uid_t caller;
        int r;

        /* A namespace's name is the canonical one NSS gave when it was made: no lookup for the
         * logins of a user whose namespace exists. */
        ns = bus_namespace_of_user(m, user);
        if (ns)
                return user_record_of_namespace(ns, ret);
        if (!*user)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_USER, "No user name given.");
        if (strlen(user) > USER_NAME_BYTES_MAX)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_USER, "No user has a name of more than %u bytes.",
                                      USER_NAME_BYTES_MAX);
        r = bus_message_caller_uid(m, message, &caller, error);
        if (r < 0)
                return r;
        LookupWaiter *w = calloc(1, sizeof(LookupWaiter));
        if (!w)
                return -ENOMEM;
        *w = (LookupWaiter) { .manager = m, .message = message };
        r = user_lookup(m->user_lookups, user, caller, deadline, on_user_looked_up, w, ret, &e);
        if (r == 0) {
                sd_bus_message_ref(message);
                return 0;
        }
        free(w);
        if (r < 0)
                return bus_error_set_nsm(error, &e);
        return 1;
}

Namespace *bus_namespace_of_user(Manager *m, const char *user) {
        Namespace *ns = manager_get_namespace(m, user);
        uid_t uid;

        if (!ns && parse_uid(user, &uid) >= 0)
                ns = manager_get_namespace_by_uid(m, uid);
        return ns;
}

bool bus_user_needs_lookup(Manager *m, const char *user) {
        return *user && !bus_namespace_of_user(m, user) && !user_lookup_answered(m->user_lookups, user);
}

int bus_caller_credentials(Manager *m, sd_bus_message *message, uid_t uid, uint64_t deadline, UserRecord *ret_record,
                           Credentials *ret, sd_bus_error *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        _cleanup_(nsm_error_done) NsmError e = {};
        char number[16];
        int r;

        /* Who she is (the record of her view, or NSS in a child), then her groups (NSS in a child):
         * neither on the loop, where a directory server slow for her would hold up every call. */
        snprintf(number, sizeof number, "%" PRIu32, (uint32_t) uid);
        r = bus_resolve_user(m, message, number, deadline, &u, error);
        if (r <= 0)
                return r;
        if (u.uid != uid)       /* a user whose name is another's uid in decimal */
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_USER, "UID %u has no user record (NSS).", (unsigned) uid);

        LookupWaiter *w = calloc(1, sizeof(LookupWaiter));
        if (!w)
                return -ENOMEM;
        *w = (LookupWaiter) { .manager = m, .message = message };
        r = group_lookup(m->group_lookups, &u, uid, deadline, on_user_looked_up, w, ret, NULL, NULL, &e);
        if (r == 0) {
                sd_bus_message_ref(message);
                return 0;
        }
        free(w);
        if (r < 0)
                return bus_error_set_nsm(error, &e);
        if (ret_record)
                *ret_record = TAKE_STRUCT(u);
        return 1;
}

int bus_request_resolve_user(BusRequest *req, const char *user, UserRecord *ret, sd_bus_error *error) {
        int r;

        /* A name only NSS can answer costs a child: charged like the work it is, before it starts
         * (GetNamespace and Can are not charged otherwise). */
        if (bus_user_needs_lookup(req->manager, user)) {
                r = bus_request_rate_limit(req, error);
                if (r < 0)
                        return r;
        }
        r = bus_resolve_user(req->manager, req->message, user, req->deadline, ret, error);
        if (r == 0)
                bus_request_wait(req);
        return r;
}

int bus_request_authorize(BusRequest *req, const char *action, const char **details, sd_bus_error *error) {
        Manager *m = req->manager;
        uid_t uid;
        int r;

        r = bus_message_caller_uid(req->manager, req->message, &uid, error);
        if (r < 0)
                return r;
        if (uid == 0)
                return 1;
        /* Before polkit is asked: each question costs polkitd's time and a reply the bus counts. */
        r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        r = bus_verify_polkit_async(req->message, action, details, &m->polkit_registry, error);
        if (r == 0) {
                bus_request_wait(req);
                return 0;
        }
        if (r < 0 && req->rule) {
                /* The rule is what the caller can act on; polkit's answer is the detail (its
                 * sentence was escaped for the bus: back to its bytes, escaped once below). */
                _cleanup_free_ char *answer = NULL;
                if (!error->message || text_unescape(error->message, &answer) < 0)
                        answer = strdup(error->message ?: error->name);
                sd_bus_error_free(error);
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED, "%s This needs %s, which polkit refused: %s",
                                      req->rule, action, answer ?: "?");
        }
        if (r > 0 && sd_bus_message_get_allow_interactive_authorization(req->message) > 0)
                /* A person may have typed a password meanwhile: the work's clock starts now. */
                req->deadline = manager_deadline(m);
        return r;
}

int bus_request_authorize_view(BusRequest *req, const char *user, uid_t owner, OwnViewRequest what, const char **details,
                               sd_bus_error *error) {
        Manager *m = req->manager;
        _cleanup_(nsm_error_done) NsmError reason = {};
        const char *action = ACTION_MANAGE;
        const char *path = NULL;
        uid_t uid;
        int r;

        r = bus_message_caller_uid(req->manager, req->message, &uid, error);
        if (r < 0)
                return r;
        req->own = false;
        if (uid == 0)
                return 1;
        for (const char **k = details; k && k[0] && k[1]; k += 2)
                if (streq(k[0], "path"))
                        path = k[1];

        if (user && *user && uid == owner && !req->escalated) {
                r = own_view_check_request(what, path ?: "/", m->config.shared_subtrees, &reason);
                if (r >= 0)
                        action = ACTION_MANAGE_OWN;
                else {
                        free(req->rule);
                        req->rule = TAKE_PTR(reason.message);
                }
        }
        /* Her credentials before polkit: polkit's answer is kept for the one dispatch that follows
         * it, so a lookup after it would have polkit asked (and the call charged) again. */
        if (streq(action, ACTION_MANAGE_OWN) && !req->caller_known) {
                credentials_done(&req->caller);
                r = bus_caller_credentials(m, req->message, uid, req->deadline, NULL, &req->caller, error);
                if (r == 0)
                        bus_request_wait(req);
                if (r <= 0)
                        return r;
                req->caller_known = true;
        }
        r = bus_request_authorize(req, action, details, error);
        if (r <= 0)
                return r;
        req->own = streq(action, ACTION_MANAGE_OWN);
        return 1;
}

bool bus_request_escalate(BusRequest *req, const NsmError *e, const char **details) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(nsm_error_done) NsmError refused = {};
        Manager *m = req->manager;
        int r;

        if (!req->own || req->escalated || !e || e->code != NSM_ERROR_ACCESS_DENIED)
                return false;
        req->escalated = true;
        free(req->rule);
        req->rule = e->message ? strdup(e->message) : NULL;

        /* polkit answers by dispatching the message to its method again, which finds this
         * request escalated and asks for manage: then granted, or refused with the rule. */
        r = bus_verify_polkit_async(req->message, ACTION_MANAGE, details, &m->polkit_registry, &error);
        if (r == 0) {
                bus_request_wait(req);
                return true;
        }
        if (r > 0) {
                /* Answered before (the same message asked for manage already): it said yes, and
                 * this can only be a rule the files enforce for everybody. */
                return false;
        }
        (void) nsm_error_setf(&refused, NSM_ERROR_ACCESS_DENIED, "%s", req->rule ?: error.message ?: "Access denied.");
        bus_request_reply_error(req, &refused);
        return true;
}

/* ---- Can() ---- */

/* What a method needs where it is called; the order of the table is the interface's. */
typedef enum Need {
        NEED_NOTHING,            /* open to everyone */
        NEED_ROOT,               /* root only, whatever polkit says */
        NEED_IMPOSSIBLE,         /* refused there for everybody (InvalidArgs, NoSuchUser, …) */
        NEED_MANAGE,
        NEED_MANAGE_OWN,         /* the rules may still ask for manage at the call, by path or file */
        NEED_ATTACH,
        NEED_ATTACH_OWN,
} Need;

static const struct {
        const char *method;
        Need host, own, other;   /* on the host (""), on the caller's own view, on another's */
} can_table[] = {
        { "CreateNamespace",    NEED_IMPOSSIBLE, NEED_MANAGE,     NEED_MANAGE },
        { "RemoveNamespace",    NEED_IMPOSSIBLE, NEED_MANAGE,     NEED_MANAGE },
        { "GetNamespace",       NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "GetNamespaceByUID",  NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "ListNamespaces",     NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "OpenSession",        NEED_IMPOSSIBLE, NEED_ROOT,       NEED_ROOT },
        { "CloseSession",       NEED_IMPOSSIBLE, NEED_ROOT,       NEED_ROOT },
        { "OpenMountNamespace", NEED_IMPOSSIBLE, NEED_ROOT,       NEED_ROOT },
        { "ShareSubtree",       NEED_MANAGE,     NEED_MANAGE_OWN, NEED_MANAGE },
        { "EnslaveSubtree",     NEED_IMPOSSIBLE, NEED_MANAGE_OWN, NEED_MANAGE },
        { "SetPropagation",     NEED_MANAGE,     NEED_MANAGE_OWN, NEED_MANAGE },
        { "BindMount",          NEED_IMPOSSIBLE, NEED_MANAGE_OWN, NEED_MANAGE },
        { "Unmount",            NEED_IMPOSSIBLE, NEED_MANAGE_OWN, NEED_MANAGE },
        { "UnmountById",        NEED_IMPOSSIBLE, NEED_MANAGE_OWN, NEED_MANAGE },
        { "SetPropagationById", NEED_MANAGE,     NEED_MANAGE_OWN, NEED_MANAGE },
        { "GetMounts",          NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "GetMountsEx",        NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "CanMount",           NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "ListProcesses",      NEED_IMPOSSIBLE, NEED_NOTHING,    NEED_MANAGE },
        { "SetLinger",          NEED_IMPOSSIBLE, NEED_MANAGE_OWN, NEED_MANAGE },
        { "Attach",             NEED_IMPOSSIBLE, NEED_ROOT,       NEED_ROOT },   /* takes fds: root's */
        { "OpenAttach",         NEED_IMPOSSIBLE, NEED_ATTACH_OWN, NEED_ATTACH },
        { "ReloadConfig",       NEED_MANAGE,     NEED_IMPOSSIBLE, NEED_IMPOSSIBLE },
        { "Eject",              NEED_MANAGE,     NEED_IMPOSSIBLE, NEED_IMPOSSIBLE },
        { "Subscribe",          NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "Unsubscribe",        NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "SubscribeViews",     NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "UnsubscribeViews",   NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
        { "SubscribeMountCounts", NEED_NOTHING,  NEED_NOTHING,    NEED_NOTHING },
        { "UnsubscribeMountCounts", NEED_NOTHING, NEED_NOTHING,   NEED_NOTHING },
        { "Can",                NEED_NOTHING,    NEED_NOTHING,    NEED_NOTHING },
};

static const char *const need_action[] = {
        [NEED_MANAGE] = ACTION_MANAGE,
        [NEED_MANAGE_OWN] = ACTION_MANAGE_OWN,
        [NEED_ATTACH] = ACTION_ATTACH,
        [NEED_ATTACH_OWN] = ACTION_ATTACH_OWN,
};

static int can_reply(BusRequest *req, const char *answer) {
        return sd_bus_reply_method_return(req->message, "s", answer);
}

int bus_request_can(BusRequest *req, const char *method, const char *user, uid_t owner, sd_bus_error *error) {
        PolkitResult result;
        Need need = NEED_IMPOSSIBLE;
        bool found = false;
        uid_t uid;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(can_table); i++)
                if (streq(can_table[i].method, method)) {
                        found = true;
                        break;
                }
        if (!found)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS,
                                      "The Manager has no method '%s' (Can() answers for the Manager's methods, "
                                      "e.g. 'SetLinger', 'BindMount').", method);
        r = bus_message_caller_uid(req->manager, req->message, &uid, error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(can_table); i++)
                if (streq(can_table[i].method, method))
                        need = !user || !*user ? can_table[i].host : uid == owner ? can_table[i].own : can_table[i].other;

        switch (need) {
        case NEED_NOTHING:
                return can_reply(req, "yes");
        case NEED_IMPOSSIBLE:
                return can_reply(req, "no");
        case NEED_ROOT:
                return can_reply(req, uid == 0 ? "yes" : "no");
        default:
                break;
        }
        if (uid == 0)
                return can_reply(req, "yes");
        /* Each answer costs a polkit round trip: counted as the calls that make the daemon work. */
        r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        r = bus_test_polkit_async(req->message, need_action[need], (const char *[]) { "user", user ?: "", NULL },
                                  &req->manager->polkit_registry, &result, error);
        if (r < 0)
                return r;
        if (r == 0) {
                bus_request_wait(req);
                return 0;
        }
        return can_reply(req, result == POLKIT_RESULT_YES ? "yes" : result == POLKIT_RESULT_CHALLENGE ? "challenge" : "no");
}
