/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "fs-util.h"
#include "host.h"
#include "log.h"
#include "mount-util.h"
#include "path-util.h"
#include "strv.h"
#include "text-escape.h"
#include "write-access.h"

/* ---- what a start changed, and undoing it ---- */

static int change_add(HostChanges *c, HostChange ch) {
        HostChange *n;

        if (!c) {
                free(ch.path);
                safe_close(ch.fd);
                return 0;
        }
        n = realloc(c->items, (c->n + 1) * sizeof(HostChange));
        if (!n) {
                free(ch.path);
                safe_close(ch.fd);
                return -ENOMEM;
        }
        c->items = n;
        c->items[c->n++] = ch;
        return 0;
}

int host_changes_take(HostChanges *c, HostChange *ch) {
        HostChange moved = *ch;
        *ch = (HostChange) { .fd = -EBADF };
        return change_add(c, moved);
}

int host_changes_add_mkdir(HostChanges *c, const char *path) {
        char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        return change_add(c, (HostChange) { .type = HOST_CHANGE_MKDIR, .path = p, .fd = -EBADF });
}

/* A change that keeps its own copy of the mount 'fd' and of its path, to be undone by. */
static int change_add_fd(HostChanges *c, HostChange ch, const char *path, int fd) {
        ch.fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (ch.fd < 0)
                return -errno;
        ch.path = strdup(path);
        if (!ch.path) {
                safe_close(ch.fd);
                return -ENOMEM;
        }
        return change_add(c, ch);
}

static int add_bind(HostChanges *c, const char *path, int fd) {
        HostChange ch = { .type = HOST_CHANGE_BIND, .fd = -EBADF };
        int r;

        if (!c)
                return 0;
        r = fd_get_mount_ids(fd, "", &ch.id);
        if (r < 0)
                return r;
        return change_add_fd(c, ch, path, fd);
}

/* Before the propagation of the existing mount 'fd' changes. */
static int add_propagation(HostChanges *c, const char *path, int fd) {
        HostChange ch = { .type = HOST_CHANGE_PROPAGATION, .fd = -EBADF };
        MountInfo mi, parent;
        int r;

        if (!c)
                return 0;
        r = mount_info_get(fd, "", &mi, &parent);
        if (r < 0)
                return r;
        ch.old_peer = mi.peer_group;
        ch.old_master = mi.master_group;
        ch.old_parent_peer = parent.id != mi.id ? parent.peer_group : 0;
        ch.old_unbindable = mi.propagation & MS_UNBINDABLE;
        return change_add_fd(c, ch, path, fd);
}

static int set_propagation_fd(int fd, unsigned long propagation) {
        struct mount_attr attr = { .propagation = propagation };
        return mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0 ? -errno : 0;
}

static void change_undo(const HostChange *ch) {
        int r = 0;

        switch (ch->type) {
        case HOST_CHANGE_MKDIR:
                /* Only an empty directory: whatever came into it since is not ours to remove. */
                if (rmdir(ch->path) < 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
                        log_debug_errno(errno, "Failed to remove the directory '%s' again, ignoring: %m", ch->path);
                return;
        case HOST_CHANGE_BIND:
                /* By the fd: exactly the mount we made, whatever was mounted at the path since. */
                r = umount2_fd(ch->fd);
                break;
        case HOST_CHANGE_PROPAGATION:
                if (ch->old_unbindable)
                        r = set_propagation_fd(ch->fd, MS_UNBINDABLE);
                else if (ch->old_peer == 0 && ch->old_master == 0)
                        r = set_propagation_fd(ch->fd, MS_PRIVATE);
                else {
                        /* A group (the parent's, a master's) cannot be named to the kernel
                         * without a mount of it: left shared, in a group of its own. */
                        log_warning("Cannot put the propagation of '%s' back as it was (%s %" PRIu64 "); it stays shared.",
                                    ch->path, ch->old_master ? "a slave of group" : "in peer group",
                                    ch->old_master ?: ch->old_peer);
                        return;
                }
                break;
        }
        if (r < 0)
                log_warning_errno(r, "Failed to undo what start-up did to '%s': %m", ch->path);
}

void host_changes_undo(HostChanges *c) {
        for (size_t i = c->n; i > 0; i--)
                change_undo(&c->items[i - 1]);
        host_changes_done(c);
}

void host_changes_done(HostChanges *c) {
        for (size_t i = 0; i < c->n; i++) {
                free(c->items[i].path);
                safe_close(c->items[i].fd);
        }
        free(c->items);
        *c = (HostChanges) {};
}

/* ---- start-up ---- */

/* 'path' a mount of its own, private and unbindable; created if missing. */
static int make_unbindable(const char *path, mode_t mode, HostChanges *changes) {
        _cleanup_close_ int fd = -EBADF, tree = -EBADF;
        MountInfo mi;
        int r;

        if (mkdir(path, mode) >= 0) {
                r = host_changes_add_mkdir(changes, path);
                if (r < 0)
                        return r;
        } else if (errno != EEXIST)
                return -errno;
        fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = path_is_mount_point(fd, "");
        if (r < 0)
                return r;
        if (r == 0) {
                tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
                if (tree < 0)
                        return -errno;
                if (move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        return -errno;
                r = add_bind(changes, path, tree);
                if (r < 0) {
                        (void) umount2_fd(tree);
                        return r;
                }
                safe_close(fd);
                fd = TAKE_FD(tree);
        } else {
                r = mount_info_get(fd, "", &mi, NULL);
                if (r < 0)
                        return r;
                if (mi.propagation & MS_UNBINDABLE)
                        return 0;   /* a previous start's, as it should be */
                r = add_propagation(changes, path, fd);
                if (r < 0)
                        return r;
        }
        r = set_propagation_fd(fd, MS_PRIVATE);
        if (r < 0)
                return r;
        return set_propagation_fd(fd, MS_UNBINDABLE);
}

int host_prepare_reserved(const char *subtree_root, const char *state_dir, HostChanges *changes, NsmError *error) {
        int r;

        r = mkdir_parents(subtree_root, 0755);
        if (r >= 0)
                r = make_unbindable(subtree_root, 0755, changes);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to make SubtreeRoot '%s' an unbindable mount: %m",
                                            subtree_root);
        r = make_unbindable(state_dir, 0700, changes);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to make StateDirectory '%s' an unbindable mount: %m",
                                            state_dir);
        return 0;
}

int host_share_root(char *const *reserved, const char *registry, NsmError *error) {
        unsigned long fl = 0;
        int r;

        r = mount_get_propagation("/", &fl);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the propagation of '/': %m");
        if (fl & MS_SHARED)
                return 0;
        r = mount_set_propagation("/", PROPAGATION_SHARED, true);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to make '/' shared (views follow the host through it): "
                                            "%m");
        /* The recursive change reached the reserved paths and the registry's pin: back to
         * unbindable, and private (a pin needs a mount that propagates nowhere). */
        host_keep_unbindable("/", reserved);
        if (registry && path_is_mount_point(AT_FDCWD, registry) > 0)
                (void) mount_set_propagation(registry, PROPAGATION_PRIVATE, false);
        return 0;
}

/* The host's directory 'path', created if missing (in a parent that exists), opened one name
 * at a time: no symlink followed, and no name looked up in a FUSE mount (a user's server may
 * never answer; this runs in the event loop at start and at ReloadConfig). Checked by the
 * mounts the walk goes through, not by the paths of the mount table, which a user who owns
 * a directory on the way can change without mounting anything (a symlink swapped in, a
 * RENAME_EXCHANGE). -EREMOTE: below a FUSE mount. */
/* Whether someone other than root can write directory 'fd' (create, rename or remove what is
 * in it): its owner, the mode, its ACL's named users and groups (under the mask), group root's
 * members. Its cached attributes and its ACL only (the caller made sure it is on no FUSE
 * mount); who in ret_who. */
static int writable_by_others(int fd, struct statx *ret, char **ret_who) {
        struct statx sx = {};

        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_UID | STATX_GID | STATX_MODE, &sx) < 0)
                return -errno;
        if (ret)
                *ret = sx;
        if (sx.stx_uid != 0) {
                if (asprintf(ret_who, "its owner, uid %" PRIu32, (uint32_t) sx.stx_uid) < 0)
                        return -ENOMEM;
                return 1;
        }
        return fd_find_other_writer(fd, &sx, (uid_t) -1, (gid_t) -1, /* names= */ false, ret_who);
}

static int refuse_parent(int parent, const char *path, NsmError *error) {
        _cleanup_free_ char *who = NULL;
        struct statx sx;
        int r = writable_by_others(parent, &sx, &who);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Cannot tell who may write the directory '%s' is in: %m.", path);
        if (r > 0)
                return nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "'%s' is not shared: the directory it is in can "
                                      "be written by someone other than root, %s (owner uid %u, group gid %u, mode "
                                      "%04o), who could put a symlink or a directory of theirs in its place.", path,
                                      who, sx.stx_uid, sx.stx_gid, sx.stx_mode & 07777);
        return 0;
}

static int open_host_dir(const char *path, bool only_root, HostChanges *changes, int *ret_fd, NsmError *error) {
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
                if (r >= 0 && only_root) {
                        r = refuse_parent(parent, path, error);
                        if (r < 0)
                                break;
                }
                if (r >= 0) {
                        if (mkdirat(parent, name, 0755) >= 0)
                                r = host_changes_add_mkdir(changes, path);
                        else if (errno != EEXIST)
                                r = -errno;
                }
                if (r >= 0)
                        r = open_path_outside_fuse(parent, name, table, n, true, ret_fd);
        }
        mount_entries_free(table, n);
        return r;
}

static int share_path(const char *path, bool only_root, HostChanges *changes, NsmError *error) {
        _cleanup_close_ int fd = -EBADF, parent = -EBADF;
        struct mount_attr attr = {};
        uint64_t peer = 0, master = 0, parent_peer = 0;
        struct statx sx;
        int r;

        r = open_host_dir(path, only_root, changes, &fd, error);
        if (r == -EREMOTE)
                /* Not now: a later start or ReloadConfig tries again (EAGAIN says so to the caller). */
                return nsm_error_set_errnof(error, -EAGAIN, "'%s' lies below a FUSE mount, whose server (a user's, "
                                            "maybe) may never answer: not shared now, nor joined by views built "
                                            "meanwhile.", path);
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "'%s' cannot be created or opened without following a "
                                                 "symlink: %m.", path);
        if (only_root) {
                /* A configured path a user can swap, or whose directory is hers, would share what
                 * she chooses with everybody: the administrator fixes it, a reload retries. */
                _cleanup_free_ char *who = NULL;
                r = writable_by_others(fd, &sx, &who);
                if (r < 0)
                        return nsm_error_set_errnof(error, r, "Cannot tell who owns '%s': %m.", path);
                if (sx.stx_uid != 0)
                        return nsm_error_setf(error, NSM_ERROR_INVALID_PATH,
                                              "'%s' is not shared: it belongs to uid %u, not root.", path, sx.stx_uid);
                parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (parent < 0)
                        return nsm_error_set_path_errnof(error, -errno, "Failed to open the directory '%s' is in: %m.",
                                                         path);
                r = refuse_parent(parent, path, error);
                if (r < 0)
                        return r;
        }
        r = path_is_mount_point(fd, "");
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Cannot tell whether '%s' is a mount point: %m.", path);
        if (r == 0) {
                _cleanup_close_ int tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
                if (tree < 0 || move_mount(tree, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        return nsm_error_set_path_errnof(error, -errno, "Failed to bind '%s' onto itself: %m.", path);
                r = add_bind(changes, path, tree);
                if (r < 0) {
                        (void) umount2_fd(tree);
                        return nsm_error_set_errnof(error, r, "Failed to record the bind of '%s': %m.", path);
                }
                /* The clone's fd names the new mount; fd still names the one it covers. */
                safe_close(fd);
                fd = TAKE_FD(tree);
        }
        r = mount_get_groups(fd, &peer, &master, &parent_peer);
        if (r < 0)
                return nsm_error_set_path_errnof(error, r, "Cannot find '%s' in the mount table: %m.", path);
        /* Already shared in a group of its own: keep it, views may already be its peers. A mount
         * bound onto itself under a shared parent (as just done, maybe) sits in the parent's
         * group instead, and every mount under it would show up twice: private, then shared. */
        if (peer != 0 && master == 0 && peer != parent_peer)
                return 0;
        if (changes && (changes->n == 0 || changes->items[changes->n - 1].type != HOST_CHANGE_BIND ||
                        !streq(changes->items[changes->n - 1].path, path))) {
                r = add_propagation(changes, path, fd);
                if (r < 0)
                        return nsm_error_set_errnof(error, r, "Failed to record the propagation of '%s': %m.", path);
        }
        attr.propagation = MS_PRIVATE;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to make '%s' private: %m.", path);
        attr.propagation = MS_SHARED;
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return nsm_error_set_path_errnof(error, -errno, "Failed to make '%s' shared: %m.", path);
        return 0;
}

int host_share_path(const char *path, bool only_root, HostChanges *changes, NsmError *error) {
        HostChanges mine = {};
        int r;

        /* Nothing half-applied: what this call did is undone if it fails, and handed to the
         * caller's list if it succeeds. */
        r = share_path(path, only_root, &mine, error);
        if (r < 0) {
                host_changes_undo(&mine);
                return r;
        }
        for (size_t i = 0; i < mine.n; i++) {
                int k = host_changes_take(changes, &mine.items[i]);
                if (k < 0 && r >= 0)
                        r = k;
        }
        host_changes_done(&mine);
        return r;
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

/* ---- the record of the daemon's mounts, and --release ---- */

typedef struct HostMount {
        char kind[16];           /* "pin" (the registry) or "bind" (a path bound onto itself) */
        MountId id;
        char *path;
} HostMount;

static void host_mounts_free(HostMount *m, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(m[i].path);
        free(m);
}

/* Whether the recorded mount is still there: by the host's mount table, never by looking the
 * path up (a user's FUSE mount may cover it, and its server may never answer). The old id is
 * reused by the next mount once ours is gone (an administrator's tmpfs at the same path gets
 * it): the unique id (Linux 6.8), or before it what the mount is (device, root, mount point),
 * must still be there too. A record that matches but for that sets *ret_reused. */
static const MountEntry *still_mounted(const MountEntry *table, size_t n, const HostMount *m, bool *ret_reused) {
        for (size_t i = 0; i < n; i++)
                if (table[i].id == m->id.old && streq(table[i].target, m->path)) {
                        if (mount_id_is_mounted(m->id) == 0) {
                                if (ret_reused)
                                        *ret_reused = true;
                                return NULL;
                        }
                        return &table[i];
                }
        return NULL;
}

static int host_mounts_read(HostMount **ret, size_t *ret_n) {
        _cleanup_fclose_ FILE *f = fopen(NSM_HOST_MOUNTS_FILE, "re");
        _cleanup_free_ char *line = NULL;
        HostMount *list = NULL;
        size_t n = 0, allocated = 0;

        *ret = NULL;
        *ret_n = 0;
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        while (getline(&line, &allocated, f) >= 0) {
                char kind[16], word[PATH_MAX * 2];
                HostMount m = {};
                HostMount *l;

                if (line[0] == '#' ||
                    sscanf(line, "%15s %" SCNu64 " %" SCNu64 " %8191s", kind, &m.id.unique, &m.id.old, word) != 4 ||
                    !STR_IN_SET(kind, "pin", "bind") || text_unescape(word, &m.path) < 0)
                        continue;
                if (!path_is_absolute_normalized(m.path)) {
                        free(m.path);
                        continue;
                }
                memcpy(m.kind, kind, sizeof kind);
                l = realloc(list, (n + 1) * sizeof(HostMount));
                if (!l) {
                        free(m.path);
                        host_mounts_free(list, n);
                        return -ENOMEM;
                }
                list = l;
                list[n++] = m;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

static int host_mounts_write(const HostMount *m, size_t n) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fputs("# The mounts nsmanagerd made on the host, for nsmanagerd --release: KIND UNIQUE-ID ID PATH\n", f);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *e = text_escape_word(m[i].path);
                if (e)
                        fprintf(f, "%s %" PRIu64 " %" PRIu64 " %s\n", m[i].kind, m[i].id.unique, m[i].id.old, e);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        r = mkdir_parents(NSM_HOST_MOUNTS_FILE, 0755);
        if (r < 0)
                return r;
        /* Synced like the state files where it is not on a tmpfs (the /run of every system
         * with systemd). */
        struct statfs sfs;
        bool is_volatile = statfs("/run/nsmanager", &sfs) >= 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
        return write_file_atomic(NSM_HOST_MOUNTS_FILE, buf, size, is_volatile ? 0 : WRITE_FILE_SYNC);
}

static int host_mounts_add(const char *kind, const char *path, MountId id) {
        HostMount *list = NULL, *l;
        MountEntry *table = NULL;
        size_t n = 0, k = 0, n_table = 0;
        int r;

        r = mount_table_read_self(&table, &n_table);
        if (r < 0)
                return r;
        r = host_mounts_read(&list, &n);
        if (r < 0) {
                mount_entries_free(table, n_table);
                return r;
        }
        /* Entries no longer mounted (unmounted by hand, or from before a reboot) go. */
        for (size_t i = 0; i < n; i++)
                if (still_mounted(table, n_table, &list[i], NULL) && !mount_id_equal(list[i].id, id))
                        list[k++] = list[i];
                else
                        free(list[i].path);
        mount_entries_free(table, n_table);
        n = k;
        l = realloc(list, (n + 1) * sizeof(HostMount));
        if (!l) {
                host_mounts_free(list, n);
                return -ENOMEM;
        }
        list = l;
        list[n] = (HostMount) { .id = id, .path = strdup(path) };
        if (!list[n].path) {
                host_mounts_free(list, n);
                return -ENOMEM;
        }
        snprintf(list[n].kind, sizeof list[n].kind, "%s", kind);
        r = host_mounts_write(list, n + 1);
        host_mounts_free(list, n + 1);
        return r;
}

int host_mounts_record_bind(const char *path, MountId id) {
        return host_mounts_add("bind", path, id);
}

int host_mounts_record(const HostChanges *changes, const char *registry) {
        int r = 0;

        if (registry) {
                MountId id;
                _cleanup_close_ int fd = open(registry, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && path_is_mount_point(fd, "") > 0 && fd_get_mount_ids(fd, "", &id) >= 0)
                        r = host_mounts_add("pin", registry, id);
        }
        for (size_t i = 0; changes && i < changes->n && r >= 0; i++)
                if (changes->items[i].type == HOST_CHANGE_BIND)
                        r = host_mounts_add("bind", changes->items[i].path, changes->items[i].id);
        return r;
}

/* The mounts right on or below the mount with mountinfo id 'id' (also one over it at its
 * path: unmounting the path would take that one). */
static int mounts_below(const MountEntry *table, size_t n, uint64_t id, char ***ret) {
        _cleanup_strv_free_ char **below = NULL;

        for (size_t i = 0; i < n; i++)
                if (table[i].parent_id == id && table[i].id != id && strv_extend(&below, table[i].target) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(below);
        return 0;
}

/* Unmounts the recorded mount m, known to be mounted with nothing on or below it. */
static int release_one(const HostMount *m) {
        _cleanup_close_ int root = -EBADF, fd = -EBADF;
        MountEntry *table = NULL;
        MountId id = {};
        size_t n = 0;
        int r;

        if (streq(m->kind, "pin")) {
                /* A file in StateDirectory, which is root's and unbindable. */
                if (umount2(m->path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        return log_warning_errno(errno, "Failed to unmount '%s': %m", m->path);
                (void) unlink(m->path);
                return 0;
        }
        /* A directory reached without asking a FUSE server on the way, and unmounted by its fd:
         * exactly that mount. */
        root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return log_warning_errno(errno, "Failed to open '/': %m");
        r = mount_table_read_self(&table, &n);
        if (r >= 0)
                r = open_path_outside_fuse(root, m->path, table, n, /* by_id= */ true, &fd);
        mount_entries_free(table, n);
        if (r == -EREMOTE)
                return log_warning_errno(r, "Keeping the bind of '%s' onto itself: it lies below a FUSE mount.", m->path);
        /* The very mount recorded: by its unique id where the record has one (or by what it is). */
        if (r >= 0)
                r = fd_get_mount_ids(fd, "", &id);
        if (r >= 0 && !mount_id_equal(id, m->id))
                r = -ESTALE;
        if (r >= 0)
                r = umount2_fd(fd);
        if (r < 0)
                return log_warning_errno(r, "Failed to unmount '%s': %m", m->path);
        return 0;
}

static int compare_depth(const void *a, const void *b) {
        const HostMount *x = a, *y = b;
        /* Longer paths first: a bind below another goes before it. */
        size_t lx = strlen(x->path), ly = strlen(y->path);
        return lx < ly ? 1 : lx > ly ? -1 : strcmp(x->path, y->path);
}

int host_release(void) {
        HostMount *list = NULL;
        bool kept = false;
        size_t n = 0;
        int r;

        r = host_mounts_read(&list, &n);
        if (r < 0)
                return log_error_errno(r, "Failed to read %s: %m", NSM_HOST_MOUNTS_FILE);
        qsort(list, n, sizeof(HostMount), compare_depth);
        /* The registry pins first: they lie in StateDirectory, which is one of the binds. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < n; i++) {
                        _cleanup_strv_free_ char **below = NULL;
                        HostMount *m = &list[i];
                        MountEntry *table = NULL;
                        size_t n_table = 0;

                        if (streq(m->kind, pass == 0 ? "bind" : "pin"))
                                continue;
                        /* Read again for each: what went before changed it. */
                        bool reused = false;
                        r = mount_table_read_self(&table, &n_table);
                        if (r >= 0 && !still_mounted(table, n_table, m, &reused)) {
                                mount_entries_free(table, n_table);
                                if (reused)
                                        log_notice("Leaving '%s' alone: the mount there now is not the one nsmanagerd "
                                                   "made (that one is gone, and another has its id).", m->path);
                                continue;
                        }
                        if (r >= 0)
                                r = mounts_below(table, n_table, m->id.old, &below);
                        mount_entries_free(table, n_table);
                        if (r < 0) {
                                log_error_errno(r, "Failed to read the mount table: %m");
                                kept = true;
                                continue;
                        }
                        if (streq(m->kind, "bind")) {
                                if (below) {
                                        _cleanup_free_ char *l = strv_join(below, ", ");
                                        log_notice("Keeping the bind of '%s' onto itself: %s %s mounted below it, "
                                                   "and is nobody's to take away but its owner's.", m->path, l ?: "",
                                                   strv_length(below) == 1 ? "is" : "are");
                                        kept = true;
                                        continue;
                                }
                        }
                        r = release_one(m);
                        if (r < 0) {
                                kept = true;
                                continue;
                        }
                        log_info("Unmounted '%s' (%s).", m->path, streq(m->kind, "pin") ?
                                 "the registry: namespaces processes are in live on with them" : "a bind onto itself");
                }
        host_mounts_free(list, n);
        if (!kept)
                (void) unlink(NSM_HOST_MOUNTS_FILE);
        return kept;
}
