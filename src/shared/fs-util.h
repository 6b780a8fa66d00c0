/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

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

/* What open_path_creating() made, oldest first. */
typedef struct CreatedPaths {
        CreatedPath *entries;
        size_t n;
} CreatedPaths;

/* Removes, newest first, what was created and is still what was created. */
void created_paths_undo(CreatedPaths *c);
void created_paths_done(CreatedPaths *c);

/* One path component below dir_fd, O_PATH; a symlink is -ELOOP. openat2(RESOLVE_NO_SYMLINKS)
 * where available, else O_NOFOLLOW and a check. */
int open_component_nofollow(int dir_fd, const char *name);

/* Walks the absolute, normalized 'path' from root_fd. -ELOOP for a symlink anywhere on the way,
 * -ENOTDIR for a non-directory in the middle, -ENOENT for a missing component with
 * PATH_EXISTING. What it creates is appended to *created (may be NULL). Returns an O_PATH fd. */
int open_path_creating(int root_fd, const char *path, PathKind kind, CreatedPaths *created, int *ret_fd);
