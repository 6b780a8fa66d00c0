/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "mount-util.h"

/* Live changes to a running namespace (ns_fd) or the host (ns_fd < 0). Each runs in a short
 * child that enters the namespace, so the daemon never leaves the host's. Paths are absolute,
 * normalized paths inside the namespace, resolved there without following symlinks.
 * Errors: -ENOENT/-ENOTDIR/-ELOOP/-EXDEV (path problems, reported as InvalidPath), -EBUSY,
 * else the syscall's errno. *ret_message gets a sentence for the person who asked. */

int ns_set_propagation(int ns_fd, const char *path, PropagationMode mode, bool recursive, char **ret_message);

typedef enum JoinMode {
        JOIN_PEER,                  /* ShareSubtree(user, path): a peer again, whatever it was */
        JOIN_PEER_UNLESS_ENSLAVED,  /* ShareSubtree("", path), each existing view: a peer, unless the
                                     * user enslaved it to the host's mount (kept a slave) */
        JOIN_SLAVE,                 /* EnslaveSubtree(user, path): a slave of the host's mount at path;
                                     * where the host has no shared mount there, a slave of
                                     * whatever it follows now */
} JoinMode;

/* Make 'path' in namespace ns_fd follow the host's mount at the same path (which must be shared,
 * except for JOIN_SLAVE), through move_mount(MOVE_MOUNT_SET_GROUP): the retroactive part of
 * ShareSubtree, and EnslaveSubtree. Mounts the host has under path and the view lacks are copied
 * in first, so the view is consistent with the host. A no-op where it follows already. */
int ns_join_host(int ns_fd, const char *path, JoinMode mode, char **ret_message);

/* SubtreeRoot and StateDirectory must stay unbindable (or every view copies every other): true if
 * path is one of 'reserved' or below one. */
bool host_path_is_reserved(const char *path, char *const *reserved);
/* After a recursive propagation change of the host's 'path', mark the reserved paths below it
 * unbindable again. */
void host_keep_unbindable(const char *path, char *const *reserved);

/* Host side of ShareSubtree: path bound onto itself if needed, then shared in a group of its own
 * (kept if already shared). */
int host_share_subtree(const char *path, char **ret_message);

int ns_bind_mount(int ns_fd, const char *source, const char *destination, bool read_only, bool make_dir,
                  bool host_propagates, char **ret_message);
int ns_unmount(int ns_fd, const char *path, bool detach, char **ret_message);
