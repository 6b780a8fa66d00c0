/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-request.h"
#include "namespace.h"

/* The Namespace objects on the bus: /org/example/NSManager/user/_UID. */
char *namespace_bus_path(Namespace *ns);
/* The uid in such a path, spelled as namespace_bus_path() spells it; -EINVAL for any other
 * path. Any caller may name any path: fuzzed (src/fuzz/fuzz-bus-args.c). */
int namespace_bus_path_to_uid(const char *path, uid_t *ret);
int namespace_dbus_register(Manager *m, sd_bus *bus);
/* The Namespace object at 'path' (sd-bus's object find function; userdata: the Manager): for
 * every vtable of the Namespace interface. */
int namespace_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                          sd_bus_error *error);

int namespace_dbus_send_new(Namespace *ns);
int namespace_dbus_send_removed(Namespace *ns);
int namespace_dbus_send_changed(Namespace *ns);

/* GetMounts of the namespace (NULL: the host), read by the builder; replies later. */
int bus_request_reply_mounts(BusRequest *req, Namespace *ns, sd_bus_error *error);
