/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-util.h"
#include "group-lookup-child.h"
#include "group-lookup.h"
#include "hashmap.h"
#include "log.h"
#include "strv.h"
#include "time-util.h"

/* Far above any site's: an answer longer than this is no answer (NGROUPS_MAX is 65536). */
#define GROUPS_MAX 65536U

typedef struct CacheEntry {
        char *key;               /* the uid, in decimal */
        char *name;              /* the name and primary gid the groups were asked for */
        gid_t gid;
        uint64_t until;          /* CLOCK_MONOTONIC */
        gid_t *groups;           /* when !failed */
        size_t n_groups;
        char **names;            /* when !failed and names were asked for */
        char *primary_name;      /* the same, the primary group's (NULL: it has none) */
        bool with_names;
        NsmError error;          /* when failed */
        bool failed;
} CacheEntry;

typedef struct Waiter {
        GroupLookupDone done;
        void *userdata;
} Waiter;

typedef struct Lookup {
        GroupLookups *lookups;
        char *key, *name;
        uid_t uid, caller;
        gid_t gid;
        bool with_names;
        Waiter *waiters;
        size_t n_waiters;
} Lookup;

struct GroupLookups {
        ChildSet *children;
        Hashmap *cache;          /* uid → CacheEntry */
        Hashmap *pending;        /* uid → the Lookup in flight for it */
        unsigned users_in_flight; /* all but root's */
};

static void cache_entry_free(CacheEntry *e) {
        if (!e)
                return;
        free(e->key);
        free(e->name);
        free(e->groups);
        strv_free(e->names);
        free(e->primary_name);
        nsm_error_done(&e->error);
        free(e);
}

static void lookup_free(Lookup *k) {
        if (!k)
                return;
        free(k->waiters);
        free(k->key);
        free(k->name);
        free(k);
}

static int lookup_add_waiter(Lookup *k, GroupLookupDone done, void *userdata) {
        Waiter *w = reallocarray(k->waiters, k->n_waiters + 1, sizeof(Waiter));

        if (!w)
                return -ENOMEM;
        k->waiters = w;
        k->waiters[k->n_waiters++] = (Waiter) { .done = done, .userdata = userdata };
        return 0;
}

static void cache_clear(GroupLookups *l, bool all) {
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

int group_lookups_new(ChildSet *children, GroupLookups **ret) {
        GroupLookups *l = calloc(1, sizeof(GroupLookups));

        if (!l)
                return -ENOMEM;
        *l = (GroupLookups) { .children = children, .cache = hashmap_new(), .pending = hashmap_new() };
        if (!l->cache || !l->pending) {
                group_lookups_free(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

GroupLookups *group_lookups_free(GroupLookups *l) {
        if (!l)
                return NULL;
        if (l->cache)
                cache_clear(l, true);
        hashmap_free(l->cache);
        hashmap_free(l->pending);       /* the lookups themselves end with their children */
        free(l);
        return NULL;
}

/* ---- the answer ---- */

static int read_answer(sd_bus_message *reply, CacheEntry *e) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *primary = NULL, *name = NULL;
        const void *gids;
        size_t size;
        int r;

        r = sd_bus_message_read_array(reply, 'u', &gids, &size);
        if (r < 0)
                return r;
        /* The primary gid first, as the child was asked: what she acts as must be hers. */
        if (size == 0 || size / sizeof(gid_t) > GROUPS_MAX || ((const gid_t *) gids)[0] != e->gid)
                return -EBADMSG;
        for (size_t i = 0; i < size / sizeof(gid_t); i++)
                if (((const gid_t *) gids)[i] == (gid_t) -1)
                        return -EBADMSG;
        r = bus_message_read_bytes_strv(reply, &names);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &primary);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &name);
        if (r < 0)
                return r;
        /* The name the child asked by: NSS's for the uid now, which after a rename in the
         * directory is not the one her view keeps; the groups are her uid's either way. */
        if (!*name)
                return -EBADMSG;
        if (strv_length(names) > GROUPS_MAX || (!e->with_names && (strv_length(names) > 0 || *primary)))
                return -EBADMSG;
        e->groups = memdup(gids, size);
        if (!e->groups)
                return -ENOMEM;
        e->n_groups = size / sizeof(gid_t);
        if (e->with_names) {
                e->names = names ? TAKE_PTR(names) : calloc(1, sizeof(char *));
                if (!e->names)
                        return -ENOMEM;
                if (*primary)
                        e->primary_name = TAKE_PTR(primary);
        }
        return 0;
}

static void on_lookup_done(const NsmError *error, sd_bus_message *reply, void *userdata) {
        Lookup *k = userdata;
        GroupLookups *l = k->lookups;
        CacheEntry *e = calloc(1, sizeof(CacheEntry));
        int r;

        if (k->caller != 0)
                l->users_in_flight--;
        if (hashmap_get(l->pending, k->key) == k)
                (void) hashmap_remove(l->pending, k->key);
        if (e && (e->key = strdup(k->key)) && (e->name = strdup(k->name))) {
                e->gid = k->gid;
                e->with_names = k->with_names;
                e->until = now_usec(CLOCK_MONOTONIC) + GROUP_LOOKUP_CACHE_USEC;
                if (error) {
                        e->failed = true;
                        (void) nsm_error_copy(&e->error, error);
                } else if ((r = read_answer(reply, e)) < 0) {
                        e->failed = true;
                        (void) nsm_error_set_errnof(&e->error, r, "Malformed answer of the lookup of the groups of "
                                                    "UID %u.", (unsigned) k->uid);
                }
                if (hashmap_size(l->cache) >= GROUP_LOOKUP_CACHE_MAX)
                        cache_clear(l, false);
                if (hashmap_size(l->cache) >= GROUP_LOOKUP_CACHE_MAX)
                        cache_clear(l, true);
                cache_entry_free(hashmap_remove(l->cache, e->key));
                if (hashmap_put(l->cache, e->key, e) < 0)
                        cache_entry_free(e);
        } else {
                cache_entry_free(e);
                log_oom();
        }
        for (size_t i = 0; i < k->n_waiters; i++)
                k->waiters[i].done(k->waiters[i].userdata);
        lookup_free(k);
}

static int cache_answer(const CacheEntry *e, uid_t uid, Credentials *ret, char ***ret_names, char **ret_primary,
                        NsmError *error) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *primary = NULL;

        if (e->failed) {
                int r = nsm_error_copy(error, &e->error);
                return r < 0 ? r : nsm_error_to_errno(&e->error) ?: -EINVAL;
        }
        if (ret_names) {
                names = calloc(1, sizeof(char *));
                for (char **n = e->names; names && n && *n; n++)
                        if (strv_extend(&names, *n) < 0)
                                names = strv_free(names);
                if (!names)
                        return nsm_error_set_errnof(error, -ENOMEM, NULL);
                if (e->primary_name && !(primary = strdup(e->primary_name)))
                        return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        if (ret) {
                *ret = (Credentials) { .uid = uid, .gid = e->gid, .groups = memdup(e->groups, e->n_groups * sizeof(gid_t)),
                                       .n_groups = e->n_groups };
                if (!ret->groups)
                        return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        if (ret_names) {
                *ret_names = TAKE_PTR(names);
                if (ret_primary)
                        *ret_primary = TAKE_PTR(primary);
        }
        return 1;
}

static int append_request(sd_bus_message *m, void *userdata) {
        const Lookup *k = userdata;

        return sd_bus_message_append(m, "uub", (uint32_t) k->uid, (uint32_t) k->gid, (int) k->with_names);
}

int group_lookup(GroupLookups *l, const UserRecord *u, uid_t caller, uint64_t deadline, GroupLookupDone done,
                 void *userdata, Credentials *ret, char ***ret_names, char **ret_primary, NsmError *error) {
        _cleanup_free_ char *description = NULL;
        char key[16];
        CacheEntry *e;
        Lookup *k;
        int r;

        snprintf(key, sizeof key, "%" PRIu32, (uint32_t) u->uid);
        e = hashmap_get(l->cache, key);
        if (e && e->until > now_usec(CLOCK_MONOTONIC) && e->gid == u->gid && streq(e->name, u->name) &&
            (e->failed || e->with_names || !ret_names))
                return cache_answer(e, u->uid, ret, ret_names, ret_primary, error);

        /* Joined: should it be one without the names, the call comes back here and asks again. */
        k = hashmap_get(l->pending, key);
        if (k) {
                r = lookup_add_waiter(k, done, userdata);
                return r < 0 ? nsm_error_set_errnof(error, r, NULL) : 0;
        }
        if (caller != 0 && l->users_in_flight >= GROUP_LOOKUPS_USERS_MAX)
                return nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "%u lookups of callers' groups are in flight "
                                      "already, the most there may be; try again later.", GROUP_LOOKUPS_USERS_MAX);

        k = calloc(1, sizeof(Lookup));
        if (!k || !(k->key = strdup(key)) || !(k->name = strdup(u->name)) || lookup_add_waiter(k, done, userdata) < 0) {
                lookup_free(k);
                return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        k->lookups = l;
        k->uid = u->uid;
        k->gid = u->gid;
        k->caller = caller;
        k->with_names = ret_names;
        if (asprintf(&description, "Looking up the groups of UID %u", (unsigned) u->uid) < 0)
                description = NULL;
        ChildSpec spec = {
                .description = description,
                .interface = &group_lookup_interface,
                .method = "LookUp",
                .append = append_request,
                .reply = on_lookup_done,
                .deadline = deadline,
                .owner = caller,
                .userdata = k,
        };
        r = child_start(l->children, &spec);
        if (r < 0) {
                lookup_free(k);
                return nsm_error_set_errnof(error, r, "Failed to start looking up the groups of UID %u: %m",
                                            (unsigned) u->uid);
        }
        if (caller != 0)
                l->users_in_flight++;
        (void) hashmap_put(l->pending, k->key, k);     /* without it, her next call looks up again */
        return 0;
}
