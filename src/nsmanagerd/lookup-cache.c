/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "hashmap.h"
#include "id-map.h"
#include "log.h"
#include "lookup-cache.h"
#include "time-util.h"

typedef struct CacheEntry {
        char *key;
        uint64_t until;          /* CLOCK_MONOTONIC */
        void *request;           /* what was asked */
        void *answer;            /* NULL: failed */
        NsmError error;          /* when failed */
} CacheEntry;

struct LookupCache {
        const LookupType *type;
        ChildSet *children;
        Hashmap *cache;          /* key → CacheEntry */
        Hashmap *pending;        /* key → the Lookup in flight for it */
        IdMap *in_flight;        /* uid_key(caller) → count, as a pointer */
        unsigned users_in_flight; /* all callers' but root's */
};

typedef struct Waiter {
        LookupDone done;
        void *userdata;
} Waiter;

/* One lookup in flight, and every call that asked for the same key meanwhile, charged to the
 * caller who started it. */
typedef struct Lookup {
        LookupCache *cache;
        char *key;
        void *request;
        uid_t caller;
        Waiter *waiters;
        size_t n_waiters;
} Lookup;

static int lookup_add_waiter(Lookup *k, LookupDone done, void *userdata) {
        Waiter *w = reallocarray(k->waiters, k->n_waiters + 1, sizeof(Waiter));

        if (!w)
                return -ENOMEM;
        k->waiters = w;
        k->waiters[k->n_waiters++] = (Waiter) { .done = done, .userdata = userdata };
        return 0;
}

static void lookup_free(Lookup *k) {
        if (!k)
                return;
        free(k->waiters);
        free(k->key);
        k->cache->type->request_free(k->request);
        free(k);
}

static void cache_entry_free(LookupCache *c, CacheEntry *e) {
        if (!e)
                return;
        free(e->key);
        c->type->request_free(e->request);
        if (e->answer)
                c->type->answer_free(e->answer);
        nsm_error_done(&e->error);
        free(e);
}

static void cache_clear(LookupCache *c, bool all) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        CacheEntry **drop = calloc(hashmap_size(c->cache) + 1, sizeof(CacheEntry *));
        CacheEntry *e;
        size_t n = 0;

        if (!drop)
                return;
        for (HashmapIterator i = {}; hashmap_iterate(c->cache, &i, (void **) &e, NULL);)
                if (all || e->until <= now)
                        drop[n++] = e;
        for (size_t i = 0; i < n; i++) {
                hashmap_remove(c->cache, drop[i]->key);
                cache_entry_free(c, drop[i]);
        }
        free(drop);
}

int lookup_cache_new(ChildSet *children, const LookupType *type, LookupCache **ret) {
        LookupCache *c = calloc(1, sizeof(LookupCache));

        if (!c)
                return -ENOMEM;
        *c = (LookupCache) { .type = type, .children = children, .cache = hashmap_new(), .pending = hashmap_new(),
                             .in_flight = id_map_new() };
        if (!c->cache || !c->pending || !c->in_flight) {
                lookup_cache_free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

LookupCache *lookup_cache_free(LookupCache *c) {
        if (!c)
                return NULL;
        if (c->cache)
                cache_clear(c, true);
        hashmap_free(c->cache);
        hashmap_free(c->pending);       /* the lookups themselves end with their children */
        id_map_free(c->in_flight);
        free(c);
        return NULL;
}

static unsigned in_flight(LookupCache *c, uid_t uid) {
        return (unsigned) (uintptr_t) id_map_get(c->in_flight, uid_key(uid));
}

static void charge(LookupCache *c, uid_t uid, int delta) {
        unsigned n = in_flight(c, uid) + delta;

        if (uid != 0)
                c->users_in_flight += delta;
        if (n == 0)
                (void) id_map_remove(c->in_flight, uid_key(uid));
        else
                (void) id_map_put(c->in_flight, uid_key(uid), (void *) (uintptr_t) n);
}

static void cache_put(LookupCache *c, CacheEntry *e) {
        if (hashmap_size(c->cache) >= c->type->cache_max)
                cache_clear(c, false);
        if (hashmap_size(c->cache) >= c->type->cache_max)
                cache_clear(c, true);
        cache_entry_free(c, hashmap_remove(c->cache, e->key));
        if (hashmap_put(c->cache, e->key, e) < 0)
                cache_entry_free(c, e);
}

static void on_lookup_done(const NsmError *error, sd_bus_message *reply, void *userdata) {
        Lookup *k = userdata;
        LookupCache *c = k->cache;
        CacheEntry *e = calloc(1, sizeof(CacheEntry));

        charge(c, k->caller, -1);
        if (hashmap_get(c->pending, k->key) == k)
                (void) hashmap_remove(c->pending, k->key);
        if (e && (e->key = strdup(k->key))) {
                e->until = now_usec(CLOCK_MONOTONIC) + c->type->cache_usec;
                e->request = TAKE_PTR(k->request);
                if (error)
                        (void) nsm_error_copy(&e->error, error);
                else
                        (void) c->type->read_answer(reply, e->request, &e->answer, &e->error);
                cache_put(c, e);
        } else {
                cache_entry_free(c, e);
                log_oom();
        }
        for (size_t i = 0; i < k->n_waiters; i++)
                k->waiters[i].done(k->waiters[i].userdata);
        lookup_free(k);
}

static int append_request(sd_bus_message *m, void *userdata) {
        const Lookup *k = userdata;
        return k->cache->type->append(m, k->request);
}

static CacheEntry *cache_get(LookupCache *c, const char *key) {
        CacheEntry *e = c ? hashmap_get(c->cache, key) : NULL;
        return e && e->until > now_usec(CLOCK_MONOTONIC) ? e : NULL;
}

int lookup_cache_ask(LookupCache *c, const char *key, void *request, uid_t caller, uint64_t deadline,
                     const char *description, const char *what, LookupDone done, void *userdata,
                     const void **ret, NsmError *error) {
        const LookupType *t = c->type;
        CacheEntry *e = cache_get(c, key);
        Lookup *k;
        int r;

        if (e && (!t->serves || t->serves(e->request, e->answer, request))) {
                t->request_free(request);
                if (!e->answer) {
                        r = nsm_error_copy(error, &e->error);
                        return r < 0 ? r : nsm_error_to_errno(&e->error) ?: -EINVAL;
                }
                *ret = e->answer;
                return 1;
        }

        /* Joined: should its answer not serve this call, the call comes back here and asks again. */
        k = hashmap_get(c->pending, key);
        if (k) {
                t->request_free(request);
                r = lookup_add_waiter(k, done, userdata);
                return r < 0 ? nsm_error_set_errnof(error, r, NULL) : 0;
        }

        if (caller != 0 && t->per_uid_max > 0 && in_flight(c, caller) >= t->per_uid_max)
                r = nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "UID %u has %u %s in flight already, the most "
                                   "one caller may; try again when they are answered.", (unsigned) caller,
                                   t->per_uid_max, t->what);
        else if (caller != 0 && c->users_in_flight >= t->users_max)
                r = nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "%u %s are in flight already, the most there "
                                   "may be; try again later.", t->users_max, t->users_what);
        else if (!(k = calloc(1, sizeof(Lookup))))
                r = nsm_error_set_errnof(error, -ENOMEM, NULL);
        else
                r = 0;
        if (r < 0) {
                t->request_free(request);
                return r;
        }
        *k = (Lookup) { .cache = c, .key = strdup(key), .request = request, .caller = caller };
        if (!k->key || lookup_add_waiter(k, done, userdata) < 0) {
                lookup_free(k);
                return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        ChildSpec spec = {
                .description = description,
                .interface = t->interface,
                .method = "LookUp",
                .append = append_request,
                .reply = on_lookup_done,
                .deadline = deadline,
                .owner = caller,
                .userdata = k,
        };
        r = child_start(c->children, &spec);
        if (r < 0) {
                lookup_free(k);
                return nsm_error_set_errnof(error, r, "Failed to start %s: %m", what);
        }
        charge(c, caller, +1);
        (void) hashmap_put(c->pending, k->key, k);     /* without it, later callers look up again */
        return 0;
}

int lookup_cache_peek(LookupCache *c, const char *key, const void **ret) {
        CacheEntry *e = cache_get(c, key);

        if (!e)
                return 0;
        if (ret)
                *ret = e->answer;
        return 1;
}
