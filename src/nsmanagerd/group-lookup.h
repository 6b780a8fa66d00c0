/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lookup-cache.h"
#include "nsm-error.h"
#include "user-util.h"

/* A user's groups, as the daemon acts "as the caller" with them (own-view calls, the commands
 * OpenAttach() forks) and as her group policy files name them (a view's build): NSS's
 * initgroups asks every source of groups, with sssd or winbind a directory server, for as long
 * as it takes. Never on the event loop (lookup-cache.h): keyed by her uid, one lookup per user
 * in flight, joined by the other calls for her; no limit per caller but the users' one. */

#define GROUP_LOOKUPS_USERS_MAX 32U
#define GROUP_LOOKUP_CACHE_USEC (5U * 1000U * 1000U)
#define GROUP_LOOKUP_CACHE_MAX 4096U

typedef LookupCache GroupLookups;
typedef LookupDone GroupLookupDone;

int group_lookups_new(ChildSet *children, GroupLookups **ret);
/* After the children were freed: their answers are in. */
#define group_lookups_free lookup_cache_free

/* The credentials of user 'u' (her uid, her primary gid, every group NSS gives her name), and
 * with 'ret_names' their names (user_group_names(): primary first, unnamed gids left out) and
 * with 'ret_primary' the primary group's (NULL if it has none). 1:
 * the answer is cached: *ret (unless NULL) and *ret_names, or the failure in 'error' and a
 * negative return value (TimedOut at 'deadline' when NSS did not answer). 0: a child asks NSS,
 * 'done' follows (and asking again finds the answer). < 0 with 'error' set: no lookup
 * (LimitExceeded). */
int group_lookup(GroupLookups *l, const UserRecord *u, uid_t caller, uint64_t deadline, GroupLookupDone done,
                 void *userdata, Credentials *ret, char ***ret_names, char **ret_primary, NsmError *error);
