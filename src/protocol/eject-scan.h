/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "child-main.h"

/* The eject child (src/nsmanagerd/eject.c, docs/processes.md): a killable child that enters
 * each namespace it was given, finds the file system's mounts, the processes that hold them
 * (from /proc alone) and detaches them, deepest first. Its interface, served in
 * src/children/eject-scan.c:
 *
 *   AddViews(a(sh) views): each view's user and namespace; no reply (a message carries at most
 *        253 fds: as many calls as it takes, ahead of the one below)
 *   Eject(s what, b lazy) → RESULT: the block device or host mount point 'what'
 *   Release(t dev) → RESULT: ReleaseWithHost=, the views' copies of device 'dev'
 *
 * RESULT, "ta(say)ass": the device, what was detached (the view's user, "" for the host, and
 * the path), what is left or went lazily (a sentence each), who holds it (a sentence); or the
 * failure (Busy, with who holds it or what is left in its sentence; InvalidPath). */

#define EJECT_SCAN_INTERFACE "org.example.NSManager.EjectScan"
#define EJECT_SCAN_RESULT "ta(say)ass"
#define EJECT_SCAN_VIEWS_PER_CALL 200U

extern const ChildInterface eject_scan_interface;
