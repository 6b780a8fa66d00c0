/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "bus-errors.h"
#include "bus-util.h"
#include "eject-scan.h"
#include "fs-util.h"
#include "mount-util.h"
#include "path-util.h"
#include "strv.h"
#include "text-escape.h"
#include "user-util.h"

/* The eject child (eject-scan.h): what it was asked, the views it was given, and nothing of
 * the daemon's. */

/* Mounts stacked on a mount of the file system, detached in turn before it (lazily). */
#define STACKED_MAX 16

typedef struct EjectOp {
        const char *what;        /* Eject(): the device or mount point; NULL for a release */
        dev_t dev;               /* a release: the device */
        bool lazy;               /* detach what is in use (Eject's flag; a release always does) */
        bool release;
        size_t n_views;
        char **names;            /* view i's user */
        int *fds;                /* view i's namespace */
        bool malformed;          /* an AddViews call that could not be read */
} EjectOp;

/* The child's own state across its calls: this process's memory, zeroed, as the daemon never
 * touches it. */
static EjectOp views;

/* A process that keeps a mount busy. */
typedef struct Holder {
        pid_t pid;
        uid_t uid;
        uint64_t ns;             /* its mount namespace's inode */
        const char *what;        /* "working directory", "root directory", "open file", "mapped file" */
        char *comm;
        char *path;              /* the mount point it holds, where known */
} Holder;

/* What it found and did. */
typedef struct Records {
        dev_t dev;
        char **detached_users;   /* "" for the host */
        char **detached_paths;
        char **left;             /* what is left, or went lazily: a sentence each */
        Holder *holders;
        size_t n_holders;
} Records;

static void records_done(Records *rec) {
        strv_free(rec->detached_users);
        strv_free(rec->detached_paths);
        strv_free(rec->left);
        for (size_t i = 0; i < rec->n_holders; i++) {
                free(rec->holders[i].comm);
                free(rec->holders[i].path);
        }
        free(rec->holders);
}


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

static int add_detached(Records *rec, const char *user, const char *path) {
        if (strv_extend(&rec->detached_users, user) < 0 || strv_extend(&rec->detached_paths, path) < 0)
                return -ENOMEM;
        return 0;
}

/* "the view of 'alice', '/mnt/usb' (in use: detached lazily)" */
static int add_left(Records *rec, const char *user, const char *path, bool lazily) {
        char *line;

        if (asprintf(&line, "%s%s%s '%s'%s", *user ? "the view of '" : "the host", user, *user ? "'," : ",", path,
                     lazily ? " (in use: detached lazily)" : " (could not be detached)") < 0)
                return -ENOMEM;
        return strv_consume(&rec->left, line);
}

static void add_holder(Records *rec, pid_t pid, const char *what, uint64_t mount_id, const Scan *s) {
        char comm[64] = "", path[64];
        Holder *h = realloc(rec->holders, (rec->n_holders + 1) * sizeof(Holder));
        struct stat st;
        ssize_t k;
        int fd;

        if (!h)
                return;
        rec->holders = h;
        h += rec->n_holders;
        *h = (Holder) { .pid = pid, .uid = (uid_t) -1, .what = what };
        snprintf(path, sizeof path, "/proc/%d", (int) pid);
        if (stat(path, &st) >= 0)
                h->uid = st.st_uid;
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
                h->ns = (uint64_t) st.st_ino;
        h->comm = strdup(comm);
        h->path = strdup(found_path(s, mount_id));
        if (h->comm && h->path)
                rec->n_holders++;
        else {
                free(h->comm);
                free(h->path);
        }
}

/* The processes that hold a mount of the file system, from /proc alone. */
static size_t scan_holders(Records *rec, const Scan *s, dev_t dev) {
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
                        add_holder(rec, pid, "working directory", id, s);
                        held = true;
                }
                snprintf(path, sizeof path, "/proc/%d/root", (int) pid);
                if (mount_id_of(path, &id) >= 0 && id_in(ids, n_ids, id)) {
                        add_holder(rec, pid, "root directory", id, s);
                        held = true;
                }
                snprintf(path, sizeof path, "/proc/%d/fdinfo", (int) pid);
                DIR *fds = opendir(path);
                if (fds) {
                        struct dirent *fe;
                        while ((fe = readdir(fds)))
                                if (fe->d_name[0] != '.' && fdinfo_mount_id(dirfd(fds), fe->d_name, &id) >= 0 &&
                                    id_in(ids, n_ids, id)) {
                                        add_holder(rec, pid, "open file", id, s);
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
                                        add_holder(rec, pid, "mapped file", 0, s);
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
static int detach_one(const Found *f, const Scan *s, bool lazy, Records *rec, const EjectOp *op) {
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
                        if (add_detached(rec, ns_name(op, f->ns), f->path) < 0)
                                return -ENOMEM;
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

static int eject_run(const EjectOp *op, Records *rec, NsmError *error) {
        _cleanup_(scan_done) Scan s = {}, after = {};
        _cleanup_close_ int host_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
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
        rec->dev = dev;

        r = scan_all(op, host_fd, dev, &s);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the mount tables: %m.");
        if (op->release)
                for (size_t i = 0; i < s.n; i++)
                        if (s.found[i].ns < 0)
                                return 0;   /* the host mounts it again */
        if (s.n == 0)
                return 0;

        /* Who holds it, before anything is detached: without the lazy flag that is a refusal. */
        n_holders = scan_holders(rec, &s, dev);
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

                r = enter(op, host_fd, f->ns);
                if (r >= 0)
                        r = detach_one(f, &s, op->lazy, rec, op);
                if (r >= 0)
                        n_detached++;
                if (r == -EBUSY && op->release) {
                        /* In use: detached lazily, the file system goes when its holders let go. */
                        r = detach_one(f, &s, true, rec, op);
                        if (r >= 0 && add_left(rec, ns_name(op, f->ns), f->path, true) < 0)
                                return -ENOMEM;
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

                for (size_t j = 0; j < after.n; j++)
                        if (after.found[j].ns == s.found[i].ns && after.found[j].id == s.found[i].id)
                                left = true;
                r = left ? add_left(rec, ns_name(op, s.found[i].ns), s.found[i].path, false) :
                           add_detached(rec, ns_name(op, s.found[i].ns), s.found[i].path);
                if (r < 0)
                        return r;
        }
        /* For a release, the daemon logs what is left from the records. */
        if (after.n > 0 && !op->release)
                return nsm_error_setf(error, NSM_ERROR_BUSY, "%zu mounts of the file system could not be detached "
                                      "(hidden under another mount, or in use); the others were.", after.n);
        return 0;
}


/* ======== the interface ======== */

static const char *view_of_inode(const EjectOp *op, uint64_t ino, uint64_t host_ino) {
        struct stat st;

        if (ino == host_ino)
                return "";
        for (size_t i = 0; i < op->n_views; i++)
                if (fstat(op->fds[i], &st) >= 0 && (uint64_t) st.st_ino == ino)
                        return op->names[i];
        return NULL;
}

/* "pid 1234 (sleep) of bob, in the view of 'bob': working directory on /mnt/usb" */
static char *holders_text(const EjectOp *op, const Records *rec) {
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        uint64_t host_ino = stat("/proc/self/ns/mnt", &st) >= 0 ? (uint64_t) st.st_ino : 0;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < rec->n_holders; i++) {
                const Holder *h = rec->holders + i;
                const char *view = view_of_inode(op, h->ns, host_ino);
                _cleanup_(user_record_done) UserRecord u = {};
                char uid[32];

                snprintf(uid, sizeof uid, "uid %u", (unsigned) h->uid);
                fprintf(f, "%spid %d (%s) of %s, %s%s%s: %s%s%s", i > 0 ? "; " : "", (int) h->pid, h->comm,
                        user_record_by_uid(h->uid, &u) >= 0 ? u.name : uid,
                        !view ? "in another mount namespace" : view[0] ? "in the view of '" : "on the host", view ?: "",
                        view && view[0] ? "'" : "", h->what, *h->path ? " on " : "", h->path);
        }
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

static int append_escaped_strv(sd_bus_message *m, char **l) {
        int r = sd_bus_message_open_container(m, 'a', "s");

        for (char **i = l; r >= 0 && i && *i; i++)
                r = bus_message_append_text(m, *i);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* The answer: what was detached (the paths as the kernel has them: "ay"), what is left, who
 * holds it; or the failure, with who holds it, or what is left, in its sentence. */
static int reply_records(sd_bus_message *m, const EjectOp *op, Records *rec, int r, NsmError *e, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *holders = NULL, *full = NULL;

        if (rec->n_holders > 0)
                holders = holders_text(op, rec);
        if (r < 0) {
                if (!nsm_error_is_set(e))
                        (void) nsm_error_set_errnof(e, r, NULL);
                if (holders && e->code == NSM_ERROR_BUSY && !op->release) {
                        if (asprintf(&full, "%s Held by: %s. Detach it anyway with the lazy flag (nsctl eject --lazy).",
                                     nsm_error_message(e), holders) < 0)
                                full = NULL;
                } else if (!op->release && rec->left) {
                        /* Some were detached, some not (one hidden under another mount, say): which. */
                        _cleanup_free_ char *left = strv_join(rec->left, "; ");
                        if (asprintf(&full, "%s Left: %s.", nsm_error_message(e), left ?: "?") < 0)
                                full = NULL;
                }
                if (full) {
                        free(e->message);
                        e->message = TAKE_PTR(full);
                }
                return bus_error_set_nsm(error, e);
        }
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "t", (uint64_t) rec->dev);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(say)");
        for (size_t i = 0; r >= 0 && rec->detached_paths && rec->detached_paths[i]; i++) {
                r = sd_bus_message_open_container(reply, 'r', "say");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", rec->detached_users[i]);
                if (r >= 0)
                        r = bus_message_append_bytes(reply, rec->detached_paths[i]);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_escaped_strv(reply, rec->left);
        if (r >= 0)
                r = bus_message_append_text(reply, holders ?: "");
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static int method_add_views(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name;
        int r, fd;

        r = sd_bus_message_enter_container(m, 'a', "(sh)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(sh)", &name, &fd)) > 0) {
                char **names = realloc(views.names, (views.n_views + 1) * sizeof(char *));
                int *fds = names ? realloc(views.fds, (views.n_views + 1) * sizeof(int)) : NULL;

                if (names)
                        views.names = names;
                if (!fds)
                        break;
                views.fds = fds;
                views.names[views.n_views] = strdup(name);
                views.fds[views.n_views] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (!views.names[views.n_views] || views.fds[views.n_views] < 0)
                        break;
                views.n_views++;
        }
        /* No reply is expected: what could not be read fails the call that follows. */
        if (r != 0)
                views.malformed = true;
        return 0;
}

static int run(sd_bus_message *m, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        Records rec = {};
        int r;

        if (views.malformed)
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
        r = eject_run(&views, &rec, &e);
        r = reply_records(m, &views, &rec, r, &e, error);
        records_done(&rec);
        return r;
}

static int method_eject(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        int r, lazy;

        r = sd_bus_message_read(m, "sb", &views.what, &lazy);
        if (r < 0 || !path_is_absolute_normalized(views.what))
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
        views.lazy = lazy;
        return run(m, error);
}

static int method_release(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        uint64_t dev;
        int r;

        r = sd_bus_message_read(m, "t", &dev);
        if (r < 0 || dev == 0)
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
        views.dev = (dev_t) dev;
        views.release = true;
        return run(m, error);
}

static const sd_bus_vtable eject_scan_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("AddViews", "a(sh)", "", method_add_views, SD_BUS_VTABLE_METHOD_NO_REPLY),
        SD_BUS_METHOD("Eject", "sb", EJECT_SCAN_RESULT, method_eject, 0),
        SD_BUS_METHOD("Release", "t", EJECT_SCAN_RESULT, method_release, 0),
        SD_BUS_VTABLE_END,
};

const ChildInterface eject_scan_interface = { EJECT_SCAN_INTERFACE, eject_scan_vtable };
