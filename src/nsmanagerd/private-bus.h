/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* The private socket, NSM_PRIVATE_SOCKET (bus-errors.h): peer-to-peer D-Bus connections from
 * root, for pam_nsmanager's logins. Through the system bus a login costs two trips through
 * dbus-daemon per message and an authentication with it; directly, the daemon learns the caller
 * from the socket (SO_PEERCRED) instead of asking the bus driver. Each connection is sd-bus's,
 * with the Manager's OpenSession on it and nothing else (everything else is on the system bus,
 * signals included). Anything but root is turned away at accept(), and the socket is 0600
 * root (in /run/nsmanager, 0700 where it is the StateDirectory). Places are limited in all and
 * per real uid of the connecting process (private-bus.c). */

int private_bus_listen(Manager *m);
void private_bus_done(Manager *m);
