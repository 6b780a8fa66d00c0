/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "fs-util.h"
#include "host.h"
#include "log.h"
#include "mount-util.h"

static _printf_(3, 4) int host_fail(char **ret_message, int r, const char *fmt, ...) {
        va_list ap;

        errno = -r;   /* for %m */
        va_start(ap, fmt);
        if (ret_message && vasprintf(ret_message, fmt, ap) < 0)
                *ret_message = NULL;
        va_end(ap);
        return r;
}

static int make_unbindable(const char *path, mode_t mode) {
        int r;

        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return -errno;
        r = mount_ensure_mount_point(path);
        if (r < 0)
                return r;
        r = mount_set_propagation(path, PROPAGATION_PRIVATE, false);
        if (r < 0)
                return r;
        return mount_set_propagation(path, PROPAGATION_UNBINDABLE, false);
}

int host_prepare(const char *subtree_root, const char *state_dir, char *const *shared_subtrees, char **ret_message) {
        unsigned long fl = 0;
        int r;

        r = mount_get_propagation("/", &fl);
        if (r < 0)
                return host_fail(ret_message, r, "Failed to read the propagation of '/': %m");
        if (!(fl & MS_SHARED)) {
                r = mount_set_propagation("/", PROPAGATION_SHARED, true);
                if (r < 0)
                        return host_fail(ret_message, r, "Failed to make '/' shared (views follow the host through it): %m");
        }
        r = make_unbindable(subtree_root, 0755);
        if (r < 0)
                return host_fail(ret_message, r, "Failed to make SubtreeRoot '%s' an unbindable mount: %m", subtree_root);
        r = make_unbindable(state_dir, 0700);
        if (r < 0)
                return host_fail(ret_message, r, "Failed to make StateDirectory '%s' an unbindable mount: %m", state_dir);
        for (char *const *p = shared_subtrees; p && *p; p++) {
                _cleanup_free_ char *why = NULL;

                r = host_share_path(*p, &why);
                if (r == -EAGAIN) {
                        /* A user's mount must not keep the daemon from starting. */
                        log_warning("%s", why);
                        continue;
                }
                if (r < 0) {
                        if (ret_message)
                                *ret_message = TAKE_PTR(why);
                        return r;
                }
        }
        return 0;
}

/* The host's directory 'path', created if missing (in a parent that exists), opened one name
 * at a time: no symlink followed, and no name looked up in a FUSE mount (a user's server may
 * never answer; this runs in the event loop at start and at ReloadConfig). Checked by the
 * mounts the walk goes through, not by the paths of the mount table, which a user who owns
 * a directory on the way can change without mounting anything (a symlink swapped in, a
 * RENAME_EXCHANGE). -EREMOTE: below a FUSE mount. */
static int open_host_dir(const char *path, int *ret_fd) {
        _cleanup_close_ int root = -EBADF;
        MountEntry *table = NULL;
        size_t n = 0;
        int r = -ESTALE;

        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        /* Twice at most: once more if a mount on the way is newer than the table. */
        for (int tries = 0; tries < 2 && r == -ESTALE; tries++) {
                _cleanup_close_ int parent = -EBADF;
                _cleanup_free_ char *dir = NULL;
                const char *name;

                mount_entries_free(table, n);
                table = NULL;
                n = 0;
                r = mount_table_read_self(&table, &n);
                if (r < 0)
                        return r;
                r = open_path_outside_fuse(root, path, table, n, /* by_id= */ true, ret_fd);
                if (r != -ENOENT)
                        continue;
                /* Missing: created in its parent, whose own mount is checked first (creating asks it). */
                name = strrchr(path, '/') + 1;
                dir = strndup(path, (size_t) (name - path));
                if (!dir) {
                        r = -ENOMEM;
                        break;
                }
                r = open_path_outside_fuse(root, dir, table, n, true, &parent);
                if (r >= 0)
                        r = mount_fd_outside_fuse(parent, table, n, true);
                if (r >= 0 && mkdirat(parent, name, 0755) < 0 && errno != EEXIST)
                        r = -errno;
                if (r >= 0)
                        r = open_path_outside_fuse(parent, name, table, n, true, ret_fd);
        }
        mount_entries_free(table, n);
        return r;
}

int host_share_path(const char *path, char **ret_message) {
        _cleanup_close_ int fd = -EBADF;
        struct mount_attr attr = {};
        uint64_t peer = 0, master = 0, parent_peer = 0;
        int r;

        r = open_host_dir(path, &fd);
        if (r == -EREMOTE)
                return host_fail(ret_message, -EAGAIN, "'%s' lies below a FUSE mount, whose server (a user's, maybe) "
                                 "may never answer: not shared now, nor joined by views built meanwhile.", path);
        if (r < 0)
                return host_fail(ret_message, r, "'%s' cannot be created or opened without following a symlink: %m.", path);
        r = path_is_mount_point(fd, "");
        if (r < 0)
                return host_fail(ret_message, r, "Cannot tell whether '%s' is a mount point: %m.", path);
        if (r == 0) {
                _cleanup_close_ int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
                if (tree < 0 || move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        return host_fail(ret_message, -errno, "Failed to bind '%s' onto itself: %m.", path);
                /* The clone's fd names the new mount; fd still names the one it covers. */
                safe_close(fd);
                fd = TAKE_FD(tree);
        }
        r = mount_get_groups(fd, &peer, &master, &parent_peer);
        if (r < 0)
                return host_fail(ret_message, r, "Cannot find '%s' in the mount table: %m.", path);
        /* Already shared in a group of its own: keep it, views may already be its peers. A mount
         * bound onto itself under a shared parent (as just done, maybe) sits in the parent's
         * group instead, and every mount under it would show up twice: private, then shared. */
        if (peer != 0 && master == 0 && peer != parent_peer)
                return 0;
        attr.propagation = MS_PRIVATE;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return host_fail(ret_message, -errno, "Failed to make '%s' private: %m.", path);
        attr.propagation = MS_SHARED;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return host_fail(ret_message, -errno, "Failed to make '%s' shared: %m.", path);
        return 0;
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
