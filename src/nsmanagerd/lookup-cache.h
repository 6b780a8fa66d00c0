/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "child.h"
#include "nsm-error.h"

/* What the NSS lookups (user-lookup.h, group-lookup.h) share: never on the event loop, each runs
 * in a killable child (child.h) per key with the call's deadline, charged to the caller (at most
 * per_uid_max of a uid's and users_max of all callers' but root's together in flight; root's,
 * the logins', are never refused). Every answer, a failure too, is kept cache_usec, so that the
 * call it was made for finds it when it runs again; a key asked again while its lookup is in
 * flight waits for that lookup (a burst of calls for one key is one lookup). */

typedef struct LookupType {
        const ChildInterface *interface; /* its method LookUp */
        int (*append)(sd_bus_message *call, const void *request);
        /* The child's answer to 'request': 0 with *ret, or < 0 with 'error' set. */
        int (*read_answer)(sd_bus_message *reply, const void *request, void **ret, NsmError *error);
        /* Whether what was cached for 'cached' ('answer' NULL: a failure) answers 'request'; NULL: yes. */
        bool (*serves)(const void *cached, const void *answer, const void *request);
        void (*request_free)(void *request);
        void (*answer_free)(void *answer);
        unsigned per_uid_max;            /* 0: none */
        unsigned users_max;
        const char *what;                /* "user lookups", for LimitExceeded */
        const char *users_what;          /* "user lookups of callers" */
        uint64_t cache_usec;
        unsigned cache_max;
} LookupType;

typedef struct LookupCache LookupCache;

/* Called once, from the event loop, when the lookup ended (its answer is cached). */
typedef void (*LookupDone)(void *userdata);

int lookup_cache_new(ChildSet *children, const LookupType *type, LookupCache **ret);
/* After the children were freed: their answers are in. */
LookupCache *lookup_cache_free(LookupCache *c);

/* 'request' (taken, always) under 'key'. 1: the answer is cached: *ret (the cache's, until the
 * event loop runs again), or the failure is in 'error' and the return value is negative. 0: a
 * child asks, or the call joins the lookup in flight for 'key': 'done' follows. < 0 with 'error'
 * set: no lookup (LimitExceeded). 'description' is the child's, for the log; 'what' names it in
 * the error when it cannot start ("looking up a user"). */
int lookup_cache_ask(LookupCache *c, const char *key, void *request, uid_t caller, uint64_t deadline,
                     const char *description, const char *what, LookupDone done, void *userdata,
                     const void **ret, NsmError *error);

/* 0: nothing fresh is cached for 'key'; 1: an answer is, *ret (unless NULL) is it, NULL for a
 * failure. No child, no NSS. */
int lookup_cache_peek(LookupCache *c, const char *key, const void **ret);
