/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macros.h"
#include "child-main.h"
#include "mount-util.h"


/* The view builder's interface (docs/processes.md), served by src/builder/builder-main.c for
 * as long as the daemon keeps the connection (its handshake once per builder):
 *
 *   OpenRegistry(ay registry_pin, ay pins_dir) → (b created)
 *   Build(s name, ay subtree_root, u propagation, aay shared_subtrees) → (u n_mounts, h ns): the
 *        namespace pinned as pins_dir/NAME
 *   Unpin(ay name) → (): whatever List named
 *   List() → (a(ayah) pins): each pin's name and its namespace (none: a pin file that holds none)
 *   ReadMounts(ah ns, b with_ids) → (ay table, a(tt) ids): the namespace's mountinfo (none: the
 *        host's), with ids each mount's mountinfo id and unique id (none without statmount(2))
 *
 * Paths are "ay" (any bytes but NUL). The builder takes nothing on trust: a name must be one path component (it becomes one under
 * SubtreeRoot= and the pins' directory), a user name for Build, every path absolute and
 * normalized; else "Malformed request." (EBADMSG). */

#define BUILDER_INTERFACE "org.example.NSManager.Builder"

typedef enum BuilderCallKind {
        BUILDER_OPEN_REGISTRY = 1,
        BUILDER_BUILD,
        BUILDER_UNPIN,
        BUILDER_LIST,
        BUILDER_READ_MOUNTS,
        _BUILDER_CALL_KIND_MAX,
        _BUILDER_CALL_KIND_INVALID = -EINVAL,
} BuilderCallKind;

typedef struct BuilderCall {
        BuilderCallKind kind;
        char *registry_pin;              /* OPEN_REGISTRY */
        char *pins_dir;
        char *name;                      /* BUILD, UNPIN */
        char *subtree_root;              /* BUILD */
        ViewPropagation propagation;
        char **shared_subtrees;
        bool with_fd;                    /* READ_MOUNTS */
        bool with_ids;                   /* READ_MOUNTS */
} BuilderCall;

/* What builder_read_mounts() with ids hands its caller (builder.h): the table, a NUL (mountinfo
 * never holds one), then per mount of the namespace one BuilderMountIds, where the kernel has
 * unique mount ids (statmount(2), Linux 6.8); none where it does not. */
typedef struct BuilderMountIds {
        uint64_t old;            /* as /proc/PID/mountinfo numbers it */
        uint64_t unique;         /* never reused */
} BuilderMountIds;

/* What the daemon asks the builder to build (builder_build(), then BUILDER_BUILD). */
typedef struct ViewSpec {
        const char *name;                /* the user */
        const char *subtree_root;
        char **shared_subtrees;
        ViewPropagation propagation;
        MountTableCache *host_mounts;    /* the builder's copy of the host's table (builder-main.c) */
} ViewSpec;

/* The view builder process (docs/processes.md): called right after the fork with its end of
 * the socket, it closes every other fd, then serves the interface above, one call at a time,
 * until the daemon closes the socket. It reads nothing of the daemon's memory: what it
 * works on comes in each request. */
_noreturn_ void builder_main(int sock);
