/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-creds.h"

/* org.freedesktop.LogControl1 at /org/freedesktop/LogControl1, on the system bus: what
 * `systemctl service-log-level nsmanagerd debug` and `service-log-target` change (systemd
 * finds the object through the unit's BusName=). Only root may change them: 'creds' (the
 * owner's, which outlives the object) says who sent a change. */
int log_control_add(sd_bus *bus, BusCreds *creds);
