/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "child.h"
#include "fs-util.h"
#include "mount-util.h"
#include "path-util.h"
#include "propagation.h"

/* Children answer with (result, message): the message names the path and what was wrong. */
static _printf_(3, 4) int fail(int sock, int r, const char *fmt, ...) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        (void) child_send(sock, r, 0, buf, n < 0 ? 0 : (size_t) (n >= (int) sizeof buf ? (int) sizeof buf - 1 : n) + 1, NULL, 0);
        return r;
}

static int ok(int sock) {
        return child_send(sock, 0, 0, NULL, 0, NULL, 0);
}

static int run(ChildFunc fn, void *userdata, char **ret_message) {
        ChildReply reply;
        int r = child_run(fn, userdata, NULL, NULL, &reply);
        if (r < 0)
                return r;
        if (reply.result < 0 && ret_message && reply.data_size > 0 && reply.data[reply.data_size - 1] == 0)
                *ret_message = strdup(reply.data);
        child_reply_close_fds(&reply);
        return reply.result;
}

/* Resolves an absolute path inside the current root without following any symlink: a link a
 * user planted in their view must never redirect the daemon elsewhere. */
static int resolve_no_symlinks(const char *path, int *ret_fd) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_IN_ROOT,
        };
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        if (streq(path, "/")) {
                *ret_fd = TAKE_FD(root);
                return 0;
        }
        _cleanup_close_ int fd = (int) syscall(SYS_openat2, root, path_skip_root(path), &how, sizeof how);
        if (fd < 0)
                return -errno;
        /* With O_PATH|O_NOFOLLOW a trailing symlink is opened itself: refuse it like any other. */
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static const char *path_error(int r) {
        switch (-r) {
        case ELOOP:
                return "has a symbolic link in it (links are not followed)";
        case ENOENT:
                return "does not exist";
        case ENOTDIR:
                return "has a component that is not a directory";
        case EXDEV:
                return "leaves the namespace's root";
        default:
                return strerror(-r);
        }
}

/* Binds the mount subtree at fd onto itself (mount --rbind P P) and returns an fd of the new
 * mount: propagation can only be changed on a mount of its own. The clone's fd names the new
 * mount once attached (fd itself, and /proc/self/fd/N of it, still name the covered one). */
static int bind_onto_itself(int fd, int *ret_fd) {
        _cleanup_close_ int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);

        if (tree < 0)
                return -errno;
        if (move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return -errno;
        *ret_fd = TAKE_FD(tree);
        return 0;
}

static int open_mount_point(int sock, const char *path, bool bind_if_needed, int *ret_fd, bool *ret_bound) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (ret_bound)
                *ret_bound = false;
        r = resolve_no_symlinks(path, &fd);
        if (r < 0)
                return fail(sock, r, "'%s' %s.", path, path_error(r));
        r = path_is_mount_point(fd, "");
        if (r < 0)
                return fail(sock, r, "Cannot tell whether '%s' is a mount point: %s.", path, strerror(-r));
        if (r == 0) {
                if (!bind_if_needed)
                        return fail(sock, -EINVAL, "'%s' is not a mount point.", path);
                _cleanup_close_ int nfd = -EBADF;
                r = bind_onto_itself(fd, &nfd);
                if (r < 0)
                        return fail(sock, r, "Failed to bind '%s' onto itself: %s.", path, strerror(-r));
                close(fd);
                fd = TAKE_FD(nfd);
                if (ret_bound)
                        *ret_bound = true;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int enter(int sock, int ns_fd) {
        if (ns_fd < 0)
                return 0;
        int r = mntns_enter(ns_fd);
        if (r < 0)
                return fail(sock, r, "Failed to enter the namespace: %s.", strerror(-r));
        return 0;
}

/* ---- SetPropagation / EnslaveSubtree ---- */

typedef struct PropagationOp {
        int ns_fd;
        const char *path;
        const char *source;
        PropagationMode mode;
        JoinMode join;
        bool recursive, read_only, make_dir, host_propagates;
} PropagationOp;

static int set_propagation_child(int sock, void *userdata) {
        PropagationOp *op = userdata;
        _cleanup_close_ int fd = -EBADF;
        struct mount_attr attr = { .propagation = MS_PRIVATE };
        bool bound;
        int r;

        r = enter(sock, op->ns_fd);
        if (r < 0)
                return r;
        r = open_mount_point(sock, op->path, true, &fd, &bound);
        if (r < 0)
                return r;
        /* A path we just bound onto itself under a shared parent sits in the parent's peer group:
         * made shared as it is, mounts under it would show up twice everywhere. Private first
         * gives it a group of its own. (Slave keeps following the parent's group, as asked.) */
        if (bound && op->mode == PROPAGATION_SHARED &&
            mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return fail(sock, -errno, "Failed to make '%s' private: %m.", op->path);
        attr.propagation = propagation_mode_to_ms_flag(op->mode);
        if (mount_setattr(fd, "", AT_EMPTY_PATH | (op->recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) < 0)
                return fail(sock, -errno, "Failed to make '%s' %s: %m.", op->path, propagation_mode_to_string(op->mode));
        return ok(sock);
}

int ns_set_propagation(int ns_fd, const char *path, PropagationMode mode, bool recursive, char **ret_message) {
        PropagationOp op = { .ns_fd = ns_fd, .path = path, .mode = mode, .recursive = recursive };
        return run(set_propagation_child, &op, ret_message);
}

/* ---- ShareSubtree ---- */

/* Peer group and master of the mount fd refers to, and the peer group of its parent. */
static int fd_get_groups(int fd, uint64_t *ret_peer, uint64_t *ret_master, uint64_t *ret_parent_peer) {
        MountInfo mi, parent;
        int r = mount_info_get(fd, "", &mi, &parent);
        if (r < 0)
                return r;
        *ret_peer = mi.peer_group;
        *ret_master = mi.master_group;
        *ret_parent_peer = parent.id != mi.id ? parent.peer_group : 0;
        return 0;
}

static int host_share_child(int sock, void *userdata) {
        PropagationOp *op = userdata;
        _cleanup_close_ int fd = -EBADF;
        struct mount_attr attr = {};
        uint64_t peer = 0, master = 0, parent_peer = 0;
        int r;

        if (mkdir(op->path, 0755) < 0 && errno != EEXIST)
                return fail(sock, -errno, "Failed to create '%s': %m.", op->path);
        r = open_mount_point(sock, op->path, true, &fd, NULL);
        if (r < 0)
                return r;
        r = fd_get_groups(fd, &peer, &master, &parent_peer);
        if (r < 0)
                return fail(sock, r, "Cannot find '%s' in the mount table: %s.", op->path, strerror(-r));
        /* Already shared in a group of its own: keep it, views may already be its peers. A mount
         * bound onto itself under a shared parent (as we just may have done) sits in the
         * parent's group instead: mounts under it would show up twice everywhere. */
        if (peer != 0 && master == 0 && peer != parent_peer)
                return ok(sock);
        /* Private first, then shared: a group of its own. */
        attr.propagation = MS_PRIVATE;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return fail(sock, -errno, "Failed to make '%s' private: %m.", op->path);
        attr.propagation = MS_SHARED;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return fail(sock, -errno, "Failed to make '%s' shared: %m.", op->path);
        return ok(sock);
}

int host_share_subtree(const char *path, char **ret_message) {
        PropagationOp op = { .ns_fd = -EBADF, .path = path };
        return run(host_share_child, &op, ret_message);
}

typedef struct HostMount {
        char *target;   /* below the shared path */
        int tree_fd;    /* a detached clone, made in the host namespace */
} HostMount;

static void host_mounts_free(HostMount *sub, size_t n) {
        for (size_t i = 0; sub && i < n; i++) {
                free(sub[i].target);
                safe_close(sub[i].tree_fd);
        }
        free(sub);
}

/* Clones (one mount each, in mount table order: parents before children) of what the current
 * namespace has mounted below 'path'. Mounts covered by later ones are still listed in
 * mountinfo, but their path now opens another mount: those are skipped, as are unbindable
 * ones. */
static int clone_submounts(const char *path, HostMount **ret, size_t *ret_n) {
        MountEntry *e = NULL;
        size_t n = 0, n_sub = 0, plen = strlen(path);
        HostMount *sub;
        int r;

        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        sub = calloc(n + 1, sizeof(HostMount));
        if (!sub) {
                mount_entries_free(e, n);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int at = -EBADF;
                uint64_t id;

                if (strncmp(e[i].target, path, plen) != 0 || e[i].target[plen] != '/')
                        continue;
                if (resolve_no_symlinks(e[i].target, &at) < 0 || fd_get_mount_id(at, "", &id) < 0 || id != e[i].id)
                        continue;
                int t = open_tree(at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
                if (t < 0)
                        continue;
                sub[n_sub].target = strdup(e[i].target);
                if (!sub[n_sub].target) {
                        safe_close(t);
                        r = -ENOMEM;
                        break;
                }
                sub[n_sub++].tree_fd = t;
        }
        mount_entries_free(e, n);
        if (r < 0) {
                host_mounts_free(sub, n_sub);
                return r;
        }
        *ret = sub;
        *ret_n = n_sub;
        return 0;
}

static int join_child(int sock, void *userdata) {
        PropagationOp *op = userdata;
        _cleanup_close_ int host_fd = -EBADF, view_fd = -EBADF;
        struct mount_attr attr = { .propagation = MS_PRIVATE };
        HostMount *sub = NULL;
        size_t n_sub = 0;
        uint64_t host_peer = 0, master = 0, parent_peer = 0, peer;
        struct stat host_st = {}, view_st;
        int r;

        /* In the host: the group to join, and clones of what the host has mounted below it. */
        r = resolve_no_symlinks(op->path, &host_fd);
        if (r >= 0)
                r = path_is_mount_point(host_fd, "");
        if (r > 0 && fd_get_groups(host_fd, &host_peer, &master, &parent_peer) >= 0 && host_peer != 0) {
                if (fstat(host_fd, &host_st) < 0)
                        return fail(sock, -errno, "Failed to stat the host's '%s': %m.", op->path);
                r = clone_submounts(op->path, &sub, &n_sub);
                if (r < 0)
                        return fail(sock, r, "Failed to copy the host's mounts under '%s': %s.", op->path, strerror(-r));
        } else if (op->join == JOIN_SLAVE) {
                /* Nothing shared at that path on the host: a slave of whatever it follows now. */
                host_fd = safe_close(host_fd);
                host_peer = 0;
        } else
                return fail(sock, -EINVAL, "The host's '%s' is not a shared mount point: share it on the host first.",
                            op->path);

        r = enter(sock, op->ns_fd);
        if (r < 0)
                goto finish;
        r = open_mount_point(sock, op->path, true, &view_fd, NULL);
        if (r < 0)
                goto finish;
        if (host_peer == 0) {
                attr.propagation = MS_SLAVE;
                if (mount_setattr(view_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                        r = fail(sock, -errno, "Failed to make '%s' a slave: %m.", op->path);
                else
                        r = ok(sock);
                goto finish;
        }

        /* Already where it should be: leave it alone (no window in which events are missed). */
        r = fd_get_groups(view_fd, &peer, &master, &parent_peer);
        if (r < 0) {
                r = fail(sock, r, "Cannot find '%s' in the view's mount table: %s.", op->path, strerror(-r));
                goto finish;
        }
        if ((op->join != JOIN_SLAVE && peer == host_peer && master == 0) ||
            (op->join == JOIN_PEER_UNLESS_ENSLAVED && master == host_peer) ||
            (op->join == JOIN_SLAVE && peer == 0 && master == host_peer)) {
                r = ok(sock);
                goto finish;
        }
        /* A group can only be joined on the same filesystem (e.g. not a PrivateTmp= /tmp). */
        if (fstat(view_fd, &view_st) < 0 || view_st.st_dev != host_st.st_dev) {
                r = fail(sock, -EXDEV, "'%s' in the view is not the host's filesystem; it cannot follow the host's.",
                         op->path);
                goto finish;
        }

        /* Private while we fill it: a mount attached under a shared /mnt would propagate back to
         * the host and every other view, where it already is. */
        attr.propagation = MS_PRIVATE;
        if (mount_setattr(view_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
                r = fail(sock, -errno, "Failed to make '%s' private: %m.", op->path);
                goto finish;
        }
        /* Mounts the host made before the view joined would never propagate now: copy the ones
         * the view lacks (parents before children). A clone of a shared mount is a peer of its
         * source; under a slave it has to receive only, as a propagated copy would. */
        for (size_t i = 0; i < n_sub; i++) {
                _cleanup_close_ int at = -EBADF;
                if (resolve_no_symlinks(sub[i].target, &at) < 0 || path_is_mount_point(at, "") != 0)
                        continue;
                if (op->join == JOIN_SLAVE) {
                        struct mount_attr slave = { .propagation = MS_SLAVE };
                        if (mount_setattr(sub[i].tree_fd, "", AT_EMPTY_PATH, &slave, sizeof slave) < 0)
                                continue;
                }
                (void) move_mount(sub[i].tree_fd, "", at, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        }
        r = mount_join_peer_group(host_fd, view_fd);
        if (r < 0) {
                r = fail(sock, r, "Failed to make '%s' a peer of the host's: %s.", op->path, strerror(-r));
                goto finish;
        }
        if (op->join == JOIN_SLAVE) {
                attr.propagation = MS_SLAVE;
                if (mount_setattr(view_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
                        r = fail(sock, -errno, "Failed to make '%s' a slave: %m.", op->path);
                        goto finish;
                }
        }
        r = ok(sock);
finish:
        host_mounts_free(sub, n_sub);
        return r;
}

int ns_join_host(int ns_fd, const char *path, JoinMode mode, char **ret_message) {
        PropagationOp op = { .ns_fd = ns_fd, .path = path, .join = mode };
        return run(join_child, &op, ret_message);
}

bool host_path_is_reserved(const char *path, char *const *reserved) {
        for (char *const *p = reserved; p && *p; p++) {
                size_t n = strlen(*p);
                if (strncmp(path, *p, n) == 0 && (path[n] == 0 || path[n] == '/'))
                        return true;
        }
        return false;
}

void host_keep_unbindable(const char *path, char *const *reserved) {
        size_t n = strlen(path);

        /* A recursive change of an ancestor changed these too. */
        for (char *const *p = reserved; p && *p; p++)
                if (streq(path, "/") || (strncmp(*p, path, n) == 0 && (*p)[n] == '/'))
                        (void) mount_set_propagation(*p, PROPAGATION_UNBINDABLE, false);
}

/* ---- BindMount ---- */

static int bind_child(int sock, void *userdata) {
        PropagationOp *op = userdata;
        _cleanup_close_ int src = -EBADF, tree = -EBADF, dest = -EBADF, root = -EBADF;
        _cleanup_(created_paths_done) CreatedPaths created = {};
        struct mount_attr attr = {};
        struct stat st;
        int r;

        /* Clone on the host: a clone made after entering the view would copy the view's tree. */
        r = resolve_no_symlinks(op->source, &src);
        if (r < 0)
                return fail(sock, r, "Source '%s' %s.", op->source, path_error(r));
        if (fstat(src, &st) < 0)
                return fail(sock, -errno, "Failed to stat source '%s': %m.", op->source);
        tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
        if (tree < 0) {
                if (errno == EINVAL)
                        return fail(sock, -EINVAL, "Source '%s' is unbindable and cannot be bound anywhere.", op->source);
                return fail(sock, -errno, "Failed to clone source '%s': %m.", op->source);
        }
        /* One way: the host's later mounts under the source reach the view, not the reverse. */
        if (!op->host_propagates) {
                attr.propagation = MS_SLAVE;
                if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return fail(sock, -errno, "Failed to make the clone of '%s' a slave: %m.", op->source);
        }
        if (op->read_only) {
                attr = (struct mount_attr) { .attr_set = MOUNT_ATTR_RDONLY };
                if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return fail(sock, -errno, "Failed to make the clone of '%s' read-only: %m.", op->source);
        }

        r = enter(sock, op->ns_fd);
        if (r < 0)
                return r;
        /* Created one component at a time on O_PATH fds, never through a symlink: a link a user
         * planted in their home cannot make us create or mount anything elsewhere. */
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return fail(sock, -errno, "Failed to open the view's root: %m.");
        r = open_path_creating(root, op->path,
                               !op->make_dir ? PATH_EXISTING : S_ISDIR(st.st_mode) ? PATH_DIRECTORY : PATH_FILE,
                               &created, &dest);
        if (r < 0) {
                created_paths_undo(&created);
                return fail(sock, r, "Destination '%s' %s%s.", op->path, path_error(r),
                            r == -ENOENT && !op->make_dir ? " (use the create-destination flag)" : "");
        }
        if (move_mount(tree, "", dest, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
                r = -errno;
                /* Nothing half-applied: the directories we made land on the host's disk too. */
                dest = safe_close(dest);
                created_paths_undo(&created);
                return fail(sock, r, "Failed to mount '%s' on '%s': %s.", op->source, op->path, strerror(-r));
        }
        return ok(sock);
}

int ns_bind_mount(int ns_fd, const char *source, const char *destination, bool read_only, bool make_dir,
                  bool host_propagates, char **ret_message) {
        PropagationOp op = { .ns_fd = ns_fd, .source = source, .path = destination, .read_only = read_only,
                             .make_dir = make_dir, .host_propagates = host_propagates };
        return run(bind_child, &op, ret_message);
}

/* ---- Unmount ---- */

static int unmount_child(int sock, void *userdata) {
        PropagationOp *op = userdata;
        _cleanup_close_ int fd = -EBADF, parent = -EBADF, root = -EBADF;
        _cleanup_free_ char *dir = NULL;
        const char *base;
        uint64_t id, root_id;
        int r;

        r = enter(sock, op->ns_fd);
        if (r < 0)
                return r;
        r = open_mount_point(sock, op->path, false, &fd, NULL);
        if (r < 0)
                return r;
        /* Whatever the spelling, never the namespace's root: that would remount the root
         * filesystem read-only. */
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0 || fd_get_mount_id(root, "", &root_id) < 0 || fd_get_mount_id(fd, "", &id) < 0)
                return fail(sock, -EIO, "Failed to identify the mount at '%s'.", op->path);
        if (id == root_id)
                return fail(sock, -EINVAL, "'%s' is the namespace's root and is never unmounted.", op->path);

        /* Any fd on the mount, even O_PATH, keeps it busy: let go of it and unmount by name from
         * inside the parent directory, opened without following links, so that nothing a user
         * renames meanwhile can redirect umount2() elsewhere. */
        fd = safe_close(fd);
        base = strrchr(op->path, '/') + 1;
        dir = strndup(op->path, base - op->path);
        if (!dir)
                return fail(sock, -ENOMEM, "Out of memory.");
        r = resolve_no_symlinks(dir, &parent);
        if (r < 0)
                return fail(sock, r, "'%s' %s.", dir, path_error(r));
        if (fd_get_mount_id(parent, base, &id) < 0 || id == root_id)
                return fail(sock, -EINVAL, "'%s' changed while it was being unmounted.", op->path);
        if (fchdir(parent) < 0)
                return fail(sock, -errno, "Failed to enter '%s': %m.", dir);
        if (umount2(base, UMOUNT_NOFOLLOW | (op->recursive ? MNT_DETACH : 0)) < 0) {
                if (errno == EBUSY)
                        return fail(sock, -EBUSY, "'%s' is busy (in use, or has mounts below it); detach it instead.",
                                    op->path);
                return fail(sock, -errno, "Failed to unmount '%s': %m.", op->path);
        }
        return ok(sock);
}

int ns_unmount(int ns_fd, const char *path, bool detach, char **ret_message) {
        PropagationOp op = { .ns_fd = ns_fd, .path = path, .recursive = detach };
        return run(unmount_child, &op, ret_message);
}
