/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <sys/types.h>

/* Who sent a message: the uid and pid the bus driver authenticated for the sender's
 * connection (GetConnectionCredentials), never anything the message or /proc says. Asked
 * once per connection and kept until the connection goes (NameOwnerChanged): unique names
 * are never reused, and without the cache every call costs a synchronous round trip to the
 * bus driver, twice when polkit is asked too.
 *
 * One cache per process (a daemon has one bus connection); bus_creds_cache_attach() starts
 * the invalidation, without it nothing is cached. It also makes the question asynchronous:
 * a method call of a sender not yet known is held while the bus driver is asked, then put
 * back into the read queue, so that its handler finds the answer in the cache and the event
 * loop never waits for dbus-daemon. bus_creds_cache_detach() lets go of all of it (before
 * the bus is closed). */

int bus_creds_cache_attach(sd_bus *bus);
void bus_creds_cache_detach(void);

int bus_message_get_sender_uid(sd_bus_message *m, uid_t *ret);
int bus_message_get_sender_pid(sd_bus_message *m, pid_t *ret);
