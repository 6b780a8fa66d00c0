/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"
#include "namespace.h"

/* Shared by the Manager's and the Namespace object's methods. */
int bus_remove_namespace(sd_bus_message *message, Manager *m, Namespace *ns, sd_bus_error *error);
int bus_set_linger(sd_bus_message *message, Manager *m, Namespace *ns, bool enable, sd_bus_error *error);
