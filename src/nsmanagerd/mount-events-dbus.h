/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"
#include "mount-events.h"

/* The bus side of mount events and Eject(): Subscribe() and Unsubscribe() on the Manager (every
 * view and the host) and on each Namespace (that view), the MountsChanged and
 * HostMountsChanged signals, the MountEvents property, and Eject().
 *
 * Subscribers are tracked by bus name (bus_creds_watch_name()): one that leaves the bus is
 * dropped. Open to everyone, as GetMounts is; at most SUBSCRIPTIONS_PER_UID_MAX at a time per
 * uid and SUBSCRIPTIONS_OF_USERS_MAX of all users (root is not limited), each watch of
 * everything counting one, and each watch of one view one. */

#define SUBSCRIPTIONS_PER_UID_MAX 32
/* Of all users but root together: no match rule is spent on them (bus-creds.h watches their
 * names), but each costs the daemon memory and a signal per change; root's are never refused. */
#define SUBSCRIPTIONS_OF_USERS_MAX 4096

/* Adds the vtables to the Manager object and the Namespace objects of 'bus', and sets
 * Manager.mount_events_bus: the MountsChanged and HostMountsChanged signals, the subscriptions
 * of a view that is gone ended, and every subscription at exit (mount-events.h). */
int mount_events_bus_register(Manager *m, sd_bus *bus);

