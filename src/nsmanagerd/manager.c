/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "bus-errors.h"
#include "bus-polkit.h"
#include "login-filter.h"
#include "log.h"
#include "manager.h"
#include "namespace-dbus.h"
#include "namespace.h"
#include "path-util.h"
#include "user-util.h"
#include "view.h"
#include "strv.h"

int manager_new(Manager **ret) {
        Manager *m = calloc(1, sizeof(Manager));
        int r;

        if (!m)
                return -ENOMEM;
        m->registry_fd = -EBADF;
        m->pin_cpu = sched_getcpu();
        manager_config_init(&m->config);
        m->namespaces = hashmap_new();
        m->namespaces_by_uid = hashmap_new();
        if (!m->namespaces || !m->namespaces_by_uid || !m->config.subtree_root) {
                manager_free(m);
                return -ENOMEM;
        }
        r = sd_event_default(&m->event);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        Namespace *ns;

        if (!m)
                return NULL;
        /* Objects only: the namespaces stay pinned for the next start. */
        while (hashmap_size(m->namespaces) > 0) {
                size_t i = 0;
                if (!hashmap_iterate(m->namespaces, &i, (void **) &ns, NULL))
                        break;
                namespace_free(ns);
        }
        hashmap_free(m->namespaces);
        hashmap_free(m->namespaces_by_uid);
        polkit_registry_free(m->polkit_registry);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        safe_close(m->registry_fd);
        manager_config_done(&m->config);
        free(m->config_file);
        free(m);
        return NULL;
}

int manager_load_config(Manager *m) {
        _cleanup_free_ char *error = NULL;
        ManagerConfig c;
        int r;

        manager_config_init(&c);
        r = manager_config_load(m->config_file, &c, &error);
        if (r < 0) {
                manager_config_done(&c);
                if (error)
                        log_error("%s", error);
                return log_error_errno(r, "Failed to load the configuration: %m");
        }
        manager_config_done(&m->config);
        m->config = c;
        return 0;
}

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* ---- start-up: find what a previous instance left ---- */

typedef struct LoadContext {
        Manager *manager;
        char *pins_dir;
} LoadContext;

static int load_pin(const char *name, int fd, void *userdata) {
        LoadContext *c = userdata;
        Manager *m = c->manager;
        _cleanup_free_ char *state = NULL;
        Namespace *ns;
        int r;

        if (asprintf(&state, "%s/namespaces/%s", m->config.state_directory, name) < 0) {
                safe_close(fd);
                return -ENOMEM;
        }
        if (fd < 0 || access(state, F_OK) < 0) {
                /* A pin without a state file, or a pin file without a namespace: the previous
                 * instance died half-way through creating it. Nothing uses it yet: clean up. */
                log_info("Cleaning up the half-created namespace of '%s'.", name);
                safe_close(fd);
                (void) unlink(state);
                return registry_unpin(m->registry_fd, c->pins_dir, name);
        }
        r = namespace_load(m, name, fd, &ns);
        if (r < 0) {
                safe_close(fd);
                log_warning_errno(r, "Failed to restore the namespace of '%s', removing it: %m", name);
                (void) unlink(state);
                return registry_unpin(m->registry_fd, c->pins_dir, name);
        }
        log_info("Restored the mount namespace of '%s' (mnt:[%" PRIu64 "]).", name, ns->mntns_id);
        return 0;
}

static void remove_strays(Manager *m) {
        _cleanup_free_ char *dir = NULL;
        DIR *d;
        struct dirent *de;

        /* State files without a pin: their namespace is gone (the registry was lost). */
        if (asprintf(&dir, "%s/namespaces", m->config.state_directory) < 0)
                return;
        d = opendir(dir);
        if (d) {
                while ((de = readdir(d)))
                        if (filename_is_valid(de->d_name) && !manager_get_namespace(m, de->d_name)) {
                                log_info("Removing the stale state file of '%s'.", de->d_name);
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

/* What pam_nsmanager needs to skip users we would refuse, without a bus call (login-filter.h). */
static void manager_publish_login_filter(Manager *m) {
        int r = login_filter_write(NSM_LOGIN_FILTER_FILE, m->config.min_uid, m->config.exclude_users);
        if (r < 0)
                log_warning_errno(r, "Failed to publish %s for pam_nsmanager, ignoring (logins of users we refuse ask over the bus): %m",
                                  NSM_LOGIN_FILTER_FILE);
}

int manager_startup(Manager *m) {
        _cleanup_free_ char *dir = NULL;
        int r;

        manager_publish_login_filter(m);

        r = mkdir_p(m->config.state_directory, 0700);
        if (r < 0)
                return log_error_errno(r, "Failed to create '%s': %m", m->config.state_directory);
        r = mkdir_p(m->config.subtree_root, 0755);
        if (r < 0)
                return log_error_errno(r, "Failed to create '%s': %m", m->config.subtree_root);

        r = manager_load_shared(m);
        if (r < 0)
                log_warning_errno(r, "Failed to read the subtrees shared at run time, ignoring: %m");

        r = host_prepare(m->config.subtree_root, m->config.state_directory, m->config.shared_subtrees);
        if (r < 0)
                return r;

        if (asprintf(&dir, "%s/namespaces", m->config.state_directory) < 0)
                return log_oom();
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Failed to create '%s': %m", dir);

        r = registry_open(m->config.state_directory, &m->pin_cpu, &m->registry_fd);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the namespace registry under '%s': %m",
                                       m->config.state_directory);

        LoadContext c = { .manager = m };
        if (asprintf(&c.pins_dir, "%s/pins", m->config.state_directory) < 0)
                return log_oom();
        r = registry_list(m->registry_fd, c.pins_dir, load_pin, &c);
        free(c.pins_dir);
        if (r < 0)
                log_warning_errno(r, "Failed to enumerate pinned namespaces, ignoring: %m");

        remove_strays(m);
        return 0;
}

Namespace *manager_get_namespace(Manager *m, const char *user) {
        return hashmap_get(m->namespaces, user);
}

Namespace *manager_get_namespace_by_uid(Manager *m, uid_t uid) {
        char key[32];
        snprintf(key, sizeof key, "%u", (unsigned) uid);
        return hashmap_get(m->namespaces_by_uid, key);
}

int manager_check_user(Manager *m, const char *user, UserRecord *ret, sd_bus_error *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        int r;

        if (!valid_user_name(user))
                return sd_bus_error_setf(error, NSM_ERROR_NO_SUCH_USER, "'%s' is not a valid user name.", user);
        r = user_record_by_name(user, &u);
        if (r == -ESRCH)
                return sd_bus_error_setf(error, NSM_ERROR_NO_SUCH_USER, "No user '%s' is known to the system.", user);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to look up user '%s': %m", user);
        if (u.uid == 0)
                return sd_bus_error_setf(error, NSM_ERROR_USER_EXCLUDED,
                                         "'%s' is root; root always stays in the host namespace.", user);
        if (u.uid < m->config.min_uid)
                return sd_bus_error_setf(error, NSM_ERROR_USER_EXCLUDED,
                                         "'%s' (uid %u) is a system user: MinUID=%u.", user, (unsigned) u.uid,
                                         (unsigned) m->config.min_uid);
        if (login_filter_excludes(&(LoginFilter) { .min_uid = 0, .exclude_users = m->config.exclude_users }, user, u.uid))
                return sd_bus_error_setf(error, NSM_ERROR_USER_EXCLUDED, "'%s' is listed in ExcludeUsers=.", user);
        if (ret)
                *ret = u, u = (UserRecord) {};
        return 0;
}

int manager_create_namespace(Manager *m, const char *user, Namespace **ret, sd_bus_error *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        _cleanup_free_ char *message = NULL;
        Namespace *ns;
        int r;

        r = manager_check_user(m, user, &u, error);
        if (r < 0)
                return r;

        ns = manager_get_namespace(m, user);
        if (ns) {
                *ret = ns;
                return 0;
        }
        r = namespace_new(m, &u, &ns);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to allocate the namespace of '%s': %m", user);
        r = namespace_start(ns, &message);
        if (r < 0) {
                namespace_free(ns);
                if (message)
                        return sd_bus_error_set(error, SD_BUS_ERROR_FAILED, message);
                return sd_bus_error_set_errnof(error, r, "Failed to create the namespace of '%s': %m", user);
        }
        (void) namespace_dbus_send_new(ns);
        *ret = ns;
        return 0;
}

static char *shared_state_path(Manager *m) {
        char *p = NULL;
        if (asprintf(&p, "%s/shared-subtrees", m->config.state_directory) < 0)
                return NULL;
        return p;
}

int manager_save_shared(Manager *m) {
        _cleanup_free_ char *path = shared_state_path(m), *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;

        if (!path || asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f)
                return log_warning_errno(errno, "Failed to save the shared subtrees, ignoring: %m");
        for (char **p = m->config.shared_subtrees; p && *p; p++)
                fprintf(f, "%s\n", *p);
        if (fflush(f) != 0 || rename(tmp, path) < 0) {
                int r = -errno;
                (void) unlink(tmp);
                return log_warning_errno(r, "Failed to save the shared subtrees, ignoring: %m");
        }
        return 0;
}

/* Subtrees shared at run time are kept across restarts, on top of the configured ones. */
int manager_load_shared(Manager *m) {
        _cleanup_free_ char *path = shared_state_path(m), *line = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t n = 0;

        if (!path)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        while (getline(&line, &n, f) >= 0) {
                line[strcspn(line, "\n")] = 0;
                if (!path_is_absolute_normalized(line) || streq(line, "/") ||
                    strv_contains((const char *const *) m->config.shared_subtrees, line))
                        continue;
                if (strv_extend(&m->config.shared_subtrees, line) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int manager_reload(Manager *m, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        ManagerConfig c;
        int r;

        manager_config_init(&c);
        r = manager_config_load(m->config_file, &c, &error);
        if (r < 0) {
                manager_config_done(&c);
                if (error)
                        log_error("%s", error);
                log_error_errno(r, "Failed to reload the configuration, keeping the old one: %m");
                if (ret_error)
                        *ret_error = TAKE_PTR(error);
                return r;
        }
        /* Where the views and pins live cannot move under running namespaces. */
        if (!streq(c.subtree_root, m->config.subtree_root) || !streq(c.state_directory, m->config.state_directory))
                log_warning("SubtreeRoot= and StateDirectory= take effect at the next start only.");
        free(c.subtree_root);
        free(c.state_directory);
        c.subtree_root = TAKE_PTR(m->config.subtree_root);
        c.state_directory = TAKE_PTR(m->config.state_directory);

        /* New shared subtrees are prepared on the host now; existing views join them too. */
        for (char **p = c.shared_subtrees; p && *p; p++)
                if (!strv_contains((const char *const *) m->config.shared_subtrees, *p)) {
                        r = host_prepare_shared(*p);
                        if (r < 0)
                                log_warning_errno(r, "Failed to make '%s' shared, ignoring: %m", *p);
                }
        for (char **p = m->config.shared_subtrees; p && *p; p++)
                if (!strv_contains((const char *const *) c.shared_subtrees, *p))
                        (void) strv_extend(&c.shared_subtrees, *p); /* runtime-shared stay shared */
        manager_config_done(&m->config);
        m->config = c;
        manager_publish_login_filter(m);
        log_info("Configuration reloaded; it applies to namespaces created from now on.");
        return 0;
}

void manager_shutdown(Manager *m) {
        _cleanup_free_ char *pin = NULL;

        /* With no namespace left, nothing needs the registry: leave no mount behind. With
         * namespaces, it stays pinned so the next start finds them. */
        if (hashmap_size(m->namespaces) > 0 || m->registry_fd < 0)
                return;
        if (asprintf(&pin, "%s/registry", m->config.state_directory) < 0)
                return;
        if (umount2(pin, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                log_warning_errno(errno, "Failed to unpin the registry '%s', ignoring: %m", pin);
        else
                (void) unlink(pin);
        m->registry_fd = safe_close(m->registry_fd);
}
