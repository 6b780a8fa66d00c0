/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fs-util.h"
#include "mount-util.h"
#include "string-table.h"
#include "strv.h"
#include "view-build.h"

static const char *const view_stage_table[_VIEW_STAGE_MAX] = {
        [VIEW_STAGE_NONE] = "none",
        [VIEW_STAGE_CLONE] = "cloning the host's tree",
        [VIEW_STAGE_PEERS] = "joining the shared subtrees' peer groups",
        [VIEW_STAGE_UNSHARE] = "creating the mount namespace",
        [VIEW_STAGE_ATTACH] = "attaching the view under SubtreeRoot",
        [VIEW_STAGE_PIVOT] = "pivoting into the view",
        [VIEW_STAGE_POLICY] = "applying the [View] policy",
        [VIEW_STAGE_PIN] = "pinning the namespace",
};

DEFINE_STRING_TABLE_LOOKUP(view_stage, ViewStage);

typedef struct FdArray {
        int *fds;
        size_t n;
} FdArray;

static void fd_array_done(FdArray *a) {
        for (size_t i = 0; i < a->n; i++)
                safe_close(a->fds[i]);
        free(a->fds);
}

/* Fds of the host's shared subtrees, opened in the host before anything else: they are the
 * peer groups the view's copies rejoin after the unshare. The builder never looks a path up
 * inside a user's FUSE mount (its server may never answer, or refuse root): a shared subtree
 * below one is skipped (-EREMOTE), as is one that cannot be opened (without a symlink on the
 * way, as host.c shares it) — the view's copy then follows the host one way there, rather
 * than every login failing or waiting. Checked at each step of the walk, by the mount it is
 * on (open_path_outside_fuse()), not by the paths of the table: a user who owns a directory
 * on the way may rename it, or swap it for a symlink into her FUSE mount, which changes no
 * mount and leaves a table read before (the builder's cache) describing other paths. */
static int open_host_shared(const ViewSpec *spec, int root, FdArray *ret) {
        MountTableCache *c = spec->host_mounts;
        size_t n = strv_length(spec->shared_subtrees);

        ret->fds = calloc(n + 1, sizeof(int));
        if (!ret->fds)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int fd = -EBADF, r;

                r = open_path_outside_fuse(root, spec->shared_subtrees[i], c->table, c->n, /* by_id= */ true, &fd);
                /* A mount newer than the table on the way: once more with the table read again. */
                if (r == -ESTALE && mount_table_cache_refresh(c) >= 0)
                        r = open_path_outside_fuse(root, spec->shared_subtrees[i], c->table, c->n, true, &fd);
                ret->fds[ret->n++] = r < 0 ? r : fd;
        }
        return 0;
}

/* Each shared subtree of the attached copy is put back into the host's peer group: two-way
 * again, while the rest stays one-way. Only once attached: the kernel does not set groups on
 * a detached tree. */
static int rejoin_shared(const char *where, const ViewSpec *spec, const FdArray *host_fds) {
        _cleanup_close_ int where_fd = -EBADF;
        uint64_t top_id;
        int r;

        where_fd = open(where, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (where_fd < 0)
                return -errno;
        r = fd_get_mount_id(where_fd, "", &top_id);
        if (r < 0)
                return r;
        for (size_t i = 0; i < host_fds->n; i++) {
                _cleanup_close_ int sub_fd = -EBADF;
                uint64_t sub_id;

                if (host_fds->fds[i] < 0)
                        continue;
                /* The copy's mounts are not the table's, but their file systems are: no lookup
                 * in one of the host's FUSE file systems here either, should the user have
                 * moved hers onto the way since the host's walk. */
                r = open_path_outside_fuse(where_fd, spec->shared_subtrees[i], spec->host_mounts->table,
                                           spec->host_mounts->n, /* by_id= */ false, &sub_fd);
                if (r == -EREMOTE || r == -ENOTDIR || r == -ELOOP || r == -ENOENT)
                        continue; /* moved since: it follows the host one way, as if skipped */
                if (r < 0)
                        return r;
                /* A path that is no mount of its own in the copy was pruned or is covered:
                 * joining there would put the view's root into the group. */
                if (fd_get_mount_id(sub_fd, "", &sub_id) < 0 || path_is_mount_point(sub_fd, "") <= 0 || top_id == sub_id)
                        continue;
                r = mount_join_peer_group(host_fds->fds[i], sub_fd);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* pivot_root into 'where' and detach the old root through an fd taken before the pivot: after
 * pivot_root(".", ".") the path "." names the new root, with the old one stacked on it. */
static int pivot_into(const char *where) {
        _cleanup_close_ int old_root_fd = -EBADF;
        int r;

        if (chdir(where) < 0)
                return -errno;
        old_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (old_root_fd < 0)
                return -errno;
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return -errno;
        r = umount2_fd(old_root_fd);
        if (r < 0)
                return r;
        if (chdir("/") < 0)
                return -errno;
        return 0;
}

/* The steps, in the namespace we build in. */
static int build_steps(const ViewSpec *spec, ViewStage *stage, int *ret_ns_fd, size_t *ret_n_mounts) {
        _cleanup_(fd_array_done) FdArray host_shared = {};
        _cleanup_close_ int tree_fd = -EBADF, host_root_fd = -EBADF, ns_fd = -EBADF;
        _cleanup_free_ char *where = NULL;
        struct mount_attr attr = {};
        int r;

        /* 1. Clone the host's tree while still in the host namespace: a clone made after the
         *    unshare would be of the wrong tree, and cloning prunes unbindable mounts
         *    (SubtreeRoot, the state directory) — unshare would not. */
        *stage = VIEW_STAGE_CLONE;
        host_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (host_root_fd < 0)
                return -errno;
        r = open_host_shared(spec, host_root_fd, &host_shared);
        if (r < 0)
                return r;
        tree_fd = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree_fd < 0)
                return -errno;

        /* 2. Propagation of the copy: a clone of a shared mount is a peer of its source. With
         *    ViewPropagation=shared only its root is made private (pivot_root refuses a shared
         *    root), to rejoin after the pivot. */
        *stage = VIEW_STAGE_PEERS;
        attr.propagation = spec->propagation == VIEW_PROPAGATION_SLAVE ? MS_SLAVE : MS_PRIVATE;
        if (mount_setattr(tree_fd, "", AT_EMPTY_PATH | (spec->propagation != VIEW_PROPAGATION_SHARED ? AT_RECURSIVE : 0),
                          &attr, sizeof attr) < 0)
                return -errno;

        /* 3. The namespace. Its copy of the host's mounts is thrown away by the pivot; made
         *    private first, nothing we do to it propagates back to the host. */
        *stage = VIEW_STAGE_UNSHARE;
        if (unshare(CLONE_NEWNS) < 0)
                return -errno;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;

        /* 4. Assemble at SubtreeRoot/NAME (the mkdir shows on the host: the same filesystem). */
        *stage = VIEW_STAGE_ATTACH;
        if (asprintf(&where, "%s/%s", spec->subtree_root, spec->name) < 0)
                return -ENOMEM;
        if (mkdir(where, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (move_mount(tree_fd, "", AT_FDCWD, where, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;
        *stage = VIEW_STAGE_PEERS;
        if (spec->propagation != VIEW_PROPAGATION_SHARED) {
                r = rejoin_shared(where, spec, &host_shared);
                if (r < 0)
                        return r;
        }

        /* 5. Pivot. The old root is all private (step 3), so detaching it propagates nowhere. */
        *stage = VIEW_STAGE_PIVOT;
        r = pivot_into(where);
        if (r < 0)
                return r;
        if (spec->propagation == VIEW_PROPAGATION_SHARED) {
                _cleanup_close_ int new_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (new_root_fd < 0)
                        return -errno;
                r = mount_join_peer_group(host_root_fd, new_root_fd);
                if (r < 0)
                        return r;
        }

        ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (ns_fd < 0)
                return -errno;
        if (mntns_count_mounts(0, ret_n_mounts) < 0)
                *ret_n_mounts = 0;
        *stage = VIEW_STAGE_NONE;
        *ret_ns_fd = TAKE_FD(ns_fd);
        return 0;
}

int view_build(const ViewSpec *spec, int host_ns_fd, int *ret_ns_fd, size_t *ret_n_mounts, ViewStage *ret_stage) {
        ViewStage stage = VIEW_STAGE_NONE;
        int r;

        r = build_steps(spec, &stage, ret_ns_fd, ret_n_mounts);
        /* Home again, whatever happened: the half-built namespace dies with its last user. */
        if (setns(host_ns_fd, CLONE_NEWNS) < 0 && r >= 0) {
                r = -errno;
                *ret_ns_fd = safe_close(*ret_ns_fd);
        }
        (void) chdir("/");
        *ret_stage = stage;
        return r;
}
