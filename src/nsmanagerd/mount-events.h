/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "child.h"
#include "eject.h"
#include "macros.h"
#include "mount-events-view.h"
#include "namespace.h"

/* Mounts attached and detached in the views someone watches, and in the host, as the
 * MountsChanged and HostMountsChanged signals (mount-events-dbus.c sends them and keeps the
 * subscribers); and ReleaseWithHost=: when the host unmounts the last mount of a block
 * device's file system, the copies that views still hold are detached (eject.c).
 *
 * The cost follows the watchers: a view nobody watches costs nothing per mount; nobody
 * watching and ReleaseWithHost=no, the daemon does nothing at all when something is mounted.
 *
 * The host, our own namespace: where the kernel has fanotify mount events (Linux 6.15), a
 * fanotify group marks it and every mount attached or detached there is an event with the
 * mount's unique id, read from the event loop, and looked at with statmount(2) (nothing in
 * either asks a file system anything). Elsewhere, or with NSM_MOUNT_EVENTS=poll, as a view.
 *
 * A watched view: a mount reader (mount-reader.h), a long-lived helper process, holds a
 * /proc/self/mountinfo opened inside it, which the kernel flags at each change (POLLPRI), enters
 * the view and reads what changed (listmount(2) and statmount(2) with unique ids, else
 * mountinfo), and sends the daemon the difference. fanotify cannot serve the views: Linux 6.18
 * cannot statmount(2) a view's mounts from outside (mount-notify.h says why), so each change of
 * a view is read inside it whichever way it was seen.
 *
 * Changes are coalesced: at most one signal per view per MOUNT_EVENTS_INTERVAL_USEC, and
 * together the signals of a view list each change once (detached before attached). */

const char *mount_events_mode_to_string(MountEventsMode m) _pure_;
MountEventsMode mount_events_mode_from_string(const char *s) _pure_;

/* Chooses how changes are seen (fanotify, else poll; the environment variable
 * NSM_MOUNT_EVENTS=poll|none chooses for tests) and, with ReleaseWithHost=yes, starts
 * watching the host's unmounts. It listens to 'namespaces' for new views and those that go;
 * ReleaseWithHost= detaches through 'ejector'. All of them are the owner's and outlive it. */
int mount_events_new(NamespaceSet *namespaces, ChildSet *children, Ejector *ejector, const MountEventsBus *bus,
                     void *bus_userdata, MountEvents **ret);
/* At exit, before the children go: no new read of a table starts. */
void mount_events_shutdown(MountEvents *e);
MountEvents *mount_events_free(MountEvents *e);
MountEventsMode mount_events_mode(const MountEvents *e);
/* A watched view's number of mounts as its reader last counted it: 1, or 0 if not known. */
int mount_events_count(MountEvents *e, Namespace *ns, uint32_t *ret);

/* ReleaseWithHost= may have changed (ReloadConfig). */
void mount_events_config_changed(MountEvents *e);

/* Watching: 'ns' (NULL: every view, those created later too, and the host) while at least one
 * watch of it is held. Counted: each watch is dropped once. A view's first table is read
 * before its changes can be told: 1 if what is watched has been read already, else 0 and
 * 'ready' is called once it has (or could not be: the watch goes on), from the event loop;
 * what changes afterwards is signalled. */
int mount_events_watch(MountEvents *e, Namespace *ns, MountEventsReadyFunc ready, void *userdata);
void mount_events_unwatch(MountEvents *e, Namespace *ns);
/* Watches every view's number of mounts only (MountEventsBus.count): its readers count, they
 * keep no table and never enter the view, unless a view is watched with detail too. 1 or 0 and
 * 'ready' as mount_events_watch() (every view's first count known). */
int mount_events_watch_counts(MountEvents *e, MountEventsReadyFunc ready, void *userdata);
void mount_events_unwatch_counts(MountEvents *e);

