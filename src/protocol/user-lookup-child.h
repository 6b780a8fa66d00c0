/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "child-main.h"

/* The NSS lookup of a name a caller sent (src/nsmanagerd/user-lookup.c): a killable child, so
 * that a directory server that does not answer costs the child its deadline, never the
 * daemon's loop. Its interface (docs/processes.md), served in
 * src/children/user-lookup-child.c:
 *
 *   LookUp(s name) → (ay name, u uid, u gid, ay home, ay shell): the user NSS gives for the
 *   name (a UID in decimal: by uid), NSS's bytes as they are, for the daemon to check;
 *   NoSuchUser when NSS does not know it. */

#define USER_LOOKUP_INTERFACE "org.example.NSManager.UserLookup"

extern const ChildInterface user_lookup_interface;
