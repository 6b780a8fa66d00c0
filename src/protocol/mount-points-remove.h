/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "child-main.h"

/* The end of a view (src/nsmanagerd/mount-points.c): the mount points its [View] policy made
 * in the user's own directories (VIEW_POLICY_MADE_XATTR, view-policy.h) are removed where they
 * are still empty, in a killable child (the paths are the user's: a dead NFS server, a FUSE
 * mount of theirs). Its interface (docs/processes.md), served in
 * src/children/mount-points-remove.c:
 *
 *   Remove(u uid, t mntns_id, b inode, aay paths) → u removed: for each path (absolute, normalized),
 *   from its last component up, what carries the tag of the view (uid, its mount namespace's
 *   id, NS_GET_MNTNS_ID, or with 'inode' its inode number before 6.8: view_policy_made_tag()), is
 *   still the inode checked and is empty is removed; the
 *   walk stops at the first that is not. 'removed' is how many went. */

#define MOUNT_POINTS_REMOVE_INTERFACE "org.example.NSManager.MountPoints"

extern const ChildInterface mount_points_remove_interface;
