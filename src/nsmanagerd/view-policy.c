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
        bool user_specific;      /* SOURCE names the user (%u, %U, %h): it must be root's or theirs */
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

/* Whether the first 'len' bytes of an unexpanded field name the user: %u, %U or %h (not %%u). */
static bool uses_user_specifier(const char *s, size_t len) {
        for (size_t i = 0; i + 1 < len; i++)
                if (s[i] == '%') {
                        if (strchr("uUh", s[i + 1]))
                                return true;
                        i++;    /* %% and the others */
                }
        return false;
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
                .user_specific = uses_user_specifier(s, strcspn(s, ":")),
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

/* ---- who decides what a path names ---- */

#define POLICY_SYMLINKS_MAX 32

/* A walk of a policy path, and whose changes it accepts besides root's. */
typedef struct PathWalk {
        int root_fd;
        uid_t uid;               /* whose directories and links are safe too; (uid_t) -1: nobody's */
        gid_t gid;               /* which group (not root's) may write a directory; (gid_t) -1: none */
        const UserRecord *user;  /* whose view: named in messages */
        bool follow_root_links;  /* as open_path_safe() (bind sources); else none (destinations) */
        const MountEntry *table; /* the mounts, for telling FUSE ones */
        size_t n_table;
} PathWalk;

/* "alice (uid 2001)" for the user whose view it is, "uid 2002" for others: no NSS lookup here,
 * which could wait on a remote user database. */
static const char *format_who(const PathWalk *w, uid_t uid, char buf[static 64]) {
        if (w->user && w->user->name && uid == w->user->uid)
                snprintf(buf, 64, "%.32s (uid %u)", w->user->name, (unsigned) uid);
        else
                snprintf(buf, 64, "uid %u", (unsigned) uid);
        return buf;
}

/* Type, mode and owners as the inode has them now, without asking its file system (a FUSE
 * server, a dead NFS server) for news; the type is always known. */
static int stat_cached(int fd, struct statx *ret) {
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
                  STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID, ret) < 0)
                return -errno;
        return 0;
}

static _printf_(2, 3) int walk_found(char **ret_why, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(ret_why, fmt, ap);
        va_end(ap);
        return k < 0 ? -ENOMEM : 1;
}

/* Walks 'path' from w->root_fd as the policy's own lookups go, and stops at the first place
 * where someone other than root (and w->uid, w->gid) decides what the path names:
 *   - a directory they own: they may rename, remove and replace anything in it;
 *   - a directory a group other than root's, or everybody, may write; where it is sticky
 *     (/tmp), unless the next name is there and root's: a free name is whoever's creates it
 *     first, after every reboot too, and a name of a user's is theirs to replace;
 *   - a symbolic link they own;
 *   - a FUSE file system, whose server says what it likes about owners.
 * 1 and a sentence saying where and who; 0 if the walk ends before any (at the path's end, a
 * name missing from root's directory, root's link where none is followed, a non-directory on
 * the way): what goes wrong there is root's doing. Negative errno if the walk fails. Changes
 * nothing, logs nothing. */
static int path_find_other_writer(const PathWalk *w, const char *path, char **ret_why) {
        _cleanup_free_ char *todo = strdup(path_skip_root(path)), *shown = strdup("");
        _cleanup_close_ int dir = fcntl(w->root_fd, F_DUPFD_CLOEXEC, 3);
        unsigned links = 0;
        char who[64], writers[80];
        int r;

        if (!todo || !shown)
                return -ENOMEM;
        if (dir < 0)
                return -errno;
        for (char *p = todo;;) {
                _cleanup_close_ int fd = -EBADF;
                char name[NAME_MAX + 1];
                struct statx d, st = {};
                const char *here;
                bool open_to_others = false;

                r = path_next_name((const char **) &p, name);
                if (r <= 0)
                        return r;
                here = *shown ? shown : "/";
                r = stat_cached(dir, &d);
                if (r < 0)
                        return r;
                if (w->table && mount_fd_outside_fuse(dir, w->table, w->n_table, /* by_id= */ false) == -EREMOTE)
                        return walk_found(ret_why, "'%s' is on a FUSE file system, whose server says who owns what", here);
                if (d.stx_uid != 0 && d.stx_uid != w->uid)
                        return walk_found(ret_why, "'%s' belongs to %s", here, format_who(w, d.stx_uid, who));
                if (d.stx_mode & S_IWOTH) {
                        open_to_others = true;
                        snprintf(writers, sizeof writers, "anybody");
                } else if ((d.stx_mode & S_IWGRP) && d.stx_gid != 0 && d.stx_gid != w->gid) {
                        open_to_others = true;
                        snprintf(writers, sizeof writers, "the members of group %u", (unsigned) d.stx_gid);
                }

                fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno != ENOENT)
                        return -errno;
                if (fd >= 0) {
                        r = stat_cached(fd, &st);
                        if (r < 0)
                                return r;
                }
                if (open_to_others) {
                        if (!(d.stx_mode & S_ISVTX))
                                return walk_found(ret_why, "'%s' can be written by %s", here, writers);
                        if (fd < 0)
                                return walk_found(ret_why, "'%s' can be written by %s and has no '%s' yet (whoever creates it "
                                                  "first decides what it is)", here, writers, name);
                        if (st.stx_uid != 0)
                                return walk_found(ret_why, "'%s' can be written by %s, and '%s' in it belongs to %s, not "
                                                  "root (whoever creates it first decides what it is)", here, writers,
                                                  name, format_who(w, st.stx_uid, who));
                }
                if (fd < 0)
                        return 0;

                if (S_ISLNK(st.stx_mode)) {
                        char target[PATH_MAX];
                        ssize_t k;

                        if (st.stx_uid != 0 && st.stx_uid != w->uid)
                                return walk_found(ret_why, "'%s/%s' is a symbolic link of %s", *shown ? shown : "", name,
                                                  format_who(w, st.stx_uid, who));
                        if (!w->follow_root_links)
                                return 0;
                        if (++links > POLICY_SYMLINKS_MAX)
                                return -ELOOP;
                        k = readlinkat(fd, "", target, sizeof target - 1);
                        if (k < 0)
                                return -errno;
                        target[k] = 0;
                        char *rest = NULL;
                        if (asprintf(&rest, "%s%s%s", target, *p ? "/" : "", p) < 0)
                                return -ENOMEM;
                        free(todo);
                        todo = p = rest;
                        if (target[0] == '/') {
                                safe_close(dir);
                                dir = fcntl(w->root_fd, F_DUPFD_CLOEXEC, 3);
                                if (dir < 0)
                                        return -errno;
                                free(shown);
                                shown = strdup("");
                                if (!shown)
                                        return -ENOMEM;
                        }
                        continue;
                }
                if (p[strspn(p, "/")] && !S_ISDIR(st.stx_mode))
                        return 0;
                char *longer = NULL;
                if (asprintf(&longer, "%s/%s", shown, name) < 0)
                        return -ENOMEM;
                free(shown);
                shown = longer;
                safe_close(dir);
                dir = TAKE_FD(fd);
        }
}

/* ---- the mount context: what this call created, for undoing it on failure ---- */

typedef struct AttachedMount {
        int fd;                  /* the mount itself (its root), as attached */
        bool read_only_at_end;
} AttachedMount;

typedef struct PolicyContext {
        NsmError error;          /* why it failed, naming the setting and entry (the first failure: a
                                  * step fails with its errno, which says what was wrong with the path
                                  * it worked on). No logging here: the daemon logs it once, where
                                  * the error is handled. */
        char **notes;            /* the entries a user spoiled, and what was done instead: for the log */
        const UserRecord *user;
        MountEntry *table;       /* the view's mounts, read at the first failure: which are FUSE */
        size_t n_table;
        bool table_read;
        int root_fd;
        int inaccessible_fd;     /* detached tmpfs holding an inaccessible file, made lazily */
        CreatedPaths created;
        AttachedMount *mounts;
        size_t n_mounts;
} PolicyContext;

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
                        return nsm_error_set_path_errnof(&c->error, r, "TemporaryFileSystem=%s: invalid entry "
                                                         "(PATH[:OPTIONS], an absolute normalized path other than /): "
                                                         "%m", *e);
                plan->n_tmpfs++;
        }

        for (int ro = 0; ro <= 1; ro++) {
                const char *setting = ro ? "BindReadOnlyPaths" : "BindPaths";
                for (char **e = ro ? p->bind_read_only_paths : p->bind_paths; e && *e; e++) {
                        r = parse_bind(setting, *e, ro, plan->n_binds, u, &plan->binds[plan->n_binds]);
                        if (r < 0)
                                return nsm_error_set_path_errnof(&c->error, r, "%s=%s: invalid entry "
                                                                 "([-]SOURCE[:DEST[:rbind|norbind]], absolute "
                                                                 "normalized paths, DEST not /): %m", setting, *e);
                        plan->n_binds++;
                }
        }
        qsort(plan->binds, plan->n_binds, sizeof(BindEntry), bind_entry_compare);

        for (char **e = p->inaccessible_paths; e && *e; e++) {
                r = parse_inaccessible(*e, u, &plan->inaccessible[plan->n_inaccessible]);
                if (r < 0)
                        return nsm_error_set_path_errnof(&c->error, r, "InaccessiblePaths=%s: invalid entry ([-]PATH, "
                                                         "an absolute normalized path other than /): %m", *e);
                plan->n_inaccessible++;
        }

        if (p->hide_other_homes) {
                const char *slash = u->home ? strrchr(u->home, '/') : NULL;
                /* The homes directory is the parent of the home: it must exist and not be "/". */
                if (!u->home || !valid_target(u->home) || slash == u->home)
                        return nsm_error_set_path_errnof(&c->error, -EINVAL, "HideOtherHomes=yes: the home directory "
                                                         "'%s' of '%s' has no parent other than /: %m", u->home ?: "",
                                                         u->name);
        }
        return 0;
}

static void policy_context_done(PolicyContext *c) {
        nsm_error_done(&c->error);
        strv_free(c->notes);
        mount_entries_free(c->table, c->n_table);
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

/* A mount must be a directory exactly where what it covers is one: -ENOTDIR, -EISDIR (the
 * kernel's own answer would be a plain -EINVAL). */
static int check_same_type(int dest_fd, bool dir) {
        struct statx st;
        int r = stat_cached(dest_fd, &st);
        if (r < 0)
                return r;
        if (S_ISDIR(st.stx_mode) != dir)
                return dir ? -ENOTDIR : -EISDIR;
        return 0;
}

/* Mounts a new tmpfs on path (created as a directory if missing). On failure, *ret_at_path
 * says whether it failed at the path (what was created for it is removed again) or before,
 * making the tmpfs (a bad option). */
static int mount_tmpfs_at(PolicyContext *c, const char *path, const char *defaults, const char *options, bool *ret_at_path) {
        _cleanup_close_ int dest_fd = -EBADF, mnt_fd = -EBADF;
        size_t mark = c->created.n;
        TmpfsOptions o;
        int r;

        *ret_at_path = false;
        /* The tmpfs first: a bad option then fails before any directory is created. */
        r = tmpfs_new(defaults, options, &o, &mnt_fd);
        if (r < 0)
                return r;
        *ret_at_path = true;
        r = open_path_creating(c->root_fd, path, PATH_DIRECTORY, &c->created, &dest_fd);
        if (r >= 0)
                r = check_same_type(dest_fd, true);
        if (r >= 0)
                r = attach(c, &mnt_fd, dest_fd, o.read_only);
        if (r < 0) {
                dest_fd = safe_close(dest_fd);
                created_paths_rollback(&c->created, mark);
        }
        return r;
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

/* ---- entries a user spoiled ----
 *
 * Policy paths may lie where a user decides what they name: in their home (%h), or in a
 * directory anybody may write (/tmp/scratch-%u). There a failure is the user's doing, often
 * on purpose (a symlink where a bind goes, a file where a directory is expected), and failing
 * the whole view for it would let the user switch the policy off (where logins may go on
 * without a view) or lock another user out (a symlink of alice's at bob's /tmp/scratch-bob).
 * Such an entry is therefore skipped, and noted for the log; the rest of the policy holds.
 * Entries that hide something fail closed instead: TemporaryFileSystem= and
 * InaccessiblePaths= cover what they still can (cover_spoiled()). What nobody but root
 * controls (a source missing from root's directory, root's symlink where none is followed, a
 * bad option, a shared mount) still fails the view: that is the administrator's to fix. */

static _printf_(2, 3) int policy_note(PolicyContext *c, const char *fmt, ...) {
        _cleanup_free_ char *note = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&note, fmt, ap);
        va_end(ap);
        if (k < 0 || strv_extend(&c->notes, note) < 0)
                return -ENOMEM;
        return 1;
}

/* What went wrong at a path, for a note ("… '/home/alice/x' %s"). */
static const char *spoiled_reason(int r, char buf[static 128]) {
        switch (r) {
        case -ELOOP:
                return "has a symbolic link on the way (not followed)";
        case -EPERM:
                return "goes through a symbolic link that is not root's, or one in a directory that is not root's (not followed)";
        case -ENOTDIR:
                return "has something other than a directory where a directory is expected";
        case -EISDIR:
                return "is a directory where a file is expected";
        case -ENOENT:
                return "does not exist";
        default:
                snprintf(buf, 128, "cannot be used (%s)", strerror(-r));
                return buf;
        }
}

/* 1 and a sentence saying who, if the failure 'r' at 'path' is a user's doing: someone other
 * than root decides what the path names (path_find_other_writer()). 0 if it is not, and for
 * failures no user causes there: out of memory, a shared mount (-EXDEV: SharedSubtrees= is
 * the administrator's). A walk that fails counts as root's: the view then fails, closed. */
static int policy_spoiled(PolicyContext *c, const char *path, bool follow_root_links, int r, char **ret_why) {
        if (r == -ENOMEM || r == -EXDEV)
                return 0;
        if (!c->table_read) {
                /* Without it, no FUSE mount is known as one: its owners are taken at their word. */
                (void) mount_table_read_self(&c->table, &c->n_table);
                c->table_read = true;
        }
        PathWalk w = {
                .root_fd = c->root_fd,
                .uid = (uid_t) -1,
                .gid = (gid_t) -1,
                .user = c->user,
                .follow_root_links = follow_root_links,
                .table = c->table,
                .n_table = c->n_table,
        };
        return path_find_other_writer(&w, path, ret_why) > 0;
}

/* A bind entry that failed with 'r' at 'path' (its source or destination, 'what'): skipped and
 * noted where a user spoiled it (1), else 0 and the caller fails. */
static int bind_skip_if_spoiled(PolicyContext *c, const BindEntry *b, const char *what, const char *path,
                                bool follow_root_links, int r) {
        _cleanup_free_ char *why = NULL;
        char buf[128];

        if (!policy_spoiled(c, path, follow_root_links, r, &why))
                return 0;
        return policy_note(c, "%s=%s: %s '%s' %s, and %s: the entry is skipped.", b->setting, b->entry, what, path,
                           spoiled_reason(r, buf), why);
}

/* Hides what can still be hidden at a path a user spoiled: the walk that follows no symlink
 * goes as far as it can, and covers the first symlink on the way, or what is at the end,
 * with the inaccessible file (a directory at the end: an empty mode 0000 tmpfs). The kernel
 * mounts on a symlink itself, given an O_PATH fd of it (docs/kernel.md); a mount must be a
 * directory exactly where what it covers is one, and a symlink is none. A walk that ends at a
 * missing name or at a non-directory on the way leaves nothing to cover: the path names
 * nothing. 1 and what was covered, 0 if nothing was, negative errno if covering failed. */
static int cover_spoiled(PolicyContext *c, const char *path, char **ret_covered) {
        _cleanup_close_ int dir = fcntl(c->root_fd, F_DUPFD_CLOEXEC, 3);
        _cleanup_free_ char *shown = strdup("");
        const char *p = path;
        int r;

        if (!shown)
                return -ENOMEM;
        if (dir < 0)
                return -errno;
        for (;;) {
                _cleanup_close_ int fd = -EBADF, cover = -EBADF;
                char name[NAME_MAX + 1], *longer = NULL;
                struct statx st;
                bool last;

                r = path_next_name(&p, name);
                if (r <= 0)
                        return r;
                last = !p[strspn(p, "/")];
                fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return errno == ENOENT ? 0 : -errno;
                if (asprintf(&longer, "%s/%s", shown, name) < 0)
                        return -ENOMEM;
                free(shown);
                shown = longer;
                r = stat_cached(fd, &st);
                if (r < 0)
                        return r;
                if (S_ISLNK(st.stx_mode) || last) {
                        if (S_ISDIR(st.stx_mode)) {
                                r = tmpfs_new("mode=0000", "noexec", NULL, &cover);
                                if (r >= 0)
                                        r = set_read_only(cover);
                        } else
                                r = inaccessible_file(c, &cover);
                        if (r >= 0)
                                r = attach(c, &cover, fd, false);
                        if (r < 0)
                                return r;
                        *ret_covered = TAKE_PTR(shown);
                        return 1;
                }
                if (!S_ISDIR(st.stx_mode))
                        return 0;
                safe_close(dir);
                dir = TAKE_FD(fd);
        }
}

/* An entry of TemporaryFileSystem= or InaccessiblePaths= that failed with 'r' at 'path': where
 * a user spoiled it, what can be is covered instead (cover_spoiled()) and noted (1); else 0
 * and the caller fails. Where even the cover fails, the view fails (closed): negative errno. */
static int hide_if_spoiled(PolicyContext *c, const char *setting, const char *entry, const char *path, int r) {
        _cleanup_free_ char *why = NULL, *covered = NULL;
        char buf[128];
        const char *reason;
        int k;

        if (!policy_spoiled(c, path, /* follow_root_links= */ false, r, &why))
                return 0;
        reason = spoiled_reason(r, buf);
        k = cover_spoiled(c, path, &covered);
        if (k < 0)
                return nsm_error_set_path_errnof(&c->error, k, "%s=%s: '%s' %s, and %s; covering what is there "
                                                 "instead failed too: %m", setting, entry, path, reason, why);
        if (k == 0)
                k = policy_note(c, "%s=%s: '%s' %s, and %s: nothing is there to hide.", setting, entry, path, reason, why);
        else
                k = policy_note(c, "%s=%s: '%s' %s, and %s: covered '%s' (empty, mode 0000) instead.", setting, entry, path,
                                reason, why, covered);
        return k < 0 ? nsm_error_set_path_errnof(&c->error, k, "Out of memory.") : k;
}

/* ---- the steps ---- */

static int apply_temporary_file_systems(PolicyContext *c, const PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_tmpfs; i++) {
                const TmpfsEntry *t = &plan->tmpfs[i];
                bool at_path;
                int r, k;

                r = mount_tmpfs_at(c, t->path, "mode=0755", t->options, &at_path);
                if (r >= 0)
                        continue;
                if (at_path) {
                        k = hide_if_spoiled(c, "TemporaryFileSystem", t->entry, t->path, r);
                        if (k < 0)
                                return k;
                        if (k > 0)
                                continue;
                }
                return nsm_error_set_path_errnof(&c->error, r, "TemporaryFileSystem=%s: failed to mount a tmpfs on "
                                                 "'%s'%s: %m", t->entry, t->path,
                                                 r == -ELOOP ?
                                                 " (a symlink on the way; symlinks are not followed)" : "");
        }
        return 0;
}

static int apply_private_tmp(PolicyContext *c, const ViewPolicy *p) {
        _cleanup_free_ char *options = NULL;

        if (!p->private_tmp)
                return 0;
        if (p->tmp_size > 0 && asprintf(&options, "size=%" PRIu64, p->tmp_size) < 0)
                return nsm_error_set_path_errnof(&c->error, -ENOMEM, "Out of memory.");
        /* One fresh tmpfs each, like two private directories: nothing of the host's shows. */
        for (const char *const *d = (const char *const[]) { "/tmp", "/var/tmp", NULL }; *d; d++) {
                bool at_path;
                /* Root's directories: no user spoils them. */
                int r = mount_tmpfs_at(c, *d, "mode=1777", options, &at_path);
                if (r < 0)
                        return nsm_error_set_path_errnof(&c->error, r, "PrivateTmp=yes: failed to mount a tmpfs on "
                                                         "'%s': %m", *d);
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
                return nsm_error_set_path_errnof(&c->error, -ENOMEM, "Out of memory.");

        /* The user's own home, cloned while it is still reachable (it may be a mount itself:
         * recursively, and receive-only like the rest of the view). No home: nothing to show. */
        r = open_path_creating(c->root_fd, u->home, PATH_EXISTING, NULL, &home_fd);
        if (r >= 0) {
                struct mount_attr attr = { .propagation = MS_SLAVE };

                home_tree_fd = open_tree(home_fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
                if (home_tree_fd < 0)
                        return nsm_error_set_path_errnof(&c->error, errno, "HideOtherHomes=yes: failed to clone '%s': "
                                                         "%m", u->home);
                if (mount_setattr(home_tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return nsm_error_set_path_errnof(&c->error, errno, "HideOtherHomes=yes: failed to make the "
                                                         "clone of '%s' a slave: %m", u->home);
        } else if (r != -ENOENT)
                return nsm_error_set_path_errnof(&c->error, r, "HideOtherHomes=yes: failed to open '%s': %m", u->home);

        r = open_path_creating(c->root_fd, homes, PATH_EXISTING, NULL, &homes_fd);
        if (r < 0)
                return nsm_error_set_path_errnof(&c->error, r, "HideOtherHomes=yes: failed to open the homes "
                                                 "directory '%s': %m", homes);

        /* A read-only tmpfs prepared while detached: the mount point for the home is made in
         * it before it is made read-only, and nothing is visible until it is complete. */
        r = tmpfs_new("mode=0755", NULL, NULL, &tmpfs_fd);
        if (r < 0)
                return nsm_error_set_path_errnof(&c->error, r, "HideOtherHomes=yes: failed to create a tmpfs: %m");
        if (mkdirat(tmpfs_fd, name, 0755) < 0)
                return nsm_error_set_path_errnof(&c->error, errno, "HideOtherHomes=yes: failed to create '%s' in the "
                                                 "tmpfs: %m", name);
        r = set_read_only(tmpfs_fd);
        if (r < 0)
                return nsm_error_set_path_errnof(&c->error, r, "HideOtherHomes=yes: failed to make the tmpfs "
                                                 "read-only: %m");
        if (home_tree_fd >= 0 &&
            move_mount(home_tree_fd, "", tmpfs_fd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return nsm_error_set_path_errnof(&c->error, errno, "HideOtherHomes=yes: failed to bind '%s' back into "
                                                 "the tmpfs: %m", u->home);

        r = attach(c, &tmpfs_fd, homes_fd, false);
        if (r < 0)
                return nsm_error_set_path_errnof(&c->error, r, "HideOtherHomes=yes: failed to mount the tmpfs on "
                                                 "'%s'%s: %m", homes,
                                                 r == -EXDEV ?
                                                 " (it is a shared mount: the tmpfs would reach the host)" : "");
        /* The home bound back in is the policy's too. */
        if (home_tree_fd >= 0) {
                r = keep_mount(c, &home_tree_fd, false);
                if (r < 0)
                        return nsm_error_set_path_errnof(&c->error, r, "Out of memory.");
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
                if (r < 0) {
                        int k = bind_skip_if_spoiled(c, b, "the source", b->source, /* follow_root_links= */ true, r);
                        if (k < 0)
                                return nsm_error_set_path_errnof(&c->error, k, "Out of memory.");
                        if (k > 0)
                                continue;
                }
                if (r == -EPERM)
                        return nsm_error_set_path_errnof(&c->error, r, "%s=%s: source '%s' goes through a symbolic "
                                                         "link that is not owned by root, or lies in a directory that "
                                                         "is not; such links are not followed", b->setting, b->entry,
                                                         b->source);
                if (r < 0)
                        return nsm_error_set_path_errnof(&c->error, r, "%s=%s: failed to open source '%s': %m",
                                                         b->setting, b->entry, b->source);

                /* A source that names the user is the user's or root's: anybody else's (alice's
                 * directory at bob's /tmp/scratch-bob, made before his) would put what they like
                 * into his view. */
                if (b->user_specific) {
                        struct statx st;
                        char who[64];
                        PathWalk w = { .user = c->user };

                        r = stat_cached(src_fd, &st);
                        if (r < 0)
                                return nsm_error_set_path_errnof(&c->error, r, "%s=%s: failed to stat source '%s': %m",
                                                                 b->setting, b->entry, b->source);
                        if (st.stx_uid != 0 && st.stx_uid != c->user->uid) {
                                r = policy_note(c, "%s=%s: the source '%s' belongs to %s, neither root nor %s: the entry is skipped.",
                                                b->setting, b->entry, b->source, format_who(&w, st.stx_uid, who), c->user->name);
                                if (r < 0)
                                        return nsm_error_set_path_errnof(&c->error, r, "Out of memory.");
                                continue;
                        }
                }

                b->tree_fd = open_tree(src_fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (b->recursive ? AT_RECURSIVE : 0));
                if (b->tree_fd < 0)
                        return nsm_error_set_path_errnof(&c->error, errno, "%s=%s: failed to clone '%s'%s: %m",
                                                         b->setting, b->entry, b->source,
                                                         errno == EINVAL ? " (an unbindable mount?)" : "");
                if (mount_setattr(b->tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        return nsm_error_set_path_errnof(&c->error, errno, "%s=%s: failed to set up the clone of "
                                                         "'%s': %m", b->setting, b->entry, b->source);
        }
        return 0;
}

static int apply_binds(PolicyContext *c, PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_binds; i++) {
                BindEntry *b = &plan->binds[i];
                _cleanup_close_ int dest_fd = -EBADF;
                struct stat st;
                size_t mark;
                bool opened;
                int r, k;

                if (b->tree_fd < 0)
                        continue;       /* missing, '-' */
                if (fstat(b->tree_fd, &st) < 0)
                        return nsm_error_set_path_errnof(&c->error, errno, "%s=%s: failed to stat the clone of '%s': "
                                                         "%m", b->setting, b->entry, b->source);
                mark = c->created.n;
                r = open_path_creating(c->root_fd, b->dest, S_ISDIR(st.st_mode) ? PATH_DIRECTORY : PATH_FILE, &c->created, &dest_fd);
                opened = r >= 0;
                if (opened)
                        r = check_same_type(dest_fd, S_ISDIR(st.st_mode));
                if (r >= 0)
                        r = attach(c, &b->tree_fd, dest_fd, false);
                if (r >= 0)
                        continue;
                dest_fd = safe_close(dest_fd);
                created_paths_rollback(&c->created, mark);
                k = bind_skip_if_spoiled(c, b, "the destination", b->dest, /* follow_root_links= */ false, r);
                if (k < 0)
                        return nsm_error_set_path_errnof(&c->error, k, "Out of memory.");
                if (k > 0)
                        continue;
                if (!opened)
                        return nsm_error_set_path_errnof(&c->error, r, "%s=%s: failed to open or create the "
                                                         "destination '%s'%s: %m", b->setting, b->entry, b->dest,
                                                         r == -ELOOP ?
                                                         " (a symlink on the way; symlinks are not followed)" : "");
                return nsm_error_set_path_errnof(&c->error, r, "%s=%s: failed to bind '%s' on '%s'%s: %m", b->setting,
                                                 b->entry, b->source, b->dest,
                                                 r == -EXDEV ?
                                                 " (a shared mount: it would reach the host)" : "");
        }
        return 0;
}

static int apply_inaccessible(PolicyContext *c, const PolicyPlan *plan) {
        for (size_t i = 0; i < plan->n_inaccessible; i++) {
                const InaccessibleEntry *e = &plan->inaccessible[i];
                _cleanup_close_ int dest_fd = -EBADF, tree_fd = -EBADF;
                struct statx st;
                int r, k;

                r = open_path_creating(c->root_fd, e->path, PATH_EXISTING, NULL, &dest_fd);
                if (r == -ENOENT && e->ignore_missing) {
                        log_debug("InaccessiblePaths=%s: '%s' does not exist, ignoring.", e->entry, e->path);
                        continue;
                }
                if (r < 0) {
                        k = hide_if_spoiled(c, "InaccessiblePaths", e->entry, e->path, r);
                        if (k < 0)
                                return k;
                        if (k > 0)
                                continue;
                        return nsm_error_set_path_errnof(&c->error, r, "InaccessiblePaths=%s: failed to open '%s'%s: "
                                                         "%m", e->entry, e->path,
                                                         r == -ELOOP ?
                                                         " (a symlink on the way; symlinks are not followed)" : "");
                }
                r = stat_cached(dest_fd, &st);
                if (r < 0)
                        return nsm_error_set_path_errnof(&c->error, r, "InaccessiblePaths=%s: failed to stat '%s': %m",
                                                         e->entry, e->path);

                /* A directory gets an empty, read-only tmpfs of mode 0000; anything else a bind
                 * of an empty mode 0000 file. */
                if (S_ISDIR(st.stx_mode)) {
                        r = tmpfs_new("mode=0000", "noexec", NULL, &tree_fd);
                        if (r >= 0)
                                r = set_read_only(tree_fd);
                } else
                        r = inaccessible_file(c, &tree_fd);
                if (r < 0)
                        return nsm_error_set_path_errnof(&c->error, r, "InaccessiblePaths=%s: failed to prepare the "
                                                         "cover for '%s': %m", e->entry, e->path);

                r = attach(c, &tree_fd, dest_fd, false);
                if (r < 0) {
                        dest_fd = safe_close(dest_fd);
                        k = hide_if_spoiled(c, "InaccessiblePaths", e->entry, e->path, r);
                        if (k < 0)
                                return k;
                        if (k > 0)
                                continue;
                        return nsm_error_set_path_errnof(&c->error, r, "InaccessiblePaths=%s: failed to cover '%s'%s: "
                                                         "%m", e->entry, e->path,
                                                         r == -EXDEV ?
                                                         " (a shared mount: it would reach the host)" : "");
                }
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
                        return nsm_error_set_path_errnof(&c->error, r, "TemporaryFileSystem=: failed to make a tmpfs "
                                                         "read-only: %m");
        }
        return 0;
}

/* The ids of what the policy mounted: the mounts the user may not unmount nor repropagate. */
static int collect_mount_ids(PolicyContext *c, MountId *ids, size_t max, size_t *ret_n) {
        size_t n = 0;

        for (size_t i = 0; i < c->n_mounts; i++) {
                if (n >= max)
                        return nsm_error_set_path_errnof(&c->error, -E2BIG, "The [View] policy makes more than %zu "
                                                         "mounts.", max);
                int r = fd_get_mount_ids(c->mounts[i].fd, "", &ids[n]);
                if (r < 0)
                        return nsm_error_set_path_errnof(&c->error, r, "Failed to identify a mount of the [View] "
                                                         "policy: %m");
                n++;
        }
        *ret_n = n;
        return 0;
}

/* view_policy_apply(), or with mount=false only its first step: view_policy_check() gives the
 * same answer for a malformed entry because it is the same code. */
static int policy_run(const ViewPolicy *p, const UserRecord *u, bool mount, MountId *ret_ids, size_t max_ids,
                      size_t *ret_n_ids, NsmError *error, char ***ret_notes) {
        _cleanup_(policy_plan_done) PolicyPlan plan = {};
        _cleanup_(policy_context_done) PolicyContext c = { .user = u, .root_fd = -EBADF, .inaccessible_fd = -EBADF };
        int r;

        *ret_n_ids = 0;
        if (!p || !u || !u->name)
                return -EINVAL;

        r = policy_plan_build(&c, p, u, &plan);
        if (r >= 0 && mount &&
            (plan.n_tmpfs > 0 || plan.n_binds > 0 || plan.n_inaccessible > 0 || p->private_tmp || p->hide_other_homes)) {
                c.root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (c.root_fd < 0)
                        r = nsm_error_set_path_errnof(&c.error, errno, "Failed to open the view's root: %m");
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
        if (r < 0 && error && nsm_error_is_set(&c.error) && !nsm_error_is_set(error))
                *error = TAKE_STRUCT(c.error);
        if (ret_notes)
                *ret_notes = TAKE_PTR(c.notes);
        return r;
}

int view_policy_apply(const ViewPolicy *p, const UserRecord *u, MountId *ret_ids, size_t max_ids, size_t *ret_n_ids,
                      NsmError *error, char ***ret_notes) {
        return policy_run(p, u, true, ret_ids, max_ids, ret_n_ids, error, ret_notes);
}

int view_policy_check(const ViewPolicy *p, const UserRecord *u, NsmError *error) {
        size_t n;
        return policy_run(p, u, false, NULL, 0, &n, error, NULL);
}

/* ---- warnings ---- */

static int warn_path(const PathWalk *w, const char *setting, const char *entry, const char *what, const char *path,
                     char ***warnings) {
        _cleanup_free_ char *why = NULL, *warning = NULL;
        int r;

        r = path_find_other_writer(w, path, &why);
        if (r <= 0)
                /* A walk that fails says nothing about who could change the path: applying it
                 * will say what is wrong. */
                return r == -ENOMEM ? r : 0;
        if (asprintf(&warning, "%s=%s: %s '%s' lies where someone other than root and %s decides what it names: %s. "
                     "Should it be spoiled, the entry is %s.", setting, entry, what, path, w->user->name, why,
                     STR_IN_SET(setting, "BindPaths", "BindReadOnlyPaths") ? "skipped" : "replaced by a cover of what is there") < 0)
                return -ENOMEM;
        return strv_extend(warnings, warning);
}

int view_policy_warnings(const ViewPolicy *p, const UserRecord *u, int root_fd, char ***ret) {
        _cleanup_(policy_plan_done) PolicyPlan plan = {};
        _cleanup_(policy_context_done) PolicyContext c = { .user = u, .root_fd = -EBADF, .inaccessible_fd = -EBADF };
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *group = NULL;
        MountEntry *table = NULL;
        size_t n_table = 0;
        int r;

        if (!p || !u || !u->name || !ret)
                return -EINVAL;
        r = policy_plan_build(&c, p, u, &plan);
        if (r < 0)
                return r;

        /* The user's own group counts as theirs where it is theirs alone by name (a user
         * private group, as useradd makes them); a shared primary group ("users") does not. */
        PathWalk w = { .root_fd = root_fd, .uid = u->uid, .gid = (gid_t) -1, .user = u };
        if (group_name_by_gid(u->gid, &group) >= 0 && streq(group, u->name))
                w.gid = u->gid;
        (void) mount_table_read_self(&table, &n_table);
        w.table = table;
        w.n_table = n_table;

        for (size_t i = 0; r >= 0 && i < plan.n_binds; i++) {
                const BindEntry *b = &plan.binds[i];
                _cleanup_close_ int fd = -EBADF;
                struct statx st;
                char who[64];

                w.follow_root_links = true;
                r = warn_path(&w, b->setting, b->entry, "the source", b->source, &warnings);
                w.follow_root_links = false;
                if (r >= 0)
                        r = warn_path(&w, b->setting, b->entry, "the destination", b->dest, &warnings);
                if (r < 0 || !b->user_specific || open_path_safe(root_fd, b->source, &fd) < 0 || stat_cached(fd, &st) < 0 ||
                    st.stx_uid == 0 || st.stx_uid == u->uid)
                        continue;
                _cleanup_free_ char *warning = NULL;
                if (asprintf(&warning, "%s=%s: the source '%s' belongs to %s, neither root nor %s: the entry is skipped.",
                             b->setting, b->entry, b->source, format_who(&w, st.stx_uid, who), u->name) < 0)
                        r = -ENOMEM;
                else
                        r = strv_extend(&warnings, warning);
        }
        for (size_t i = 0; r >= 0 && i < plan.n_tmpfs; i++)
                r = warn_path(&w, "TemporaryFileSystem", plan.tmpfs[i].entry, "the path", plan.tmpfs[i].path, &warnings);
        for (size_t i = 0; r >= 0 && i < plan.n_inaccessible; i++)
                r = warn_path(&w, "InaccessiblePaths", plan.inaccessible[i].entry, "the path", plan.inaccessible[i].path,
                              &warnings);
        mount_entries_free(table, n_table);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(warnings);
        return 0;
}
