/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <time.h>

#include "bus-util.h"
#include "child.h"
#include "log.h"
#include "namespace-state.h"
#include "namespace.h"
#include "op-queue.h"
#include "view-job.h"
#include "view-op-message.h"

typedef struct ViewJob ViewJob;

struct ViewJobs {
        sd_event *event;
        ChildSet *children;
        OpQueue *host_ops;
        const ManagerConfig *config;    /* the owner's, as ReloadConfig left it */
        ViewJob *waiting;               /* jobs waiting for a free slot, oldest first */
        unsigned running;
        bool exiting;                   /* view_jobs_shutdown() ran: nothing new starts */
};

struct ViewJob {
        ViewJobs *jobs;
        Namespace *ns;           /* a reference; NULL for the host */
        ViewOp op;
        char *path, *source;     /* op's strings */
        Credentials caller;
        MountId *own, *binds, *policy;
        uid_t owner;
        uint64_t deadline;
        ViewJobDoneFunc done;
        void *userdata;
        QueuedOp *queued;        /* our place in the namespace's queue */
        sd_event_source *timer;  /* the deadline, while waiting for a slot */
        char *description;
        ViewJob *next;           /* in jobs->waiting */
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

static void view_jobs_start_waiting(ViewJobs *jobs);

static int read_result(sd_bus_message *reply, ViewOpResult *res) {
        _cleanup_free_ MountId *gone = NULL, *made = NULL;
        size_t n_gone = 0, n_made = 0;
        int r;

        r = sd_bus_message_read(reply, "(tt)(tt)u", &res->mounted.unique, &res->mounted.old, &res->replaced.unique,
                                &res->replaced.old, &res->n_mounts);
        if (r >= 0)
                r = bus_message_read_mount_ids(reply, VIEW_OP_MOUNTS_MAX, &gone, &n_gone);
        if (r >= 0)
                r = bus_message_read_mount_ids(reply, VIEW_OP_MOUNTS_MAX, &made, &n_made);
        if (r < 0)
                return r;
        if (n_gone > 0)
                memcpy(res->gone, gone, n_gone * sizeof(MountId));
        res->n_gone = (uint32_t) n_gone;
        if (n_made > 0)
                memcpy(res->policy_mounts, made, n_made * sizeof(MountId));
        res->n_policy_mounts = (uint32_t) n_made;
        return 0;
}

static void on_child_done(const NsmError *error, sd_bus_message *reply, void *userdata) {
        _cleanup_(nsm_error_done) NsmError malformed = {};
        ViewJob *j = userdata;
        ViewJobs *jobs = j->jobs;
        ViewOpResult res = {};

        jobs->running--;
        if (!error) {
                if (read_result(reply, &res) < 0) {
                        (void) nsm_error_set(&malformed, NSM_ERROR_SYSTEM, -EPROTO,
                                             "The helper process answered with a malformed result.");
                        error = &malformed;
                } else if (j->ns)
                        namespace_note_view_op(j->ns, &j->op, &res, j->description);
        }
        view_job_finish(j, error, &res);
        view_jobs_start_waiting(jobs);
}

/* The namespace's records as they are now, for the rules the child applies. */
static int view_job_fill_records(ViewJob *j) {
        NamespaceMountIds ids = {};
        int r;

        if (!j->ns)
                return 0;
        r = namespace_mount_ids(j->ns, &ids);
        if (r < 0)
                return r;
        j->op.own_mounts = j->own = ids.own;
        j->op.n_own_mounts = ids.n_own;
        j->op.bind_mounts = j->binds = ids.binds;
        j->op.n_bind_mounts = ids.n_binds;
        j->op.policy_mounts = j->policy = ids.policy;
        j->op.n_policy_mounts = ids.n_policy;
        return 0;
}

/* The call's arguments (view-op-message.h). */
static int append_request(sd_bus_message *m, void *userdata) {
        const ViewOp *op = &((ViewJob *) userdata)->op;
        int r;

        if (op->type == VIEW_OP_APPLY_POLICY) {
                const ViewPolicy *p = op->policy;
                const UserRecord *u = op->user;

                r = sd_bus_message_append(m, "h", op->ns_fd);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'r', "btaayaayaayaayb");
                if (r >= 0)
                        r = sd_bus_message_append(m, "bt", p->private_tmp, p->tmp_size);
                if (r >= 0)
                        r = bus_message_append_bytes_strv(m, p->bind_paths);
                if (r >= 0)
                        r = bus_message_append_bytes_strv(m, p->bind_read_only_paths);
                if (r >= 0)
                        r = bus_message_append_bytes_strv(m, p->temporary_file_system);
                if (r >= 0)
                        r = bus_message_append_bytes_strv(m, p->inaccessible_paths);
                if (r >= 0)
                        r = sd_bus_message_append(m, "b", p->hide_other_homes);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'r', "suuayay");
                if (r >= 0)
                        r = sd_bus_message_append(m, "suu", u->name, u->uid, u->gid);
                if (r >= 0)
                        r = bus_message_append_bytes(m, u->home);
                if (r >= 0)
                        r = bus_message_append_bytes(m, u->shell);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                return r;
        }
        r = sd_bus_message_open_container(m, 'a', "h");
        if (r >= 0 && op->ns_fd >= 0)
                r = sd_bus_message_append(m, "h", op->ns_fd);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = bus_message_append_bytes(m, op->path);
        if (r < 0)
                return r;
        switch (op->type) {
        case VIEW_OP_SET_PROPAGATION:
                r = sd_bus_message_append(m, "ubt", (uint32_t) op->mode, op->recursive, op->expected_id);
                break;
        case VIEW_OP_JOIN:
                r = sd_bus_message_append(m, "u", (uint32_t) op->join);
                break;
        case VIEW_OP_BIND:
                r = bus_message_append_bytes(m, op->source);
                if (r >= 0)
                        r = sd_bus_message_append(m, "bbb", op->read_only, op->make_dir, op->host_propagates);
                break;
        case VIEW_OP_UNMOUNT:
                r = sd_bus_message_append(m, "bt", op->recursive, op->expected_id);
                break;
        default:
                return 0;   /* HOST_SHARE: root's alone */
        }
        /* The caller and the records the rules are checked against (own-view-rules.h). */
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(uuauu)");
        if (r >= 0 && op->caller) {
                r = sd_bus_message_open_container(m, 'r', "uuauu");
                if (r >= 0)
                        r = sd_bus_message_append(m, "uu", op->caller->uid, op->caller->gid);
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'u', op->caller->groups,
                                                        op->caller->n_groups * sizeof(gid_t));
                if (r >= 0)
                        r = sd_bus_message_append(m, "u", op->max_own_binds);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = bus_message_append_mount_ids(m, op->own_mounts, op->n_own_mounts);
        if (r >= 0)
                r = bus_message_append_mount_ids(m, op->bind_mounts, op->n_bind_mounts);
        if (r >= 0)
                r = bus_message_append_mount_ids(m, op->policy_mounts, op->n_policy_mounts);
        return r;
}

static int view_job_launch(ViewJob *j) {
        ViewJobs *jobs = j->jobs;
        int r;

        /* A login's view with its [View] policy is never refused for the user's stuck
         * operations: two timed-out calls on her own hung FUSE mount would otherwise fail her
         * next login, and where logins may go on without a view, that is the policy switched
         * off. Such a child still counts against her own operations if it gets stuck. */
        if (j->op.type != VIEW_OP_APPLY_POLICY && j->owner != 0 && jobs->config->max_stuck_operations > 0 &&
            child_set_stuck(jobs->children, j->owner) >= jobs->config->max_stuck_operations) {
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
        ChildSpec spec = {
                .description = j->description,
                .interface = &view_ops_interface,
                .method = view_op_type_to_method(j->op.type),
                .append = append_request,
                .reply = on_child_done,
                .deadline = j->deadline,
                .owner = j->owner,
                .userdata = j,
        };
        r = child_start(jobs->children, &spec);
        if (r < 0)
                return r;
        jobs->running++;
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

        for (ViewJob **i = &j->jobs->waiting; *i; i = &(*i)->next)
                if (*i == j) {
                        *i = j->next;
                        break;
                }
        (void) nsm_error_setf(&e, NSM_ERROR_TIMED_OUT, "The operation waited too long behind others "
                              "(OperationTimeoutSec=).");
        view_job_finish(j, &e, NULL);
        return 0;
}

static void view_jobs_start_waiting(ViewJobs *jobs) {
        if (jobs->exiting)
                return;
        while (jobs->waiting && jobs->running < VIEW_JOBS_RUNNING_MAX) {
                ViewJob *j = jobs->waiting;
                int r;

                jobs->waiting = j->next;
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
        ViewJobs *jobs = j->jobs;
        int r;

        j->queued = op;
        if (jobs->exiting)
                return -ESHUTDOWN;
        if (jobs->running < VIEW_JOBS_RUNNING_MAX) {
                r = view_job_launch(j);
                if (r < 0)
                        j->queued = NULL;   /* the queue fails us itself */
                return r;
        }
        r = sd_event_add_time(jobs->event, &j->timer, CLOCK_MONOTONIC, j->deadline, 0, on_waiting_deadline, j);
        if (r < 0) {
                j->queued = NULL;
                return r;
        }
        ViewJob **tail = &jobs->waiting;
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

int view_job_queue(ViewJobs *jobs, Namespace *ns, const ViewOp *op, const Credentials *caller, uid_t owner,
                   uint64_t deadline, ViewJobDoneFunc done, void *userdata) {
        ViewJob *j = calloc(1, sizeof(ViewJob));
        int r;

        if (!j)
                return -ENOMEM;
        *j = (ViewJob) { .jobs = jobs, .ns = ns ? namespace_ref(ns) : NULL, .op = *op, .owner = owner,
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
                j->op.caller = &j->caller;
        } else
                j->op.caller = NULL;

        r = op_queue_add(ns ? ns->ops : jobs->host_ops, deadline, view_job_start, view_job_not_started, j);
        if (r < 0) {
                view_job_free(j);
                return r;
        }
        return 0;
}

int view_jobs_new(sd_event *event, ChildSet *children, OpQueue *host_ops, const ManagerConfig *config,
                  ViewJobs **ret) {
        ViewJobs *jobs = calloc(1, sizeof(ViewJobs));

        if (!jobs)
                return -ENOMEM;
        *jobs = (ViewJobs) { .event = event, .children = children, .host_ops = host_ops, .config = config };
        *ret = jobs;
        return 0;
}

void view_jobs_shutdown(ViewJobs *jobs) {
        if (!jobs)
                return;
        jobs->exiting = true;
        while (jobs->waiting) {
                ViewJob *j = jobs->waiting;
                _cleanup_(nsm_error_done) NsmError e = {};
                jobs->waiting = j->next;
                (void) nsm_error_set_shutting_down(&e);
                view_job_finish(j, &e, NULL);
        }
}

ViewJobs *view_jobs_free(ViewJobs *jobs) {
        view_jobs_shutdown(jobs);
        free(jobs);
        return NULL;
}
