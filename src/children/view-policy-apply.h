/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager-config.h"
#include "mount-util.h"
#include "nsm-error.h"
#include "user-util.h"

/* Applies the [View] policy inside a freshly built view: runs in the view's mount namespace,
 * after pivot_root, as root, before the namespace is pinned (so a failure leaves nothing).
 * Order as systemd applies the equivalent exec settings: TemporaryFileSystem=, PrivateTmp=,
 * HideOtherHomes=, BindPaths=/BindReadOnlyPaths=, InaccessiblePaths=. Returns a negative errno
 * and, in 'error', the failure with a sentence naming the setting and entry at fault (named by
 * what the errno of the step that failed says about its path: InvalidPath, AccessDenied, …);
 * on success the ids of the mounts it made (the daemon keeps them: a user may neither unmount
 * nor repropagate them). Nothing is left of a policy that failed half-way.
 *
 * An entry a user spoiled (a failure where someone other than root decides what the path
 * names: their home, /tmp) does not fail it: a bind is skipped, a TemporaryFileSystem= or
 * InaccessiblePaths= entry covers what it still can instead (never less than hidden).
 * *ret_notes (may be NULL) gets a sentence for each, naming the entry, the path and who
 * controls it, for the log; on failure too. */
int view_policy_apply(const ViewPolicy *p, const UserRecord *u, MountId *ret_ids, size_t max_ids, size_t *ret_n_ids,
                      NsmError *error, char ***ret_notes);
