/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-request.h"
#include "manager.h"
#include "namespace.h"

/* Shared by the Manager's and the Namespace object's methods. */
int bus_remove_namespace_step(BusRequest *req, Namespace *ns, sd_bus_error *error);

/* The Manager's and the Namespaces' objects, on the system bus. */
int manager_bus_add_objects(Manager *m, sd_bus *bus);
/* What a login needs on a private connection (private-bus.h): the Manager's OpenSession
 * (userdata: the Manager). */
int manager_bus_add_login_objects(sd_bus *bus, void *userdata);
