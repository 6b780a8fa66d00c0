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

/* Make 'path' in namespace ns_fd a peer of the host's mount at the same path (which must be
 * shared): the retroactive part of ShareSubtree. Mounts the host has under path and the view
 * lacks are copied in, so the view is consistent with the host. */
int ns_join_host_peer_group(int ns_fd, const char *path, char **ret_message);

/* Host side of ShareSubtree: path bound onto itself if needed, then shared in a group of its own
 * (kept if already shared). */
int host_share_subtree(const char *path, char **ret_message);

int ns_bind_mount(int ns_fd, const char *source, const char *destination, bool read_only, bool make_dir,
                  bool host_propagates, char **ret_message);
int ns_unmount(int ns_fd, const char *path, bool detach, char **ret_message);
