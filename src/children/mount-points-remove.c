/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "bus-errors.h"
#include "bus-util.h"
#include "fs-util.h"
#include "mount-points-remove.h"
#include "path-util.h"
#include "strv.h"
#include "view-policy.h"

/* Policy paths are short: deeper than this, the rest is not walked (and nothing removed). */
#define MAX_DEPTH 32

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

static int method_remove(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_close_ int root_fd = -EBADF;
        char tag[VIEW_POLICY_MADE_TAG_MAX];
        unsigned removed = 0;
        uint64_t mntns_id;
        uint32_t uid;
        int inode;
        int r;

        /* Every path is checked before anything is removed. */
        r = sd_bus_message_read(m, "utb", &uid, &mntns_id, &inode);
        if (r >= 0)
                r = bus_message_read_bytes_strv(m, &paths);
        if (r < 0 || mntns_id == 0 || (uid_t) uid == (uid_t) -1)
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
        for (char **path = paths; path && *path; path++)
                if (!path_is_absolute_normalized(*path))
                        return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");

        (void) view_policy_made_tag((uid_t) uid, mntns_id, inode, tag);
        root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return bus_error_set_errnof(error, -errno, "Failed to open '/': %m");
        for (char **path = paths; path && *path; path++)
                removed += remove_path(root_fd, *path, tag);
        return sd_bus_reply_method_return(m, "u", removed);
}

static const sd_bus_vtable mount_points_remove_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Remove", "utbaay", "u", method_remove, 0),
        SD_BUS_VTABLE_END,
};

const ChildInterface mount_points_remove_interface = { MOUNT_POINTS_REMOVE_INTERFACE, mount_points_remove_vtable };
