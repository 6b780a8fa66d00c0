/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macros.h"
#include "mount-util.h"


/* The daemon's requests to the view builder (docs/processes.md): one ipc-fields.h message each,
 * sent with ipc_send_request(), with the namespace's fd where the kind takes one. Encoded by the
 * daemon (builder.c), decoded by the builder (builder-main.c); each kind's fields:
 *
 *   OPEN_REGISTRY    REGISTRY_PIN, PINS_DIR (absolute paths)
 *   BUILD            NAME (a user name), SUBTREE_ROOT (absolute), PROPAGATION (ViewPropagation),
 *                    SHARED_SUBTREE (absolute, repeated: none or more)
 *   UNPIN            NAME (a file name: whatever LIST named)
 *   LIST             (none)
 *   READ_MOUNTS      WITH_FD (1: the namespace's fd comes with it; 0: the host's table),
 *                    WITH_IDS (optional; 1: after the table a NUL and the mounts' ids, see below)
 *   OPEN_MOUNTINFO   (none; the namespace's fd comes with it)
 *
 * The decoder takes nothing on trust: a name must be one path component (it becomes one under
 * SubtreeRoot= and the pins' directory), a user name for BUILD, every path absolute and
 * normalized. */

typedef enum BuilderCallKind {
        BUILDER_OPEN_REGISTRY = 1,
        BUILDER_BUILD,
        BUILDER_UNPIN,
        BUILDER_LIST,
        BUILDER_READ_MOUNTS,
        BUILDER_OPEN_MOUNTINFO,
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
        bool with_fd;                    /* READ_MOUNTS, OPEN_MOUNTINFO (always) */
        bool with_ids;                   /* READ_MOUNTS */
} BuilderCall;

/* READ_MOUNTS WITH_IDS answers the table, a NUL (mountinfo never holds one), then per mount of
 * the namespace one BuilderMountIds (native byte order: the two ends are the same program),
 * where the kernel has unique mount ids (statmount(2), Linux 6.8); none where it does not. */
typedef struct BuilderMountIds {
        uint64_t old;            /* as /proc/PID/mountinfo numbers it */
        uint64_t unique;         /* never reused */
} BuilderMountIds;

void builder_call_done(BuilderCall *c);
/* The message of 'c' (malloc'ed), or -EINVAL for a call the decoder would refuse. */
int builder_call_encode(const BuilderCall *c, void **ret, size_t *ret_size);
/* -EBADMSG for a malformed message (c is then empty), -ENOMEM. */
int builder_call_decode(const void *data, size_t size, BuilderCall *ret);
/* How many fds come with a call of this kind. */
size_t builder_call_n_fds(const BuilderCall *c);

/* What the daemon asks the builder to build (builder_build(), then BUILDER_BUILD). */
typedef struct ViewSpec {
        const char *name;                /* the user */
        const char *subtree_root;
        char **shared_subtrees;
        ViewPropagation propagation;
        MountTableCache *host_mounts;    /* the builder's copy of the host's table (builder-main.c) */
} ViewSpec;

/* The view builder process (docs/processes.md): called right after the fork with its end of
 * the socket, it closes every other fd, then serves the requests above one at
 * a time until the daemon closes the socket. It reads nothing of the daemon's memory: what it
 * works on comes in each request. */
_noreturn_ void builder_main(int sock);
