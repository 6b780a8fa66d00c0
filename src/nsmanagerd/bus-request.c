/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "audit.h"
#include "bus-creds.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "bus-request.h"
#include "list.h"
#include "log.h"
#include "namespace.h"

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

/* The request replied: it ends now, or when its step function returns. */
static void bus_request_finish(BusRequest *req) {
        if (req->in_step)
                req->finished = true;
        else
                bus_request_free(req);
}

static int bus_request_step(BusRequest *req, BusRequestStep step, sd_bus_error *error) {
        int r;

        req->pending = false;
        req->in_step = true;
        r = step(req, error);
        req->in_step = false;
        req->dispatched = true;
        return r;
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

                        (void) bus_message_get_sender_uid(message, &uid);
                        (void) bus_message_get_sender_pid(message, &pid);
                        log_debug("%s() from %s, uid %d, pid %d.", sd_bus_message_get_member(message),
                                  sd_bus_message_get_sender(message) ?: "a private connection", (int) uid, (int) pid);
                }
        }
        r = bus_request_step(req, step, error);
        /* Answered now: the step failed (sd-bus sends 'error'), or replied itself. Answers
         * from bus_request_reply*() were recorded there. */
        if (r < 0) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;

                audit_call(m, message, sd_bus_error_is_set(error) ? error :
                           (sd_bus_error_set_errno(&e, r), &e));
        } else if (!req->finished && !req->pending)
                audit_call(m, message, NULL);
        if (r < 0 || req->finished || !req->pending)
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

int bus_error_from_errno(sd_bus_error *error, int r, const char *message) {
        const char *name;

        switch (-r) {
        case ENOENT:
        case ENOTDIR:
        case ELOOP:
        case EXDEV:
        case EINVAL:
        case ENAMETOOLONG:
                name = NSM_ERROR_INVALID_PATH;
                break;
        case EBUSY:
                name = NSM_ERROR_BUSY;
                break;
        case ETIMEDOUT:
                name = NSM_ERROR_TIMED_OUT;
                break;
        case EDQUOT:
                name = NSM_ERROR_LIMIT_EXCEEDED;
                break;
        case EACCES:
        case EPERM:
                name = SD_BUS_ERROR_ACCESS_DENIED;
                break;
        case ECANCELED:
        case ESTALE:
                name = NSM_ERROR_NO_SUCH_NAMESPACE;
                message = message ?: "The namespace was removed meanwhile.";
                break;
        default:
                return sd_bus_error_set_errnof(error, r, "%s", message ?: strerror(-r));
        }
        return sd_bus_error_set(error, name, message ?: strerror(-r));
}

void bus_request_reply_error(BusRequest *req, int r, const char *message) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        (void) bus_error_from_errno(&error, r, message);
        audit_call(req->manager, req->message, &error);
        r = sd_bus_reply_method_error(req->message, &error);
        if (r < 0)
                log_debug_errno(r, "Failed to send an error reply, ignoring (the caller has gone?): %m");
        bus_request_finish(req);
}

void bus_request_reply_result(BusRequest *req, int result, const char *message) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

        if (result < 0)
                bus_request_reply_error(req, result, message);
        else if (sd_bus_message_new_method_return(req->message, &reply) < 0)
                bus_request_reply_error(req, -ENOMEM, NULL);
        else
                bus_request_reply(req, reply);
}

int bus_request_caller_uid(BusRequest *req, uid_t *ret) {
        return bus_message_get_sender_uid(req->message, ret);
}

int bus_message_caller_uid(sd_bus_message *message, uid_t *ret, sd_bus_error *error) {
        int r = bus_message_get_sender_uid(message, ret);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot determine the caller: %s", strerror(-r));
        return 0;
}

int bus_message_require_root(sd_bus_message *message, const char *what, sd_bus_error *error) {
        uid_t uid;
        int r = bus_message_caller_uid(message, &uid, error);
        if (r < 0)
                return r;
        if (uid != 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s is only available to root.", what);
        return 0;
}

int bus_rate_limit_uid(Manager *m, uid_t uid, sd_bus_error *error) {
        if (uid == 0 || manager_rate_limit(m, uid) >= 0)
                return 0;
        return sd_bus_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED,
                                 "Too many calls from UID %u (RateLimitBurst=%u per RateLimitIntervalSec=); try again later.",
                                 (unsigned) uid, m->config.rate_limit_burst);
}

int bus_request_rate_limit(BusRequest *req, sd_bus_error *error) {
        uid_t uid;

        if (req->dispatched || bus_request_caller_uid(req, &uid) < 0)
                return 0;
        return bus_rate_limit_uid(req->manager, uid, error);
}

int bus_request_authorize(BusRequest *req, const char *action, const char **details, sd_bus_error *error) {
        Manager *m = req->manager;
        uid_t uid;
        int r;

        r = bus_message_caller_uid(req->message, &uid, error);
        if (r < 0)
                return r;
        if (uid == 0)
                return 1;
        r = bus_verify_polkit_async(req->message, action, details, &m->polkit_registry, error);
        if (r == 0) {
                req->pending = true;
                return 0;
        }
        if (r < 0 && req->rule) {
                /* The rule is what the caller can act on; polkit's answer is the detail. */
                _cleanup_free_ char *why = NULL;
                if (asprintf(&why, "%s This needs %s, which polkit refused: %s", req->rule, action,
                             error->message ?: error->name) < 0)
                        why = NULL;
                sd_bus_error_free(error);
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, why ?: req->rule);
        }
        if (r > 0 && sd_bus_message_get_allow_interactive_authorization(req->message) > 0)
                /* A person may have typed a password meanwhile: the work's clock starts now. */
                req->deadline = manager_deadline(m);
        return r;
}

int bus_request_authorize_view(BusRequest *req, const char *user, uid_t owner, OwnViewRequest what, const char **details,
                               sd_bus_error *error) {
        Manager *m = req->manager;
        _cleanup_free_ char *reason = NULL;
        const char *action = ACTION_MANAGE;
        const char *path = NULL;
        uid_t uid;
        int r;

        r = bus_message_caller_uid(req->message, &uid, error);
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
                        req->rule = TAKE_PTR(reason);
                }
        }
        r = bus_request_authorize(req, action, details, error);
        if (r <= 0)
                return r;
        if (streq(action, ACTION_MANAGE_OWN)) {
                credentials_done(&req->caller);
                r = user_credentials_by_uid(uid, &req->caller);
                if (r < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                                 "Cannot look up the caller's groups (UID %u): %s", (unsigned) uid, strerror(-r));
                req->own = true;
        }
        return 1;
}

bool bus_request_escalate(BusRequest *req, int result, const char *message, const char **details) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Manager *m = req->manager;
        int r;

        if (!req->own || req->escalated || (result != -EACCES && result != -EPERM))
                return false;
        req->escalated = true;
        free(req->rule);
        req->rule = message ? strdup(message) : NULL;

        /* polkit answers by dispatching the message to its method again, which finds this
         * request escalated and asks for manage: then granted, or refused with the rule. */
        r = bus_verify_polkit_async(req->message, ACTION_MANAGE, details, &m->polkit_registry, &error);
        if (r == 0) {
                req->pending = true;
                return true;
        }
        if (r > 0) {
                /* Answered before (the same message asked for manage already): it said yes, and
                 * this can only be a rule the files enforce for everybody. */
                return false;
        }
        bus_request_reply_error(req, -EACCES, req->rule ?: error.message);
        return true;
}
