/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "manager-config.h"

/* The private socket, NSM_PRIVATE_SOCKET (bus-errors.h): peer-to-peer D-Bus connections from
 * root, for pam_nsmanager's logins. Through the system bus a login costs two trips through
 * dbus-daemon per message and an authentication with it; directly, the daemon learns the caller
 * from the socket (SO_PEERCRED) instead of asking the bus driver. Each connection is sd-bus's,
 * with the Manager's OpenSession on it and nothing else (everything else is on the system bus,
 * signals included). Anything but root is turned away at accept(), and the socket is 0600
 * root (in /run/nsmanager, 0700 where it is the StateDirectory). Places are limited in all and
 * per real uid of the connecting process (private-bus.c). */

typedef struct PrivateServer PrivateServer;

/* What each connection gets on it, added by the owner (the Manager's OpenSession): the server
 * knows no object of its own. */
typedef int (*PrivateServerAddObjects)(sd_bus *bus, void *userdata);

/* Listens on NSM_PRIVATE_SOCKET. 'config' is the owner's and outlives the server: a
 * connection lives at most OperationTimeoutSec= (as it is when the connection is served) and
 * a little more. */
int private_server_new(sd_event *event, const ManagerConfig *config, PrivateServerAddObjects add_objects,
                       void *userdata, PrivateServer **ret);
/* Stops listening, removes the socket, closes every connection. */
PrivateServer *private_server_free(PrivateServer *s);
