/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "builder.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "log.h"
#include "bus-path.h"
#include "mount-events.h"
#include "mount-list-dbus.h"
#include "namespace-dbus.h"
#include "namespace-session.h"
#include "parse-util.h"
#include "strv.h"

/* ---- RemoveNamespace (the Manager's, by name, and the object's Remove) ---- */

static void on_removed(const NsmError *error, void *userdata) {
        bus_request_reply_result(userdata, error);
}

int bus_remove_namespace_step(BusRequest *req, Namespace *ns, sd_bus_error *error) {
        int r;

        r = bus_request_authorize(req, ACTION_MANAGE, (const char *[]) { "user", ns->name, NULL }, error);
        if (r <= 0)
                return r;
        bus_request_wait(req);
        r = namespace_remove(ns, req->deadline, on_removed, req);
        if (r < 0) {
                bus_request_unwait(req);
                return bus_error_set_errnof(error, r, "Failed to remove the namespace: %m");
        }
        return 1;
}

/* ---- GetMounts ---- */

static void on_mounts_read(BuilderReply *reply, void *userdata) {
        BusRequest *req = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        MountEntry *e = NULL;
        size_t n = 0;
        int r;

        if (reply->error) {
                bus_request_reply_error(req, reply->error);
                return;
        }
        f = fmemopen((void *) (reply->data ?: ""), reply->size, "r");
        r = f ? mount_table_read(f, &e, &n) : -errno;
        if (r >= 0)
                r = sd_bus_message_new_method_return(req->message, &m);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(ttttssss)");
        /* Names as the kernel has them are any bytes a user chose: escaped (text-escape.h). */
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = sd_bus_message_open_container(m, 'r', "ttttssss");
                if (r >= 0)
                        r = sd_bus_message_append(m, "tttt", e[i].id, e[i].parent_id, e[i].peer_group, e[i].master_group);
                if (r >= 0)
                        r = bus_message_append_text(m, e[i].target);
                if (r >= 0)
                        r = bus_message_append_text(m, e[i].source);
                if (r >= 0)
                        r = bus_message_append_text(m, e[i].fstype);
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", e[i].propagation);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        mount_entries_free(e, n);
        if (r >= 0 && req->data)
                ((Namespace *) req->data)->n_mounts = (uint32_t) n;
        if (r < 0) {
                bus_request_reply_errno(req, r, "Failed to read the mount table.");
                return;
        }
        bus_request_reply(req, m);
}

int bus_request_reply_mounts(BusRequest *req, Namespace *ns, sd_bus_error *error) {
        Manager *m = req->manager;
        int r;

        /* The builder reads it: no fork per call, and no file system is asked anything. */
        bus_request_wait(req);
        r = builder_read_mounts(m->builder, ns ? ns->mntns_fd : -EBADF, false, req->deadline, on_mounts_read, req);
        if (r < 0) {
                bus_request_unwait(req);
                return bus_error_set_errnof(error, r, "Failed to read the mount table: %m");
        }
        return 1;
}

static int get_mounts_step(BusRequest *req, sd_bus_error *error) {
        int r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        return bus_request_reply_mounts(req, req->data, error);
}

static int get_mounts_ex_step(BusRequest *req, sd_bus_error *error) {
        int r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        return bus_request_reply_mounts_ex(req, req->data, error);
}

static int remove_step(BusRequest *req, sd_bus_error *error) {
        return bus_remove_namespace_step(req, req->data, error);
}

/* The request holds the object: it may be dropped while the call waits. */
static void unref_namespace(void *p) {
        namespace_unref(p);
}

static int run_on_namespace(sd_bus_message *message, Namespace *ns, sd_bus_error *error, BusRequestStep step) {
        Manager *m = manager_of_namespace(ns);

        if (!m || !ns->ready)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "The namespace of '%s' is gone.", ns->name);
        return bus_request_run_with(message, m, error, step, namespace_ref(ns), unref_namespace);
}

static int method_get_mounts(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return run_on_namespace(message, userdata, error, get_mounts_step);
}

static int method_get_mounts_ex(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return run_on_namespace(message, userdata, error, get_mounts_ex_step);
}

static int method_remove(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return run_on_namespace(message, userdata, error, remove_step);
}

/* ---- properties ---- */

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", namespace_state_to_string(namespace_get_state(userdata)));
}

static int property_get_root(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *root = namespace_root(userdata);
        if (!root)
                return -ENOMEM;
        return sd_bus_message_append(reply, "s", root);
}

static int property_get_sessions(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        int r = sd_bus_message_open_container(reply, 'a', "s");
        for (Session *s = ns->sessions; r >= 0 && s; s = s->next)
                if (!namespace_session_id_seen(ns, s))
                        r = sd_bus_message_append(reply, "s", s->id);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static int property_get_linger(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        return sd_bus_message_append(reply, "b", ns->linger);
}

/* Properties cannot wait: counted with listmount(2) by namespace id (no child, no setns);
 * where the kernel or a seccomp filter lacks it, the count from the last time a mount
 * table of the namespace was read. */
static int property_get_nmounts(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        Manager *m = manager_of_namespace(ns);
        uint32_t count;
        size_t n = 0;

        /* A watched view's count is its reader's, the newest (MountCountsChanged tells the same). */
        if (m && mount_events_count(m->mount_events, ns, &count) > 0)
                return sd_bus_message_append(reply, "u", count);
        if (mntns_count_mounts(ns->mntns_id, &n) >= 0)
                ns->n_mounts = (uint32_t) n;
        return sd_bus_message_append(reply, "u", ns->n_mounts);
}

static const sd_bus_vtable namespace_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", NULL, offsetof(Namespace, name), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("UID", "u", NULL, offsetof(Namespace, uid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("GID", "u", NULL, offsetof(Namespace, gid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Root", "s", property_get_root, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Sessions", "as", property_get_sessions, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Linger", "b", property_get_linger, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MountNamespaceId", "t", NULL, offsetof(Namespace, mntns_inode), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Timestamp", "t", NULL, offsetof(Namespace, timestamp), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("NMounts", "u", property_get_nmounts, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("Remove", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_remove, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMounts", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ttttssss)", mounts), method_get_mounts,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMountsEx", SD_BUS_NO_ARGS, SD_BUS_RESULT("a" MOUNTS_EX_SIGNATURE, mounts),
                                method_get_mounts_ex, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

/* /org/example/NSManager/user/_UID */
int namespace_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                                 sd_bus_error *error) {
        Manager *m = userdata;
        Namespace *ns;
        uid_t uid;

        if (namespace_bus_path_to_uid(path, &uid) < 0)
                return 0;
        ns = manager_get_namespace_by_uid(m, uid);
        if (!ns || !ns->ready)
                return 0;
        *found = ns;
        return 1;
}

static int namespace_node_enumerator(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        Manager *m = userdata;
        Namespace *ns;

        if (!l)
                return -ENOMEM;
        for (HashmapIterator i = {}; hashmap_iterate(m->namespaces.by_name, &i, (void **) &ns, NULL);) {
                _cleanup_free_ char *p = NULL;
                if (!ns->ready)
                        continue;
                p = namespace_bus_path(ns);
                if (!p || strv_extend(&l, p) < 0)
                        return -ENOMEM;
        }
        *nodes = TAKE_PTR(l);
        return 1;
}

/* ---- signals ---- */

/* Best effort, as before: a signal that cannot be sent is not worth a failed call. */
static void send_signal(Manager *m, Namespace *ns, const char *member) {
        _cleanup_free_ char *path = NULL;

        if (!m->bus)
                return;
        path = namespace_bus_path(ns);
        if (path)
                (void) sd_bus_emit_signal(m->bus, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, member, "so", ns->name, path);
}

static void on_namespace_ready(Namespace *ns, void *userdata) {
        send_signal(userdata, ns, "NamespaceNew");
}

static void on_namespace_removed(Namespace *ns, void *userdata) {
        send_signal(userdata, ns, "NamespaceRemoved");
}

static void on_namespace_changed(Namespace *ns, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *path = NULL;

        if (!m->bus || !ns->ready)
                return;
        path = namespace_bus_path(ns);
        if (path)
                (void) sd_bus_emit_properties_changed(m->bus, path, NSM_NAMESPACE_INTERFACE, "State", "Sessions", "Linger",
                                                      NULL);
}

static const NamespaceListener namespace_listener = {
        .ready = on_namespace_ready,
        .changed = on_namespace_changed,
        .removed = on_namespace_removed,
};

int namespace_dbus_register(Manager *m, sd_bus *bus) {
        int r;

        r = sd_bus_add_fallback_vtable(bus, NULL, NSM_NAMESPACE_PATH_PREFIX, NSM_NAMESPACE_INTERFACE, namespace_vtable,
                                       namespace_object_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Namespace objects: %m");
        r = sd_bus_add_node_enumerator(bus, NULL, NSM_NAMESPACE_PATH_PREFIX, namespace_node_enumerator, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Namespace enumerator: %m");
        r = namespace_set_listen(&m->namespaces, &namespace_listener, m);
        if (r < 0)
                return log_error_errno(r, "Failed to listen to the namespaces: %m");
        return 0;
}

