/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "builder.h"
#include "group-lookup.h"
#include "log.h"
#include "namespace-build.h"
#include "namespace-session.h"
#include "namespace-state.h"
#include "parse-util.h"
#include "strv.h"
#include "text-escape.h"
#include "time-util.h"
#include "view-policy.h"

/* How a namespace comes to be ready: built anew by the builder, its [View] policy applied in a
 * killable child (view-job.h), or taken back from what a previous start pinned and saved. */

/* ---- building ---- */

typedef struct BuildContext {
        Namespace *ns;
        ViewJobs *jobs;
        uint64_t deadline;
        ViewPolicy policy;
        UserRecord user;
        bool groups_asked;       /* her groups were looked up (group-lookup.h) */
} BuildContext;

static void build_context_free(BuildContext *c) {
        namespace_unref(c->ns);
        view_policy_done(&c->policy);
        free(c->user.name);
        free(c->user.home);
        free(c->user.shell);
        free(c->user.group);
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
static void namespace_undo_build(NamespaceSet *s, const char *name) {
        _cleanup_free_ char *root = NULL;
        char *copy = strdup(name);

        if (copy && builder_unpin(s->builder, name, namespace_set_deadline(s), on_unpinned_after_failure, copy) < 0)
                free(copy);
        if (asprintf(&root, "%s/%s", s->config->subtree_root, name) >= 0)
                (void) rmdir(root);
}

/* The build ends: 'error' says why it failed (NULL: it succeeded). */
static void build_finish(BuildContext *c, const NsmError *error) {
        _cleanup_(nsm_error_done) NsmError saving = {};
        Namespace *ns = c->ns;
        NamespaceSet *s = ns->set;
        int r;

        if (!error && s) {
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
                if (s && ns->mntns_fd >= 0)
                        namespace_undo_build(s, ns->name);
                namespace_notify_waiters(ns, error);
                namespace_drop(ns);
        } else if (s) {
                ns->ready = true;
                log_info("Created the mount namespace of '%s' (mnt:[%" PRIu64 "]).", ns->name, ns->mntns_inode);
                namespace_notify_ready(ns);
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
        /* The same plan the child applied: where it may have made mount points as the user,
         * removed with the view (saved with the state: also after a restart). */
        if (view_policy_mount_points(&c->policy, &c->user, &ns->mount_points) < 0)
                log_warning("Failed to note where the [View] policy of '%s' mounts, ignoring: the empty mount "
                            "points it made in the user's directories stay when the view ends.", ns->name);
        build_finish(c, NULL);
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
        if (!ns->set) {
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
        r = view_job_queue(c->jobs, ns, &op, NULL, ns->uid, c->deadline, on_policy_applied, c);
        if (r < 0)
                build_fail(c, r, "Failed to start applying the [View] policy.");
}

static void build_look_up_groups(BuildContext *c);

/* Whether an entry of the policy names the user's primary group (%g): expanded on the loop too
 * (view_policy_mount_points()), so its name must be known before, not asked of NSS there. */
static bool policy_uses_group(const ViewPolicy *p) {
        char **const lists[] = { p->bind_paths, p->bind_read_only_paths, p->temporary_file_system,
                                 p->inaccessible_paths };

        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                for (char **e = lists[i]; e && *e; e++)
                        for (const char *q = strchr(*e, '%'); q && q[1]; q = strchr(q + 2, '%'))
                                if (q[1] == 'g')
                                        return true;
        return false;
}

/* The user's groups are known (NULL where no group has a policy file): her policy, then the
 * builder. */
static void build_with_groups(BuildContext *c, char **groups) {
        Namespace *ns = c->ns;
        NamespaceSet *s = ns->set;
        _cleanup_free_ char *why = NULL;
        int r;

        if (!s) {
                _cleanup_(nsm_error_done) NsmError e = {};
                (void) nsm_error_setf(&e, NSM_ERROR_NO_SUCH_NAMESPACE, "The namespace of '%s' was removed while it was "
                                      "being built.", ns->name);
                build_finish(c, &e);
                return;
        }
        r = view_policy_load(s->config, ns->name, groups, &c->policy);
        if (r < 0) {
                if (asprintf(&why, "Failed to find the [View] policy of '%s': %s", ns->name, strerror(-r)) < 0)
                        why = NULL;
                build_fail(c, r, why);
                return;
        }
        if (!c->groups_asked && policy_uses_group(&c->policy)) {
                /* %g: her primary group's name, from the same lookup in a child; then again. */
                view_policy_done(&c->policy);
                build_look_up_groups(c);
                return;
        }

        ViewSpec spec = {
                .name = ns->name,
                .subtree_root = s->config->subtree_root,
                .shared_subtrees = s->config->shared_subtrees,
                .propagation = s->config->view_propagation,
        };
        r = builder_build(s->builder, &spec, c->deadline, on_view_built, c);
        if (r < 0)
                build_fail(c, r, "Failed to ask the view builder.");
}

static void on_groups_looked_up(void *userdata);

/* Her group names, asked of NSS in a child (group-lookup.h), never on the loop: with sssd or
 * winbind a directory slow for her would hold up every login and call. Charged to root: a
 * login's lookups are never refused. */
static void build_look_up_groups(BuildContext *c) {
        _cleanup_(nsm_error_done) NsmError e = {}, failed = {};
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_free_ char *why = NULL, *primary = NULL;
        int r;

        c->groups_asked = true;
        if (!c->ns->set || !c->ns->set->group_lookups) {
                build_with_groups(c, NULL);
                return;
        }
        r = group_lookup(c->ns->set->group_lookups, &c->user, 0, c->deadline, on_groups_looked_up, c, NULL, &groups,
                         &primary, &e);
        if (r == 0)
                return;
        if (r < 0) {
                if (asprintf(&why, "Failed to find the [View] policy of '%s': her groups: %s", c->ns->name,
                             nsm_error_message(&e)) < 0)
                        why = NULL;
                (void) nsm_error_set(&failed, nsm_error_is_set(&e) ? e.code : NSM_ERROR_SYSTEM,
                                     nsm_error_is_set(&e) ? e.errno_value : r, why ?: nsm_error_message(&e));
                build_finish(c, &failed);
                return;
        }
        free(c->user.group);
        c->user.group = TAKE_PTR(primary);
        build_with_groups(c, groups);
}

static void on_groups_looked_up(void *userdata) {
        build_look_up_groups(userdata);
}

int namespace_build(Namespace *ns, ViewJobs *jobs, uint64_t deadline) {
        NamespaceSet *s = ns->set;
        _cleanup_strv_free_ char **with_files = NULL;
        _cleanup_free_ char *why = NULL;
        BuildContext *c;
        int r;

        c = calloc(1, sizeof(BuildContext));
        if (!c)
                return -ENOMEM;
        c->ns = namespace_ref(ns);
        c->jobs = jobs;
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
        r = view_policy_groups_with_files(s->config, &with_files);
        if (r < 0) {
                if (asprintf(&why, "Failed to find the [View] policy of '%s': %s", ns->name, strerror(-r)) < 0)
                        why = NULL;
                build_fail(c, r, why);
                return 0;
        }
        if (with_files)
                build_look_up_groups(c);
        else
                build_with_groups(c, NULL);
        return 0;
}

/* ---- loading ---- */

/* The user as the state file recorded her when her namespace was made: UID=, GID=, HOME=,
 * SHELL= (namespace_save()). -ENOENT if one is missing (a state file of an older version). */
static int state_file_user(FILE *f, const char *name, UserRecord *ret) {
        _cleanup_(user_record_done) UserRecord u = { .uid = (uid_t) -1, .gid = (gid_t) -1 };
        _cleanup_free_ char *line = NULL;
        size_t n = 0;
        int r = 0;

        while (r >= 0 && getline(&line, &n, f) >= 0) {
                line[strcspn(line, "\n")] = 0;
                if (strncmp(line, "UID=", 4) == 0)
                        r = parse_uid(line + 4, &u.uid);
                else if (strncmp(line, "GID=", 4) == 0)
                        r = parse_uid(line + 4, &u.gid);
                else if (strncmp(line, "HOME=", 5) == 0 && !u.home)
                        r = text_unescape(line + 5, &u.home);
                else if (strncmp(line, "SHELL=", 6) == 0 && !u.shell)
                        r = text_unescape(line + 6, &u.shell);
        }
        if (r < 0)
                return r;
        if (u.uid == (uid_t) -1 || u.gid == (gid_t) -1 || !u.home || !u.shell)
                return -ENOENT;
        u.name = strdup(name);
        if (!u.name)
                return -ENOMEM;
        *ret = TAKE_STRUCT(u);
        return 0;
}

/* The UID= line of a state file. */
static int state_file_uid(FILE *f, uid_t *ret) {
        _cleanup_free_ char *line = NULL;
        size_t n = 0;

        while (getline(&line, &n, f) >= 0)
                if (strncmp(line, "UID=", 4) == 0) {
                        line[strcspn(line, "\n")] = 0;
                        return parse_uid(line + 4, ret);
                }
        return -ENOENT;
}

int namespace_load(NamespaceSet *set, StoredFds *stored_fds, const char *name, int mntns_fd, Namespace **ret) {
        _cleanup_free_ char *path = state_dir_namespace_file(set->state, name);
        _cleanup_(user_record_done) UserRecord u = {};
        _cleanup_fclose_ FILE *f = NULL;
        bool had_sessions = false;
        Namespace *ns;
        uid_t uid;
        int r;

        if (!path)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        /* The user as NSS gave her when the namespace was made, as the state file recorded
         * her: a start asks NSS nothing. It runs before the daemon takes its bus name, which
         * logins wait for (the unit is ordered before systemd-user-sessions.service): a
         * directory server that does not answer (sssd's client waits up to 300 s per question)
         * would hold up every login for as many questions as there are views, past the unit's
         * start timeout, and a failure would drop her view. A rename in the directory while the
         * daemon was away leaves her namespace its name, as at run time (docs/interface.md).
         * Only a state file of an older version, without HOME= and SHELL=, is looked up in
         * NSS: by the uid it recorded (a user is her uid), else by name; its next save writes
         * them. */
        r = state_file_user(f, name, &u);
        if (r == -ENOENT) {
                rewind(f);
                r = state_file_uid(f, &uid);
                if (r >= 0)
                        r = user_record_by_uid(uid, &u);
                else
                        r = user_record_by_name(name, &u);
        }
        if (r < 0)
                return r;
        rewind(f);
        if (!streq(u.name, name)) {
                /* (name ?: …: GCC's -fsanitize=undefined build sees a null name here that cannot be.) */
                log_info("User '%s' (UID %u) is named '%s' now; her namespace keeps its name until it is removed.",
                         name ?: "?", (unsigned) u.uid, u.name ?: "?");
                free(u.name);
                u.name = strdup(name);
                if (!u.name)
                        return -ENOMEM;
        }
        r = namespace_new(set, &u, &ns);
        if (r < 0)
                return r;
        r = namespace_set_fd(ns, mntns_fd);
        if (r >= 0)
                r = namespace_parse_state(ns, f, &had_sessions);
        if (r >= 0)
                namespace_watch_loaded_sessions(ns, stored_fds);
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
