/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-request.h"
#include "manager.h"
#include "namespace.h"

/* The Manager's and the Namespaces' objects, on the system bus. */
int manager_bus_add_objects(Manager *m, sd_bus *bus);
/* Connects to the system bus and adds the objects, but neither takes the name nor dispatches
 * (-EEXIST if another instance owns the name): what can fail early, before the host is
 * touched. manager_bus_serve() then takes the name and attaches the bus to the event loop. */
int manager_connect_bus(Manager *m);
int manager_bus_serve(Manager *m);

/* What a login needs on a private connection (private-bus.h): the Manager's OpenSession
 * (userdata: the Manager). */
int manager_bus_add_login_objects(sd_bus *bus, void *userdata);
