/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "log.h"
#include "mount-util.h"
#include "fs-util.h"
#include "path-util.h"
#include "view-policy.h"
#include "strv.h"

/* The [View] policy, applied inside a freshly built view, in a killable child that entered it
 * (view-ops.c, VIEW_OP_APPLY_POLICY; the view builder never looks up a user's paths).
 *
 * How it works:
 *
 *   1. Every entry is parsed, its specifiers expanded and its paths validated before anything
 *      is touched, so a bad entry (a relative path, an unknown option) creates nothing.
 *   2. The sources of BindPaths=/BindReadOnlyPaths= are cloned (open_tree(OPEN_TREE_CLONE))
 *      before any policy mount exists: a source names what the view showed when it was built
 *      (the host's tree), even if a later step covers it (HideOtherHomes= over /home, say).
 *   3. Mounts are made in the order of the header: TemporaryFileSystem=, PrivateTmp=,
 *      HideOtherHomes=, the binds (sorted by destination, so a parent is bound before what
 *      goes below it), InaccessiblePaths=. "ro" tmpfs are made read-only last, so mount
 *      points for later entries can still be created inside them. Read-only binds are
 *      read-only from the start: a destination inside one must exist already (-EROFS
 *      otherwise), since creating it would write into the bind's source, a host tree.
 *
 * Destinations are resolved one component at a time from "/" without following any symlink
 * (openat2(RESOLVE_NO_SYMLINKS), or O_NOFOLLOW + fstat where openat2 is filtered): the view's
 * root is the machine's root filesystem and a user can plant symlinks in their home, so
 * following one could create directories anywhere on the host or mount over /etc in the view.
 * A symlink in the way is -ELOOP. Missing directories (or an empty file, for a file source)
 * are created with mkdirat()/openat(O_EXCL) relative to the parent's fd; they appear on the
 * host too (same filesystem), so on failure everything this call created is removed again and
 * its mounts are detached. Sources follow only symlinks owned by root (open_path_safe(), in the
 * spirit of systemd's CHASE_SAFE): a source may come from %h or lie where a user can write, and
 * a bind shows what a parent directory's permissions deny, so a user's link must never steer
 * one (docs/security.md).
 *
 * Propagation: a mount attached under a shared mount appears at all its peers. In a view the
 * SharedSubtrees (/mnt) are peers of the host's, and with ViewPropagation=shared the whole view
 * is. Policy destinations must therefore not lie at or below a SharedSubtrees path; rather than
 * trusting configuration, every attach checks the mount it goes onto and refuses a shared one
 * with -EXDEV, so a policy entry can never mount anything on the host (and with
 * ViewPropagation=shared any [View] mount is refused). Clones of bind sources are made slaves
 * (receive-only), like the BindMount() method's binds.
 *
 * Errors are logged here, once, naming the setting and entry (the caller only knows the
 * stage); the return value is the negative errno. */

/* ---- specifiers ---- */

int view_policy_expand_specifiers(const char *s, const UserRecord *u, char **ret) {
        _cleanup_free_ char *buf = NULL, *group = NULL;
        _cleanup_fclose_ FILE *f = NULL;   /* declared after buf: closed (flushing into buf) first */
        size_t size = 0;
        int r;

        if (!s || !u || !ret)
                return -EINVAL;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;

        for (const char *p = s; *p; p++) {
                if (*p != '%') {
                        fputc(*p, f);
                        continue;
                }
                switch (*++p) {
                case 'u':
                        if (!u->name)
                                return -EINVAL;
                        fputs(u->name, f);
                        break;
                case 'U':
                        fprintf(f, "%" PRIu32, (uint32_t) u->uid);
                        break;
                case 'h':
                        if (!u->home)
                                return -EINVAL;
                        fputs(u->home, f);
                        break;
                case 'g':
                        if (!group) {
                                r = group_name_by_gid(u->gid, &group);
                                if (r < 0)
                                        return r;
                        }
                        fputs(group, f);
                        break;
                case 'G':
                        fprintf(f, "%" PRIu32, (uint32_t) u->gid);
                        break;
                case '%':
                        fputc('%', f);
                        break;
                default:        /* unknown, or a lone '%' at the end */
                        return -EINVAL;
                }
        }

        if (fclose(TAKE_PTR(f)) != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* ---- parsing and validation ---- */

typedef struct BindEntry {
        const char *setting;     /* "BindPaths" or "BindReadOnlyPaths", for messages */
        const char *entry;       /* the raw entry, for messages */
        char *source;
        char *dest;
        bool read_only;
        bool recursive;
        bool ignore_missing;
        size_t index;            /* order of appearance: ties in the sort keep it */
        int tree_fd;             /* the cloned source; -EBADF when missing and ignored */
} BindEntry;

typedef struct TmpfsEntry {
        const char *entry;
        char *path;
        char *options;           /* NULL: defaults only */
} TmpfsEntry;

typedef struct InaccessibleEntry {
        const char *entry;
        char *path;
        bool ignore_missing;
} InaccessibleEntry;

typedef struct PolicyPlan {
        TmpfsEntry *tmpfs;
        size_t n_tmpfs;
        BindEntry *binds;
        size_t n_binds;
        InaccessibleEntry *inaccessible;
        size_t n_inaccessible;
} PolicyPlan;

static void policy_plan_done(PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_tmpfs; i++) {
                free(plan->tmpfs[i].path);
                free(plan->tmpfs[i].options);
        }
        free(plan->tmpfs);
        for (size_t i = 0; i < plan->n_binds; i++) {
                free(plan->binds[i].source);
                free(plan->binds[i].dest);
                safe_close(plan->binds[i].tree_fd);
        }
        free(plan->binds);
        for (size_t i = 0; i < plan->n_inaccessible; i++)
                free(plan->inaccessible[i].path);
        free(plan->inaccessible);
        *plan = (PolicyPlan) {};
}

/* A destination (or tmpfs, or inaccessible path): absolute, normalized, and not "/" — covering
 * the view's root would hide the whole machine. */
static bool valid_target(const char *p) {
        return path_is_absolute_normalized(p) && !streq(p, "/");
}

/* Splits s at ':' into at most 'max' (≤ 3) fields, expanding specifiers in each (after
 * splitting, so an expansion can never add a field). -EINVAL for more fields. Fields not
 * present are NULL. */
static int split_and_expand(const char *s, size_t max, const UserRecord *u, char **ret_fields) {
        char *f[3] = {};
        int r = 0;

        if (max > ELEMENTSOF(f))
                return -EINVAL;
        for (size_t n = 0;; n++) {
                size_t len = strcspn(s, ":");
                _cleanup_free_ char *raw = NULL;

                if (n >= max)
                        r = -EINVAL;
                else if (!(raw = strndup(s, len)))
                        r = -ENOMEM;
                else
                        r = view_policy_expand_specifiers(raw, u, &f[n]);
                if (r < 0) {
                        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                                free(f[i]);
                        return r;
                }
                if (!s[len])
                        break;
                s += len + 1;
        }
        memcpy(ret_fields, f, max * sizeof(char *));
        return 0;
}

static int parse_bind(const char *setting, const char *entry, bool read_only, size_t index, const UserRecord *u, BindEntry *ret) {
        const char *s = entry;
        bool ignore = false;
        char *f[3];
        int r;

        if (*s == '-') {
                ignore = true;
                s++;
        }
        r = split_and_expand(s, 3, u, f);
        if (r < 0)
                return r;

        _cleanup_free_ char *source = f[0], *dest = f[1], *options = f[2];
        if (!dest) {
                dest = strdup(source);
                if (!dest)
                        return -ENOMEM;
        }
        if (!path_is_absolute_normalized(source) || !valid_target(dest))
                return -EINVAL;
        if (options && !STR_IN_SET(options, "rbind", "norbind"))
                return -EINVAL;

        *ret = (BindEntry) {
                .setting = setting,
                .entry = entry,
                .source = TAKE_PTR(source),
                .dest = TAKE_PTR(dest),
                .read_only = read_only,
                .recursive = !options || streq(options, "rbind"),
                .ignore_missing = ignore,
                .index = index,
                .tree_fd = -EBADF,
        };
        return 0;
}

static int parse_tmpfs(const char *entry, const UserRecord *u, TmpfsEntry *ret) {
        char *f[2];
        int r;

        r = split_and_expand(entry, 2, u, f);
        if (r < 0)
                return r;
        if (!valid_target(f[0]) || (f[1] && !*f[1])) {
                free(f[0]);
                free(f[1]);
                return -EINVAL;
        }
        *ret = (TmpfsEntry) { .entry = entry, .path = f[0], .options = f[1] };
        return 0;
}

static int parse_inaccessible(const char *entry, const UserRecord *u, InaccessibleEntry *ret) {
        const char *s = entry;
        bool ignore = false;
        char *path = NULL;
        int r;

        if (*s == '-') {
                ignore = true;
                s++;
        }
        r = view_policy_expand_specifiers(s, u, &path);
        if (r < 0)
                return r;
        if (!valid_target(path)) {
                free(path);
                return -EINVAL;
        }
        *ret = (InaccessibleEntry) { .entry = entry, .path = path, .ignore_missing = ignore };
        return 0;
}

static int bind_entry_compare(const void *a, const void *b) {
        const BindEntry *x = a, *y = b;
        /* strcmp sorts a path before every path below it ("/a" < "/a/b"), which is all the
         * order has to guarantee; equal destinations keep their order (the later on top). */
        int c = strcmp(x->dest, y->dest);
        if (c != 0)
                return c;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* ---- the mount context: what this call created, for undoing it on failure ---- */

typedef struct AttachedMount {
        int fd;                  /* the mount itself (its root), as attached */
        bool read_only_at_end;
} AttachedMount;

typedef struct PolicyContext {
        char *message;           /* why it failed, naming the setting and entry */
        int root_fd;
        int inaccessible_fd;     /* detached tmpfs holding an inaccessible file, made lazily */
        CreatedPaths created;
        AttachedMount *mounts;
        size_t n_mounts;
} PolicyContext;

/* Fails a step: the sentence names the setting and the entry, for the person who asked. No
 * logging here: the daemon logs it once, where the error is handled. */
static _printf_(3, 4) int policy_fail(PolicyContext *c, int r, const char *fmt, ...) {
        va_list ap;

        r = r < 0 ? r : -r;
        if (c->message)
                return r;
        errno = -r;   /* for %m */
        va_start(ap, fmt);
        if (vasprintf(&c->message, fmt, ap) < 0)
                c->message = NULL;
        va_end(ap);
        return r;
}

static int policy_plan_build(PolicyContext *c, const ViewPolicy *p, const UserRecord *u, PolicyPlan *plan) {
        size_t n_binds = strv_length(p->bind_paths) + strv_length(p->bind_read_only_paths);
        int r;

        plan->tmpfs = calloc(strv_length(p->temporary_file_system) + 1, sizeof(TmpfsEntry));
        plan->binds = calloc(n_binds + 1, sizeof(BindEntry));
        plan->inaccessible = calloc(strv_length(p->inaccessible_paths) + 1, sizeof(InaccessibleEntry));
        if (!plan->tmpfs || !plan->binds || !plan->inaccessible)
                return -ENOMEM;

        for (char **e = p->temporary_file_system; e && *e; e++) {
                r = parse_tmpfs(*e, u, &plan->tmpfs[plan->n_tmpfs]);
                if (r < 0)
                        return policy_fail(c, r, "TemporaryFileSystem=%s: invalid entry (PATH[:OPTIONS], an absolute normalized path other than /): %m", *e);
                plan->n_tmpfs++;
        }

        for (int ro = 0; ro <= 1; ro++) {
                const char *setting = ro ? "BindReadOnlyPaths" : "BindPaths";
                for (char **e = ro ? p->bind_read_only_paths : p->bind_paths; e && *e; e++) {
                        r = parse_bind(setting, *e, ro, plan->n_binds, u, &plan->binds[plan->n_binds]);
                        if (r < 0)
                                return policy_fail(c, r, "%s=%s: invalid entry ([-]SOURCE[:DEST[:rbind|norbind]], absolute normalized paths, DEST not /): %m",
                                                       setting, *e);
                        plan->n_binds++;
                }
        }
        qsort(plan->binds, plan->n_binds, sizeof(BindEntry), bind_entry_compare);

        for (char **e = p->inaccessible_paths; e && *e; e++) {
                r = parse_inaccessible(*e, u, &plan->inaccessible[plan->n_inaccessible]);
                if (r < 0)
                        return policy_fail(c, r, "InaccessiblePaths=%s: invalid entry ([-]PATH, an absolute normalized path other than /): %m", *e);
                plan->n_inaccessible++;
        }

        if (p->hide_other_homes) {
                const char *slash = u->home ? strrchr(u->home, '/') : NULL;
                /* The homes directory is the parent of the home: it must exist and not be "/". */
                if (!u->home || !valid_target(u->home) || slash == u->home)
                        return policy_fail(c, -EINVAL, "HideOtherHomes=yes: the home directory '%s' of '%s' has no parent other than /: %m",
                                               u->home ?: "", u->name);
        }
        return 0;
}

static void policy_context_done(PolicyContext *c) {
        free(c->message);
        created_paths_done(&c->created);
        for (size_t i = 0; i < c->n_mounts; i++)
                safe_close(c->mounts[i].fd);
        free(c->mounts);
        safe_close(c->root_fd);
        safe_close(c->inaccessible_fd);
        *c = (PolicyContext) { .root_fd = -EBADF, .inaccessible_fd = -EBADF };
}

static void policy_context_undo(PolicyContext *c) {
        /* Mounts first (a mount point cannot be removed while mounted on), newest first. */
        for (size_t i = c->n_mounts; i > 0; i--)
                /* Failing: already gone, or busy; the namespace is dropped anyway. */
                (void) umount2_fd(c->mounts[i - 1].fd);
        /* Then what we created, newest (deepest) first. */
        created_paths_undo(&c->created);
}

/* ---- attaching ---- */

/* -EXDEV if a mount attached on dest_fd would propagate: the mount dest_fd is on is shared. */
static int check_attach_point(int dest_fd) {
        MountInfo mi;
        int r = mount_info_get(dest_fd, "", &mi, NULL);
        if (r < 0)
                return r;
        return mi.peer_group != 0 ? -EXDEV : 0;
}

/* Remembers an attached mount (for "ro" at the end, undo, and the record of the policy's mounts). */
static int keep_mount(PolicyContext *c, int *fd, bool read_only_at_end) {
        AttachedMount *n = realloc(c->mounts, (c->n_mounts + 1) * sizeof(AttachedMount));
        if (!n)
                return -ENOMEM;
        c->mounts = n;
        n[c->n_mounts++] = (AttachedMount) { .fd = TAKE_FD(*fd), .read_only_at_end = read_only_at_end };
        return 0;
}

/* Attaches the detached tree *tree_fd on dest_fd and keeps it. */
static int attach(PolicyContext *c, int *tree_fd, int dest_fd, bool read_only_at_end) {
        int r;

        r = check_attach_point(dest_fd);
        if (r < 0)
                return r;
        if (move_mount(*tree_fd, "", dest_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                return -errno;
        r = keep_mount(c, tree_fd, read_only_at_end);
        if (r < 0)
                /* Attached but not kept: take it off again rather than leave what undo cannot find. */
                (void) umount2_fd(*tree_fd);
        return r;
}

/* ---- tmpfs ---- */

typedef struct TmpfsOptions {
        unsigned attr;           /* MOUNT_ATTR_* for fsmount() */
        bool read_only;
} TmpfsOptions;

static int tmpfs_set_option(int fs_fd, const char *opt, TmpfsOptions *o) {
        static const struct {
                const char *name;
                unsigned set, clear;
        } flags[] = {
                { "nosuid", MOUNT_ATTR_NOSUID, 0 },
                { "suid", 0, MOUNT_ATTR_NOSUID },
                { "nodev", MOUNT_ATTR_NODEV, 0 },
                { "dev", 0, MOUNT_ATTR_NODEV },
                { "noexec", MOUNT_ATTR_NOEXEC, 0 },
                { "exec", 0, MOUNT_ATTR_NOEXEC },
                { "nodiratime", MOUNT_ATTR_NODIRATIME, 0 },
                { "diratime", 0, MOUNT_ATTR_NODIRATIME },
                { "relatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME },
                { "noatime", MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME },
                { "strictatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME },
        };
        const char *eq;

        if (!*opt)
                return -EINVAL;
        if (streq(opt, "ro") || streq(opt, "rw")) {
                o->read_only = streq(opt, "ro");
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(flags); i++)
                if (streq(opt, flags[i].name)) {
                        o->attr = (o->attr & ~flags[i].clear) | flags[i].set;
                        return 0;
                }

        /* Everything else is the filesystem's: mode=, size=, nr_inodes=, uid=, gid=, … */
        eq = strchr(opt, '=');
        if (eq) {
                _cleanup_free_ char *key = strndup(opt, eq - opt);
                if (!key)
                        return -ENOMEM;
                if (!*key || streq(key, "source"))
                        return -EINVAL;
                if (fsconfig(fs_fd, FSCONFIG_SET_STRING, key, eq + 1, 0) < 0)
                        return -errno;
        } else if (fsconfig(fs_fd, FSCONFIG_SET_FLAG, opt, NULL, 0) < 0)
                return -errno;
        return 0;
}

/* A new, detached tmpfs. 'defaults' and then 'options' are comma-separated mount options. */
static int tmpfs_new(const char *defaults, const char *options, TmpfsOptions *ret_options, int *ret_fd) {
        _cleanup_close_ int fs_fd = -EBADF;
        TmpfsOptions o = { .attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
        int mnt_fd, r;

        fs_fd = fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fs_fd < 0)
                return -errno;
        if (fsconfig(fs_fd, FSCONFIG_SET_STRING, "source", "tmpfs", 0) < 0)
                return -errno;

        for (const char *list[] = { defaults, options }, **l = list; l < list + ELEMENTSOF(list); l++) {
                _cleanup_free_ char *copy = NULL;

                if (!*l)
                        continue;
                copy = strdup(*l);
                if (!copy)
                        return -ENOMEM;
                /* strtok_r would skip empty options: ",," is refused instead. */
                for (char *opt = copy;; ) {
                        char *comma = strchr(opt, ',');
                        if (comma)
                                *comma = '\0';
                        r = tmpfs_set_option(fs_fd, opt, &o);
                        if (r < 0)
                                return r;
                        if (!comma)
                                break;
                        opt = comma + 1;
                }
        }

        if (fsconfig(fs_fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return -errno;
        mnt_fd = fsmount(fs_fd, FSMOUNT_CLOEXEC, o.attr);
        if (mnt_fd < 0)
                return -errno;
        if (ret_options)
                *ret_options = o;
        *ret_fd = mnt_fd;
        return 0;
}

/* Only this mount: mounts below it keep their own flags. */
static int set_read_only(int mnt_fd) {
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };
        if (mount_setattr(mnt_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                return -errno;
        return 0;
}

/* Mounts a new tmpfs on path (created as a directory if missing). */
static int mount_tmpfs_at(PolicyContext *c, const char *path, const char *defaults, const char *options) {
        _cleanup_close_ int dest_fd = -EBADF, mnt_fd = -EBADF;
        TmpfsOptions o;
        int r;

        /* The tmpfs first: a bad option then fails before any directory is created. */
        r = tmpfs_new(defaults, options, &o, &mnt_fd);
        if (r < 0)
                return r;
        r = open_path_creating(c->root_fd, path, PATH_DIRECTORY, &c->created, &dest_fd);
        if (r < 0)
                return r;
        return attach(c, &mnt_fd, dest_fd, o.read_only);
}

/* ---- the steps ---- */

static int apply_temporary_file_systems(PolicyContext *c, const PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_tmpfs; i++) {
                const TmpfsEntry *t = &plan->tmpfs[i];
                int r = mount_tmpfs_at(c, t->path, "mode=0755", t->options);
                if (r < 0)
                        return policy_fail(c, r, "TemporaryFileSystem=%s: failed to mount a tmpfs on '%s': %m", t->entry, t->path);
        }
        return 0;
}

static int apply_private_tmp(PolicyContext *c, const ViewPolicy *p) {
        _cleanup_free_ char *options = NULL;

        if (!p->private_tmp)
                return 0;
        if (p->tmp_size > 0 && asprintf(&options, "size=%" PRIu64, p->tmp_size) < 0)
                return policy_fail(c, -ENOMEM, "Out of memory.");
        /* One fresh tmpfs each, like two private directories: nothing of the host's shows. */
        for (const char *const *d = (const char *const[]) { "/tmp", "/var/tmp", NULL }; *d; d++) {
                int r = mount_tmpfs_at(c, *d, "mode=1777", options);
                if (r < 0)
                        return policy_fail(c, r, "PrivateTmp=yes: failed to mount a tmpfs on '%s': %m", *d);
        }
        return 0;
}

static int apply_hide_other_homes(PolicyContext *c, const ViewPolicy *p, const UserRecord *u) {
        _cleanup_close_ int home_fd = -EBADF, home_tree_fd = -EBADF, homes_fd = -EBADF, tmpfs_fd = -EBADF;
        _cleanup_free_ char *homes = NULL;
        const char *name;
        int r;

        if (!p->hide_other_homes)
                return 0;

        name = strrchr(u->home, '/') + 1;    /* validated in policy_plan_build() */
        homes = strndup(u->home, name - 1 - u->home);
        if (!homes)
                return policy_fail(c, -ENOMEM, "Out of memory.");

        /* The user's own home, cloned while it is still reachable (it may be a mount itself:
         * recursively, and receive-only like the rest of the view). No home: nothing to show. */
        r = open_path_creating(c->root_fd, u->home, PATH_EXISTING, NULL, &home_fd);
        if (r >= 0) {
                struct mount_attr attr = { .propagation = MS_SLAVE };

                home_tree_fd = open_tree(home_fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
                if (home_tree_fd < 0)
                        return policy_fail(c, errno, "HideOtherHomes=yes: failed to clone '%s': %m", u->home);
                if (mount_setattr(home_tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return policy_fail(c, errno, "HideOtherHomes=yes: failed to make the clone of '%s' a slave: %m", u->home);
        } else if (r != -ENOENT)
                return policy_fail(c, r, "HideOtherHomes=yes: failed to open '%s': %m", u->home);

        r = open_path_creating(c->root_fd, homes, PATH_EXISTING, NULL, &homes_fd);
        if (r < 0)
                return policy_fail(c, r, "HideOtherHomes=yes: failed to open the homes directory '%s': %m", homes);

        /* A read-only tmpfs prepared while detached: the mount point for the home is made in
         * it before it is made read-only, and nothing is visible until it is complete. */
        r = tmpfs_new("mode=0755", NULL, NULL, &tmpfs_fd);
        if (r < 0)
                return policy_fail(c, r, "HideOtherHomes=yes: failed to create a tmpfs: %m");
        if (mkdirat(tmpfs_fd, name, 0755) < 0)
                return policy_fail(c, errno, "HideOtherHomes=yes: failed to create '%s' in the tmpfs: %m", name);
        r = set_read_only(tmpfs_fd);
        if (r < 0)
                return policy_fail(c, r, "HideOtherHomes=yes: failed to make the tmpfs read-only: %m");
        if (home_tree_fd >= 0 &&
            move_mount(home_tree_fd, "", tmpfs_fd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return policy_fail(c, errno, "HideOtherHomes=yes: failed to bind '%s' back into the tmpfs: %m", u->home);

        r = attach(c, &tmpfs_fd, homes_fd, false);
        if (r < 0)
                return policy_fail(c, r, "HideOtherHomes=yes: failed to mount the tmpfs on '%s'%s: %m", homes,
                                       r == -EXDEV ? " (it is a shared mount: the tmpfs would reach the host)" : "");
        /* The home bound back in is the policy's too. */
        if (home_tree_fd >= 0) {
                r = keep_mount(c, &home_tree_fd, false);
                if (r < 0)
                        return policy_fail(c, r, "Out of memory.");
        }
        return 0;
}

/* Clones every bind source now, before the policy covers any of them. */
static int clone_bind_sources(PolicyContext *c, PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_binds; i++) {
                BindEntry *b = &plan->binds[i];
                struct mount_attr attr = {
                        .propagation = MS_SLAVE,
                        .attr_set = b->read_only ? MOUNT_ATTR_RDONLY : 0,
                };
                _cleanup_close_ int src_fd = -EBADF;
                int r;

                /* Only root's symlinks in root's directories are followed: the source may come
                 * from %h or lie in a directory a user can write, and a user's link must never
                 * steer a bind (to a file in another's 0700 home, say: a bind shows what a
                 * parent's permissions deny). */
                r = open_path_safe(c->root_fd, b->source, &src_fd);
                if (r == -ENOENT && b->ignore_missing)
                        continue;
                if (r == -EPERM)
                        return policy_fail(c, r, "%s=%s: source '%s' goes through a symbolic link that is not owned by root, "
                                           "or lies in a directory that is not; such links are not followed", b->setting,
                                           b->entry, b->source);
                if (r < 0)
                        return policy_fail(c, r, "%s=%s: failed to open source '%s': %m", b->setting, b->entry, b->source);

                b->tree_fd = open_tree(src_fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (b->recursive ? AT_RECURSIVE : 0));
                if (b->tree_fd < 0)
                        return policy_fail(c, errno, "%s=%s: failed to clone '%s'%s: %m", b->setting, b->entry, b->source,
                                               errno == EINVAL ? " (an unbindable mount?)" : "");
                if (mount_setattr(b->tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return policy_fail(c, errno, "%s=%s: failed to set up the clone of '%s': %m", b->setting, b->entry, b->source);
        }
        return 0;
}

static int apply_binds(PolicyContext *c, PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_binds; i++) {
                BindEntry *b = &plan->binds[i];
                _cleanup_close_ int dest_fd = -EBADF;
                struct stat st;
                int r;

                if (b->tree_fd < 0)
                        continue;       /* missing, '-' */
                if (fstat(b->tree_fd, &st) < 0)
                        return policy_fail(c, errno, "%s=%s: failed to stat the clone of '%s': %m", b->setting, b->entry, b->source);
                r = open_path_creating(c->root_fd, b->dest, S_ISDIR(st.st_mode) ? PATH_DIRECTORY : PATH_FILE, &c->created, &dest_fd);
                if (r < 0)
                        return policy_fail(c, r, "%s=%s: failed to open or create the destination '%s'%s: %m", b->setting, b->entry, b->dest,
                                               r == -ELOOP ? " (a symlink on the way; symlinks are not followed)" : "");
                r = attach(c, &b->tree_fd, dest_fd, false);
                if (r < 0)
                        return policy_fail(c, r, "%s=%s: failed to bind '%s' on '%s'%s: %m", b->setting, b->entry, b->source, b->dest,
                                               r == -EXDEV ? " (a shared mount: it would reach the host)" : "");
        }
        return 0;
}

/* The source of inaccessible files: a detached, read-only tmpfs with a mode 0000 file in it. */
static int inaccessible_file(PolicyContext *c, int *ret_tree_fd) {
        int fd;

        if (c->inaccessible_fd < 0) {
                _cleanup_close_ int mnt_fd = -EBADF, f = -EBADF;
                int r;

                r = tmpfs_new("mode=0000", "noexec", NULL, &mnt_fd);
                if (r < 0)
                        return r;
                f = openat(mnt_fd, "inaccessible", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0000);
                if (f < 0)
                        return -errno;
                f = safe_close(f);      /* a file open for writing keeps a mount from turning read-only (EBUSY) */
                r = set_read_only(mnt_fd);
                if (r < 0)
                        return r;
                c->inaccessible_fd = TAKE_FD(mnt_fd);
        }
        fd = open_tree(c->inaccessible_fd, "inaccessible", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_tree_fd = fd;
        return 0;
}

static int apply_inaccessible(PolicyContext *c, const PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_inaccessible; i++) {
                const InaccessibleEntry *e = &plan->inaccessible[i];
                _cleanup_close_ int dest_fd = -EBADF, tree_fd = -EBADF;
                struct stat st;
                int r;

                r = open_path_creating(c->root_fd, e->path, PATH_EXISTING, NULL, &dest_fd);
                if (r == -ENOENT && e->ignore_missing) {
                        log_debug("InaccessiblePaths=%s: '%s' does not exist, ignoring.", e->entry, e->path);
                        continue;
                }
                if (r < 0)
                        return policy_fail(c, r, "InaccessiblePaths=%s: failed to open '%s'%s: %m", e->entry, e->path,
                                               r == -ELOOP ? " (a symlink on the way; symlinks are not followed)" : "");
                if (fstat(dest_fd, &st) < 0)
                        return policy_fail(c, errno, "InaccessiblePaths=%s: failed to stat '%s': %m", e->entry, e->path);

                /* A directory gets an empty, read-only tmpfs of mode 0000; anything else a bind
                 * of an empty mode 0000 file. */
                if (S_ISDIR(st.st_mode)) {
                        r = tmpfs_new("mode=0000", "noexec", NULL, &tree_fd);
                        if (r >= 0)
                                r = set_read_only(tree_fd);
                } else
                        r = inaccessible_file(c, &tree_fd);
                if (r < 0)
                        return policy_fail(c, r, "InaccessiblePaths=%s: failed to prepare the cover for '%s': %m", e->entry, e->path);

                r = attach(c, &tree_fd, dest_fd, false);
                if (r < 0)
                        return policy_fail(c, r, "InaccessiblePaths=%s: failed to cover '%s'%s: %m", e->entry, e->path,
                                               r == -EXDEV ? " (a shared mount: it would reach the host)" : "");
        }
        return 0;
}

static int apply_read_only_tmpfs(PolicyContext *c) {
        for (size_t i = 0; i < c->n_mounts; i++) {
                int r;
                if (!c->mounts[i].read_only_at_end)
                        continue;
                r = set_read_only(c->mounts[i].fd);
                if (r < 0)
                        return policy_fail(c, r, "TemporaryFileSystem=: failed to make a tmpfs read-only: %m");
        }
        return 0;
}

/* The ids of what the policy mounted: the mounts the user may not unmount nor repropagate. */
static int collect_mount_ids(PolicyContext *c, MountId *ids, size_t max, size_t *ret_n) {
        size_t n = 0;

        for (size_t i = 0; i < c->n_mounts; i++) {
                if (n >= max)
                        return policy_fail(c, -E2BIG, "The [View] policy makes more than %zu mounts.", max);
                int r = fd_get_mount_ids(c->mounts[i].fd, "", &ids[n]);
                if (r < 0)
                        return policy_fail(c, r, "Failed to identify a mount of the [View] policy: %m");
                n++;
        }
        *ret_n = n;
        return 0;
}

/* view_policy_apply(), or with mount=false only its first step: view_policy_check() gives the
 * same answer for a malformed entry because it is the same code. */
static int policy_run(const ViewPolicy *p, const UserRecord *u, bool mount, MountId *ret_ids, size_t max_ids,
                      size_t *ret_n_ids, char **ret_message) {
        _cleanup_(policy_plan_done) PolicyPlan plan = {};
        _cleanup_(policy_context_done) PolicyContext c = { .root_fd = -EBADF, .inaccessible_fd = -EBADF };
        int r;

        *ret_n_ids = 0;
        if (!p || !u || !u->name)
                return -EINVAL;

        r = policy_plan_build(&c, p, u, &plan);
        if (r >= 0 && mount &&
            (plan.n_tmpfs > 0 || plan.n_binds > 0 || plan.n_inaccessible > 0 || p->private_tmp || p->hide_other_homes)) {
                c.root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (c.root_fd < 0)
                        r = policy_fail(&c, errno, "Failed to open the view's root: %m");
                if (r >= 0)
                        r = clone_bind_sources(&c, &plan);
                if (r >= 0)
                        r = apply_temporary_file_systems(&c, &plan);
                if (r >= 0)
                        r = apply_private_tmp(&c, p);
                if (r >= 0)
                        r = apply_hide_other_homes(&c, p, u);
                if (r >= 0)
                        r = apply_binds(&c, &plan);
                if (r >= 0)
                        r = apply_inaccessible(&c, &plan);
                if (r >= 0)
                        r = apply_read_only_tmpfs(&c);
                if (r >= 0)
                        r = collect_mount_ids(&c, ret_ids, max_ids, ret_n_ids);
                if (r < 0)
                        policy_context_undo(&c);
        }
        if (r < 0 && ret_message)
                *ret_message = TAKE_PTR(c.message);
        return r;
}

int view_policy_apply(const ViewPolicy *p, const UserRecord *u, MountId *ret_ids, size_t max_ids, size_t *ret_n_ids,
                      char **ret_message) {
        return policy_run(p, u, true, ret_ids, max_ids, ret_n_ids, ret_message);
}

int view_policy_check(const ViewPolicy *p, const UserRecord *u, char **ret_message) {
        size_t n;
        return policy_run(p, u, false, NULL, 0, &n, ret_message);
}
