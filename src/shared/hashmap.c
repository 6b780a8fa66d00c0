/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>

#include "hashmap.h"
#include "macros.h"

typedef struct Entry {
        const char *key;
        void *value;
        struct Entry *next;
} Entry;

struct Hashmap {
        Entry **buckets;
        size_t n_buckets;
        size_t size;
};

static uint64_t hash_string(const char *s) {
        /* FNV-1a: keys are user names and decimal uids, not attacker-chosen in bulk. */
        uint64_t h = UINT64_C(14695981039346656037);
        for (; *s; s++) {
                h ^= (unsigned char) *s;
                h *= UINT64_C(1099511628211);
        }
        return h;
}

Hashmap *hashmap_new(void) {
        Hashmap *h = calloc(1, sizeof(Hashmap));
        if (!h)
                return NULL;
        h->n_buckets = 64;
        h->buckets = calloc(h->n_buckets, sizeof(Entry *));
        if (!h->buckets) {
                free(h);
                return NULL;
        }
        return h;
}

Hashmap *hashmap_free(Hashmap *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < h->n_buckets; i++)
                for (Entry *e = h->buckets[i], *n; e; e = n) {
                        n = e->next;
                        free(e);
                }
        free(h->buckets);
        free(h);
        return NULL;
}

static int hashmap_grow(Hashmap *h) {
        size_t n = h->n_buckets * 4;
        Entry **b = calloc(n, sizeof(Entry *));
        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_buckets; i++)
                for (Entry *e = h->buckets[i], *next; e; e = next) {
                        next = e->next;
                        size_t k = hash_string(e->key) % n;
                        e->next = b[k];
                        b[k] = e;
                }
        free(h->buckets);
        h->buckets = b;
        h->n_buckets = n;
        return 0;
}

int hashmap_put(Hashmap *h, const char *key, void *value) {
        if (!h || !key)
                return -EINVAL;
        if (hashmap_get(h, key))
                return -EEXIST;
        if (h->size >= h->n_buckets * 2)
                (void) hashmap_grow(h); /* a full table only gets slower */

        Entry *e = malloc(sizeof(Entry));
        if (!e)
                return -ENOMEM;
        size_t k = hash_string(key) % h->n_buckets;
        *e = (Entry) { .key = key, .value = value, .next = h->buckets[k] };
        h->buckets[k] = e;
        h->size++;
        return 0;
}

void *hashmap_get(Hashmap *h, const char *key) {
        if (!h || !key)
                return NULL;
        for (Entry *e = h->buckets[hash_string(key) % h->n_buckets]; e; e = e->next)
                if (streq(e->key, key))
                        return e->value;
        return NULL;
}

void *hashmap_remove(Hashmap *h, const char *key) {
        if (!h || !key)
                return NULL;
        for (Entry **p = &h->buckets[hash_string(key) % h->n_buckets]; *p; p = &(*p)->next)
                if (streq((*p)->key, key)) {
                        Entry *e = *p;
                        void *v = e->value;
                        *p = e->next;
                        free(e);
                        h->size--;
                        return v;
                }
        return NULL;
}

size_t hashmap_size(Hashmap *h) {
        return h ? h->size : 0;
}

bool hashmap_iterate(Hashmap *h, HashmapIterator *i, void **ret_value, const char **ret_key) {
        if (!h)
                return false;
        /* Chains stay short: walking to the position again is cheaper than keeping a pointer
         * that a removal could leave dangling. */
        for (; i->bucket < h->n_buckets; i->bucket++, i->position = 0) {
                Entry *e = h->buckets[i->bucket];
                for (size_t k = 0; e && k < i->position; k++)
                        e = e->next;
                if (e) {
                        if (ret_value)
                                *ret_value = e->value;
                        if (ret_key)
                                *ret_key = e->key;
                        i->position++;
                        return true;
                }
        }
        return false;
}
