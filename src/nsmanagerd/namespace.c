/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>

#include "builder.h"
#include "fd-store.h"
#include "log.h"
#include "mount-events.h"
#include "namespace-dbus.h"
#include "namespace-session.h"
#include "namespace-state.h"
#include "namespace.h"
#include "path-util.h"
#include "registry.h"
#include "string-table.h"
#include "strv.h"
#include "time-util.h"
#include "view-job.h"

static const char *const namespace_state_table[_NAMESPACE_STATE_MAX] = {
        [NAMESPACE_ACTIVE] = "active",
        [NAMESPACE_LINGERING] = "lingering",
        [NAMESPACE_CLOSING] = "closing",
};

DEFINE_STRING_TABLE_LOOKUP(namespace_state, NamespaceState);

char *namespace_root(Namespace *ns) {
        char *p = NULL;
        if (!ns->manager || asprintf(&p, "%s/%s", ns->manager->config.subtree_root, ns->name) < 0)
                return NULL;
        return p;
}

NamespaceState namespace_get_state(Namespace *ns) {
        if (ns->stop_timer)
                return NAMESPACE_CLOSING;
        if (!ns->sessions && ns->linger)
                return NAMESPACE_LINGERING;
        return NAMESPACE_ACTIVE;
}

/* ---- the object ---- */

int namespace_new(Manager *m, const UserRecord *u, Namespace **ret) {
        _cleanup_(namespace_unrefp) Namespace *ns = calloc(1, sizeof(Namespace));
        int r;

        if (!ns)
                return -ENOMEM;
        ns->n_ref = 1;
        ns->mntns_fd = -EBADF;
        ns->uid = u->uid;
        ns->gid = u->gid;
        ns->name = strdup(u->name);
        ns->home = strdup(u->home ?: "/");
        ns->shell = strdup(u->shell ?: "/bin/sh");
        ns->ops = op_queue_new(m->event);
        if (!ns->name || !ns->home || !ns->shell || !ns->ops)
                return -ENOMEM;

        r = hashmap_put(m->namespaces, ns->name, ns);
        if (r < 0)
                return r;
        if (id_map_get(m->namespaces_by_uid, uid_key(ns->uid)))
                r = -EEXIST;   /* one view per user: another name of the same uid has it */
        else
                r = id_map_put(m->namespaces_by_uid, uid_key(ns->uid), ns);
        if (r < 0) {
                hashmap_remove(m->namespaces, ns->name);
                return r;
        }
        /* The Manager's reference is the one we were created with. */
        ns->manager = m;
        *ret = TAKE_PTR(ns);
        return 0;
}

static void namespace_free_records(Namespace *ns) {
        for (size_t i = 0; i < ns->n_binds; i++)
                free(ns->binds[i].destination);
        ns->binds = mfree(ns->binds);
        ns->n_binds = 0;
        ns->policy_mounts = mfree(ns->policy_mounts);
        ns->n_policy_mounts = 0;
        for (size_t i = 0; i < ns->n_choices; i++) {
                free(ns->choices[i].path);
                free(ns->choices[i].mode);
        }
        ns->choices = mfree(ns->choices);
        ns->n_choices = 0;
        ns->pending_joins = strv_free(ns->pending_joins);
}

static void namespace_free(Namespace *ns) {
        namespace_free_sessions(ns);
        sd_event_source_disable_unref(ns->stop_timer);
        op_queue_free(ns->ops);
        safe_close(ns->mntns_fd);
        namespace_free_records(ns);
        free(ns->name);
        free(ns->home);
        free(ns->shell);
        free(ns);
}

Namespace *namespace_ref(Namespace *ns) {
        if (ns)
                ns->n_ref++;
        return ns;
}

Namespace *namespace_unref(Namespace *ns) {
        if (!ns)
                return NULL;
        if (--ns->n_ref == 0)
                namespace_free(ns);
        return NULL;
}

static void namespace_notify_waiters(Namespace *ns, const NsmError *error) {
        NamespaceWaiter *w = TAKE_PTR(ns->waiters);

        while (w) {
                NamespaceWaiter *next = w->next;
                w->callback(ns, error, w->userdata);
                free(w);
                w = next;
        }
}

void namespace_drop_with(Namespace *ns, const NsmError *why) {
        Manager *m = ns->manager;

        if (!m)
                return;
        namespace_ref(ns);
        mount_events_namespace_gone(m->mount_events, ns);
        if (hashmap_get(m->namespaces, ns->name) == ns)
                hashmap_remove(m->namespaces, ns->name);
        if (id_map_get(m->namespaces_by_uid, uid_key(ns->uid)) == ns)
                (void) id_map_remove(m->namespaces_by_uid, uid_key(ns->uid));
        ns->manager = NULL;
        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
        namespace_free_sessions(ns);
        /* What still waits for it learns that it is gone. */
        ns->ops = op_queue_free_with(ns->ops, why);
        namespace_notify_waiters(ns, why);
        namespace_unref(ns);   /* the Manager's */
        namespace_unref(ns);
}

void namespace_drop(Namespace *ns) {
        _cleanup_(nsm_error_done) NsmError why = {};

        (void) nsm_error_setf(&why, NSM_ERROR_NO_SUCH_NAMESPACE, "The namespace of '%s' was removed.", ns->name);
        namespace_drop_with(ns, &why);
}

int namespace_wait_ready(Namespace *ns, NamespaceReadyFunc callback, void *userdata) {
        NamespaceWaiter *w;

        if (ns->ready) {
                callback(ns, NULL, userdata);
                return 0;
        }
        w = calloc(1, sizeof(NamespaceWaiter));
        if (!w)
                return -ENOMEM;
        *w = (NamespaceWaiter) { .callback = callback, .userdata = userdata };
        /* In order of arrival. */
        NamespaceWaiter **tail = &ns->waiters;
        while (*tail)
                tail = &(*tail)->next;
        *tail = w;
        return 0;
}

/* ---- building ---- */

typedef struct BuildContext {
        Namespace *ns;
        uint64_t deadline;
        ViewPolicy policy;
        UserRecord user;
        char *pin_name;
} BuildContext;

static void build_context_free(BuildContext *c) {
        namespace_unref(c->ns);
        view_policy_done(&c->policy);
        free(c->user.name);
        free(c->user.home);
        free(c->user.shell);
        free(c->pin_name);
        free(c);
}

static void on_unpinned_after_failure(BuilderReply *reply, void *userdata) {
        char *name = userdata;
        if (reply->error)
                log_warning("Failed to unpin the half-built namespace of '%s', ignoring (the next start cleans it up): %s",
                            name, nsm_error_message(reply->error));
        free(name);
}

/* A view that failed after it was pinned: unpin it, remove its mount point directory. Nobody
 * had it yet, so nothing else is left. */
static void namespace_undo_build(Manager *m, const char *name) {
        _cleanup_free_ char *root = NULL;
        char *copy = strdup(name);

        if (copy && builder_unpin(m->builder, name, manager_deadline(m), on_unpinned_after_failure, copy) < 0)
                free(copy);
        if (asprintf(&root, "%s/%s", m->config.subtree_root, name) >= 0)
                (void) rmdir(root);
}

/* The build ends: 'error' says why it failed (NULL: it succeeded). */
static void build_finish(BuildContext *c, const NsmError *error) {
        _cleanup_(nsm_error_done) NsmError saving = {};
        Namespace *ns = c->ns;
        Manager *m = ns->manager;
        int r;

        if (!error && m) {
                ns->timestamp = now_usec(CLOCK_REALTIME);
                r = namespace_save(ns);
                if (r < 0) {
                        (void) nsm_error_set_errnof(&saving, r, "Failed to save the state of '%s': %m.", ns->name);
                        error = &saving;
                }
        }
        if (error) {
                /* Logged once, here, where it is handled; the callers get the sentence. */
                log_error("%s", nsm_error_message(error));
                if (m && ns->mntns_fd >= 0)
                        namespace_undo_build(m, ns->name);
                namespace_notify_waiters(ns, error);
                namespace_drop(ns);
        } else if (m) {
                ns->ready = true;
                log_info("Created the mount namespace of '%s' (mnt:[%" PRIu64 "]).", ns->name, ns->mntns_inode);
                (void) namespace_dbus_send_new(ns);
                mount_events_namespace_ready(m->mount_events, ns);
                namespace_notify_waiters(ns, NULL);
        }
        build_context_free(c);
}

/* The same for a failure of the daemon's own part (NSM_ERROR_SYSTEM, errno 'r'). */
static void build_fail(BuildContext *c, int r, const char *message) {
        _cleanup_(nsm_error_done) NsmError e = {};

        (void) nsm_error_set(&e, NSM_ERROR_SYSTEM, r, message);
        build_finish(c, &e);
}

static void on_policy_applied(const NsmError *error, const ViewOpResult *res, void *userdata) {
        BuildContext *c = userdata;
        Namespace *ns = c->ns;
        _cleanup_(nsm_error_done) NsmError e = {};
        _cleanup_free_ char *why = NULL;

        if (error) {
                /* Named by the child that applied it; the stage said in front. */
                if (asprintf(&why, "Failed to build the view of '%s' while applying the [View] policy: %s", ns->name,
                             nsm_error_message(error)) < 0)
                        why = NULL;
                (void) nsm_error_set(&e, error->code, error->errno_value, why ?: nsm_error_message(error));
                build_finish(c, &e);
                return;
        }
        ns->policy_mounts = res->n_policy_mounts ? memdup(res->policy_mounts, res->n_policy_mounts * sizeof(MountId)) : NULL;
        ns->n_policy_mounts = ns->policy_mounts ? res->n_policy_mounts : 0;
        build_finish(c, NULL);
}

int namespace_set_fd(Namespace *ns, int fd) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        safe_close(ns->mntns_fd);
        ns->mntns_fd = fd;
        ns->mntns_inode = (uint64_t) st.st_ino;
        ns->mntns_id = mntns_get_id(fd);
        return 0;
}

static void on_view_built(BuilderReply *reply, void *userdata) {
        BuildContext *c = userdata;
        Namespace *ns = c->ns;
        int r;

        if (reply->error) {
                build_finish(c, reply->error);
                return;
        }
        if (reply->fd < 0) {
                build_fail(c, -EPROTO, "The view builder answered without the namespace.");
                return;
        }
        ns->n_mounts = (uint32_t) reply->result;
        r = namespace_set_fd(ns, TAKE_FD(reply->fd));
        if (r < 0) {
                build_fail(c, r, "Failed to take the namespace from the builder.");
                return;
        }
        if (!ns->manager) {
                _cleanup_(nsm_error_done) NsmError e = {};
                (void) nsm_error_setf(&e, NSM_ERROR_NO_SUCH_NAMESPACE, "The namespace of '%s' was removed while it was "
                                      "being built.", ns->name);
                build_finish(c, &e);
                return;
        }
        if (view_policy_is_empty(&c->policy)) {
                build_finish(c, NULL);
                return;
        }
        /* The policy looks up paths a user controls (their home, a dead NFS server): in a
         * killable child with the same deadline, never in the builder. */
        ViewOp op = { .type = VIEW_OP_APPLY_POLICY, .path = "/", .policy = &c->policy, .user = &c->user };
        r = view_job_queue(ns->manager, ns, &op, NULL, ns->uid, c->deadline, on_policy_applied, c);
        if (r < 0)
                build_fail(c, r, "Failed to start applying the [View] policy.");
}

int namespace_build(Namespace *ns, uint64_t deadline) {
        Manager *m = ns->manager;
        _cleanup_strv_free_ char **groups = NULL, **with_files = NULL;
        _cleanup_free_ char *why = NULL;
        BuildContext *c;
        int r;

        c = calloc(1, sizeof(BuildContext));
        if (!c)
                return -ENOMEM;
        c->ns = namespace_ref(ns);
        c->deadline = deadline;
        c->user = (UserRecord) { .name = strdup(ns->name), .uid = ns->uid, .gid = ns->gid, .home = strdup(ns->home),
                                 .shell = strdup(ns->shell) };
        if (!c->user.name || !c->user.home || !c->user.shell) {
                build_context_free(c);
                return -ENOMEM;
        }

        /* The user's groups matter only to the groups that have a policy file. Where none has,
         * they are not looked up: NSS's initgroups asks every source of groups (it reads all
         * of /etc/group, then asks systemd-userdb), which can cost more than building the view. */
        r = view_policy_groups_with_files(&m->config, &with_files);
        if (r >= 0 && with_files)
                r = user_group_names(ns->name, ns->gid, &groups);
        if (r >= 0)
                r = view_policy_load(&m->config, ns->name, groups, &c->policy);
        if (r < 0) {
                if (asprintf(&why, "Failed to find the [View] policy of '%s': %s", ns->name, strerror(-r)) < 0)
                        why = NULL;
                build_fail(c, r, why);
                return 0;
        }

        ViewSpec spec = {
                .name = ns->name,
                .subtree_root = m->config.subtree_root,
                .shared_subtrees = m->config.shared_subtrees,
                .propagation = m->config.view_propagation,
        };
        r = builder_build(m->builder, &spec, deadline, on_view_built, c);
        if (r < 0)
                build_fail(c, r, "Failed to ask the view builder.");
        return 0;
}

/* ---- removing ---- */

typedef struct RemoveContext {
        Manager *manager;
        char *name;
        void (*done)(const NsmError *error, void *userdata);
        void *userdata;
} RemoveContext;

static void on_unpinned(BuilderReply *reply, void *userdata) {
        RemoveContext *c = userdata;
        Manager *m = c->manager;
        _cleanup_free_ char *state = state_dir_namespace_file(&m->state, c->name), *root = NULL;

        if (reply->error && reply->error->code == NSM_ERROR_SYSTEM && reply->error->errno_value == ESHUTDOWN)
                log_info("Removing the namespace of '%s' is left to the next start.", c->name);
        else if (reply->error)
                log_error("%s", nsm_error_message(reply->error));
        else {
                if (state && unlink(state) < 0 && errno != ENOENT)
                        log_warning_errno(errno, "Failed to remove '%s', ignoring: %m", state);
                /* Only the empty mount point directory is left on the host; a non-empty one is not ours. */
                if (asprintf(&root, "%s/%s", m->config.subtree_root, c->name) >= 0)
                        (void) rmdir(root);
                log_info("Removed the mount namespace of '%s'.", c->name);
        }
        if (c->done)
                c->done(reply->error, c->userdata);
        free(c->name);
        free(c);
}

int namespace_remove(Namespace *ns, uint64_t deadline, void (*done)(const NsmError *error, void *userdata),
                     void *userdata) {
        Manager *m = ns->manager;
        RemoveContext *c;
        int r;

        if (!m)
                return -ESTALE;
        c = calloc(1, sizeof(RemoveContext));
        if (!c)
                return -ENOMEM;
        *c = (RemoveContext) { .manager = m, .name = strdup(ns->name), .done = done, .userdata = userdata };
        if (!c->name) {
                free(c);
                return -ENOMEM;
        }
        r = builder_unpin(m->builder, ns->name, deadline, on_unpinned, c);
        if (r < 0) {
                free(c->name);
                free(c);
                return r;
        }
        for (Session *s = ns->sessions; s; s = s->next)
                fd_store_remove(s->fdname);
        (void) namespace_dbus_send_removed(ns);
        namespace_drop(ns);
        return 0;
}

/* ---- records ---- */

int namespace_record_bind(Namespace *ns, MountId id, const char *destination, bool for_user, MountId replaced) {
        BindRecord *b;

        if (replaced.old != 0)
                namespace_forget_mount(ns, replaced);
        b = realloc(ns->binds, (ns->n_binds + 1) * sizeof(BindRecord));
        if (!b)
                return -ENOMEM;
        ns->binds = b;
        b[ns->n_binds] = (BindRecord) { .id = id, .destination = strdup(destination), .for_user = for_user };
        if (!b[ns->n_binds].destination)
                return -ENOMEM;
        ns->n_binds++;
        return 0;
}

static bool path_is_at_or_below(const char *path, const char *top) {
        size_t n = strlen(top);
        if (streq(top, "/"))
                return true;
        return strncmp(path, top, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* The choices recorded for 'path' (and, with 'below', for every path below it). */
static void clear_choices(Namespace *ns, const char *path, bool below) {
        for (size_t i = 0; i < ns->n_choices;)
                if (below ? path_is_at_or_below(ns->choices[i].path, path) : streq(ns->choices[i].path, path)) {
                        free(ns->choices[i].path);
                        free(ns->choices[i].mode);
                        ns->choices[i] = ns->choices[--ns->n_choices];
                } else
                        i++;
}

void namespace_forget_mount(Namespace *ns, MountId id) {
        for (size_t i = 0; i < ns->n_binds;)
                if (mount_id_equal(ns->binds[i].id, id)) {
                        /* What was chosen for it (and for what it held) went with it: kept, such
                         * records would grow with every path ever bound. */
                        clear_choices(ns, ns->binds[i].destination, true);
                        free(ns->binds[i].destination);
                        ns->binds[i] = ns->binds[--ns->n_binds];
                } else
                        i++;
}

int namespace_record_choice(Namespace *ns, const char *path, const char *mode, bool recursive) {
        PropagationChoice *c;

        namespace_clear_choice(ns, path);
        c = realloc(ns->choices, (ns->n_choices + 1) * sizeof(PropagationChoice));
        if (!c)
                return -ENOMEM;
        ns->choices = c;
        c[ns->n_choices] = (PropagationChoice) { .path = strdup(path), .mode = strdup(mode), .recursive = recursive };
        if (!c[ns->n_choices].path || !c[ns->n_choices].mode) {
                free(c[ns->n_choices].path);
                free(c[ns->n_choices].mode);
                return -ENOMEM;
        }
        ns->n_choices++;
        return 0;
}

void namespace_clear_choice(Namespace *ns, const char *path) {
        clear_choices(ns, path, false);
}

bool namespace_has_choice(Namespace *ns, const char *path) {
        for (size_t i = 0; i < ns->n_choices; i++)
                if (streq(ns->choices[i].path, path) ||
                    (ns->choices[i].recursive && path_is_at_or_below(path, ns->choices[i].path)))
                        return true;
        return false;
}

int namespace_set_pending_join(Namespace *ns, const char *path, bool pending) {
        bool has = strv_contains((const char *const *) ns->pending_joins, path);

        if (pending && !has)
                return strv_extend(&ns->pending_joins, path);
        if (!pending && has) {
                size_t k = 0;
                for (size_t i = 0; ns->pending_joins[i]; i++)
                        if (streq(ns->pending_joins[i], path))
                                free(ns->pending_joins[i]);
                        else
                                ns->pending_joins[k++] = ns->pending_joins[i];
                ns->pending_joins[k] = NULL;
        }
        return 0;
}
