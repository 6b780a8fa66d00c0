/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A small chained hash table with string keys. Keys are not copied: the value's owner keeps
 * them alive for as long as the entry exists. */
typedef struct Hashmap Hashmap;

Hashmap *hashmap_new(void);
Hashmap *hashmap_free(Hashmap *h);
int hashmap_put(Hashmap *h, const char *key, void *value);  /* -EEXIST if present */
void *hashmap_get(Hashmap *h, const char *key);
void *hashmap_remove(Hashmap *h, const char *key);
size_t hashmap_size(Hashmap *h);
/* Iteration: *state starts at 0; returns false at the end. Do not change the map while
 * iterating: collect first, then remove. */
bool hashmap_iterate(Hashmap *h, size_t *state, void **ret_value, const char **ret_key);
