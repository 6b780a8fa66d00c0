/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* The views the package's removal leaves behind (nsmanagerd --release, --orphans; the
 * maintainer scripts): the users whose processes are still in a namespace recorded under
 * StateDirectory's namespaces/, said in one warning with how to end them. 'removing': the
 * package is being removed (the views will be orphaned); else a reinstall found them (they
 * are). With the registry still pinned (an upgrade), the next daemon finds them again: then
 * nothing is said unless 'removing'. Returns how many users have processes in one, or < 0. */
int orphans_report(const char *state_directory, bool removing);
