/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "log.h"
#include "mount-util.h"
#include "path-util.h"
#include "registry.h"

/* <linux/nsfs.h> of Debian 12 predates these (Linux 6.8 and 6.18). */
#define NSM_NS_GET_ID _IOR(0xb7, 13, uint64_t)

#define NS_ID_BATCH 4096

int set_cpu(int cpu) {
        cpu_set_t set;
        if (cpu < 0)
                return 0;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return sched_setaffinity(0, sizeof set, &set) < 0 ? -errno : 0;
}

/* 1 if fd is an nsfs file of a mount namespace, 0 if not. */
static int fd_is_mntns(int fd) {
        struct statfs sfs;
        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        if (sfs.f_type != NSFS_MAGIC)
                return 0;
        return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNS;
}

int namespace_ids_pass(uint64_t floor_id, int host_uts_fd) {
        int r = 0;

        for (unsigned i = 0; i <= NS_ID_BATCH; i++) {
                _cleanup_close_ int fd = -EBADF;
                uint64_t id = 0;

                if (unshare(CLONE_NEWUTS) < 0) {
                        r = -errno;
                        break;
                }
                if (floor_id == 0)
                        continue;
                fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
                if (fd < 0 || ioctl(fd, NSM_NS_GET_ID, &id) < 0)
                        floor_id = 0;   /* cannot tell: burn the whole batch */
                else if (id > floor_id)
                        break;
        }
        if (setns(host_uts_fd, CLONE_NEWUTS) < 0 && r >= 0)
                r = -errno;
        return r;
}

/* Back to the host namespace: whatever happened, the builder must not stay elsewhere. */
static int return_home(int host_ns_fd, int r) {
        if (setns(host_ns_fd, CLONE_NEWNS) < 0)
                return -errno;   /* the builder is lost: it exits on this (builder.c) */
        return r;
}

static int registry_create(const char *pins_dir, int host_ns_fd, int *ret_fd) {
        _cleanup_close_ int ns_fd = -EBADF;

        if (unshare(CLONE_NEWNS) < 0)
                return -errno;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return return_home(host_ns_fd, -errno);
        /* Pins need a mount that propagates nowhere: a tmpfs of the registry's own. */
        if (mkdir(pins_dir, 0700) < 0 && errno != EEXIST)
                return return_home(host_ns_fd, -errno);
        if (mount("nsmanager-pins", pins_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
                return return_home(host_ns_fd, -errno);
        ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (ns_fd < 0)
                return return_home(host_ns_fd, -errno);
        int r = return_home(host_ns_fd, 0);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(ns_fd);
        return 0;
}

int registry_open(const char *registry_pin, const char *pins_dir, int host_ns_fd, int *cpu, int *ret_fd) {
        _cleanup_close_ int fd = open(registry_pin, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_close_ int uts_fd = -EBADF;
        int r;

        if (fd >= 0) {
                r = fd_is_mntns(fd);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret_fd = TAKE_FD(fd);
                        return 0;
                }
                fd = safe_close(fd);
        } else if (errno != ENOENT)
                return -errno;

        uts_fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
        if (uts_fd < 0)
                return -errno;
        for (int tries = 0; tries < 3; tries++) {
                r = set_cpu(*cpu);
                if (r < 0)
                        return r;
                r = registry_create(pins_dir, host_ns_fd, &fd);
                if (r < 0)
                        return r;
                /* The registry's pin is the one mount we keep in the host namespace. */
                r = mntns_pin(fd, registry_pin);
                if (r != -EINVAL)
                        break;
                log_debug("Pinning the registry failed with EINVAL (an older namespace id batch on CPU %d); retrying.", *cpu);
                fd = safe_close(fd);
                r = namespace_ids_pass(mntns_get_id(host_ns_fd), uts_fd);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 1;
}

int registry_pin_view(int registry_fd, int host_ns_fd, const char *pins_dir, const char *name, int ns_fd) {
        _cleanup_free_ char *pin = NULL;
        int r;

        if (asprintf(&pin, "%s/%s", pins_dir, name) < 0)
                return -ENOMEM;
        if (setns(registry_fd, CLONE_NEWNS) < 0)
                return -errno;
        r = mntns_pin(ns_fd, pin);
        if (r < 0)
                (void) unlink(pin);
        return return_home(host_ns_fd, r);
}

int registry_unpin(int registry_fd, int host_ns_fd, const char *pins_dir, const char *name) {
        _cleanup_free_ char *pin = NULL;
        int r = 0;

        if (asprintf(&pin, "%s/%s", pins_dir, name) < 0)
                return -ENOMEM;
        if (setns(registry_fd, CLONE_NEWNS) < 0)
                return -errno;
        if (umount2(pin, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                r = -errno;
        else if (unlink(pin) < 0 && errno != ENOENT)
                r = -errno;
        return return_home(host_ns_fd, r);
}

int registry_list(int registry_fd, int host_ns_fd, const char *pins_dir,
                  int (*cb)(const char *name, int fd, void *userdata), void *userdata) {
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (setns(registry_fd, CLONE_NEWNS) < 0)
                return -errno;
        d = opendir(pins_dir);
        if (!d)
                return return_home(host_ns_fd, -errno);
        while (r >= 0 && (de = readdir(d))) {
                int fd, k;

                if (!filename_is_valid(de->d_name))
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                k = fd >= 0 ? fd_is_mntns(fd) : -errno;
                if (k <= 0) {
                        safe_close(fd);
                        fd = -ENOENT;
                }
                r = cb(de->d_name, fd, userdata);
        }
        closedir(d);
        return return_home(host_ns_fd, r);
}
