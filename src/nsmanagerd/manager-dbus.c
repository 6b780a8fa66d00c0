/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "attach.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "log.h"
#include "manager-dbus.h"
#include "manager.h"
#include "namespace-dbus.h"
#include "namespace.h"
#include "path-util.h"
#include "propagation.h"
#include "strv.h"

/* Every method: read, validate, authorize, act, reply. Arguments are checked before polkit is
 * asked, so invalid requests never prompt anybody. */

static int caller_uid(sd_bus_message *message, uid_t *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        int r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r < 0)
                return r;
        return sd_bus_creds_get_euid(creds, ret);
}

static int require_root(sd_bus_message *message, const char *what, sd_bus_error *error) {
        int r = bus_sender_is_root(message);
        if (r < 0)
                return r;
        if (r == 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "%s is only available to root.", what);
        return 0;
}

/* manage-own for the caller's own namespace (where the method allows it), manage otherwise. */
static int verify_manage(sd_bus_message *message, Manager *m, const char *user, bool own_ok, const char *path,
                         const char *mode, sd_bus_error *error) {
        const char *action = "org.example.NSManager.manage";
        const char *details[7] = { "user", user };
        size_t k = 2;
        uid_t uid;

        if (path) {
                details[k++] = "path";
                details[k++] = path;
        }
        if (mode) {
                details[k++] = "mode";
                details[k++] = mode;
        }
        if (own_ok && user && *user) {
                Namespace *ns = manager_get_namespace(m, user);
                if (ns && caller_uid(message, &uid) >= 0 && uid == ns->uid)
                        action = "org.example.NSManager.manage-own";
        }
        return bus_verify_polkit_async(message, action, details, &m->polkit_registry, error);
}

/* Binding a path the caller owns into their own namespace is manage-own; anything else manage. */
static int verify_bind(sd_bus_message *message, Manager *m, Namespace *ns, const char *source, const char *dest,
                       sd_bus_error *error) {
        const char *action = "org.example.NSManager.manage";
        const char *details[] = { "user", ns->name, "path", dest, "source", source, NULL };
        struct stat st;
        uid_t uid;

        if (caller_uid(message, &uid) >= 0 && uid == ns->uid && lstat(source, &st) >= 0 && st.st_uid == uid)
                action = "org.example.NSManager.manage-own";
        return bus_verify_polkit_async(message, action, details, &m->polkit_registry, error);
}

static int get_namespace_or_error(Manager *m, const char *user, Namespace **ret, sd_bus_error *error) {
        Namespace *ns = manager_get_namespace(m, user);
        if (!ns)
                return sd_bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "User '%s' has no namespace.", user);
        *ret = ns;
        return 0;
}

static int check_path(const char *path, const char *what, sd_bus_error *error) {
        if (!path_is_absolute_normalized(path))
                return sd_bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                         "%s '%s' is not an absolute, normalized path (no '.', '..', '//' or trailing '/').",
                                         what, path);
        return 0;
}

/* A -errno from the mount code as the named error a client can act on. */
static int reply_mount_error(sd_bus_error *error, int r, const char *message) {
        const char *name;

        switch (-r) {
        case ENOENT:
        case ENOTDIR:
        case ELOOP:
        case EXDEV:
        case EINVAL:
                name = NSM_ERROR_INVALID_PATH;
                break;
        case EBUSY:
                name = NSM_ERROR_BUSY;
                break;
        default:
                return sd_bus_error_set_errnof(error, r, "%s", message ?: strerror(-r));
        }
        return sd_bus_error_set(error, name, message ?: strerror(-r));
}

static int method_create_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(message, "s", &user);
        if (r < 0)
                return r;
        r = manager_check_user(m, user, NULL, error);
        if (r < 0)
                return r;
        r = verify_manage(message, m, user, false, NULL, NULL, error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = manager_create_namespace(m, user, &ns, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(message, "o", ns->object_path);
}

int bus_remove_namespace(sd_bus_message *message, Manager *m, Namespace *ns, sd_bus_error *error) {
        int r;

        r = verify_manage(message, m, ns->name, false, NULL, NULL, error);
        if (r <= 0)
                return r < 0 ? r : 1;
        (void) namespace_dbus_send_removed(ns);
        r = namespace_stop(ns);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to remove the namespace: %m");
        return sd_bus_reply_method_return(message, NULL);
}

static int method_remove_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(message, "s", &user);
        if (r < 0)
                return r;
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        return bus_remove_namespace(message, m, ns, error);
}

static int method_get_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(message, "s", &user);
        if (r < 0)
                return r;
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(message, "o", ns->object_path);
}

static int method_get_namespace_by_uid(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        Namespace *ns = NULL;
        uint32_t uid;
        int r;

        r = sd_bus_message_read(message, "u", &uid);
        if (r < 0)
                return r;
        ns = manager_get_namespace_by_uid(m, uid);
        if (!ns)
                return sd_bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "UID %u has no namespace.", uid);
        return sd_bus_reply_method_return(message, "o", ns->object_path);
}

static int compare_namespaces(const void *a, const void *b) {
        return strcmp((*(Namespace *const *) a)->name, (*(Namespace *const *) b)->name);
}

static int method_list_namespaces(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ Namespace **list = NULL;
        Manager *m = userdata;
        size_t n = 0, i = 0;
        Namespace *ns = NULL;
        int r;

        list = calloc(hashmap_size(m->namespaces) + 1, sizeof(Namespace *));
        if (!list)
                return -ENOMEM;
        while (hashmap_iterate(m->namespaces, &i, (void **) &ns, NULL))
                list[n++] = ns;
        qsort(list, n, sizeof(Namespace *), compare_namespaces);

        r = sd_bus_message_new_method_return(message, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(suso)");
        if (r < 0)
                return r;
        for (i = 0; i < n; i++) {
                r = sd_bus_message_append(reply, "(suso)", list[i]->name, (uint32_t) list[i]->uid,
                                          namespace_state_to_string(namespace_get_state(list[i])), list[i]->object_path);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static bool valid_session_id(const char *id) {
        if (!id || !*id || strlen(id) > 255)
                return false;
        for (const char *c = id; *c; c++)
                if (*c <= ' ' || *c == ':' || *c == 127)
                        return false;
        return true;
}

static int method_open_session(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        Manager *m = userdata;
        const char *user, *id;
        Namespace *ns = NULL;
        pid_t pid = 0;
        int r;

        r = sd_bus_message_read(message, "ss", &user, &id);
        if (r < 0)
                return r;
        if (!valid_session_id(id))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Session id '%s' is empty, too long, or has spaces, ':' or control characters.", id);
        r = require_root(message, "OpenSession", error);
        if (r < 0)
                return r;
        r = manager_create_namespace(m, user, &ns, error);
        if (r < 0)
                return r;
        /* The login process that asked: if it dies without CloseSession, the session ends. */
        if (sd_bus_query_sender_creds(message, SD_BUS_CREDS_PID | SD_BUS_CREDS_AUGMENT, &creds) >= 0)
                (void) sd_bus_creds_get_pid(creds, &pid);
        r = namespace_add_session(ns, id, pid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to record session '%s': %m", id);
        log_info("Session '%s' of '%s' opened (leader %d).", id, user, (int) pid);
        return sd_bus_reply_method_return(message, "oh", ns->object_path, ns->mntns_fd);
}

static int method_close_session(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *user, *id;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(message, "ss", &user, &id);
        if (r < 0)
                return r;
        r = require_root(message, "CloseSession", error);
        if (r < 0)
                return r;
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        r = namespace_remove_session(ns, id);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, NSM_ERROR_NO_SUCH_SESSION, "User '%s' has no session '%s'.", user, id);
        if (r < 0)
                return r;
        log_info("Session '%s' of '%s' closed.", id, user);
        return sd_bus_reply_method_return(message, NULL);
}

static int method_open_mount_namespace(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *user;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(message, "s", &user);
        if (r < 0)
                return r;
        r = require_root(message, "OpenMountNamespace", error);
        if (r < 0)
                return r;
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(message, "h", ns->mntns_fd);
}

/* "" = the host; otherwise the user's namespace, which must exist. */
static int target_ns_fd(Manager *m, const char *user, int *ret, sd_bus_error *error) {
        Namespace *ns = NULL;
        int r;

        if (!*user) {
                *ret = -EBADF;
                return 0;
        }
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        *ret = ns->mntns_fd;
        return 0;
}

static bool path_in_shared_subtrees(Manager *m, const char *path) {
        for (char **p = m->config.shared_subtrees; p && *p; p++)
                if (streq(*p, path))
                        return true;
        return false;
}

static int method_share_subtree(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        Manager *m = userdata;
        const char *user, *path;
        int fd = -EBADF, r;

        r = sd_bus_message_read(message, "ss", &user, &path);
        if (r < 0)
                return r;
        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        if (streq(path, "/"))
                return sd_bus_error_set(error, NSM_ERROR_INVALID_PATH,
                                        "'/' cannot be a shared subtree; use ViewPropagation=shared for that.");
        r = target_ns_fd(m, user, &fd, error);
        if (r < 0)
                return r;
        if (fd < 0 && host_path_is_reserved(path, (char *[]) { m->config.subtree_root, m->config.state_directory, NULL }))
                return sd_bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                         "'%s' is nsmanagerd's SubtreeRoot or StateDirectory and stays unbindable.", path);
        r = verify_manage(message, m, user, true, path, "shared", error);
        if (r <= 0)
                return r < 0 ? r : 1;

        if (fd >= 0) {
                r = ns_join_host(fd, path, JOIN_PEER, &msg);
                if (r < 0)
                        return reply_mount_error(error, r, msg);
                return sd_bus_reply_method_return(message, NULL);
        }

        r = host_share_subtree(path, &msg);
        if (r < 0)
                return reply_mount_error(error, r, msg);
        /* Retroactive: every existing view joins the new peer group (a view whose user enslaved
         * the path to the host's keeps it so: sharing again must not undo that). */
        size_t i = 0;
        Namespace *ns = NULL;
        while (hashmap_iterate(m->namespaces, &i, (void **) &ns, NULL)) {
                _cleanup_free_ char *nmsg = NULL;
                r = ns_join_host(ns->mntns_fd, path, JOIN_PEER_UNLESS_ENSLAVED, &nmsg);
                if (r < 0)
                        log_warning_errno(r, "Failed to share '%s' into the view of '%s', ignoring: %s", path, ns->name,
                                          nmsg ?: strerror(-r));
        }
        if (!path_in_shared_subtrees(m, path)) {
                r = strv_extend(&m->config.shared_subtrees, path);
                if (r < 0)
                        return r;
                (void) manager_save_shared(m);
                (void) sd_bus_emit_properties_changed(sd_bus_message_get_bus(message), NSM_MANAGER_PATH,
                                                      NSM_MANAGER_INTERFACE, "SharedSubtrees", NULL);
        }
        return sd_bus_reply_method_return(message, NULL);
}

static int method_set_propagation_common(sd_bus_message *message, Manager *m, const char *user, const char *path,
                                         PropagationMode mode, bool recursive, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        int fd = -EBADF, r;

        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        r = target_ns_fd(m, user, &fd, error);
        if (r < 0)
                return r;
        char *reserved[] = { m->config.subtree_root, m->config.state_directory, NULL };
        if (fd < 0 && host_path_is_reserved(path, reserved))
                return sd_bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                         "'%s' is nsmanagerd's SubtreeRoot or StateDirectory and stays unbindable.", path);
        if (fd < 0 && streq(path, "/") && mode == PROPAGATION_UNBINDABLE)
                return sd_bus_error_set(error, NSM_ERROR_INVALID_PATH,
                                        "The host's '/' cannot be unbindable: every view is a copy of it.");
        r = verify_manage(message, m, user, true, path, propagation_mode_to_string(mode), error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = ns_set_propagation(fd, path, mode, recursive, &msg);
        if (fd < 0 && recursive)
                host_keep_unbindable(path, reserved);
        if (r < 0)
                return reply_mount_error(error, r, msg);
        return sd_bus_reply_method_return(message, NULL);
}

static int method_enslave_subtree(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        Manager *m = userdata;
        const char *user, *path;
        int fd = -EBADF, r;

        r = sd_bus_message_read(message, "ss", &user, &path);
        if (r < 0)
                return r;
        if (!*user)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "The host's subtrees have no master to follow; name a user.");
        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        r = target_ns_fd(m, user, &fd, error);
        if (r < 0)
                return r;
        r = verify_manage(message, m, user, true, path, "slave", error);
        if (r <= 0)
                return r < 0 ? r : 1;
        /* A slave of the host's mount at the same path (whatever the user's path was before). */
        r = ns_join_host(fd, path, JOIN_SLAVE, &msg);
        if (r < 0)
                return reply_mount_error(error, r, msg);
        return sd_bus_reply_method_return(message, NULL);
}

static int method_set_propagation(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        const char *user, *path, *mode;
        PropagationMode pm;
        uint64_t flags;
        int r;

        r = sd_bus_message_read(message, "ssst", &user, &path, &mode, &flags);
        if (r < 0)
                return r;
        if (flags & ~NSM_PROPAGATION_RECURSIVE)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                         flags & ~NSM_PROPAGATION_RECURSIVE);
        pm = propagation_mode_from_string(mode);
        if (pm < 0)
                return sd_bus_error_setf(error, NSM_ERROR_INVALID_MODE,
                                         "'%s' is not a propagation mode: shared, slave, private or unbindable.", mode);
        return method_set_propagation_common(message, userdata, user, path, pm, flags & NSM_PROPAGATION_RECURSIVE, error);
}

static int method_bind_mount(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        Manager *m = userdata;
        const char *user, *source, *dest;
        uint64_t flags;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(message, "ssst", &user, &source, &dest, &flags);
        if (r < 0)
                return r;
        if (flags & ~(NSM_BIND_READ_ONLY | NSM_BIND_MKDIR))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                         flags & ~(NSM_BIND_READ_ONLY | NSM_BIND_MKDIR));
        r = check_path(source, "Source", error);
        if (r < 0)
                return r;
        r = check_path(dest, "Destination", error);
        if (r < 0)
                return r;
        if (streq(dest, "/"))
                return sd_bus_error_set(error, NSM_ERROR_INVALID_PATH, "Nothing can be bound over the view's root.");
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        r = verify_bind(message, m, ns, source, dest, error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = ns_bind_mount(ns->mntns_fd, source, dest, flags & NSM_BIND_READ_ONLY, flags & NSM_BIND_MKDIR,
                          m->config.view_propagation == VIEW_PROPAGATION_SHARED, &msg);
        if (r < 0)
                return reply_mount_error(error, r, msg);
        return sd_bus_reply_method_return(message, NULL);
}

static int method_unmount(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *msg = NULL;
        Manager *m = userdata;
        const char *user, *path;
        uint64_t flags;
        Namespace *ns = NULL;
        int r;

        r = sd_bus_message_read(message, "sst", &user, &path, &flags);
        if (r < 0)
                return r;
        if (flags & ~NSM_UNMOUNT_DETACH)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                         flags & ~NSM_UNMOUNT_DETACH);
        r = check_path(path, "Path", error);
        if (r < 0)
                return r;
        /* umount2() of a namespace's root remounts the root filesystem read-only. Never. */
        if (streq(path, "/"))
                return sd_bus_error_set(error, NSM_ERROR_INVALID_PATH, "'/' is the view's root and is never unmounted.");
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        r = verify_manage(message, m, user, true, path, NULL, error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = ns_unmount(ns->mntns_fd, path, flags & NSM_UNMOUNT_DETACH, &msg);
        if (r < 0)
                return reply_mount_error(error, r, msg);
        return sd_bus_reply_method_return(message, NULL);
}

static int method_get_mounts(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *user;
        int fd = -EBADF, r;

        r = sd_bus_message_read(message, "s", &user);
        if (r < 0)
                return r;
        r = target_ns_fd(m, user, &fd, error);
        if (r < 0)
                return r;
        return bus_reply_mounts(message, fd, error);
}

int bus_set_linger(sd_bus_message *message, Manager *m, Namespace *ns, bool enable, sd_bus_error *error) {
        int r = verify_manage(message, m, ns->name, true, NULL, NULL, error);
        if (r <= 0)
                return r < 0 ? r : 1;
        r = namespace_set_linger(ns, enable);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(message, NULL);
}

static int method_set_linger(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *user;
        Namespace *ns = NULL;
        int enable, r;

        r = sd_bus_message_read(message, "sb", &user, &enable);
        if (r < 0)
                return r;
        r = get_namespace_or_error(m, user, &ns, error);
        if (r < 0)
                return r;
        return bus_set_linger(message, m, ns, enable, error);
}

static int method_reload_config(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = verify_manage(message, m, "", false, NULL, NULL, error);
        if (r <= 0)
                return r < 0 ? r : 1;
        _cleanup_free_ char *why = NULL;
        r = manager_reload(m, &why);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Configuration not reloaded, the old one stays: %s",
                                         why ?: strerror(-r));
        return sd_bus_reply_method_return(message, NULL);
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

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", NULL, offsetof(Manager, version), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("SubtreeRoot", "s", property_get_subtree_root, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
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
        SD_BUS_METHOD_WITH_ARGS("OpenSession", SD_BUS_ARGS("s", user, "s", session_id),
                                SD_BUS_RESULT("o", namespace, "h", mount_ns_fd), method_open_session,
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
        SD_BUS_METHOD_WITH_ARGS("GetMounts", SD_BUS_ARGS("s", user), SD_BUS_RESULT("a(ttttssss)", mounts),
                                method_get_mounts, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLinger", SD_BUS_ARGS("s", user, "b", enable), SD_BUS_NO_RESULT,
                                method_set_linger, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Attach",
                                SD_BUS_ARGS("s", user, "as", command, "as", environment, "s", working_directory,
                                            "h", stdin, "h", stdout, "h", stderr, "h", status),
                                SD_BUS_RESULT("u", pid), method_attach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ReloadConfig", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload_config,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("NamespaceNew", SD_BUS_ARGS("s", user, "o", namespace), 0),
        SD_BUS_SIGNAL_WITH_ARGS("NamespaceRemoved", SD_BUS_ARGS("s", user, "o", namespace), 0),
        SD_BUS_VTABLE_END,
};

int manager_connect_bus(Manager *m) {
        int r;

        r = sd_bus_default_system(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the system bus: %m");
        r = sd_bus_add_object_vtable(m->bus, NULL, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Manager object: %m");
        r = sd_bus_add_fallback_vtable(m->bus, NULL, NSM_NAMESPACE_PATH_PREFIX, NSM_NAMESPACE_INTERFACE,
                                       namespace_vtable, namespace_object_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Namespace objects: %m");
        r = sd_bus_add_node_enumerator(m->bus, NULL, NSM_NAMESPACE_PATH_PREFIX, namespace_node_enumerator, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Namespace enumerator: %m");
        r = sd_bus_add_object_manager(m->bus, NULL, NSM_MANAGER_PATH);
        if (r < 0)
                return log_error_errno(r, "Failed to add the object manager: %m");
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        /* Take the name last: clients may call us as soon as it is ours. */
        r = sd_bus_request_name(m->bus, NSM_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to take the bus name %s: %m", NSM_BUS_NAME);
        return 0;
}
