/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Walking user-controlled trees (a user's view, their home) without ever following a symlink,
 * creating what is missing with *at() calls on the parent's fd, and undoing what was created
 * when a later step fails: a mkdir inside a view lands on the host's disk too. */

typedef enum PathKind {
        PATH_EXISTING,           /* everything must exist: nothing is created */
        PATH_DIRECTORY,          /* missing components are created as directories */
        PATH_FILE,               /* … and the last one as an empty file */
} PathKind;

typedef struct CreatedPath {
        int dir_fd;
        char *name;
        dev_t dev;
        ino_t ino;
        bool is_dir;
} CreatedPath;

/* What open_path_creating() made, oldest first. With owner_uid set (not 0), what is made in a
 * directory owner_uid owns is made as owner_uid:owner_gid (setfsuid()/setfsgid() around the
 * mkdirat() or openat()), as if they had made it themselves; where they may not, as root. */
typedef struct CreatedPaths {
        CreatedPath *entries;
        size_t n;
        uid_t owner_uid;
        gid_t owner_gid;
} CreatedPaths;

/* Removes, newest first, what was created and is still what was created. */
void created_paths_undo(CreatedPaths *c);
void created_paths_done(CreatedPaths *c);
/* Undoes, as created_paths_undo(), what was created after the first 'n' entries, and forgets
 * it: one step of several given up, the others kept. */
void created_paths_rollback(CreatedPaths *c, size_t n);

/* One path component below dir_fd, O_PATH; a symlink is -ELOOP. openat2(RESOLVE_NO_SYMLINKS)
 * where available, else O_NOFOLLOW and a check. */
int open_component_nofollow(int dir_fd, const char *name);

/* Walks the absolute, normalized 'path' from root_fd. -ELOOP for a symlink anywhere on the way,
 * -ENOTDIR for a non-directory in the middle, -ENOENT for a missing component with
 * PATH_EXISTING. What it creates is appended to *created (may be NULL). Returns an O_PATH fd. */
int open_path_creating(int root_fd, const char *path, PathKind kind, CreatedPaths *created, int *ret_fd);

/* The same walk, creating only inside directories owned by 'owner': before each mkdirat() or
 * openat(O_CREAT), fstat() on the very fd that call then uses. A check on a walk of its own
 * would look at whatever the names meant then, and a user who can rename them could swap in
 * another directory before the creating walk. -EPERM if a directory something is to be created
 * in is not owner's, and *ret_dir (may be NULL) its path; nothing is created in it. */
int open_path_creating_owned(int root_fd, const char *path, PathKind kind, uid_t owner, CreatedPaths *created,
                             char **ret_dir, int *ret_fd);

/* mkdir -p of the parents of 'path' (not 'path' itself), mode for the ones it creates. */
int mkdir_parents(const char *path, mode_t mode);

/* Replaces 'path' atomically: a temporary file in the same directory, then rename(). With
 * WRITE_FILE_SYNC the file is fsync()ed before and its directory after the rename. */
#define WRITE_FILE_SYNC 0x1
int write_file_atomic(const char *path, const char *contents, size_t size, int flags);

/* Opens the absolute 'path' below root_fd (O_PATH), following only symlinks owned by root in
 * directories all owned by root, as systemd's CHASE_SAFE does in spirit: for paths that come
 * from a user's data or lie where a user can write, so that no link of theirs steers the
 * daemon. -EPERM for a link owned by anybody else, or reached through a directory of anybody
 * else's, -ELOOP for too many links. */
int open_path_safe(int root_fd, const char *path, int *ret_fd);

/* Detaches the mount fd refers to (umount2 of /proc/self/fd/N, MNT_DETACH). */
int umount2_fd(int fd);

/* The next name of '*p' (a path, '/'s skipped) into 'name', '*p' moved past it: 1, or 0 at
 * the end, -ENAMETOOLONG for a name longer than NAME_MAX. */
int path_next_name(const char **p, char name[static NAME_MAX + 1]);

/* A walk that follows the symbolic link 'link_fd' it met at *p goes on along its target, then
 * what was left of the path: *todo (the walk's string, freed) and *p are replaced, and an
 * absolute target puts *dir_fd back at root_fd. 1 where it did, 0 for a relative target. */
int path_follow_symlink(int link_fd, int root_fd, char **todo, char **p, int *dir_fd);

/* Opens the absolute 'path' inside the current root (O_PATH), following no symlink at all
 * (openat2 RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS; a trailing link is -ELOOP too). */
int open_path_no_symlinks(const char *path, int *ret_fd);
