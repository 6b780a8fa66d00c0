/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A hash table from 64-bit ids (mount ids) to pointers: open addressing with linear probing,
 * removal by backward shift (no tombstones). Key 0 is not a valid key. A NULL map is an empty
 * one, as for hashmap.h: nothing is in it, and nothing can be put into it (-EINVAL). */
typedef struct IdMap IdMap;

IdMap *id_map_new(void);
IdMap *id_map_free(IdMap *m);
/* Sets key's value (replacing an earlier one). */
int id_map_put(IdMap *m, uint64_t key, void *value);
void *id_map_get(const IdMap *m, uint64_t key);
/* The value that was there, or NULL. */
void *id_map_remove(IdMap *m, uint64_t key);
size_t id_map_size(const IdMap *m);
/* Removes every entry for which 'drop' says true; returns how many. */
size_t id_map_remove_if(IdMap *m, bool (*drop)(uint64_t key, void *value, void *userdata), void *userdata);
/* Iteration: *state starts at 0; false at the end. Do not change the map while iterating. */
bool id_map_iterate(const IdMap *m, size_t *state, uint64_t *ret_key, void **ret_value);

/* A uid as the key of an IdMap: 0 is no key there, and uid 0 is root's. */
static inline uint64_t uid_key(uid_t uid) {
        return (uint64_t) uid + 1;
}
