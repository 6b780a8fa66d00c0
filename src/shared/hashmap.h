/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A small chained hash table with string keys. Keys are not copied: the value's owner keeps
 * them alive for as long as the entry exists. A NULL map is an empty one: nothing is in it,
 * and nothing can be put into it (-EINVAL). */
typedef struct Hashmap Hashmap;

Hashmap *hashmap_new(void);
Hashmap *hashmap_free(Hashmap *h);
int hashmap_put(Hashmap *h, const char *key, void *value);  /* -EEXIST if present */
void *hashmap_get(Hashmap *h, const char *key);
void *hashmap_remove(Hashmap *h, const char *key);
size_t hashmap_size(Hashmap *h);

/* Where an iteration is: a bucket and a place in its chain, each as wide as the table can be. */
typedef struct HashmapIterator {
        size_t bucket;
        size_t position;
} HashmapIterator;

/* Iteration: *i starts zeroed ((HashmapIterator) {}); returns false at the end. Do not change
 * the map while iterating: collect first, then remove. */
bool hashmap_iterate(Hashmap *h, HashmapIterator *i, void **ret_value, const char **ret_key);
