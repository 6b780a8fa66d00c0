/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "child.h"
#include "eject.h"
#include "fs-util.h"
#include "log.h"
#include "mount-util.h"
#include "namespace.h"
#include "op-queue.h"
#include "path-util.h"
#include "strv.h"
#include "time-util.h"
#include "user-util.h"

/* How long a release may take, at least: it is no caller's call, and it looks at every view. */
#define RELEASE_TIMEOUT_MIN_USEC (30 * USEC_PER_SEC)
/* Mounts stacked on a mount of the file system, detached in turn before it (lazily). */
#define STACKED_MAX 16

/* What the child gets (it sees the daemon's memory as it was at the fork). */
typedef struct EjectOp {
        const char *what;        /* Eject(): the device or mount point; NULL for a release */
        dev_t dev;               /* a release: the device */
        bool lazy;               /* detach what is in use (Eject's flag; a release always does) */
        bool release;
        size_t n_views;
        char **names;            /* view i's user */
        int *fds;                /* view i's namespace */
        uint64_t *inodes;        /* view i's MountNamespaceId */
} EjectOp;

/* ======== in the child ======== */

/* A mount of the file system, in namespace 'ns' (-1: the host). */
typedef struct Found {
        int ns;
        uint64_t id, parent_id;
        char *path;
        bool gone;
} Found;

typedef struct Scan {
        Found *found;
        size_t n;
        uint64_t *on_top;        /* ids of other mounts stacked on one of them (in any namespace) */
        size_t n_on_top;
        char *on_top_example;    /* "/mnt/usb/x (in the view of alice)" */
} Scan;

static void scan_done(Scan *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->found[i].path);
        free(s->found);
        free(s->on_top);
        free(s->on_top_example);
        *s = (Scan) {};
}

static int enter(const EjectOp *op, int host_fd, int ns) {
        return mntns_enter(ns < 0 ? host_fd : op->fds[ns]);
}

static const char *ns_name(const EjectOp *op, int ns) {
        return ns < 0 ? "" : op->names[ns];
}

/* Every mount of dev in the namespace we are in. */
static int scan_namespace(const EjectOp *op, int ns, dev_t dev, Scan *s) {
        MountEntry *e = NULL;
        size_t n = 0, first = s->n;
        int r;

        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (e[i].dev != dev)
                        continue;
                Found *f = realloc(s->found, (s->n + 1) * sizeof(Found));
                if (!f) {
                        mount_entries_free(e, n);
                        return -ENOMEM;
                }
                s->found = f;
                f[s->n] = (Found) { .ns = ns, .id = e[i].id, .parent_id = e[i].parent_id, .path = strdup(e[i].target ?: "") };
                if (!f[s->n++].path) {
                        mount_entries_free(e, n);
                        return -ENOMEM;
                }
        }
        /* Other file systems mounted on one of them: they go with it, or keep it busy. */
        for (size_t i = 0; i < n; i++) {
                if (e[i].dev == dev)
                        continue;
                for (size_t j = first; j < s->n; j++)
                        if (e[i].parent_id == s->found[j].id) {
                                uint64_t *t = realloc(s->on_top, (s->n_on_top + 1) * sizeof(uint64_t));
                                if (!t) {
                                        mount_entries_free(e, n);
                                        return -ENOMEM;
                                }
                                s->on_top = t;
                                t[s->n_on_top++] = e[i].id;
                                if (!s->on_top_example &&
                                    asprintf(&s->on_top_example, "'%s' (%s%s%s)", e[i].target ?: "", ns < 0 ? "on the host" :
                                             "in the view of '", ns_name(op, ns), ns < 0 ? "" : "'") < 0)
                                        s->on_top_example = NULL;
                                break;
                        }
        }
        mount_entries_free(e, n);
        return 0;
}

static int scan_all(const EjectOp *op, int host_fd, dev_t dev, Scan *s) {
        for (int ns = -1; ns < (int) op->n_views; ns++) {
                int r = enter(op, host_fd, ns);
                if (r >= 0)
                        r = scan_namespace(op, ns, dev, s);
                if (r < 0 && ns < 0)
                        return r;
                /* A view that cannot be read (gone meanwhile) has nothing we could detach. */
        }
        return enter(op, host_fd, -1);
}

/* The host's own: the file systems of /, /usr, /boot, /boot/efi, /var and /home and the devices
 * of its swap are never ejected, whoever asks (docs/interface.md: the one exception to root's
 * full power). Ejecting them takes the machine down with them; no click should. */
static const char *const host_paths_kept[] = { "/", "/usr", "/boot", "/boot/efi", "/var", "/home" };

/* The first of host_paths_kept whose file system is 'dev', or "swap" if the machine swaps on
 * it (a partition, or a file on it), or NULL. */
static const char *device_is_kept(const MountEntry *e, size_t n, dev_t dev) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[4096];

        for (size_t k = 0; k < ELEMENTSOF(host_paths_kept); k++)
                for (size_t i = n; i > 0; i--)   /* the last is the one on top */
                        if (streq_ptr(e[i - 1].target, host_paths_kept[k])) {
                                if (e[i - 1].dev == (uint64_t) dev)
                                        return host_paths_kept[k];
                                break;
                        }

        f = fopen("/proc/swaps", "re");
        while (f && fgets(line, sizeof line, f)) {
                struct stat st;

                line[strcspn(line, " \t\n")] = 0;
                if (line[0] != '/' || stat(line, &st) < 0)
                        continue;
                if ((S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev) == dev)
                        return "swap";
        }
        return NULL;
}

/* "/dev/block/MAJ:MIN" names a device by its number, as the kernel does (sysfs's
 * /sys/dev/block/MAJ:MIN), whether or not a node of that name exists: what a client read from
 * GetMountsEx's device number. 1 and the device if 'what' is one, 0 if it is not that form. */
static int parse_dev_block(const char *what, dev_t *ret) {
        unsigned maj, min;
        int n = 0;
        char sys[64];

        if (strncmp(what, "/dev/block/", strlen("/dev/block/")) != 0)
                return 0;
        if (sscanf(what + strlen("/dev/block/"), "%u:%u%n", &maj, &min, &n) != 2 ||
            what[strlen("/dev/block/") + n] != '\0')
                return 0;
        snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", maj, min);
        if (access(sys, F_OK) < 0)
                return -errno;
        *ret = makedev(maj, min);
        return 1;
}

/* The device 'what' names: a block device (a node, or /dev/block/MAJ:MIN), or the file system
 * mounted at a host path. */
static int resolve_what(const char *what, dev_t *ret, NsmError *error) {
        MountEntry *e = NULL;
        size_t n = 0;
        dev_t dev = 0;
        const char *kept;
        struct stat st;
        int r;

        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the host's mount table: %m.");
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(e[i].target, what))
                        dev = e[i].dev;   /* the last is the one on top */
        r = 0;
        if (dev == 0) {
                r = parse_dev_block(what, &dev);
                if (r < 0)
                        r = nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "'%s' names no block device of this machine.",
                                           what);
        }
        if (r == 0 && dev == 0) {
                /* Not a mount point: a device node (/dev/sdb1, /dev/disk/by-label/X → sdb1). */
                if (stat(what, &st) < 0)
                        r = nsm_error_setf(error, NSM_ERROR_INVALID_PATH,
                                           "'%s' is neither a mount point on the host nor a block device: %s.", what,
                                           strerror(errno));
                else if (!S_ISBLK(st.st_mode))
                        r = nsm_error_setf(error, NSM_ERROR_INVALID_PATH,
                                           "'%s' is neither a mount point on the host nor a block device.", what);
                else
                        dev = st.st_rdev;
        } else if (r >= 0 && major(dev) == 0)
                r = nsm_error_setf(error, NSM_ERROR_INVALID_PATH, "'%s' is not a file system on a block device "
                                   "(there is no device to eject).", what);
        if (r >= 0 && (kept = device_is_kept(e, n, dev)))
                r = nsm_error_setf(error, NSM_ERROR_INVALID_PATH,
                                   "'%s' holds the host's %s, which is never ejected, not even by root.", what,
                                   streq(kept, "/") ? "root file system" : kept);
        mount_entries_free(e, n);
        if (r < 0)
                return r;
        *ret = dev;
        return 0;
}

static bool id_in(const uint64_t *ids, size_t n, uint64_t id) {
        for (size_t i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

static const char *found_path(const Scan *s, uint64_t id) {
        for (size_t i = 0; i < s->n; i++)
                if (s->found[i].id == id)
                        return s->found[i].path;
        return "";
}

static int parse_pid_name(const char *s, pid_t *ret) {
        char *end;
        long v;

        if (!s[0] || s[0] < '1' || s[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || *end || v <= 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (pid_t) v;
        return 0;
}

/* The mount the fd refers to, without asking its file system anything. */
static int mount_id_of(const char *proc_link, uint64_t *ret) {
        _cleanup_close_ int fd = open(proc_link, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fd_get_mount_id(fd, "", ret);
}

/* "mnt_id:\t123" of /proc/PID/fdinfo/N. */
static int fdinfo_mount_id(int dir, const char *name, uint64_t *ret) {
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
        char buf[4096];
        ssize_t k;

        if (fd < 0)
                return -errno;
        k = read(fd, buf, sizeof buf - 1);
        if (k <= 0)
                return -EIO;
        buf[k] = 0;
        for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "mnt_id:", 7) == 0)
                        return sscanf(p + 7, "%" SCNu64, ret) == 1 ? 0 : -EBADMSG;
        return -ENOENT;
}

/* Whether a line of /proc/PID/maps maps a file of dev ("7f.. r-xp 00000000 07:03 12 /x"). */
static bool maps_line_on(const char *line, dev_t dev) {
        unsigned maj, min;
        return sscanf(line, "%*s %*s %*s %x:%x", &maj, &min) == 2 && makedev(maj, min) == dev && maj != 0;
}

static void send_fields(int sock, const char *const *fields) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        for (const char *const *f = fields; *f; f++)
                size += strlen(*f) + 1;
        buf = malloc(size + 1);
        if (!buf)
                return;
        char *p = buf;
        for (const char *const *f = fields; *f; f++)
                p = stpcpy(p, *f) + 1;
        (void) ipc_send(sock, 0, IPC_MORE, buf, size, NULL, 0);
}

static void send_holder(int sock, pid_t pid, const char *what, uint64_t mount_id, const Scan *s) {
        char spid[32], suid[32], sns[32] = "0", comm[64] = "", path[64];
        struct stat st;
        ssize_t k;
        int fd;

        snprintf(spid, sizeof spid, "%d", (int) pid);
        snprintf(path, sizeof path, "/proc/%d", (int) pid);
        snprintf(suid, sizeof suid, "%u", stat(path, &st) >= 0 ? (unsigned) st.st_uid : UINT32_MAX);
        snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                k = read(fd, comm, sizeof comm - 1);
                comm[k > 0 ? k : 0] = 0;
                comm[strcspn(comm, "\n")] = 0;
                safe_close(fd);
        }
        snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int) pid);
        if (stat(path, &st) >= 0)
                snprintf(sns, sizeof sns, "%" PRIu64, (uint64_t) st.st_ino);
        send_fields(sock, (const char *const[]) { "H", spid, suid, sns, comm, what, found_path(s, mount_id), NULL });
}

/* The processes that hold a mount of the file system, from /proc alone. */
static size_t scan_holders(int sock, const Scan *s, dev_t dev) {
        _cleanup_free_ uint64_t *ids = calloc(s->n + s->n_on_top + 1, sizeof(uint64_t));
        DIR *d = opendir("/proc");
        size_t n_ids = 0, n_holders = 0;
        struct dirent *de;

        if (!d || !ids) {
                if (d)
                        closedir(d);
                return 0;
        }
        for (size_t i = 0; i < s->n; i++)
                ids[n_ids++] = s->found[i].id;
        while ((de = readdir(d))) {
                char path[128];
                uint64_t id;
                pid_t pid;
                bool held = false;

                if (parse_pid_name(de->d_name, &pid) < 0 || pid == getpid())
                        continue;
                snprintf(path, sizeof path, "/proc/%d/cwd", (int) pid);
                if (mount_id_of(path, &id) >= 0 && id_in(ids, n_ids, id)) {
                        send_holder(sock, pid, "working directory", id, s);
                        held = true;
                }
                snprintf(path, sizeof path, "/proc/%d/root", (int) pid);
                if (mount_id_of(path, &id) >= 0 && id_in(ids, n_ids, id)) {
                        send_holder(sock, pid, "root directory", id, s);
                        held = true;
                }
                snprintf(path, sizeof path, "/proc/%d/fdinfo", (int) pid);
                DIR *fds = opendir(path);
                if (fds) {
                        struct dirent *fe;
                        while ((fe = readdir(fds)))
                                if (fe->d_name[0] != '.' && fdinfo_mount_id(dirfd(fds), fe->d_name, &id) >= 0 &&
                                    id_in(ids, n_ids, id)) {
                                        send_holder(sock, pid, "open file", id, s);
                                        held = true;
                                        break;
                                }
                        closedir(fds);
                }
                snprintf(path, sizeof path, "/proc/%d/maps", (int) pid);
                FILE *maps = fopen(path, "re");
                if (maps) {
                        _cleanup_free_ char *line = NULL;
                        size_t len = 0;
                        while (getline(&line, &len, maps) > 0)
                                if (maps_line_on(line, dev)) {
                                        send_holder(sock, pid, "mapped file", 0, s);
                                        held = true;
                                        break;
                                }
                        fclose(maps);
                }
                if (held)
                        n_holders++;
        }
        closedir(d);
        return n_holders;
}

/* Deepest first; at one mount point the one on top (later in the table) first. */
static int found_cmp(const void *a, const void *b) {
        const Found *x = a, *y = b;
        size_t dx = 0, dy = 0;

        if (x->ns != y->ns)
                return x->ns < y->ns ? -1 : 1;
        for (const char *p = x->path; *p; p++)
                dx += *p == '/';
        for (const char *p = y->path; *p; p++)
                dy += *p == '/';
        if (dx != dy)
                return dx > dy ? -1 : 1;
        return x->id > y->id ? -1 : x->id < y->id;
}

/* Unmounts f, checked by id, from its parent directory (no symlink followed on the way: a
 * user may have changed what the path names since the table was read). Mounts of other file
 * systems stacked on it go first when detaching lazily. 0: unmounted, -ENOENT: not there (gone
 * with a peer's unmount), else the error. */
static int detach_one(const Found *f, const Scan *s, bool lazy, int sock, const EjectOp *op) {
        _cleanup_free_ char *dir = NULL;
        const char *base;

        if (streq(f->path, "/") || !path_is_absolute_normalized(f->path))
                return -EINVAL;
        base = strrchr(f->path, '/') + 1;
        dir = strndup(f->path, (size_t) (base - f->path));
        if (!dir)
                return -ENOMEM;
        for (int tries = 0; tries < STACKED_MAX; tries++) {
                _cleanup_close_ int parent = -EBADF;
                uint64_t id;
                int r;

                r = open_path_no_symlinks(dir, &parent);
                if (r < 0)
                        return r == -ELOOP ? -ENOENT : r;
                if (fd_get_mount_id(parent, base, &id) < 0)
                        return -ENOENT;
                if (id != f->id) {
                        if (!lazy || !id_in(s->on_top, s->n_on_top, id))
                                return -ENOENT;
                        /* Another file system on top of it: it lives on this one, it goes too. */
                        if (fchdir(parent) < 0 || umount2(base, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                                return -errno;
                        send_fields(sock, (const char *const[]) { "S", f->ns < 0 ? "-1" : op->names[f->ns], f->path, NULL });
                        continue;
                }
                if (fchdir(parent) < 0)
                        return -errno;
                if (umount2(base, UMOUNT_NOFOLLOW | (lazy ? MNT_DETACH : 0)) < 0)
                        return -errno;
                return 0;
        }
        return -EBUSY;
}

/* Whether f can be reached by its path: what is there is f, another mount of the file system
 * stacked on it, or (for a lazy detach) a mount on top of one of them. A mount hidden under
 * another one (mounted over a directory above it) cannot be unmounted by any path. */
static bool reachable(const Found *f, const Scan *s, bool lazy) {
        _cleanup_close_ int parent = -EBADF;
        _cleanup_free_ char *dir = NULL;
        const char *base;
        uint64_t id;

        if (streq(f->path, "/") || !path_is_absolute_normalized(f->path))
                return false;
        base = strrchr(f->path, '/') + 1;
        dir = strndup(f->path, (size_t) (base - f->path));
        if (!dir || open_path_no_symlinks(dir, &parent) < 0 || fd_get_mount_id(parent, base, &id) < 0)
                return false;
        for (size_t i = 0; i < s->n; i++)
                if (s->found[i].ns == f->ns && s->found[i].id == id)
                        return true;
        return lazy && id_in(s->on_top, s->n_on_top, id);
}

static int eject_run(int sock, void *userdata, NsmError *error) {
        const EjectOp *op = userdata;
        _cleanup_(scan_done) Scan s = {}, after = {};
        _cleanup_close_ int host_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        char sdev[32];
        dev_t dev = op->dev;
        size_t n_holders;
        int r;

        if (host_fd < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to open the host's namespace: %m.");
        if (!op->release) {
                r = resolve_what(op->what, &dev, error);
                if (r < 0)
                        return r;
        }
        snprintf(sdev, sizeof sdev, "%u:%u", major(dev), minor(dev));
        send_fields(sock, (const char *const[]) { "X", sdev, NULL });

        r = scan_all(op, host_fd, dev, &s);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the mount tables: %m.");
        if (op->release)
                for (size_t i = 0; i < s.n; i++)
                        if (s.found[i].ns < 0)
                                return ipc_send(sock, 0, 0, NULL, 0, NULL, 0);   /* the host mounts it again */
        if (s.n == 0)
                return ipc_send(sock, 0, 0, NULL, 0, NULL, 0);

        /* Who holds it, before anything is detached: without the lazy flag that is a refusal. */
        n_holders = scan_holders(sock, &s, dev);
        if (!op->lazy && !op->release && (n_holders > 0 || s.n_on_top > 0)) {
                if (n_holders > 0)
                        return nsm_error_setf(error, NSM_ERROR_BUSY,
                                              "The file system of '%s' is in use; nothing was detached.", op->what);
                return nsm_error_setf(error, NSM_ERROR_BUSY, "The file system of '%s' has %s mounted on it; nothing "
                                      "was detached.", op->what, s.on_top_example ?: "another file system");
        }

        /* Nothing is detached unless everything can be. */
        if (!op->release)
                for (size_t i = 0; i < s.n; i++) {
                        const Found *f = s.found + i;
                        r = enter(op, host_fd, f->ns);
                        if (r >= 0 && !reachable(f, &s, op->lazy)) {
                                (void) enter(op, host_fd, -1);
                                return nsm_error_setf(error, NSM_ERROR_BUSY, "'%s' %s%s%s, a mount of the file system "
                                                      "of '%s', is hidden under another mount (over a directory above "
                                                      "it), which has to go first; nothing was detached.", f->path,
                                                      f->ns < 0 ? "on the host" : "in the view of '",
                                                      ns_name(op, f->ns), f->ns < 0 ? "" : "'", op->what);
                        }
                }
        (void) enter(op, host_fd, -1);

        qsort(s.found, s.n, sizeof(Found), found_cmp);
        size_t n_detached = 0;
        for (size_t i = 0; i < s.n; i++) {
                Found *f = s.found + i;
                char sns[32];

                r = enter(op, host_fd, f->ns);
                if (r >= 0)
                        r = detach_one(f, &s, op->lazy, sock, op);
                if (r >= 0)
                        n_detached++;
                if (r == -EBUSY && op->release) {
                        /* In use: detached lazily, the file system goes when its holders let go. */
                        r = detach_one(f, &s, true, sock, op);
                        snprintf(sns, sizeof sns, "%d", f->ns);
                        if (r >= 0)
                                send_fields(sock, (const char *const[]) { "L", sns, f->path, NULL });
                }
                if (r == -EBUSY && !op->lazy) {
                        (void) enter(op, host_fd, -1);
                        /* Busy at the first, yet the scan above named nobody: the holder came
                         * meanwhile, or the scan could not see it (other users' /proc/PID/cwd,
                         * root and fdinfo need CAP_SYS_PTRACE). Nothing was detached: say so. */
                        if (n_detached == 0)
                                return nsm_error_setf(error, NSM_ERROR_BUSY, "The file system of '%s' is in use by a "
                                                      "process the daemon did not see (one that came meanwhile, or "
                                                      "any, without CAP_SYS_PTRACE); nothing was detached.",
                                                      op->what);
                        return nsm_error_setf(error, NSM_ERROR_BUSY, "'%s' became busy while the file system of '%s' "
                                              "was being ejected; what was detached before stays detached.", f->path,
                                              op->what);
                }
                /* Other errors: the rescan below says what is left. */
        }
        r = scan_all(op, host_fd, dev, &after);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the mount tables again: %m.");
        for (size_t i = 0; i < s.n; i++) {
                bool left = false;
                char sns[32];

                for (size_t j = 0; j < after.n; j++)
                        if (after.found[j].ns == s.found[i].ns && after.found[j].id == s.found[i].id)
                                left = true;
                snprintf(sns, sizeof sns, "%d", s.found[i].ns);
                send_fields(sock, (const char *const[]) { left ? "R" : "D", sns, s.found[i].path, NULL });
        }
        /* For a release, the daemon logs what is left from the records. */
        if (after.n > 0 && !op->release)
                return nsm_error_setf(error, NSM_ERROR_BUSY, "%zu mounts of the file system could not be detached "
                                      "(hidden under another mount, or in use); the others were.", after.n);
        return ipc_send(sock, 0, 0, NULL, 0, NULL, 0);
}

/* ======== in the daemon ======== */

struct Ejector {
        NamespaceSet *namespaces;       /* the owner's: the views, and the configuration */
        ChildSet *children;
        OpQueue *host_ops;
        IdMap *ejected;                 /* block devices Eject() detached everywhere */
};

typedef struct EjectJob {
        Ejector *ejector;
        EjectOp op;
        char *what;
        Namespace **refs;        /* what the child's view fds belong to, held until it ends */
        uint64_t deadline;
        EjectDoneFunc done;
        void *userdata;
        QueuedOp *queued;
        char *description;
} EjectJob;

static void eject_job_free(EjectJob *j) {
        if (!j)
                return;
        for (size_t i = 0; i < j->op.n_views; i++) {
                namespace_unref(j->refs[i]);
                free(j->op.names[i]);
        }
        free(j->refs);
        free(j->op.names);
        free(j->op.fds);
        free(j->op.inodes);
        free(j->what);
        free(j->description);
        free(j);
}

static void eject_result_done(EjectResult *r) {
        nsm_error_done(&r->error);
        for (size_t i = 0; i < r->n_detached; i++) {
                free(r->detached[i].user);
                free(r->detached[i].path);
        }
        for (size_t i = 0; i < r->n_holders; i++) {
                free(r->holders[i].command);
                free(r->holders[i].view);
                free(r->holders[i].what);
                free(r->holders[i].path);
        }
        free(r->detached);
        free(r->holders);
}

static const char *view_of_index(const EjectJob *j, const char *index) {
        int i = atoi(index);
        return i >= 0 && (size_t) i < j->op.n_views ? j->op.names[i] : "";
}

static char *view_of_inode(const EjectJob *j, const char *inode, uint64_t host_inode) {
        uint64_t ino = strtoull(inode, NULL, 10);
        if (ino == host_inode)
                return strdup("");
        for (size_t i = 0; i < j->op.n_views; i++)
                if (j->op.inodes[i] == ino)
                        return strdup(j->op.names[i]);
        return NULL;
}

/* The child's records: NUL-separated fields, one record per message (ipc.h IPC_MORE). */
static int parse_records(EjectJob *j, const char *data, size_t size, EjectResult *res, char ***ret_lazy) {
        struct stat st;
        uint64_t host_inode = stat("/proc/self/ns/mnt", &st) >= 0 ? (uint64_t) st.st_ino : 0;
        const char *f[8];

        for (size_t off = 0; off < size;) {
                size_t n = 0;
                /* A record: its fields up to the next type letter alone in a field. */
                f[n++] = data + off;
                off += strnlen(data + off, size - off) + 1;
                size_t want = f[0][0] == 'H' ? 7 : f[0][0] == 'X' ? 2 : 3;
                while (n < want && off < size) {
                        f[n++] = data + off;
                        off += strnlen(data + off, size - off) + 1;
                }
                if (n < want || off > size)
                        return -EBADMSG;
                switch (f[0][0]) {
                case 'X': {
                        unsigned maj, min;
                        if (sscanf(f[1], "%u:%u", &maj, &min) == 2)
                                res->dev = makedev(maj, min);
                        break;
                }
                case 'D':
                case 'S': {
                        EjectMount *m = realloc(res->detached, (res->n_detached + 1) * sizeof(EjectMount));
                        if (!m)
                                return -ENOMEM;
                        res->detached = m;
                        m[res->n_detached++] = (EjectMount) {
                                .user = strdup(f[0][0] == 'S' ? (streq(f[1], "-1") ? "" : f[1]) : view_of_index(j, f[1])),
                                .path = strdup(f[2]),
                        };
                        break;
                }
                case 'L':
                case 'R': {
                        _cleanup_free_ char *line = NULL;
                        const char *user = view_of_index(j, f[1]);
                        if (asprintf(&line, "%s%s%s '%s'%s", *user ? "the view of '" : "the host", user, *user ? "'," : ",",
                                     f[2], f[0][0] == 'L' ? " (in use: detached lazily)" : " (could not be detached)") < 0 ||
                            strv_extend(ret_lazy, line) < 0)
                                return -ENOMEM;
                        break;
                }
                case 'H': {
                        EjectHolder *h = realloc(res->holders, (res->n_holders + 1) * sizeof(EjectHolder));
                        if (!h)
                                return -ENOMEM;
                        res->holders = h;
                        h[res->n_holders++] = (EjectHolder) {
                                .pid = (pid_t) atoi(f[1]),
                                .uid = (uid_t) strtoul(f[2], NULL, 10),
                                .view = view_of_inode(j, f[3], host_inode),
                                .command = strdup(f[4]),
                                .what = strdup(f[5]),
                                .path = strdup(f[6]),
                        };
                        break;
                }
                default:
                        return -EBADMSG;
                }
        }
        return 0;
}

/* "pid 1234 (sleep) of bob, in the view of 'bob': working directory on /mnt/usb" */
static char *holders_text(const EjectResult *res) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < res->n_holders; i++) {
                const EjectHolder *h = res->holders + i;
                _cleanup_(user_record_done) UserRecord u = {};
                char uid[32];
                snprintf(uid, sizeof uid, "uid %u", (unsigned) h->uid);
                fprintf(f, "%spid %d (%s) of %s, %s%s%s: %s%s%s", i > 0 ? "; " : "", (int) h->pid, h->command ?: "",
                        user_record_by_uid(h->uid, &u) >= 0 ? u.name : uid, !h->view ? "in another mount namespace" : h->view[0] ? "in the view of '" : "on the host",
                        h->view ?: "", h->view && h->view[0] ? "'" : "", h->what ?: "", h->path && *h->path ? " on " : "",
                        h->path ?: "");
        }
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

/* "alice's /home/alice/usb, bob's /mnt/usb" */
static char *detached_text(const EjectResult *res) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < res->n_detached; i++)
                fprintf(f, "%s%s%s'%s'", i > 0 ? ", " : "", *res->detached[i].user ? res->detached[i].user : "the host",
                        *res->detached[i].user ? "'s " : "'s ", res->detached[i].path);
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

static void on_eject_child_done(const NsmError *error, IpcMessage *final, const char *data, size_t size,
                                void *userdata) {
        EjectJob *j = userdata;
        _cleanup_strv_free_ char **lazy = NULL;
        _cleanup_free_ char *holders = NULL, *full = NULL;
        EjectResult res = {};
        bool busy = error && error->code == NSM_ERROR_BUSY;
        int r;

        r = parse_records(j, data ?: "", data ? size : 0, &res, &lazy);
        if (r < 0 && !error)
                (void) nsm_error_set(&res.error, NSM_ERROR_SYSTEM, -EPROTO,
                                     "The helper process answered with a malformed result.");
        /* The child's sentence, and what the daemon learnt from its records. */
        if (res.n_holders > 0 && (busy || j->op.release)) {
                holders = holders_text(&res);
                if (busy && asprintf(&full, "%s Held by: %s. Detach it anyway with the lazy flag (nsctl eject --lazy).",
                                     nsm_error_message(error), holders ?: "?") < 0)
                        full = NULL;
        } else if (error && !j->op.release && lazy) {
                /* Some were detached, some not (one hidden under another mount, say): which. */
                _cleanup_free_ char *left = strv_join(lazy, "; ");
                if (asprintf(&full, "%s Left: %s.", nsm_error_message(error), left ?: "?") < 0)
                        full = NULL;
        }
        if (error)
                (void) nsm_error_set(&res.error, error->code, error->errno_value, full ?: nsm_error_message(error));
        if (j->op.release) {
                _cleanup_free_ char *list = strv_join(lazy, "; "), *done = detached_text(&res);
                if (nsm_error_is_set(&res.error))
                        log_warning("Failed to release the copies of block device %u:%u the views hold: %s",
                                    major(j->op.dev), minor(j->op.dev), nsm_error_message(&res.error));
                else if (res.n_detached > 0 && !(list && *list))
                        log_info("Released block device %u:%u: detached %s.", major(j->op.dev), minor(j->op.dev),
                                 done ?: "its copies in views");
                else if (res.n_detached > 0 || (list && *list))
                        log_warning("Released block device %u:%u: detached %s; %s%s%s.", major(j->op.dev),
                                    minor(j->op.dev), done ?: "its copies in views", list ?: "",
                                    holders ? "; held by: " : "", holders ?: "");
        } else if (!nsm_error_is_set(&res.error) && res.dev != 0 && !lazy) {
                /* Everything is gone: the host's unmount just seen needs no release. */
                if (id_map_put(j->ejector->ejected, res.dev, (void *) 1) < 0)
                        log_oom();
        }
        if (j->done)
                j->done(&res, j->userdata);
        eject_result_done(&res);
        if (j->queued)
                op_queue_complete(j->queued);
        eject_job_free(j);
}

/* The views as they are when the job starts: their names, fds and inodes for the child. */
static int eject_job_snapshot(EjectJob *j) {
        Ejector *x = j->ejector;
        size_t n = hashmap_size(x->namespaces->by_name), k = 0;
        Namespace *ns;

        j->op.names = calloc(n + 1, sizeof(char *));
        j->op.fds = calloc(n + 1, sizeof(int));
        j->op.inodes = calloc(n + 1, sizeof(uint64_t));
        j->refs = calloc(n + 1, sizeof(Namespace *));
        if (!j->op.names || !j->op.fds || !j->op.inodes || !j->refs)
                return -ENOMEM;
        for (HashmapIterator i = {}; hashmap_iterate(x->namespaces->by_name, &i, (void **) &ns, NULL);) {
                if (!ns->ready || ns->mntns_fd < 0)
                        continue;
                j->op.names[k] = strdup(ns->name);
                if (!j->op.names[k])
                        return -ENOMEM;
                j->op.fds[k] = ns->mntns_fd;
                j->op.inodes[k] = ns->mntns_inode;
                j->refs[k] = namespace_ref(ns);
                j->op.n_views = ++k;
        }
        return 0;
}

static int eject_job_start(QueuedOp *q, void *userdata) {
        EjectJob *j = userdata;
        Ejector *x = j->ejector;
        int r;

        j->queued = q;
        if (j->op.release && id_map_remove(x->ejected, j->op.dev)) {
                log_debug("Block device %u:%u was ejected everywhere: nothing to release.", major(j->op.dev), minor(j->op.dev));
                op_queue_complete(q);
                eject_job_free(j);
                return 0;
        }
        r = eject_job_snapshot(j);
        if (r < 0) {
                j->queued = NULL;
                return r;
        }
        ChildSpec spec = {
                .description = j->description,
                .run = eject_run,
                .run_userdata = &j->op,
                .keep_fds = j->op.fds,
                .n_keep_fds = j->op.n_views,
                .deadline = j->deadline,
                .done = on_eject_child_done,
                .userdata = j,
        };
        r = child_start(x->children, &spec);
        if (r < 0)
                j->queued = NULL;   /* the queue fails us itself */
        return r;
}

static void eject_job_not_started(const NsmError *error, void *userdata) {
        EjectJob *j = userdata;
        EjectResult res = {};

        if (j->op.release)
                log_warning("Failed to release the copies of block device %u:%u the views hold: %s", major(j->op.dev),
                            minor(j->op.dev), nsm_error_message(error));
        else if (j->done) {
                (void) nsm_error_copy(&res.error, error);   /* without memory, its sentence is the table's */
                j->done(&res, j->userdata);
        }
        eject_result_done(&res);
        eject_job_free(j);
}

static int eject_queue(Ejector *x, EjectJob *j) {
        int r = op_queue_add(x->host_ops, j->deadline, eject_job_start, eject_job_not_started, j);
        if (r < 0)
                eject_job_free(j);
        return r;
}

int eject_start(Ejector *x, const char *what, bool lazy, uint64_t deadline, EjectDoneFunc done, void *userdata) {
        EjectJob *j = calloc(1, sizeof(EjectJob));

        if (!j)
                return -ENOMEM;
        *j = (EjectJob) { .ejector = x, .deadline = deadline, .done = done, .userdata = userdata,
                          .op = { .lazy = lazy } };
        j->what = strdup(what);
        j->op.what = j->what;
        if (!j->what || asprintf(&j->description, "Eject of '%s'", what) < 0) {
                j->description = NULL;
                eject_job_free(j);
                return -ENOMEM;
        }
        return eject_queue(x, j);
}

int eject_release(Ejector *x, dev_t dev) {
        EjectJob *j = calloc(1, sizeof(EjectJob));

        if (!j)
                return -ENOMEM;
        *j = (EjectJob) { .ejector = x, .op = { .dev = dev, .release = true, .lazy = false },
                          .deadline = now_usec(CLOCK_MONOTONIC) + MAX(x->namespaces->config->operation_timeout_usec,
                                                                      RELEASE_TIMEOUT_MIN_USEC) };
        if (asprintf(&j->description, "Releasing block device %u:%u", major(dev), minor(dev)) < 0) {
                j->description = NULL;
                eject_job_free(j);
                return -ENOMEM;
        }
        return eject_queue(x, j);
}

void ejector_forget(Ejector *x, dev_t dev) {
        if (x)
                (void) id_map_remove(x->ejected, dev);
}

int ejector_new(NamespaceSet *namespaces, ChildSet *children, OpQueue *host_ops, Ejector **ret) {
        Ejector *x = calloc(1, sizeof(Ejector));

        if (!x)
                return -ENOMEM;
        *x = (Ejector) { .namespaces = namespaces, .children = children, .host_ops = host_ops, .ejected = id_map_new() };
        if (!x->ejected) {
                free(x);
                return -ENOMEM;
        }
        *ret = x;
        return 0;
}

Ejector *ejector_free(Ejector *x) {
        if (!x)
                return NULL;
        id_map_free(x->ejected);
        free(x);
        return NULL;
}
