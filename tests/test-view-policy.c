/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of src/config/view-policy.c (reading a policy) and view-policy-apply.c (applying
 * it). TAP output.
 *
 *   test-view-policy specifiers   the pure parts: specifier expansion and view_policy_check()
 *                                 (any user)
 *   test-view-policy mounts       view_policy_apply(), as root (else exit 77): every case runs
 *                                 in a forked child that first enters a mount namespace of its
 *                                 own with every mount private, then covers /tmp and /var/tmp
 *                                 with throwaway tmpfs; all paths the policies name are inside
 *                                 them. Nothing reaches the machine's mount table or files. */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/magic.h>

#include "manager-config.h"
#include "parse-util.h"
#include "strv.h"
#include "tap.h"
#include "log.h"
#include "mount-util.h"
#include "view-policy-apply.h"
#include "view-policy.h"


/* ---- specifiers ---- */

static bool expands_to(const char *s, const UserRecord *u, const char *want) {
        _cleanup_free_ char *got = NULL;
        int r = view_policy_expand_specifiers(s, u, &got);
        if (r < 0 || !streq(got, want)) {
                printf("# '%s': got '%s' (r=%d), want '%s'\n", s, got ?: "(null)", r, want);
                return false;
        }
        return true;
}

static bool expand_fails(const char *s, const UserRecord *u, int want) {
        _cleanup_free_ char *got = NULL;
        int r = view_policy_expand_specifiers(s, u, &got);
        return r == want && !got;
}

static void test_specifiers(void) {
        UserRecord u = { .name = (char *) "alice", .uid = 2001, .gid = 0, .home = (char *) "/home/alice", .shell = (char *) "/bin/sh" };
        UserRecord nogroup = u;
        struct group *gr = getgrgid(0);

        nogroup.gid = 3999999999U;      /* no such group, one hopes */

        check(expands_to("", &u, ""), "empty string");
        check(expands_to("/srv/plain", &u, "/srv/plain"), "no specifiers");
        check(expands_to("%u", &u, "alice"), "%%u is the user name");
        check(expands_to("%U", &u, "2001"), "%%U is the uid");
        check(expands_to("%h/x", &u, "/home/alice/x"), "%%h is the home");
        check(gr && expands_to("%g", &u, gr->gr_name), "%%g is the primary group's name");
        check(expands_to("%G", &u, "0"), "%%G is the gid");
        check(expands_to("%%", &u, "%"), "%%%% is a percent sign");
        check(expands_to("/srv/%u/%U:%h:%%u%%", &u, "/srv/alice/2001:/home/alice:%u%"), "several in one string");
        check(expands_to("%u%u", &u, "alicealice"), "adjacent specifiers");
        check(expand_fails("%x", &u, -EINVAL), "unknown specifier %%x is -EINVAL");
        check(expand_fails("/srv/%", &u, -EINVAL), "a trailing lone %% is -EINVAL");
        check(expand_fails("%H", &u, -EINVAL), "specifiers are case-sensitive (%%H unknown)");
        check(expand_fails("%g", &nogroup, -ESRCH), "%%g of a gid without a group is -ESRCH");
        check(expands_to("%G", &nogroup, "3999999999"), "%%G of a gid without a group still expands");
}

/* ---- checking without applying (view_policy_check) ---- */

static bool check_fails_naming(ViewPolicy *p, const UserRecord *u, const char *want_in_message) {
        _cleanup_(nsm_error_done) NsmError error = {};
        int r = view_policy_check(p, u, &error);
        const char *message = error.message;
        if (r != -EINVAL || error.code != NSM_ERROR_INVALID_PATH || !message || !strstr(message, want_in_message)) {
                printf("# r=%d, error %s, message '%s', want -EINVAL, InvalidPath naming '%s'\n", r,
                       nsm_error_code_to_name(error.code) ?: "(none)", message ?: "(null)", want_in_message);
                return false;
        }
        return true;
}

static void test_check(void) {
        UserRecord u = { .name = (char *) "alice", .uid = 2001, .gid = 0, .home = (char *) "/home/alice", .shell = (char *) "/bin/sh" };
        UserRecord rootless = u;
        char *binds[] = { (char *) "-/srv/%u:/data/%U:norbind", (char *) "/opt", NULL };
        char *tmpfs[] = { (char *) "/scratch:size=1M,ro", NULL };
        char *inaccessible[] = { (char *) "-%h/.ssh", NULL };
        ViewPolicy good = { .bind_paths = binds, .temporary_file_system = tmpfs, .inaccessible_paths = inaccessible,
                            .hide_other_homes = true };
        char *relative[] = { (char *) "srv:/data", NULL };
        char *root_dest[] = { (char *) "/srv:/", NULL };
        char *bad_option[] = { (char *) "/srv:/data:bind", NULL };
        char *four_fields[] = { (char *) "/a:/b:rbind:x", NULL };
        char *unknown_specifier[] = { (char *) "/srv/%x", NULL };
        char *dotdot[] = { (char *) "/home/%u/../bob", NULL };

        rootless.home = (char *) "/alice";
        check(view_policy_check(&good, &u, NULL) == 0, "a policy of typical entries passes");
        check(view_policy_check(&(ViewPolicy) {}, &u, NULL) == 0, "an empty policy passes");
        check(check_fails_naming(&(ViewPolicy) { .bind_paths = relative }, &u, "BindPaths=srv:/data"), "a relative source is named");
        check(check_fails_naming(&(ViewPolicy) { .bind_read_only_paths = root_dest }, &u, "BindReadOnlyPaths=/srv:/"),
              "a destination of / is refused");
        check(check_fails_naming(&(ViewPolicy) { .bind_paths = bad_option }, &u, "BindPaths="), "an unknown bind option is refused");
        check(check_fails_naming(&(ViewPolicy) { .bind_paths = four_fields }, &u, "BindPaths="), "a fourth field is refused");
        check(check_fails_naming(&(ViewPolicy) { .temporary_file_system = unknown_specifier }, &u, "TemporaryFileSystem=/srv/%x"),
              "an unknown specifier is refused");
        check(check_fails_naming(&(ViewPolicy) { .inaccessible_paths = dotdot }, &u, "InaccessiblePaths="),
              "'..' after expansion is refused");
        check(check_fails_naming(&(ViewPolicy) { .hide_other_homes = true }, &rootless, "HideOtherHomes=yes"),
              "HideOtherHomes= with a home right below / is refused");
}

/* ---- the mount part ---- */

#define S "/tmp/vp"     /* the scratch directory, on the child's own tmpfs over /tmp */

/* In a forked child: fail the case with a message. */
#define CHECK(cond)                                                                     \
        do {                                                                            \
                if (!(cond)) {                                                          \
                        printf("# %s:%d: check failed: %s (errno: %m)\n", __FILE__, __LINE__, #cond); \
                        fflush(stdout);                                                 \
                        _exit(1);                                               \
                }                                                                       \
        } while (0)

static UserRecord scratch_user = {
        .name = (char *) "alice", .uid = 2001, .gid = 0, .home = (char *) S "/home/alice", .shell = (char *) "/bin/sh",
};

static void write_file(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        CHECK(f);
        fputs(content, f);
        CHECK(fclose(f) == 0);
}

static bool exists(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0;
}

static bool is_read_only(const char *path) {
        struct statvfs sv;
        return statvfs(path, &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

static bool is_tmpfs(const char *path) {
        struct statfs sf;
        return statfs(path, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

static bool is_mount_point(const char *path) {
        return path_is_mount_point(AT_FDCWD, path) > 0;
}

static size_t count_entries(const char *path) {
        DIR *d = opendir(path);
        struct dirent *de;
        size_t n = 0;

        CHECK(d);
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(d);
        return n;
}

static size_t mount_count(void) {
        MountEntry *e = NULL;
        size_t n = 0;
        CHECK(mount_table_read_self(&e, &n) >= 0);
        mount_entries_free(e, n);
        return n;
}

static mode_t mode_of(const char *path) {
        struct stat st;
        CHECK(stat(path, &st) == 0);
        return st.st_mode & 07777;
}

/* ViewPolicy from string lists (NULL-terminated compound literals). */
static char **strv(const char *const *l) {
        char **v = NULL;
        if (!l)
                return NULL;
        for (; *l; l++)
                CHECK(strv_extend(&v, *l) >= 0);
        return v;
}
#define L(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* The child's world: a private mount namespace, throwaway tmpfs on /tmp and /var/tmp, and a
 * scratch tree S with a few homes and sources. */
static void enter_scratch(void) {
        CHECK(unshare(CLONE_NEWNS) == 0);
        CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
        CHECK(mount("vp-test-tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == 0);
        CHECK(mount("vp-test-vartmp", "/var/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") == 0);
        CHECK(mkdir(S, 0755) == 0);
        CHECK(mkdir(S "/home", 0755) == 0);
        CHECK(mkdir(S "/home/alice", 0700) == 0);
        CHECK(mkdir(S "/home/bob", 0700) == 0);
        write_file(S "/home/alice/own", "alice's\n");
        write_file(S "/home/bob/secret", "bob's\n");
        CHECK(mkdir(S "/src", 0755) == 0);
        write_file(S "/src/data", "data\n");
        CHECK(mkdir(S "/src/sub", 0755) == 0);
        write_file(S "/src/file", "a file\n");
}

typedef void (*CaseFunc)(void);

static void run_case(const char *name, CaseFunc f) {
        pid_t pid;
        int status;

        fflush(stdout);
        pid = fork();
        if (pid < 0) {
                check(false, "%s: fork: %m", name);
                return;
        }
        if (pid == 0) {
                enter_scratch();
                f();
                fflush(stdout);
                _exit(0);
        }
        if (waitpid(pid, &status, 0) < 0) {
                check(false, "%s: waitpid: %m", name);
                return;
        }
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", name);
}

/* The notes of the last view_policy_apply(): the entries a user spoiled. */
static char **last_notes = NULL;

static int policy_apply(const ViewPolicy *p) {
        MountId ids[64];
        size_t n_ids;
        _cleanup_(nsm_error_done) NsmError error = {};
        int r;

        last_notes = strv_free(last_notes);
        r = view_policy_apply(p, &scratch_user, ids, ELEMENTSOF(ids), &n_ids, &error, &last_notes);
        if (r < 0 && nsm_error_is_set(&error))
                printf("# %s\n", nsm_error_message(&error));
        for (char **n = last_notes; n && *n; n++)
                printf("# note: %s\n", *n);
        return r;
}

/* Whether one of the lines contains every one of the strings. */
static bool warned(char **warnings, const char *const *words) {
        for (char **n = warnings; n && *n; n++) {
                bool all = true;
                for (const char *const *w = words; *w && all; w++)
                        all = strstr(*n, *w) != NULL;
                if (all)
                        return true;
        }
        return false;
}

/* Whether one note of the last apply contains every one of the strings. */
static bool noted(const char *const *words) {
        return warned(last_notes, words);
}

static size_t n_notes(void) {
        return strv_length(last_notes);
}

static int apply(const char *const *bind, const char *const *bind_ro, const char *const *tmpfs,
                 const char *const *inaccessible, bool private_tmp, bool hide_homes) {
        ViewPolicy p = {
                .bind_paths = strv(bind),
                .bind_read_only_paths = strv(bind_ro),
                .temporary_file_system = strv(tmpfs),
                .inaccessible_paths = strv(inaccessible),
                .private_tmp = private_tmp,
                .hide_other_homes = hide_homes,
        };
        int r = policy_apply(&p);
        view_policy_done(&p);
        return r;
}

static void case_bind_read_only(void) {
        CHECK(apply(NULL, L(S "/src:" S "/new/dir/ro"), NULL, NULL, false, false) == 0);
        CHECK(is_mount_point(S "/new/dir/ro"));
        CHECK(exists(S "/new/dir/ro/data"));
        CHECK(is_read_only(S "/new/dir/ro"));
        CHECK(mkdir(S "/new/dir/ro/x", 0755) < 0 && errno == EROFS);
        /* the source stays writable */
        CHECK(!is_read_only(S "/src"));
        CHECK(mkdir(S "/src/y", 0755) == 0);
        CHECK(exists(S "/new/dir/ro/y"));
        /* created mount points are plain directories */
        CHECK(mode_of(S "/new/dir") == 0755);
}

static void case_bind_rw_rbind_norbind(void) {
        CHECK(mount("vp-sub", S "/src/sub", "tmpfs", 0, NULL) == 0);
        write_file(S "/src/sub/marker", "m\n");
        CHECK(apply(L(S "/src:" S "/r", S "/src:" S "/n:norbind", S "/src:" S "/rr:rbind"), NULL, NULL, NULL, false, false) == 0);
        CHECK(exists(S "/r/sub/marker"));
        CHECK(exists(S "/rr/sub/marker"));
        CHECK(exists(S "/n/sub") && !exists(S "/n/sub/marker"));
        CHECK(!is_read_only(S "/r"));
        write_file(S "/r/written", "w\n");
        CHECK(exists(S "/src/written"));
}

static void case_bind_file_and_default_dest(void) {
        struct stat st;
        CHECK(apply(L(S "/src/file:" S "/etc-like/file.conf"), NULL, NULL, NULL, false, false) == 0);
        CHECK(lstat(S "/etc-like/file.conf", &st) == 0 && S_ISREG(st.st_mode));
        CHECK(is_mount_point(S "/etc-like/file.conf"));
        /* DEST defaults to SOURCE: a bind onto itself, read-only */
        CHECK(apply(NULL, L(S "/src"), NULL, NULL, false, false) == 0);
        CHECK(is_mount_point(S "/src") && is_read_only(S "/src"));
}

static void case_bind_missing_source(void) {
        size_t before = mount_count();
        CHECK(apply(L("-" S "/nonexistent:" S "/d1"), NULL, NULL, NULL, false, false) == 0);
        CHECK(!exists(S "/d1"));
        CHECK(mount_count() == before);
        CHECK(apply(L(S "/nonexistent:" S "/d2"), NULL, NULL, NULL, false, false) == -ENOENT);
        CHECK(!exists(S "/d2"));
        /* '-' only forgives a missing source, not a bad destination */
        CHECK(apply(L("-" S "/nonexistent:relative"), NULL, NULL, NULL, false, false) == -EINVAL);
}

static void case_symlink_in_dest(void) {
        size_t before = mount_count();

        CHECK(mkdir(S "/target", 0755) == 0);
        CHECK(symlink(S "/target", S "/home/alice/link") == 0);
        /* The first entry (sorted before the bad one) succeeds and is undone. */
        CHECK(apply(L(S "/src:" S "/a/b/c", S "/src:" S "/home/alice/link/sub"), NULL, NULL, NULL, false, false) == -ELOOP);
        CHECK(!exists(S "/target/sub"));
        CHECK(count_entries(S "/target") == 0);
        CHECK(!exists(S "/a"));
        CHECK(mount_count() == before);
        /* A symlink as the last component, too. */
        CHECK(apply(L(S "/src:" S "/home/alice/link"), NULL, NULL, NULL, false, false) == -ELOOP);
        CHECK(apply(NULL, NULL, L(S "/home/alice/link"), NULL, false, false) == -ELOOP);
        CHECK(apply(NULL, NULL, NULL, L(S "/home/alice/link"), false, false) == -ELOOP);
        CHECK(count_entries(S "/target") == 0);
        CHECK(mount_count() == before);
        /* A dangling symlink as the file destination. */
        CHECK(symlink(S "/target/planted", S "/home/alice/dangling") == 0);
        CHECK(apply(L(S "/src/file:" S "/home/alice/dangling"), NULL, NULL, NULL, false, false) == -ELOOP);
        CHECK(!exists(S "/target/planted"));
}

static void case_invalid_entries(void) {
        size_t before = mount_count();
        /* Each list starts with a valid entry: nothing may be mounted or created for it. */
        static const char *const bad_binds[] = {
                "relative:" S "/x", S "/src:relative", S "/src:" S "/x/../y", S "/src:" S "/x/", S "/src:/",
                S "/src:" S "/x:bogus", S "/src:" S "/x:", S "/src:" S "/x:rbind:more", S "/src:" S "/x/%q", "",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_binds); i++) {
                CHECK(apply(L(S "/src:" S "/good", bad_binds[i]), NULL, L(S "/tmpfs-good"), NULL, true, true) == -EINVAL);
                CHECK(!exists(S "/good") && !exists(S "/tmpfs-good") && !exists(S "/x"));
        }
        CHECK(apply(NULL, NULL, L(S "/tmpfs-good", "tmp"), NULL, false, false) == -EINVAL);
        CHECK(apply(NULL, NULL, L(S "/tmpfs-good", "/"), NULL, false, false) == -EINVAL);
        CHECK(apply(NULL, NULL, L(S "/tmpfs-good", S "/t:"), NULL, false, false) == -EINVAL);
        CHECK(apply(NULL, NULL, L(S "/tmpfs-good"), L("-relative"), false, false) == -EINVAL);
        CHECK(apply(NULL, NULL, L(S "/tmpfs-good"), L("/"), false, false) == -EINVAL);
        CHECK(!exists(S "/tmpfs-good"));
        /* A tmpfs option the kernel refuses fails at mount time; what came before is undone. */
        CHECK(apply(NULL, NULL, L(S "/tmpfs-good", S "/tmpfs-bad:bogus=1"), NULL, false, false) < 0);
        CHECK(!exists(S "/tmpfs-good") && !exists(S "/tmpfs-bad"));
        CHECK(mount_count() == before);
        /* A home whose parent is / cannot have its siblings hidden. */
        UserRecord saved = scratch_user;
        scratch_user.home = (char *) "/alice";
        CHECK(apply(NULL, NULL, NULL, NULL, false, true) == -EINVAL);
        scratch_user = saved;
        CHECK(mount_count() == before);
}

static void case_inaccessible(void) {
        struct stat st;
        CHECK(mkdir(S "/secret", 0755) == 0);
        write_file(S "/secret/key", "k\n");
        write_file(S "/secret-file", "top secret\n");
        CHECK(apply(NULL, NULL, NULL, L(S "/secret", S "/secret-file", "-" S "/not-there"), false, false) == 0);
        CHECK(is_mount_point(S "/secret") && is_tmpfs(S "/secret") && is_read_only(S "/secret"));
        CHECK(mode_of(S "/secret") == 0);
        CHECK(count_entries(S "/secret") == 0);
        CHECK(mkdir(S "/secret/x", 0755) < 0 && errno == EROFS);
        CHECK(lstat(S "/secret-file", &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 && (st.st_mode & 07777) == 0);
        CHECK(is_mount_point(S "/secret-file") && is_read_only(S "/secret-file"));
        CHECK(open(S "/secret-file", O_WRONLY | O_CLOEXEC) < 0 && errno == EROFS);
        CHECK(!exists(S "/not-there"));
        /* As another user, even the directory cannot be listed. */
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                if (setgid(2001) < 0 || setuid(2001) < 0)
                        _exit(2);
                _exit(opendir(S "/secret") == NULL && errno == EACCES ? 0 : 1);
        }
        int status;
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        /* Missing without '-': an error. */
        CHECK(apply(NULL, NULL, NULL, L(S "/not-there"), false, false) == -ENOENT);
}

static void case_temporary_file_system(void) {
        CHECK(mkdir(S "/srv", 0755) == 0);
        write_file(S "/srv/old", "old\n");
        CHECK(apply(L(S "/src:" S "/ro-tmp/mnt/inside"), NULL,
                    L(S "/srv", S "/ro-tmp:ro,mode=0700", S "/made/by/tmpfs:size=1M"), NULL, false, false) == 0);
        CHECK(is_tmpfs(S "/srv") && is_mount_point(S "/srv") && count_entries(S "/srv") == 0);
        CHECK(mode_of(S "/srv") == 0755);
        write_file(S "/srv/new", "new\n");
        CHECK(!is_read_only(S "/srv"));
        /* ro is applied last: the bind's mount point could still be made inside */
        CHECK(is_read_only(S "/ro-tmp") && mode_of(S "/ro-tmp") == 0700);
        CHECK(mkdir(S "/ro-tmp/x", 0755) < 0 && errno == EROFS);
        CHECK(exists(S "/ro-tmp/mnt/inside/data"));
        CHECK(!is_read_only(S "/ro-tmp/mnt/inside"));
        struct statfs sf;
        CHECK(statfs(S "/made/by/tmpfs", &sf) == 0 && (uint64_t) sf.f_blocks * sf.f_bsize == 1024 * 1024);
        /* default flags: nosuid, nodev */
        struct statvfs sv;
        CHECK(statvfs(S "/srv", &sv) == 0 && (sv.f_flag & ST_NOSUID) && (sv.f_flag & ST_NODEV));
}

static void case_hide_other_homes(void) {
        CHECK(apply(NULL, NULL, NULL, NULL, false, true) == 0);
        CHECK(is_mount_point(S "/home") && is_tmpfs(S "/home") && is_read_only(S "/home"));
        CHECK(mode_of(S "/home") == 0755);
        CHECK(count_entries(S "/home") == 1);
        CHECK(!exists(S "/home/bob"));
        CHECK(exists(S "/home/alice/own"));
        CHECK(mode_of(S "/home/alice") == 0700);
        CHECK(!is_read_only(S "/home/alice"));
        write_file(S "/home/alice/new", "n\n");
        CHECK(mkdir(S "/home/carol", 0755) < 0 && errno == EROFS);
}

static void case_order_and_specifiers(void) {
        /* Sources are cloned before HideOtherHomes covers them: bob's directory bound into
         * alice's home stays reachable there; DEST with %h, %u. */
        CHECK(apply(L(S "/home/bob:%h/from-bob"), L(S "/src:" S "/by-%u-%U"), NULL, NULL, false, true) == 0);
        CHECK(exists(S "/home/alice/from-bob/secret"));
        CHECK(!exists(S "/home/bob"));
        CHECK(exists(S "/by-alice-2001/data"));
        /* Binds are sorted by destination: the parent first, whatever the list order. */
        CHECK(apply(L(S "/src:" S "/p/q/r"), L(S "/src/sub:" S "/p"), NULL, NULL, false, false) == -EROFS);
        CHECK(!exists(S "/p") && !exists(S "/src/sub/q"));
        CHECK(apply(L(S "/home/alice:" S "/p/sub"), L(S "/src:" S "/p"), NULL, NULL, false, false) == 0);
        CHECK(is_read_only(S "/p") && exists(S "/p/data"));
        CHECK(exists(S "/p/sub/own") && !is_read_only(S "/p/sub"));
}

static void case_shared_destination(void) {
        size_t before;
        /* A shared mount (in this throwaway namespace): mounting below it would propagate. */
        CHECK(mkdir(S "/shared", 0755) == 0);
        CHECK(mount(S "/shared", S "/shared", NULL, MS_BIND, NULL) == 0);
        CHECK(mount(NULL, S "/shared", NULL, MS_SHARED, NULL) == 0);
        before = mount_count();
        CHECK(apply(L(S "/src:" S "/shared/x"), NULL, NULL, NULL, false, false) == -EXDEV);
        CHECK(apply(NULL, NULL, L(S "/shared"), NULL, false, false) == -EXDEV);
        CHECK(apply(NULL, NULL, NULL, L(S "/shared"), false, false) == -EXDEV);
        CHECK(!exists(S "/shared/x"));
        CHECK(mount_count() == before);
}

/* ---- entries a user spoiled ---- */

#define ALICE 2001
#define BOB 2002

static void chown_to(const char *path, uid_t uid) {
        CHECK(lchown(path, uid, uid) == 0);
}

/* alice's home is hers, as on a real machine (enter_scratch() made it root's); a sticky,
 * world-writable S/tmp stands in for /tmp. */
static void make_home_hers(void) {
        chown_to(S "/home/alice", ALICE);
        chown_to(S "/home/alice/own", ALICE);
        CHECK(mkdir(S "/tmp", 01777) == 0 && chmod(S "/tmp", 01777) == 0);
}

/* Whether a process of uid can read anything at path. */
static bool readable_by(const char *path, uid_t uid) {
        pid_t pid = fork();
        int status;

        CHECK(pid >= 0);
        if (pid == 0) {
                char buf[64];
                int fd;
                if (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0)
                        _exit(2);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        _exit(1);
                _exit(read(fd, buf, sizeof buf) >= 0 ? 0 : 1);
        }
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) != 2);
        return WEXITSTATUS(status) == 0;
}

static void case_spoiled_binds_are_skipped(void) {
        struct stat st;

        make_home_hers();
        CHECK(mkdir(S "/secret", 0755) == 0);
        write_file(S "/secret/file", "the secret\n");
        /* her symlink where a bind goes, a '-' source that is her symlink, a file where a
         * directory is expected; the hiding entries must hold all the same */
        CHECK(symlink("/nonexistent", S "/home/alice/scratch") == 0);
        chown_to(S "/home/alice/scratch", ALICE);
        CHECK(symlink(S "/home/bob/secret", S "/home/alice/link") == 0);
        chown_to(S "/home/alice/link", ALICE);
        write_file(S "/home/alice/dir", "a file\n");
        chown_to(S "/home/alice/dir", ALICE);
        CHECK(apply(L("-" S "/src:%h/scratch", S "/src:%h/dir", S "/src:" S "/fine"), L("-%h/link:%h/peek"), NULL,
                    L(S "/secret"), false, true) == 0);
        CHECK(n_notes() == 3);
        CHECK(noted(L("BindPaths=-" S "/src:%h/scratch", "the destination '" S "/home/alice/scratch'", "symbolic link",
                      "belongs to alice (uid 2001)", "skipped")));
        CHECK(noted(L("BindPaths=" S "/src:%h/dir", "'" S "/home/alice/dir'", "where a directory is expected", "skipped")));
        CHECK(noted(L("BindReadOnlyPaths=-%h/link:%h/peek", "the source '" S "/home/alice/link'", "skipped")));
        /* her things are as she left them, nothing bound through them */
        CHECK(lstat(S "/home/alice/scratch", &st) == 0 && S_ISLNK(st.st_mode) && !is_mount_point(S "/home/alice/scratch"));
        CHECK(!is_mount_point(S "/home/alice/dir") && !exists(S "/home/alice/peek"));
        CHECK(!exists("/nonexistent"));
        /* the rest of the policy holds */
        CHECK(is_mount_point(S "/fine") && exists(S "/fine/data"));
        CHECK(!exists(S "/home/bob") && count_entries(S "/home") == 1);
        CHECK(!readable_by(S "/secret/file", ALICE) && count_entries(S "/secret") == 0);
}

static void case_spoiled_hiding_entries_fail_closed(void) {
        make_home_hers();
        /* InaccessiblePaths= and TemporaryFileSystem= paths that are her symlinks, at the end
         * and on the way; a file where TemporaryFileSystem= wants a directory */
        CHECK(mkdir(S "/home/alice/real", 0700) == 0);
        write_file(S "/home/alice/real/private", "private\n");
        chown_to(S "/home/alice/real", ALICE);
        chown_to(S "/home/alice/real/private", ALICE);
        CHECK(symlink("real", S "/home/alice/private") == 0);
        chown_to(S "/home/alice/private", ALICE);
        CHECK(symlink(S "/src", S "/home/alice/cache") == 0);
        chown_to(S "/home/alice/cache", ALICE);
        CHECK(symlink("real", S "/home/alice/via") == 0);
        chown_to(S "/home/alice/via", ALICE);
        write_file(S "/home/alice/flat", "her file\n");
        chown_to(S "/home/alice/flat", ALICE);
        CHECK(apply(NULL, NULL, L("%h/cache", "%h/flat"), L("%h/private", "%h/via/private", "%h/gone"), false, true) == 0);
        CHECK(n_notes() == 5);
        CHECK(noted(L("InaccessiblePaths=%h/private", "covered '" S "/home/alice/private'")));
        CHECK(noted(L("InaccessiblePaths=%h/via/private", "covered '" S "/home/alice/via'")));
        CHECK(noted(L("InaccessiblePaths=%h/gone", "does not exist", "nothing is there to hide")));
        CHECK(noted(L("TemporaryFileSystem=%h/cache", "covered '" S "/home/alice/cache'")));
        CHECK(noted(L("TemporaryFileSystem=%h/flat", "covered '" S "/home/alice/flat'")));
        /* never open: nothing at those paths can be read, not through her links */
        CHECK(!readable_by(S "/home/alice/private/private", ALICE));
        CHECK(!readable_by(S "/home/alice/via/private", ALICE));
        CHECK(!readable_by(S "/home/alice/cache/data", ALICE) && !exists(S "/home/alice/cache/data"));
        /* her link to root's directory was never followed: nothing mounted over its target */
        CHECK(!is_mount_point(S "/src") && exists(S "/src/data") && !is_mount_point(S "/home/alice/real"));
        CHECK(!readable_by(S "/home/alice/flat", ALICE));
        CHECK(is_mount_point(S "/home/alice/private") && is_read_only(S "/home/alice/private"));
        /* what she may read anyway stays readable where it is */
        CHECK(readable_by(S "/home/alice/real/private", ALICE));
        CHECK(count_entries(S "/home") == 1);
}

static void case_another_users_path_in_tmp(void) {
        make_home_hers();
        /* bob's symlink at alice's /tmp/scratch-alice (he came first), to his directory; and
         * his directory where her source is expected */
        CHECK(mkdir(S "/bobs", 0755) == 0);
        write_file(S "/bobs/planted", "bob's\n");
        CHECK(symlink(S "/bobs", S "/tmp/scratch-alice") == 0);
        chown_to(S "/tmp/scratch-alice", BOB);
        CHECK(mkdir(S "/tmp/source-alice", 0755) == 0);
        write_file(S "/tmp/source-alice/planted", "bob's\n");
        chown_to(S "/tmp/source-alice", BOB);
        CHECK(symlink(S "/bobs", S "/tmp/hide-alice") == 0);
        chown_to(S "/tmp/hide-alice", BOB);
        CHECK(apply(L(S "/src:" S "/tmp/scratch-%u", S "/tmp/source-%u:%h/source", S "/tmp/missing-%u:%h/missing"),
                    NULL, NULL, L(S "/tmp/hide-%u"), false, true) == 0);
        CHECK(n_notes() == 4);
        CHECK(noted(L("'" S "/tmp' can be written by anybody, and 'scratch-alice' in it belongs to uid 2002", "skipped")));
        CHECK(noted(L("the source '" S "/tmp/source-alice' belongs to uid 2002, neither root nor alice", "skipped")));
        CHECK(noted(L("BindPaths=" S "/tmp/missing-%u:%h/missing", "has no 'missing-alice' yet", "skipped")));
        CHECK(noted(L("InaccessiblePaths=" S "/tmp/hide-%u", "covered '" S "/tmp/hide-alice'")));
        CHECK(!is_mount_point(S "/bobs") && count_entries(S "/bobs") == 1);
        CHECK(!exists(S "/home/alice/source") && !exists(S "/home/alice/missing"));
        CHECK(!readable_by(S "/tmp/hide-alice/planted", ALICE));
        CHECK(count_entries(S "/home") == 1);
}

static void case_root_errors_still_fail(void) {
        size_t before;

        make_home_hers();
        before = mount_count();
        /* root's own directories: a missing source, root's symlink where a bind goes, a file
         * where a directory is expected; the view fails as before, nothing is left */
        CHECK(apply(L(S "/missing:%h/x"), NULL, NULL, NULL, false, true) == -ENOENT);
        CHECK(symlink(S "/src", S "/root-link") == 0);
        CHECK(apply(L(S "/src:" S "/root-link/x"), NULL, NULL, NULL, false, true) == -ELOOP);
        CHECK(apply(NULL, NULL, L(S "/src/file"), NULL, false, true) == -ENOTDIR);
        CHECK(apply(NULL, NULL, NULL, L(S "/missing"), false, true) == -ENOENT);
        /* a root-owned name in the sticky directory is root's */
        CHECK(mkdir(S "/tmp/roots", 0755) == 0);
        CHECK(apply(L(S "/tmp/roots/missing:%h/x"), NULL, NULL, NULL, false, true) == -ENOENT);
        CHECK(mount_count() == before && !exists(S "/home/alice/x"));
}

static void case_warnings(void) {
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

        make_home_hers();
        CHECK(mkdir(S "/tmp/scratch-alice", 0755) == 0);
        chown_to(S "/tmp/scratch-alice", ALICE);
        CHECK(mkdir(S "/tmp/source-alice", 0755) == 0);
        chown_to(S "/tmp/source-alice", BOB);
        CHECK(mkdir(S "/group", 0775) == 0 && chmod(S "/group", 0775) == 0);
        CHECK(chown(S "/group", 0, 2100) == 0);
        char *binds[] = { (char *) S "/tmp/scratch-%u:%h/scratch", (char *) S "/tmp/source-%u:" S "/srv-like", NULL };
        char *tmpfs[] = { (char *) "%h/cache", (char *) S "/group/x", NULL };
        char *inaccessible[] = { (char *) S "/src/file", NULL };
        ViewPolicy p = { .bind_paths = binds, .temporary_file_system = tmpfs, .inaccessible_paths = inaccessible };

        CHECK(root >= 0);
        CHECK(view_policy_warnings(&p, &scratch_user, root, &warnings) == 0);
        for (char **w = warnings; w && *w; w++)
                printf("# warning: %s\n", *w);
        /* /tmp/scratch-alice is hers today, but anybody may take the name after a reboot */
        CHECK(warned(warnings, L("the source '" S "/tmp/scratch-alice'", "'" S "/tmp' can be written by anybody")));
        CHECK(warned(warnings, L("the source '" S "/tmp/source-alice' belongs to uid 2002, neither root nor alice")));
        CHECK(warned(warnings, L("TemporaryFileSystem=" S "/group/x", "members of group 2100")));
        /* her own home and root's directories are no warning */
        CHECK(!warned(warnings, L("%h/cache")) && !warned(warnings, L("InaccessiblePaths")) &&
              !warned(warnings, L("the destination '" S "/home/alice/scratch'")) && !warned(warnings, L("the destination '" S "/srv-like'")));
        CHECK(strv_length(warnings) == 4);
        /* nothing was made, nothing mounted */
        CHECK(!exists(S "/home/alice/scratch") && !exists(S "/srv-like"));
        /* a malformed entry: -EINVAL, as view_policy_check() */
        char *bad[] = { (char *) "relative", NULL };
        CHECK(view_policy_warnings(&(ViewPolicy) { .bind_paths = bad }, &scratch_user, root, &warnings) == -EINVAL);
}

/* An access ACL set as the kernel stores it (what setfacl does): entries in the kernel's
 * order, USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER. */
#define NOBODY_UID 3999999      /* ids no NSS of a test machine knows: printed as numbers */
#define NOBODY_GID 3999998
static void set_acl(const char *path, const struct posix_acl_xattr_entry *e, size_t n) {
        char buf[sizeof(struct posix_acl_xattr_header) + 8 * sizeof(struct posix_acl_xattr_entry)];
        struct posix_acl_xattr_header h = { .a_version = htole32(POSIX_ACL_XATTR_VERSION) };

        CHECK(n <= 8);
        memcpy(buf, &h, sizeof h);
        for (size_t i = 0; i < n; i++) {
                struct posix_acl_xattr_entry x = { htole16(e[i].e_tag), htole16(e[i].e_perm), htole32(e[i].e_id) };
                memcpy(buf + sizeof h + i * sizeof x, &x, sizeof x);
        }
        CHECK(setxattr(path, "system.posix_acl_access", buf, sizeof h + n * sizeof(struct posix_acl_xattr_entry), 0) == 0);
}
#define E(tag, perm, id) { ACL_##tag, perm, id }

static void case_acl_warnings(void) {
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        const uint32_t none = ACL_UNDEFINED_ID;

        for (const char *d = "user\0masked\0groupobj\0group\0"; *d; d += strlen(d) + 1) {
                char path[64];
                snprintf(path, sizeof path, S "/acl-%s", d);
                CHECK(mkdir(path, 0755) == 0 && chmod(path, 0755) == 0);
        }
        CHECK(chown(S "/acl-groupobj", 0, NOBODY_GID) == 0);
        set_acl(S "/acl-user", (struct posix_acl_xattr_entry[]) { E(USER_OBJ, 7, none), E(USER, 7, NOBODY_UID),
                E(GROUP_OBJ, 5, none), E(MASK, 7, none), E(OTHER, 5, none) }, 5);
        set_acl(S "/acl-masked", (struct posix_acl_xattr_entry[]) { E(USER_OBJ, 7, none), E(USER, 7, NOBODY_UID),
                E(GROUP_OBJ, 5, none), E(MASK, 5, none), E(OTHER, 5, none) }, 5);
        /* The mode's group bits show the mask (rwx); the owning group's own entry is r-x. */
        set_acl(S "/acl-groupobj", (struct posix_acl_xattr_entry[]) { E(USER_OBJ, 7, none), E(USER, 5, NOBODY_UID),
                E(GROUP_OBJ, 5, none), E(MASK, 7, none), E(OTHER, 5, none) }, 5);
        set_acl(S "/acl-group", (struct posix_acl_xattr_entry[]) { E(USER_OBJ, 7, none), E(GROUP_OBJ, 5, none),
                E(GROUP, 6, NOBODY_GID), E(MASK, 7, none), E(OTHER, 5, none) }, 5);
        CHECK(mode_of(S "/acl-groupobj") == 0775);

        char *inaccessible[] = { (char *) S "/acl-user/x", (char *) S "/acl-masked/x", (char *) S "/acl-groupobj/x",
                                 (char *) S "/acl-group/x", NULL };
        ViewPolicy p = { .inaccessible_paths = inaccessible };
        CHECK(root >= 0);
        CHECK(view_policy_warnings(&p, &scratch_user, root, &warnings) == 0);
        for (char **w = warnings; w && *w; w++)
                printf("# warning: %s\n", *w);
        CHECK(warned(warnings, L("InaccessiblePaths=" S "/acl-user/x", "'" S "/acl-user' can be written by the ACL entry user:3999999:rwx")));
        CHECK(warned(warnings, L("InaccessiblePaths=" S "/acl-group/x", "'" S "/acl-group' can be written by the ACL entry group:3999998:rw-")));
        CHECK(!warned(warnings, L("acl-masked")) && !warned(warnings, L("acl-groupobj")));
        CHECK(strv_length(warnings) == 2);
}

static void case_private_tmp(void) {
        ViewPolicy p = { .private_tmp = true, .tmp_size = 2 * 1024 * 1024 };
        struct statfs sf;

        write_file("/tmp/host-file", "h\n");
        write_file("/var/tmp/host-file", "h\n");
        CHECK(policy_apply(&p) == 0);
        CHECK(!exists("/tmp/host-file") && !exists("/var/tmp/host-file"));
        CHECK(count_entries("/tmp") == 0 && count_entries("/var/tmp") == 0);
        CHECK(mode_of("/tmp") == 01777 && mode_of("/var/tmp") == 01777);
        CHECK(statfs("/tmp", &sf) == 0 && (uint64_t) sf.f_blocks * sf.f_bsize == 2 * 1024 * 1024);
        write_file("/tmp/mine", "m\n");
        CHECK(!exists("/var/tmp/mine"));
}

static void case_empty_policy(void) {
        ViewPolicy p = {};
        size_t before = mount_count();
        CHECK(policy_apply(&p) == 0);
        CHECK(mount_count() == before);
}

static int run_mounts(void) {
        if (geteuid() != 0) {
                printf("1..0 # SKIP the mount tests need root\n");
                return 77;
        }
        run_case("empty policy changes nothing", case_empty_policy);
        run_case("BindReadOnlyPaths makes a read-only bind, creating DEST", case_bind_read_only);
        run_case("BindPaths rbind/norbind, writable", case_bind_rw_rbind_norbind);
        run_case("BindPaths of a file; DEST defaults to SOURCE", case_bind_file_and_default_dest);
        run_case("'-' ignores a missing source", case_bind_missing_source);
        run_case("a symlink in DEST is -ELOOP, nothing created at its target, earlier entries undone", case_symlink_in_dest);
        run_case("invalid entries are -EINVAL before anything is mounted", case_invalid_entries);
        run_case("InaccessiblePaths hides directories and files", case_inaccessible);
        run_case("TemporaryFileSystem gives empty tmpfs, ro applied last", case_temporary_file_system);
        run_case("HideOtherHomes leaves only the user's home", case_hide_other_homes);
        run_case("sources cloned first, binds sorted, specifiers expanded", case_order_and_specifiers);
        run_case("destinations on a shared mount are refused (-EXDEV)", case_shared_destination);
        run_case("PrivateTmp gives fresh /tmp and /var/tmp", case_private_tmp);
        run_case("binds a user spoiled are skipped, noted; the rest holds", case_spoiled_binds_are_skipped);
        run_case("hiding entries a user spoiled cover what they can (closed, never open)", case_spoiled_hiding_entries_fail_closed);
        run_case("another user's name in a sticky directory spoils only that entry", case_another_users_path_in_tmp);
        run_case("failures in root's directories still fail the policy", case_root_errors_still_fail);
        run_case("view_policy_warnings() names paths others may change, changes nothing", case_warnings);
        run_case("write by POSIX ACL entries, under the mask, is someone else's", case_acl_warnings);
        return 0;
}

int main(int argc, char *argv[]) {
        const char *what = argc > 1 ? argv[1] : "specifiers";
        int r = 0;

        log_set_max_level(getenv("NSM_TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
        if (streq(what, "specifiers")) {
                test_specifiers();
                test_check();
        }
        else if (streq(what, "mounts"))
                r = run_mounts();
        else {
                fprintf(stderr, "Usage: %s [specifiers|mounts]\n", argv[0]);
                return 2;
        }
        if (r == 77)
                return 77;
        return tap_finish();
}
