/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager-config.h"
#include "mount-util.h"
#include "user-util.h"

/* Applies the [View] policy inside a freshly built view: runs in the view's mount namespace,
 * after pivot_root, as root, before the namespace is pinned (so a failure leaves nothing).
 * Order as systemd applies the equivalent exec settings: TemporaryFileSystem=, PrivateTmp=,
 * HideOtherHomes=, BindPaths=/BindReadOnlyPaths=, InaccessiblePaths=. Returns negative errno and
 * a sentence naming the setting and entry at fault; on success the ids of the mounts it made
 * (the daemon keeps them: a user may neither unmount nor repropagate them). Nothing is left of
 * a policy that failed half-way. */
int view_policy_apply(const ViewPolicy *p, const UserRecord *u, MountId *ret_ids, size_t max_ids, size_t *ret_n_ids,
                      char **ret_message);

/* Step 1 of view_policy_apply() alone: parses every entry, expands its specifiers and checks
 * its paths, then frees it all; touches nothing. 0, or the negative errno and sentence that
 * view_policy_apply() would give for a malformed entry. Mount options of TemporaryFileSystem=
 * are the kernel's to judge: only applying finds a bad one. */
int view_policy_check(const ViewPolicy *p, const UserRecord *u, char **ret_message);

/* Expands %u %U %h %g %G %% in s for user u (pure; unit-tested). -EINVAL on an unknown specifier. */
int view_policy_expand_specifiers(const char *s, const UserRecord *u, char **ret);
