/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "fs-util.h"
#include "mount-util.h"
#include "nsm-error.h"
#include "user-util.h"

/* What a user may do to their own view — every rule in one place (docs/security.md tells
 * why each exists and what fusermount3/udisksctl allow in its stead).
 *
 * A view is a mount namespace of the machine's initial user namespace: root runs in it (su,
 * sudo, setuid programs, the PAM modules of the user's next login, `nsctl attach` as root).
 * Whoever changes what a path shows there changes what root trusts. A caller authorized by
 * org.example.NSManager.manage-own alone (not root, not manage) may therefore change their
 * own view only in ways that give them nothing fusermount3 or udisksctl would not:
 *
 *   BindMount   the source is opened inside the caller's own view, with the caller's own
 *               credentials (uid, gid, groups from NSS), no symlink followed, and must be
 *               owned by the caller; the destination must be a directory or regular file
 *               owned by the caller, writable for the caller (never inside a read-only
 *               mount), and not a mount point other than one of the caller's own binds
 *               (which is then replaced), on a file system that holds files (not /proc),
 *               and not on a shared mount (the bind would reach the host and every view,
 *               and outlive the caller's); with the create flag only the missing last
 *               components are created, as the caller, inside a directory the caller owns.
 *               Every such mount is nosuid,nodev.
 *   Unmount     only binds made for the caller (recorded by their 64-bit unique mount id,
 *               the top mount of each), and not while the mount a bind is on is shared (it
 *               may have joined a peer group since: the unmount would reach every peer).
 *   ShareSubtree(user, P)   only P at or below a SharedSubtrees= entry.
 *   SetPropagation, EnslaveSubtree   only on an existing mount point (binding a directory
 *               onto itself first would add a mount, and under a shared subtree one that
 *               appears on the host and in every view, where fusermount3 would need a
 *               directory the user may write); never on a mount of the [View] policy, nor
 *               on a mount inside one of the caller's binds that is not itself one (it came
 *               with the bind's recursive copy: only each bind's top is theirs); recursive,
 *               never on a tree holding such mounts; they cannot join a host peer group (a
 *               slave is made one without ever being a peer: see view-ops.c).
 *
 * Requests that stay within the rules need manage-own; the others need manage. Whether a
 * request stays within them is decided in two places: what can be seen in the request
 * itself before polkit is asked (own_view_check_request()), and what can only be seen on
 * the files — in the mount child, on the very fds it then mounts from and onto, so there is
 * no window between check and use (the rest of this header). A refusal is AccessDenied in
 * 'error', with a sentence naming the rule; the daemon then asks polkit for manage, and says
 * the sentence if that is denied too. Other failures are a path lookup's negative errno with
 * 'error' unset (the caller says what was wrong with the path), or named in 'error'. */

typedef enum OwnViewRequest {
        OWN_VIEW_BIND_MOUNT,
        OWN_VIEW_UNMOUNT,
        OWN_VIEW_SHARE,
        OWN_VIEW_ENSLAVE,
        OWN_VIEW_SET_PROPAGATION,
        _OWN_VIEW_REQUEST_MAX,
        _OWN_VIEW_REQUEST_INVALID = -EINVAL,
} OwnViewRequest;

/* 0 if the request may go ahead on manage-own (the files still decide), < 0 with the rule's
 * refusal in 'error' if it needs manage. */
int own_view_check_request(OwnViewRequest request, const char *path, char *const *shared_subtrees, NsmError *error);

/* In the mount child: take the caller's credentials for path lookups and file creation
 * (fsuid, fsgid, supplementary groups: the permission checks and the owner of what is
 * created are the caller's, while the process keeps the capabilities it mounts with), and
 * give them back. */
int own_view_become(const Credentials *c);
int own_view_unbecome(void);

/* The source of a BindMount, as the caller in their view. */
int own_view_open_source(const Credentials *c, const char *path, int *ret_fd, NsmError *error);

/* The destination of a BindMount, as the caller: an existing file or directory of the
 * caller's, or one created (kind PATH_DIRECTORY/PATH_FILE, when 'create') in a directory of
 * the caller's. A mount point is accepted only if it is one of 'own' (*ret_replace set):
 * it is replaced. */
int own_view_open_destination(const Credentials *c, const char *path, bool create, PathKind kind, const MountId *own,
                              size_t n_own, CreatedPaths *created, int *ret_fd, bool *ret_replace, NsmError *error);

/* Unmount of the mount fd: it must be one of the caller's binds, and the mount it is on must
 * not be shared (the unmount would propagate to every peer). */
int own_view_check_unmount(const char *path, int fd, MountId id, const MountId *own, size_t n_own, NsmError *error);

/* SetPropagation/EnslaveSubtree on a path that is no mount point: a user's request does not
 * bind it onto itself (AccessDenied, with the rule's sentence). */
int own_view_check_not_mount_point(const char *path, NsmError *error);

/* SetPropagation/EnslaveSubtree on the mount fd (recursive: and every mount below it): none
 * may be a mount of the [View] policy, nor lie inside one of 'own' (the caller's binds) without
 * being one of them. */
int own_view_check_propagation(const char *path, int fd, bool recursive, const MountId *own, size_t n_own,
                               const MountId *policy, size_t n_policy, NsmError *error);
