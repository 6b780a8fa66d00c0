/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "bus-request.h"
#include "namespace.h"

/* GetMountsEx, the companion of GetMounts (docs/interface.md): per mount its id in the id space
 * of MountsChanged (the kernel's unique id where it has one), mount point and source both
 * escaped and as the kernel's bytes, options, the device number of its block device (0 for
 * none, from the kernel, never from the source text) and where it came from. */
#define MOUNTS_EX_SIGNATURE "(tttttsaysaysssts)"

/* Origins. */
#define MOUNT_ORIGIN_HOST "host"
#define MOUNT_ORIGIN_POLICY "policy"
#define MOUNT_ORIGIN_DAEMON "daemon"
#define MOUNT_ORIGIN_USER "user"
#define MOUNT_ORIGIN_UNKNOWN "unknown"

/* GetMountsEx of the namespace (NULL: the host), read by the builder; replies later. */
int bus_request_reply_mounts_ex(BusRequest *req, Namespace *ns, sd_bus_error *error);

/* CanMount(user, id): what UnmountById, SetPropagationById and Eject of that mount would get,
 * "yes", "challenge" or "no", asking polkit without interaction. Reads the table first (the
 * request is dispatched again with what it learnt in req->data): returns 0 while pending,
 * else replies itself (a positive result) or fails with 'error' (MountChanged: no such mount). */
int bus_request_reply_can_mount(BusRequest *req, Namespace *ns, uint64_t id, uid_t caller, sd_bus_error *error);
