/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "child.h"
#include "log.h"
#include "namespace.h"
#include "op-queue.h"
#include "view-job.h"
#include "view-op-message.h"

struct ViewJob {
        Manager *manager;
        Namespace *ns;           /* a reference; NULL for the host */
        ViewOp op;
        char *path, *source;     /* op's strings */
        Credentials caller;
        bool has_caller;
        MountId *own, *binds, *policy;
        uid_t owner;
        uint64_t deadline;
        ViewJobDoneFunc done;
        void *userdata;
        QueuedOp *queued;        /* our place in the namespace's queue */
        sd_event_source *timer;  /* the deadline, while waiting for a slot */
        char *description;
        ViewJob *next;           /* in manager->jobs_waiting */
};

static ViewJob *view_job_free(ViewJob *j) {
        if (!j)
                return NULL;
        namespace_unref(j->ns);
        free(j->path);
        free(j->source);
        credentials_done(&j->caller);
        free(j->own);
        free(j->binds);
        free(j->policy);
        sd_event_source_disable_unref(j->timer);
        free(j->description);
        free(j);
        return NULL;
}

static void view_job_finish(ViewJob *j, const NsmError *error, const ViewOpResult *data) {
        j->done(error, error ? NULL : data, j->userdata);
        if (j->queued)
                op_queue_complete(j->queued);
        view_job_free(j);
}

/* What the child did, remembered in the namespace. */
static void view_job_record(ViewJob *j, const ViewOpResult *res) {
        Namespace *ns = j->ns;
        int r = 0;

        if (!ns)
                return;
        if (res->n_mounts > 0)
                ns->n_mounts = res->n_mounts;
        for (uint32_t i = 0; i < MIN(res->n_gone, (uint32_t) VIEW_OP_MOUNTS_MAX); i++)
                namespace_forget_mount(ns, res->gone[i]);
        switch (j->op.type) {
        case VIEW_OP_BIND:
                r = namespace_record_bind(ns, res->mounted, j->op.path, j->has_caller, res->replaced);
                break;
        case VIEW_OP_UNMOUNT:
                namespace_forget_mount(ns, res->replaced);
                break;
        case VIEW_OP_SET_PROPAGATION:
                r = namespace_record_choice(ns, j->op.path, propagation_mode_to_string(j->op.mode), j->op.recursive);
                break;
        case VIEW_OP_JOIN:
                if (j->op.join == JOIN_SLAVE)
                        r = namespace_record_choice(ns, j->op.path, "slave", false);
                else {
                        namespace_clear_choice(ns, j->op.path);
                        r = namespace_set_pending_join(ns, j->op.path, false);
                }
                break;
        default:
                return;
        }
        if (r < 0)
                log_warning_errno(r, "%s: failed to record it in the state of '%s', ignoring: %m", j->description, ns->name);
        r = namespace_save(ns);
        if (r < 0)
                log_warning_errno(r, "Failed to save the state of '%s', ignoring: %m", ns->name);
}

static void view_jobs_start_waiting(Manager *m);

static void on_child_done(const NsmError *error, IpcMessage *final, const char *data, size_t size, void *userdata) {
        _cleanup_(nsm_error_done) NsmError malformed = {};
        ViewJob *j = userdata;
        Manager *m = j->manager;
        ViewOpResult res = {};

        m->jobs_running--;
        /* What the child sent ahead of its answer: sentences for the log, each NUL-terminated
         * (the [View] policy's entries a user spoiled, paths that could be). */
        for (size_t i = 0; data && i < size; i += strlen(data + i) + 1)
                if (data[i])
                        log_warning("%s: %s", j->description, data + i);
        if (!error) {
                if (!final || view_op_result_decode(final->payload, final->size, &res) < 0) {
                        (void) nsm_error_set(&malformed, NSM_ERROR_SYSTEM, -EPROTO,
                                             "The helper process answered with a malformed result.");
                        error = &malformed;
                } else
                        view_job_record(j, &res);
        }
        view_job_finish(j, error, &res);
        view_jobs_start_waiting(m);
}

static int copy_ids(const MountId *src, size_t n, MountId **ret) {
        *ret = NULL;
        if (n == 0)
                return 0;
        *ret = memdup(src, n * sizeof(MountId));
        return *ret ? 0 : -ENOMEM;
}

/* The namespace's records as they are now, for the rules the child applies. */
static int view_job_fill_records(ViewJob *j) {
        Namespace *ns = j->ns;
        size_t n_own = 0, n_binds = 0;
        int r;

        if (!ns)
                return 0;
        j->own = calloc(ns->n_binds + 1, sizeof(MountId));
        j->binds = calloc(ns->n_binds + 1, sizeof(MountId));
        if (!j->own || !j->binds)
                return -ENOMEM;
        for (size_t i = 0; i < ns->n_binds; i++) {
                j->binds[n_binds++] = ns->binds[i].id;
                if (ns->binds[i].for_user)
                        j->own[n_own++] = ns->binds[i].id;
        }
        r = copy_ids(ns->policy_mounts, ns->n_policy_mounts, &j->policy);
        if (r < 0)
                return r;
        j->op.own_mounts = j->own;
        j->op.n_own_mounts = n_own;
        j->op.bind_mounts = j->binds;
        j->op.n_bind_mounts = n_binds;
        j->op.policy_mounts = j->policy;
        j->op.n_policy_mounts = ns->n_policy_mounts;
        return 0;
}

static int view_job_launch(ViewJob *j) {
        Manager *m = j->manager;
        _cleanup_free_ void *request = NULL;
        size_t size = 0;
        int r;

        /* A login's view with its [View] policy is never refused for the user's stuck
         * operations: two timed-out calls on her own hung FUSE mount would otherwise fail her
         * next login, and where logins may go on without a view, that is the policy switched
         * off. Such a child still counts against her own operations if it gets stuck. */
        if (j->op.type != VIEW_OP_APPLY_POLICY && j->owner != 0 && m->config.max_stuck_operations > 0 &&
            child_set_stuck(m->children, j->owner) >= m->config.max_stuck_operations) {
                _cleanup_(nsm_error_done) NsmError e = {};
                (void) nsm_error_setf(&e, NSM_ERROR_LIMIT_EXCEEDED, "Too many operations of this user are stuck on a "
                                      "file system that does not answer (MaxStuckOperations=); try again once it "
                                      "answers or its FUSE server is gone.");
                view_job_finish(j, &e, NULL);
                return 0;
        }
        r = view_job_fill_records(j);
        if (r < 0)
                return r;
        if (j->ns)
                j->op.ns_fd = j->ns->mntns_fd;
        r = view_op_request_encode(&j->op, &request, &size);
        if (r < 0)
                return r;
        ChildSpec spec = {
                .description = j->description,
                .run_request = view_op_child_run,
                .request = request,
                .request_size = size,
                .request_fds = &j->op.ns_fd,
                .n_request_fds = j->op.ns_fd >= 0 ? 1 : 0,
                .deadline = j->deadline,
                .owner = j->owner,
                .done = on_child_done,
                .userdata = j,
        };
        r = child_start(m->children, &spec);
        if (r < 0)
                return r;
        m->jobs_running++;
        return 0;
}

static void view_job_fail_now(ViewJob *j, int r) {
        _cleanup_(nsm_error_done) NsmError e = {};

        (void) nsm_error_set_errnof(&e, r, "%s could not start: %m.", j->description);
        view_job_finish(j, &e, NULL);
}

static int on_waiting_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
        _cleanup_(nsm_error_done) NsmError e = {};
        ViewJob *j = userdata;
        Manager *m = j->manager;

        for (ViewJob **i = &m->jobs_waiting; *i; i = &(*i)->next)
                if (*i == j) {
                        *i = j->next;
                        break;
                }
        (void) nsm_error_setf(&e, NSM_ERROR_TIMED_OUT, "The operation waited too long behind others "
                              "(OperationTimeoutSec=).");
        view_job_finish(j, &e, NULL);
        return 0;
}

static void view_jobs_start_waiting(Manager *m) {
        if (m->exiting)
                return;
        while (m->jobs_waiting && m->jobs_running < VIEW_JOBS_RUNNING_MAX) {
                ViewJob *j = m->jobs_waiting;
                int r;

                m->jobs_waiting = j->next;
                j->next = NULL;
                j->timer = sd_event_source_disable_unref(j->timer);
                r = view_job_launch(j);
                if (r < 0)
                        view_job_fail_now(j, r);
        }
}

/* The namespace's queue says it is our turn. */
static int view_job_start(QueuedOp *op, void *userdata) {
        ViewJob *j = userdata;
        Manager *m = j->manager;
        int r;

        j->queued = op;
        if (m->exiting)
                return -ESHUTDOWN;
        if (m->jobs_running < VIEW_JOBS_RUNNING_MAX) {
                r = view_job_launch(j);
                if (r < 0)
                        j->queued = NULL;   /* the queue fails us itself */
                return r;
        }
        r = sd_event_add_time(m->event, &j->timer, CLOCK_MONOTONIC, j->deadline, 0, on_waiting_deadline, j);
        if (r < 0) {
                j->queued = NULL;
                return r;
        }
        ViewJob **tail = &m->jobs_waiting;
        while (*tail)
                tail = &(*tail)->next;
        *tail = j;
        return 0;
}

/* The queue gave up on us before we started. */
static void view_job_not_started(const NsmError *error, void *userdata) {
        ViewJob *j = userdata;

        j->queued = NULL;
        view_job_finish(j, error, NULL);
}

int view_job_queue(Manager *m, Namespace *ns, const ViewOp *op, const Credentials *caller, uid_t owner,
                   uint64_t deadline, ViewJobDoneFunc done, void *userdata) {
        ViewJob *j = calloc(1, sizeof(ViewJob));
        int r;

        if (!j)
                return -ENOMEM;
        *j = (ViewJob) { .manager = m, .ns = ns ? namespace_ref(ns) : NULL, .op = *op, .owner = owner,
                         .deadline = deadline, .done = done, .userdata = userdata };
        j->op.ns_fd = -EBADF;
        j->path = op->path ? strdup(op->path) : NULL;
        j->source = op->source ? strdup(op->source) : NULL;
        j->op.path = j->path;
        j->op.source = j->source;
        if (asprintf(&j->description, "%s of '%s' in %s%s%s", view_op_type_to_string(op->type), op->path ?: "/",
                     ns ? "the view of '" : "the host", ns ? ns->name : "", ns ? "'" : "") < 0)
                j->description = NULL;
        if ((op->path && !j->path) || (op->source && !j->source) || !j->description) {
                view_job_free(j);
                return -ENOMEM;
        }
        if (caller) {
                j->caller = (Credentials) { .uid = caller->uid, .gid = caller->gid, .n_groups = caller->n_groups };
                j->caller.groups = caller->n_groups ? memdup(caller->groups, caller->n_groups * sizeof(gid_t)) : NULL;
                if (caller->n_groups && !j->caller.groups) {
                        view_job_free(j);
                        return -ENOMEM;
                }
                j->has_caller = true;
                j->op.caller = &j->caller;
        } else
                j->op.caller = NULL;

        r = op_queue_add(ns ? ns->ops : m->host_ops, deadline, view_job_start, view_job_not_started, j);
        if (r < 0) {
                view_job_free(j);
                return r;
        }
        return 0;
}

void view_jobs_free(Manager *m) {
        while (m->jobs_waiting) {
                ViewJob *j = m->jobs_waiting;
                _cleanup_(nsm_error_done) NsmError e = {};
                m->jobs_waiting = j->next;
                (void) nsm_error_set(&e, NSM_ERROR_SYSTEM, -ESHUTDOWN, "nsmanagerd is shutting down.");
                view_job_finish(j, &e, NULL);
        }
}
