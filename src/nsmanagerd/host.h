/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* The host's side of the design: what the daemon sets up in the host namespace at start,
 * and the host half of ShareSubtree(""). */

/* '/' shared (views follow the host through peer groups; systemd does it at boot, elsewhere
 * we do), SubtreeRoot and StateDirectory bound onto themselves and unbindable (a recursive
 * clone of '/' prunes them: no view holds another's tree or a pin), every SharedSubtrees
 * path shared in a peer group of its own (but one below a FUSE mount: skipped, with a
 * warning, until a later start). *ret_message names what failed. */
int host_prepare(const char *subtree_root, const char *state_dir, char *const *shared_subtrees, char **ret_message);

/* One path shared in a peer group of its own: created and bound onto itself if needed, kept
 * as it is if it is shared in a group of its own already (views may be its peers). -EAGAIN,
 * touching nothing, for a path below a FUSE mount: looking it up would ask a server a user
 * may run, which may never answer (the view builder skips such a path too). */
int host_share_path(const char *path, char **ret_message);

/* SubtreeRoot and StateDirectory (the 'reserved' list) must stay unbindable, or every view
 * copies every other: true if path is one of them or below one. */
bool host_path_is_reserved(const char *path, char *const *reserved);
/* After a recursive propagation change of the host's 'path', marks the reserved paths below
 * it unbindable again. */
void host_keep_unbindable(const char *path, char *const *reserved);
