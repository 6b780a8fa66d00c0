/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-path.h"
#include "bus-request.h"
#include "namespace.h"

/* The Namespace objects on the bus (their paths: bus-path.h). Adds the Namespace objects to 'bus', and listens to the Manager's namespaces for the
 * NamespaceNew and NamespaceRemoved signals, and the objects' PropertiesChanged. */
int namespace_dbus_register(Manager *m, sd_bus *bus);
/* The Namespace object at 'path' (sd-bus's object find function; userdata: the Manager): for
 * every vtable of the Namespace interface. */
int namespace_object_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                          sd_bus_error *error);

/* RemoveNamespace's step once the namespace is found: the Manager's method (by name) and the
 * Namespace object's Remove() share it. */
int bus_remove_namespace_step(BusRequest *req, Namespace *ns, sd_bus_error *error);

/* GetMounts of the namespace (NULL: the host), read by the builder; replies later. */
int bus_request_reply_mounts(BusRequest *req, Namespace *ns, sd_bus_error *error);
