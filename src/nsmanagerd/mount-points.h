/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "child.h"

/* The end of a view: the mount points its [View] policy made in the user's own directories
 * (view-policy.h, VIEW_POLICY_MADE_XATTR) are removed where they are still empty, so that
 * %h/x is not left behind in the real home. In a killable child (the paths are the user's:
 * a dead NFS server, a FUSE mount of theirs), never waited for; for each path, from its last
 * component up, what carries the tag of this view (uid, mount namespace id) and is still
 * the inode checked is removed, and the walk stops at the first that is not: a directory the
 * user made, or one a later view of theirs mounts on, stays. The child is
 * mount-points-remove.h's: it is sent the paths and the view's uid and id. Failures are
 * logged at debug level and ignored: what stays is the user's. */
void mount_points_remove(ChildSet *children, const char *name, uid_t uid, uint64_t mntns_id, uint64_t mntns_inode,
                         char *const *paths, uint64_t deadline);
