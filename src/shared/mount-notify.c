/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stddef.h>
#include <sys/fanotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macros.h"
#include "mount-notify.h"

static int notify_init(bool bounded_queue) {
        int fd = fanotify_init(FAN_CLASS_NOTIF | NSM_FAN_REPORT_MNT | FAN_CLOEXEC | FAN_NONBLOCK |
                               (bounded_queue ? 0 : FAN_UNLIMITED_QUEUE),
                               O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int mount_notify_open(bool bounded_queue, int *ret_fd) {
        int fd = notify_init(bounded_queue);
        if (fd < 0)
                return fd == -EINVAL || fd == -ENOSYS || fd == -EPERM ? -EOPNOTSUPP : fd;
        *ret_fd = fd;
        return 0;
}

int mount_notify_probe(void) {
        int fd = notify_init(false);
        if (fd < 0)
                return fd;
        close(fd);
        return 0;
}

const char *mount_notify_unsupported_reason(int r) {
        switch (r) {
        case -EINVAL:
                return "this kernel has no fanotify mount events (Linux 6.15 and later have them)";
        case -EPERM:
                return "fanotify_init() was refused (EPERM): it needs CAP_SYS_ADMIN in the initial user namespace, "
                       "which a container's root may lack, or a seccomp filter refuses it";
        case -ENOSYS:
                return "fanotify_init() is filtered out (ENOSYS: a seccomp filter)";
        default:
                return NULL;
        }
}

int mount_notify_mark(int group_fd, int ns_fd, bool add) {
        if (fanotify_mark(group_fd, (add ? FAN_MARK_ADD : FAN_MARK_REMOVE) | NSM_FAN_MARK_MNTNS,
                          NSM_FAN_MNT_ATTACH | NSM_FAN_MNT_DETACH, ns_fd, NULL) < 0)
                return -errno;
        return 0;
}

/* The kernel's layout (linux/fanotify.h), read with memcpy: a read() buffer need not be
 * aligned for us, nor is a fuzzer's. */
struct nsm_fanotify_metadata {
        uint32_t event_len;
        uint8_t vers;
        uint8_t reserved;
        uint16_t metadata_len;
        uint64_t mask;
        int32_t fd;
        int32_t pid;
};

struct nsm_fanotify_info_header {
        uint8_t info_type;
        uint8_t pad;
        uint16_t len;
};

#define NSM_FANOTIFY_METADATA_VERSION 3
#define NSM_FAN_Q_OVERFLOW 0x00004000ULL
#define NSM_FAN_MNT_INFO_LEN 16          /* header, 4 bytes of padding, the 64-bit id */

static int parse_mnt_id(const uint8_t *p, size_t len, uint64_t *ret) {
        /* Info records follow the metadata until the end of the event. */
        for (size_t i = 0; i < len;) {
                struct nsm_fanotify_info_header h;

                if (len - i < sizeof h)
                        return -EBADMSG;
                memcpy(&h, p + i, sizeof h);
                if (h.len < sizeof h || h.len > len - i)
                        return -EBADMSG;
                if (h.info_type == NSM_FAN_EVENT_INFO_TYPE_MNT) {
                        if (h.len < NSM_FAN_MNT_INFO_LEN)
                                return -EBADMSG;
                        memcpy(ret, p + i + 8, sizeof *ret);
                        return 0;
                }
                i += h.len;
        }
        return -EBADMSG;
}

int mount_notify_parse(const void *buf, size_t size, void (*cb)(const MountEvent *e, void *userdata), void *userdata) {
        const uint8_t *p = buf;

        for (size_t off = 0; off < size;) {
                struct nsm_fanotify_metadata m;
                uint64_t id = 0;

                if (size - off < sizeof m)
                        return -EBADMSG;
                memcpy(&m, p + off, sizeof m);
                if (m.vers != NSM_FANOTIFY_METADATA_VERSION || m.metadata_len < sizeof m || m.event_len < m.metadata_len ||
                    m.event_len > size - off)
                        return -EBADMSG;
                if (m.mask & NSM_FAN_Q_OVERFLOW)
                        cb(&(MountEvent) { .kind = MOUNT_EVENT_OVERFLOW }, userdata);
                if (m.mask & (NSM_FAN_MNT_ATTACH | NSM_FAN_MNT_DETACH)) {
                        if (parse_mnt_id(p + off + m.metadata_len, m.event_len - m.metadata_len, &id) < 0 || id == 0)
                                return -EBADMSG;
                        /* Each event has one of them; were they ever merged, it would be a move. */
                        if (m.mask & NSM_FAN_MNT_DETACH)
                                cb(&(MountEvent) { .kind = MOUNT_EVENT_DETACH, .mnt_id = id }, userdata);
                        if (m.mask & NSM_FAN_MNT_ATTACH)
                                cb(&(MountEvent) { .kind = MOUNT_EVENT_ATTACH, .mnt_id = id }, userdata);
                }
                off += m.event_len;
        }
        return 0;
}

/* ---- statmount(2), listmount(2) ---- */

#define NSM_SYS_statmount 457
#define NSM_SYS_listmount 458
#define NSM_LSMT_ROOT 0xffffffffffffffffULL
#define NSM_STATMOUNT_SB_BASIC 0x00000001U
#define NSM_STATMOUNT_MNT_BASIC 0x00000002U
#define NSM_STATMOUNT_MNT_POINT 0x00000010U

/* The 6.8 request: no namespace, our own. */
struct nsm_mnt_id_req_v0 {
        uint32_t size;
        uint32_t spare;
        uint64_t mnt_id;
        uint64_t param;
};

/* Offsets in struct statmount (linux/mount.h); its strings follow the 512 fixed bytes. */
#define SM_SIZE 0
#define SM_MASK 8
#define SM_DEV_MAJOR 16
#define SM_DEV_MINOR 20
#define SM_MNT_ID 40
#define SM_PARENT_ID 48
#define SM_ID_OLD 56
#define SM_PARENT_ID_OLD 60
#define SM_MNT_POINT 108
#define SM_STR 512

void mount_stat_done(MountStat *s) {
        free(s->path);
        s->path = NULL;
}

static uint32_t get_u32(const uint8_t *p, size_t off) {
        uint32_t v;
        memcpy(&v, p + off, sizeof v);
        return v;
}

static uint64_t get_u64(const uint8_t *p, size_t off) {
        uint64_t v;
        memcpy(&v, p + off, sizeof v);
        return v;
}

int mount_stat_from_buffer(const void *buf, size_t size, bool want_path, MountStat *ret) {
        const uint8_t *p = buf;
        uint64_t mask;
        uint32_t sm_size;

        if (!buf || size < SM_STR)
                return -EBADMSG;
        sm_size = get_u32(p, SM_SIZE);
        if (sm_size < SM_STR || sm_size > size)
                return -EBADMSG;
        mask = get_u64(p, SM_MASK);
        if ((mask & (NSM_STATMOUNT_SB_BASIC | NSM_STATMOUNT_MNT_BASIC)) != (NSM_STATMOUNT_SB_BASIC | NSM_STATMOUNT_MNT_BASIC))
                return -EBADMSG;
        *ret = (MountStat) {
                .id = get_u64(p, SM_MNT_ID),
                .parent_id = get_u64(p, SM_PARENT_ID),
                .old_id = get_u32(p, SM_ID_OLD),
                .old_parent_id = get_u32(p, SM_PARENT_ID_OLD),
                .dev_major = get_u32(p, SM_DEV_MAJOR),
                .dev_minor = get_u32(p, SM_DEV_MINOR),
        };
        if (!want_path)
                return 0;
        if (!(mask & NSM_STATMOUNT_MNT_POINT))
                return -EBADMSG;
        /* The string must start and end inside what the kernel says it wrote. */
        uint32_t off = get_u32(p, SM_MNT_POINT);
        const char *s = (const char *) p + SM_STR;
        size_t room = sm_size - SM_STR;
        if (off >= room || !memchr(s + off, 0, room - off))
                return -EBADMSG;
        ret->path = strdup(s + off);
        return ret->path ? 0 : -ENOMEM;
}

int mount_stat(uint64_t id, bool want_path, MountStat *ret) {
        struct nsm_mnt_id_req_v0 req = {
                .size = sizeof req,
                .mnt_id = id,
                .param = NSM_STATMOUNT_SB_BASIC | NSM_STATMOUNT_MNT_BASIC | (want_path ? NSM_STATMOUNT_MNT_POINT : 0),
        };
        /* A mount point is at most PATH_MAX: the fixed part and one string fit. */
        size_t size = SM_STR + 2 * 4096;
        _cleanup_free_ uint8_t *buf = malloc(size);

        if (!buf)
                return -ENOMEM;
        if (syscall(NSM_SYS_statmount, &req, buf, size, 0) < 0)
                return errno == ENOSYS || errno == EPERM ? -EOPNOTSUPP : -errno;
        return mount_stat_from_buffer(buf, size, want_path, ret);
}

ssize_t mount_list_ids(uint64_t after, uint64_t *ids, size_t max) {
        struct nsm_mnt_id_req_v0 req = { .size = sizeof req, .mnt_id = NSM_LSMT_ROOT, .param = after };
        long k = syscall(NSM_SYS_listmount, &req, ids, max, 0);

        if (k < 0)
                return errno == ENOSYS || errno == EPERM ? -EOPNOTSUPP : -errno;
        return k;
}
