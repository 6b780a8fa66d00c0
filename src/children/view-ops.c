/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fs-util.h"
#include "host.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "own-view-rules.h"
#include "path-util.h"
#include "strv.h"
#include "view-op-message.h"
#include "view-policy-apply.h"
#include "view-policy.h"

/* Recorded binds that are no longer mounted here (root unmounted one in the view, or its
 * parent went): they are no binds of the caller's any more, and count for nothing. Asked in
 * the view, by unique id or, before Linux 6.8, by fingerprint (a mount that got the gone one's
 * reused id is not it); where that cannot be told, a record stays. */
static void find_gone_binds(const ViewOp *op, ViewOpResult *result) {
        for (size_t i = 0; i < op->n_bind_mounts && result->n_gone < VIEW_OP_MOUNTS_MAX; i++)
                if (mount_id_is_mounted(op->bind_mounts[i]) == 0)
                        result->gone[result->n_gone++] = op->bind_mounts[i];
}

static bool is_gone(const ViewOpResult *result, MountId id) {
        return mount_id_in(id, result->gone, result->n_gone);
}

static int reply_ok(sd_bus_message *call, const ViewOpResult *result) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ViewOpResult r = result ? *result : (ViewOpResult) {};
        size_t n;
        int k;

        /* Where the view's mount count is cheap to know (we are in it): NMounts stays current. */
        if (mntns_count_mounts(0, &n) >= 0)
                r.n_mounts = (uint32_t) MIN(n, (size_t) UINT32_MAX);
        k = sd_bus_message_new_method_return(call, &reply);
        if (k >= 0)
                k = sd_bus_message_append(reply, "(tt)(tt)u", r.mounted.unique, r.mounted.old, r.replaced.unique,
                                          r.replaced.old, r.n_mounts);
        if (k >= 0)
                k = bus_message_append_mount_ids(reply, r.gone, r.n_gone);
        if (k >= 0)
                k = bus_message_append_mount_ids(reply, r.policy_mounts, r.n_policy_mounts);
        if (k >= 0)
                k = sd_bus_send(NULL, reply, NULL);
        return k;
}

/* A path that could not be resolved: a refusal of own-view-rules.h is named already, any other
 * failure is what the lookup's errno says about the path. */
static int path_failed(NsmError *error, int r, const char *what, const char *path) {
        return nsm_error_set_path_errnof(error, r, "%s '%s' %s.", what, path,
                                         r == -ELOOP ? "has a symbolic link in it (links are not followed)" :
                                         r == -ENOENT ? "does not exist" :
                                         r == -ENOTDIR ? "has a component that is not a directory" :
                                         r == -EXDEV ? "leaves the namespace's root" : strerror(-r));
}

/* As the caller when there is one (their permissions decide what they may reach). */
static int resolve_as(const ViewOp *op, const char *path, int *ret_fd) {
        int r, k;

        if (!op->caller)
                return open_path_no_symlinks(path, ret_fd);
        r = own_view_become(op->caller);
        if (r < 0)
                return r;
        r = open_path_no_symlinks(path, ret_fd);
        k = own_view_unbecome();
        if (k < 0) {
                *ret_fd = safe_close(*ret_fd);
                return k;
        }
        return r;
}

/* Binds the mount subtree at fd onto itself (mount --rbind P P) and returns an fd of the new
 * mount: propagation can only be changed on a mount of its own. */
static int bind_onto_itself(int fd, int *ret_fd) {
        _cleanup_close_ int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);

        if (tree < 0)
                return -errno;
        if (move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return -errno;
        *ret_fd = TAKE_FD(tree);
        return 0;
}

static int mount_changed(NsmError *error, const ViewOp *op, const char *path) {
        return nsm_error_setf(error, NSM_ERROR_MOUNT_CHANGED,
                              "The mount at '%s' is not mount %" PRIu64 " any more: it is gone, or it has moved. "
                              "Nothing was changed; read the mounts again.", path, op->expected_id);
}

/* An operation by id (UnmountById, …): the mount at 'fd' must be the one the caller was shown:
 * by the kernel's unique id (never reused) for an id in its range, else by mountinfo's (what
 * GetMounts shows, and all there is before Linux 6.8; the path was resolved to it, so a mount
 * elsewhere that got the reused id does not pass). */
static int check_expected_id(const ViewOp *op, int fd, const char *path, NsmError *error) {
        MountId id;
        int r;

        if (op->expected_id == 0)
                return 0;
        r = fd_get_mount_ids(fd, "", &id);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to identify the mount at '%s': %m.", path);
        if (op->expected_id >= MOUNT_ID_UNIQUE_MIN ? id.unique == op->expected_id : id.old == op->expected_id)
                return 0;
        return mount_changed(error, op, path);
}

/* The mount at 'path' (bound onto itself first if it is none and 'bind_if_needed'). */
static int open_mount_point(const ViewOp *op, const char *path, bool bind_if_needed, int *ret_fd, bool *ret_bound,
                            NsmError *error) {
        _cleanup_close_ int fd = -EBADF, nfd = -EBADF;
        int r;

        if (ret_bound)
                *ret_bound = false;
        r = resolve_as(op, path, &fd);
        if (r < 0 && op->expected_id != 0 && (r == -ENOENT || r == -ENOTDIR))
                return mount_changed(error, op, path);
        if (r < 0)
                return path_failed(error, r, "Path", path);
        r = path_is_mount_point(fd, "");
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Cannot tell whether '%s' is a mount point: %m.", path);
        if (r == 0 && op->expected_id != 0)
                return mount_changed(error, op, path);
        if (r > 0) {
                r = check_expected_id(op, fd, path, error);
                if (r < 0)
                        return r;
        } else {
                if (!bind_if_needed)
                        return nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "'%s' is not a mount point.", path);
                if (op->caller)
                        return own_view_check_not_mount_point(path, error);
                r = bind_onto_itself(fd, &nfd);
                if (r < 0)
                        return nsm_error_set_path_errnof(error, r, "Failed to bind '%s' onto itself: %m.", path);
                safe_close(fd);
                fd = TAKE_FD(nfd);
                if (ret_bound)
                        *ret_bound = true;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int enter_namespace(int ns_fd, NsmError *error) {
        int r;

        if (ns_fd < 0)
                return 0;
        r = mntns_enter(ns_fd);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to enter the namespace: %m.");
        return 0;
}

/* ---- SetPropagation ---- */

static int set_propagation(sd_bus_message *call, const ViewOp *op, NsmError *error) {
        _cleanup_close_ int fd = -EBADF;
        struct mount_attr attr = { .propagation = MS_PRIVATE };
        bool bound;
        int r;

        r = enter_namespace(op->ns_fd, error);
        if (r < 0)
                return r;
        r = open_mount_point(op, op->path, true, &fd, &bound, error);
        if (r < 0)
                return r;
        if (op->caller) {
                r = own_view_check_propagation(op->path, fd, op->recursive, op->own_mounts, op->n_own_mounts,
                                               op->policy_mounts, op->n_policy_mounts, error);
                if (r < 0)
                        return path_failed(error, r, "Path", op->path);
        }
        /* A path just bound onto itself under a shared parent sits in the parent's peer group:
         * made shared as it is, mounts under it would show up twice everywhere. Private first
         * gives it a group of its own. (Slave keeps following the parent's group, as asked.) */
        if (bound && op->mode == PROPAGATION_SHARED && mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to make '%s' private: %m.", op->path);
        attr.propagation = propagation_mode_to_ms_flag(op->mode);
        if (mount_setattr(fd, "", AT_EMPTY_PATH | (op->recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to make '%s' %s: %m.", op->path,
                                                 propagation_mode_to_string(op->mode));
        return reply_ok(call, NULL);
}

/* ---- ShareSubtree / EnslaveSubtree ---- */

typedef struct HostMount {
        char *target;   /* below the shared path */
        int tree_fd;    /* a detached clone, made in the host namespace */
} HostMount;

typedef struct HostMounts {
        HostMount *mounts;
        size_t n;
} HostMounts;

static void host_mounts_done(HostMounts *h) {
        for (size_t i = 0; i < h->n; i++) {
                free(h->mounts[i].target);
                safe_close(h->mounts[i].tree_fd);
        }
        free(h->mounts);
        *h = (HostMounts) {};
}

/* Clones (one mount each, parents before children: mount table order) of what the current
 * namespace has mounted below 'path'. Mounts covered by later ones are still listed in
 * mountinfo, but their path now opens another mount: those are skipped (docs/kernel.md), as
 * are unbindable ones. */
static int clone_submounts(const char *path, HostMounts *ret) {
        MountEntry *e = NULL;
        size_t n = 0, plen = strlen(path);
        HostMounts h = {};
        int r;

        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        h.mounts = calloc(n + 1, sizeof(HostMount));
        if (!h.mounts) {
                mount_entries_free(e, n);
                return -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_close_ int at = -EBADF;
                uint64_t id;

                if (strncmp(e[i].target, path, plen) != 0 || e[i].target[plen] != '/')
                        continue;
                if (open_path_no_symlinks(e[i].target, &at) < 0 || fd_get_mount_id(at, "", &id) < 0 || id != e[i].id)
                        continue;
                int t = open_tree(at, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
                if (t < 0)
                        continue;
                h.mounts[h.n] = (HostMount) { .target = strdup(e[i].target), .tree_fd = t };
                if (!h.mounts[h.n++].target)
                        r = -ENOMEM;
        }
        mount_entries_free(e, n);
        if (r < 0) {
                host_mounts_done(&h);
                return r;
        }
        *ret = h;
        return 0;
}

/* What the host has at the path: the mount to follow, a clone of it that is a slave of its
 * group (the source for joining as a slave without ever being a peer), and clones of what is
 * mounted below it. Taken in the host, before entering the view: clones must be made in the
 * namespace that owns the mount (docs/kernel.md). */
typedef struct HostSide {
        int fd;                  /* the host's mount at the path, -EBADF if it shares nothing there */
        int slave_fd;            /* JOIN_SLAVE: a detached clone of it, made a slave of its group */
        uint64_t peer_group;
        dev_t dev;
        HostMounts below;
} HostSide;

static void host_side_done(HostSide *h) {
        safe_close(h->fd);
        safe_close(h->slave_fd);
        host_mounts_done(&h->below);
}

static int host_side_open(const ViewOp *op, HostSide *h, NsmError *error) {
        uint64_t master, parent_peer;
        struct stat st;
        int r;

        *h = (HostSide) { .fd = -EBADF, .slave_fd = -EBADF };
        r = open_path_no_symlinks(op->path, &h->fd);
        if (r >= 0)
                r = path_is_mount_point(h->fd, "");
        if (r <= 0 || mount_get_groups(h->fd, &h->peer_group, &master, &parent_peer) < 0 || h->peer_group == 0) {
                h->fd = safe_close(h->fd);
                h->peer_group = 0;
                if (op->join == JOIN_SLAVE)
                        return 0;   /* nothing shared there: a slave of whatever the view follows now */
                return nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "The host's '%s' is not a shared mount point: "
                                      "share it on the host first.", op->path);
        }
        if (fstat(h->fd, &st) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to stat the host's '%s': %m.", op->path);
        h->dev = st.st_dev;
        if (op->join == JOIN_SLAVE) {
                struct mount_attr attr = { .propagation = MS_SLAVE };
                h->slave_fd = open_tree(h->fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
                if (h->slave_fd < 0 || mount_setattr(h->slave_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                        return nsm_error_set_path_errnof(error, -errno, "Failed to prepare a slave of the host's "
                                                         "'%s': %m.", op->path);
        }
        r = clone_submounts(op->path, &h->below);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to copy the host's mounts under '%s': %m.", op->path);
        return 0;
}

/* Mounts the host made before the view joined would never propagate now: copy the ones the
 * view lacks (parents before children). A clone of a shared mount is a peer of its source;
 * under a slave it has to receive only, as a propagated copy would. */
static void copy_host_mounts(const ViewOp *op, HostSide *h) {
        for (size_t i = 0; i < h->below.n; i++) {
                _cleanup_close_ int at = -EBADF;
                if (open_path_no_symlinks(h->below.mounts[i].target, &at) < 0 || path_is_mount_point(at, "") != 0)
                        continue;
                if (op->join == JOIN_SLAVE) {
                        struct mount_attr slave = { .propagation = MS_SLAVE };
                        if (mount_setattr(h->below.mounts[i].tree_fd, "", AT_EMPTY_PATH, &slave, sizeof slave) < 0)
                                continue;
                }
                (void) move_mount(h->below.mounts[i].tree_fd, "", at, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        }
}

static int join_host(sd_bus_message *call, const ViewOp *op, NsmError *error) {
        _cleanup_(host_side_done) HostSide h = { .fd = -EBADF, .slave_fd = -EBADF };
        _cleanup_close_ int view_fd = -EBADF;
        struct mount_attr attr = { .propagation = MS_PRIVATE };
        uint64_t peer, master, parent_peer;
        struct stat st;
        int r;

        r = host_side_open(op, &h, error);
        if (r < 0)
                return r;
        r = enter_namespace(op->ns_fd, error);
        if (r < 0)
                return r;
        r = open_mount_point(op, op->path, true, &view_fd, NULL, error);
        if (r < 0)
                return r;
        if (op->caller) {
                r = own_view_check_propagation(op->path, view_fd, false, op->own_mounts, op->n_own_mounts, op->policy_mounts,
                                               op->n_policy_mounts, error);
                if (r < 0)
                        return path_failed(error, r, "Path", op->path);
        }
        if (h.fd < 0) {
                attr.propagation = MS_SLAVE;
                if (mount_setattr(view_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                        return nsm_error_set_path_errnof(error, -errno, "Failed to make '%s' a slave: %m.", op->path);
                return reply_ok(call, NULL);
        }

        /* Already where it should be: leave it alone (no window in which events are missed). */
        r = mount_get_groups(view_fd, &peer, &master, &parent_peer);
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Cannot find '%s' in the view's mount table: %m.", op->path);
        if ((op->join == JOIN_PEER && peer == h.peer_group && master == 0) ||
            (op->join == JOIN_SLAVE && peer == 0 && master == h.peer_group))
                return reply_ok(call, NULL);
        /* A group can only be joined on the same filesystem (not a PrivateTmp= /tmp, say). */
        if (fstat(view_fd, &st) < 0 || st.st_dev != h.dev)
                return nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "'%s' in the view is not the host's filesystem; "
                                      "it cannot follow the host's.", op->path);

        /* Private while it is filled: a mount attached under a shared /mnt would propagate back
         * to the host and every other view, where it already is. */
        if (mount_setattr(view_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to make '%s' private: %m.", op->path);
        copy_host_mounts(op, &h);

        /* A slave joins through the slave clone: it takes the clone's master and no peer group,
         * so it never sends, not even for a moment (a user's FUSE mount made right then would
         * reach the host otherwise). */
        r = mount_join_peer_group(op->join == JOIN_SLAVE ? h.slave_fd : h.fd, view_fd);
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Failed to make '%s' %s the host's: %m.", op->path,
                                                 op->join == JOIN_SLAVE ? "a slave of" : "a peer of");
        return reply_ok(call, NULL);
}

/* ---- the host's side of ShareSubtree ---- */

static int host_share(sd_bus_message *call, const ViewOp *op, NsmError *error) {
        ViewOpResult result = {};
        HostChanges changes = {};
        int r = host_share_path(op->path, /* only_root= */ false, &changes, error);
        if (r < 0)
                return r;
        /* The bind it made, if it made one: the daemon records it for --release. */
        for (size_t i = 0; i < changes.n; i++)
                if (changes.items[i].type == HOST_CHANGE_BIND)
                        result.mounted = changes.items[i].id;
        host_changes_done(&changes);
        return reply_ok(call, &result);
}

/* ---- BindMount ---- */

/* The source, cloned: a host path for full power (cloned in the host, before entering the
 * view: a clone made there would be of the view's tree), a path in the caller's own view for
 * a user (opened as the caller and cloned inside the view, by us: OPEN_TREE_CLONE must run in
 * the namespace that owns the mount). */
static int bind_clone_source(const ViewOp *op, int *ret_tree, struct stat *ret_st, NsmError *error) {
        _cleanup_close_ int src = -EBADF, tree = -EBADF;
        struct mount_attr attr = {};
        int r;

        if (op->caller)
                r = own_view_open_source(op->caller, op->source, &src, error);
        else
                r = open_path_no_symlinks(op->source, &src);
        if (r < 0)
                return path_failed(error, r, "Source", op->source);
        if (fstat(src, ret_st) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to stat source '%s': %m.", op->source);
        tree = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
        if (tree < 0) {
                if (errno == EINVAL)
                        return nsm_error_setf(error, NSM_ERROR_INVALID_PATH,
                                              "Source '%s' is unbindable and cannot be bound anywhere.", op->source);
                return nsm_error_set_path_errnof(error, -errno, "Failed to clone source '%s': %m.", op->source);
        }
        /* One way: later mounts under the source reach the view, not the reverse. */
        if (!op->host_propagates) {
                attr.propagation = MS_SLAVE;
                if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return nsm_error_set_path_errnof(error, -errno, "Failed to make the clone of '%s' a slave: %m.",
                                                         op->source);
        }
        /* On the detached tree, so the mount is never visible without them. A user's bind is
         * what fusermount would give them: nothing setuid, no device nodes. */
        attr = (struct mount_attr) { .attr_set = (op->read_only ? MOUNT_ATTR_RDONLY : 0) |
                                                 (op->caller ? MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV : 0) };
        if (attr.attr_set != 0 && mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to set the flags of the clone of '%s': %m.",
                                                 op->source);
        *ret_tree = TAKE_FD(tree);
        return 0;
}

/* The destination, as root (full power: no symlink followed, created as root) or as the
 * caller (own-view-rules.h). *ret_replace: it holds an earlier bind, to be replaced. */
static int bind_open_destination(const ViewOp *op, PathKind kind, CreatedPaths *created, int *ret_fd, bool *ret_replace,
                                 NsmError *error) {
        _cleanup_close_ int root = -EBADF, dest = -EBADF;
        MountId id;
        int r;

        if (op->caller) {
                r = own_view_open_destination(op->caller, op->path, op->make_dir, kind, op->own_mounts, op->n_own_mounts,
                                              created, &dest, ret_replace, error);
                if (r < 0)
                        return path_failed(error, r, "Destination", op->path);
                *ret_fd = TAKE_FD(dest);
                return 0;
        }
        /* Created one component at a time on O_PATH fds, never through a symlink: a link a user
         * planted in their home cannot make us create or mount anything elsewhere. */
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to open the view's root: %m.");
        r = open_path_creating(root, op->path, op->make_dir ? kind : PATH_EXISTING, created, &dest);
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Destination '%s' %s%s.", op->path,
                                                 r == -ELOOP ? "has a symbolic link in it (links are not followed)" :
                                                 r == -ENOENT ? "does not exist" :
                                                 r == -ENOTDIR ? "has a component that is not a directory" :
                                                 strerror(-r),
                                                 r == -ENOENT && !op->make_dir ?
                                                 " (use the create-destination flag)" : "");
        *ret_replace = path_is_mount_point(dest, "") > 0 && fd_get_mount_ids(dest, "", &id) >= 0 &&
                       mount_id_in(id, op->bind_mounts, op->n_bind_mounts);
        *ret_fd = TAKE_FD(dest);
        return 0;
}

/* Puts 'tree' where the earlier bind on dest is, atomically: beneath it, then the earlier one
 * goes (MOVE_MOUNT_BENEATH, Linux 6.5). No moment shows neither. */
static int bind_replace_beneath(int tree, int dest) {
        if (move_mount(tree, "", dest, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH | MOVE_MOUNT_BENEATH) < 0)
                return -errno;
        /* By its fd: the path names the top mount there, now the earlier bind. */
        return umount2_fd(dest);
}

/* The fd of the top mount at 'path' (as root, no symlinks), if it is the mount 'id'. */
static int open_top_mount(const char *path, uint64_t id, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t got;
        int r;

        r = open_path_no_symlinks(path, &fd);
        if (r < 0)
                return r;
        r = fd_get_mount_id(fd, "", &got);
        if (r < 0)
                return r;
        if (got != id)
                return -ESTALE;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static const MountEntry *entry_by_id(const MountEntry *e, size_t n, uint64_t id) {
        for (size_t i = 0; i < n; i++)
                if (e[i].id == id)
                        return &e[i];
        return NULL;
}

/* In a copy of the view made by the caller (unshare), where the parent is a peer of the view's:
 * the copies of the new bind and of the earlier one at 'path' are unmounted, top first. The
 * first unmount stays in the copy (its parent, the earlier bind's copy, is no peer of anything);
 * the second propagates to the view, where it takes the earlier bind away and puts the new one,
 * which covers it whole, in its place (fs/pnode.c, propagate_umount(): the "topper"). */
static int unmount_in_copy(const char *path, uint64_t parent_peer_group) {
        MountEntry *e = NULL;
        size_t n = 0;
        const MountEntry *top, *old, *parent;
        _cleanup_close_ int fd = -EBADF;
        uint64_t top_id, old_id;
        int r;

        r = open_path_no_symlinks(path, &fd);
        if (r < 0)
                return r;
        r = fd_get_mount_id(fd, "", &top_id);
        fd = safe_close(fd);
        if (r < 0)
                return r;
        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        top = entry_by_id(e, n, top_id);
        old = top ? entry_by_id(e, n, top->parent_id) : NULL;
        parent = old ? entry_by_id(e, n, old->parent_id) : NULL;
        /* The copy is ours alone, but its files are not: what the path reaches must still be the
         * two binds on the parent's copy. */
        r = parent && parent->peer_group == parent_peer_group && streq(old->target, top->target) ? 0 : -ESTALE;
        old_id = old ? old->id : 0;
        mount_entries_free(e, n);
        if (r < 0)
                return r;
        r = open_top_mount(path, top_id, &fd);
        if (r >= 0)
                r = umount2_fd(fd);
        fd = safe_close(fd);
        if (r >= 0)
                r = open_top_mount(path, old_id, &fd);
        if (r >= 0)
                r = umount2_fd(fd);
        return r;
}

/* Before Linux 6.5 (no MOVE_MOUNT_BENEATH) the kernel cannot put a mount beneath another, nor
 * unmount a covered mount without what covers it (docs/kernel.md): 'tree' goes on top of the
 * earlier bind, and the earlier one is then taken from beneath it by an unmount that
 * propagates. Its parent is made shared for the moment, a copy of the view is made (the copy's
 * parent is a peer of it), the copy of the earlier bind is unmounted there, and the kernel
 * puts the new bind, which covers the earlier one whole, in its place. The destination shows
 * the earlier bind, then the new one, never nothing; the parent gets its propagation back.
 * What this cannot do is refused before anything changes (Busy, in 'error'): an earlier
 * bind with mounts below it (they would stay beneath), or one on a shared mount (the unmount
 * would reach every peer, which then has neither). */
static int bind_replace_stacked(int tree, int dest, int ns_fd, const char *path, MountId replaced, NsmError *error) {
        _cleanup_close_ int parent_fd = -EBADF;
        _cleanup_free_ char *parent_path = NULL;
        struct mount_attr attr = { .propagation = MS_SHARED };
        unsigned long restore = MS_PRIVATE;
        uint64_t group, master, parent_peer, parent_id = 0;
        const MountEntry *old, *parent;
        MountEntry *e = NULL;
        bool below = false, shared = false;
        size_t n = 0;
        int r, k;

        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        old = entry_by_id(e, n, replaced.old);
        parent = old && old->parent_id != old->id ? entry_by_id(e, n, old->parent_id) : NULL;
        for (size_t i = 0; old && i < n; i++)
                below = below || (e[i].parent_id == old->id && e[i].id != old->id);
        if (parent) {
                parent_id = parent->id;
                shared = parent->peer_group != 0;
                restore = strstr(parent->propagation, "unbindable") ? MS_UNBINDABLE :
                          parent->master_group != 0 ? MS_SLAVE : MS_PRIVATE;
                parent_path = strdup(parent->target);
        }
        mount_entries_free(e, n);
        if (!parent)
                return -ESTALE;
        if (!parent_path)
                return -ENOMEM;
        if (below || shared)
                return nsm_error_setf(error, NSM_ERROR_BUSY, below ?
                                      "The earlier bind on '%s' has mounts below it: without MOVE_MOUNT_BENEATH (Linux "
                                      "6.5) they cannot be replaced with it, and would stay beneath the new bind. "
                                      "Unmount it (detach) first, then bind again." :
                                      "'%s' is on a shared mount: without MOVE_MOUNT_BENEATH (Linux 6.5) replacing a "
                                      "bind there would take it from the host and every other peer as well. Unmount it "
                                      "first, then bind again.", path);
        r = open_top_mount(parent_path, parent_id, &parent_fd);
        if (r < 0)
                return nsm_error_setf(error, NSM_ERROR_BUSY, "The mount that holds '%s' cannot be reached at '%s' "
                                      "(something covers it), and without MOVE_MOUNT_BENEATH (Linux 6.5) the bind "
                                      "cannot be replaced: unmount it first, then bind again.", path, parent_path);

        /* From here on the destination shows the new bind. */
        if (move_mount(tree, "", dest, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return -errno;
        r = mount_setattr(parent_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ? -errno : 0;
        if (r >= 0)
                r = mount_get_groups(parent_fd, &group, &master, &parent_peer);
        if (r >= 0)
                r = unshare(CLONE_NEWNS) < 0 ? -errno : 0;
        if (r >= 0) {
                r = unmount_in_copy(path, group);
                /* Leaving the copy ends it (nothing propagates from a namespace's end): only then
                 * is the parent without peers, and MS_SLAVE keeps its master. */
                k = mntns_enter(ns_fd);
                if (k < 0)
                        return k;     /* stuck outside the view: the child ends here, the view keeps both */
        }
        attr.propagation = restore;
        k = mount_setattr(parent_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ? -errno : 0;
        if (r >= 0)
                r = k;
        if (r >= 0)
                r = mount_id_is_mounted(replaced) == 0 ? 0 : -EBUSY;
        if (r < 0) {
                /* Nothing half-applied: the new bind goes again, the earlier one is where it was. */
                (void) umount2_fd(tree);
                return r;
        }
        return 0;
}

static int bind_replace(int tree, int dest, const ViewOp *op, MountId *ret_replaced, NsmError *error) {
        int r;

        r = fd_get_mount_ids(dest, "", ret_replaced);
        if (r < 0)
                return r;
        if (mount_beneath_supported())
                return bind_replace_beneath(tree, dest);
        return bind_replace_stacked(tree, dest, op->ns_fd, op->path, *ret_replaced, error);
}

/* MaxUserMounts=: the mounts the caller's binds hold in this view — each bind with everything
 * below it, the copies a recursive clone brought along included (or a bind of a directory
 * into itself doubles the view with each call) — plus what this one brings; a bind it
 * replaces is not counted. */
static int check_bind_limit(const ViewOp *op, const ViewOpResult *result, int dest, NsmError *error) {
        _cleanup_free_ uint64_t *tops = NULL;
        MountEntry *table = NULL;
        size_t n_table = 0, n_tops = 0, held, adds;
        MountId replaced = {};
        int r;

        if (!op->caller || op->max_own_binds == 0)
                return 0;
        if (path_is_mount_point(dest, "") > 0)
                (void) fd_get_mount_ids(dest, "", &replaced);
        tops = calloc(op->n_own_mounts + 1, sizeof(uint64_t));
        if (!tops)
                return -ENOMEM;
        for (size_t i = 0; i < op->n_own_mounts; i++)
                if (!is_gone(result, op->own_mounts[i]) && !mount_id_equal(op->own_mounts[i], replaced))
                        tops[n_tops++] = op->own_mounts[i].old;
        r = mount_table_read_self(&table, &n_table);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the view's mount table: %m.");
        held = mount_table_count_below(table, n_table, tops, n_tops);
        adds = mount_table_count_clone(table, n_table, op->source);
        mount_entries_free(table, n_table);
        if (held >= op->max_own_binds || adds > op->max_own_binds - held)
                return nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "The caller's binds hold %zu mounts in this "
                                      "view and this one would add %zu (MaxUserMounts=%u, every mount below a bind "
                                      "counted): unmount one first, or bind onto one of them to replace it.", held,
                                      adds, op->max_own_binds);
        return 0;
}

static int bind_mount(sd_bus_message *call, const ViewOp *op, NsmError *error) {
        _cleanup_close_ int tree = -EBADF, dest = -EBADF;
        _cleanup_(created_paths_done) CreatedPaths created = {};
        ViewOpResult result = {};
        bool replace = false;
        struct stat st;
        int r;

        if (!op->caller) {
                r = bind_clone_source(op, &tree, &st, error);
                if (r < 0)
                        return r;
        }
        r = enter_namespace(op->ns_fd, error);
        if (r < 0)
                return r;
        find_gone_binds(op, &result);
        if (op->caller) {
                r = bind_clone_source(op, &tree, &st, error);
                if (r < 0)
                        return r;
        }
        r = bind_open_destination(op, S_ISDIR(st.st_mode) ? PATH_DIRECTORY : PATH_FILE, &created, &dest, &replace,
                                  error);
        if (r >= 0)
                r = check_bind_limit(op, &result, dest, error);
        if (r < 0) {
                created_paths_undo(&created);
                return r;
        }
        if (replace)
                r = bind_replace(tree, dest, op, &result.replaced, error);
        else if (move_mount(tree, "", dest, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                r = -errno;
        if (r < 0) {
                /* Nothing half-applied: the directories made land on the host's disk too. */
                dest = safe_close(dest);
                created_paths_undo(&created);
                if (r == -ESTALE)
                        /* The mount table changed under the replacement (see bind_replace_stacked()). */
                        return nsm_error_setf(error, NSM_ERROR_BUSY, "The mounts at '%s' changed while the bind was "
                                              "being replaced; nothing was changed. Try again.", op->path);
                return nsm_error_set_path_errnof(error, r, "Failed to mount '%s' on '%s': %m.", op->source, op->path);
        }
        /* The clone's fd names the new mount once attached. */
        r = fd_get_mount_ids(tree, "", &result.mounted);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to identify the new mount on '%s': %m.", op->path);
        return reply_ok(call, &result);
}

/* ---- Unmount ---- */

/* A user's own bind goes by the fd that was checked, never by name: on the host (or in a
 * view where they are no mount points) the names of her mount points are hers to swap, and
 * an umount2() by name could meet another mount (the [View] policy's) than the one checked.
 * An fd keeps a mount busy, so this can only detach: without the detach flag, a bind with
 * mounts below it is still refused as busy; one merely in use goes once nothing uses it. */
static int unmount_own(sd_bus_message *call, const ViewOp *op, int fd, ViewOpResult *result, NsmError *error) {
        _cleanup_free_ MountId *below = NULL;
        size_t n_below = 0;
        int r;

        if (!op->recursive) {
                r = mount_subtree_ids(result->replaced, &below, &n_below);
                if (r < 0)
                        return nsm_error_set_path_errnof(error, r, "Failed to read the mounts below '%s': %m.",
                                                         op->path);
                if (n_below > 1)
                        return nsm_error_setf(error, NSM_ERROR_BUSY, "'%s' has mounts below it; detach it instead.",
                                              op->path);
        }
        r = umount2_fd(fd);
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Failed to unmount '%s': %m.", op->path);
        return reply_ok(call, result);
}

static int unmount_mount(sd_bus_message *call, const ViewOp *op, NsmError *error) {
        _cleanup_close_ int fd = -EBADF, parent = -EBADF, root = -EBADF;
        _cleanup_free_ char *dir = NULL;
        ViewOpResult result = {};
        const char *base;
        uint64_t id, root_id;
        int r;

        r = enter_namespace(op->ns_fd, error);
        if (r < 0)
                return r;
        find_gone_binds(op, &result);
        r = open_mount_point(op, op->path, false, &fd, NULL, error);
        if (r < 0)
                return r;
        /* Whatever the spelling, never the namespace's root: that would remount the root
         * filesystem read-only. */
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0 || fd_get_mount_id(root, "", &root_id) < 0 || fd_get_mount_ids(fd, "", &result.replaced) < 0)
                return nsm_error_set_errnof(error, -EIO, "Failed to identify the mount at '%s'.", op->path);
        if (result.replaced.old == root_id)
                return nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "'%s' is the namespace's root and is never "
                                      "unmounted.", op->path);
        if (op->caller) {
                r = own_view_check_unmount(op->path, fd, result.replaced, op->own_mounts, op->n_own_mounts, error);
                if (r < 0)
                        return path_failed(error, r, "Path", op->path);
                return unmount_own(call, op, fd, &result, error);
        }

        /* Detaching goes through the fd that was checked: no name is looked up again, so no
         * rename (RENAME_EXCHANGE in a directory a user can write) redirects it. */
        if (op->recursive)
                return unmount_own(call, op, fd, &result, error);

        /* A plain unmount must fail while the mount is in use, and any fd on it, even O_PATH,
         * keeps it busy: let go of it and unmount by name from inside the parent directory,
         * opened without following links; the name must still be that mount. (Between that
         * check and umount2() a user who can write the parent could swap names: only root and
         * manage callers come here, and their detach does not have that window.) */
        fd = safe_close(fd);
        base = strrchr(op->path, '/') + 1;
        dir = strndup(op->path, base - op->path);
        if (!dir)
                return -ENOMEM;
        r = resolve_as(op, dir, &parent);
        if (r < 0)
                return path_failed(error, r, "Path", dir);
        if (fd_get_mount_id(parent, base, &id) < 0 || id != result.replaced.old)
                return nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "'%s' changed while it was being unmounted.",
                                      op->path);
        if (fchdir(parent) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to enter '%s': %m.", dir);
        if (umount2(base, UMOUNT_NOFOLLOW | (op->recursive ? MNT_DETACH : 0)) < 0) {
                if (errno == EBUSY)
                        return nsm_error_setf(error, NSM_ERROR_BUSY, "'%s' is busy (in use, or has mounts below it); "
                                              "detach it instead.", op->path);
                return nsm_error_set_path_errnof(error, -errno, "Failed to unmount '%s': %m.", op->path);
        }
        return reply_ok(call, &result);
}

/* ---- the [View] policy of a view just built ---- */

/* Sentences for the daemon's log, ahead of the answer. */
static void send_notes(sd_bus_message *call, char **notes) {
        for (char **n = notes; n && *n; n++)
                (void) child_warn(call, *n);
}

static int apply_policy(sd_bus_message *call, const ViewOp *op, NsmError *error) {
        _cleanup_strv_free_ char **warnings = NULL, **notes = NULL;
        _cleanup_close_ int root = -EBADF;
        ViewOpResult result = {};
        size_t n = 0;
        int r;

        r = enter_namespace(op->ns_fd, error);
        if (r < 0)
                return r;
        /* setns() took us to the view's root: '/' is the view's. Paths that lie where others
         * than root and the user decide what they name are worth a warning at every build:
         * they can be spoiled (a malformed entry is left for applying to name). */
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root >= 0)
                (void) view_policy_warnings(op->policy, op->user, root, &warnings);
        send_notes(call, warnings);
        r = view_policy_apply(op->policy, op->user, result.policy_mounts, ELEMENTSOF(result.policy_mounts), &n, error,
                              &notes);
        send_notes(call, notes);
        if (r < 0)
                return r;
        result.n_policy_mounts = (uint32_t) n;
        return reply_ok(call, &result);
}

static int view_op_run(sd_bus_message *call, const ViewOp *op, NsmError *error) {
        switch (op->type) {
        case VIEW_OP_SET_PROPAGATION:
                return set_propagation(call, op, error);
        case VIEW_OP_JOIN:
                return join_host(call, op, error);
        case VIEW_OP_BIND:
                return bind_mount(call, op, error);
        case VIEW_OP_UNMOUNT:
                return unmount_mount(call, op, error);
        case VIEW_OP_HOST_SHARE:
                return host_share(call, op, error);
        case VIEW_OP_APPLY_POLICY:
                return apply_policy(call, op, error);
        default:
                return nsm_error_set_errnof(error, -EOPNOTSUPP, "Unknown operation.");
        }
}

/* ---- the request ---- */

/* The operation as the call states it; 'op' points into the call and the rest. */
typedef struct ViewOpRequest {
        ViewOp op;
        char *path, *source;
        Credentials caller;
        MountId *own, *binds, *policy_ids;
        ViewPolicy policy;
        UserRecord user;                 /* its name points into the call */
        const char *name;
} ViewOpRequest;

static void view_op_request_done(ViewOpRequest *q) {
        free(q->path);
        free(q->source);
        credentials_done(&q->caller);
        free(q->own);
        free(q->binds);
        free(q->policy_ids);
        view_policy_done(&q->policy);
        free(q->user.home);
        free(q->user.shell);
}

static bool path_ok(const char *p) {
        return p && path_is_absolute_normalized(p);
}

/* What the operations take for granted. */
static bool view_op_valid(const ViewOp *op) {
        if (op->type != VIEW_OP_APPLY_POLICY && !path_ok(op->path))
                return false;
        /* Without the view's fd the child stays in the host's namespace: a user's operation
         * would change the host. */
        if (op->caller && op->ns_fd < 0)
                return false;
        switch (op->type) {
        case VIEW_OP_SET_PROPAGATION:
                return op->mode >= 0 && op->mode < _PROPAGATION_MODE_MAX;
        case VIEW_OP_JOIN:
                return op->join >= 0 && op->join < _JOIN_MODE_MAX;
        case VIEW_OP_BIND:
                return path_ok(op->source);
        case VIEW_OP_APPLY_POLICY:
                return op->policy && op->user && op->user->name && op->user->uid != (uid_t) -1 &&
                       op->user->gid != (gid_t) -1;
        default:
                return true;
        }
}

/* "ah": the view's fd, or none (the host's namespace). */
static int read_view(sd_bus_message *m, int *ret_fd) {
        int r, fd = -EBADF;

        r = sd_bus_message_enter_container(m, 'a', "h");
        if (r >= 0)
                r = sd_bus_message_read(m, "h", &fd);
        if (r > 0 && sd_bus_message_read(m, "h", &fd) > 0)
                return -EBADMSG;
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        *ret_fd = fd;
        return r;
}

/* VIEW_OPS_RULES: the caller, if any, and the namespace's records. */
static int read_rules(sd_bus_message *m, ViewOpRequest *q) {
        const uint32_t *groups;
        size_t size;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(uuauu)");
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'r', "uuauu");
        if (r > 0) {
                r = sd_bus_message_read(m, "uu", &q->caller.uid, &q->caller.gid);
                if (r >= 0)
                        r = sd_bus_message_read_array(m, 'u', (const void **) &groups, &size);
                if (r >= 0)
                        r = sd_bus_message_read(m, "u", &q->op.max_own_binds);
                if (r < 0)
                        return r;
                if (q->caller.uid == (uid_t) -1 || q->caller.gid == (gid_t) -1 || size / sizeof(uint32_t) > NGROUPS_MAX)
                        return -EBADMSG;
                q->caller.n_groups = size / sizeof(uint32_t);
                q->caller.groups = q->caller.n_groups ? memdup(groups, size) : NULL;
                if (q->caller.n_groups && !q->caller.groups)
                        return -ENOMEM;
                q->op.caller = &q->caller;
                r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = bus_message_read_mount_ids(m, SIZE_MAX, &q->own, &q->op.n_own_mounts);
        if (r >= 0)
                r = bus_message_read_mount_ids(m, SIZE_MAX, &q->binds, &q->op.n_bind_mounts);
        if (r >= 0)
                r = bus_message_read_mount_ids(m, SIZE_MAX, &q->policy_ids, &q->op.n_policy_mounts);
        q->op.own_mounts = q->own;
        q->op.bind_mounts = q->binds;
        q->op.policy_mounts = q->policy_ids;
        return r;
}

static int read_policy(sd_bus_message *m, ViewOpRequest *q) {
        ViewPolicy *p = &q->policy;
        UserRecord *u = &q->user;
        int r, private_tmp, hide;

        r = sd_bus_message_enter_container(m, 'r', "btaayaayaayaayb");
        if (r >= 0)
                r = sd_bus_message_read(m, "bt", &private_tmp, &p->tmp_size);
        if (r >= 0)
                r = bus_message_read_bytes_strv(m, &p->bind_paths);
        if (r >= 0)
                r = bus_message_read_bytes_strv(m, &p->bind_read_only_paths);
        if (r >= 0)
                r = bus_message_read_bytes_strv(m, &p->temporary_file_system);
        if (r >= 0)
                r = bus_message_read_bytes_strv(m, &p->inaccessible_paths);
        if (r >= 0)
                r = sd_bus_message_read(m, "b", &hide);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'r', "suuayay");
        if (r >= 0)
                r = sd_bus_message_read(m, "suu", &q->name, &u->uid, &u->gid);
        if (r >= 0)
                r = bus_message_read_bytes(m, &u->home);
        if (r >= 0)
                r = bus_message_read_bytes(m, &u->shell);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        u->name = (char *) q->name;
        /* "": none. */
        if (u->home && !*u->home)
                u->home = mfree(u->home);
        if (u->shell && !*u->shell)
                u->shell = mfree(u->shell);
        p->private_tmp = private_tmp;
        p->hide_other_homes = hide;
        q->op.policy = p;
        q->op.user = u;
        return 0;
}

static int read_request(sd_bus_message *m, ViewOpRequest *q) {
        ViewOp *op = &q->op;
        int r, a = 0, b = 0, c = 0;
        uint32_t mode;

        if (op->type == VIEW_OP_APPLY_POLICY) {
                r = sd_bus_message_read(m, "h", &op->ns_fd);
                return r < 0 ? r : read_policy(m, q);
        }
        r = read_view(m, &op->ns_fd);
        if (r >= 0)
                r = bus_message_read_bytes(m, &q->path);
        op->path = q->path;
        switch (op->type) {
        case VIEW_OP_SET_PROPAGATION:
                if (r >= 0)
                        r = sd_bus_message_read(m, "ubt", &mode, &a, &op->expected_id);
                op->mode = r >= 0 && mode < _PROPAGATION_MODE_MAX ? (PropagationMode) mode : _PROPAGATION_MODE_INVALID;
                op->recursive = a;
                break;
        case VIEW_OP_JOIN:
                if (r >= 0)
                        r = sd_bus_message_read(m, "u", &mode);
                op->join = r >= 0 && mode < _JOIN_MODE_MAX ? (JoinMode) mode : _JOIN_MODE_INVALID;
                break;
        case VIEW_OP_BIND:
                if (r >= 0)
                        r = bus_message_read_bytes(m, &q->source);
                if (r >= 0)
                        r = sd_bus_message_read(m, "bbb", &a, &b, &c);
                op->source = q->source;
                op->read_only = a;
                op->make_dir = b;
                op->host_propagates = c;
                break;
        case VIEW_OP_UNMOUNT:
                if (r >= 0)
                        r = sd_bus_message_read(m, "bt", &a, &op->expected_id);
                op->recursive = a;
                break;
        case VIEW_OP_HOST_SHARE:
                return r;   /* no rules: root's alone */
        default:
                return -EBADMSG;
        }
        return r < 0 ? r : read_rules(m, q);
}

static int method_view_op(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(view_op_request_done) ViewOpRequest q = { .op = { .ns_fd = -EBADF, .mode = _PROPAGATION_MODE_INVALID,
                                                                    .join = _JOIN_MODE_INVALID } };
        _cleanup_(nsm_error_done) NsmError e = {};
        const char *member = sd_bus_message_get_member(m);
        int r;

        q.op.type = _VIEW_OP_TYPE_INVALID;
        for (ViewOpType t = 0; t < _VIEW_OP_TYPE_MAX; t++)
                if (streq(member, view_op_type_to_method(t)))
                        q.op.type = t;
        /* Everything the operation reads is in the call; the one fd in it is the view. */
        r = read_request(m, &q);
        if (r < 0 || !view_op_valid(&q.op))
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
        r = view_op_run(m, &q.op, &e);
        if (r < 0 && !nsm_error_is_set(&e))
                (void) nsm_error_set_errnof(&e, r, NULL);
        return r < 0 ? bus_error_set_nsm(error, &e) : r;
}

#define VIEW_OP_METHOD(name, signature) SD_BUS_METHOD(name, signature, VIEW_OPS_RESULT, method_view_op, 0)

static const sd_bus_vtable view_ops_vtable[] = {
        SD_BUS_VTABLE_START(0),
        VIEW_OP_METHOD("SetPropagation", "ahayubt" VIEW_OPS_RULES),
        VIEW_OP_METHOD("Join", "ahayu" VIEW_OPS_RULES),
        VIEW_OP_METHOD("BindMount", "ahayaybbb" VIEW_OPS_RULES),
        VIEW_OP_METHOD("Unmount", "ahaybt" VIEW_OPS_RULES),
        VIEW_OP_METHOD("HostShare", "ahay"),
        VIEW_OP_METHOD("ApplyPolicy", "h(btaayaayaayaayb)(suuayay)"),
        SD_BUS_VTABLE_END,
};

const ChildInterface view_ops_interface = { VIEW_OPS_INTERFACE, view_ops_vtable };
