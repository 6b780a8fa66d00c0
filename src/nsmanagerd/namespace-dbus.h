/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-request.h"
#include "namespace.h"

/* The Namespace objects on the bus: /org/example/NSManager/user/_UID. */
char *namespace_bus_path(Namespace *ns);
int namespace_dbus_register(Manager *m, sd_bus *bus);

int namespace_dbus_send_new(Namespace *ns);
int namespace_dbus_send_removed(Namespace *ns);
int namespace_dbus_send_changed(Namespace *ns);

/* GetMounts of the namespace (NULL: the host), read by the builder; replies later. */
int bus_request_reply_mounts(BusRequest *req, Namespace *ns, sd_bus_error *error);
