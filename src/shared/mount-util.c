/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <libmount.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>

#include "fs-util.h"
#include "mount-util.h"
#include "string-table.h"
#include "strv.h"

static const char *const propagation_mode_table[_PROPAGATION_MODE_MAX] = {
        [PROPAGATION_SHARED] = "shared",
        [PROPAGATION_SLAVE] = "slave",
        [PROPAGATION_PRIVATE] = "private",
        [PROPAGATION_UNBINDABLE] = "unbindable",
};

DEFINE_STRING_TABLE_LOOKUP(propagation_mode, PropagationMode);

static const char *const view_propagation_table[_VIEW_PROPAGATION_MAX] = {
        [VIEW_PROPAGATION_SLAVE] = "slave",
        [VIEW_PROPAGATION_PRIVATE] = "private",
        [VIEW_PROPAGATION_SHARED] = "shared",
};

DEFINE_STRING_TABLE_LOOKUP(view_propagation, ViewPropagation);

unsigned long propagation_mode_to_ms_flag(PropagationMode m) {
        switch (m) {
        case PROPAGATION_SHARED:
                return MS_SHARED;
        case PROPAGATION_SLAVE:
                return MS_SLAVE;
        case PROPAGATION_PRIVATE:
                return MS_PRIVATE;
        case PROPAGATION_UNBINDABLE:
                return MS_UNBINDABLE;
        default:
                return 0;
        }
}

static void mnt_unref_tablep(struct libmnt_table **t) {
        mnt_unref_table(*t);
}
static void mnt_free_iterp(struct libmnt_iter **i) {
        mnt_free_iter(*i);
}

static uint64_t optional_field(const char *fields, const char *name) {
        size_t n = strlen(name);
        for (const char *p = fields; p && *p;) {
                p += strspn(p, " ");
                if (strncmp(p, name, n) == 0 && p[n] == ':')
                        return strtoull(p + n + 1, NULL, 10);
                p += strcspn(p, " ");
        }
        return 0;
}

static char *propagation_words(unsigned long fl) {
        char *s = NULL;
        /* The same words findmnt prints in its PROPAGATION column. */
        if (asprintf(&s, "%s%s%s", fl & MS_SHARED ? "shared" : "private", fl & MS_SLAVE ? ",slave" : "",
                     fl & MS_UNBINDABLE ? ",unbindable" : "") < 0)
                return NULL;
        return s;
}

int mount_table_read(FILE *f, MountEntry **ret, size_t *ret_n) {
        _cleanup_(mnt_unref_tablep) struct libmnt_table *t = mnt_new_table();
        _cleanup_(mnt_free_iterp) struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
        struct libmnt_fs *fs;
        MountEntry *e = NULL;
        size_t n = 0;
        int r;

        if (!t || !it)
                return -ENOMEM;
        r = mnt_table_parse_stream(t, f, "mountinfo");
        if (r < 0)
                return r;

        e = calloc(mnt_table_get_nents(t) + 1, sizeof(MountEntry));
        if (!e)
                return -ENOMEM;
        while (mnt_table_next_fs(t, it, &fs) == 0) {
                unsigned long fl = 0;
                const char *fields = mnt_fs_get_optional_fields(fs);

                (void) mnt_fs_get_propagation(fs, &fl);
                e[n] = (MountEntry) {
                        .fingerprint = mount_id_fingerprint(mnt_fs_get_devno(fs), mnt_fs_get_root(fs),
                                                            mnt_fs_get_target(fs)),
                        .id = (uint64_t) mnt_fs_get_id(fs),
                        .parent_id = (uint64_t) mnt_fs_get_parent_id(fs),
                        .peer_group = optional_field(fields, "shared"),
                        .master_group = optional_field(fields, "master"),
                        .dev = (uint64_t) mnt_fs_get_devno(fs),
                        .target = strdup(mnt_fs_get_target(fs) ?: ""),
                        .source = strdup(mnt_fs_get_source(fs) ?: "none"),
                        .fstype = strdup(mnt_fs_get_fstype(fs) ?: ""),
                        .propagation = propagation_words(fl),
                        .options = mnt_fs_strdup_options(fs) ?: strdup(""),
                };
                n++;
                if (!e[n - 1].target || !e[n - 1].source || !e[n - 1].fstype || !e[n - 1].propagation ||
                    !e[n - 1].options) {
                        mount_entries_free(e, n);
                        return -ENOMEM;
                }
        }
        *ret = e;
        *ret_n = n;
        return 0;
}

int mount_table_read_self(MountEntry **ret, size_t *ret_n) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        return mount_table_read(f, ret, ret_n);
}

static bool fstype_is_fuse(const char *type) {
        return streq(type, "fuse") || streq(type, "fuseblk") || strncmp(type, "fuse.", 5) == 0 ||
               strncmp(type, "fuseblk.", 8) == 0;
}

/* 0 if looking a name up in directory 'dir' asks no FUSE server: by_id, its mount is one of
 * 'table' (by id) and not FUSE, -ESTALE if 'table' does not know its mount (newer than the
 * table); else its file system is not the device of a FUSE mount of 'table'. -EREMOTE if it
 * is FUSE. Nothing is asked of the file system (statx of nothing, without syncing). */
int mount_fd_outside_fuse(int dir, const MountEntry *table, size_t n, bool by_id) {
        struct statx sx = {};

        if (statx(dir, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC, 0, &sx) < 0)
                return -errno;
        if (by_id && !(sx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        if (by_id) {
                for (size_t i = 0; i < n; i++)
                        if (table[i].id == sx.stx_mnt_id)
                                return fstype_is_fuse(table[i].fstype) ? -EREMOTE : 0;
                return -ESTALE;
        }
        for (size_t i = 0; i < n; i++)
                if (fstype_is_fuse(table[i].fstype) &&
                    table[i].dev == (uint64_t) makedev(sx.stx_dev_major, sx.stx_dev_minor))
                        return -EREMOTE;
        return 0;
}

/* File systems whose server, not this kernel, decides who owns and may write what: what the
 * inode says here is the server's word, and others write there from other machines. */
static bool fstype_is_network(const char *type) {
        return STR_IN_SET(type, "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "afs", "lustre", "gfs2",
                          "ocfs2", "glusterfs");
}

int mount_fd_network_fstype(int dir, const MountEntry *table, size_t n, const char **ret_fstype) {
        struct statx sx = {};

        if (statx(dir, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC, 0, &sx) < 0)
                return -errno;
        for (size_t i = 0; i < n; i++)
                if (fstype_is_network(table[i].fstype) &&
                    table[i].dev == (uint64_t) makedev(sx.stx_dev_major, sx.stx_dev_minor)) {
                        if (ret_fstype)
                                *ret_fstype = table[i].fstype;
                        return 1;
                }
        return 0;
}

int open_path_outside_fuse(int dirfd, const char *path, const MountEntry *table, size_t n, bool by_id, int *ret_fd) {
        _cleanup_close_ int cur = -EBADF;
        int r;

        cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        for (const char *p = path;;) {
                char name[NAME_MAX + 1];
                int fd;

                r = path_next_name(&p, name);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (streq(name, "."))
                        continue;
                if (streq(name, ".."))
                        return -EINVAL;
                r = mount_fd_outside_fuse(cur, table, n, by_id);
                if (r < 0)
                        return r;
                /* A directory, never through a symlink: one on the way is -ENOTDIR (or -ELOOP). */
                fd = openat(cur, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                safe_close(cur);
                cur = fd;
        }
        *ret_fd = TAKE_FD(cur);
        return 0;
}

void mount_table_cache_done(MountTableCache *c) {
        mount_entries_free(c->table, c->n);
        c->table = NULL;
        c->n = 0;
        c->fd = safe_close(c->fd);
}

int mount_table_cache_refresh(MountTableCache *c) {
        _cleanup_fclose_ FILE *f = NULL;
        MountEntry *table = NULL;
        size_t n = 0;
        int fd, r;

        if (c->fd < 0) {
                c->fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
                if (c->fd < 0)
                        return -errno;
        } else if (c->table) {
                struct pollfd p = { .fd = c->fd, .events = POLLPRI };

                /* Polling takes the flag down: whatever changes from here on flags it again.
                 * Changed, or poll() failed: read it again. */
                if (poll(&p, 1, 0) >= 0 && !(p.revents & (POLLPRI | POLLERR)))
                        return 0;
        }

        mount_entries_free(c->table, c->n);
        c->table = NULL;
        c->n = 0;
        /* A stream of our own on the same open file (its flag is the file's), from the start. */
        if (lseek(c->fd, 0, SEEK_SET) < 0)
                return -errno;
        fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "re");
        if (!f) {
                safe_close(fd);
                return -errno;
        }
        r = mount_table_read(f, &table, &n);
        if (r < 0)
                return r;
        c->table = table;
        c->n = n;
        return 0;
}

static int compare_entry_ids(const void *a, const void *b) {
        const MountEntry *x = *(const MountEntry *const *) a, *y = *(const MountEntry *const *) b;
        return x->id < y->id ? -1 : x->id > y->id;
}

bool mount_ids_contain(const uint64_t *ids, size_t n, uint64_t id) {
        for (size_t i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

size_t mount_table_mark_below(const MountEntry *table, size_t n, const uint64_t *tops, size_t n_tops, bool *ret_below) {
        _cleanup_free_ const MountEntry **by_id = calloc(n + 1, sizeof(MountEntry *));
        size_t count = 0;

        if (!by_id)
                return SIZE_MAX;   /* counted as too many */
        for (size_t i = 0; i < n; i++)
                by_id[i] = &table[i];
        qsort(by_id, n, sizeof(MountEntry *), compare_entry_ids);
        /* Up from each mount to the root (its own parent), looking for a top on the way. */
        for (size_t i = 0; i < n; i++) {
                if (ret_below)
                        ret_below[i] = false;
                for (const MountEntry *e = &table[i], **p; e; e = p ? *p : NULL) {
                        MountEntry key = { .id = e->parent_id }, *k = &key;
                        if (mount_ids_contain(tops, n_tops, e->id)) {
                                count++;
                                if (ret_below)
                                        ret_below[i] = true;
                                break;
                        }
                        p = e->parent_id == e->id ? NULL : bsearch(&k, by_id, n, sizeof(MountEntry *), compare_entry_ids);
                }
        }
        return count;
}

size_t mount_table_count_below(const MountEntry *table, size_t n, const uint64_t *tops, size_t n_tops) {
        return mount_table_mark_below(table, n, tops, n_tops, NULL);
}

size_t mount_table_count_clone(const MountEntry *table, size_t n, const char *path) {
        size_t len = strlen(path), count = 1;

        for (size_t i = 0; i < n; i++)
                if (streq(path, "/") ? !streq(table[i].target, "/") :
                    strncmp(table[i].target, path, len) == 0 && table[i].target[len] == '/')
                        count++;
        return count;
}

int fd_get_mount_id(int dirfd, const char *path, uint64_t *ret) {
        struct statx sx = {};
        int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC | (path && *path ? 0 : AT_EMPTY_PATH);

        /* The VFS fills in the mount id whatever was asked: asking the file system for nothing
         * also works on a user's FUSE mount without allow_other, which refuses root anything
         * else (EACCES), and never waits for its server. */
        if (statx(dirfd, path ?: "", flags, 0, &sx) < 0)
                return -errno;
        if (!(sx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        *ret = sx.stx_mnt_id;
        return 0;
}

int path_is_mount_point(int dirfd, const char *path) {
        struct statx sx = {};
        int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC | (path && *path ? 0 : AT_EMPTY_PATH);

        /* The VFS knows whether it is a mount's root: ask the file system for nothing, and not
         * to sync, so that a FUSE server (or NFS server) that never answers is never asked.
         * The builder asks this of every shared subtree, which a user's mount may cover. */
        if (statx(dirfd, path ?: "", flags, 0, &sx) < 0)
                return -errno;
        if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                return -EOPNOTSUPP;
        return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

int mount_set_propagation(const char *path, PropagationMode mode, bool recursive) {
        unsigned long fl = propagation_mode_to_ms_flag(mode);
        if (fl == 0)
                return -EINVAL;
        if (mount(NULL, path, NULL, fl | (recursive ? MS_REC : 0), NULL) < 0)
                return -errno;
        return 0;
}

int mount_ensure_mount_point(const char *path) {
        int r = path_is_mount_point(AT_FDCWD, path);
        if (r < 0)
                return r;
        if (r > 0)
                return 0;
        if (mount(path, path, NULL, MS_BIND, NULL) < 0)
                return -errno;
        return 1;
}

/* Debian 12's headers predate statmount(2) (Linux 6.8): the parts we use, defined here. */
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif
#define NSM_STATMOUNT_MNT_BASIC 0x00000002U
#define NSM_SYS_statmount 457

struct nsm_mnt_id_req {
        uint32_t size;
        uint32_t spare;
        uint64_t mnt_id;
        uint64_t param;
        uint64_t mnt_ns_id;      /* Linux 6.11; a kernel that predates it reads size 24 */
};
#define NSM_SYS_listmount 458
#define NSM_LSMT_ROOT 0xffffffffffffffffULL

struct nsm_statmount {
        uint32_t size;
        uint32_t mnt_opts;
        uint64_t mask;
        uint32_t sb_dev_major;
        uint32_t sb_dev_minor;
        uint64_t sb_magic;
        uint32_t sb_flags;
        uint32_t fs_type;
        uint64_t mnt_id;
        uint64_t mnt_parent_id;
        uint32_t mnt_id_old;
        uint32_t mnt_parent_id_old;
        uint64_t mnt_attr;
        uint64_t mnt_propagation;
        uint64_t mnt_peer_group;
        uint64_t mnt_master;
        uint64_t propagate_from;
        uint64_t spare[64];      /* room for what newer kernels add */
};

/* The fields of STATMOUNT_MNT_BASIC that we read end with mnt_master; every kernel that has
 * statmount(2) (6.8) writes them all. */
#define NSM_STATMOUNT_BASIC_END offsetof(struct nsm_statmount, propagate_from)

int mount_info_from_statmount(const void *buf, size_t size, MountInfo *ret, uint64_t *ret_unique_id,
                              uint64_t *ret_unique_parent_id) {
        struct nsm_statmount sm;

        if (!buf || size < NSM_STATMOUNT_BASIC_END)
                return -EBADMSG;
        memcpy(&sm, buf, NSM_STATMOUNT_BASIC_END);      /* buf need not be aligned */
        /* What the kernel says it wrote must hold the fields, and fit in what it was given. */
        if (sm.size < NSM_STATMOUNT_BASIC_END || sm.size > size)
                return -EBADMSG;
        if (!(sm.mask & NSM_STATMOUNT_MNT_BASIC))
                return -EOPNOTSUPP;
        *ret = (MountInfo) {
                .id = sm.mnt_id_old,
                .parent_id = sm.mnt_parent_id_old,
                .peer_group = sm.mnt_peer_group,
                .master_group = sm.mnt_master,
                .propagation = sm.mnt_propagation & (MS_SHARED | MS_SLAVE | MS_UNBINDABLE),
        };
        if (ret_unique_id)
                *ret_unique_id = sm.mnt_id;
        if (ret_unique_parent_id)
                *ret_unique_parent_id = sm.mnt_parent_id;
        return 0;
}

static int statmount_basic_in(uint64_t unique_id, uint64_t mntns_id, MountInfo *ret, uint64_t *ret_unique_parent_id) {
        struct nsm_mnt_id_req req = { .size = sizeof req, .mnt_id = unique_id, .param = NSM_STATMOUNT_MNT_BASIC,
                                      .mnt_ns_id = mntns_id };
        struct nsm_statmount sm;

        if (syscall(NSM_SYS_statmount, &req, &sm, sizeof sm, 0) < 0)
                return -errno;
        return mount_info_from_statmount(&sm, sizeof sm, ret, NULL, ret_unique_parent_id);
}

static int mount_info_by_statmount(int dirfd, const char *path, MountInfo *ret, MountInfo *ret_parent) {
        struct statx sx = {};
        int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (path && *path ? 0 : AT_EMPTY_PATH);
        uint64_t parent;
        int r;

        if (statx(dirfd, path ?: "", flags, STATX_MNT_ID_UNIQUE, &sx) < 0)
                return -errno;
        if (!(sx.stx_mask & STATX_MNT_ID_UNIQUE))
                return -EOPNOTSUPP;
        r = statmount_basic_in(sx.stx_mnt_id, 0, ret, &parent);
        if (r < 0 || !ret_parent)
                return r;
        if (parent == sx.stx_mnt_id) {
                *ret_parent = *ret;     /* a namespace's root is its own parent */
                return 0;
        }
        return statmount_basic_in(parent, 0, ret_parent, NULL);
}

static void mount_info_from_entry(const MountEntry *e, MountInfo *ret) {
        *ret = (MountInfo) {
                .id = e->id,
                .parent_id = e->parent_id,
                .peer_group = e->peer_group,
                .master_group = e->master_group,
                .propagation = (e->peer_group ? MS_SHARED : 0) | (e->master_group ? MS_SLAVE : 0) |
                               (strstr(e->propagation, "unbindable") ? MS_UNBINDABLE : 0),
        };
}

int mount_info_get(int dirfd, const char *path, MountInfo *ret, MountInfo *ret_parent) {
        MountEntry *e = NULL;
        size_t n = 0;
        uint64_t id;
        int r;

        r = mount_info_by_statmount(dirfd, path, ret, ret_parent);
        if (r >= 0)
                return 0;

        r = fd_get_mount_id(dirfd, path, &id);
        if (r < 0)
                return r;
        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        r = -ENOENT;
        for (size_t i = 0; i < n; i++)
                if (e[i].id == id) {
                        mount_info_from_entry(&e[i], ret);
                        r = 0;
                }
        if (r >= 0 && ret_parent) {
                *ret_parent = *ret;
                for (size_t i = 0; i < n; i++)
                        if (e[i].id == ret->parent_id)
                                mount_info_from_entry(&e[i], ret_parent);
        }
        mount_entries_free(e, n);
        return r;
}

int mount_get_groups(int fd, uint64_t *ret_peer, uint64_t *ret_master, uint64_t *ret_parent_peer) {
        MountInfo mi, parent;
        int r = mount_info_get(fd, "", &mi, &parent);
        if (r < 0)
                return r;
        *ret_peer = mi.peer_group;
        *ret_master = mi.master_group;
        *ret_parent_peer = parent.id != mi.id ? parent.peer_group : 0;
        return 0;
}

int mount_get_propagation(const char *path, unsigned long *ret_flags) {
        MountInfo mi;
        int r = mount_info_get(AT_FDCWD, path, &mi, NULL);
        if (r < 0)
                return r;
        *ret_flags = mi.propagation;
        return 0;
}

int mount_join_peer_group(int from_fd, int to_fd) {
        struct mount_attr attr = { .propagation = MS_PRIVATE };

        /* The kernel only adds a private mount to a group (a slave target is EINVAL). */
        if (mount_setattr(to_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return -errno;
        if (move_mount(from_fd, "", to_fd, "",
                       MOVE_MOUNT_SET_GROUP | MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return -errno;
        return 0;
}

int open_path_fd(int dirfd, const char *path) {
        int fd = openat(dirfd, path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

int mntns_enter(int ns_fd) {
        /* setns(CLONE_NEWNS) is EINVAL while this thread shares its fs_struct. */
        if (unshare(CLONE_FS) < 0)
                return -errno;
        if (setns(ns_fd, CLONE_NEWNS) < 0)
                return -errno;
        return 0;
}

/* NS_GET_MNTNS_ID (Linux 6.8), by number: older headers lack it. */
#define NSM_NS_GET_MNTNS_ID _IOR(0xb7, 0x5, uint64_t)

uint64_t mntns_get_id(int fd) {
        uint64_t id = 0;
        if (ioctl(fd, NSM_NS_GET_MNTNS_ID, &id) < 0)
                return 0;
        return id;
}

int mntns_pin(int ns_fd, const char *path) {
        char src[64];
        int fd;

        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        (void) close(fd);
        snprintf(src, sizeof src, "/proc/self/fd/%d", ns_fd);
        if (mount(src, path, NULL, MS_BIND, NULL) < 0)
                return -errno;
        return 0;
}

uint64_t mount_id_fingerprint(uint64_t dev, const char *root, const char *target) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        char devno[32];

        /* FNV-1a over what mountinfo says of the mount besides its ids. */
        snprintf(devno, sizeof devno, "%u:%u", major(dev), minor(dev));
        for (const char *parts[] = { devno, root ?: "", target ?: "" }, **p = parts; p < parts + 3; p++)
                for (const char *c = *p;; c++) {
                        h = (h ^ (unsigned char) *c) * UINT64_C(0x100000001b3);
                        if (*c == 0)
                                break;
                }
        return (h & ~MOUNT_ID_FINGERPRINT) | MOUNT_ID_FINGERPRINT;
}

/* The fingerprint of the mount with mountinfo id 'old' in this namespace, 0 if it is not in
 * the table (a mount outside our root). */
static uint64_t fingerprint_of(const MountEntry *e, size_t n, uint64_t old) {
        for (size_t i = 0; i < n; i++)
                if (e[i].id == old)
                        return e[i].fingerprint;
        return 0;
}

bool mount_ids_unique(void) {
        static int cached = -1;
        struct statx sx = {};

        if (cached < 0)
                cached = statx(AT_FDCWD, "/", AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_MNT_ID_UNIQUE, &sx) >= 0 &&
                         (sx.stx_mask & STATX_MNT_ID_UNIQUE);
        return cached;
}

int fd_get_mount_ids(int dirfd, const char *path, MountId *ret) {
        struct statx sx = {};
        int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (path && *path ? 0 : AT_EMPTY_PATH);
        MountId id = {};
        int r;

        r = fd_get_mount_id(dirfd, path, &id.old);
        if (r < 0)
                return r;
        if (statx(dirfd, path ?: "", flags, STATX_MNT_ID_UNIQUE, &sx) >= 0 && (sx.stx_mask & STATX_MNT_ID_UNIQUE))
                id.unique = sx.stx_mnt_id;
        else {
                /* Before Linux 6.8 the id alone is reused by the next mount made once this one
                 * is gone (docs/kernel.md): the record also holds what the mount is. */
                MountEntry *e = NULL;
                size_t n = 0;

                if (mount_table_read_self(&e, &n) >= 0) {
                        id.unique = fingerprint_of(e, n, id.old);
                        mount_entries_free(e, n);
                }
        }
        *ret = id;
        return 0;
}

bool mount_id_equal(MountId a, MountId b) {
        if (a.unique != 0 && b.unique != 0)
                /* A fingerprint names what is mounted, the old id which mount: both must match. */
                return a.unique == b.unique && (!(a.unique & MOUNT_ID_FINGERPRINT) || a.old == b.old);
        return a.old != 0 && a.old == b.old;
}

bool mount_id_in(MountId id, const MountId *list, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (mount_id_equal(id, list[i]))
                        return true;
        return false;
}

int mount_id_is_mounted(MountId id) {
        MountEntry *e = NULL;
        size_t n = 0;
        int r;

        if (id.unique == 0)
                return -EOPNOTSUPP;
        if (!(id.unique & MOUNT_ID_FINGERPRINT))
                return mount_is_mounted_in(id.unique, 0);
        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        r = fingerprint_of(e, n, id.old) == id.unique;
        mount_entries_free(e, n);
        return r;
}

bool mount_beneath_supported(void) {
        static int cached = -1;

        /* move_mount(2) checks its flags before its fds: a kernel that does not know the flag
         * says EINVAL, one that does goes on to the fds (EBADF). */
        if (cached < 0)
                cached = move_mount(-EBADF, "", -EBADF, "", MOVE_MOUNT_BENEATH | MOVE_MOUNT_F_EMPTY_PATH |
                                    MOVE_MOUNT_T_EMPTY_PATH) < 0 && errno != EINVAL;
        return cached;
}

int mount_subtree_ids(MountId top, MountId **ret, size_t *ret_n) {
        MountEntry *e = NULL;
        size_t n = 0, k = 0;
        MountId *ids;
        bool *in;
        int r;

        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        ids = calloc(n + 1, sizeof(MountId));
        in = calloc(n + 1, sizeof(bool));
        if (!ids || !in) {
                free(ids);
                free(in);
                mount_entries_free(e, n);
                return -ENOMEM;
        }
        /* Mountinfo lists parents before children, but a mount moved later may not be: repeat
         * until nothing is added. */
        for (bool added = true; added;) {
                added = false;
                for (size_t i = 0; i < n; i++) {
                        if (in[i])
                                continue;
                        bool below = e[i].id == top.old;
                        for (size_t j = 0; !below && j < n; j++)
                                below = in[j] && e[j].id == e[i].parent_id && e[i].id != e[i].parent_id;
                        if (below) {
                                in[i] = added = true;
                                ids[k++] = (MountId) { .old = e[i].id,
                                                       .unique = mount_ids_unique() ? 0 : e[i].fingerprint };
                        }
                }
        }
        free(in);
        mount_entries_free(e, n);
        *ret = ids;
        *ret_n = k;
        return 0;
}

int mount_is_mounted_in(uint64_t unique_id, uint64_t mntns_id) {
        MountInfo mi;
        int r = statmount_basic_in(unique_id, mntns_id, &mi, NULL);
        if (r == -ENOENT)
                return 0;
        if (r == -ENOSYS || r == -EPERM)
                return -EOPNOTSUPP;
        return r < 0 ? r : 1;
}

static int count_mountinfo_lines(size_t *ret_n) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        size_t n = 0;
        int c;

        if (!f)
                return -errno;
        while ((c = getc_unlocked(f)) != EOF)
                if (c == '\n')
                        n++;
        *ret_n = n;
        return 0;
}

int mntns_count_mounts(uint64_t mntns_id, size_t *ret_n) {
        /* Without a namespace id the request is the 6.8 one, for our own namespace. */
        struct nsm_mnt_id_req req = { .size = mntns_id ? sizeof req : offsetof(struct nsm_mnt_id_req, mnt_ns_id),
                                      .mnt_id = NSM_LSMT_ROOT, .mnt_ns_id = mntns_id };
        uint64_t ids[512];
        size_t n = 0;

        /* listmount(LSMT_ROOT) lists every mount of the namespace, its root included, in pages:
         * 'param' is the last id seen. */
        for (;;) {
                long k = syscall(NSM_SYS_listmount, &req, ids, ELEMENTSOF(ids), 0);
                if (k < 0) {
                        if (mntns_id == 0 && (errno == ENOSYS || errno == EPERM))
                                return count_mountinfo_lines(ret_n);
                        /* Linux 6.18 finds only namespaces some process is in (ENOENT otherwise). */
                        return errno == ENOSYS || errno == EPERM || errno == EINVAL || errno == ENOENT ? -EOPNOTSUPP : -errno;
                }
                n += (size_t) k;
                if ((size_t) k < ELEMENTSOF(ids))
                        break;
                req.param = ids[k - 1];
        }
        *ret_n = n;
        return 0;
}
