/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* The private socket, NSM_PRIVATE_SOCKET (bus-errors.h): peer-to-peer D-Bus connections from
 * root, with the same objects and methods as the system bus. A login through pam_nsmanager
 * costs two trips through dbus-daemon per message and an authentication with it; directly,
 * the daemon learns the caller from the socket (SO_PEERCRED) instead of asking the bus driver
 * — which also works for a CloseSession whose caller has already hung up. Signals are sent on
 * the system bus only. Anything but root is turned away at accept(), and the socket is 0600
 * root (in /run/nsmanager, 0700 where it is the StateDirectory). A login's OpenSession of a
 * namespace that is up is answered without sd-bus (pipelined-open.h); the rest is sd-bus's. */

int private_bus_listen(Manager *m);
/* OpenSession of 'user', 'id' is being answered on 'bus': if that is a private connection, it
 * is handed to kept-connection.h once the answer is out. */
void private_bus_keep_for_session(Manager *m, sd_bus *bus, const char *user, const char *id);
void private_bus_done(Manager *m);
