/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

/* The mount readers: long-lived helper processes that own the watching of views' mount tables
 * (mount-events-view.c is their client). Each is forked once, holds no daemon state (it starts
 * from an empty loop and is sent each view's namespace fd), and speaks D-Bus peer to peer
 * with the daemon on a socket pair (sd-bus, the reader the server):
 *
 *   Watch(u key, h namespace, b initial): the reader opens /proc/self/mountinfo inside the
 *     namespace, reads its table (listmount(2)/statmount(2) where the kernel has them, else that
 *     mountinfo, ids the kernel reuses), and from then on polls it for POLLPRI itself. With
 *     'initial' the first table is sent as attached. Answered once it has been read.
 *   Unwatch(u key)
 *   Reading(): a pass over the changed tables begins (the daemon holds its aggregated signal).
 *   Changed(a(ayta(ut)) detached, a(ayta(utt)) attached): the pass's differences. A change that
 *     reached many views alike (same mount point and file system, as a host mount reaches every
 *     view's slave copy of '/') is one entry, (mount point, device, [(key, id, parent id)]).
 *
 * A table is read at most once per MOUNT_EVENTS_INTERVAL_USEC: the first change after a quiet
 * interval at once, those after it together at the interval's end. Each view's last table
 * (ids, mount points, devices) is the reader's: a change is read in the view with one setns(2),
 * one listmount(2), and one statmount(2) per new mount. */

#define MOUNT_READER_INTERFACE "org.example.NSManager.MountReader"
#define MOUNT_READER_PATH "/org/example/NSManager/MountReader"

/* The reader process's main (after the fork): never returns. */
_Noreturn void mount_reader_main(int sock);

typedef struct MountReader MountReader;

typedef struct MountReaderOps {
        void (*reading)(MountReader *r, void *userdata);
        /* m is at the start of Changed's arguments */
        void (*changed)(MountReader *r, sd_bus_message *m, void *userdata);
        /* The reader died or its connection broke: the caller frees it (not from here). */
        void (*gone)(MountReader *r, void *userdata);
} MountReaderOps;

int mount_reader_new(sd_event *event, const MountReaderOps *ops, void *userdata, MountReader **ret);
MountReader *mount_reader_free(MountReader *r);

/* The reply (or error) comes to 'callback' (sd-bus's), unless *ret_slot is unref'ed first. */
int mount_reader_watch(MountReader *r, uint32_t key, int ns_fd, bool initial, sd_bus_message_handler_t callback,
                       void *userdata, sd_bus_slot **ret_slot);
void mount_reader_unwatch(MountReader *r, uint32_t key);

/* How many views it watches (the daemon's count). */
unsigned *mount_reader_load(MountReader *r);
bool mount_reader_busy(const MountReader *r);
/* Its connection ended or it exited: it takes no view (its views are given to another). */
bool mount_reader_gone(const MountReader *r);
