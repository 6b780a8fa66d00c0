/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* One line of a mount table, as GetMounts returns it: the daemon reads them from mountinfo
 * (mount-util.h), nsctl from the bus. Kept apart from mount-util.h, so that a client that
 * only talks D-Bus does not link libmount. */
typedef struct MountEntry {
        uint64_t id;
        uint64_t parent_id;
        uint64_t peer_group;     /* 0 = none */
        uint64_t master_group;   /* 0 = none */
        uint64_t dev;            /* the file system's device (major:minor), as stat() shows it */
        uint64_t fingerprint;    /* the daemon's: mount_id_fingerprint() of the line (mount-util.h) */
        char *target;
        char *source;
        char *fstype;
        char *propagation;       /* findmnt's words: "shared", "private,slave", "private,unbindable" … */
        char *options;           /* the mount's and its file system's options, as findmnt's OPTIONS (GetMountsEx) */
        char *origin;            /* GetMountsEx's: host, policy, daemon, user, unknown; NULL from GetMounts */
} MountEntry;

void mount_entries_free(MountEntry *e, size_t n);
