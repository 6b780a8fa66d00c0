/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "macros.h"
#include "mount-entry.h"

/* Syscalls and libmount only: no bus types here, nothing logs above debug. */

typedef enum PropagationMode {
        PROPAGATION_SHARED,
        PROPAGATION_SLAVE,
        PROPAGATION_PRIVATE,
        PROPAGATION_UNBINDABLE,
        _PROPAGATION_MODE_MAX,
        _PROPAGATION_MODE_INVALID = -EINVAL,
} PropagationMode;

const char *propagation_mode_to_string(PropagationMode m) _pure_;
PropagationMode propagation_mode_from_string(const char *s) _pure_;
unsigned long propagation_mode_to_ms_flag(PropagationMode m) _pure_;

/* ViewPropagation=: how a view follows the host (nsmanagerd.conf(5)). Here rather than with the
 * rest of the configuration, as the view builder, which knows no configuration, builds by it. */
typedef enum ViewPropagation {
        VIEW_PROPAGATION_SLAVE,
        VIEW_PROPAGATION_PRIVATE,
        VIEW_PROPAGATION_SHARED,
        _VIEW_PROPAGATION_MAX,
        _VIEW_PROPAGATION_INVALID = -EINVAL,
} ViewPropagation;

const char *view_propagation_to_string(ViewPropagation p) _pure_;
ViewPropagation view_propagation_from_string(const char *s) _pure_;

/* Parses a mountinfo stream (libmount). */
int mount_table_read(FILE *f, MountEntry **ret, size_t *ret_n);
int mount_table_read_self(MountEntry **ret, size_t *ret_n);

/* A mount, as the daemon records it: the 64-bit id the kernel never reuses (statx
 * STATX_MNT_ID_UNIQUE, Linux ≥ 6.8) and the id /proc/PID/mountinfo shows, which is reused once
 * the mount is gone. Where the kernel has no unique id, 'unique' holds a fingerprint instead
 * (MOUNT_ID_FINGERPRINT set): what mountinfo says the mount is, so that another mount that got
 * the reused id does not pass for a recorded one. 0: unknown (a record of an older version).
 * Records are compared by the unique id where both sides have one (by fingerprint and old id
 * together for fingerprints), else by the old id. */
typedef struct MountId {
        uint64_t unique;
        uint64_t old;
} MountId;

/* Kernel unique ids start at 2^31 (above every mountinfo id) and count up: they never reach
 * the fingerprint's bit. */
#define MOUNT_ID_UNIQUE_MIN (UINT64_C(1) << 31)
#define MOUNT_ID_FINGERPRINT (UINT64_C(1) << 63)

/* A hash of a mount's device, its root inside the file system and its mount point, tagged
 * MOUNT_ID_FINGERPRINT. */
uint64_t mount_id_fingerprint(uint64_t dev, const char *root, const char *target) _pure_;
/* Whether the kernel gives unique mount ids (Linux 6.8). */
bool mount_ids_unique(void);

/* Whether 'id' (a mount id, either kind) is one of ids[0..n). */
bool mount_ids_contain(const uint64_t *ids, size_t n, uint64_t id);

int fd_get_mount_ids(int dirfd, const char *path, MountId *ret);
bool mount_id_equal(MountId a, MountId b);
/* Two lists of records, field for field (not mount_id_equal()'s matching): for round trips. */
static inline bool mount_id_lists_identical(const MountId *a, size_t n_a, const MountId *b, size_t n_b) {
        if (n_a != n_b)
                return false;
        for (size_t i = 0; i < n_a; i++)
                if (a[i].unique != b[i].unique || a[i].old != b[i].old)
                        return false;
        return true;
}
bool mount_id_in(MountId id, const MountId *list, size_t n);
/* The mount 'top' and every mount below it in this namespace (from /proc/self/mountinfo: old
 * ids, and fingerprints where the kernel has no unique ids). */
int mount_subtree_ids(MountId top, MountId **ret, size_t *ret_n);
/* 1 if the mount with this unique id is mounted in the mount namespace with id 'mntns_id'
 * (NS_GET_MNTNS_ID), 0 if not, -EOPNOTSUPP where statmount(2) is missing or filtered. */
int mount_is_mounted_in(uint64_t unique_id, uint64_t mntns_id);
/* 1 if the recorded mount 'id' is mounted in this namespace, 0 if it is gone (its id may be
 * another mount's now), -EOPNOTSUPP where that cannot be told (no unique id, no fingerprint,
 * statmount(2) filtered). */
int mount_id_is_mounted(MountId id);
/* The number of mounts of the namespace 'mntns_id' (listmount(2), no child, no setns), or
 * -EOPNOTSUPP where listmount(2) is missing, filtered, or cannot see that namespace (6.18 finds
 * only namespaces a process is in). mntns_id 0: our own (mountinfo where listmount fails). */
int mntns_count_mounts(uint64_t mntns_id, size_t *ret_n);

#ifndef MOVE_MOUNT_BENEATH
#define MOVE_MOUNT_BENEATH 0x00000200   /* Linux 6.5 */
#endif
/* Whether move_mount(2) knows MOVE_MOUNT_BENEATH (asked once, of the kernel). */
bool mount_beneath_supported(void);


/* Opens directory 'path' below 'dirfd' (O_PATH) one name at a time, never following a
 * symlink (-ENOTDIR, -ELOOP), and never looking a name up inside a FUSE mount (-EREMOTE):
 * before each lookup, the mount the walk is on is checked against 'table', which describes
 * the mounts the walk goes through. Not by path: a user who owns a directory on the way can
 * rename it, or swap it for a symlink, and the paths of a table read before are then wrong
 * without any mount having changed. by_id: each mount must be in 'table' by id (-ESTALE
 * where one is not: newer than the table), for a table of the namespace walked in; else the
 * device of each is compared with those of the FUSE mounts of 'table', for a copy of the
 * mounts 'table' describes (open_tree). 'path' itself may be a FUSE mount's root: reaching
 * it asks its server nothing. */
int open_path_outside_fuse(int dirfd, const char *path, const MountEntry *table, size_t n, bool by_id, int *ret_fd);

/* The check open_path_outside_fuse() makes before each lookup, of directory 'dir': 0 if a
 * lookup in it asks no FUSE server, -EREMOTE if it would, -ESTALE (by_id) if 'table' does not
 * know its mount. */
int mount_fd_outside_fuse(int dir, const MountEntry *table, size_t n, bool by_id);
/* 1 if directory 'dir' lies on a network file system of 'table' (NFS, CIFS, 9p, …: by its
 * device), whose server decides who may write there; its type in ret_fstype (pointing into
 * 'table'). 0 if not. Nothing is asked of the file system. */
int mount_fd_network_fstype(int dir, const MountEntry *table, size_t n, const char **ret_fstype);

/* A namespace's mount table, read again only when it changed. The kernel flags an open
 * /proc/self/mountinfo (POLLPRI) after any mount or unmount in the namespace it was opened
 * in, whatever namespace its reader is in by then: a builder that makes a view for every
 * login need not read and parse its host's table each time (a tenth of its work with 30
 * mounts), only after the host's table changed. Open it in the namespace it is to describe. */
typedef struct MountTableCache {
        int fd;                  /* /proc/self/mountinfo; -EBADF until the first refresh */
        MountEntry *table;
        size_t n;
} MountTableCache;

#define MOUNT_TABLE_CACHE_INIT ((MountTableCache) { .fd = -EBADF })

/* Reads the table if it changed since the last time (or was never read). On failure the
 * cache is left empty (table NULL), so that nothing goes on with a table that may be stale. */
int mount_table_cache_refresh(MountTableCache *c);
void mount_table_cache_done(MountTableCache *c);

/* How many mounts of 'table' are one of 'tops' (mountinfo ids) or below one, each counted
 * once. */
size_t mount_table_count_below(const MountEntry *table, size_t n, const uint64_t *tops, size_t n_tops);
/* The same, and which: ret_below[i] (n entries) for table[i]. SIZE_MAX if out of memory. */
size_t mount_table_mark_below(const MountEntry *table, size_t n, const uint64_t *tops, size_t n_tops, bool *ret_below);
/* How many mounts a recursive clone of 'path' copies, at most: the one 'path' is on, and
 * every mount of 'table' below 'path' (covered ones too: an estimate from above). */
size_t mount_table_count_clone(const MountEntry *table, size_t n, const char *path);

/* Mount id (statx STATX_MNT_ID) of whatever 'fd' (or fd+path) refers to. */
int fd_get_mount_id(int dirfd, const char *path, uint64_t *ret);
/* 1 if path is the root of a mount, 0 if not. Symlinks are not followed, and the file system
 * is asked nothing (a hung FUSE or NFS server does not make this wait). */
int path_is_mount_point(int dirfd, const char *path);

/* What one mount is: ids as /proc/self/mountinfo numbers them, and its propagation. */
typedef struct MountInfo {
        uint64_t id;
        uint64_t parent_id;
        uint64_t peer_group;     /* 0 = none */
        uint64_t master_group;   /* 0 = none */
        unsigned long propagation; /* MS_SHARED, MS_SLAVE, MS_UNBINDABLE bits (none: private) */
} MountInfo;

/* The mount that dirfd+path (or dirfd itself, for "" or NULL) is on, and optionally its parent,
 * in the current namespace. statmount(2) where the kernel has it (one syscall), else a scan of
 * /proc/self/mountinfo (kernels before 6.8, seccomp filters that do not know statmount). */
int mount_info_get(int dirfd, const char *path, MountInfo *ret, MountInfo *ret_parent);

/* A statmount(2) answer (STATMOUNT_MNT_BASIC) as the kernel wrote it into buf (size bytes),
 * and its unique id and its parent's (either may be NULL). -EBADMSG if it is too short or says
 * it is longer than buf, -EOPNOTSUPP without the basic fields. Pure: fuzzed
 * (src/fuzz/fuzz-statmount.c). */
int mount_info_from_statmount(const void *buf, size_t size, MountInfo *ret, uint64_t *ret_unique_id,
                              uint64_t *ret_unique_parent_id);

/* Peer group and master of the mount fd refers to, and the peer group of its parent (0: none). */
int mount_get_groups(int fd, uint64_t *ret_peer, uint64_t *ret_master, uint64_t *ret_parent_peer);

int mount_set_propagation(const char *path, PropagationMode mode, bool recursive);
/* Binds path onto itself unless it is a mount point already. Returns 1 if it bound. */
int mount_ensure_mount_point(const char *path);
/* Propagation flags of the mount at path, as MS_SHARED/MS_SLAVE/MS_UNBINDABLE bits. */
int mount_get_propagation(const char *path, unsigned long *ret_flags);

/* Put the mount 'to_fd' into the peer group (and master) of 'from_fd'
 * (move_mount(MOVE_MOUNT_SET_GROUP)); 'to_fd' is made private first, as the kernel requires. */
int mount_join_peer_group(int from_fd, int to_fd);

/* Open an O_PATH fd on path without following a final symlink. */
int open_path_fd(int dirfd, const char *path);

/* setns() into the mount namespace of ns_fd, from any thread (unshare(CLONE_FS) first). */
int mntns_enter(int ns_fd);

/* Bind-mount the nsfs file ns_fd refers to onto a file at path (created if missing). */
int mntns_pin(int ns_fd, const char *path);

/* The id of the mount namespace ns_fd (Linux ≥ 6.8), 0 if the kernel cannot tell. */
uint64_t mntns_get_id(int ns_fd);
