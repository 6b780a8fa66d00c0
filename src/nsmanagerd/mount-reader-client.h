/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "mount-reader.h"

/* The daemon's side of the mount readers (src/protocol/mount-reader.h): each reader's process
 * and its peer-to-peer bus, the daemon the client, attached to its event loop. */

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

/* The reply (or error) comes to 'callback' (sd-bus's), unless *ret_slot is unref'ed first.
 * detail: the view's table kept and its changes told; else its number of mounts only. */
int mount_reader_watch(MountReader *r, uint32_t key, int ns_fd, bool initial, bool detail,
                       sd_bus_message_handler_t callback, void *userdata, sd_bus_slot **ret_slot);
int mount_reader_set_detail(MountReader *r, uint32_t key, bool detail, sd_bus_message_handler_t callback,
                            void *userdata, sd_bus_slot **ret_slot);
void mount_reader_unwatch(MountReader *r, uint32_t key);

/* How many views it watches (the daemon's count). */
unsigned *mount_reader_load(MountReader *r);
bool mount_reader_busy(const MountReader *r);
/* Its connection ended or it exited: it takes no view (its views are given to another). */
bool mount_reader_gone(const MountReader *r);
