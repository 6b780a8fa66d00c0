/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/mount-util.c: mount ids, the mount table read two ways, the cache of it, and the
 * names of propagation modes. TAP output. */
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>

#include "macros.h"
#include "mount-entry.h"
#include "mount-util.h"
#include "tap.h"

/* The names of the propagation modes (MountPropagation()), both ways. */
static void test_propagation_mode_table(void) {
        for (int i = 0; i < _PROPAGATION_MODE_MAX; i++)
                check(propagation_mode_from_string(propagation_mode_to_string(i)) == (PropagationMode) i,
                      "propagation mode %d round-trips", i);
        check(propagation_mode_from_string("rshared") == _PROPAGATION_MODE_INVALID, "'rshared' is not a mode");
        check(propagation_mode_to_string(_PROPAGATION_MODE_MAX) == NULL, "out-of-range mode has no name");
}

static void test_mount_ids(void) {
        MountId a = { .unique = 0x10000001, .old = 40 }, b = { .unique = 0x10000002, .old = 40 }, c = { .old = 40 };
        check(!mount_id_equal(a, b), "unique ids decide where both have one (old ids are reused)");
        check(mount_id_equal(a, c) && mount_id_equal(c, b), "old ids where one side has no unique id");
        check(!mount_id_equal((MountId) {}, (MountId) {}), "no id equals nothing");
        check(mount_id_in(b, (MountId[]) { a, b }, 2) && !mount_id_in(b, &a, 1), "mount_id_in");
}

/* statmount(2) and /proc/self/mountinfo must tell the same story (the fallback is the
 * reference: it is what findmnt reads). */
static void test_mount_info(void) {
        static const char *paths[] = { "/", "/proc", "/sys", "/dev" };
        MountEntry *e = NULL;
        size_t n = 0;

        if (mount_table_read_self(&e, &n) < 0) {
                check(false, "read /proc/self/mountinfo");
                return;
        }
        for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
                MountInfo mi, parent;
                uint64_t id;
                /* A path whose id cannot be had fails the test: skipping it would let every
                 * path be skipped, and the test pass without one comparison. */
                if (fd_get_mount_id(AT_FDCWD, paths[k], &id) < 0) {
                        check(false, "fd_get_mount_id('%s')", paths[k]);
                        continue;
                }
                bool found = false, same = false;
                int r = mount_info_get(AT_FDCWD, paths[k], &mi, &parent);
                for (size_t i = 0; i < n; i++)
                        if (e[i].id == id) {
                                found = true;
                                same = r == 0 && mi.id == e[i].id && mi.parent_id == e[i].parent_id &&
                                       mi.peer_group == e[i].peer_group && mi.master_group == e[i].master_group &&
                                       !!(mi.propagation & MS_SHARED) == !!e[i].peer_group;
                        }
                check(found && same, "mount_info_get('%s') agrees with mountinfo", paths[k]);
        }
        mount_entries_free(e, n);
}

static void test_mount_table_below(void) {
        /* 1 is the root; 2 and 5 on it; 3 on 2, 4 on 3. Listed out of order, as a moved mount is. */
        const MountEntry t[] = { { .id = 4, .parent_id = 3 }, { .id = 1, .parent_id = 1 }, { .id = 2, .parent_id = 1 },
                                 { .id = 3, .parent_id = 2 }, { .id = 5, .parent_id = 1 } };
        const uint64_t tops[] = { 2 }, none[] = { 0 };
        bool below[ELEMENTSOF(t)];

        check(mount_table_mark_below(t, ELEMENTSOF(t), tops, 1, below) == 3 && below[0] && !below[1] && below[2] &&
              below[3] && !below[4], "mount_table_mark_below: a top and every mount below it, however deep");
        check(mount_table_mark_below(t, ELEMENTSOF(t), none, 0, below) == 0 && !below[0] && !below[2],
              "mount_table_mark_below: no tops, nothing below");
        check(mount_table_count_below(t, ELEMENTSOF(t), tops, 1) == 3, "mount_table_count_below counts the same");
}

static bool has_target(const MountTableCache *c, const char *target) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->table[i].target, target))
                        return true;
        return false;
}

/* In a mount namespace of the test's own, everything private: nothing reaches the host. */
static void test_mount_table_cache(void) {
        MountTableCache c = MOUNT_TABLE_CACHE_INIT;
        char dir[] = "/tmp/test-mount-util-mtc-XXXXXX";
        const MountEntry *first;
        size_t n;

        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                tap_skip("the mount table cache: needs root to mount in a namespace of its own");
                return;
        }
        check(mount_table_cache_refresh(&c) == 0 && c.n > 0, "mount_table_cache: read at first");
        first = c.table;
        n = c.n;
        check(mount_table_cache_refresh(&c) == 0 && c.table == first && c.n == n,
              "mount_table_cache: not read again while nothing changed");
        check(mkdtemp(dir) != NULL && mount("tmpfs", dir, "tmpfs", 0, NULL) == 0, "a tmpfs mounted");
        check(mount_table_cache_refresh(&c) == 0 && c.n == n + 1 && has_target(&c, dir),
              "mount_table_cache: read again after a mount, which is in it");
        first = c.table;
        check(mount_table_cache_refresh(&c) == 0 && c.table == first, "mount_table_cache: and then not again");
        check(umount2(dir, MNT_DETACH) == 0, "the tmpfs unmounted");
        check(mount_table_cache_refresh(&c) == 0 && c.n == n && !has_target(&c, dir),
              "mount_table_cache: read again after the unmount, which it shows");
        (void) rmdir(dir);
        mount_table_cache_done(&c);
        check(c.fd < 0 && !c.table, "mount_table_cache_done: closed and emptied");
}

int main(void) {
        test_propagation_mode_table();
        test_mount_ids();
        test_mount_info();
        test_mount_table_below();
        test_mount_table_cache();   /* last: it moves the test into a mount namespace of its own */
        return tap_finish();
}
