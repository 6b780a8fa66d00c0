/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <sys/types.h>

/* Who sent a message: the uid and pid the bus driver authenticated for the sender's
 * connection (GetConnectionCredentials), never anything the message or /proc says. Asked
 * once per connection and kept until the connection goes (NameOwnerChanged): unique names
 * are never reused, and without the cache every call costs a synchronous round trip to the
 * bus driver, twice when polkit is asked too.
 *
 * The cache is an object of its owner's (the daemon's Manager, for its one bus connection):
 * bus_creds_new() watches the connection's NameOwnerChanged and makes the question
 * asynchronous: a method call of a sender not yet known is held while the bus driver is
 * asked, then put back into the read queue, so that its handler finds the answer in the cache
 * and the event loop never waits for dbus-daemon. bus_creds_free() lets go of all of it
 * (before the bus is closed). Without a cache (NULL) every question is a synchronous one. */

typedef struct BusCreds BusCreds;

int bus_creds_new(sd_bus *bus, BusCreds **ret);
BusCreds *bus_creds_free(BusCreds *b);

/* The sender of 'm' ('b' may be NULL): on a direct connection the peer, as the socket says. */
int bus_creds_sender_uid(BusCreds *b, sd_bus_message *m, uid_t *ret);
int bus_creds_sender_pid(BusCreds *b, sd_bus_message *m, pid_t *ret);

/* A unique name watched until it leaves the bus, through the NameOwnerChanged match the cache
 * holds already: no match rule per name (sd_bus_track adds one per name, and a caller with
 * many names would use up the connection's match rules, 512 on dbus-daemon's system bus).
 * on_gone() runs once, when the name left (or had left already); it may free the watch. One
 * watch per name (-EEXIST). Freed by its owner, before or after the BusCreds. */
typedef struct BusNameWatch BusNameWatch;
typedef void (*BusNameGoneFunc)(void *userdata);

int bus_creds_watch_name(BusCreds *b, sd_bus *bus, const char *name, BusNameGoneFunc on_gone, void *userdata,
                         BusNameWatch **ret);
BusNameWatch *bus_name_watch_free(BusNameWatch *w);

/* Signals from a well-known name (systemd's JobRemoved): the bus checks a match's
 * sender='NAME' for what it routes to us, but a peer may send a signal straight to us, and
 * sd-bus, which cannot know who owns a well-known name, lets it through. The cache keeps the
 * unique name that owns 'name' now (one name; GetNameOwner once, then its NameOwnerChanged
 * match): bus_creds_sent_by() says whether 'm' came from it (false while it is not known yet).
 * -EBUSY if another name is followed already. */
int bus_creds_follow_owner(BusCreds *b, sd_bus *bus, const char *name);
bool bus_creds_sent_by(BusCreds *b, sd_bus_message *m, const char *name);
