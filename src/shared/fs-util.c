/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fs-util.h"
#include "macros.h"
#include "path-util.h"

void created_paths_done(CreatedPaths *c) {
        for (size_t i = 0; i < c->n; i++) {
                safe_close(c->entries[i].dir_fd);
                free(c->entries[i].name);
        }
        free(c->entries);
        *c = (CreatedPaths) {};
}

void created_paths_undo(CreatedPaths *c) {
        for (size_t i = c->n; i > 0; i--) {
                CreatedPath *e = &c->entries[i - 1];
                struct stat st;

                /* Only if it is still what we made: someone may have replaced it meanwhile. */
                if (fstatat(e->dir_fd, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != e->dev || st.st_ino != e->ino)
                        continue;
                (void) unlinkat(e->dir_fd, e->name, e->is_dir ? AT_REMOVEDIR : 0);
        }
}

static int created_paths_add(CreatedPaths *c, int dir_fd, const char *name, int fd, bool is_dir) {
        CreatedPath *n;
        struct stat st;

        if (!c)
                return 0;
        if (fstat(fd, &st) < 0)
                return -errno;
        n = realloc(c->entries, (c->n + 1) * sizeof(CreatedPath));
        if (!n)
                return -ENOMEM;
        c->entries = n;
        n[c->n] = (CreatedPath) { .dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3), .name = strdup(name),
                                  .dev = st.st_dev, .ino = st.st_ino, .is_dir = is_dir };
        if (n[c->n].dir_fd < 0 || !n[c->n].name) {
                int r = n[c->n].dir_fd < 0 ? -errno : -ENOMEM;
                safe_close(n[c->n].dir_fd);
                free(n[c->n].name);
                return r;
        }
        c->n++;
        return 0;
}

static bool openat2_unavailable = false;

int open_component_nofollow(int dir_fd, const char *name) {
        struct stat st;
        int fd;

        if (!openat2_unavailable) {
                struct open_how how = {
                        .flags = O_PATH | O_CLOEXEC,
                        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
                };
                fd = (int) syscall(SYS_openat2, dir_fd, name, &how, sizeof how);
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS && errno != EPERM)
                        return -errno;
                /* Filtered (seccomp) or too old: the same check by hand. */
                openat2_unavailable = true;
        }

        fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        if (S_ISLNK(st.st_mode)) {
                safe_close(fd);
                return -ELOOP;
        }
        return fd;
}

int open_path_creating(int root_fd, const char *path, PathKind kind, CreatedPaths *created, int *ret_fd) {
        _cleanup_close_ int dir_fd = -EBADF;
        const char *p = path_skip_root(path);
        int r;

        dir_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
        if (dir_fd < 0)
                return -errno;

        while (*p) {
                size_t len = strcspn(p, "/");
                bool last = p[len] == '\0';
                char name[NAME_MAX + 1];
                _cleanup_close_ int fd = -EBADF;

                if (len == 0 || len > NAME_MAX)
                        return -EINVAL;
                memcpy(name, p, len);
                name[len] = '\0';

                fd = open_component_nofollow(dir_fd, name);
                if (fd == -ENOENT && kind != PATH_EXISTING) {
                        bool make_dir = !last || kind == PATH_DIRECTORY;
                        bool made = true;

                        if (make_dir) {
                                if (mkdirat(dir_fd, name, 0755) < 0) {
                                        if (errno != EEXIST)
                                                return -errno;
                                        made = false;   /* raced into existence: not ours */
                                }
                        } else {
                                _cleanup_close_ int wfd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                                if (wfd < 0) {
                                        if (errno != EEXIST)
                                                return -errno;
                                        made = false;
                                }
                        }
                        fd = open_component_nofollow(dir_fd, name);
                        if (fd >= 0 && made) {
                                r = created_paths_add(created, dir_fd, name, fd, make_dir);
                                if (r < 0)
                                        return r;
                        }
                }
                if (fd < 0)
                        return fd;

                if (!last) {
                        struct stat st;
                        if (fstat(fd, &st) < 0)
                                return -errno;
                        if (!S_ISDIR(st.st_mode))
                                return -ENOTDIR;
                }
                safe_close(dir_fd);
                dir_fd = TAKE_FD(fd);
                p += len;
                p += strspn(p, "/");
        }

        *ret_fd = TAKE_FD(dir_fd);
        return 0;
}
