/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "builder.h"
#include "eject.h"
#include "bus-creds.h"
#include "bus-polkit.h"
#include "child.h"
#include "fd-store.h"
#include "host.h"
#include "log.h"
#include "login-filter.h"
#include "login-rule.h"
#include "manager.h"
#include "mount-events.h"
#include "namespace-build.h"
#include "namespace-session.h"
#include "namespace-state.h"
#include "namespace.h"
#include "op-queue.h"
#include "parse-util.h"
#include "path-util.h"
#include "private-bus.h"
#include "strv.h"
#include "text-escape.h"
#include "time-util.h"
#include "user-util.h"
#include "view-job.h"

/* How long start-up may wait for the builder (opening the registry, listing the pins). */
#define STARTUP_TIMEOUT_USEC (30 * USEC_PER_SEC)

int manager_new(Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        int r;

        if (!m)
                return -ENOMEM;
        manager_config_init(&m->config);
        m->rate_limits = id_map_new();
        if (!m->rate_limits || !m->config.subtree_root || !m->config.state_directory)
                return -ENOMEM;
        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        r = namespace_set_init(&m->namespaces, m->event, &m->config, &m->state);
        if (r < 0)
                return r;
        m->children = child_set_new(m->event);
        m->namespaces.children = m->children;
        m->host_ops = op_queue_new(m->event);
        if (!m->children || !m->host_ops)
                return -ENOMEM;
        r = user_lookups_new(m->children, &m->user_lookups);
        if (r < 0)
                return r;
        r = group_lookups_new(m->children, &m->group_lookups);
        if (r < 0)
                return r;
        m->namespaces.group_lookups = m->group_lookups;
        r = view_jobs_new(m->event, m->children, m->host_ops, &m->config, &m->jobs);
        if (r < 0)
                return r;
        r = ejector_new(&m->namespaces, m->children, m->host_ops, &m->ejector);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

static void rate_limits_free(IdMap *h);

/* What waits for work at exit is told so. */
/* The builder is the Manager's; the namespaces use it too. */
static void manager_set_builder(Manager *m, Builder *b) {
        m->builder = b;
        m->namespaces.builder = b;
}

Manager *manager_free(Manager *m) {
        _cleanup_(nsm_error_done) NsmError why = {};

        if (!m)
                return NULL;
        /* Work in flight first, while what waits for it still exists: each answers -ESHUTDOWN
         * (a call gets an error reply, a build gives up). Then the objects: the namespaces
         * stay pinned for the next start. */
        view_jobs_shutdown(m->jobs);
        mount_events_shutdown(m->mount_events);
        m->children = child_set_free(m->children);
        m->user_lookups = user_lookups_free(m->user_lookups);
        m->group_lookups = m->namespaces.group_lookups = group_lookups_free(m->group_lookups);
        manager_set_builder(m, builder_free(m->builder));
        m->mount_events = mount_events_free(m->mount_events);
        namespace_set_done(&m->namespaces);
        (void) nsm_error_set_shutting_down(&why);
        op_queue_free_with(m->host_ops, &why);
        if (m->bus_done)
                m->bus_done(m);
        m->private_server = private_server_free(m->private_server);
        m->stored_fds = stored_fds_release(m->stored_fds, /* unstore= */ false);
        m->jobs = view_jobs_free(m->jobs);
        m->ejector = ejector_free(m->ejector);
        rate_limits_free(m->rate_limits);
        polkit_registry_free(m->polkit_registry);
        m->creds = bus_creds_free(m->creds);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        strv_free(m->shared_at_runtime);
        manager_config_done(&m->config);
        host_changes_done(&m->startup_changes);
        state_dir_done(&m->state);
        free(m->config_file);
        free(m);
        return NULL;
}

uint64_t manager_deadline(Manager *m) {
        return namespace_set_deadline(&m->namespaces);
}

/* ---- configuration ---- */

/* What pam_nsmanager needs without a bus call (login-filter.h): the users we would refuse, and
 * LoginWithoutView= compiled. Logged where it fails. */
static void manager_publish_login_filter(Manager *m) {
        _cleanup_(login_filter_done) LoginFilter f = {};

        if (login_rule_compile(&m->config, &f) < 0) {
                log_oom();
                return;
        }
        (void) login_rule_publish(&f);
}

/* Every file, checked whole: on failure 'error' is Failed, saying 'what' failed and listing
 * the errors ("FILE:LINE: reason; …"). */
static int config_read(Manager *m, ManagerConfig *ret, const char *what, NsmError *error) {
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_free_ char *list = NULL;
        ManagerConfig c;
        int r;

        manager_config_init(&c);
        if (!c.subtree_root || !c.state_directory) {
                manager_config_done(&c);
                return nsm_error_setf(error, NSM_ERROR_FAILED, "%s: %s", what, strerror(ENOMEM));
        }
        r = manager_config_load(m->config_file, &c, &errors);
        if (r < 0) {
                manager_config_done(&c);
                list = errors ? config_errors_join(errors, 10) : NULL;
                (void) nsm_error_setf(error, NSM_ERROR_FAILED, "%s: %s", what, list ?: strerror(-r));
                return r;
        }
        *ret = c;
        return 0;
}

/* Shares the paths of 'paths' (SharedSubtrees=) that 'have' does not hold yet on the host. One
 * that cannot be prepared (a user's symlink or directory there, a directory others can write
 * it is in, a FUSE mount on the way) never stops the daemon: it is taken out of 'paths' (views
 * do not try to join it) with a warning, and tried again at the next ReloadConfig or start.
 * The binds are recorded (--release); with 'changes', also kept there (undone if the start
 * fails). */
static void manager_share_configured(char ***paths, char *const *have, HostChanges *changes) {
        char **l = *paths;
        size_t k = 0;

        for (size_t i = 0; l && l[i]; i++) {
                _cleanup_(nsm_error_done) NsmError why = {};
                HostChanges mine = {};
                int r;

                if (strv_contains((const char *const *) have, l[i])) {
                        l[k++] = l[i];
                        continue;
                }
                r = host_share_path(l[i], /* only_root= */ true, &mine, &why);
                if (r < 0) {
                        log_warning("SharedSubtrees=%s: %s Not shared for now; tried again at the next ReloadConfig or "
                                    "start.", l[i], nsm_error_message(&why) ?: strerror(-r));
                        free(l[i]);
                        continue;
                }
                if (host_mounts_record(&mine, NULL) < 0)
                        log_warning("Failed to record the bind of '%s' in %s, ignoring (nsmanagerd --release leaves it).",
                                    l[i], NSM_HOST_MOUNTS_FILE);
                for (size_t j = 0; changes && j < mine.n; j++)
                        if (host_changes_take(changes, &mine.items[j]) < 0)
                                log_oom();
                host_changes_done(&mine);
                l[k++] = l[i];
        }
        if (l)
                l[k] = NULL;
}

int manager_load_config(Manager *m, NsmError *error) {
        ManagerConfig c;
        int r;

        r = config_read(m, &c, "Failed to load the configuration, not starting", error);
        if (r < 0)
                return r;
        manager_config_done(&m->config);
        m->config = c;
        return 0;
}

int manager_reload(Manager *m, NsmError *error) {
        static const char what[] = "Configuration not reloaded, the old one stays";
        _cleanup_free_ char *later = NULL;
        ManagerConfig c;
        int r;

        r = config_read(m, &c, what, error);
        if (r < 0)
                return r;
        /* Where the views and pins live cannot move under running namespaces. */
        r = manager_config_start_only_changes(&m->config, &c, &later);
        if (r < 0) {
                manager_config_done(&c);
                return nsm_error_setf(error, NSM_ERROR_FAILED, "%s: %s", what, strerror(-r));
        }
        if (later)
                log_warning("Changed, and taking effect at the next start only: %s.", later);
        free(c.subtree_root);
        free(c.state_directory);
        c.subtree_root = TAKE_PTR(m->config.subtree_root);
        c.state_directory = TAKE_PTR(m->config.state_directory);

        /* New shared subtrees are prepared on the host now (and those that could not be
         * before: retried); subtrees shared at run time stay. */
        manager_share_configured(&c.shared_subtrees, m->config.shared_subtrees, NULL);
        for (char **p = m->config.shared_subtrees; p && *p; p++) {
                if (strv_contains((const char *const *) c.shared_subtrees, *p))
                        continue;
                if (strv_contains((const char *const *) m->shared_at_runtime, *p)) {
                        if (strv_extend(&c.shared_subtrees, *p) < 0) {
                                manager_config_done(&c);
                                return nsm_error_setf(error, NSM_ERROR_FAILED, "%s: %s", what, strerror(ENOMEM));
                        }
                        continue;
                }
                /* Taken out of the configuration. Unsharing it on the host now would cut the
                 * views that are its peers off in the middle of their sessions: new views no
                 * longer join it, the others stay peers until they end. */
                log_warning("SharedSubtrees= no longer lists '%s': views created from now on receive it one way "
                            "only, existing views stay its peers until they end, and the host's '%s' stays a shared "
                            "mount until it is unmounted (nsmanagerd --release does, once the daemon is stopped).",
                            *p, *p);
        }
        manager_config_done(&m->config);
        m->config = c;
        manager_publish_login_filter(m);
        if (m->mount_events)
                mount_events_config_changed(m->mount_events);
        log_info("Configuration reloaded; it applies to namespaces created from now on.");
        return 0;
}

/* ---- subtrees shared at run time ---- */

int manager_save_shared(Manager *m) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        for (char **p = m->shared_at_runtime; p && *p; p++) {
                _cleanup_free_ char *e = text_escape_word(*p);
                if (e)
                        fprintf(f, "%s\n", e);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        return state_dir_write_file(&m->state, m->state.shared_subtrees, buf, size);
}

/* Subtrees shared at run time are kept across restarts, on top of the configured ones. A path
 * that can no longer be shared is dropped with a warning: it must not keep the daemon from
 * starting. */
static void manager_load_shared(Manager *m, char *const *configured) {
        _cleanup_fclose_ FILE *f = fopen(m->state.shared_subtrees, "re");
        _cleanup_free_ char *line = NULL;
        bool dropped = false;
        size_t n = 0;

        if (!f) {
                if (errno != ENOENT)
                        log_warning_errno(errno, "Failed to read '%s', ignoring: %m", m->state.shared_subtrees);
                return;
        }
        while (getline(&line, &n, f) >= 0) {
                _cleanup_(nsm_error_done) NsmError why = {};
                _cleanup_free_ char *path = NULL;
                int r;

                line[strcspn(line, "\n")] = 0;
                /* A configured path is the configuration's (and its checks'), also where it
                 * was left out now. */
                if (text_unescape(line, &path) < 0 || !path_is_absolute_normalized(path) || streq(path, "/") ||
                    strv_contains((const char *const *) m->shared_at_runtime, path))
                        continue;
                if (strv_extend(&m->shared_at_runtime, path) < 0)
                        return;
                if (strv_contains((const char *const *) m->config.shared_subtrees, path) ||
                    strv_contains((const char *const *) configured, path))
                        continue;
                r = host_share_path(path, /* only_root= */ false, &m->startup_changes, &why);
                if (r == -EAGAIN)
                        /* Covered by a user's mount for now: kept, tried again at the next start. */
                        log_warning("%s", nsm_error_message(&why) ?: strerror(EAGAIN));
                else if (r < 0) {
                        log_warning("%s Dropping '%s' from the subtrees shared at run time.",
                                    nsm_error_message(&why) ?: strerror(-r), path);
                        (void) strv_remove(m->shared_at_runtime, path);
                        dropped = true;
                        continue;
                }
                if (strv_extend(&m->config.shared_subtrees, path) < 0)
                        return;
        }
        if (dropped)
                (void) manager_save_shared(m);
}

/* ---- start-up: what a previous instance left ---- */

static void on_stray_unpinned(BuilderReply *reply, void *userdata) {
        if (reply->error)
                log_warning("%s Ignoring.", nsm_error_message(reply->error));
}

static int load_pin(Manager *m, const char *name, int fd) {
        _cleanup_free_ char *state = state_dir_namespace_file(&m->state, name);
        Namespace *ns;
        int r;

        if (!state) {
                safe_close(fd);
                return -ENOMEM;
        }
        if (fd < 0 || access(state, F_OK) < 0) {
                /* A pin without a state file, or a pin file without a namespace: the previous
                 * instance died half-way through creating it. Nobody has it: clean up. */
                log_info("Cleaning up the half-created namespace of '%s'.", name);
                safe_close(fd);
                (void) unlink(state);
                return builder_unpin(m->builder, name, manager_deadline(m), on_stray_unpinned, NULL);
        }
        r = namespace_load(&m->namespaces, m->stored_fds, name, fd, &ns);
        if (r < 0) {
                safe_close(fd);
                log_warning_errno(r, "Failed to restore the namespace of '%s', removing it: %m", name);
                (void) unlink(state);
                return 0;
        }
        log_info("Restored the mount namespace of '%s' (mnt:[%" PRIu64 "]).", name, ns->mntns_inode);
        return 0;
}

static void remove_strays(Manager *m) {
        struct dirent *de;
        DIR *d;

        /* State files without a pin: their namespace is gone (the registry was lost). */
        d = opendir(m->state.namespaces);
        if (d) {
                while ((de = readdir(d)))
                        if (filename_is_valid(de->d_name) && !manager_get_namespace(m, de->d_name)) {
                                log_info("Removing the stale state file '%s'.", de->d_name);
                                (void) unlinkat(dirfd(d), de->d_name, 0);
                        }
                closedir(d);
        }
        /* Empty mount point directories under SubtreeRoot of namespaces that no longer exist. */
        d = opendir(m->config.subtree_root);
        if (d) {
                while ((de = readdir(d)))
                        if (filename_is_valid(de->d_name) && !manager_get_namespace(m, de->d_name))
                                (void) unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
                closedir(d);
        }
}

/* Logs its own failure: the builder's message says more than an errno. */
static void on_restored_count_read(BuilderReply *reply, void *userdata) {
        Namespace *ns = userdata;
        uint32_t n = 0;

        if (!reply->error) {
                for (size_t i = 0; i < reply->size; i++)
                        n += reply->data[i] == '\n';
                ns->n_mounts = n;
        }
        namespace_unref(ns);
}

/* NMounts of a restored namespace: where listmount(2) cannot count it (Linux 6.18 finds only
 * namespaces a process is in, and nobody may be logged in), the count is the last table read,
 * and a new daemon has read none. One read each, from the builder, in the background. */
static void manager_count_restored(Manager *m) {
        Namespace *ns;
        size_t n;

        for (HashmapIterator i = {}; hashmap_iterate(m->namespaces.by_name, &i, (void **) &ns, NULL);) {
                if (mntns_count_mounts(ns->mntns_id, &n) >= 0) {
                        ns->n_mounts = (uint32_t) n;
                        continue;
                }
                if (builder_read_mounts(m->builder, ns->mntns_fd, false, manager_deadline(m), on_restored_count_read,
                                        namespace_ref(ns)) < 0)
                        namespace_unref(ns);
        }
}

static int manager_restore_namespaces(Manager *m) {
        BuilderSync s = { .fd = -EBADF };
        int r;

        r = builder_list(m->builder, now_usec(CLOCK_MONOTONIC) + STARTUP_TIMEOUT_USEC, builder_sync_done, &s);
        if (r >= 0)
                r = builder_sync_wait(m->event, &s);
        if (r < 0) {
                if (nsm_error_is_set(&s.error))
                        log_error("Failed to restore the namespaces pinned under '%s': %s", m->state.root,
                                  nsm_error_message(&s.error));
                else
                        log_error_errno(r, "Failed to restore the namespaces pinned under '%s': %m", m->state.root);
                builder_sync_done_free(&s);
                return r;
        }
        for (size_t i = 0; i < s.n_items; i++) {
                r = load_pin(m, s.items[i].name, TAKE_FD(s.items[i].fd));
                if (r < 0) {
                        log_error_errno(r, "Failed to restore the namespace of '%s': %m", s.items[i].name);
                        break;
                }
        }
        builder_sync_done_free(&s);
        remove_strays(m);
        if (r >= 0)
                manager_count_restored(m);
        return r;
}

static void on_pending_join_done(const NsmError *error, const ViewOpResult *res, void *userdata) {
        char *what = userdata;
        if (error)
                log_warning("Retrying %s failed, ignoring (it is retried at the next start): %s", what,
                            nsm_error_message(error));
        free(what);
}

/* Views that ShareSubtree("", P) did not reach before (timed out, or the daemon died). What
 * cannot be retried now stays pending: the next start retries it. */
static void manager_retry_pending_joins(Manager *m) {
        Namespace *ns;
        int r;

        for (HashmapIterator i = {}; hashmap_iterate(m->namespaces.by_name, &i, (void **) &ns, NULL);)
                for (char **p = ns->pending_joins; p && *p; p++) {
                        ViewOp op = { .type = VIEW_OP_JOIN, .path = *p, .join = JOIN_PEER };
                        char *what = NULL;

                        if (asprintf(&what, "joining '%s' in the view of '%s'", *p, ns->name) < 0) {
                                log_oom();
                                return;
                        }
                        r = view_job_queue(m->jobs, ns, &op, NULL, 0, manager_deadline(m), on_pending_join_done, what);
                        if (r < 0) {
                                log_warning_errno(r, "Failed to retry %s, ignoring (it is retried at the next "
                                                  "start): %m", what);
                                free(what);
                        }
                }
}

/* Undoes what this start changed on the host, newest first: the registry if this start created
 * it (no namespace is in it then), and the binds, propagation changes and directories it made.
 * What a previous instance or an administrator made stays. */
void manager_undo_startup(Manager *m) {
        manager_set_builder(m, builder_free(m->builder));
        if (m->registry_created && m->state.registry && path_is_mount_point(AT_FDCWD, m->state.registry) > 0) {
                if (umount2(m->state.registry, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        log_warning_errno(errno, "Failed to unpin the registry '%s' again: %m", m->state.registry);
                else
                        (void) unlink(m->state.registry);
        }
        m->registry_created = false;
        if (m->startup_changes.n > 0)
                log_info("Start-up failed: undoing what it changed on the host.");
        host_changes_undo(&m->startup_changes);
}

/* Directories the state directory's layout needs, recorded where this start creates them. */
static int manager_create_state_dir(Manager *m) {
        const char *dirs[] = { m->state.root, m->state.namespaces };
        bool existed[ELEMENTSOF(dirs)];
        int r;

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                existed[i] = access(dirs[i], F_OK) >= 0;
        r = state_dir_create(&m->state);
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (!existed[i] && access(dirs[i], F_OK) >= 0 && host_changes_add_mkdir(&m->startup_changes, dirs[i]) < 0)
                        return -ENOMEM;
        return r;
}

int manager_startup(Manager *m) {
        _cleanup_strv_free_ char **configured = NULL;
        _cleanup_(nsm_error_done) NsmError why = {};
        int r;

        /* First: sd_listen_fds() wants the fds it finds untouched. */
        r = stored_fds_receive(&m->stored_fds);
        if (r < 0)
                return log_oom();
        r = state_dir_init(&m->state, m->config.state_directory);
        if (r < 0)
                return log_oom();
        r = manager_create_state_dir(m);
        if (r < 0) {
                log_error_errno(r, "Failed to create StateDirectory '%s': %m", m->state.root);
                goto fail;
        }
        r = host_prepare_reserved(m->config.subtree_root, m->state.root, &m->startup_changes, &why);
        if (r < 0) {
                log_error_errno(r, "%s", nsm_error_message(&why) ?: "Failed to prepare the host: %m");
                goto fail;
        }
        for (char **p = m->config.shared_subtrees; p && *p; p++)
                if (strv_extend(&configured, *p) < 0) {
                        r = log_oom();
                        goto fail;
                }
        manager_share_configured(&m->config.shared_subtrees, NULL, &m->startup_changes);
        manager_load_shared(m, configured);

        /* Before any namespace is loaded: the builder's fork copies a small fd table. */
        m->registry_created = path_is_mount_point(AT_FDCWD, m->state.registry) <= 0;
        Builder *b = NULL;
        r = builder_new(m->event, m->children, m->state.registry, m->state.pins, &b);
        manager_set_builder(m, b);
        if (r < 0) {
                log_error_errno(r, "Failed to start the view builder: %m");
                goto fail;
        }
        r = manager_restore_namespaces(m);
        if (r < 0)
                goto fail;
        /* For pam_nsmanager, before the name is taken: whoever sees the name finds the filter
         * too. */
        manager_publish_login_filter(m);
        return 0;

fail:
        manager_undo_startup(m);
        return r;
}

int manager_serve(Manager *m) {
        _cleanup_(nsm_error_done) NsmError why = {};
        char *reserved[] = { m->config.subtree_root, m->state.root, NULL };
        int r;

        /* The last change, once the name is ours (manager_bus_serve()): nothing can fail after it, so it never needs
         * undoing (and calls are not dispatched before the loop runs). */
        r = host_share_root(reserved, m->state.registry, &why);
        if (r < 0)
                return log_error_errno(r, "%s", nsm_error_message(&why) ?: "Failed to make '/' shared: %m");
        if (host_mounts_record(&m->startup_changes, m->state.registry) < 0)
                log_warning("Failed to record the host's mounts in %s, ignoring (nsmanagerd --release leaves them).",
                            NSM_HOST_MOUNTS_FILE);
        host_changes_done(&m->startup_changes);
        m->registry_created = false;
        /* What systemd kept for sessions no record names: dropped only now that we serve (a
         * start that failed leaves the store as it found it). */
        m->stored_fds = stored_fds_release(m->stored_fds, /* unstore= */ true);
        manager_retry_pending_joins(m);
        /* Without them the daemon works on: no signals for subscribers, no ReleaseWithHost=. */
        r = mount_events_new(&m->namespaces, m->children, m->ejector, m->mount_events_bus, m, &m->mount_events);
        if (r < 0)
                log_warning_errno(r, "Failed to set up mount events, going on without them: %m");
        return 0;
}

void manager_shutdown(Manager *m) {
        /* With no namespace left, nothing needs the registry: leave no mount behind. With
         * namespaces, it stays pinned so the next start finds them. */
        if (hashmap_size(m->namespaces.by_name) > 0 || !m->state.registry)
                return;
        manager_set_builder(m, builder_free(m->builder));
        if (umount2(m->state.registry, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
                if (errno != EINVAL && errno != ENOENT)
                        log_warning_errno(errno, "Failed to unpin the registry '%s', ignoring: %m", m->state.registry);
        } else
                (void) unlink(m->state.registry);
}

/* ---- namespaces ---- */

Namespace *manager_get_namespace(Manager *m, const char *user) {
        return namespace_set_get(&m->namespaces, user);
}

char *manager_canonical_user(Manager *m, const char *user) {
        _cleanup_(user_record_done) UserRecord u = {};
        Namespace *ns = manager_get_namespace(m, user);
        uid_t uid;

        if (!ns && parse_uid(user, &uid) >= 0)
                ns = manager_get_namespace_by_uid(m, uid);
        if (ns)
                return strdup(ns->name);
        if (user_lookup_cached(m->user_lookups, user, &u) > 0)
                return TAKE_PTR(u.name);
        return NULL;
}

int manager_open_session(Manager *m, Namespace *ns, const char *id, pid_t leader, int *ret_fd) {
        int r;

        r = namespace_add_session(ns, id, leader, ret_fd);
        if (r < 0)
                return r;
        log_info("Session '%s' of '%s' opened (leader %d).", id, ns->name, (int) leader);
        return 0;
}

int manager_close_session(Manager *m, Namespace *ns, const char *id, NsmError *error) {
        int r;

        r = namespace_remove_session(ns, id, error);
        if (r < 0)
                return r;
        log_info("Session '%s' of '%s' closed.", id, ns->name);
        return 0;
}

Namespace *manager_get_namespace_by_uid(Manager *m, uid_t uid) {
        return namespace_set_get_by_uid(&m->namespaces, uid);
}

int manager_check_user(Manager *m, const UserRecord *u, NsmError *error) {
        char number[32];

        if (u->uid == 0)
                return nsm_error_setf(error, NSM_ERROR_USER_EXCLUDED,
                                      "'%s' is root; root always stays in the host namespace.", u->name);
        if (u->uid < m->config.min_uid)
                return nsm_error_setf(error, NSM_ERROR_USER_EXCLUDED, "'%s' (uid %u) is a system user: MinUID=%u.",
                                      u->name, (unsigned) u->uid, (unsigned) m->config.min_uid);
        /* By the canonical name or the uid, never by a spelling a caller chose. */
        snprintf(number, sizeof number, "%u", (unsigned) u->uid);
        if (strv_contains((const char *const *) m->config.exclude_users, u->name) ||
            strv_contains((const char *const *) m->config.exclude_users, number))
                return nsm_error_setf(error, NSM_ERROR_USER_EXCLUDED, "'%s' is listed in ExcludeUsers=.", u->name);
        return 0;
}

int manager_acquire_namespace(Manager *m, const UserRecord *u, uint64_t deadline,
                              void (*callback)(Namespace *ns, const NsmError *error, void *userdata), void *userdata,
                              NsmError *error) {
        Namespace *ns;
        int r;

        /* Ready: no check on the way (logins of a user whose namespace exists). A user removed
         * from NSS or excluded since keeps what exists until it is removed. By uid: a user is
         * her uid, however her name was spelt. */
        ns = manager_get_namespace_by_uid(m, u->uid);
        if (ns)
                return namespace_wait_ready(ns, callback, userdata);

        r = manager_check_user(m, u, error);
        if (r < 0)
                return r;
        r = namespace_new(&m->namespaces, u, &ns);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to set up the namespace of '%s': %m", u->name);
        r = namespace_wait_ready(ns, callback, userdata);
        if (r < 0) {
                namespace_drop(ns);
                return nsm_error_set_errnof(error, r, "Failed to wait for the namespace of '%s': %m", u->name);
        }
        r = namespace_build(ns, m->jobs, deadline);
        if (r < 0) {
                /* 'callback' waits for it already: it hears why. */
                _cleanup_(nsm_error_done) NsmError why = {};
                (void) nsm_error_set_errnof(&why, r, "Failed to start building the namespace of '%s': %m", u->name);
                namespace_drop_with(ns, &why);
        }
        return 0;
}

/* ---- rate limits ---- */

typedef struct RateLimit {
        uint64_t begin;
        unsigned count;
} RateLimit;

static void rate_limits_free(IdMap *h) {
        RateLimit *rl;
        for (size_t i = 0; id_map_iterate(h, &i, NULL, (void **) &rl);)
                free(rl);
        id_map_free(h);
}

int manager_rate_limit(Manager *m, uid_t uid, NsmError *error) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        RateLimit *rl;
        int r;

        if (uid == 0 || m->config.rate_limit_burst == 0)
                return 0;   /* RateLimitBurst=0: no rate limit, as in systemd's settings */
        rl = id_map_get(m->rate_limits, uid_key(uid));
        if (!rl) {
                /* One entry per uid that called: bounded by the users of the machine. */
                rl = calloc(1, sizeof(RateLimit));
                if (!rl)
                        return -ENOMEM;
                r = id_map_put(m->rate_limits, uid_key(uid), rl);
                if (r < 0) {
                        free(rl);
                        return r;
                }
        }
        if (now - rl->begin >= m->config.rate_limit_interval_usec) {
                rl->begin = now;
                rl->count = 0;
        }
        if (rl->count >= m->config.rate_limit_burst)
                return nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "uid %" PRIu32 " made %u calls within "
                                      "RateLimitIntervalSec=%" PRIu64 "s (RateLimitBurst=%u); try again in %" PRIu64 "s.",
                                      (uint32_t) uid, rl->count, (uint64_t) (m->config.rate_limit_interval_usec / USEC_PER_SEC),
                                      m->config.rate_limit_burst,
                                      (uint64_t) ((rl->begin + m->config.rate_limit_interval_usec - now + USEC_PER_SEC - 1) /
                                                  USEC_PER_SEC));
        rl->count++;
        return 0;
}

/* ---- ShareSubtree("", P) ---- */

typedef struct ShareContext {
        Manager *manager;
        char *path;
        bool added;              /* a new runtime shared subtree: forgotten again if the host refuses it */
        unsigned pending;        /* views still joining */
        char **timed_out;
        ShareDoneFunc done;
        void *userdata;
        uint64_t deadline;
} ShareContext;

typedef struct ShareView {
        ShareContext *share;
        char *name;
} ShareView;

static void share_context_free(ShareContext *c) {
        free(c->path);
        strv_free(c->timed_out);
        free(c);
}

static void share_maybe_finish(ShareContext *c) {
        _cleanup_(nsm_error_done) NsmError e = {};
        _cleanup_free_ char *list = NULL;

        if (c->pending > 0)
                return;
        if (!c->timed_out) {
                c->done(NULL, NULL, c->userdata);
                share_context_free(c);
                return;
        }
        list = strv_join(c->timed_out, ", ");
        (void) nsm_error_setf(&e, NSM_ERROR_TIMED_OUT, "'%s' is shared on the host and in every view but those of %s, "
                              "which did not answer in time (a file system that hangs?); they join at the next start "
                              "of nsmanagerd.", c->path, list ?: "");
        c->done(&e, c->timed_out, c->userdata);
        share_context_free(c);
}

static void on_view_joined(const NsmError *error, const ViewOpResult *res, void *userdata) {
        ShareView *v = userdata;
        ShareContext *c = v->share;

        if (error && error->code == NSM_ERROR_TIMED_OUT) {
                if (strv_extend(&c->timed_out, v->name) < 0)
                        log_oom();
        } else if (error)
                /* E.g. a PrivateTmp= /tmp: not the host's filesystem, it cannot follow. */
                log_warning("Failed to share '%s' into the view of '%s', ignoring: %s", c->path, v->name,
                            nsm_error_message(error));
        c->pending--;
        free(v->name);
        free(v);
        share_maybe_finish(c);
}

static int share_into_views(ShareContext *c) {
        Manager *m = c->manager;
        Namespace *ns;

        for (HashmapIterator i = {}; hashmap_iterate(m->namespaces.by_name, &i, (void **) &ns, NULL);) {
                /* A view whose user chose this path's propagation (EnslaveSubtree, SetPropagation,
                 * recursively from above) keeps it: sharing again must not undo that. */
                if (namespace_has_choice(ns, c->path) || !ns->ready)
                        continue;
                ShareView *v = calloc(1, sizeof(ShareView));
                if (!v || !(v->name = strdup(ns->name))) {
                        free(v);
                        return -ENOMEM;
                }
                v->share = c;
                ViewOp op = { .type = VIEW_OP_JOIN, .path = c->path, .join = JOIN_PEER };
                int r = view_job_queue(m->jobs, ns, &op, NULL, 0, c->deadline, on_view_joined, v);
                if (r < 0) {
                        free(v->name);
                        free(v);
                        return r;
                }
                c->pending++;
        }
        return 0;
}

static void on_host_shared(const NsmError *error, const ViewOpResult *res, void *userdata) {
        ShareContext *c = userdata;
        Manager *m = c->manager;
        Namespace *ns;
        int r;

        if (!error && res && (res->mounted.unique != 0 || res->mounted.old != 0) &&
            host_mounts_record_bind(c->path, res->mounted) < 0)
                log_warning("Failed to record the bind of '%s' in %s, ignoring (nsmanagerd --release leaves it).",
                            c->path, NSM_HOST_MOUNTS_FILE);

        if (error) {
                /* Nothing half-applied: the views never heard of it, and it is no longer saved. */
                if (c->added) {
                        (void) strv_remove(m->config.shared_subtrees, c->path);
                        (void) strv_remove(m->shared_at_runtime, c->path);
                        (void) manager_save_shared(m);
                }
                for (HashmapIterator i = {}; hashmap_iterate(m->namespaces.by_name, &i, (void **) &ns, NULL);)
                        if (strv_contains((const char *const *) ns->pending_joins, c->path)) {
                                (void) namespace_set_pending_join(ns, c->path, false);
                                (void) namespace_save(ns);
                        }
                c->done(error, NULL, c->userdata);
                share_context_free(c);
                return;
        }
        r = share_into_views(c);
        if (r < 0)
                log_warning_errno(r, "Failed to share '%s' into every view, ignoring (they join at the next start): %m",
                                  c->path);
        share_maybe_finish(c);
}

int manager_share_subtree(Manager *m, const char *path, uint64_t deadline, ShareDoneFunc done, void *userdata) {
        ShareContext *c;
        Namespace *ns;
        int r;

        c = calloc(1, sizeof(ShareContext));
        if (!c)
                return -ENOMEM;
        *c = (ShareContext) { .manager = m, .path = strdup(path), .done = done, .userdata = userdata,
                              .deadline = deadline };
        if (!c->path) {
                share_context_free(c);
                return -ENOMEM;
        }

        /* Saved before anything changes: a daemon killed half-way finds at its next start what
         * is left to do — the host's share (done again, it is idempotent) and the views that
         * had not joined yet. */
        if (!strv_contains((const char *const *) m->config.shared_subtrees, path)) {
                r = strv_extend(&m->config.shared_subtrees, path);
                if (r >= 0)
                        r = strv_extend(&m->shared_at_runtime, path);
                if (r >= 0) {
                        c->added = true;
                        r = manager_save_shared(m);
                }
                if (r < 0) {
                        share_context_free(c);
                        return r;
                }
        }
        for (HashmapIterator i = {}; hashmap_iterate(m->namespaces.by_name, &i, (void **) &ns, NULL);)
                if (ns->ready && !namespace_has_choice(ns, path) &&
                    namespace_set_pending_join(ns, path, true) >= 0)
                        (void) namespace_save(ns);

        ViewOp op = { .type = VIEW_OP_HOST_SHARE, .path = path };
        r = view_job_queue(m->jobs, NULL, &op, NULL, 0, deadline, on_host_shared, c);
        if (r < 0) {
                share_context_free(c);
                return r;
        }
        return 0;
}
