/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "id-map.h"

typedef struct IdMapEntry {
        uint64_t key;            /* 0: empty */
        void *value;
} IdMapEntry;

struct IdMap {
        IdMapEntry *entries;
        size_t n_buckets;        /* a power of two, or 0 */
        size_t n;
};

IdMap *id_map_new(void) {
        return calloc(1, sizeof(IdMap));
}

IdMap *id_map_free(IdMap *m) {
        if (!m)
                return NULL;
        free(m->entries);
        free(m);
        return NULL;
}

/* Mount ids are handed out in sequence: mix them so that neighbours spread. */
static size_t bucket_of(const IdMap *m, uint64_t key) {
        key ^= key >> 33;
        key *= UINT64_C(0xff51afd7ed558ccd);
        key ^= key >> 33;
        return (size_t) key & (m->n_buckets - 1);
}

static int id_map_grow(IdMap *m) {
        size_t n = m->n_buckets ? m->n_buckets * 2 : 64;
        IdMapEntry *old = m->entries;
        size_t old_n = m->n_buckets;

        m->entries = calloc(n, sizeof(IdMapEntry));
        if (!m->entries) {
                m->entries = old;
                return -ENOMEM;
        }
        m->n_buckets = n;
        for (size_t i = 0; i < old_n; i++)
                if (old[i].key != 0) {
                        size_t b = bucket_of(m, old[i].key);
                        while (m->entries[b].key != 0)
                                b = (b + 1) & (n - 1);
                        m->entries[b] = old[i];
                }
        free(old);
        return 0;
}

int id_map_put(IdMap *m, uint64_t key, void *value) {
        size_t b;

        if (!m || key == 0)
                return -EINVAL;
        /* At most three quarters full: probes stay short. */
        if ((m->n + 1) * 4 > m->n_buckets * 3) {
                int r = id_map_grow(m);
                if (r < 0)
                        return r;
        }
        for (b = bucket_of(m, key); m->entries[b].key != 0; b = (b + 1) & (m->n_buckets - 1))
                if (m->entries[b].key == key) {
                        m->entries[b].value = value;
                        return 0;
                }
        m->entries[b] = (IdMapEntry) { .key = key, .value = value };
        m->n++;
        return 0;
}

static IdMapEntry *find(const IdMap *m, uint64_t key) {
        if (!m || m->n == 0 || key == 0)
                return NULL;
        for (size_t b = bucket_of(m, key); m->entries[b].key != 0; b = (b + 1) & (m->n_buckets - 1))
                if (m->entries[b].key == key)
                        return m->entries + b;
        return NULL;
}

void *id_map_get(const IdMap *m, uint64_t key) {
        IdMapEntry *e = find(m, key);
        return e ? e->value : NULL;
}

/* Empties bucket 'hole' and moves back the entries of the run after it that would no longer
 * be found past the hole. */
static void remove_at(IdMap *m, size_t hole) {
        size_t mask = m->n_buckets - 1;

        m->entries[hole] = (IdMapEntry) {};
        m->n--;
        for (size_t i = (hole + 1) & mask; m->entries[i].key != 0; i = (i + 1) & mask) {
                size_t home = bucket_of(m, m->entries[i].key);
                /* Does 'home' lie cyclically in (hole, i]? Then the entry stays. */
                bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
                if (stays)
                        continue;
                m->entries[hole] = m->entries[i];
                m->entries[i] = (IdMapEntry) {};
                hole = i;
        }
}

void *id_map_remove(IdMap *m, uint64_t key) {
        IdMapEntry *e = find(m, key);
        void *v;

        if (!e)
                return NULL;
        v = e->value;
        remove_at(m, (size_t) (e - m->entries));
        return v;
}

size_t id_map_size(const IdMap *m) {
        return m ? m->n : 0;
}

size_t id_map_remove_if(IdMap *m, bool (*drop)(uint64_t key, void *value, void *userdata), void *userdata) {
        size_t removed = 0;

        /* Backward shifts move entries into buckets already looked at: look again until a
         * whole pass removes nothing. Each pass is O(buckets); a sweep rarely needs two. */
        for (bool again = true; again && m && m->n > 0;) {
                again = false;
                for (size_t i = 0; i < m->n_buckets; i++)
                        while (m->entries[i].key != 0 && drop(m->entries[i].key, m->entries[i].value, userdata)) {
                                remove_at(m, i);
                                removed++;
                                again = true;
                        }
        }
        return removed;
}

bool id_map_iterate(const IdMap *m, size_t *state, uint64_t *ret_key, void **ret_value) {
        for (; m && *state < m->n_buckets; (*state)++)
                if (m->entries[*state].key != 0) {
                        if (ret_key)
                                *ret_key = m->entries[*state].key;
                        if (ret_value)
                                *ret_value = m->entries[*state].value;
                        (*state)++;
                        return true;
                }
        return false;
}
