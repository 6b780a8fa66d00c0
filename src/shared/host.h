/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "mount-util.h"
#include "nsm-error.h"

/* The host's side of the design: what the daemon sets up in the host namespace at start,
 * the host half of ShareSubtree(""), and releasing it all again (nsmanagerd --release). */

/* What the daemon changed on the host, oldest first: a start that fails half-way takes back
 * exactly that (host_changes_undo()), never what a previous instance or an administrator
 * made; the binds it made are also recorded for --release (host_mounts_record()). */
typedef enum HostChangeType {
        HOST_CHANGE_MKDIR,       /* created the directory 'path' */
        HOST_CHANGE_BIND,        /* bound 'path' onto itself: 'fd' is that mount */
        HOST_CHANGE_PROPAGATION, /* changed the propagation of the existing mount 'fd' */
} HostChangeType;

typedef struct HostChange {
        HostChangeType type;
        char *path;
        int fd;
        MountId id;                  /* BIND: the new mount */
        uint64_t old_peer, old_master, old_parent_peer; /* PROPAGATION: its groups before */
        bool old_unbindable;
} HostChange;

typedef struct HostChanges {
        HostChange *items;
        size_t n;
} HostChanges;

/* Undoes every change, newest first, and forgets them. Logs what it cannot undo. */
void host_changes_undo(HostChanges *c);
/* Forgets them (keeps the changes). */
void host_changes_done(HostChanges *c);
int host_changes_add_mkdir(HostChanges *c, const char *path);
/* Moves *ch to c's list (ch is left empty); c may be NULL: ch is then forgotten. */
int host_changes_take(HostChanges *c, HostChange *ch);

/* SubtreeRoot and StateDirectory bound onto themselves and unbindable (a recursive clone of
 * '/' prunes them: no view holds another's tree or a pin), created if missing. Recorded in
 * 'changes'. */
int host_prepare_reserved(const char *subtree_root, const char *state_dir, HostChanges *changes, NsmError *error);

/* '/' shared, recursively, if it is not (views follow the host through peer groups; systemd
 * does it at boot, elsewhere we do), then the 'reserved' paths and the registry pin back to
 * what they were (a recursive change reaches them too). Not undone: the last step of a start,
 * after which nothing can fail. */
int host_share_root(char *const *reserved, const char *registry, NsmError *error);

/* One path shared in a peer group of its own: created and bound onto itself if needed, kept
 * as it is if it is shared in a group of its own already (views may be its peers). With
 * only_root (the paths of SharedSubtrees=), refused (-EINVAL, touching nothing) if the
 * directory is not root's or the directory it is in can be written by someone other than root
 * (who could swap it for a symlink, or for a directory of theirs); ShareSubtree("", P) is an
 * administrator's act on what P is now, and is not refused that way. -EAGAIN, touching nothing, for a path below a FUSE mount: looking it up would ask a server a
 * user may run, which may never answer (the view builder skips such a path too). What it
 * changed is added to 'changes' (may be NULL); on failure it undoes its own changes. */
int host_share_path(const char *path, bool only_root, HostChanges *changes, NsmError *error);

/* SubtreeRoot and StateDirectory (the 'reserved' list) must stay unbindable, or every view
 * copies every other: true if path is one of them or below one. */
bool host_path_is_reserved(const char *path, char *const *reserved);
/* After a recursive propagation change of the host's 'path', marks the reserved paths below
 * it unbindable again. */
void host_keep_unbindable(const char *path, char *const *reserved);

/* The record of the mounts nsmanagerd made on the host: what --release takes away again,
 * and nothing else (not a mount an administrator made at the same path). */
#define NSM_HOST_MOUNTS_FILE "/run/nsmanager/host-mounts"

/* Adds to the record the binds of 'changes' and, if not NULL, the registry pin at 'registry'
 * (the one mount of the registry namespace on the host); drops entries no longer mounted. */
int host_mounts_record(const HostChanges *changes, const char *registry);
/* Adds one bind (ShareSubtree("", P) made it in a child). */
int host_mounts_record_bind(const char *path, MountId id);

/* nsmanagerd --release: takes away the recorded mounts that are still those mounts — the
 * registry pin (namespaces that processes are in live on in them; the others end), then each
 * bind that has nothing mounted below it, deepest first. A bind with mounts below (a stick on
 * /mnt/usb) stays, and is reported. 0, or 1 if something stayed; -errno on failure. */
int host_release(void);
