/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "attach-dbus.h"
#include "audit.h"
#include "builder.h"
#include "bus-creds.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "bus-request.h"
#include "host.h"
#include "log.h"
#include "log-control.h"
#include "manager-dbus.h"
#include "manager.h"
#include "mount-events-dbus.h"
#include "mount-list-dbus.h"
#include "namespace-dbus.h"
#include "namespace-session.h"
#include "namespace.h"
#include "path-util.h"
#include "strv.h"
#include "text-escape.h"
#include "view-job.h"
#include "view-processes.h"

/* Every method: read, validate, authorize, act, reply. Arguments are checked before polkit is
 * asked, so invalid requests never prompt anybody; mount work runs asynchronously (view-job.h,
 * builder.h) and replies when it is done, or at its deadline. */

/* ---- helpers ---- */

static int check_path(const char *path, const char *what, sd_bus_error *error) {
        if (!path_is_absolute_normalized(path))
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH, "%s '%s' is not an absolute, normalized path (no "
                                      "'.', '..', '//' or trailing '/').", what, path);
        return 0;
}

/* The namespace of the user a request names (any spelling, or a UID: bus_request_resolve_user()),
 * which exists and is ready (one still being built is not there yet): 1, 0 while NSS is asked,
 * < 0 with 'error' set. */
static int get_namespace_or_error(BusRequest *req, const char *user, Namespace **ret, sd_bus_error *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        Namespace *ns;
        int r;

        r = bus_request_resolve_user(req, user, &u, error);
        if (r <= 0)
                return r;
        ns = manager_get_namespace_by_uid(req->manager, u.uid);
        if (!ns || !ns->ready)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "User '%s' has no namespace (not logged in; "
                                      "'nsctl create %s' makes one).", u.name, u.name);
        *ret = ns;
        return 1;
}

/* Answers the request when the user's namespace is ready (done replies): 1 while pending,
 * or the error when it cannot even start. */
static int acquire_for_request(BusRequest *req, const UserRecord *u, NamespaceReadyFunc done, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        int r;

        bus_request_wait(req);
        r = manager_acquire_namespace(req->manager, u, req->deadline, done, req, &e);
        if (r < 0) {
                bus_request_unwait(req);
                return bus_error_set_nsm(error, &e);
        }
        return 1;
}

/* ---- CreateNamespace, RemoveNamespace, Get*, List ---- */

static void on_created(Namespace *ns, const NsmError *error, void *userdata) {
        BusRequest *req = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL;

        if (error) {
                bus_request_reply_error(req, error);
                return;
        }
        path = namespace_bus_path(ns);
        if (!path || sd_bus_message_new_method_return(req->message, &reply) < 0 ||
            sd_bus_message_append(reply, "o", path) < 0) {
                bus_request_reply_errno(req, -ENOMEM, NULL);
                return;
        }
        bus_request_reply(req, reply);
}

static int create_namespace_step(BusRequest *req, sd_bus_error *error) {
        Manager *m = req->manager;
        _cleanup_(user_record_done) UserRecord u = {};
        _cleanup_(nsm_error_done) NsmError e = {};
        const char *user;
        int r;

        r = sd_bus_message_read(req->message, "s", &user);
        if (r < 0)
                return r;
        /* Before polkit, so that an invalid request never prompts anybody. */
        r = bus_request_resolve_user(req, user, &u, error);
        if (r <= 0)
                return r;
        r = manager_check_user(m, &u, &e);
        if (r < 0)
                return bus_error_set_nsm(error, &e);
        r = bus_request_authorize(req, ACTION_MANAGE, (const char *[]) { "user", u.name, NULL }, error);
        if (r <= 0)
                return r;
        return acquire_for_request(req, &u, on_created, error);
}

static int method_create_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, create_namespace_step);
}

static int remove_namespace_step(BusRequest *req, sd_bus_error *error) {
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "s", &user);
        if (r < 0)
                return r;
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        return bus_remove_namespace_step(req, ns, error);
}

static int method_remove_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, remove_namespace_step);
}

static int get_namespace_step(BusRequest *req, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "s", &user);
        if (r < 0)
                return r;
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        path = namespace_bus_path(ns);
        if (!path)
                return -ENOMEM;
        return sd_bus_reply_method_return(req->message, "o", path);
}

static int method_get_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, get_namespace_step);
}

static int method_get_namespace_by_uid(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        Namespace *ns = NULL;
        uint32_t uid;
        int r;

        r = sd_bus_message_read(message, "u", &uid);
        if (r < 0)
                return r;
        ns = manager_get_namespace_by_uid(userdata, uid);
        if (!ns || !ns->ready)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "UID %u has no namespace.", uid);
        path = namespace_bus_path(ns);
        if (!path)
                return -ENOMEM;
        return sd_bus_reply_method_return(message, "o", path);
}

static int compare_namespaces(const void *a, const void *b) {
        return strcmp((*(Namespace *const *) a)->name, (*(Namespace *const *) b)->name);
}

static int method_list_namespaces(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ Namespace **list = NULL;
        Manager *m = userdata;
        size_t n = 0;
        Namespace *ns = NULL;
        int r;

        list = calloc(hashmap_size(m->namespaces.by_name) + 1, sizeof(Namespace *));
        if (!list)
                return -ENOMEM;
        for (HashmapIterator i = {}; hashmap_iterate(m->namespaces.by_name, &i, (void **) &ns, NULL);)
                if (ns->ready)
                        list[n++] = ns;
        qsort(list, n, sizeof(Namespace *), compare_namespaces);

        r = sd_bus_message_new_method_return(message, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(suso)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = namespace_bus_path(list[i]);
                if (!path)
                        return -ENOMEM;
                r = sd_bus_message_append(reply, "(suso)", list[i]->name, (uint32_t) list[i]->uid,
                                          namespace_state_to_string(namespace_get_state(list[i])), path);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* ---- Can ---- */

static int can_step(BusRequest *req, sd_bus_error *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        const char *method, *user;
        uid_t owner = (uid_t) -1;
        int r;

        r = sd_bus_message_read(req->message, "ss", &method, &user);
        if (r < 0)
                return r;
        if (*user) {
                /* The owner the methods compare the caller with: the namespace's, else NSS's. */
                r = bus_request_resolve_user(req, user, &u, error);
                if (r <= 0)
                        return r;
                owner = u.uid;
                user = u.name;
        }
        return bus_request_can(req, method, user, owner, error);
}

static int method_can(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, can_step);
}

/* ---- sessions ---- */

static void on_session_namespace(Namespace *ns, const NsmError *error, void *userdata) {
        BusRequest *req = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int session_fd = -EBADF;
        const char *user, *id;
        pid_t pid = 0;
        int r;

        if (error) {
                bus_request_reply_error(req, error);
                return;
        }
        r = sd_bus_message_rewind(req->message, true);
        if (r >= 0)
                r = sd_bus_message_read(req->message, "ss", &user, &id);
        if (r < 0) {
                bus_request_reply_errno(req, r, NULL);
                return;
        }
        /* The login process that asked: recorded for a restart without systemd's fd store. */
        (void) bus_creds_sender_pid(req->manager->creds, req->message, &pid);
        r = manager_open_session(req->manager, ns, id, pid, &session_fd);
        if (r < 0) {
                bus_request_reply_errno(req, r, "Failed to record the session.");
                return;
        }
        /* The message takes copies of both fds. Should the reply not reach the login (it is
         * gone), the session ends with the message's copy. */
        path = namespace_bus_path(ns);
        if (!path || sd_bus_message_new_method_return(req->message, &reply) < 0 ||
            sd_bus_message_append(reply, "ohh", path, ns->mntns_fd, session_fd) < 0) {
                bus_request_reply_errno(req, -ENOMEM, NULL);
                return;
        }
        bus_request_reply(req, reply);
}

static int open_session_step(BusRequest *req, sd_bus_error *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        const char *user, *id;
        int r;

        r = sd_bus_message_read(req->message, "ss", &user, &id);
        if (r < 0)
                return r;
        if (!valid_session_id(id))
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Session id '%s' is empty, too long, or has "
                                      "spaces, ':' or control characters.", id);
        r = bus_message_require_root(req->manager, req->message, "OpenSession", error);
        if (r < 0)
                return r;
        r = bus_request_resolve_user(req, user, &u, error);
        if (r <= 0)
                return r;
        return acquire_for_request(req, &u, on_session_namespace, error);
}

static int method_open_session(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, open_session_step);
}

static int close_session_step(BusRequest *req, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        const char *user, *id;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "ss", &user, &id);
        if (r < 0)
                return r;
        r = bus_message_require_root(req->manager, req->message, "CloseSession", error);
        if (r < 0)
                return r;
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        r = manager_close_session(req->manager, ns, id, &e);
        if (r < 0)
                return bus_error_set_nsm(error, &e);
        return sd_bus_reply_method_return(req->message, NULL);
}

static int method_close_session(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, close_session_step);
}

static int open_mount_namespace_step(BusRequest *req, sd_bus_error *error) {
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "s", &user);
        if (r < 0)
                return r;
        r = bus_message_require_root(req->manager, req->message, "OpenMountNamespace", error);
        if (r < 0)
                return r;
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        return sd_bus_reply_method_return(req->message, "h", ns->mntns_fd);
}

static int method_open_mount_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, open_mount_namespace_step);
}

/* ---- mount operations ---- */

/* What a mount operation needs until it is answered. */
typedef struct OpCall {
        Namespace *ns;           /* NULL: the host */
        bool host_recursive;     /* SetPropagation of the host, recursive: keep reserved paths unbindable */
        char *path;
        char *details[8];        /* for escalating: the same details as the first polkit check */
} OpCall;

static void op_call_free(void *p) {
        OpCall *c = p;
        if (!c)
                return;
        namespace_unref(c->ns);
        free(c->path);
        for (size_t i = 0; i < ELEMENTSOF(c->details); i++)
                free(c->details[i]);
        free(c);
}

static void on_op_done(const NsmError *error, const ViewOpResult *res, void *userdata) {
        BusRequest *req = userdata;
        OpCall *c = req->data;

        if (c->host_recursive) {
                Manager *m = req->manager;
                (void) host_keep_unbindable(c->path, (char *[]) { m->config.subtree_root, m->state.root, NULL });
        }
        /* A rule refused on the files: the caller may still hold manage (an administrator acting
         * on their own view). */
        if (error && bus_request_escalate(req, error, (const char **) c->details))
                return;
        bus_request_reply_result(req, error);
}

/* Queues 'op' for req once authorized: details are kept for a later escalation. */
static int start_op(BusRequest *req, Namespace *ns, const ViewOp *op, const char **details, sd_bus_error *error) {
        Manager *m = req->manager;
        OpCall *c;
        int r;

        c = calloc(1, sizeof(OpCall));
        if (!c)
                return -ENOMEM;
        c->ns = namespace_ref(ns);
        c->path = strdup(op->path);
        for (size_t i = 0; details && details[i] && i + 1 < ELEMENTSOF(c->details); i++)
                if (!(c->details[i] = strdup(details[i]))) {
                        op_call_free(c);
                        return -ENOMEM;
                }
        c->host_recursive = !ns && op->type == VIEW_OP_SET_PROPAGATION && op->recursive;
        if (!c->path) {
                op_call_free(c);
                return -ENOMEM;
        }
        if (req->free_data)
                req->free_data(req->data);
        req->data = c;
        req->free_data = op_call_free;

        bus_request_wait(req);
        r = view_job_queue(m->jobs, ns, op, req->own ? &req->caller : NULL, req->own ? req->caller.uid : 0, req->deadline,
                           on_op_done, req);
        if (r < 0) {
                bus_request_unwait(req);
                return bus_error_set_errnof(error, r, "Failed to queue the operation: %m");
        }
        return 1;
}

/* What every method that changes a view (ns) or the host (NULL) asks first: rate limit, then
 * authorize (for a view, the rules of own-view-rules.h choose manage-own or manage; the host
 * needs manage). As bus_request_authorize(): 1 go on, 0 waiting, < 0 refused. */
static int authorize_view_op(BusRequest *req, Namespace *ns, const char *user, OwnViewRequest what,
                             const char **details, sd_bus_error *error) {
        int r;

        r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        if (ns)
                return bus_request_authorize_view(req, user, ns->uid, what, details, error);
        return bus_request_authorize(req, ACTION_MANAGE, details, error);
}

/* The common tail of those methods: authorize, queue the operation. */
static int authorize_and_start_view_op(BusRequest *req, Namespace *ns, const char *user, OwnViewRequest what,
                                       const char **details, const ViewOp *op, sd_bus_error *error) {
        int r;

        r = authorize_view_op(req, ns, user, what, details, error);
        if (r <= 0)
                return r;
        return start_op(req, ns, op, details, error);
}

/* "" = the host; otherwise the user's namespace, which must exist. As get_namespace_or_error(). */
static int target_namespace(BusRequest *req, const char *user, Namespace **ret, sd_bus_error *error) {
        if (!*user) {
                *ret = NULL;
                return 1;
        }
        return get_namespace_or_error(req, user, ret, error);
}

/* The same, for a change at 'path': on the host, not in SubtreeRoot or StateDirectory. */
static int target_namespace_at(BusRequest *req, const char *user, const char *path, Namespace **ret,
                               sd_bus_error *error) {
        Manager *m = req->manager;
        int r = target_namespace(req, user, ret, error);
        if (r <= 0 || *ret)
                return r;
        if (host_path_is_reserved(path, (char *[]) { m->config.subtree_root, m->state.root, NULL }))
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                      "'%s' is nsmanagerd's SubtreeRoot or StateDirectory and stays unbindable.", path);
        return 1;
}

/* ShareSubtree("", P) */
static void on_shared(const NsmError *error, char **timed_out, void *userdata) {
        BusRequest *req = userdata;
        Manager *m = req->manager;

        /* Shared on the host, and saved: announce it even when some views are late. */
        if (!error || timed_out)
                (void) sd_bus_emit_properties_changed(m->bus, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "SharedSubtrees", NULL);
        bus_request_reply_result(req, error);
}

static int share_subtree_step(BusRequest *req, sd_bus_error *error) {
        Manager *m = req->manager;
        const char *user, *path;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "ss", &user, &path);
        if (r < 0)
                return r;
        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        if (streq(path, "/"))
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                      "'/' cannot be a shared subtree; use ViewPropagation=shared for that.");
        r = target_namespace_at(req, user, path, &ns, error);
        if (r <= 0)
                return r;
        if (ns)
                user = ns->name;
        const char *details[] = { "user", user, "path", path, "mode", "shared", NULL };
        if (ns) {
                ViewOp op = { .type = VIEW_OP_JOIN, .path = path, .join = JOIN_PEER };
                return authorize_and_start_view_op(req, ns, user, OWN_VIEW_SHARE, details, &op, error);
        }
        r = authorize_view_op(req, NULL, user, OWN_VIEW_SHARE, details, error);
        if (r <= 0)
                return r;
        bus_request_wait(req);
        r = manager_share_subtree(m, path, req->deadline, on_shared, req);
        if (r < 0) {
                bus_request_unwait(req);
                return bus_error_set_errnof(error, r, "Failed to share '%s': %m", path);
        }
        return 1;
}

static int method_share_subtree(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, share_subtree_step);
}

static int enslave_subtree_step(BusRequest *req, sd_bus_error *error) {
        const char *user, *path;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "ss", &user, &path);
        if (r < 0)
                return r;
        if (!*user)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "The host's subtrees have no master to follow; "
                                      "name a user.");
        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        user = ns->name;
        /* A slave of the host's mount at the same path (whatever the user's path was before). */
        ViewOp op = { .type = VIEW_OP_JOIN, .path = path, .join = JOIN_SLAVE };
        return authorize_and_start_view_op(req, ns, user, OWN_VIEW_ENSLAVE,
                                           (const char *[]) { "user", user, "path", path, "mode", "slave", NULL }, &op, error);
}

static int method_enslave_subtree(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, enslave_subtree_step);
}

/* An "ay" path of the id-taking methods: the kernel's bytes, any but NUL. */
static int read_path_bytes(sd_bus_message *message, char **ret, sd_bus_error *error) {
        const void *p;
        size_t n;
        int r;

        r = sd_bus_message_read_array(message, 'y', &p, &n);
        if (r < 0)
                return r;
        if (n > 0 && memchr(p, 0, n))
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH, "A path cannot hold a NUL byte.");
        *ret = strndup(n > 0 ? p : "", n);
        return *ret ? 0 : -ENOMEM;
}

/* The mount id of the id-taking methods: GetMountsEx's. */
static int check_mount_id(uint64_t id, sd_bus_error *error) {
        if (id == 0)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "0 is no mount's id.");
        return 0;
}

/* SetPropagation and SetPropagationById (expected_id ≠ 0: of the mount with that id, else
 * MountChanged). Polkit's details are strings: the path escaped. */
static int set_propagation_common(BusRequest *req, const char *user, const char *path, const char *mode,
                                  uint64_t flags, uint64_t expected_id, sd_bus_error *error) {
        _cleanup_free_ char *shown = NULL;
        PropagationMode pm;
        Namespace *ns = NULL;
        int r;

        if (flags & ~NSM_PROPAGATION_RECURSIVE)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                      flags & ~NSM_PROPAGATION_RECURSIVE);
        pm = propagation_mode_from_string(mode);
        if (pm < 0)
                return bus_error_setf(error, NSM_ERROR_INVALID_MODE,
                                      "'%s' is not a propagation mode: shared, slave, private or unbindable.", mode);
        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        r = target_namespace_at(req, user, path, &ns, error);
        if (r <= 0)
                return r;
        if (ns)
                user = ns->name;
        if (!ns && streq(path, "/") && pm == PROPAGATION_UNBINDABLE)
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                      "The host's '/' cannot be unbindable: every view is a copy of it.");
        shown = text_escape(path);
        if (!shown)
                return -ENOMEM;
        ViewOp op = { .type = VIEW_OP_SET_PROPAGATION, .path = path, .mode = pm,
                      .recursive = flags & NSM_PROPAGATION_RECURSIVE, .expected_id = expected_id };
        return authorize_and_start_view_op(req, ns, user, OWN_VIEW_SET_PROPAGATION,
                                           (const char *[]) { "user", user, "path", shown, "mode", mode, NULL }, &op,
                                           error);
}

static int set_propagation_step(BusRequest *req, sd_bus_error *error) {
        const char *user, *path, *mode;
        uint64_t flags;
        int r;

        r = sd_bus_message_read(req->message, "ssst", &user, &path, &mode, &flags);
        if (r < 0)
                return r;
        return set_propagation_common(req, user, path, mode, flags, 0, error);
}

static int set_propagation_by_id_step(BusRequest *req, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        const char *user, *mode;
        uint64_t id, flags;
        int r;

        r = sd_bus_message_read(req->message, "st", &user, &id);
        if (r >= 0)
                r = read_path_bytes(req->message, &path, error);
        if (r >= 0)
                r = sd_bus_message_read(req->message, "st", &mode, &flags);
        if (r < 0)
                return r;
        r = check_mount_id(id, error);
        if (r < 0)
                return r;
        return set_propagation_common(req, user, path, mode, flags, id, error);
}

static int method_set_propagation_by_id(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, set_propagation_by_id_step);
}

static int method_set_propagation(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, set_propagation_step);
}

static int bind_mount_step(BusRequest *req, sd_bus_error *error) {
        Manager *m = req->manager;
        const char *user, *source, *dest;
        uint64_t flags;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "ssst", &user, &source, &dest, &flags);
        if (r < 0)
                return r;
        if (flags & ~(NSM_BIND_READ_ONLY | NSM_BIND_MKDIR))
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                      flags & ~(NSM_BIND_READ_ONLY | NSM_BIND_MKDIR));
        r = check_path(source, "Source", error);
        if (r < 0)
                return r;
        r = check_path(dest, "Destination", error);
        if (r < 0)
                return r;
        if (streq(dest, "/"))
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH, "Nothing can be bound over the view's root.");
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        user = ns->name;
        /* MaxUserMounts= is counted in the child, on what is still mounted (a replaced bind does
         * not count); it applies to a user's own binds (req->own is known once authorized). */
        ViewOp op = { .type = VIEW_OP_BIND, .source = source, .path = dest, .read_only = flags & NSM_BIND_READ_ONLY,
                      .make_dir = flags & NSM_BIND_MKDIR,
                      .host_propagates = m->config.view_propagation == VIEW_PROPAGATION_SHARED,
                      .max_own_binds = m->config.max_user_mounts };
        return authorize_and_start_view_op(req, ns, user, OWN_VIEW_BIND_MOUNT,
                                           (const char *[]) { "user", user, "path", dest, "source", source, NULL }, &op, error);
}

static int method_bind_mount(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, bind_mount_step);
}

/* Unmount and UnmountById (expected_id ≠ 0). */
static int unmount_common(BusRequest *req, const char *user, const char *path, uint64_t flags, uint64_t expected_id,
                          sd_bus_error *error) {
        _cleanup_free_ char *shown = NULL;
        Namespace *ns = NULL;
        int r;

        if (flags & ~NSM_UNMOUNT_DETACH)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                      flags & ~NSM_UNMOUNT_DETACH);
        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        /* umount2() of a namespace's root remounts the root filesystem read-only. Never. */
        if (streq(path, "/"))
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH, "'/' is the view's root and is never unmounted.");
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        user = ns->name;
        shown = text_escape(path);
        if (!shown)
                return -ENOMEM;
        ViewOp op = { .type = VIEW_OP_UNMOUNT, .path = path, .recursive = flags & NSM_UNMOUNT_DETACH,
                      .expected_id = expected_id };
        return authorize_and_start_view_op(req, ns, user, OWN_VIEW_UNMOUNT,
                                           (const char *[]) { "user", user, "path", shown, NULL }, &op, error);
}

static int unmount_step(BusRequest *req, sd_bus_error *error) {
        const char *user, *path;
        uint64_t flags;
        int r;

        r = sd_bus_message_read(req->message, "sst", &user, &path, &flags);
        if (r < 0)
                return r;
        return unmount_common(req, user, path, flags, 0, error);
}

static int unmount_by_id_step(BusRequest *req, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        const char *user;
        uint64_t id, flags;
        int r;

        r = sd_bus_message_read(req->message, "st", &user, &id);
        if (r >= 0)
                r = read_path_bytes(req->message, &path, error);
        if (r >= 0)
                r = sd_bus_message_read(req->message, "t", &flags);
        if (r < 0)
                return r;
        r = check_mount_id(id, error);
        if (r < 0)
                return r;
        return unmount_common(req, user, path, flags, id, error);
}

static int method_unmount_by_id(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, unmount_by_id_step);
}

static int method_unmount(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, unmount_step);
}

/* ---- GetMounts, SetLinger, ReloadConfig ---- */

static void unref_namespace(void *p) {
        namespace_unref(p);
}

static int get_mounts_step(BusRequest *req, sd_bus_error *error) {
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "s", &user);
        if (r < 0)
                return r;
        r = target_namespace(req, user, &ns, error);
        if (r <= 0)
                return r;
        r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        /* As Namespace.GetMounts: the table read updates the namespace's count (NMounts, where
         * listmount(2) cannot count it), and the request holds the namespace meanwhile. */
        if (ns && !req->data) {
                req->data = namespace_ref(ns);
                req->free_data = unref_namespace;
        }
        return bus_request_reply_mounts(req, ns, error);
}

static int method_get_mounts(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, get_mounts_step);
}

static int get_mounts_ex_step(BusRequest *req, sd_bus_error *error) {
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(req->message, "s", &user);
        if (r < 0)
                return r;
        r = target_namespace(req, user, &ns, error);
        if (r <= 0)
                return r;
        r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        return bus_request_reply_mounts_ex(req, ns, error);
}

static int method_get_mounts_ex(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, get_mounts_ex_step);
}

/* ListProcesses walks /proc: a few entries per turn of the loop, in turn with the bus's
 * messages, so that no call waits behind a walk however many processes there are, and a flood
 * of calls does not starve the walks; at most LIST_PROCESSES_PER_UID walks of one caller at once
 * (root's are not counted). Each turn is an elapsed timer armed anew: sd-event runs the source
 * pending longest first among equal priorities, and a timer is pending anew each time (a defer
 * source stays pending from its creation, ahead of the bus for good). */
#define LIST_PROCESSES_PER_UID 2U
#define LIST_PROCESSES_ENTRIES_PER_TURN 16U

typedef struct ProcessList {
        BusRequest *req;
        uid_t caller;
        ViewProcessScan *scan;
        sd_event_source *source;
} ProcessList;

static void process_list_free(void *userdata) {
        ProcessList *l = userdata;

        if (!l)
                return;
        sd_event_source_disable_unref(l->source);
        view_process_scan_free(l->scan);
        free(l);
}

static unsigned process_lists_of(Manager *m, uid_t uid) {
        unsigned n = 0;

        for (BusRequest *r = m->requests; r; r = r->next)
                if (r->free_data == process_list_free && r->data && ((ProcessList *) r->data)->caller == uid)
                        n++;
        return n;
}

static int on_process_list_turn(sd_event_source *source, uint64_t usec, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ProcessList *l = userdata;
        BusRequest *req = l->req;
        ViewProcess *p = NULL;
        size_t n = 0;
        int r;

        r = view_process_scan_step(l->scan, LIST_PROCESSES_ENTRIES_PER_TURN);
        if (r == 0)
                r = sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
        if (r == 0)
                return 0;       /* more next turn */
        if (r < 0) {
                bus_request_reply_errno(req, r, "Failed to read /proc");
                return 0;
        }
        view_process_scan_result(l->scan, &p, &n);
        r = sd_bus_message_new_method_return(req->message, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(uuss)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(uuss)", (uint32_t) p[i].pid, (uint32_t) p[i].uid, p[i].comm,
                                          p[i].session);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        view_processes_free(p, n);
        /* Either ends the request, and 'l' with it. */
        if (r < 0)
                bus_request_reply_errno(req, r, NULL);
        else
                bus_request_reply(req, reply);
        return 0;
}

static int list_processes_step(BusRequest *req, sd_bus_error *error) {
        Manager *m = req->manager;
        ProcessList *l;
        const char *user;
        Namespace *ns = NULL;
        uid_t uid;
        int r;

        r = sd_bus_message_read(req->message, "s", &user);
        if (r < 0)
                return r;
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        r = bus_message_caller_uid(m, req->message, &uid, error);
        if (r < 0)
                return r;
        /* Who runs what is not public: root, the view's user, and whom polkit grants manage. */
        if (uid != 0 && uid != ns->uid) {
                r = bus_request_authorize(req, ACTION_MANAGE, (const char *[]) { "user", ns->name, NULL }, error);
                if (r <= 0)
                        return r;
        } else {
                r = bus_request_rate_limit(req, error);
                if (r < 0)
                        return r;
        }
        if (uid != 0 && process_lists_of(m, uid) >= LIST_PROCESSES_PER_UID)
                return bus_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED,
                                      "%u ListProcesses() calls of UID %u are still reading /proc; one more is "
                                      "taken once they are answered.", LIST_PROCESSES_PER_UID, (unsigned) uid);
        l = calloc(1, sizeof(ProcessList));
        if (!l)
                return -ENOMEM;
        *l = (ProcessList) { .req = req, .caller = uid };
        r = view_process_scan_new(ns->mntns_fd, &l->scan);
        if (r >= 0)
                r = sd_event_add_time(m->event, &l->source, CLOCK_MONOTONIC, 0, 1, on_process_list_turn, l);
        if (r >= 0)
                (void) sd_event_source_set_description(l->source, "list-processes");
        if (r < 0) {
                process_list_free(l);
                return bus_error_set_errnof(error, r, "Failed to start reading /proc: %m");
        }
        if (req->free_data)
                req->free_data(req->data);
        req->data = l;
        req->free_data = process_list_free;
        bus_request_wait(req);
        return 1;
}

static int method_list_processes(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, list_processes_step);
}

static int can_mount_step(BusRequest *req, sd_bus_error *error) {
        const char *user;
        Namespace *ns = NULL;
        uint64_t id;
        uid_t uid;
        int r;

        r = sd_bus_message_read(req->message, "st", &user, &id);
        if (r < 0)
                return r;
        r = check_mount_id(id, error);
        if (r < 0)
                return r;
        r = target_namespace(req, user, &ns, error);
        if (r <= 0)
                return r;
        /* Once per call (req->charged): it comes back here after the table is read, after NSS
         * and after polkit answers. */
        r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        r = bus_message_caller_uid(req->manager, req->message, &uid, error);
        if (r < 0)
                return r;
        return bus_request_reply_can_mount(req, ns, id, uid, error);
}

static int method_can_mount(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, can_mount_step);
}

static int set_linger_step(BusRequest *req, sd_bus_error *error) {
        const char *action = ACTION_MANAGE;
        const char *user;
        Namespace *ns = NULL;
        int enable, r;
        uid_t uid;

        r = sd_bus_message_read(req->message, "sb", &user, &enable);
        if (r < 0)
                return r;
        r = get_namespace_or_error(req, user, &ns, error);
        if (r <= 0)
                return r;
        /* Lingering in one's own namespace is one's own business (manage-own). */
        if (bus_request_caller_uid(req, &uid) >= 0 && uid == ns->uid)
                action = ACTION_MANAGE_OWN;
        r = bus_request_authorize(req, action, (const char *[]) { "user", ns->name, NULL }, error);
        if (r <= 0)
                return r;
        r = namespace_set_linger(ns, enable);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(req->message, NULL);
}

static int method_set_linger(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, set_linger_step);
}

static int reload_config_step(BusRequest *req, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        int r;

        r = bus_request_authorize(req, ACTION_MANAGE, (const char *[]) { "user", "", NULL }, error);
        if (r <= 0)
                return r;
        r = manager_reload(req->manager, &e);
        if (r < 0) {
                /* Logged here, where it is handled. */
                log_error("%s", nsm_error_message(&e));
                return bus_error_set_nsm(error, &e);
        }
        return sd_bus_reply_method_return(req->message, NULL);
}

static int method_reload_config(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, reload_config_step);
}

static int property_get_shared(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append_strv(reply, m->config.shared_subtrees);
}

static int property_get_subtree_root(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", m->config.subtree_root);
}

static int property_get_state_directory(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", m->state.root);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", NULL, offsetof(Manager, version), SD_BUS_VTABLE_PROPERTY_CONST),
        /* Both change only at a start (nsctl verify says when the files say otherwise). */
        SD_BUS_PROPERTY("SubtreeRoot", "s", property_get_subtree_root, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("StateDirectory", "s", property_get_state_directory, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("SharedSubtrees", "as", property_get_shared, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("CreateNamespace", SD_BUS_ARGS("s", user), SD_BUS_RESULT("o", namespace),
                                method_create_namespace, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveNamespace", SD_BUS_ARGS("s", user), SD_BUS_NO_RESULT,
                                method_remove_namespace, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetNamespace", SD_BUS_ARGS("s", user), SD_BUS_RESULT("o", namespace),
                                method_get_namespace, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetNamespaceByUID", SD_BUS_ARGS("u", uid), SD_BUS_RESULT("o", namespace),
                                method_get_namespace_by_uid, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListNamespaces", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(suso)", namespaces),
                                method_list_namespaces, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Can", SD_BUS_ARGS("s", method, "s", user), SD_BUS_RESULT("s", answer), method_can,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenSession", SD_BUS_ARGS("s", user, "s", session_id),
                                SD_BUS_RESULT("o", namespace, "h", mount_ns_fd, "h", session_fd), method_open_session,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CloseSession", SD_BUS_ARGS("s", user, "s", session_id), SD_BUS_NO_RESULT,
                                method_close_session, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenMountNamespace", SD_BUS_ARGS("s", user), SD_BUS_RESULT("h", mount_ns_fd),
                                method_open_mount_namespace, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ShareSubtree", SD_BUS_ARGS("s", user, "s", path), SD_BUS_NO_RESULT,
                                method_share_subtree, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("EnslaveSubtree", SD_BUS_ARGS("s", user, "s", path), SD_BUS_NO_RESULT,
                                method_enslave_subtree, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetPropagation", SD_BUS_ARGS("s", user, "s", path, "s", mode, "t", flags),
                                SD_BUS_NO_RESULT, method_set_propagation, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("BindMount", SD_BUS_ARGS("s", user, "s", source, "s", destination, "t", flags),
                                SD_BUS_NO_RESULT, method_bind_mount, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Unmount", SD_BUS_ARGS("s", user, "s", path, "t", flags), SD_BUS_NO_RESULT,
                                method_unmount, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("UnmountById", SD_BUS_ARGS("s", user, "t", id, "ay", path, "t", flags),
                                SD_BUS_NO_RESULT, method_unmount_by_id, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetPropagationById",
                                SD_BUS_ARGS("s", user, "t", id, "ay", path, "s", mode, "t", flags), SD_BUS_NO_RESULT,
                                method_set_propagation_by_id, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CanMount", SD_BUS_ARGS("s", user, "t", id), SD_BUS_RESULT("a{ss}", answers),
                                method_can_mount, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMountsEx", SD_BUS_ARGS("s", user), SD_BUS_RESULT("a" MOUNTS_EX_SIGNATURE, mounts),
                                method_get_mounts_ex, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMounts", SD_BUS_ARGS("s", user), SD_BUS_RESULT("a(ttttssss)", mounts),
                                method_get_mounts, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListProcesses", SD_BUS_ARGS("s", user), SD_BUS_RESULT("a(uuss)", processes),
                                method_list_processes, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLinger", SD_BUS_ARGS("s", user, "b", enable), SD_BUS_NO_RESULT,
                                method_set_linger, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Attach",
                                SD_BUS_ARGS("s", user, "as", command, "as", environment, "s", working_directory,
                                            "h", stdin, "h", stdout, "h", stderr, "h", status),
                                SD_BUS_RESULT("u", pid), method_attach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("OpenAttach",
                                SD_BUS_ARGS("s", user, "as", command, "as", environment, "s", working_directory,
                                            "t", flags),
                                SD_BUS_RESULT("u", pid, "h", stdin, "h", stdout, "h", stderr, "h", status),
                                method_open_attach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ReloadConfig", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload_config,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("NamespaceNew", SD_BUS_ARGS("s", user, "o", namespace), 0),
        SD_BUS_SIGNAL_WITH_ARGS("NamespaceRemoved", SD_BUS_ARGS("s", user, "o", namespace), 0),
        SD_BUS_VTABLE_END,
};

/* A private connection (private-bus.c) is a login's: OpenSession, and nothing else. */
static const sd_bus_vtable login_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("OpenSession", SD_BUS_ARGS("s", user, "s", session_id),
                                SD_BUS_RESULT("o", namespace, "h", mount_ns_fd, "h", session_fd), method_open_session,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

int manager_bus_add_login_objects(sd_bus *bus, void *userdata) {
        return sd_bus_add_object_vtable(bus, NULL, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, login_vtable, userdata);
}

int manager_bus_add_objects(Manager *m, sd_bus *bus) {
        int r;

        r = sd_bus_add_object_vtable(bus, NULL, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Manager object: %m");
        r = namespace_dbus_register(m, bus);
        if (r < 0)
                return r;
        r = mount_events_bus_register(m, bus);
        if (r < 0)
                return r;
        r = sd_bus_add_object_manager(bus, NULL, NSM_MANAGER_PATH);
        if (r < 0)
                return log_error_errno(r, "Failed to add the object manager: %m");
        return 0;
}

static void manager_bus_done(Manager *m) {
        bus_requests_free(m);
        audit_limits_free(m);
}

int manager_connect_bus(Manager *m) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int has_owner = 0, r;

        r = sd_bus_default_system(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        /* Another instance serving already: leave the host to it. (Asked, not taken: the name
         * is taken last, once this one can serve; a start that loses the race undoes itself.) */
        r = sd_bus_call_method(m->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", &error, &reply, "s", NSM_BUS_NAME);
        if (r >= 0)
                r = sd_bus_message_read(reply, "b", &has_owner);
        if (r < 0)
                return log_error_errno(r, "Failed to ask the bus whether %s runs: %s", NSM_BUS_NAME,
                                       error.message ?: strerror(-r));
        if (has_owner) {
                log_error("%s is already owned on the bus: another nsmanagerd runs. Not starting.", NSM_BUS_NAME);
                return -EEXIST;
        }
        /* Before the objects: LogControl1 keeps the cache as its userdata. */
        r = bus_creds_new(m->bus, &m->creds);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the bus's connections: %m");
        r = polkit_registry_new(m->creds, &m->polkit_registry);
        if (r < 0)
                return log_oom();
        /* The budgets follow the configuration in force (ReloadConfig replaces it in place). */
        polkit_registry_set_limits(m->polkit_registry, &m->config.polkit_questions_per_uid,
                                   &m->config.polkit_timeout_usec);
        r = manager_bus_add_objects(m, m->bus);
        if (r < 0)
                return r;
        r = log_control_add(m->bus, m->creds);
        if (r < 0)
                return r;
        /* Losing the bus ends the daemon, with failure (nsmanagerd.c): the namespaces stay
         * pinned, and the next start (Restart=on-failure, or D-Bus activation) finds them. */
        r = sd_bus_set_exit_on_disconnect(m->bus, true);
        if (r < 0)
                return log_error_errno(r, "Failed to configure the bus connection: %m");
        /* The calls in flight are ours: dropped once the Manager answered its work in flight;
         * then the audit records' summaries still due. */
        m->bus_done = manager_bus_done;
        return 0;
}

int manager_bus_serve(Manager *m) {
        int r;

        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        /* Take the name last: clients may call us as soon as it is ours. */
        r = sd_bus_request_name(m->bus, NSM_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to take the bus name %s: %m", NSM_BUS_NAME);
        return 0;
}
