/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-request.h"
#include "manager.h"
#include "namespace.h"

/* Shared by the Manager's and the Namespace object's methods. */
int bus_remove_namespace_step(BusRequest *req, Namespace *ns, sd_bus_error *error);

/* The Manager's and the Namespaces' objects on a connection: the system bus, or a private one. */
int manager_bus_add_objects(Manager *m, sd_bus *bus);
