/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>

#include "builder.h"
#include "fd-store.h"
#include "log.h"
#include "mount-points.h"
#include "mount-util.h"
#include "namespace.h"
#include "path-util.h"
#include "string-table.h"
#include "strv.h"
#include "time-util.h"

static const char *const namespace_state_table[_NAMESPACE_STATE_MAX] = {
        [NAMESPACE_ACTIVE] = "active",
        [NAMESPACE_LINGERING] = "lingering",
        [NAMESPACE_CLOSING] = "closing",
};

DEFINE_STRING_TABLE_LOOKUP(namespace_state, NamespaceState);

char *namespace_root(Namespace *ns) {
        char *p = NULL;
        if (!ns->set || asprintf(&p, "%s/%s", ns->set->config->subtree_root, ns->name) < 0)
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

/* ---- the set ---- */

int namespace_set_init(NamespaceSet *s, sd_event *event, const ManagerConfig *config, const StateDir *state) {
        *s = (NamespaceSet) { .event = event, .config = config, .state = state };
        s->by_name = hashmap_new();
        s->by_uid = id_map_new();
        return s->by_name && s->by_uid ? 0 : -ENOMEM;
}

void namespace_set_done(NamespaceSet *s) {
        _cleanup_(nsm_error_done) NsmError why = {};
        _cleanup_free_ Namespace **list = NULL;
        size_t n = 0;
        Namespace *ns;

        if (!s->by_name)
                return;
        /* Dropped from a copy of the list: each drop changes the map. */
        list = calloc(hashmap_size(s->by_name) + 1, sizeof(Namespace *));
        if (list) {
                for (HashmapIterator i = {}; hashmap_iterate(s->by_name, &i, (void **) &ns, NULL);)
                        list[n++] = ns;
                (void) nsm_error_set_shutting_down(&why);
                for (size_t i = 0; i < n; i++)
                        namespace_drop_with(list[i], &why);
        } else
                log_oom();
        s->by_name = hashmap_free(s->by_name);
        s->by_uid = id_map_free(s->by_uid);
}

int namespace_set_listen(NamespaceSet *s, const NamespaceListener *l, void *userdata) {
        for (size_t i = 0; i < NAMESPACE_LISTENERS_MAX; i++)
                if (!s->listeners[i].l) {
                        s->listeners[i].l = l;
                        s->listeners[i].userdata = userdata;
                        return 0;
                }
        return -ENOSPC;
}

void namespace_set_unlisten(NamespaceSet *s, const NamespaceListener *l, void *userdata) {
        for (size_t i = 0; i < NAMESPACE_LISTENERS_MAX; i++)
                if (s->listeners[i].l == l && s->listeners[i].userdata == userdata)
                        s->listeners[i].l = NULL;
}

Namespace *namespace_set_get(NamespaceSet *s, const char *name) {
        return name ? hashmap_get(s->by_name, name) : NULL;
}

Namespace *namespace_set_get_by_uid(NamespaceSet *s, uid_t uid) {
        return id_map_get(s->by_uid, uid_key(uid));
}

uint64_t namespace_set_deadline(const NamespaceSet *s) {
        return now_usec(CLOCK_MONOTONIC) + s->config->operation_timeout_usec;
}

/* The listeners' 'which' of ns, in the order they listened. */
#define NOTIFY(ns, which)                                                                  \
        do {                                                                               \
                NamespaceSet *_s = (ns)->set;                                              \
                for (size_t _i = 0; _s && _i < NAMESPACE_LISTENERS_MAX; _i++)              \
                        if (_s->listeners[_i].l && _s->listeners[_i].l->which)             \
                                _s->listeners[_i].l->which((ns), _s->listeners[_i].userdata); \
        } while (0)

void namespace_notify_ready(Namespace *ns) {
        NOTIFY(ns, ready);
}

void namespace_notify_changed(Namespace *ns) {
        NOTIFY(ns, changed);
}

/* ---- the object ---- */

int namespace_new(NamespaceSet *set, const UserRecord *u, Namespace **ret) {
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
        ns->ops = op_queue_new(set->event);
        if (!ns->name || !ns->home || !ns->shell || !ns->ops)
                return -ENOMEM;

        r = hashmap_put(set->by_name, ns->name, ns);
        if (r < 0)
                return r;
        if (id_map_get(set->by_uid, uid_key(ns->uid)))
                r = -EEXIST;   /* one view per user: another name of the same uid has it */
        else
                r = id_map_put(set->by_uid, uid_key(ns->uid), ns);
        if (r < 0) {
                hashmap_remove(set->by_name, ns->name);
                return r;
        }
        /* The set's reference is the one we were created with. */
        ns->set = set;
        *ret = TAKE_PTR(ns);
        return 0;
}

Session *session_free(Session *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->fd_source);
        safe_close(s->fd);
        sd_event_source_disable_unref(s->pidfd_source);
        safe_close(s->pidfd);
        free(s->id);
        free(s->fdname);
        free(s);
        return NULL;
}

Session *session_new(const char *id) {
        Session *s = calloc(1, sizeof(Session));

        if (!s)
                return NULL;
        *s = (Session) { .id = strdup(id), .fd = -EBADF, .pidfd = -EBADF };
        return s->id ? s : session_free(s);
}

bool valid_session_id(const char *id) {
        if (!id || !*id || strlen(id) > SESSION_ID_MAX)
                return false;
        for (const unsigned char *c = (const unsigned char *) id; *c; c++)
                if (*c <= ' ' || *c == ':' || *c >= 127)
                        return false;
        return true;
}

/* Every session of ns ends, unwatched and unsaved (the namespace is freed or dropped). */
static void namespace_free_sessions(Namespace *ns) {
        while (ns->sessions) {
                Session *s = ns->sessions;
                ns->sessions = s->next;
                session_free(s);
        }
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
        ns->mount_points = strv_free(ns->mount_points);
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

void namespace_notify_waiters(Namespace *ns, const NsmError *error) {
        NamespaceWaiter *w = TAKE_PTR(ns->waiters);

        while (w) {
                NamespaceWaiter *next = w->next;
                w->callback(ns, error, w->userdata);
                free(w);
                w = next;
        }
}

void namespace_drop_with(Namespace *ns, const NsmError *why) {
        NamespaceSet *s = ns->set;

        if (!s)
                return;
        namespace_ref(ns);
        NOTIFY(ns, gone);
        if (hashmap_get(s->by_name, ns->name) == ns)
                hashmap_remove(s->by_name, ns->name);
        if (id_map_get(s->by_uid, uid_key(ns->uid)) == ns)
                (void) id_map_remove(s->by_uid, uid_key(ns->uid));
        ns->set = NULL;
        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
        namespace_free_sessions(ns);
        /* What still waits for it learns that it is gone. */
        ns->ops = op_queue_free_with(ns->ops, why);
        namespace_notify_waiters(ns, why);
        namespace_unref(ns);   /* the set's */
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

/* ---- removing ---- */

typedef struct RemoveContext {
        NamespaceSet *set;
        char *name;
        uid_t uid;
        uint64_t mntns_id;
        uint64_t mntns_inode;
        char **mount_points;     /* the view's (mount-points.h), removed once it is unpinned */
        void (*done)(const NsmError *error, void *userdata);
        void *userdata;
} RemoveContext;

static void on_unpinned(BuilderReply *reply, void *userdata) {
        RemoveContext *c = userdata;
        NamespaceSet *s = c->set;
        _cleanup_free_ char *state = state_dir_namespace_file(s->state, c->name), *root = NULL;

        if (reply->error && reply->error->code == NSM_ERROR_SYSTEM && reply->error->errno_value == ESHUTDOWN)
                log_info("Removing the namespace of '%s' is left to the next start.", c->name);
        else if (reply->error)
                log_error("%s", nsm_error_message(reply->error));
        else {
                if (state && unlink(state) < 0 && errno != ENOENT)
                        log_warning_errno(errno, "Failed to remove '%s', ignoring: %m", state);
                /* Only the empty mount point directory is left on the host; a non-empty one is not ours. */
                if (asprintf(&root, "%s/%s", s->config->subtree_root, c->name) >= 0)
                        (void) rmdir(root);
                log_info("Removed the mount namespace of '%s'.", c->name);
                /* Not while they have a view again: it may be re-tagging the same directories to
                 * mount on them, and rmdir() of a mount point of another namespace detaches it
                 * there. What stays is theirs, and that view's end removes it. */
                if (!namespace_set_get_by_uid(s, c->uid) && !namespace_set_get(s, c->name))
                        mount_points_remove(s->children, c->name, c->uid, c->mntns_id, c->mntns_inode, c->mount_points,
                                            namespace_set_deadline(s));
        }
        if (c->done)
                c->done(reply->error, c->userdata);
        strv_free(c->mount_points);
        free(c->name);
        free(c);
}

int namespace_remove(Namespace *ns, uint64_t deadline, void (*done)(const NsmError *error, void *userdata),
                     void *userdata) {
        NamespaceSet *s = ns->set;
        RemoveContext *c;
        int r;

        if (!s)
                return -ESTALE;
        c = calloc(1, sizeof(RemoveContext));
        if (!c)
                return -ENOMEM;
        *c = (RemoveContext) { .set = s, .name = strdup(ns->name), .uid = ns->uid, .mntns_id = ns->mntns_id, .mntns_inode = ns->mntns_inode,
                               .mount_points = TAKE_PTR(ns->mount_points), .done = done, .userdata = userdata };
        if (!c->name) {
                ns->mount_points = TAKE_PTR(c->mount_points);
                free(c);
                return -ENOMEM;
        }
        r = builder_unpin(s->builder, ns->name, deadline, on_unpinned, c);
        if (r < 0) {
                ns->mount_points = TAKE_PTR(c->mount_points);
                free(c->name);
                free(c);
                return r;
        }
        for (Session *i = ns->sessions; i; i = i->next)
                fd_store_remove(i->fdname);
        NOTIFY(ns, removed);
        namespace_drop(ns);
        return 0;
}

/* ---- records ---- */

int namespace_mount_ids(Namespace *ns, NamespaceMountIds *ret) {
        NamespaceMountIds ids = {};

        ids.own = calloc(ns->n_binds + 1, sizeof(MountId));
        ids.binds = calloc(ns->n_binds + 1, sizeof(MountId));
        ids.policy = ns->n_policy_mounts ? memdup(ns->policy_mounts, ns->n_policy_mounts * sizeof(MountId)) : NULL;
        if (!ids.own || !ids.binds || (ns->n_policy_mounts && !ids.policy)) {
                free(ids.own);
                free(ids.binds);
                free(ids.policy);
                return -ENOMEM;
        }
        for (size_t i = 0; i < ns->n_binds; i++) {
                ids.binds[ids.n_binds++] = ns->binds[i].id;
                if (ns->binds[i].for_user)
                        ids.own[ids.n_own++] = ns->binds[i].id;
        }
        ids.n_policy = ns->n_policy_mounts;
        *ret = ids;
        return 0;
}

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
