/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"
#include "mount-events.h"

/* The bus side of mount events and Eject(): Subscribe() and Unsubscribe() on the Manager (every
 * view and the host) and on each Namespace (that view), the MountsChanged and
 * HostMountsChanged signals, the MountEvents property, and Eject().
 *
 * Subscribers are tracked by bus name (sd_bus_track): one that leaves the bus is dropped. Open
 * to everyone, as GetMounts is; at most SUBSCRIPTIONS_PER_UID_MAX at a time per uid (root is not
 * limited), each watch of everything counting one, and each watch of one view one. */

#define SUBSCRIPTIONS_PER_UID_MAX 32

/* Adds the vtables to the Manager object and the Namespace objects of 'bus'. */
int mount_events_bus_register(Manager *m, sd_bus *bus);

/* MountsChanged of ns's object (NULL: HostMountsChanged of the Manager), on the system bus. */
void mount_events_dbus_emit(Manager *m, Namespace *ns, const MountChange *attached, size_t n_attached,
                            const uint64_t *detached, size_t n_detached);

/* The subscriptions of ns end with it. */
void mount_events_dbus_namespace_gone(Manager *m, Namespace *ns);
/* Every subscription ends (at exit), without unwatching one by one. */
void mount_events_dbus_free(Manager *m);
