/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "fs-util.h"
#include "mount-util.h"
#include "path-util.h"
#include "strv.h"
#include "view-policy-plan.h"
#include "view-policy.h"
#include "write-access.h"

/* The [View] policy, read: specifiers, every entry parsed and checked (the plan that
 * view-policy-apply.c mounts), and the walk that tells who decides what a policy path names,
 * which gives the warnings an administrator should see (view_policy_warnings()) and tells
 * view-policy-apply.c whether a user spoiled an entry that failed.
 *
 * Nothing here mounts, creates or logs: the daemon's killable child uses it before it applies
 * a policy, and nsctl verify links it to check a policy against the machine as it is. Paths
 * are only opened (O_PATH) and looked at without asking their file system (AT_STATX_DONT_SYNC;
 * the ACL of a directory only where it is on no FUSE or network file system), never followed
 * through a symlink a policy would not follow. */

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
                        if (!group && u->group) {
                                group = strdup(u->group);
                                if (!group)
                                        return -ENOMEM;
                        }
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

void policy_plan_done(PolicyPlan *plan) {
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

int policy_plan_build(const ViewPolicy *p, const UserRecord *u, PolicyPlan *plan, NsmError *error) {
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
                        return nsm_error_set_path_errnof(error, r, "TemporaryFileSystem=%s: invalid entry "
                                                         "(PATH[:OPTIONS], an absolute normalized path other than /): "
                                                         "%m", *e);
                plan->n_tmpfs++;
        }

        for (int ro = 0; ro <= 1; ro++) {
                const char *setting = ro ? "BindReadOnlyPaths" : "BindPaths";
                for (char **e = ro ? p->bind_read_only_paths : p->bind_paths; e && *e; e++) {
                        r = parse_bind(setting, *e, ro, plan->n_binds, u, &plan->binds[plan->n_binds]);
                        if (r < 0)
                                return nsm_error_set_path_errnof(error, r, "%s=%s: invalid entry "
                                                                 "([-]SOURCE[:DEST[:rbind|norbind]], absolute "
                                                                 "normalized paths, DEST not /): %m", setting, *e);
                        plan->n_binds++;
                }
        }
        qsort(plan->binds, plan->n_binds, sizeof(BindEntry), bind_entry_compare);

        for (char **e = p->inaccessible_paths; e && *e; e++) {
                r = parse_inaccessible(*e, u, &plan->inaccessible[plan->n_inaccessible]);
                if (r < 0)
                        return nsm_error_set_path_errnof(error, r, "InaccessiblePaths=%s: invalid entry ([-]PATH, "
                                                         "an absolute normalized path other than /): %m", *e);
                plan->n_inaccessible++;
        }

        if (p->hide_other_homes) {
                const char *slash = u->home ? strrchr(u->home, '/') : NULL;
                /* The homes directory is the parent of the home: it must exist and not be "/". */
                if (!u->home || !valid_target(u->home) || slash == u->home)
                        return nsm_error_set_path_errnof(error, -EINVAL, "HideOtherHomes=yes: the home directory "
                                                         "'%s' of '%s' has no parent other than /: %m", u->home ?: "",
                                                         u->name);
        }
        return 0;
}

/* ---- who decides what a path names ---- */

#define POLICY_SYMLINKS_MAX 32

/* "alice (uid 2001)" for the user whose view it is, "uid 2002" for others: no NSS lookup here,
 * which could wait on a remote user database. */
const char *policy_format_who(const PathWalk *w, uid_t uid, char buf[static 64]) {
        if (w->user && w->user->name && uid == w->user->uid)
                snprintf(buf, 64, "%.32s (uid %u)", w->user->name, (unsigned) uid);
        else
                snprintf(buf, 64, "uid %u", (unsigned) uid);
        return buf;
}

/* Type, mode and owners as the inode has them now, without asking its file system (a FUSE
 * server, a dead NFS server) for news; the type is always known. */
int policy_stat_cached(int fd, struct statx *ret) {
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
 *   - a directory a group other than root's (root's too where NSS lists members in it), a
 *     user by an ACL entry (under the mask), or everybody, may write; where it is sticky
 *     (/tmp), unless the next name is there and root's: a free name is whoever's creates it
 *     first, after every reboot too, and a name of a user's is theirs to replace;
 *   - a symbolic link they own;
 *   - a FUSE or network file system (NFS, CIFS, 9p, …), whose server says what it likes
 *     about owners and who may write.
 * 1 and a sentence saying where and who; 0 if the walk ends before any (at the path's end, a
 * name missing from root's directory, root's link where none is followed, a non-directory on
 * the way): what goes wrong there is root's doing. Negative errno if the walk fails. Changes
 * nothing, logs nothing. */
int path_find_other_writer(const PathWalk *w, const char *path, char **ret_why) {
        _cleanup_free_ char *todo = strdup(path_skip_root(path)), *shown = strdup("");
        _cleanup_close_ int dir = fcntl(w->root_fd, F_DUPFD_CLOEXEC, 3);
        unsigned links = 0;
        _cleanup_free_ char *writers = NULL;
        char who[64];
        int r;

        if (!todo || !shown)
                return -ENOMEM;
        if (dir < 0)
                return -errno;
        for (char *p = todo;;) {
                _cleanup_close_ int fd = -EBADF;
                char name[NAME_MAX + 1];
                struct statx d, st = {};
                const char *here, *fstype;
                bool open_to_others;

                r = path_next_name((const char **) &p, name);
                if (r <= 0)
                        return r;
                here = *shown ? shown : "/";
                r = policy_stat_cached(dir, &d);
                if (r < 0)
                        return r;
                if (w->table && mount_fd_outside_fuse(dir, w->table, w->n_table, /* by_id= */ false) == -EREMOTE)
                        return walk_found(ret_why, "'%s' is on a FUSE file system, whose server says who owns what", here);
                if (w->table && mount_fd_network_fstype(dir, w->table, w->n_table, &fstype) > 0)
                        return walk_found(ret_why, "'%s' is on a network file system (%s), whose server says who owns "
                                          "and may write what", here, fstype);
                if (d.stx_uid != 0 && d.stx_uid != w->uid)
                        return walk_found(ret_why, "'%s' belongs to %s", here, policy_format_who(w, d.stx_uid, who));
                /* As the kernel decides: the mode, and the ACL's named users and groups. */
                writers = mfree(writers);
                r = fd_find_other_writer(dir, &d, w->uid, w->gid, w->names, &writers);
                if (r < 0)
                        return r;
                open_to_others = r > 0;

                fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno != ENOENT)
                        return -errno;
                if (fd >= 0) {
                        r = policy_stat_cached(fd, &st);
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
                                                  name, policy_format_who(w, st.stx_uid, who));
                }
                if (fd < 0)
                        return 0;

                if (S_ISLNK(st.stx_mode)) {
                        if (st.stx_uid != 0 && st.stx_uid != w->uid)
                                return walk_found(ret_why, "'%s/%s' is a symbolic link of %s", *shown ? shown : "", name,
                                                  policy_format_who(w, st.stx_uid, who));
                        if (!w->follow_root_links)
                                return 0;
                        if (++links > POLICY_SYMLINKS_MAX)
                                return -ELOOP;
                        r = path_follow_symlink(fd, w->root_fd, &todo, &p, &dir);
                        if (r < 0)
                                return r;
                        if (r > 0) {
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

int view_policy_check(const ViewPolicy *p, const UserRecord *u, NsmError *error) {
        _cleanup_(policy_plan_done) PolicyPlan plan = {};

        if (!p || !u || !u->name)
                return -EINVAL;
        /* view_policy_apply() builds the same plan first: a malformed entry gets the same answer. */
        return policy_plan_build(p, u, &plan, error);
}

const char *view_policy_made_tag(uid_t uid, uint64_t mntns_id, bool inode, char buf[static VIEW_POLICY_MADE_TAG_MAX]) {
        snprintf(buf, VIEW_POLICY_MADE_TAG_MAX, "%u:%s:%" PRIu64, (unsigned) uid, inode ? "ino" : "id", mntns_id);
        return buf;
}

int view_policy_mount_points(const ViewPolicy *p, const UserRecord *u, char ***ret) {
        _cleanup_(policy_plan_done) PolicyPlan plan = {};
        _cleanup_strv_free_ char **paths = NULL;
        int r;

        if (!p || !u || !u->name)
                return -EINVAL;
        r = policy_plan_build(p, u, &plan, NULL);
        if (r < 0)
                return r;
        for (size_t i = 0; i < plan.n_tmpfs + plan.n_binds; i++) {
                const char *path = i < plan.n_tmpfs ? plan.tmpfs[i].path : plan.binds[i - plan.n_tmpfs].dest;
                if (strv_contains((const char *const *) paths, path))
                        continue;
                if (strv_extend(&paths, path) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(paths);
        return 0;
}

const char *policy_spoiled_reason(int r, char buf[static 128]) {
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

/* ---- forecast ---- */

static _printf_(2, 3) int forecast_note(char ***notes, const char *fmt, ...) {
        _cleanup_free_ char *note = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&note, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        return strv_extend(notes, note);
}

/* Whether a failure 'r' at 'path' is a user's doing, as view-policy-apply.c's policy_spoiled()
 * decides it: 1 and who in *ret_why. */
static int forecast_spoiled(const PathWalk *base, const char *path, bool follow_root_links, int r, char **ret_why) {
        PathWalk w = *base;

        if (r == -ENOMEM || r == -EXDEV)
                return 0;
        w.uid = (uid_t) -1;
        w.gid = (gid_t) -1;
        w.follow_root_links = follow_root_links;
        return path_find_other_writer(&w, path, ret_why) > 0;
}

int view_policy_forecast(const ViewPolicy *p, const UserRecord *u, int root_fd, char ***ret_skipped, NsmError *error) {
        _cleanup_(policy_plan_done) PolicyPlan plan = {};
        _cleanup_strv_free_ char **notes = NULL;
        MountEntry *table = NULL;
        size_t n_table = 0;
        char buf[128];
        int r;

        if (!p || !u || !u->name || !ret_skipped)
                return -EINVAL;
        r = policy_plan_build(p, u, &plan, error);
        if (r < 0)
                return r;
        (void) mount_table_read_self(&table, &n_table);
        PathWalk w = { .root_fd = root_fd, .user = u, .table = table, .n_table = n_table };

        /* The binds as clone_bind_sources() and apply_binds() take them. */
        for (size_t i = 0; r >= 0 && i < plan.n_binds; i++) {
                const BindEntry *b = &plan.binds[i];
                _cleanup_close_ int src_fd = -EBADF, dest_fd = -EBADF;
                _cleanup_free_ char *why = NULL;
                struct statx st, dst;
                char who[64];
                int k;

                r = open_path_safe(root_fd, b->source, &src_fd);
                if (r == -ENOENT && b->ignore_missing) {
                        r = forecast_note(&notes, "%s=%s: the source '%s' does not exist (the entry begins with '-'): the "
                                          "entry is skipped.", b->setting, b->entry, b->source);
                        continue;
                }
                if (r < 0) {
                        k = forecast_spoiled(&w, b->source, /* follow_root_links= */ true, r, &why);
                        if (k > 0) {
                                r = forecast_note(&notes, "%s=%s: the source '%s' %s, and %s: the entry is skipped.",
                                                  b->setting, b->entry, b->source, policy_spoiled_reason(r, buf), why);
                                continue;
                        }
                        if (r == -EPERM)
                                r = nsm_error_set_path_errnof(error, r, "%s=%s: source '%s' goes through a symbolic link "
                                                              "that is not owned by root, or lies in a directory that is "
                                                              "not; such links are not followed", b->setting, b->entry,
                                                              b->source);
                        else
                                r = nsm_error_set_path_errnof(error, r, "%s=%s: failed to open source '%s': %m",
                                                              b->setting, b->entry, b->source);
                        break;
                }
                r = policy_stat_cached(src_fd, &st);
                if (r < 0) {
                        r = nsm_error_set_path_errnof(error, r, "%s=%s: failed to stat source '%s': %m", b->setting,
                                                      b->entry, b->source);
                        break;
                }
                if (b->user_specific && st.stx_uid != 0 && st.stx_uid != u->uid) {
                        r = forecast_note(&notes, "%s=%s: the source '%s' belongs to %s, neither root nor %s: the entry is "
                                          "skipped.", b->setting, b->entry, b->source, policy_format_who(&w, st.stx_uid, who),
                                          u->name);
                        continue;
                }
                /* The destination is created where it is missing; what is there must be of the
                 * source's kind, reached without a symlink. */
                r = open_path_creating(root_fd, b->dest, PATH_EXISTING, NULL, &dest_fd);
                if (r >= 0) {
                        r = policy_stat_cached(dest_fd, &dst);
                        if (r >= 0 && S_ISDIR(dst.stx_mode) != S_ISDIR(st.stx_mode))
                                r = S_ISDIR(st.stx_mode) ? -ENOTDIR : -EISDIR;
                }
                if (r == -ENOENT)
                        r = 0;
                if (r >= 0)
                        continue;
                k = forecast_spoiled(&w, b->dest, /* follow_root_links= */ false, r, &why);
                if (k > 0) {
                        r = forecast_note(&notes, "%s=%s: the destination '%s' %s, and %s: the entry is skipped.",
                                          b->setting, b->entry, b->dest, policy_spoiled_reason(r, buf), why);
                        continue;
                }
                r = nsm_error_set_path_errnof(error, r, "%s=%s: the destination '%s' %s", b->setting, b->entry, b->dest,
                                              policy_spoiled_reason(r, buf));
        }

        /* InaccessiblePaths= as apply_inaccessible() takes it. */
        for (size_t i = 0; r >= 0 && i < plan.n_inaccessible; i++) {
                const InaccessibleEntry *e = &plan.inaccessible[i];
                _cleanup_close_ int fd = -EBADF;
                _cleanup_free_ char *why = NULL;

                r = open_path_creating(root_fd, e->path, PATH_EXISTING, NULL, &fd);
                if (r == -ENOENT && e->ignore_missing) {
                        r = forecast_note(&notes, "InaccessiblePaths=%s: '%s' does not exist (the entry begins with '-'): "
                                          "nothing to hide.", e->entry, e->path);
                        continue;
                }
                if (r >= 0)
                        continue;
                if (forecast_spoiled(&w, e->path, /* follow_root_links= */ false, r, &why) > 0) {
                        r = forecast_note(&notes, "InaccessiblePaths=%s: '%s' %s, and %s: what is there is covered "
                                          "instead.", e->entry, e->path, policy_spoiled_reason(r, buf), why);
                        continue;
                }
                r = nsm_error_set_path_errnof(error, r, "InaccessiblePaths=%s: failed to open '%s': %m", e->entry, e->path);
        }
        mount_entries_free(table, n_table);
        if (r < 0)
                return r;
        *ret_skipped = TAKE_PTR(notes);
        return 0;
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
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *group = NULL;
        MountEntry *table = NULL;
        size_t n_table = 0;
        int r;

        if (!p || !u || !u->name || !ret)
                return -EINVAL;
        r = policy_plan_build(p, u, &plan, NULL);
        if (r < 0)
                return r;

        /* The user's own group counts as theirs where it is theirs alone by name (a user
         * private group, as useradd makes them); a shared primary group ("users") does not. */
        PathWalk w = { .root_fd = root_fd, .uid = u->uid, .gid = (gid_t) -1, .user = u, .names = true };
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
                if (r < 0 || !b->user_specific || open_path_safe(root_fd, b->source, &fd) < 0 || policy_stat_cached(fd, &st) < 0 ||
                    st.stx_uid == 0 || st.stx_uid == u->uid)
                        continue;
                _cleanup_free_ char *warning = NULL;
                if (asprintf(&warning, "%s=%s: the source '%s' belongs to %s, neither root nor %s: the entry is skipped.",
                             b->setting, b->entry, b->source, policy_format_who(&w, st.stx_uid, who), u->name) < 0)
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
