/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "bus-util.h"
#include "hashmap.h"
#include "id-map.h"
#include "user-lookup-child.h"
#include "log.h"
#include "parse-util.h"
#include "text-escape.h"
#include "time-util.h"
#include "user-lookup.h"

typedef struct CacheEntry {
        char *key;               /* the name as asked */
        uint64_t until;          /* CLOCK_MONOTONIC */
        UserRecord user;         /* when !failed */
        NsmError error;          /* when failed */
        bool failed;
} CacheEntry;

struct UserLookups {
        ChildSet *children;
        Hashmap *cache;          /* name as asked → CacheEntry */
        Hashmap *pending;        /* name as asked → the Lookup in flight for it */
        IdMap *in_flight;        /* uid_key(caller) → count, as a pointer */
        unsigned users_in_flight; /* all callers' but root's */
};

typedef struct Waiter {
        UserLookupDone done;
        void *userdata;
} Waiter;

/* One lookup in flight, and every call that asked for the same name meanwhile: a burst of calls
 * naming one user is one lookup, charged to the caller who started it. */
typedef struct Lookup {
        UserLookups *lookups;
        char *name;
        uid_t caller;
        Waiter *waiters;
        size_t n_waiters;
} Lookup;

static int lookup_add_waiter(Lookup *k, UserLookupDone done, void *userdata) {
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
        free(k->name);
        free(k);
}

static void cache_entry_free(CacheEntry *e) {
        if (!e)
                return;
        free(e->key);
        user_record_done(&e->user);
        nsm_error_done(&e->error);
        free(e);
}

static void cache_clear(UserLookups *l, bool all) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        CacheEntry **drop = calloc(hashmap_size(l->cache) + 1, sizeof(CacheEntry *));
        CacheEntry *e;
        size_t n = 0;

        if (!drop)
                return;
        for (HashmapIterator i = {}; hashmap_iterate(l->cache, &i, (void **) &e, NULL);)
                if (all || e->until <= now)
                        drop[n++] = e;
        for (size_t i = 0; i < n; i++) {
                hashmap_remove(l->cache, drop[i]->key);
                cache_entry_free(drop[i]);
        }
        free(drop);
}

int user_lookups_new(ChildSet *children, UserLookups **ret) {
        UserLookups *l = calloc(1, sizeof(UserLookups));

        if (!l)
                return -ENOMEM;
        *l = (UserLookups) { .children = children, .cache = hashmap_new(), .pending = hashmap_new(),
                             .in_flight = id_map_new() };
        if (!l->cache || !l->pending || !l->in_flight) {
                user_lookups_free(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

UserLookups *user_lookups_free(UserLookups *l) {
        if (!l)
                return NULL;
        if (l->cache)
                cache_clear(l, true);
        hashmap_free(l->cache);
        hashmap_free(l->pending);       /* the lookups themselves end with their children */
        id_map_free(l->in_flight);
        free(l);
        return NULL;
}

static unsigned in_flight(UserLookups *l, uid_t uid) {
        return (unsigned) (uintptr_t) id_map_get(l->in_flight, uid_key(uid));
}

static int charge(UserLookups *l, uid_t uid, int delta) {
        unsigned n = in_flight(l, uid) + delta;

        if (uid != 0)
                l->users_in_flight += delta;
        if (n == 0) {
                (void) id_map_remove(l->in_flight, uid_key(uid));
                return 0;
        }
        return id_map_put(l->in_flight, uid_key(uid), (void *) (uintptr_t) n);
}

/* ---- the answer ---- */

static int read_answer(sd_bus_message *reply, UserRecord *ret) {
        _cleanup_(user_record_done) UserRecord u = {};
        int r;

        r = bus_message_read_bytes(reply, &u.name);
        if (r >= 0)
                r = sd_bus_message_read(reply, "uu", &u.uid, &u.gid);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &u.home);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &u.shell);
        if (r < 0)
                return r;
        if (u.uid == (uid_t) -1 || u.gid == (gid_t) -1)
                return -EBADMSG;
        *ret = TAKE_STRUCT(u);
        return 0;
}

static void cache_put(UserLookups *l, CacheEntry *e) {
        CacheEntry *old;

        if (hashmap_size(l->cache) >= USER_LOOKUP_CACHE_MAX)
                cache_clear(l, false);
        if (hashmap_size(l->cache) >= USER_LOOKUP_CACHE_MAX)
                cache_clear(l, true);
        old = hashmap_remove(l->cache, e->key);
        cache_entry_free(old);
        if (hashmap_put(l->cache, e->key, e) < 0)
                cache_entry_free(e);
}

static void on_lookup_done(const NsmError *error, sd_bus_message *reply, void *userdata) {
        Lookup *k = userdata;
        UserLookups *l = k->lookups;
        CacheEntry *e = calloc(1, sizeof(CacheEntry));

        (void) charge(l, k->caller, -1);
        if (hashmap_get(l->pending, k->name) == k)
                (void) hashmap_remove(l->pending, k->name);
        if (e && (e->key = strdup(k->name))) {
                e->until = now_usec(CLOCK_MONOTONIC) + USER_LOOKUP_CACHE_USEC;
                if (error) {
                        e->failed = true;
                        (void) nsm_error_copy(&e->error, error);
                } else {
                        int r = read_answer(reply, &e->user);
                        if (r < 0) {
                                e->failed = true;
                                (void) nsm_error_set_errnof(&e->error, r, "Malformed answer of the lookup of a user.");
                        } else if (!valid_user_name(e->user.name)) {
                                _cleanup_free_ char *shown = text_escape(e->user.name);
                                /* Logged: the administrator's directory holds a name we cannot serve. */
                                log_warning("NSS names UID %u '%s', which cannot name a view (a '/', '.' or '..', "
                                            "control characters, invalid UTF-8, or longer than NAME_MAX).",
                                            (unsigned) e->user.uid, shown ?: "?");
                                e->failed = true;
                                (void) nsm_error_setf(&e->error, NSM_ERROR_NO_SUCH_USER,
                                                   "NSS names UID %u '%s', which cannot name a view.",
                                                   (unsigned) e->user.uid, shown ?: "?");
                        }
                }
                cache_put(l, e);
        } else {
                cache_entry_free(e);
                log_oom();
        }
        for (size_t i = 0; i < k->n_waiters; i++)
                k->waiters[i].done(k->waiters[i].userdata);
        lookup_free(k);
}

static int cache_answer(const CacheEntry *e, UserRecord *ret, NsmError *error) {
        if (e->failed) {
                int r = nsm_error_copy(error, &e->error);
                return r < 0 ? r : nsm_error_to_errno(&e->error) ?: -EINVAL;
        }
        *ret = (UserRecord) { .name = strdup(e->user.name), .uid = e->user.uid, .gid = e->user.gid,
                              .home = strdup(e->user.home), .shell = strdup(e->user.shell) };
        if (!ret->name || !ret->home || !ret->shell) {
                user_record_done(ret);
                return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        return 1;
}

static int append_name(sd_bus_message *m, void *userdata) {
        const Lookup *k = userdata;
        return sd_bus_message_append(m, "s", k->name);
}

int user_lookup(UserLookups *l, const char *name, uid_t caller, uint64_t deadline, UserLookupDone done, void *userdata,
                UserRecord *ret, NsmError *error) {
        _cleanup_free_ char *description = NULL;
        CacheEntry *e;
        Lookup *k;
        int r;

        e = hashmap_get(l->cache, name);
        if (e && e->until > now_usec(CLOCK_MONOTONIC))
                return cache_answer(e, ret, error);

        k = hashmap_get(l->pending, name);
        if (k) {
                r = lookup_add_waiter(k, done, userdata);
                return r < 0 ? nsm_error_set_errnof(error, r, NULL) : 0;
        }

        if (caller != 0 && in_flight(l, caller) >= USER_LOOKUPS_PER_UID_MAX)
                return nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "UID %u has %u user lookups in flight already, "
                                      "the most one caller may; try again when they are answered.", (unsigned) caller,
                                      USER_LOOKUPS_PER_UID_MAX);
        if (caller != 0 && l->users_in_flight >= USER_LOOKUPS_USERS_MAX)
                return nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "%u user lookups of callers are in flight "
                                      "already, the most there may be; try again later.", USER_LOOKUPS_USERS_MAX);

        k = calloc(1, sizeof(Lookup));
        if (!k || !(k->name = strdup(name)) || lookup_add_waiter(k, done, userdata) < 0) {
                lookup_free(k);
                return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        k->lookups = l;
        k->caller = caller;
        if (asprintf(&description, "Looking up a user for UID %u", (unsigned) caller) < 0)
                description = NULL;
        ChildSpec spec = {
                .description = description,
                .interface = &user_lookup_interface,
                .method = "LookUp",
                .append = append_name,
                .reply = on_lookup_done,
                .deadline = deadline,
                .owner = caller,
                .userdata = k,
        };
        r = child_start(l->children, &spec);
        if (r < 0) {
                lookup_free(k);
                return nsm_error_set_errnof(error, r, "Failed to start looking up a user: %m");
        }
        (void) charge(l, caller, +1);
        (void) hashmap_put(l->pending, k->name, k);     /* without it, later callers look up again */
        return 0;
}

int user_lookup_cached(UserLookups *l, const char *name, UserRecord *ret) {
        CacheEntry *e = l ? hashmap_get(l->cache, name) : NULL;

        if (!e || e->failed || e->until <= now_usec(CLOCK_MONOTONIC))
                return 0;
        return cache_answer(e, ret, NULL) < 0 ? 0 : 1;
}

bool user_lookup_answered(UserLookups *l, const char *name) {
        CacheEntry *e = l ? hashmap_get(l->cache, name) : NULL;

        return e && e->until > now_usec(CLOCK_MONOTONIC);
}
