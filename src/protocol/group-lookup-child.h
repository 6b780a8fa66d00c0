/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "child-main.h"

/* A user's groups (src/nsmanagerd/group-lookup.c): NSS's initgroups asks every source of
 * groups, with sssd or winbind a directory server, so it runs in a killable child, never on
 * the daemon's loop. Its interface (docs/processes.md), served in
 * src/children/group-lookup-child.c:
 *
 *   LookUp(u uid, u gid, b names) → (au gids, aay names, ay primary, ay name): the groups NSS
 *   gives the user of 'uid', asked by the name NSS gives that uid now ('name', NSS's bytes,
 *   need not be UTF-8: never a name the daemon kept, which a rename may have given to another
 *   user) with the primary group 'gid', the primary one first; with 'names', their names
 *   (user_group_names(): primary first, unnamed gids left out) and the primary group's ("": it
 *   has none), else both empty. A uid without a user is NoSuchUser; a failure of NSS is a
 *   system error of the table, named. */

#define GROUP_LOOKUP_INTERFACE "org.example.NSManager.GroupLookup"

extern const ChildInterface group_lookup_interface;
