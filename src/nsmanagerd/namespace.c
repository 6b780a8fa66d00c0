/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "bus-errors.h"
#include "log.h"
#include "namespace-dbus.h"
#include "namespace.h"
#include "path-util.h"
#include "view.h"
#include "strv.h"

static const char *const namespace_state_table[_NAMESPACE_STATE_MAX] = {
        [NAMESPACE_ACTIVE] = "active",
        [NAMESPACE_LINGERING] = "lingering",
        [NAMESPACE_CLOSING] = "closing",
};

const char *namespace_state_to_string(NamespaceState s) {
        if (s < 0 || s >= _NAMESPACE_STATE_MAX)
                return NULL;
        return namespace_state_table[s];
}

NamespaceState namespace_state_from_string(const char *s) {
        for (int i = 0; s && i < _NAMESPACE_STATE_MAX; i++)
                if (streq(namespace_state_table[i], s))
                        return i;
        return _NAMESPACE_STATE_INVALID;
}

static uint64_t now_realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

char *namespace_root(Namespace *ns) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", ns->manager->config.subtree_root, ns->name) < 0)
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

static char *state_file_path(Manager *m, const char *name) {
        char *p = NULL;
        if (asprintf(&p, "%s/namespaces/%s", m->config.state_directory, name) < 0)
                return NULL;
        return p;
}

int namespace_new(Manager *m, const UserRecord *u, Namespace **ret) {
        Namespace *ns;
        char key[32];
        int r;

        ns = calloc(1, sizeof(Namespace));
        if (!ns)
                return -ENOMEM;
        *ns = (Namespace) {
                .manager = m,
                .uid = u->uid,
                .gid = u->gid,
                .mntns_fd = -EBADF,
                .name = strdup(u->name),
                .home = strdup(u->home),
                .shell = strdup(u->shell),
        };
        if (!ns->name || !ns->home || !ns->shell ||
            asprintf(&ns->object_path, NSM_NAMESPACE_PATH_PREFIX "/_%u", (unsigned) u->uid) < 0) {
                namespace_free(ns);
                return -ENOMEM;
        }
        r = hashmap_put(m->namespaces, ns->name, ns);
        if (r < 0) {
                namespace_free(ns);
                return r;
        }
        snprintf(key, sizeof key, "%u", (unsigned) u->uid);
        ns->uid_key = strdup(key);
        if (!ns->uid_key || (r = hashmap_put(m->namespaces_by_uid, ns->uid_key, ns)) < 0) {
                namespace_free(ns);
                return r < 0 ? r : -ENOMEM;
        }
        *ret = ns;
        return 0;
}

static Session *session_free(Session *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->pidfd_source);
        safe_close(s->pidfd);
        free(s->id);
        free(s);
        return NULL;
}

Namespace *namespace_free(Namespace *ns) {
        if (!ns)
                return NULL;
        if (ns->manager) {
                if (hashmap_get(ns->manager->namespaces, ns->name) == ns)
                        hashmap_remove(ns->manager->namespaces, ns->name);
                if (ns->uid_key && hashmap_get(ns->manager->namespaces_by_uid, ns->uid_key) == ns)
                        hashmap_remove(ns->manager->namespaces_by_uid, ns->uid_key);
        }
        while (ns->sessions) {
                Session *s = ns->sessions;
                ns->sessions = s->next;
                session_free(s);
        }
        sd_event_source_disable_unref(ns->stop_timer);
        safe_close(ns->mntns_fd);
        free(ns->name);
        free(ns->uid_key);
        free(ns->home);
        free(ns->shell);
        free(ns->object_path);
        free(ns);
        return NULL;
}

static int namespace_set_fd(Namespace *ns, int fd) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        safe_close(ns->mntns_fd);
        ns->mntns_fd = fd;
        ns->mntns_id = (uint64_t) st.st_ino;
        return 0;
}

static char *pin_dir(Manager *m) {
        char *p = NULL;
        if (asprintf(&p, "%s/pins", m->config.state_directory) < 0)
                return NULL;
        return p;
}

int namespace_start(Namespace *ns, char **ret_error_message) {
        Manager *m = ns->manager;
        _cleanup_(view_policy_done) ViewPolicy policy = {};
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_free_ char *pins = pin_dir(m), *policy_error = NULL, *why = NULL;
        UserRecord u = { .name = ns->name, .uid = ns->uid, .gid = ns->gid, .home = ns->home, .shell = ns->shell };
        int fd = -EBADF, stage = VIEW_STAGE_NONE, r;

        if (!pins)
                return -ENOMEM;

        r = user_group_names(ns->name, ns->gid, &groups);
        if (r < 0)
                return log_error_errno(r, "Failed to list the groups of '%s': %m", ns->name);
        r = view_policy_load(m->config_file, ns->name, groups, &policy, &policy_error);
        if (r < 0) {
                if (ret_error_message && asprintf(ret_error_message, "Invalid [View] policy for '%s': %s", ns->name,
                                                  policy_error ?: strerror(-r)) < 0)
                        *ret_error_message = NULL;
                return log_error_errno(r, "Failed to load the [View] policy of '%s': %s", ns->name,
                                       policy_error ?: strerror(-r));
        }

        ViewSpec spec = {
                .user = &u,
                .subtree_root = m->config.subtree_root,
                .shared_subtrees = m->config.shared_subtrees,
                .propagation = m->config.view_propagation,
                .policy = &policy,
                .registry_fd = m->registry_fd,
                .pin_dir = pins,
        };
        r = view_create(&spec, &m->pin_cpu, &fd, &stage, &why);
        if (r < 0) {
                _cleanup_free_ char *root = namespace_root(ns);
                /* The child may have made the mount point directory; nothing else is left. */
                if (root)
                        (void) rmdir(root);
                if (ret_error_message && asprintf(ret_error_message, "Failed to build the view of '%s' while %s: %s",
                                                  ns->name, view_stage_to_string(stage), why ?: strerror(-r)) < 0)
                        *ret_error_message = NULL;
                return log_error_errno(r, "Failed to build the view of '%s' while %s: %s", ns->name,
                                       view_stage_to_string(stage), why ?: strerror(-r));
        }
        r = namespace_set_fd(ns, fd);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        ns->timestamp = now_realtime_usec();

        r = namespace_save(ns);
        if (r < 0) {
                /* Without a state file a restart would see a stray pin: undo now. */
                (void) registry_unpin(m->registry_fd, pins, ns->name);
                return log_error_errno(r, "Failed to save the state of '%s': %m", ns->name);
        }
        log_info("Created the mount namespace of '%s' (mnt:[%" PRIu64 "]).", ns->name, ns->mntns_id);
        return 0;
}

int namespace_stop(Namespace *ns) {
        Manager *m = ns->manager;
        _cleanup_free_ char *pins = pin_dir(m), *state = state_file_path(m, ns->name), *root = namespace_root(ns);
        int r;

        if (!pins || !state || !root)
                return -ENOMEM;

        r = registry_unpin(m->registry_fd, pins, ns->name);
        if (r < 0)
                return log_error_errno(r, "Failed to unpin the namespace of '%s': %m", ns->name);
        if (unlink(state) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove '%s', ignoring: %m", state);
        /* Only the empty mount point directory is left on the host; a non-empty one is not ours. */
        if (rmdir(root) < 0 && errno != ENOENT)
                log_debug_errno(errno, "Failed to remove '%s', ignoring: %m", root);

        log_info("Removed the mount namespace of '%s'.", ns->name);
        namespace_free(ns);
        return 0;
}

int namespace_save(Namespace *ns) {
        Manager *m = ns->manager;
        _cleanup_free_ char *path = state_file_path(m, ns->name), *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd;

        if (!path || asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                safe_close(fd);
                return -errno;
        }
        fprintf(f,
                "# This is private data. Do not parse.\n"
                "NAME=%s\nUID=%u\nGID=%u\nMNTNS_ID=%" PRIu64 "\nTIMESTAMP=%" PRIu64 "\nLINGER=%s\n",
                ns->name, (unsigned) ns->uid, (unsigned) ns->gid, ns->mntns_id, ns->timestamp, ns->linger ? "yes" : "no");
        fputs("SESSIONS=", f);
        for (Session *s = ns->sessions; s; s = s->next)
                fprintf(f, "%s%s:%d", s == ns->sessions ? "" : " ", s->id, (int) s->leader);
        fputc('\n', f);
        if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
                (void) unlink(tmp);
                return -errno;
        }
        if (rename(tmp, path) < 0) {
                int r = -errno;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

static int session_leader_exited(sd_event_source *s, int fd, uint32_t revents, void *userdata);

static int session_watch(Namespace *ns, Session *s) {
        if (s->leader <= 0)
                return 0;
        s->pidfd = (int) syscall(SYS_pidfd_open, s->leader, 0);
        if (s->pidfd < 0)
                return -errno;   /* -ESRCH: already gone */
        return sd_event_add_io(ns->manager->event, &s->pidfd_source, s->pidfd, EPOLLIN, session_leader_exited, ns);
}

static int namespace_stop_timer_fired(sd_event_source *s, uint64_t usec, void *userdata) {
        Namespace *ns = userdata;
        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
        if (ns->sessions || ns->linger)
                return 0;
        (void) namespace_dbus_send_removed(ns);
        return namespace_stop(ns);
}

/* After the last session: StopDelaySec, then gone — unless lingering or reopened meanwhile. */
static void namespace_maybe_schedule_stop(Namespace *ns) {
        Manager *m = ns->manager;
        uint64_t now;
        int r;

        if (ns->sessions || ns->linger || ns->stop_timer)
                return;
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        r = sd_event_add_time(m->event, &ns->stop_timer, CLOCK_MONOTONIC,
                              m->config.stop_delay_usec == UINT64_MAX ? UINT64_MAX : now + m->config.stop_delay_usec,
                              10 * USEC_PER_MSEC, namespace_stop_timer_fired, ns);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the stop timer of '%s', keeping it: %m", ns->name);
        (void) namespace_dbus_send_changed(ns);
}

static void namespace_cancel_stop(Namespace *ns) {
        if (!ns->stop_timer)
                return;
        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
}

Session *namespace_get_session(Namespace *ns, const char *id) {
        for (Session *s = ns->sessions; s; s = s->next)
                if (streq(s->id, id))
                        return s;
        return NULL;
}

int namespace_add_session(Namespace *ns, const char *id, pid_t leader) {
        Session *s;
        int r;

        namespace_cancel_stop(ns);
        if (namespace_get_session(ns, id))
                return 0;   /* the same login asking twice */
        s = calloc(1, sizeof(Session));
        if (!s)
                return -ENOMEM;
        *s = (Session) { .id = strdup(id), .leader = leader, .pidfd = -EBADF };
        if (!s->id) {
                session_free(s);
                return -ENOMEM;
        }
        r = session_watch(ns, s);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "Failed to watch the leader %d of session '%s', ignoring: %m", (int) leader, id);
        s->next = ns->sessions;
        ns->sessions = s;
        (void) namespace_save(ns);
        (void) namespace_dbus_send_changed(ns);
        return 0;
}

int namespace_remove_session(Namespace *ns, const char *id) {
        for (Session **p = &ns->sessions; *p; p = &(*p)->next)
                if (streq((*p)->id, id)) {
                        Session *s = *p;
                        *p = s->next;
                        session_free(s);
                        (void) namespace_save(ns);
                        (void) namespace_dbus_send_changed(ns);
                        namespace_maybe_schedule_stop(ns);
                        return 0;
                }
        return -ENOENT;
}

static int session_leader_exited(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Namespace *ns = userdata;
        for (Session *s = ns->sessions; s; s = s->next)
                if (s->pidfd_source == source) {
                        log_info("Login process %d of session '%s' of '%s' exited without closing it; closing it.",
                                 (int) s->leader, s->id, ns->name);
                        _cleanup_free_ char *id = strdup(s->id);
                        if (!id)
                                return -ENOMEM;
                        return namespace_remove_session(ns, id);
                }
        return 0;
}

int namespace_set_linger(Namespace *ns, bool b) {
        if (ns->linger == b)
                return 0;
        ns->linger = b;
        if (b)
                namespace_cancel_stop(ns);
        (void) namespace_save(ns);
        (void) namespace_dbus_send_changed(ns);
        if (!b)
                namespace_maybe_schedule_stop(ns);
        return 0;
}

static int read_state_file(const char *path, char **sessions, bool *linger, uint64_t *mntns_id, uint64_t *timestamp) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        size_t n = 0;

        if (!f)
                return -errno;
        while (getline(&line, &n, f) >= 0) {
                line[strcspn(line, "\n")] = 0;
                if (strncmp(line, "LINGER=", 7) == 0)
                        *linger = streq(line + 7, "yes");
                else if (strncmp(line, "MNTNS_ID=", 9) == 0)
                        *mntns_id = strtoull(line + 9, NULL, 10);
                else if (strncmp(line, "TIMESTAMP=", 10) == 0)
                        *timestamp = strtoull(line + 10, NULL, 10);
                else if (strncmp(line, "SESSIONS=", 9) == 0) {
                        free(*sessions);
                        *sessions = strdup(line + 9);
                        if (!*sessions)
                                return -ENOMEM;
                }
        }
        return 0;
}

int namespace_load(Manager *m, const char *name, int mntns_fd, Namespace **ret) {
        _cleanup_free_ char *path = state_file_path(m, name), *sessions = NULL;
        _cleanup_(user_record_done) UserRecord u = {};
        uint64_t id = 0, ts = 0;
        bool linger = false, had_sessions;
        Namespace *ns;
        int r;

        if (!path)
                return -ENOMEM;
        r = read_state_file(path, &sessions, &linger, &id, &ts);
        if (r < 0)
                return r;
        r = user_record_by_name(name, &u);
        if (r < 0)
                return r;
        r = namespace_new(m, &u, &ns);
        if (r < 0)
                return r;
        r = namespace_set_fd(ns, mntns_fd);
        if (r < 0) {
                namespace_free(ns);
                return r;
        }
        if (id != 0 && id != ns->mntns_id)
                log_warning("The pin of '%s' holds mnt:[%" PRIu64 "], the state file says %" PRIu64 "; using the pin.",
                            name, ns->mntns_id, id);
        ns->linger = linger;
        ns->timestamp = ts;

        /* Sessions whose login process is gone were closed while we were away. */
        had_sessions = sessions && *sessions;
        _cleanup_strv_free_ char **words = strv_split_whitespace(sessions ?: "");
        for (char **w = words; w && *w; w++) {
                char *colon = strrchr(*w, ':');
                if (!colon)
                        continue;
                *colon = 0;
                pid_t pid = (pid_t) atoi(colon + 1);
                Session *s = calloc(1, sizeof(Session));
                if (!s)
                        break;
                *s = (Session) { .id = strdup(*w), .leader = pid, .pidfd = -EBADF };
                if (!s->id || session_watch(ns, s) < 0) {
                        log_info("Session '%s' of '%s' ended while the daemon was not running.", *w, name);
                        session_free(s);
                        continue;
                }
                s->next = ns->sessions;
                ns->sessions = s;
        }
        (void) namespace_save(ns);
        if (had_sessions)
                namespace_maybe_schedule_stop(ns);
        *ret = ns;
        return 0;
}
