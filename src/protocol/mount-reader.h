/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "time-util.h"

/* The mount readers (docs/processes.md): long-lived processes that own the watching of views'
 * mount tables (the daemon's mount-reader-client.c forks them and is their client,
 * mount-events-view.c its user). Each is forked once, holds no daemon state (it starts from an
 * empty loop and is sent each view's namespace fd), and serves its interface peer to peer on
 * its socket, in src/mount-reader/mount-reader-main.c:
 *
 *   Watch(u key, h namespace, b initial, b detail) -> (u count): the reader opens
 *     /proc/self/mountinfo inside the namespace and from then on polls it for POLLPRI itself.
 *     With 'detail' it keeps the view's table (listmount(2)/statmount(2) where the kernel has
 *     them, else that mountinfo, ids the kernel reuses) and tells its changes; without, only its
 *     number of mounts (NS_MNT_GET_INFO from outside the view, 6.12; else the mountinfo's
 *     lines): after the Watch, which enters the view once to open its mountinfo, no setns, no table. With 'initial' the first table is sent as attached. Answered
 *     once it has been read, with the number of mounts.
 *   SetDetail(u key, b detail): the table kept from now on (answered once read) or dropped.
 *   Unwatch(u key)
 *   Reading(): a pass over the changed tables begins (the daemon holds its aggregated signal).
 *   Changed(a(ayta(ut)) detached, a(ayta(utt)) attached, au keys, au counts): the pass's differences.
 *     A change that reached many views alike (same mount point and file system, as a host mount
 *     reaches every view's slave copy of '/') is one entry, (mount point, device, [(key, id,
 *     parent id)]); 'keys' are the views whose number of mounts changed, 'counts' their numbers.
 *
 * A table is read at most once per MOUNT_READER_INTERVAL_USEC: the first change after a quiet
 * interval at once, those after it together at the interval's end. Each view's last table
 * (ids, mount points, devices) is the reader's: a change is read in the view with one setns(2),
 * one listmount(2), and one statmount(2) per new mount; a view watched without detail costs one
 * ioctl(2) per change. NSM_MOUNT_EVENTS=poll-mountinfo in its
 * environment: mountinfo alone. */

#define MOUNT_READER_INTERFACE "org.example.NSManager.MountReader"
#define MOUNT_READER_PATH "/org/example/NSManager/MountReader"
#define MOUNT_READER_WATCH_SIGNATURE "uhbb"
#define MOUNT_READER_COUNTS_SIGNATURE "au"
#define MOUNT_READER_DETACHED_SIGNATURE "a(ayta(ut))"
#define MOUNT_READER_ATTACHED_SIGNATURE "a(ayta(utt))"
#define MOUNT_READER_INTERVAL_USEC (100 * USEC_PER_MSEC)

/* The reader process's main, after the fork: never returns. */
_Noreturn void mount_reader_main(int sock);
