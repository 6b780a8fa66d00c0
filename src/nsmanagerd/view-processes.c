/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who runs what in a view: every /proc/PID whose ns/mnt is the view's nsfs file. Only procfs
 * is read (ns/mnt by stat(), status, comm, cgroup), so a hung FUSE or NFS mount of a user
 * cannot stall the daemon; comm is text the process chose, escaped before it goes anywhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "log.h"
#include "macros.h"
#include "mount-util.h"
#include "parse-util.h"
#include "text-escape.h"
#include "view-processes.h"

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

void view_processes_free(ViewProcess *p, size_t n) {
        for (size_t i = 0; p && i < n; i++) {
                free(p[i].comm);
                free(p[i].session);
        }
        free(p);
}

static int view_process_cmp(const void *a, const void *b) {
        pid_t x = ((const ViewProcess *) a)->pid, y = ((const ViewProcess *) b)->pid;

        return x < y ? -1 : x > y;
}

/* The real uid of "Uid:\t<real>\t<effective>…" in /proc/PID/status. */
static int read_real_uid(int dir_fd, uid_t *ret) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        int fd;

        fd = openat(dir_fd, "status", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -errno;
        }
        while (getline(&line, &size, f) >= 0) {
                unsigned long u;
                char *end;

                if (strncmp(line, "Uid:", 4) != 0)
                        continue;
                errno = 0;
                u = strtoul(line + 4, &end, 10);
                if (errno != 0 || end == line + 4 || u >= (unsigned long) (uid_t) -1)
                        return -EINVAL;
                *ret = (uid_t) u;
                return 0;
        }
        return -ENODATA;
}

static char *read_comm(int dir_fd) {
        char buf[64];
        ssize_t n;
        int fd;

        fd = openat(dir_fd, "comm", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return strdup("");
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n < 0)
                n = 0;
        if (n > 0 && buf[n - 1] == '\n')
                n--;
        return text_escape_bytes(buf, (size_t) n);
}

struct ViewProcessScan {
        DIR *proc;
        int mntns_fd;            /* held for the walk: its inode is not another namespace's meanwhile */
        dev_t dev;
        ino_t ino;
        ViewProcess *a;
        size_t n;
};

ViewProcessScan *view_process_scan_free(ViewProcessScan *s) {
        if (!s)
                return NULL;
        if (s->proc)
                closedir(s->proc);
        safe_close(s->mntns_fd);
        view_processes_free(s->a, s->n);
        free(s);
        return NULL;
}

int view_process_scan_new(int mntns_fd, ViewProcessScan **ret) {
        ViewProcessScan *s = calloc(1, sizeof(ViewProcessScan));
        struct stat st;

        if (!s)
                return -ENOMEM;
        *s = (ViewProcessScan) { .mntns_fd = -EBADF };
        /* The walk spans turns of the loop, in which the view may be removed: were its inode
         * free, the kernel would give it to the next namespace, whose processes would match. */
        s->mntns_fd = fcntl(mntns_fd, F_DUPFD_CLOEXEC, 3);
        if (s->mntns_fd < 0 || fstat(s->mntns_fd, &st) < 0) {
                int r = -errno;
                view_process_scan_free(s);
                return r;
        }
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        s->proc = opendir("/proc");
        if (!s->proc) {
                int r = -errno;
                view_process_scan_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* One /proc/PID: 1 added, 0 not the view's (or gone), < 0 out of memory. */
static int scan_one(ViewProcessScan *s, const char *name) {
        _cleanup_close_ int dir_fd = -EBADF;
        ViewProcess p = {};
        struct stat st;
        uid_t uid_after;
        char *end;
        long pid;

        errno = 0;
        pid = strtol(name, &end, 10);
        if (errno != 0 || *end || pid <= 0)
                return 0;
        dir_fd = openat(dirfd(s->proc), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return 0;
        /* stat() of the nsfs link, not its text: the device too, as nsfs inodes are per device. */
        if (fstatat(dir_fd, "ns/mnt", &st, 0) < 0 || st.st_dev != s->dev || st.st_ino != s->ino)
                return 0;
        if (read_real_uid(dir_fd, &p.uid) < 0)
                return 0; /* gone meanwhile */
        p.pid = (pid_t) pid;
        p.comm = read_comm(dir_fd);
        /* sd-login asks by number: the answer is this process's only if it has not been reaped
         * meanwhile (until then its pid is not reused), which its /proc directory tells. */
        if (sd_pid_get_session(p.pid, &p.session) < 0)
                p.session = strdup("");
        if (read_real_uid(dir_fd, &uid_after) < 0) {
                free(p.comm);
                free(p.session);
                return 0; /* gone meanwhile: the answer may be another's */
        }
        if (p.comm && p.session && s->n % 64 == 0) {
                ViewProcess *b = realloc(s->a, (s->n + 64) * sizeof(ViewProcess));
                if (b)
                        s->a = b;
                else {
                        free(p.comm);
                        p.comm = NULL;
                }
        }
        if (!p.comm || !p.session) {
                free(p.comm);
                free(p.session);
                return -ENOMEM;
        }
        s->a[s->n++] = p;
        return 1;
}

int view_process_scan_step(ViewProcessScan *s, unsigned max_entries) {
        for (unsigned i = 0; i < max_entries; i++) {
                struct dirent *de;
                int r;

                errno = 0;
                de = readdir(s->proc);
                if (!de)
                        return errno != 0 ? -errno : 1;
                r = scan_one(s, de->d_name);
                if (r < 0)
                        return r;
        }
        return 0;
}

void view_process_scan_result(ViewProcessScan *s, ViewProcess **ret, size_t *ret_n) {
        ViewProcess *a = TAKE_PTR(s->a);
        size_t n = s->n;

        s->n = 0;
        if (n > 0)     /* qsort(NULL, 0, …) is undefined */
                qsort(a, n, sizeof(ViewProcess), view_process_cmp);
        /* Bounded: the lowest pids, the longest-running ones as a rule. */
        while (n > VIEW_PROCESSES_MAX) {
                n--;
                free(a[n].comm);
                free(a[n].session);
        }
        *ret = a;
        *ret_n = n;
}

int view_processes_list(int mntns_fd, ViewProcess **ret, size_t *ret_n) {
        ViewProcessScan *s = NULL;
        int r;

        r = view_process_scan_new(mntns_fd, &s);
        if (r < 0)
                return r;
        r = view_process_scan_step(s, UINT_MAX);
        if (r >= 0)
                view_process_scan_result(s, ret, ret_n);
        view_process_scan_free(s);
        return r < 0 ? r : 0;
}

/* Whether the namespace /proc/PID/ns/mnt ('path' under 'proc_fd') is the one with 64-bit id
 * 'unique' (0: not known, the inode decides). Asked only of the processes whose inode matched:
 * an open and an ioctl each. A kernel without NS_GET_MNTNS_ID (before 6.8) leaves the inode. */
static bool same_namespace(int proc_fd, const char *path, uint64_t unique) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t id;

        if (unique == 0)
                return true;
        fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;           /* gone meanwhile */
        id = mntns_get_id(fd);
        return id == 0 || id == unique;
}

int view_processes_count(dev_t dev, const uint64_t *ids, const uint64_t *unique_ids, size_t n_ids, size_t *counts) {
        _cleanup_(closedirp) DIR *proc = NULL;
        struct dirent *de;

        for (size_t i = 0; i < n_ids; i++)
                counts[i] = 0;
        proc = opendir("/proc");
        if (!proc)
                return -errno;
        /* Once for all the views: a /proc walk per view would cost views × processes. */
        while ((de = readdir(proc))) {
                struct stat st;
                char path[64];
                char *end;
                long pid;

                errno = 0;
                pid = strtol(de->d_name, &end, 10);
                if (errno != 0 || *end || pid <= 0)
                        continue;
                snprintf(path, sizeof path, "%ld/ns/mnt", pid);
                if (fstatat(dirfd(proc), path, &st, 0) < 0 || st.st_dev != dev)
                        continue;
                for (size_t i = 0; i < n_ids; i++)
                        if (ids[i] == (uint64_t) st.st_ino) {
                                if (same_namespace(dirfd(proc), path, unique_ids ? unique_ids[i] : 0))
                                        counts[i]++;
                                break;
                        }
        }
        return 0;
}
