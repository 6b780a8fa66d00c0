/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/fsuid.h>
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

void created_paths_rollback(CreatedPaths *c, size_t n) {
        CreatedPaths later = { .entries = c->entries + n, .n = c->n - n };

        if (n >= c->n)
                return;
        created_paths_undo(&later);
        for (size_t i = n; i < c->n; i++) {
                safe_close(c->entries[i].dir_fd);
                free(c->entries[i].name);
        }
        c->n = n;
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

/* mkdirat(), or for a file openat(O_CREAT | O_EXCL), of name in dir_fd: -errno. */
static int make_component(int dir_fd, const char *name, bool make_dir) {
        if (make_dir)
                return mkdirat(dir_fd, name, 0755) < 0 ? -errno : 0;
        int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        safe_close(fd);
        return 0;
}

/* make_component(), as c->owner_uid where dir_fd is theirs. */
static int make_component_as(const CreatedPaths *c, int dir_fd, const char *name, bool make_dir) {
        struct stat st;
        int r;

        if (!c || c->owner_uid == 0 || c->owner_uid == (uid_t) -1)
                return make_component(dir_fd, name, make_dir);
        if (fstat(dir_fd, &st) < 0)
                return -errno;
        if (st.st_uid != c->owner_uid)
                return make_component(dir_fd, name, make_dir);
        /* The fs ids of this thread only (a forked child's one thread); they also drop the
         * capabilities that override permissions, so the call is checked as theirs. */
        uid_t old_uid = setfsuid(c->owner_uid);
        gid_t old_gid = setfsgid(c->owner_gid);
        r = make_component(dir_fd, name, make_dir);
        (void) setfsgid(old_gid);
        (void) setfsuid(old_uid);
        /* Not writable to them (chmod u-w, an immutable directory): fails as their own mkdir
         * would. Never made as root instead: what root makes there, and deeper, would be
         * root's in their home and never removed. A read-only file system refuses root too. */
        return r;
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

/* 'dir_fd' (the directory something is about to be created in, 'len' bytes of 'path') must
 * be owner's: checked on the fd the creation then uses, so no rename moves another directory
 * in between. */
static int check_dir_owner(int dir_fd, const char *path, size_t len, uid_t owner, char **ret_dir) {
        struct stat st;

        if (owner == (uid_t) -1)
                return 0;
        if (fstat(dir_fd, &st) < 0)
                return -errno;
        if (st.st_uid == owner)
                return 0;
        if (ret_dir) {
                *ret_dir = len > 0 ? strndup(path, len) : strdup("/");
                if (!*ret_dir)
                        return -ENOMEM;
        }
        return -EPERM;
}

int open_path_creating_owned(int root_fd, const char *path, PathKind kind, uid_t owner, CreatedPaths *created,
                             char **ret_dir, int *ret_fd) {
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

                        /* dir_fd's path: what comes before name, without its slash ("/" at the root) */
                        r = check_dir_owner(dir_fd, path, p - path > 1 ? (size_t) (p - path - 1) : 0, owner, ret_dir);
                        if (r < 0)
                                return r;
                        r = make_component_as(created, dir_fd, name, make_dir);
                        if (r == -EEXIST)
                                made = false;   /* raced into existence: not ours */
                        else if (r < 0)
                                return r;
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

int open_path_creating(int root_fd, const char *path, PathKind kind, CreatedPaths *created, int *ret_fd) {
        return open_path_creating_owned(root_fd, path, kind, (uid_t) -1, created, NULL, ret_fd);
}

int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        return 0;
}

static int fsync_directory_of(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        _cleanup_close_ int fd = -EBADF;
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash)
                return -EINVAL;
        *(slash == dir ? slash + 1 : slash) = 0;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) < 0)
                return -errno;
        return 0;
}

int write_file_atomic(const char *path, const char *contents, size_t size, int flags) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r = 0;

        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        for (size_t done = 0; done < size;) {
                ssize_t k = write(fd, contents + done, size - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                done += (size_t) k;
        }
        if (r >= 0 && (flags & WRITE_FILE_SYNC) && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        if (flags & WRITE_FILE_SYNC)
                return fsync_directory_of(path);
        return 0;
}

int path_next_name(const char **p, char name[static NAME_MAX + 1]) {
        size_t len;

        *p += strspn(*p, "/");
        if (!**p)
                return 0;
        len = strcspn(*p, "/");
        if (len > NAME_MAX)
                return -ENAMETOOLONG;
        memcpy(name, *p, len);
        name[len] = 0;
        *p += len;
        return 1;
}

#define SYMLINKS_MAX 32

int path_follow_symlink(int link_fd, int root_fd, char **todo, char **p, int *dir_fd) {
        char target[PATH_MAX], *rest = NULL;
        ssize_t k;

        k = readlinkat(link_fd, "", target, sizeof target - 1);
        if (k < 0)
                return -errno;
        target[k] = 0;
        if (asprintf(&rest, "%s%s%s", target, **p ? "/" : "", *p) < 0)
                return -ENOMEM;
        free(*todo);
        *todo = *p = rest;
        if (target[0] != '/')
                return 0;
        safe_close(*dir_fd);
        *dir_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
        return *dir_fd < 0 ? -errno : 1;
}

int open_path_safe(int root_fd, const char *path, int *ret_fd) {
        _cleanup_free_ char *todo = strdup(path_skip_root(path));
        _cleanup_close_ int dir_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
        unsigned links = 0;
        /* Whether every directory on the way so far is root's. A directory of a user's holds
         * what they make it hold: a FUSE mount of theirs says any file is root's, and where
         * fs.protected_hardlinks=0 they can link one of root's symlinks in. Past one, a link
         * is not followed, whoever it says owns it (systemd's CHASE_SAFE does the same). */
        bool trusted = true;

        if (!todo)
                return -ENOMEM;
        if (dir_fd < 0)
                return -errno;
        for (char *p = todo;;) {
                _cleanup_close_ int fd = -EBADF;
                char name[NAME_MAX + 1];
                struct stat st;
                int r;

                r = path_next_name((const char **) &p, name);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        break;
                }

                fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode)) {
                        if (st.st_uid != 0 || !trusted)
                                return -EPERM;
                        if (++links > SYMLINKS_MAX)
                                return -ELOOP;
                        r = path_follow_symlink(fd, root_fd, &todo, &p, &dir_fd);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (*p && !S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                if (st.st_uid != 0)
                        trusted = false;
                safe_close(dir_fd);
                dir_fd = TAKE_FD(fd);
        }
        *ret_fd = TAKE_FD(dir_fd);
        return 0;
}

int umount2_fd(int fd) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        return umount2(p, MNT_DETACH) < 0 ? -errno : 0;
}

int open_path_no_symlinks(const char *path, int *ret_fd) {
        /* Without O_NOFOLLOW, RESOLVE_NO_SYMLINKS refuses a trailing symlink too (-ELOOP): no
         * fstat() afterwards, which would ask the file system — a FUSE server that never
         * answers, on a path a user covered. */
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_IN_ROOT,
        };
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -EBADF;

        if (root < 0)
                return -errno;
        if (!*path_skip_root(path)) {
                *ret_fd = TAKE_FD(root);
                return 0;
        }
        /* RESOLVE_IN_ROOT: relative to the root fd, which is ours, not to the working directory. */
        fd = (int) syscall(SYS_openat2, root, path_skip_root(path), &how, sizeof how);
        if (fd < 0 && (errno == ENOSYS || errno == EPERM))
                /* Filtered (systemd 252's RestrictSUIDSGID= filter cannot look into openat2's
                 * arguments, so it refuses the call) or too old: one component at a time. */
                return open_path_creating(root, path, PATH_EXISTING, NULL, ret_fd);
        if (fd < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
