/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-errors.h"
#include "log.h"
#include "manager-dbus.h"
#include "namespace-dbus.h"
#include "view.h"
#include "strv.h"

int bus_reply_mounts(sd_bus_message *message, int ns_fd, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        MountEntry *e = NULL;
        size_t n = 0;
        int r;

        r = mntns_read_mounts(ns_fd, &e, &n);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to read the mount table: %m");
        r = sd_bus_message_new_method_return(message, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ttttssss)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(ttttssss)", e[i].id, e[i].parent_id, e[i].peer_group, e[i].master_group,
                                          e[i].target, e[i].source, e[i].fstype, e[i].propagation);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        mount_entries_free(e, n);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

int namespace_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                          sd_bus_error *error) {
        Manager *m = userdata;
        const char *p = path + strlen(NSM_NAMESPACE_PATH_PREFIX);
        char *end;

        /* /org/example/NSManager/user/_UID */
        if (strncmp(path, NSM_NAMESPACE_PATH_PREFIX "/_", strlen(NSM_NAMESPACE_PATH_PREFIX) + 2) != 0)
                return 0;
        p += 2;
        errno = 0;
        unsigned long uid = strtoul(p, &end, 10);
        if (!*p || *end || errno != 0 || uid > UINT32_MAX)
                return 0;
        Namespace *ns = manager_get_namespace_by_uid(m, (uid_t) uid);
        if (!ns)
                return 0;
        *found = ns;
        return 1;
}

int namespace_node_enumerator(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        Manager *m = userdata;
        char **l = calloc(hashmap_size(m->namespaces) + 1, sizeof(char *));
        size_t i = 0, k = 0;
        Namespace *ns;

        if (!l)
                return -ENOMEM;
        while (hashmap_iterate(m->namespaces, &i, (void **) &ns, NULL)) {
                l[k] = strdup(ns->object_path);
                if (!l[k]) {
                        strv_free(l);
                        return -ENOMEM;
                }
                k++;
        }
        *nodes = l;
        return 1;
}

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

static int property_get_nmounts(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        size_t n = 0;
        int r = mntns_count_mounts(ns->mntns_fd, &n);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to count the mounts of '%s': %m", ns->name);
        return sd_bus_message_append(reply, "u", (uint32_t) n);
}

static int method_remove(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        return bus_remove_namespace(message, ns->manager, ns, error);
}

static int method_get_mounts(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        return bus_reply_mounts(message, ns->mntns_fd, error);
}

const sd_bus_vtable namespace_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", NULL, offsetof(Namespace, name), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("UID", "u", NULL, offsetof(Namespace, uid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("GID", "u", NULL, offsetof(Namespace, gid), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Root", "s", property_get_root, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Sessions", "as", property_get_sessions, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Linger", "b", property_get_linger, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MountNamespaceId", "t", NULL, offsetof(Namespace, mntns_id), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Timestamp", "t", NULL, offsetof(Namespace, timestamp), SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("NMounts", "u", property_get_nmounts, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("Remove", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_remove, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetMounts", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ttttssss)", mounts), method_get_mounts,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static int send_signal(Namespace *ns, const char *member) {
        Manager *m = ns->manager;
        if (!m->bus)
                return 0;
        return sd_bus_emit_signal(m->bus, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, member, "so", ns->name, ns->object_path);
}

int namespace_dbus_send_new(Namespace *ns) {
        return send_signal(ns, "NamespaceNew");
}

int namespace_dbus_send_removed(Namespace *ns) {
        return send_signal(ns, "NamespaceRemoved");
}

int namespace_dbus_send_changed(Namespace *ns) {
        Manager *m = ns->manager;
        if (!m->bus)
                return 0;
        return sd_bus_emit_properties_changed(m->bus, ns->object_path, NSM_NAMESPACE_INTERFACE, "State", "Sessions",
                                              "Linger", NULL);
}
