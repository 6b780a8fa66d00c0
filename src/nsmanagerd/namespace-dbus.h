/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "namespace.h"

extern const sd_bus_vtable namespace_vtable[];

int namespace_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found, sd_bus_error *error);
int namespace_node_enumerator(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error);

int namespace_dbus_send_new(Namespace *ns);
int namespace_dbus_send_removed(Namespace *ns);
int namespace_dbus_send_changed(Namespace *ns);

/* Shared with the Manager's GetMounts(). */
int bus_reply_mounts(sd_bus_message *m, int ns_fd, sd_bus_error *error);
