/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/hashmap.c: growth, iteration, removal, a NULL map. TAP output. */
#include "hashmap.h"
#include "macros.h"
#include "tap.h"

static void test_hashmap(void) {
        Hashmap *h = hashmap_new();
        static char keys[5000][16];
        bool ok = true;

        for (int i = 0; i < 5000; i++) {
                snprintf(keys[i], sizeof keys[i], "user%d", i);
                ok = ok && hashmap_put(h, keys[i], keys[i]) == 0;
        }
        check(ok && hashmap_size(h) == 5000, "5000 puts");
        check(hashmap_put(h, "user7", NULL) == -EEXIST, "duplicate put is -EEXIST");
        ok = true;
        for (int i = 0; i < 5000; i++)
                ok = ok && hashmap_get(h, keys[i]) == keys[i];
        check(ok, "every key found after growing");
        HashmapIterator state = {};
        size_t n = 0;
        void *v;
        while (hashmap_iterate(h, &state, &v, NULL))
                n++;
        check(n == 5000, "iteration visits every entry once");
        check(hashmap_remove(h, "user42") == keys[42] && !hashmap_get(h, "user42") && hashmap_size(h) == 4999, "remove");
        check(hashmap_put(h, NULL, keys[0]) == -EINVAL, "a NULL key is refused, not hashed");
        hashmap_free(h);

        /* A NULL map is an empty one, for put() as for get() and remove(). */
        check(hashmap_put(NULL, "user1", keys[1]) == -EINVAL && !hashmap_get(NULL, "user1") &&
              !hashmap_remove(NULL, "user1") && hashmap_size(NULL) == 0, "a NULL map: nothing in it, nothing put");
}

/* Past 2^17 entries the table has 2^18 buckets and more: an iteration cursor that kept the
 * bucket in the upper half of a 32-bit word (bucket << 16) lost it there. Every entry must be
 * seen once, on any word size. */
static void test_hashmap_large(void) {
        enum { N = (1 << 17) + 4096 };
        _cleanup_free_ char *keys = malloc((size_t) N * 16);
        _cleanup_free_ unsigned char *seen = calloc(N, 1);
        Hashmap *h = hashmap_new();
        bool ok = keys && seen && h;
        size_t n = 0, twice = 0;
        char *v;

        for (int i = 0; ok && i < N; i++) {
                snprintf(keys + (size_t) i * 16, 16, "%d", i);
                ok = hashmap_put(h, keys + (size_t) i * 16, keys + (size_t) i * 16) == 0;
        }
        check(ok && hashmap_size(h) == N, "%d puts", N);
        for (HashmapIterator i = {}; ok && hashmap_iterate(h, &i, (void **) &v, NULL);) {
                size_t k = (size_t) (v - keys) / 16;
                twice += seen[k]++ > 0;
                n++;
        }
        check(n == N && twice == 0, "iteration over %d entries visits each once (%zu visits, %zu twice)", N, n, twice);
        hashmap_free(h);
}

int main(void) {
        test_hashmap();
        test_hashmap_large();
        return tap_finish();
}
