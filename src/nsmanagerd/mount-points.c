/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fs-util.h"
#include "log.h"
#include "mount-points.h"
#include "path-util.h"
#include "strv.h"
#include "view-policy.h"

#define MAX_DEPTH 32

typedef struct RemoveOp {
        char *description;
        char **paths;
        char tag[VIEW_POLICY_MADE_TAG_MAX];
} RemoveOp;

static void remove_op_free(RemoveOp *op) {
        if (!op)
                return;
        free(op->description);
        strv_free(op->paths);
        free(op);
}

/* Removes name in dir_fd if it is what 'expected' is (same inode), carries 'tag', and is an
 * empty directory or an empty file. 1 if it was removed, 0 if it stays. */
static int remove_if_made(int dir_fd, const char *name, const struct stat *expected, const char *tag) {
        _cleanup_close_ int fd = -EBADF;
        char value[VIEW_POLICY_MADE_TAG_MAX];
        struct stat st;
        ssize_t n;

        if (!S_ISDIR(expected->st_mode) && !S_ISREG(expected->st_mode))
                return 0;
        fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                    (S_ISDIR(expected->st_mode) ? O_DIRECTORY : 0));
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != expected->st_dev || st.st_ino != expected->st_ino)
                return 0;
        n = fgetxattr(fd, VIEW_POLICY_MADE_XATTR, value, sizeof value - 1);
        if (n <= 0)
                return 0;
        value[n] = '\0';
        if (!streq(value, tag) || (S_ISREG(st.st_mode) && st.st_size != 0))
                return 0;
        /* Still the same inode by that name, right before it goes (rmdir() itself refuses a
         * directory that is not empty, or that is a mount point in this namespace). */
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != expected->st_dev ||
            st.st_ino != expected->st_ino)
                return 0;
        if (unlinkat(dir_fd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
                return 0;
        return 1;
}

/* One path: walked from "/" without following symlinks as far as it exists, then removed from
 * the deepest component up while remove_if_made() removes. The number removed. */
static unsigned remove_path(int root_fd, const char *path, const char *tag) {
        /* Policy paths are short: deeper than this, the rest is not walked (and nothing removed). */
        int fds[MAX_DEPTH + 1];
        char names[MAX_DEPTH][NAME_MAX + 1];
        struct stat st[MAX_DEPTH];
        const char *p = path_skip_root(path);
        size_t depth = 0;
        unsigned removed = 0;

        fds[0] = root_fd;
        while (*p && depth < MAX_DEPTH) {
                size_t len = strcspn(p, "/");
                int fd;

                if (len == 0 || len > NAME_MAX)
                        break;
                memcpy(names[depth], p, len);
                names[depth][len] = '\0';
                fd = open_component_nofollow(fds[depth], names[depth]);
                if (fd < 0)
                        break;
                if (fstat(fd, &st[depth]) < 0) {
                        safe_close(fd);
                        break;
                }
                fds[++depth] = fd;
                p += len;
                p += strspn(p, "/");
        }
        /* fds[k + 1] is names[k], in fds[k]. */
        for (size_t k = depth; k > 0; k--) {
                if (removed == depth - k && remove_if_made(fds[k - 1], names[k - 1], &st[k - 1], tag) > 0)
                        removed++;
                safe_close(fds[k]);
        }
        return removed;
}

static int remove_run(int sock, void *userdata, NsmError *error) {
        const RemoveOp *op = userdata;
        _cleanup_close_ int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        unsigned removed = 0;

        (void) error;
        if (root_fd < 0)
                return -errno;
        for (char **path = op->paths; path && *path; path++)
                removed += remove_path(root_fd, *path, op->tag);
        return ipc_send(sock, (int) removed, 0, NULL, 0, NULL, 0);
}

static void on_removed(const NsmError *error, IpcMessage *final, const char *data, size_t size, void *userdata) {
        RemoveOp *op = userdata;

        (void) data;
        (void) size;
        if (error)
                log_debug("%s failed, ignoring: %s", op->description, nsm_error_message(error));
        else if (final && final->result > 0)
                log_debug("%s: removed %d.", op->description, final->result);
        remove_op_free(op);
}

void mount_points_remove(ChildSet *children, const char *name, uid_t uid, uint64_t mntns_inode, char *const *paths,
                         uint64_t deadline) {
        RemoveOp *op;
        int r;

        if (!children || !paths || !*paths)
                return;
        op = calloc(1, sizeof(RemoveOp));
        if (!op)
                return;
        for (char *const *p = paths; *p; p++)
                if (strv_extend(&op->paths, *p) < 0) {
                        remove_op_free(op);
                        return;
                }
        if (asprintf(&op->description, "Removing the empty mount points the [View] policy made for '%s'", name) < 0) {
                op->description = NULL;
                remove_op_free(op);
                return;
        }
        (void) view_policy_made_tag(uid, mntns_inode, op->tag);
        ChildSpec spec = {
                .description = op->description,
                .run = remove_run,
                .run_userdata = op,
                .deadline = deadline,
                .owner = uid,
                .done = on_removed,
                .userdata = op,
        };
        r = child_start(children, &spec);
        if (r < 0) {
                log_debug_errno(r, "%s: failed to start: %m", op->description);
                remove_op_free(op);
        }
}
