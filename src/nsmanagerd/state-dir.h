/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The layout of StateDirectory= (/run/nsmanager), computed once:
 *
 *   namespaces/USER    the state of USER's namespace (namespace.c)
 *   registry           the pin of the registry mount namespace, the one mount nsmanagerd
 *                      keeps in the host (registry.c)
 *   pins/USER          inside the registry namespace: the pin of USER's namespace
 *   shared-subtrees    subtrees shared at run time by ShareSubtree("", P) (manager.c)
 *   attach/            environment files of attached commands, until systemd read them
 *                      (attach-unit.c)
 *
 * Files are written to a temporary file and renamed; where the directory is not on a tmpfs
 * they are fsync()ed first (and the directory after), so a crash leaves the old or the new
 * version, never a truncated one. On /run an fsync does nothing but cost time. */

typedef struct StateDir {
        char *root;
        char *namespaces;
        char *registry;
        char *pins;
        char *shared_subtrees;
        char *attach;
        bool is_volatile;        /* on tmpfs/ramfs: no fsync */
} StateDir;

int state_dir_init(StateDir *d, const char *root);
void state_dir_done(StateDir *d);
/* Creates the directories; finds out whether they are volatile. */
int state_dir_create(StateDir *d);

char *state_dir_namespace_file(const StateDir *d, const char *name);

/* Replaces 'path' with 'contents' atomically (temporary file, rename), durably unless the
 * directory is volatile. */
int state_dir_write_file(const StateDir *d, const char *path, const char *contents, size_t size);
