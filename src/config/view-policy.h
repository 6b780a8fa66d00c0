/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The [View] policy, read: checked, and what an administrator should know about it. Neither
 * mounts nor logs: linked into nsctl too (nsctl verify). Applying it is view-policy-apply.h. */

#include <stdint.h>

#include "manager-config.h"
#include "nsm-error.h"
#include "user-util.h"

/* Step 1 of view_policy_apply() alone: parses every entry, expands its specifiers and checks
 * its paths, then frees it all; touches nothing. 0, or the negative errno and failure that
 * view_policy_apply() would give for a malformed entry. Mount options of TemporaryFileSystem=
 * are the kernel's to judge: only applying finds a bad one. */
int view_policy_check(const ViewPolicy *p, const UserRecord *u, NsmError *error);

/* What an administrator should know about the policy of user 'u' that does not keep it from
 * being applied (for the daemon's log when it builds a view, and `nsctl verify`): each path
 * that lies where someone other than root and 'u' decides what it names (under a directory
 * they own or may write, such as /tmp/scratch-%u, a symbolic link of theirs, a FUSE mount), so
 * that the entry may be spoiled; and each source that names the user (%u, %U, %h) but belongs
 * to somebody else, an entry that is skipped. Paths are looked up from 'root_fd' (the host's
 * or a view's "/") without following any symlink a policy would not follow. Changes nothing
 * and logs nothing. 0 and a strv of sentences (NULL: none), or negative errno: -EINVAL for a
 * malformed entry (view_policy_check() says which). */
int view_policy_warnings(const ViewPolicy *p, const UserRecord *u, int root_fd, char ***ret);

/* What building the view of 'u' will do with the policy, as far as can be told without mounting,
 * from the tree at 'root_fd' (the host's "/", which a view copies): the same plan as
 * view_policy_check(), then the lookups the view builder makes (view-policy-apply.c) of each
 * bind's source and destination and of each InaccessiblePaths= entry, with the same rule for
 * what a user spoiled. 0 and in *ret_skipped a sentence for each entry that will be skipped or
 * covered instead (NULL: none); or the negative errno with 'error' set as the build would fail.
 * Not seen here: what only mounting finds (a TemporaryFileSystem= option the kernel refuses, a
 * shared mount at a destination). Changes nothing, logs nothing. */
int view_policy_forecast(const ViewPolicy *p, const UserRecord *u, int root_fd, char ***ret_skipped, NsmError *error);

/* Mount points the policy makes in a user's own directories (%h/x, where nothing was) are made
 * as the user (they own them, as if they had made them) and marked with this extended
 * attribute, whose value is view_policy_made_tag() of the view they were made for: a trusted.*
 * attribute, which only CAP_SYS_ADMIN may set or read, so a directory a user made never carries
 * it. When that view ends, the daemon removes each still empty one it finds at the paths
 * view_policy_mount_points() gives (docs/security.md). A later view of the user that mounts on
 * one tags it anew, so the end of the earlier one leaves it alone. */
#define VIEW_POLICY_MADE_XATTR "trusted.nsmanager.made-for"
#define VIEW_POLICY_MADE_TAG_MAX 64
/* "UID:id:ID", ID the view's mount namespace id (NS_GET_MNTNS_ID), which is never reused while
 * the machine runs: not its inode, which the kernel gives to the next namespace once it is
 * freed, so that a later view would carry the tag of an earlier one. */
/* mntns_id: the namespace's 64-bit id (NS_GET_MNTNS_ID, never reused), or where the kernel has
 * none (before 6.8) its inode number ('inode'), which the kernel reuses: namespace.c starts no
 * removal while the user has a view again, so only a view made during the removal can lose a
 * mount point it reused (a bind missing from her own view, nothing more). */
const char *view_policy_made_tag(uid_t uid, uint64_t mntns_id, bool inode, char buf[static VIEW_POLICY_MADE_TAG_MAX]);

/* The paths where applying the policy of 'u' may create something to mount on: each
 * TemporaryFileSystem= path and each bind's destination, without repeats. Touches nothing.
 * 0 and a strv (NULL: none), or negative errno (-EINVAL for a malformed entry). */
int view_policy_mount_points(const ViewPolicy *p, const UserRecord *u, char ***ret);

/* Expands %u %U %h %g %G %% in s for user u (pure; unit-tested). -EINVAL on an unknown specifier. */
int view_policy_expand_specifiers(const char *s, const UserRecord *u, char **ret);
