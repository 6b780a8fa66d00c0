/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/id-map.c: the map of 64-bit mount ids (growth, probing, removal by backward shift,
 * iteration, a NULL map). TAP output. */
#include <errno.h>
#include <stdint.h>

#include "id-map.h"
#include "tap.h"

static bool drop_odd(uint64_t key, void *value, void *userdata) {
        return key % 2 == 1;
}

static void test_id_map(void) {
        IdMap *m = id_map_new();
        bool ok = true;
        size_t n = 0;
        uint64_t key;

        /* Sequential ids, as the kernel hands them out: growth and probing. */
        for (uint64_t i = 1; i <= 10000; i++)
                ok = ok && id_map_put(m, (UINT64_C(1) << 31) + i, (void *) (uintptr_t) i) == 0;
        check(ok && id_map_size(m) == 10000, "10000 puts");
        ok = true;
        for (uint64_t i = 1; i <= 10000; i++)
                ok = ok && id_map_get(m, (UINT64_C(1) << 31) + i) == (void *) (uintptr_t) i;
        check(ok, "every key found with its value");
        check(id_map_get(m, 5) == NULL && id_map_get(m, 0) == NULL, "absent keys and 0 are not found");
        check(id_map_put(m, 0, m) == -EINVAL, "0 is not a key");
        check(id_map_put(NULL, 5, m) == -EINVAL && !id_map_get(NULL, 5) && !id_map_remove(NULL, 5) &&
              id_map_size(NULL) == 0 && id_map_remove_if(NULL, drop_odd, NULL) == 0,
              "a NULL map: nothing in it, nothing put");
        check(id_map_put(m, (UINT64_C(1) << 31) + 7, (void *) 99) == 0 && id_map_size(m) == 10000 &&
              id_map_get(m, (UINT64_C(1) << 31) + 7) == (void *) 99, "a put of a present key replaces its value");
        ok = true;
        for (uint64_t i = 1; i <= 10000; i += 3)
                ok = ok && id_map_remove(m, (UINT64_C(1) << 31) + i) != NULL;
        check(ok && id_map_remove(m, (UINT64_C(1) << 31) + 1) == NULL, "removal, and a second removal finds nothing");
        ok = true;
        for (uint64_t i = 1; i <= 10000; i++)
                ok = ok && (id_map_get(m, (UINT64_C(1) << 31) + i) != NULL) == ((i - 1) % 3 != 0);
        check(ok, "after removals (backward shift) every other key is still found");
        size_t before = id_map_size(m), odd = 0;
        for (size_t i = 0; id_map_iterate(m, &i, &key, NULL);) {
                n++;
                odd += key % 2;
        }
        check(n == before, "iteration visits every entry once (%zu of %zu)", n, before);
        check(id_map_remove_if(m, drop_odd, NULL) == odd && id_map_size(m) == before - odd, "remove_if removes what it says");
        ok = true;
        for (uint64_t i = 1; i <= 10000; i++) {
                uint64_t k = (UINT64_C(1) << 31) + i;
                ok = ok && (id_map_get(m, k) != NULL) == ((i - 1) % 3 != 0 && k % 2 == 0);
        }
        check(ok, "after remove_if exactly the even survivors are found");
        id_map_free(m);
}

int main(void) {
        test_id_map();
        return tap_finish();
}
