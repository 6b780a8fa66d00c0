/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fs-util.h"
#include "log.h"
#include "mount-util.h"
#include "strv.h"
#include "view-policy-apply.h"
#include "view-policy-plan.h"
#include "view-policy.h"

/* The [View] policy, applied inside a freshly built view, in a killable child that entered it
 * (view-ops.c, VIEW_OP_APPLY_POLICY; the view builder never looks up a user's paths).
 *
 * How it works:
 *
 *   1. Every entry is parsed, its specifiers expanded and its paths validated before anything
 *      is touched, so a bad entry (a relative path, an unknown option) creates nothing: the
 *      plan of view-policy.c (policy_plan_build()), the read-only half.
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
 * its mounts are detached. What is created in a directory the user owns (%h/x) is created as
 * the user, and tagged (VIEW_POLICY_MADE_XATTR, view-policy.h) before anything is mounted on
 * it: when the view ends, the daemon removes what is still empty (mount-points.c), so no empty
 * directory is left behind in the user's real home. Sources follow only symlinks owned by root
 * (open_path_safe(), in the spirit of systemd's CHASE_SAFE): a source may come from %h or lie
 * where a user can write, and a bind shows what a parent directory's permissions deny, so a
 * user's link must never steer one (docs/security.md).
 *
 * Propagation: a mount attached under a shared mount appears at all its peers. In a view the
 * SharedSubtrees (/mnt) are peers of the host's, and with ViewPropagation=shared the whole view
 * is. Policy destinations must therefore not lie at or below a SharedSubtrees path; rather than
 * trusting configuration, every attach checks the mount it goes onto and refuses a shared one
 * with -EXDEV, so a policy entry can never mount anything on the host (and with
 * ViewPropagation=shared any [View] mount is refused). Clones of bind sources are made slaves
 * (receive-only), like the BindMount() method's binds.
 *
 * Errors are named here, in an NsmError naming the setting and entry (the caller only knows
 * the stage); the daemon logs them once, where it handles them. Where an entry fails, the walk
 * of view-policy.c (path_find_other_writer()) says whether a user spoiled it. */

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
        CreatedPaths created;    /* made as the user in the user's own directories (owner_uid) */
        char tag[VIEW_POLICY_MADE_TAG_MAX];  /* for what was made so; "" if the view's id is unknown */
        AttachedMount *mounts;
        size_t n_mounts;
} PolicyContext;

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

/* ---- mount points made as the user ---- */

/* Tags what open_path_creating() made as the user since entry 'mark' of c->created, and, if it
 * existed already, the directory 'dest_fd' where an earlier view of the user tagged it (this
 * view mounts on it now: the end of that one must leave it alone). Before anything is mounted
 * there: an fd opened later would be the mount's root. Best effort: where the file system has
 * no trusted.* attributes (some network ones), what was made stays, the user's. */
static void tag_made(PolicyContext *c, size_t mark, int dest_fd) {
        char old[VIEW_POLICY_MADE_TAG_MAX];
        struct stat st;
        ssize_t n;

        if (!c->tag[0] || c->user->uid == 0)
                return;
        for (size_t i = mark; i < c->created.n; i++) {
                const CreatedPath *e = &c->created.entries[i];
                _cleanup_close_ int fd = openat(e->dir_fd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                                (e->is_dir ? O_DIRECTORY : 0));

                if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != e->dev || st.st_ino != e->ino ||
                    st.st_uid != c->user->uid)
                        continue;       /* made as root (not in the user's directory), or gone */
                if (fsetxattr(fd, VIEW_POLICY_MADE_XATTR, c->tag, strlen(c->tag), 0) < 0)
                        log_debug_errno(errno, "Failed to tag the mount point '%s' made for the [View] policy, "
                                        "ignoring: %m", e->name);
        }

        _cleanup_close_ int fd = openat(dest_fd, ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return;         /* a file, or not to be read */
        n = fgetxattr(fd, VIEW_POLICY_MADE_XATTR, old, sizeof old - 1);
        if (n <= 0)
                return;
        old[n] = '\0';
        if (!streq(old, c->tag) && fstat(fd, &st) >= 0 && st.st_uid == c->user->uid)
                (void) fsetxattr(fd, VIEW_POLICY_MADE_XATTR, c->tag, strlen(c->tag), XATTR_REPLACE);
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
        int r = policy_stat_cached(dest_fd, &st);
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
                tag_made(c, mark, dest_fd);
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
                .names = true,          /* as the warnings name them (a killable child may ask NSS) */
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
                           policy_spoiled_reason(r, buf), why);
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
                r = policy_stat_cached(fd, &st);
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
        reason = policy_spoiled_reason(r, buf);
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

                        r = policy_stat_cached(src_fd, &st);
                        if (r < 0)
                                return nsm_error_set_path_errnof(&c->error, r, "%s=%s: failed to stat source '%s': %m",
                                                                 b->setting, b->entry, b->source);
                        if (st.stx_uid != 0 && st.stx_uid != c->user->uid) {
                                r = policy_note(c, "%s=%s: the source '%s' belongs to %s, neither root nor %s: the entry is skipped.",
                                                b->setting, b->entry, b->source, policy_format_who(&w, st.stx_uid, who), c->user->name);
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
                        tag_made(c, mark, dest_fd);
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
                r = policy_stat_cached(dest_fd, &st);
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

int view_policy_apply(const ViewPolicy *p, const UserRecord *u, MountId *ret_ids, size_t max_ids, size_t *ret_n_ids,
                      NsmError *error, char ***ret_notes) {
        _cleanup_(policy_plan_done) PolicyPlan plan = {};
        _cleanup_(policy_context_done) PolicyContext c = { .user = u, .root_fd = -EBADF, .inaccessible_fd = -EBADF };
        int r;

        *ret_n_ids = 0;
        if (!p || !u || !u->name)
                return -EINVAL;

        /* Step 1, the plan (view-policy.c): the same code as view_policy_check(), so it gives
         * the same answer for a malformed entry. */
        r = policy_plan_build(p, u, &plan, &c.error);
        if (r >= 0 &&
            (plan.n_tmpfs > 0 || plan.n_binds > 0 || plan.n_inaccessible > 0 || p->private_tmp || p->hide_other_homes)) {
                _cleanup_close_ int ns_fd = -EBADF;
                uint64_t ns_id = 0;
                struct stat ns_st;

                c.root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (c.root_fd < 0)
                        r = nsm_error_set_path_errnof(&c.error, errno, "Failed to open the view's root: %m");
                /* What the policy makes in the user's own directories is the user's. */
                c.created.owner_uid = u->uid;
                c.created.owner_gid = u->gid;
                /* A kernel without NS_GET_MNTNS_ID (before 6.8): the namespace's inode number. */
                ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
                if (ns_fd >= 0)
                        ns_id = mntns_get_id(ns_fd);
                if (ns_id != 0)
                        (void) view_policy_made_tag(u->uid, ns_id, false, c.tag);
                else if (ns_fd >= 0 && fstat(ns_fd, &ns_st) >= 0)
                        (void) view_policy_made_tag(u->uid, (uint64_t) ns_st.st_ino, true, c.tag);
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
