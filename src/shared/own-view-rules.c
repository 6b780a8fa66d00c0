/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>

#include "own-view-rules.h"
#include "path-util.h"
#include "strv.h"

static bool path_is_at_or_below(const char *path, const char *top) {
        size_t n = strlen(top);
        return strncmp(path, top, n) == 0 && (path[n] == 0 || path[n] == '/');
}

int own_view_check_request(OwnViewRequest request, const char *path, char *const *shared_subtrees, NsmError *error) {
        if (request != OWN_VIEW_SHARE)
                return 0;
        /* Joining a host peer group makes the view send: on a systemd host nearly every mount is
         * shared, and a view that joins /home's group sends its mounts to the host and to every
         * other view. Below SharedSubtrees= that is the design (and undoes an enslave there). */
        for (char *const *s = shared_subtrees; s && *s; s++)
                if (path_is_at_or_below(path, *s))
                        return 0;
        _cleanup_free_ char *list = strv_join(shared_subtrees, " ");
        return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "A user may share only paths at or below "
                              "SharedSubtrees= (%s) in their view: joining the host's peer group at '%s' would send "
                              "their mounts to the host and every other view.", list ?: "", path);
}

/* ---- as the caller ---- */

int own_view_become(const Credentials *c) {
        /* setfsuid() cannot report failure; the second call returns the value now in effect. */
        if (setgroups(c->n_groups, c->groups) < 0)
                return -errno;
        (void) setfsgid(c->gid);
        if ((gid_t) setfsgid((gid_t) -1) != c->gid)
                return -EPERM;
        /* A fsuid other than 0 drops CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER and the
         * other file capabilities from the effective set: lookups and creations are checked
         * as the caller's, while CAP_SYS_ADMIN (open_tree, move_mount) stays. */
        (void) setfsuid(c->uid);
        if ((uid_t) setfsuid((uid_t) -1) != c->uid)
                return -EPERM;
        return 0;
}

int own_view_unbecome(void) {
        (void) setfsuid(0);
        (void) setfsgid(0);
        if (setgroups(0, NULL) < 0)
                return -errno;
        if (setfsuid((uid_t) -1) != 0)
                return -EPERM;
        return 0;
}

int own_view_open_source(const Credentials *c, const char *path, int *ret_fd, NsmError *error) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r, k;

        r = own_view_become(c);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to take the caller's credentials: %m.");
        r = open_path_no_symlinks(path, &fd);
        k = own_view_unbecome();
        if (k < 0)
                return nsm_error_set_errnof(error, k, "Failed to give up the caller's credentials: %m.");
        if (r == -EACCES)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Source '%s' is not reachable for the caller in "
                                      "their view (a bind never shows what the caller's permissions or the [View] "
                                      "policy hide).", path);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != c->uid)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Source '%s' is not owned by the caller (UID "
                                      "%u): a user may bind only their own files and directories.", path,
                                      (unsigned) c->uid);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Walks 'path' as the caller without following symlinks. Missing last components are created
 * (when 'create') as the caller, each in a directory that must be the caller's: checked on the
 * fd the creation uses, in the same walk (a second walk to create could meet another directory
 * than the one checked: she may rename the ones on the way). */
static int walk_destination(const Credentials *c, const char *path, bool create, PathKind kind,
                            CreatedPaths *created, int *ret_fd, NsmError *error) {
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *dir = NULL;
        int r;

        if (root < 0)
                return -errno;
        r = open_path_creating_owned(root, path, create ? kind : PATH_EXISTING, c->uid, created, &dir, ret_fd);
        if (r == -EPERM && dir)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "'%s' is not owned by the caller (UID %u): a "
                                      "user may create a destination only inside a directory of their own.", dir,
                                      (unsigned) c->uid);
        return r;
}

/* File systems that hold files, as a user's data lives on them. Not /proc, /sys, cgroupfs,
 * devpts and the like: files there can be the user's (/proc/PID/ of their own processes) and
 * still be what root trusts — a setuid program the process execs reads its /proc/self/mounts
 * (/etc/mtab), and fusermount3 then unmounts whatever that says is the user's. fusermount3
 * keeps a list of file systems it mounts over for the same reason; an unknown type is
 * refused rather than trusted. */
static const unsigned long data_fs_types[] = {
        EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC, BTRFS_SUPER_MAGIC, F2FS_SUPER_MAGIC, NILFS_SUPER_MAGIC,
        REISERFS_SUPER_MAGIC, MSDOS_SUPER_MAGIC, EXFAT_SUPER_MAGIC, SQUASHFS_MAGIC, TMPFS_MAGIC,
        RAMFS_MAGIC, OVERLAYFS_SUPER_MAGIC, ECRYPTFS_SUPER_MAGIC, FUSE_SUPER_MAGIC, NFS_SUPER_MAGIC,
        CIFS_SUPER_MAGIC, SMB2_SUPER_MAGIC, V9FS_MAGIC, CEPH_SUPER_MAGIC, AFS_FS_MAGIC, AFS_SUPER_MAGIC,
        0x2fc12fc1 /* zfs */, 0xca451a4e /* bcachefs */, 0x7366746e /* ntfs3 */, 0x01161970 /* gfs2 */,
};

static int check_data_fs(int fd, const char *path, NsmError *error) {
        struct statfs sfs;

        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(data_fs_types); i++)
                if ((unsigned long) sfs.f_type == data_fs_types[i])
                        return 0;
        return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Destination '%s' is on a file system of type 0x%lx, "
                              "not one that holds files: a user may not bind over /proc, /sys and the like, where a "
                              "file owned by them is still what root trusts.", path, (unsigned long) sfs.f_type);
}

int own_view_open_destination(const Credentials *c, const char *path, bool create, PathKind kind, const MountId *own,
                              size_t n_own, CreatedPaths *created, int *ret_fd, bool *ret_replace, NsmError *error) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t peer, master, parent_peer;
        struct stat st;
        MountId id;
        int r, k, writable;

        r = own_view_become(c);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to take the caller's credentials: %m.");
        r = walk_destination(c, path, create, kind, created, &fd, error);
        /* Where she may write, as fusermount3 requires (access(W_OK)): not inside a read-only
         * mount, such as the [View] policy's BindReadOnlyPaths=, which a bind over a file of
         * hers in it would make writable again. As the caller (AT_EACCESS: the fsuid). */
        writable = r < 0 || faccessat(fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH) >= 0 ? 0 : -errno;
        k = own_view_unbecome();
        if (k < 0)
                return nsm_error_set_errnof(error, k, "Failed to give up the caller's credentials: %m.");
        if (r == -EACCES)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Destination '%s' is not reachable or not "
                                      "writable for the caller.", path);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != c->uid)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Destination '%s' is not owned by the caller "
                                      "(UID %u): a user may bind only onto their own files and directories.", path,
                                      (unsigned) c->uid);
        /* Her own tty, FIFO or socket is hers too, but what root opens there expects a device
         * or a channel, not her file (fusermount3 likewise mounts only on directories and
         * regular files). */
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Destination '%s' is not a regular file or a "
                                      "directory: a user may bind only onto those.", path);
        r = check_data_fs(fd, path, error);
        if (r < 0)
                return r;
        r = path_is_mount_point(fd, "");
        if (r < 0)
                return r;
        *ret_replace = false;
        if (r > 0) {
                r = fd_get_mount_ids(fd, "", &id);
                if (r < 0)
                        return r;
                if (!mount_id_in(id, own, n_own))
                        return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Destination '%s' is a mount point that "
                                              "is not one of the caller's own binds.", path);
                *ret_replace = true;
        }
        /* A bind of hers is replaced on its parent, which was checked when she made it. */
        if (!*ret_replace && writable < 0)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Destination '%s' is not writable for the "
                                      "caller (%s): a user may bind only where they may write, never inside a "
                                      "read-only mount such as the [View] policy's BindReadOnlyPaths=.", path,
                                      strerror(-writable));
        /* The mount the bind goes onto (for a replacement: beneath the earlier bind, onto its
         * parent) must not be shared: a mount attached there appears at every peer, on the host
         * and in every view, and those copies outlive the view — no record, no limit, and each
         * login of hers could add MaxUserMounts= more to every view built afterwards. */
        r = mount_get_groups(fd, &peer, &master, &parent_peer);
        if (r < 0)
                return r;
        if ((*ret_replace ? parent_peer : peer) != 0)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "Destination '%s' is on a shared mount (below a "
                                      "SharedSubtrees= path, or with ViewPropagation=shared): a bind made for the "
                                      "caller there would reach the host and every view, and outlive their own.", path);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int own_view_check_unmount(const char *path, int fd, MountId id, const MountId *own, size_t n_own, NsmError *error) {
        uint64_t peer, master, parent_peer;
        int r;

        if (!mount_id_in(id, own, n_own))
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "'%s' is not a bind made for the caller: a user "
                                      "may unmount only what BindMount mounted for them, not the [View] policy's "
                                      "mounts, the host's, or another user's.", path);
        /* An unmount under a shared parent propagates to whatever each peer has mounted at that
         * path. Her bind was made on a mount that was not shared (see the destination's rules),
         * but that mount may have joined the host's group since (ShareSubtree at a
         * SharedSubtrees= path): then root's mount at the same path on the host, and in every
         * view, would go too. */
        r = mount_get_groups(fd, &peer, &master, &parent_peer);
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Cannot find '%s' in the view's mount table: %m.", path);
        if (parent_peer != 0)
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "'%s' is on a shared mount now (it joined a "
                                      "peer group since the bind was made): unmounting it there would unmount what "
                                      "the host and every other view have at that path. Make the mount it is on "
                                      "private first.", path);
        return 0;
}

int own_view_check_not_mount_point(const char *path, NsmError *error) {
        return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "'%s' is not a mount point: a user may change the "
                              "propagation only of an existing mount. Binding it onto itself first would add a mount, "
                              "and under a shared subtree one that appears on the host and in every other view.", path);
}

/* A mount inside one of the caller's binds that is not itself one of them came with the bind's
 * recursive clone from its source (a [View] policy mount, root's), or was mounted there since
 * by somebody else: only the top of each bind is recorded as the caller's, and only that is
 * theirs. */
static int check_not_inside_own_bind(const char *path, MountId id, bool recursive, const MountId *own, size_t n_own,
                                     NsmError *error) {
        _cleanup_free_ uint64_t *tops = NULL;
        _cleanup_free_ bool *inside = NULL, *scope = NULL;
        MountEntry *table = NULL;
        size_t n = 0, n_tops = 0;
        int r = 0;

        if (n_own == 0)
                return 0;
        tops = calloc(n_own, sizeof(uint64_t));
        if (!tops)
                return -ENOMEM;
        for (size_t i = 0; i < n_own; i++)
                /* Not a bind that is gone (root unmounted it): its 32-bit id may be another mount's now. */
                if (mount_id_is_mounted(own[i]) != 0)
                        tops[n_tops++] = own[i].old;
        r = mount_table_read_self(&table, &n);
        if (r < 0)
                return r;
        inside = calloc(n + 1, sizeof(bool));
        scope = calloc(n + 1, sizeof(bool));
        if (!inside || !scope || mount_table_mark_below(table, n, tops, n_tops, inside) == SIZE_MAX ||
            (recursive && mount_table_mark_below(table, n, &id.old, 1, scope) == SIZE_MAX))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                bool self = table[i].id == id.old;
                if (!(self || (recursive && scope[i])) || !inside[i] || mount_ids_contain(tops, n_tops, table[i].id))
                        continue;
                r = nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, self ?
                                   "'%s' lies inside one of the caller's binds and is not one itself: it came with "
                                   "the bind's copy of its source (the [View] policy's mounts, root's) or was mounted "
                                   "there by someone else. Only the top of each bind is the caller's." :
                                   "'%s' holds mounts that lie inside one of the caller's binds and are not binds of "
                                   "theirs: they came with the bind's copy of its source (the [View] policy's mounts, "
                                   "root's) or were mounted there by someone else. Only the top of each bind is the "
                                   "caller's.", path);
        }
        mount_entries_free(table, n);
        return r;
}

int own_view_check_propagation(const char *path, int fd, bool recursive, const MountId *own, size_t n_own,
                               const MountId *policy, size_t n_policy, NsmError *error) {
        _cleanup_free_ MountId *below = NULL;
        size_t n_below = 0;
        MountId id;
        int r;

        r = fd_get_mount_ids(fd, "", &id);
        if (r < 0)
                return r;
        if (mount_id_in(id, policy, n_policy))
                return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "'%s' is a mount of the [View] policy: its "
                                      "propagation is the administrator's to change.", path);
        r = check_not_inside_own_bind(path, id, recursive, own, n_own, error);
        if (r < 0)
                return r;
        if (!recursive)
                return 0;
        r = mount_subtree_ids(id, &below, &n_below);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_below; i++)
                if (mount_id_in(below[i], policy, n_policy))
                        return nsm_error_setf(error, NSM_ERROR_ACCESS_DENIED, "'%s' holds mounts of the [View] "
                                              "policy: a recursive change would change theirs too, which is the "
                                              "administrator's to do.", path);
        return 0;
}
