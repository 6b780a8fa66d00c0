/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Seeing mounts come and go: fanotify mount notifications (Linux 6.15), and listmount(2) and
 * statmount(2) of the caller's own mount namespace. Syscalls only: no bus types, nothing logs.
 * Nothing here asks a file system anything: the kernel answers from its mount tree alone, so a
 * hung FUSE or NFS server cannot make it wait.
 *
 * Why only the caller's own namespace: Linux 6.18's listmount(2) and statmount(2) take another
 * namespace (by id, or by fd), but then look for its root as the first mount, in id order after
 * the namespace's first mount, whose parent that first mount is (grab_requested_root() in
 * fs/namespace.c). A view's root is a clone of the host's tree made before the namespace
 * (open_tree, then unshare, then pivot_root): it has a smaller id than the namespace's first
 * mount, so from outside every view answers ENOENT. Inside (after setns) the caller's own root
 * is used, and that works. */

/* Debian 12's headers lack fanotify's mount events (Linux 6.15). */
#define NSM_FAN_REPORT_MNT 0x00004000U
#define NSM_FAN_MARK_MNTNS 0x00000110U
#define NSM_FAN_MNT_ATTACH 0x01000000ULL
#define NSM_FAN_MNT_DETACH 0x02000000ULL
#define NSM_FAN_EVENT_INFO_TYPE_MNT 7

/* A new fanotify group that reports mount events (FAN_REPORT_MNT), non-blocking, with an
 * unlimited queue (root only: a storm of mounts is read late rather than lost; bounded_queue:
 * the kernel's default of 16384 events, which tests overflow). -EOPNOTSUPP where the kernel
 * lacks mount events (EINVAL before 6.15) or a filter refuses the call. */
int mount_notify_open(bool bounded_queue, int *ret_fd);
/* Whether a group can be made here: 0, or fanotify_init()'s own -errno. */
int mount_notify_probe(void);
/* Why mount events are not available, for the log, from mount_notify_probe()'s answer; NULL
 * for an answer that is a failure rather than an absence (ENOMEM, EMFILE, …). */
const char *mount_notify_unsupported_reason(int r);
/* Adds (or removes) a mark of the mount namespace ns_fd (an nsfs fd): its mounts attached and
 * detached are reported to the group from then on. */
int mount_notify_mark(int group_fd, int ns_fd, bool add);

typedef enum MountEventKind {
        MOUNT_EVENT_ATTACH,
        MOUNT_EVENT_DETACH,
        MOUNT_EVENT_OVERFLOW,    /* the kernel dropped events (a bounded queue overflowed) */
} MountEventKind;

typedef struct MountEvent {
        MountEventKind kind;
        uint64_t mnt_id;         /* the mount's 64-bit unique id; 0 for an overflow */
} MountEvent;

/* The events of one read() of a group, in the order the kernel queued them: 'cb' per event (a
 * move within a namespace is a detach and an attach of the same id). -EBADMSG at the first
 * malformed event (what came before it was reported). Pure: fuzzed (fuzz-mount-notify). */
int mount_notify_parse(const void *buf, size_t size, void (*cb)(const MountEvent *e, void *userdata), void *userdata);

/* One mount as statmount(2) tells it. */
typedef struct MountStat {
        uint64_t id, parent_id;          /* unique ids (never reused) */
        uint32_t old_id, old_parent_id;  /* the ids of /proc/PID/mountinfo (reused) */
        uint32_t dev_major, dev_minor;   /* of the file system (0:N for those without a device) */
        char *path;                      /* the mount point, relative to its namespace's root; NULL if not asked */
} MountStat;

void mount_stat_done(MountStat *s);

/* The mount with unique id 'id' in our namespace, with its mount point (relative to our root)
 * if 'want_path': -ENOENT if there is no such mount (any more), -EOPNOTSUPP where statmount(2)
 * is missing (before 6.8) or filtered. */
int mount_stat(uint64_t id, bool want_path, MountStat *ret);
/* What statmount(2) wrote into buf (size bytes). -EBADMSG for a record that is too short,
 * claims more than buf holds or points outside it. Pure: fuzzed (fuzz-mount-notify). */
int mount_stat_from_buffer(const void *buf, size_t size, bool want_path, MountStat *ret);

/* The unique ids of the mounts of our namespace above 'after' (0: all), ascending, at most
 * 'max' of them into ids: their number. -EOPNOTSUPP where listmount(2) is missing (before
 * 6.8) or filtered. */
ssize_t mount_list_ids(uint64_t after, uint64_t *ids, size_t max);
