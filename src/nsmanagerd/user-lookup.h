/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "lookup-cache.h"
#include "nsm-error.h"
#include "user-util.h"

/* Who a name a caller sent is: NSS decides (docs/security.md), but never on the event loop
 * (lookup-cache.h): with sssd or winbind a name the directory does not know is a round trip to
 * it, an unreachable server seconds, and one user's stream of fresh random names must not delay
 * anybody's login (root's: OpenSession from pam_nsmanager). Keyed by the name as asked: 200 calls
 * at once naming three users are three lookups, not 200 refused past the cap. */

#define USER_LOOKUPS_PER_UID_MAX 4U
#define USER_LOOKUPS_USERS_MAX 32U
#define USER_LOOKUP_CACHE_USEC (5U * 1000U * 1000U)
#define USER_LOOKUP_CACHE_MAX 4096U

typedef LookupCache UserLookups;
typedef LookupDone UserLookupDone;

int user_lookups_new(ChildSet *children, UserLookups **ret);
/* After the children were freed: their answers are in. */
#define user_lookups_free lookup_cache_free

/* 'name': a user in any spelling NSS knows, or a UID in decimal. 1: the answer is cached:
 * *ret is the record (canonical name, uid, …), or the failure is in 'error' (NoSuchUser, a
 * name NSS gives that cannot name a view, TimedOut, …) and the return value is negative. 0: a
 * child asks NSS, 'done' follows. < 0 with 'error' set: no lookup (LimitExceeded: 'caller' has
 * as many in flight as it may). */
int user_lookup(UserLookups *l, const char *name, uid_t caller, uint64_t deadline, UserLookupDone done, void *userdata,
                UserRecord *ret, NsmError *error);

/* The cached answer for 'name', without NSS or a child: 1 with *ret, 0 if none is cached (or it
 * is a failure). */
int user_lookup_cached(UserLookups *l, const char *name, UserRecord *ret);

/* Whether an answer for 'name', a failure too, is cached: asking would start or join no lookup. */
bool user_lookup_answered(UserLookups *l, const char *name);

/* A spelling longer than this is no user: no NSS is asked (a name of megabytes would be copied
 * into the cache and its failure's message). Far above any directory's names. */
#define USER_NAME_BYTES_MAX 1024U
