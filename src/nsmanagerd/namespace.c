/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "builder.h"
#include "fd-store.h"
#include "log.h"
#include "mount-events.h"
#include "namespace-dbus.h"
#include "namespace.h"
#include "path-util.h"
#include "process-util.h"
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

static Session *session_free(Session *s) {
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

static Session *session_new(const char *id) {
        Session *s = calloc(1, sizeof(Session));

        if (!s)
                return NULL;
        *s = (Session) { .id = strdup(id), .fd = -EBADF, .pidfd = -EBADF };
        return s->id ? s : session_free(s);
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
        while (ns->sessions) {
                Session *s = ns->sessions;
                ns->sessions = s->next;
                session_free(s);
        }
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
        while (ns->sessions) {
                Session *s = ns->sessions;
                ns->sessions = s->next;
                session_free(s);
        }
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

static int namespace_set_fd(Namespace *ns, int fd) {
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

/* ---- state ---- */

static int write_records(FILE *f, Namespace *ns) {
        for (Session *s = ns->sessions; s; s = s->next)
                fprintf(f, "SESSION=%s %d %" PRIu64 " %s\n", s->id, (int) s->leader, s->leader_start,
                        s->fdname ?: "-");
        for (size_t i = 0; i < ns->n_binds; i++) {
                _cleanup_free_ char *d = escape_word(ns->binds[i].destination);
                if (!d)
                        return -ENOMEM;
                fprintf(f, "BIND=%" PRIu64 " %" PRIu64 " %s %s\n", ns->binds[i].id.unique, ns->binds[i].id.old,
                        ns->binds[i].for_user ? "user" : "admin", d);
        }
        for (size_t i = 0; i < ns->n_policy_mounts; i++)
                fprintf(f, "POLICY_MOUNT=%" PRIu64 " %" PRIu64 "\n", ns->policy_mounts[i].unique, ns->policy_mounts[i].old);
        for (size_t i = 0; i < ns->n_choices; i++) {
                _cleanup_free_ char *p = escape_word(ns->choices[i].path);
                if (!p)
                        return -ENOMEM;
                fprintf(f, "CHOICE=%s %s %s\n", ns->choices[i].mode, ns->choices[i].recursive ? "recursive" : "-", p);
        }
        for (char **j = ns->pending_joins; j && *j; j++) {
                _cleanup_free_ char *p = escape_word(*j);
                if (!p)
                        return -ENOMEM;
                fprintf(f, "PENDING_JOIN=%s\n", p);
        }
        return 0;
}

int namespace_save(Namespace *ns) {
        Manager *m = ns->manager;
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        if (!m)
                return 0;
        path = state_dir_namespace_file(&m->state, ns->name);
        f = open_memstream(&buf, &size);
        if (!path || !f) {
                if (f)
                        fclose(f);
                return -ENOMEM;
        }
        fprintf(f,
                "# This is private data. Do not parse.\n"
                "NAME=%s\nUID=%u\nGID=%u\nMNTNS_ID=%" PRIu64 "\nTIMESTAMP=%" PRIu64 "\nLINGER=%s\n",
                ns->name, (unsigned) ns->uid, (unsigned) ns->gid, ns->mntns_inode, ns->timestamp,
                ns->linger ? "yes" : "no");
        r = write_records(f, ns);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        return state_dir_write_file(&m->state, path, buf, size);
}

static int session_leader_exited(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int session_fd_closed(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* Edge-triggered, both: a pidfd stays readable once its process is gone, a pipe without
 * writers stays hung up, and sd-event dispatches one source per turn of its loop; level-
 * triggered, every turn's epoll_wait would return every ended session not handled yet. When a
 * thousand logins end at once (bench/bench_burst.py) that made the turns, and the logins
 * arriving meanwhile, slower by the thousand: the first 200 logins of the next burst took
 * 0.4 s, the rest 0.03 s. */

/* Watches the pipe's read end: no events asked for, EPOLLHUP comes anyway once the last
 * writer is gone; what a writer might write is never read (as logind's session FIFO). */
static int session_watch_fd(Namespace *ns, Session *s) {
        return sd_event_add_io(ns->manager->event, &s->fd_source, s->fd, EPOLLET, session_fd_closed, ns);
}

/* Watches the leader with a pidfd, where the session has no fd. With 'verify', only if the
 * pid still names the process that opened the session (same start time): after a restart a
 * pid may have been reused. -ESRCH: it is gone. */
static int session_watch_leader(Namespace *ns, Session *s, bool verify) {
        if (s->leader <= 0)
                return 0;
        s->pidfd = (int) syscall(SYS_pidfd_open, s->leader, 0);
        if (s->pidfd < 0)
                return -errno;
        /* Checked after the pidfd is taken: from here on the pid cannot be reused under us. */
        if (verify && s->leader_start != 0 && process_start_time(s->leader) != s->leader_start) {
                s->pidfd = safe_close(s->pidfd);
                return -ESRCH;
        }
        return sd_event_add_io(ns->manager->event, &s->pidfd_source, s->pidfd, EPOLLIN | EPOLLET, session_leader_exited,
                               ns);
}

static int namespace_stop_timer_fired(sd_event_source *s, uint64_t usec, void *userdata) {
        Namespace *ns = userdata;

        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
        if (ns->sessions || ns->linger || !ns->manager)
                return 0;
        return namespace_remove(ns, manager_deadline(ns->manager), NULL, NULL);
}

/* After the last session: StopDelaySec, then gone — unless lingering or reopened meanwhile.
 * The caller tells the bus (State is "closing" now), once with whatever else it changed. */
static void namespace_maybe_schedule_stop(Namespace *ns) {
        Manager *m = ns->manager;
        int r;

        if (!m || ns->sessions || ns->linger || ns->stop_timer)
                return;
        r = sd_event_add_time_relative(m->event, &ns->stop_timer, CLOCK_MONOTONIC, m->config.stop_delay_usec,
                                       10 * USEC_PER_MSEC, namespace_stop_timer_fired, ns);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the stop timer of '%s', keeping it: %m", ns->name);
}

static void namespace_cancel_stop(Namespace *ns) {
        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
}

bool valid_session_id(const char *id) {
        if (!id || !*id || strlen(id) > SESSION_ID_MAX)
                return false;
        for (const unsigned char *c = (const unsigned char *) id; *c; c++)
                if (*c <= ' ' || *c == ':' || *c >= 127)
                        return false;
        return true;
}

bool namespace_session_id_seen(Namespace *ns, const Session *before) {
        for (Session *s = ns->sessions; s && s != before; s = s->next)
                if (streq(s->id, before->id))
                        return true;
        return false;
}

static void namespace_save_or_warn(Namespace *ns) {
        int r = namespace_save(ns);
        if (r < 0)
                log_warning_errno(r, "Failed to save the state of '%s', ignoring: %m", ns->name);
}

static bool namespace_has_session(Namespace *ns, const char *id) {
        for (Session *s = ns->sessions; s; s = s->next)
                if (streq(s->id, id))
                        return true;
        return false;
}

int namespace_add_session(Namespace *ns, const char *id, pid_t leader, int *ret_fd) {
        _cleanup_close_ int write_fd = -EBADF;
        char fdname[FD_STORE_NAME_MAX];
        int pipefd[2], r;
        bool known;
        Session *s;

        s = session_new(id);
        if (!s)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                r = -errno;
                session_free(s);
                return r;
        }
        s->fd = pipefd[0];
        write_fd = pipefd[1];
        r = session_watch_fd(ns, s);
        if (r < 0) {
                session_free(s);
                return r;
        }
        /* The leader is waiting for our reply: its pid names it now. Only the fallback of a
         * restart without the fd store looks at it. */
        s->leader = leader;
        s->leader_start = leader > 0 ? process_start_time(leader) : 0;
        if (fd_store_available() && fd_store_new_name(fdname) >= 0) {
                r = fd_store_add(s->fd, fdname);
                if (r > 0)
                        s->fdname = strdup(fdname);
                else if (r < 0)
                        log_warning_errno(r, "Failed to hand session '%s' of '%s' to systemd's fd store, ignoring "
                                          "(a restart falls back to its leader): %m", id, ns->name);
        }

        namespace_cancel_stop(ns);
        known = namespace_has_session(ns, id);
        s->next = ns->sessions;
        ns->sessions = s;
        namespace_save_or_warn(ns);
        if (!known)
                (void) namespace_dbus_send_changed(ns);
        *ret_fd = TAKE_FD(write_fd);
        return 0;
}

/* The last session of an id gone: tell the bus, maybe start the stop delay. */
static void namespace_session_removed(Namespace *ns, const char *id) {
        namespace_save_or_warn(ns);
        namespace_maybe_schedule_stop(ns);
        if (!namespace_has_session(ns, id))
                (void) namespace_dbus_send_changed(ns);
}

static void namespace_end_session(Namespace *ns, Session *s) {
        _cleanup_free_ char *id = NULL;

        for (Session **p = &ns->sessions; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        break;
                }
        id = TAKE_PTR(s->id);
        session_free(s);
        if (id)
                namespace_session_removed(ns, id);
}

int namespace_remove_session(Namespace *ns, const char *id, NsmError *error) {
        bool found = false;

        for (Session **p = &ns->sessions; *p;) {
                Session *s = *p;

                if (!streq(s->id, id)) {
                        p = &s->next;
                        continue;
                }
                /* The login may still hold its end: systemd's copy of ours would stay. */
                fd_store_remove(s->fdname);
                *p = s->next;
                session_free(s);
                found = true;
        }
        if (!found)
                return nsm_error_setf(error, NSM_ERROR_NO_SUCH_SESSION, "User '%s' has no session '%s'.", ns->name, id);
        namespace_session_removed(ns, id);
        return 0;
}

static Session *namespace_find_source(Namespace *ns, sd_event_source *source) {
        for (Session *s = ns->sessions; s; s = s->next)
                if (s->fd_source == source || s->pidfd_source == source)
                        return s;
        return NULL;
}

static int session_fd_closed(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Namespace *ns = userdata;
        Session *s = namespace_find_source(ns, source);

        if (!s || !(revents & (EPOLLHUP | EPOLLERR)))
                return 0;
        log_info("Session '%s' of '%s' closed.", s->id, ns->name);
        /* systemd drops its copy by itself: it saw the same hang-up. */
        namespace_end_session(ns, s);
        return 0;
}

static int session_leader_exited(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Namespace *ns = userdata;
        Session *s = namespace_find_source(ns, source);

        if (!s)
                return 0;
        log_info("Login process %d of session '%s' of '%s' exited; closing the session.", (int) s->leader, s->id,
                 ns->name);
        namespace_end_session(ns, s);
        return 0;
}

int namespace_set_linger(Namespace *ns, bool b) {
        if (ns->linger == b)
                return 0;
        ns->linger = b;
        if (b)
                namespace_cancel_stop(ns);
        namespace_save_or_warn(ns);
        if (!b)
                namespace_maybe_schedule_stop(ns);
        (void) namespace_dbus_send_changed(ns);
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

/* ---- loading ---- */

static int parse_mount_id(const char *s, MountId *ret, const char **ret_rest) {
        unsigned long long unique, old;
        int n = 0;

        if (sscanf(s, "%llu %llu %n", &unique, &old, &n) != 2 || n == 0)
                return -EINVAL;
        *ret = (MountId) { .unique = unique, .old = old };
        *ret_rest = s + n;
        return 0;
}

static int load_bind(Namespace *ns, const char *value) {
        _cleanup_free_ char *dest = NULL;
        const char *rest;
        char who[8];
        MountId id;
        int n = 0;

        if (parse_mount_id(value, &id, &rest) < 0 || sscanf(rest, "%7s %n", who, &n) != 1 || n == 0 ||
            unescape_word(rest + n, &dest) < 0)
                return -EINVAL;
        return namespace_record_bind(ns, id, dest, streq(who, "user"), (MountId) {});
}

static int load_policy_mount(Namespace *ns, const char *value) {
        const char *rest;
        MountId id, *p;

        if (parse_mount_id(value, &id, &rest) < 0)
                return -EINVAL;
        p = realloc(ns->policy_mounts, (ns->n_policy_mounts + 1) * sizeof(MountId));
        if (!p)
                return -ENOMEM;
        ns->policy_mounts = p;
        p[ns->n_policy_mounts++] = id;
        return 0;
}

static int load_choice(Namespace *ns, const char *value) {
        _cleanup_free_ char *path = NULL;
        char mode[16], rec[16];
        int n = 0;

        if (sscanf(value, "%15s %15s %n", mode, rec, &n) != 2 || n == 0 || unescape_word(value + n, &path) < 0)
                return -EINVAL;
        return namespace_record_choice(ns, path, mode, streq(rec, "recursive"));
}

static int load_pending(Namespace *ns, const char *value) {
        _cleanup_free_ char *path = NULL;
        if (unescape_word(value, &path) < 0)
                return -EINVAL;
        return namespace_set_pending_join(ns, path, true);
}

/* Only recorded here: namespace_watch_loaded_sessions() finds the fd, or looks at the leader.
 * "SESSION=ID LEADER START FDNAME"; a state file from before the fd store has no FDNAME. */
static int load_session(Namespace *ns, const char *value) {
        char id[SESSION_ID_MAX + 1], fdname[FD_STORE_NAME_MAX] = "-";
        int pid = 0;
        unsigned long long start = 0;
        Session *s;

        _Static_assert(SESSION_ID_MAX == 255 && FD_STORE_NAME_MAX == 64, "the widths in the format below");
        if (sscanf(value, "%255s %d %llu %63s", id, &pid, &start, fdname) < 2 || !valid_session_id(id))
                return -EINVAL;
        s = session_new(id);
        if (!s)
                return -ENOMEM;
        s->leader = pid;
        s->leader_start = start;
        if (!streq(fdname, "-") && !(s->fdname = strdup(fdname))) {
                session_free(s);
                return -ENOMEM;
        }
        s->next = ns->sessions;
        ns->sessions = s;
        return 0;
}

/* Each session by its fd, where systemd kept it for us; else by its leader. A session whose
 * leader is gone (or whose pid now names another process) ended while the daemon was not
 * running. */
static void namespace_watch_loaded_sessions(Namespace *ns) {
        for (Session **p = &ns->sessions; *p;) {
                Session *s = *p;
                int r;

                s->fd = stored_fds_take(ns->manager->stored_fds, s->fdname);
                if (s->fd >= 0) {
                        r = session_watch_fd(ns, s);
                        if (r >= 0) {
                                p = &s->next;
                                continue;
                        }
                        log_warning_errno(r, "Failed to watch the fd of session '%s' of '%s', watching its leader: %m",
                                          s->id, ns->name);
                        s->fd = safe_close(s->fd);
                }
                /* Not in the store (any more): a later restart will not find it there either. */
                s->fdname = mfree(s->fdname);
                if (session_watch_leader(ns, s, /* verify= */ true) >= 0) {
                        p = &s->next;
                        continue;
                }
                log_info("Session '%s' of '%s' ended while the daemon was not running.", s->id, ns->name);
                *p = s->next;
                session_free(s);
        }
}

int namespace_parse_state(Namespace *ns, FILE *f, bool *ret_had_sessions) {
        _cleanup_free_ char *line = NULL;
        size_t n = 0;

        while (getline(&line, &n, f) >= 0) {
                char *eq;
                int r = 0;

                line[strcspn(line, "\n")] = 0;
                eq = strchr(line, '=');
                if (line[0] == '#' || !eq)
                        continue;
                *eq = 0;
                const char *key = line, *value = eq + 1;
                if (streq(key, "LINGER"))
                        ns->linger = streq(value, "yes");
                else if (streq(key, "TIMESTAMP"))
                        ns->timestamp = strtoull(value, NULL, 10);
                else if (streq(key, "SESSION")) {
                        *ret_had_sessions = true;
                        r = load_session(ns, value);
                } else if (streq(key, "BIND"))
                        r = load_bind(ns, value);
                else if (streq(key, "POLICY_MOUNT"))
                        r = load_policy_mount(ns, value);
                else if (streq(key, "CHOICE"))
                        r = load_choice(ns, value);
                else if (streq(key, "PENDING_JOIN"))
                        r = load_pending(ns, value);
                /* A malformed record is dropped, the rest is kept. */
                if (r == -ENOMEM)
                        return r;
        }
        return 0;
}

int namespace_load(Manager *m, const char *name, int mntns_fd, Namespace **ret) {
        _cleanup_free_ char *path = state_dir_namespace_file(&m->state, name);
        _cleanup_(user_record_done) UserRecord u = {};
        _cleanup_fclose_ FILE *f = NULL;
        bool had_sessions = false;
        Namespace *ns;
        int r;

        if (!path)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        r = user_record_by_name(name, &u);
        if (r < 0)
                return r;
        r = namespace_new(m, &u, &ns);
        if (r < 0)
                return r;
        r = namespace_set_fd(ns, mntns_fd);
        if (r >= 0)
                r = namespace_parse_state(ns, f, &had_sessions);
        if (r >= 0)
                namespace_watch_loaded_sessions(ns);
        if (r < 0) {
                ns->mntns_fd = -EBADF;   /* the caller's still */
                namespace_drop(ns);
                return r;
        }
        ns->ready = true;
        namespace_save_or_warn(ns);
        /* Sessions that all ended while we were away: the stop delay starts now. */
        if (had_sessions)
                namespace_maybe_schedule_stop(ns);
        *ret = ns;
        return 0;
}
