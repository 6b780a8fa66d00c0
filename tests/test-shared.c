/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the pure parts of src/shared and the daemon's string tables. TAP output. */
#include <stdarg.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "login-rule.h"
#include "manager-config.h"
#include "parse-util.h"
#include "strv.h"
#include "tap.h"
#include "fs-util.h"
#include "hashmap.h"
#include "mount-util.h"
#include "namespace-session.h"
#include "namespace-state.h"
#include "namespace.h"
#include "path-util.h"
#include "process-util.h"
#include "user-util.h"
#include "login-filter.h"
#include "view-build.h"
#include "view-ops.h"


static void test_paths(void) {
        static const char *good[] = { "/", "/mnt", "/a/b/c", "/a.b/..c/c..", "/with space" };
        static const char *bad[] = { "", "mnt", "./mnt", "/mnt/", "//mnt", "/a//b", "/a/./b", "/a/../b", "/..", "/.", "/a/.." };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                check(path_is_absolute_normalized(good[i]), "path '%s' is absolute and normalized", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                check(!path_is_absolute_normalized(bad[i]), "path '%s' is refused", bad[i]);
        check(streq(path_skip_root("///a/b"), "a/b"), "path_skip_root strips leading slashes");
        check(filename_is_valid("alice") && !filename_is_valid("..") && !filename_is_valid("a/b") && !filename_is_valid(""),
              "filename_is_valid");
}

static void test_user_names(void) {
        static const char *good[] = { "alice", "bob-2", "_svc", "a.b", "machine$", "A" };
        static const char *bad[] = { "", "../x", "a/b", "-x", "1abc", "a b", "a:b", "a$b", "averyveryveryveryveryverylongname1" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                check(valid_user_name(good[i]), "user name '%s' is valid", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                check(!valid_user_name(bad[i]), "user name '%s' is refused", bad[i]);
}

static void test_tables(void) {
        for (int i = 0; i < _PROPAGATION_MODE_MAX; i++)
                check(propagation_mode_from_string(propagation_mode_to_string(i)) == (PropagationMode) i,
                      "propagation mode %d round-trips", i);
        check(propagation_mode_from_string("rshared") == _PROPAGATION_MODE_INVALID, "'rshared' is not a mode");
        check(propagation_mode_to_string(_PROPAGATION_MODE_MAX) == NULL, "out-of-range mode has no name");
        for (int i = 0; i < _VIEW_PROPAGATION_MAX; i++)
                check(view_propagation_from_string(view_propagation_to_string(i)) == (ViewPropagation) i,
                      "view propagation %d round-trips", i);
        check(view_propagation_from_string("unbindable") == _VIEW_PROPAGATION_INVALID, "'unbindable' is no ViewPropagation");
        for (int i = 0; i < _NAMESPACE_STATE_MAX; i++)
                check(namespace_state_from_string(namespace_state_to_string(i)) == (NamespaceState) i,
                      "namespace state %d round-trips", i);
        for (int i = 0; i < _VIEW_STAGE_MAX; i++)
                check(view_stage_from_string(view_stage_to_string(i)) == (ViewStage) i, "view stage %d round-trips", i);
        for (int i = 0; i < _VIEW_OP_TYPE_MAX; i++)
                check(view_op_type_from_string(view_op_type_to_string(i)) == (ViewOpType) i, "view op %d round-trips", i);
        check(view_op_type_to_string(_VIEW_OP_TYPE_MAX) == NULL && view_op_type_from_string(NULL) < 0,
              "out of range and NULL have no entry");
}

static void test_escape_words(void) {
        static const char *words[] = { "/home/alice", "/with space/and\ttab", "/back\\slash", "/new\nline",
                                       "/\xc3\xa4\xc3\xb6", "" };
        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                _cleanup_free_ char *e = escape_word(words[i]), *u = NULL;
                check(e && !strpbrk(e, " \t\n") && unescape_word(e, &u) == 0 && streq(u, words[i]),
                      "escape/unescape round-trips word %zu as '%s'", i, e ?: "(null)");
        }
        _cleanup_free_ char *u = NULL;
        check(unescape_word("\\x0", &u) < 0 && unescape_word("\\q", &u) < 0 && unescape_word("\\x00", &u) < 0,
              "malformed escapes and NUL are refused");
}

static void test_login_filter(void) {
        _cleanup_(login_filter_done) LoginFilter f = {};
        const char *text = "# comment\nMIN_UID=1000\nEXCLUDE_USERS=dave 2005\nFUTURE=ignored\n";
        FILE *in = fmemopen((void *) text, strlen(text), "r");

        check(in && login_filter_parse(in, &f) == 0, "the login filter parses");
        if (in)
                fclose(in);
        check(login_filter_excludes(&f, "root", 0) && login_filter_excludes(&f, "svc", 500), "root and system users are excluded");
        check(login_filter_excludes(&f, "dave", 2004) && login_filter_excludes(&f, "eve", 2005), "by name and by uid");
        check(!login_filter_excludes(&f, "alice", 2001), "others are not");
        in = fmemopen((void *) "EXCLUDE_USERS=x\n", 16, "r");
        LoginFilter g = {};
        check(in && login_filter_parse(in, &g) == -EINVAL, "a filter without MIN_UID says nothing");
        if (in)
                fclose(in);

        /* What the daemon writes, read back. */
        _cleanup_(login_filter_done) LoginFilter w = {}, r = {};
        _cleanup_free_ char *written = NULL;
        char *users[] = { (char *) "dave", NULL };
        ViewEffect groups[] = { { .name = (char *) "students", .effect = "--y---" } };
        ViewEffect people[] = { { .name = (char *) "bob", .effect = "n-n---" } };
        w = (LoginFilter) { .min_uid = 1000, .exclude_users = users, .login_without_view = LOGIN_WITHOUT_VIEW_RESTRICTED,
                            .view_main = "y-y---", .view_groups = groups, .n_view_groups = 1, .view_users = people,
                            .n_view_users = 1 };
        check(login_filter_format(&w, &written) == 0 && (in = fmemopen(written, strlen(written), "r")) &&
              login_filter_parse(in, &r) == 0 && r.min_uid == 1000 && login_filter_excludes(&r, "dave", 2004) &&
              r.login_without_view == LOGIN_WITHOUT_VIEW_RESTRICTED && streq(r.view_main, "y-y---") &&
              r.n_view_groups == 1 && streq(r.view_groups[0].name, "students") &&
              streq(r.view_groups[0].effect, "--y---") && r.n_view_users == 1 && streq(r.view_users[0].effect, "n-n---"),
              "the filter the daemon writes reads back");
        if (in)
                fclose(in);
        w = (LoginFilter) {};   /* nothing of it was allocated */
}

/* LoginWithoutView= as the module applies it: the effective policy, file by file. */
static void test_login_without_view(void) {
        char *none[] = { NULL }, *students[] = { (char *) "alice", (char *) "students", NULL };
        ViewEffect groups[] = { { .name = (char *) "students", .effect = "----y-" },
                                { .name = (char *) "staff", .effect = "n-----" } };
        ViewEffect people[] = { { .name = (char *) "bob", .effect = "n-----" },
                                { .name = (char *) "carol", .effect = "---y--" } };
        LoginFilter f = { .min_uid = 1000, .login_without_view = _LOGIN_WITHOUT_VIEW_INVALID, .view_main = "------" };

        check(login_filter_allows_without_view(NULL, "alice", none, true), "none ever published: allow");
        check(login_filter_allows_without_view(&f, "alice", none, true), "a filter that does not say: allow");
        f.login_without_view = LOGIN_WITHOUT_VIEW_ALLOW;
        strcpy(f.view_main, "yyyyyy");
        check(login_filter_allows_without_view(&f, "alice", none, true), "allow allows whatever the policy");
        f.login_without_view = LOGIN_WITHOUT_VIEW_DENY;
        strcpy(f.view_main, "------");
        check(!login_filter_allows_without_view(&f, "alice", none, true), "deny denies without any policy");

        f.login_without_view = LOGIN_WITHOUT_VIEW_RESTRICTED;
        check(login_filter_allows_without_view(&f, "alice", none, true), "restricted: no policy, allowed");
        check(login_filter_allows_without_view(&f, NULL, NULL, false), "restricted: nobody has one, whoever it is");
        strcpy(f.view_main, "y-----");
        check(!login_filter_allows_without_view(&f, "alice", none, true), "restricted: the main file's policy is everybody's");
        f.view_users = people;
        f.n_view_users = 2;
        check(login_filter_allows_without_view(&f, "bob", none, true), "a user.d file that resets it all: allowed");
        check(!login_filter_allows_without_view(&f, "carol", none, true), "a user.d file that adds: denied");
        check(!login_filter_allows_without_view(&f, NULL, NULL, true), "an unknown user may have a file that resets it: denied");
        strcpy(f.view_main, "------");
        check(!login_filter_allows_without_view(&f, "carol", none, true), "her own file's policy");
        check(login_filter_allows_without_view(&f, "alice", none, true), "no file of hers, no main policy: allowed");
        f.view_groups = groups;
        f.n_view_groups = 2;
        check(login_filter_needs_groups(&f), "group files: the groups are needed");
        check(!login_filter_allows_without_view(&f, "alice", students, true), "a group's policy");
        check(!login_filter_allows_without_view(&f, "alice", none, false), "groups unknown where groups have files: denied");
        check(login_filter_allows_without_view(&f, "alice", (char *[]) { (char *) "staff", NULL }, true),
              "a group file that only resets: allowed");
        strcpy(f.view_main, "y-----");
        check(login_filter_allows_without_view(&f, "alice", (char *[]) { (char *) "staff", NULL }, true),
              "a group that resets the main policy, nothing else set: allowed");
        check(!login_filter_allows_without_view(&f, "alice", (char *[]) { (char *) "staff", (char *) "students", NULL }, true),
              "and another that adds: denied");
        f.view_groups = NULL;
        f.n_view_groups = 0;
        check(!login_filter_needs_groups(&f), "no group files: the groups are not needed");
        f.view_users = NULL;
        f.n_view_users = 0;

        const char *bad[] = { "MIN_UID=1000\nLOGIN_WITHOUT_VIEW=maybe\n", "MIN_UID=1000\nVIEW_MAIN=yy\n",
                              "MIN_UID=1000\nVIEW_USER=bob\n", "MIN_UID=1000\nVIEW_GROUP= y-----\n",
                              "MIN_UID=1000\nVIEW_USER=bob x-----\n" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                LoginFilter g = {};
                FILE *in = fmemopen((void *) bad[i], strlen(bad[i]), "r");
                check(in && login_filter_parse(in, &g) == -EINVAL, "a malformed rule is refused");
                if (in)
                        fclose(in);
        }
}

static void test_mount_ids(void) {
        MountId a = { .unique = 0x10000001, .old = 40 }, b = { .unique = 0x10000002, .old = 40 }, c = { .old = 40 };
        check(!mount_id_equal(a, b), "unique ids decide where both have one (old ids are reused)");
        check(mount_id_equal(a, c) && mount_id_equal(c, b), "old ids where one side has no unique id");
        check(!mount_id_equal((MountId) {}, (MountId) {}), "no id equals nothing");
        check(mount_id_in(b, (MountId[]) { a, b }, 2) && !mount_id_in(b, &a, 1), "mount_id_in");
}

static void test_parsers(void) {
        uint64_t u;
        check(parse_sec("10s", &u) == 0 && u == 10 * USEC_PER_SEC, "parse_sec 10s");
        check(parse_sec("500ms", &u) == 0 && u == 500 * USEC_PER_MSEC, "parse_sec 500ms");
        check(parse_sec("1min 30s", &u) == 0 && u == 90 * USEC_PER_SEC, "parse_sec '1min 30s'");
        check(parse_sec("3", &u) == 0 && u == 3 * USEC_PER_SEC, "parse_sec plain number is seconds");
        check(parse_sec("infinity", &u) == 0 && u == UINT64_MAX, "parse_sec infinity");
        check(parse_sec("10 parsecs", &u) < 0 && parse_sec("", &u) < 0 && parse_sec("-1s", &u) < 0, "parse_sec refuses garbage");
        check(parse_size("64M", &u) == 0 && u == 64 << 20, "parse_size 64M");
        check(parse_size("50%", &u) < 0, "parse_size refuses percentages");
        check(parse_boolean("yes") == 1 && parse_boolean("off") == 0 && parse_boolean("maybe") < 0, "parse_boolean");
}

static int write_file(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        if (!f)
                return -errno;
        fputs(content, f);
        return fclose(f) == 0 ? 0 : -errno;
}

/* Loads path (an explicit file: it must exist); 0 or the first error, every error in *errors. */
static int load(const char *path, ManagerConfig *c, char ***errors) {
        manager_config_init(c);
        *errors = strv_free(*errors);
        return manager_config_load(path, c, errors);
}

/* The configuration with this main file is refused, with an error that contains 'want'. */
static void check_refused(const char *path, const char *text, const char *want) {
        char **errors = NULL;
        ManagerConfig c;
        int r;

        write_file(path, text);
        r = load(path, &c, &errors);
        check(r == -EINVAL && strv_length(errors) >= 1 && strstr(errors[0], want), "refused: %s (%s)",
              want, errors ? errors[0] : "accepted");
        manager_config_done(&c);
        strv_free(errors);
}

static void test_config_files(void) {
        /* Under the build directory (meson sets NSM_TEST_TMPDIR), never the machine's /tmp. */
        const char *base = getenv("NSM_TEST_TMPDIR") ?: ".";
        char dir[256], path[300], sub[400];
        ManagerConfig c;
        ViewPolicy p = {};
        char **errors = NULL;
        int r;

        snprintf(dir, sizeof dir, "%s/nsm-test-conf.XXXXXX", base);
        if (!mkdtemp(dir)) {
                check(false, "mkdtemp");
                return;
        }
        snprintf(path, sizeof path, "%s/nsmanagerd.conf", dir);

        /* A file named explicitly must exist (nsmanagerd --config=FILE). */
        r = load(path, &c, &errors);
        check(r == -ENOENT && strv_length(errors) == 1 && strstr(errors[0], "nsmanagerd.conf: "),
              "a missing explicit file is an error naming it (%s)", errors ? errors[0] : "(none)");
        manager_config_done(&c);

        /* Defaults when the file is empty. */
        write_file(path, "");
        check(load(path, &c, &errors) == 0 && !errors, "an empty file is fine");
        check(streq(c.subtree_root, "/subtree") && streq(c.state_directory, "/run/nsmanager") &&
              c.min_uid == 1000 && c.stop_delay_usec == 10 * USEC_PER_SEC &&
              c.view_propagation == VIEW_PROPAGATION_SLAVE && strv_length(c.shared_subtrees) == 1 &&
              streq(c.shared_subtrees[0], "/mnt") && strv_length(c.exclude_users) == 0,
              "defaults match the contract");
        manager_config_done(&c);

        write_file(path, "# comment\n[Manager]\nSubtreeRoot=/srv/views\nSharedSubtrees=/media\nStopDelaySec=2s\n"
                         "MinUID=500\nExcludeUsers=bob carol\nViewPropagation=private\n[View]\nPrivateTmp=yes\n"
                         "BindPaths=/a\nTmpSize=\n");
        snprintf(sub, sizeof sub, "%s.d", path);
        mkdir(sub, 0755);
        snprintf(sub, sizeof sub, "%s.d/50-more.conf", path);
        write_file(sub, "[Manager]\nSharedSubtrees=/run/media\nExcludeUsers=\nExcludeUsers=dave\n[View]\nBindPaths=\nBindPaths=/b /c\n");
        snprintf(sub, sizeof sub, "%s.d/10-first.conf", path);
        write_file(sub, "[Manager]\nMinUID=600\n");
        snprintf(sub, sizeof sub, "%s.d/ignored.txt", path);
        write_file(sub, "[Manager]\nMinUID=700\n");

        check(load(path, &c, &errors) == 0, "config with drop-ins loads");
        check(streq(c.subtree_root, "/srv/views"), "SubtreeRoot= read");
        check(strv_length(c.shared_subtrees) == 3 && streq(c.shared_subtrees[1], "/media") &&
              streq(c.shared_subtrees[2], "/run/media"), "SharedSubtrees= accumulates over drop-ins");
        check(strv_length(c.exclude_users) == 1 && streq(c.exclude_users[0], "dave"), "an empty assignment resets a list");
        check(c.min_uid == 600, "drop-ins apply in lexical order, non-.conf files ignored");
        check(c.stop_delay_usec == 2 * USEC_PER_SEC && c.view_propagation == VIEW_PROPAGATION_PRIVATE, "StopDelaySec=, ViewPropagation=");
        char **with_files = NULL;
        check(view_policy_groups_with_files(&c, &with_files) == 0 && !with_files, "no group.d: no group has a policy");
        manager_config_done(&c);

        snprintf(sub, sizeof sub, "%s/group.d", dir);
        mkdir(sub, 0755);
        snprintf(sub, sizeof sub, "%s/user.d", dir);
        mkdir(sub, 0755);
        check(load(path, &c, &errors) == 0 && view_policy_groups_with_files(&c, &with_files) == 0 && !with_files,
              "an empty group.d: none either");
        manager_config_done(&c);
        snprintf(sub, sizeof sub, "%s/group.d/staff.conf", dir);
        write_file(sub, "[View]\nBindReadOnlyPaths=/srv/project:/project\nHideOtherHomes=yes\n");
        snprintf(sub, sizeof sub, "%s/group.d/notes.txt", dir);
        write_file(sub, "[View]\nPrivateTmp=yes\n");
        snprintf(sub, sizeof sub, "%s/user.d/alice.conf", dir);
        write_file(sub, "[View]\nPrivateTmp=no\nTmpSize=64M\nInaccessiblePaths=-/secret\n");
        check(load(path, &c, &errors) == 0, "config with group.d and user.d loads");
        check(view_policy_groups_with_files(&c, &with_files) == 0 && strv_length(with_files) == 1 &&
              streq(with_files[0], "staff"), "group.d/staff.conf: staff has a policy, notes.txt is no policy");
        strv_free(with_files);
        char *groups[] = { "staff", "../../etc", NULL };
        check(view_policy_load(&c, "alice", groups, &p) == 0, "view policy loads");
        check(!p.private_tmp && p.tmp_size == 64 << 20, "user.d overrides the main file");
        check(strv_length(p.bind_paths) == 2 && streq(p.bind_paths[0], "/b"), "[View] lists reset and accumulate");
        check(strv_length(p.bind_read_only_paths) == 1 && p.hide_other_homes, "group.d applies");
        check(strv_length(p.inaccessible_paths) == 1 && streq(p.inaccessible_paths[0], "-/secret"), "InaccessiblePaths=");
        view_policy_done(&p);

        /* The policy in force is what was read: editing a file afterwards changes nothing until
         * the next load (a reload takes all files, or none). */
        write_file(sub, "[View]\nPrivateTmp=maybe\n");
        check(view_policy_load(&c, "alice", NULL, &p) == 0 && !p.private_tmp && p.tmp_size == 64 << 20,
              "a policy composes from what was loaded, not from the files as they are now");
        view_policy_done(&p);
        check(view_policy_load(&c, "bob", NULL, &p) == 0 && p.private_tmp && strv_length(p.bind_paths) == 2,
              "a user without user.d file gets the main file's policy");
        view_policy_done(&p);
        manager_config_done(&c);

        /* A broken user.d file is found when the configuration is loaded, with file and line. */
        r = load(path, &c, &errors);
        check(r == -EINVAL && strv_length(errors) == 1 && strstr(errors[0], "user.d/alice.conf:2: ") &&
              strstr(errors[0], "'maybe' is not a boolean"), "a bad value in user.d is refused at load (%s)",
              errors ? errors[0] : "(none)");
        manager_config_done(&c);
        write_file(sub, "[View]\nHideOtherHome=yes\n[Manager]\nMinUID=1\nPrivateTmp=maybe\n");
        r = load(path, &c, &errors);
        check(r == -EINVAL && strv_length(errors) == 2 &&
              strstr(errors[0], "alice.conf:2: unknown setting HideOtherHome= in [View] (did you mean HideOtherHomes=?)") &&
              strstr(errors[1], "alice.conf:3: section [Manager] does not belong in this file"),
              "every error of a file is reported: %s | %s", errors && errors[0] ? errors[0] : "", errors && errors[0] ? errors[1] ?: "" : "");
        manager_config_done(&c);
        check(manager_config_check_file(sub, &errors) == -EINVAL, "one user.d file checked alone");
        unlink(sub);
        strv_free(errors), errors = NULL;

        /* Errors name file and line. */
        check_refused(path, "[Manager]\nMinUID=12\nSubtreeRoot=relative/path\n", "nsmanagerd.conf:3: ");
        check_refused(path, "[Manager]\nViewPropagation=sideways\n", "'sideways' is not one of slave, private, shared");
        check_refused(path, "MinUID=1\n", "nsmanagerd.conf:1: assignment outside of a section");
        /* Typos are errors, never ignored: a misspelt setting would switch a policy off. */
        check_refused(path, "[Manager]\nStopDelay=5s\n", "nsmanagerd.conf:2: unknown setting StopDelay= in [Manager] (did you mean StopDelaySec=?)");
        check_refused(path, "[manager]\nMinUID=1\n", "nsmanagerd.conf:1: unknown section [manager] (names are case-sensitive: [Manager])");
        check_refused(path, "[Elsewhere]\nX=1\n", "unknown section [Elsewhere]");
        check_refused(path, "[Manager]\nThisIsNoKey=1\n", "unknown setting ThisIsNoKey= in [Manager]");
        check_refused(path, "[Manager]\nPrivateTmp=yes\n", "PrivateTmp= belongs in [View], not in [Manager]");
        /* [View] values are checked when read, not when a view is built. */
        check_refused(path, "[View]\nPrivateTmp=maybe\n", "nsmanagerd.conf:2: 'maybe' is not a boolean");
        check_refused(path, "[View]\nBindPaths=relative/path:/x\n", "the source is not an absolute");
        check_refused(path, "[View]\nBindPaths=/a:relative\n", "the destination is not an absolute");
        check_refused(path, "[View]\nBindPaths=/a:/\n", "the destination is not an absolute");
        check_refused(path, "[View]\nBindPaths=/\n", "binding onto / would cover the whole machine");
        check_refused(path, "[View]\nBindPaths=/a:/b:recursive\n", "'recursive' is not rbind or norbind");
        check_refused(path, "[View]\nBindPaths=/a:/b:rbind:x\n", "more than 3 fields");
        check_refused(path, "[View]\nBindPaths=/srv/%x:/b\n", "'%x' is not a specifier");
        check_refused(path, "[View]\nBindReadOnlyPaths=/srv/data%\n", "a lone '%'");
        check_refused(path, "[View]\nBindPaths=/srv/%h\n", "the source is not an absolute");   /* /srv//home/… */
        check_refused(path, "[View]\nBindPaths=%u:/x\n", "the source is not an absolute");   /* relative for everyone */
        check_refused(path, "[View]\nTemporaryFileSystem=/x:mode=0700,,size=1M\n", "an empty mount option");
        check_refused(path, "[View]\nTemporaryFileSystem=/x:source=/dev/sda\n", "source= is not a mount option");
        check_refused(path, "[View]\nTemporaryFileSystem=/\n", "not an absolute, normalized path other than /");
        check_refused(path, "[View]\nInaccessiblePaths=-relative\n", "not an absolute, normalized path other than /");
        check_refused(path, "[View]\nTmpSize=lots\n", "'lots' is not a size");
        /* A bad word refuses the whole assignment: nothing of it is half-taken. */
        check_refused(path, "[View]\nBindPaths=/good relative\n", "'relative'");

        /* What the checks let through: specifiers, '-', options, ':' in an inaccessible path. */
        write_file(path, "[View]\nBindPaths=-%h/src:/srv/%u:norbind /srv/%U-%G/%g:%h/x %%h\nTemporaryFileSystem=%h/t:mode=0700,size=1M\n"
                         "InaccessiblePaths=-/a:b %h/.ssh\nHideOtherHomes=yes\n");
        check(load(path, &c, &errors) == -EINVAL && strstr(errors[0], "'%%h'"), "a literal %%h is a relative path");
        manager_config_done(&c);
        write_file(path, "[View]\nBindPaths=-%h/src:/srv/%u:norbind /srv/%U-%G/%g:%h/x /srv/%%h\nTemporaryFileSystem=%h/t:mode=0700,size=1M\n"
                         "InaccessiblePaths=-/a:b %h/.ssh\nHideOtherHomes=yes\n");
        r = load(path, &c, &errors);
        check(r == 0, "valid entries with specifiers load (%s)", errors ? errors[0] : "");
        manager_config_done(&c);
        strv_free(errors), errors = NULL;

        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) system(cmd);
}

static void test_hashmap(void) {
        Hashmap *h = hashmap_new();
        static char keys[5000][16];
        bool ok = true;

        for (int i = 0; i < 5000; i++) {
                snprintf(keys[i], sizeof keys[i], "user%d", i);
                ok = ok && hashmap_put(h, keys[i], keys[i]) == 0;
        }
        check(ok && hashmap_size(h) == 5000, "5000 puts");
        check(hashmap_put(h, "user7", NULL) == -EEXIST, "duplicate put is -EEXIST");
        ok = true;
        for (int i = 0; i < 5000; i++)
                ok = ok && hashmap_get(h, keys[i]) == keys[i];
        check(ok, "every key found after growing");
        HashmapIterator state = {};
        size_t n = 0;
        void *v;
        while (hashmap_iterate(h, &state, &v, NULL))
                n++;
        check(n == 5000, "iteration visits every entry once");
        check(hashmap_remove(h, "user42") == keys[42] && !hashmap_get(h, "user42") && hashmap_size(h) == 4999, "remove");
        check(hashmap_put(h, NULL, keys[0]) == -EINVAL, "a NULL key is refused, not hashed");
        hashmap_free(h);

        /* A NULL map is an empty one, for put() as for get() and remove(). */
        check(hashmap_put(NULL, "user1", keys[1]) == -EINVAL && !hashmap_get(NULL, "user1") &&
              !hashmap_remove(NULL, "user1") && hashmap_size(NULL) == 0, "a NULL map: nothing in it, nothing put");
}

/* Past 2^17 entries the table has 2^18 buckets and more: an iteration cursor that kept the
 * bucket in the upper half of a 32-bit word (bucket << 16) lost it there. Every entry must be
 * seen once, on any word size. */
static void test_hashmap_large(void) {
        enum { N = (1 << 17) + 4096 };
        _cleanup_free_ char *keys = malloc((size_t) N * 16);
        _cleanup_free_ unsigned char *seen = calloc(N, 1);
        Hashmap *h = hashmap_new();
        bool ok = keys && seen && h;
        size_t n = 0, twice = 0;
        char *v;

        for (int i = 0; ok && i < N; i++) {
                snprintf(keys + (size_t) i * 16, 16, "%d", i);
                ok = hashmap_put(h, keys + (size_t) i * 16, keys + (size_t) i * 16) == 0;
        }
        check(ok && hashmap_size(h) == N, "%d puts", N);
        for (HashmapIterator i = {}; ok && hashmap_iterate(h, &i, (void **) &v, NULL);) {
                size_t k = (size_t) (v - keys) / 16;
                twice += seen[k]++ > 0;
                n++;
        }
        check(n == N && twice == 0, "iteration over %d entries visits each once (%zu visits, %zu twice)", N, n, twice);
        hashmap_free(h);
}

static void test_open_path_creating(void) {
        const char *base = getenv("NSM_TEST_TMPDIR") ?: ".";
        char dir[256], p[400];
        CreatedPaths created = {};
        int root, fd = -1, r;
        struct stat st;

        snprintf(dir, sizeof dir, "%s/nsm-test-walk.XXXXXX", base);
        if (!mkdtemp(dir)) {
                check(false, "mkdtemp");
                return;
        }
        root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        snprintf(p, sizeof p, "%s/target", dir);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/home", dir);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/home/link", dir);
        (void) symlink("../target", p);

        r = open_path_creating(root, "/home/link/x", PATH_DIRECTORY, &created, &fd);
        snprintf(p, sizeof p, "%s/target/x", dir);
        check(r == -ELOOP && created.n == 0 && lstat(p, &st) < 0, "a symlink on the way is -ELOOP, nothing made behind it");
        r = open_path_creating(root, "/home/missing/x", PATH_EXISTING, &created, &fd);
        snprintf(p, sizeof p, "%s/home/missing", dir);
        check(r == -ENOENT && created.n == 0 && lstat(p, &st) < 0, "PATH_EXISTING creates nothing");
        r = open_path_creating(root, "/home/a/b/file", PATH_FILE, &created, &fd);
        snprintf(p, sizeof p, "%s/home/a/b/file", dir);
        check(r == 0 && created.n == 3 && lstat(p, &st) == 0 && S_ISREG(st.st_mode), "PATH_FILE creates dirs and the file");
        if (fd >= 0)
                close(fd);
        created_paths_undo(&created);
        snprintf(p, sizeof p, "%s/home/a", dir);
        check(lstat(p, &st) < 0, "undo removes what was created");
        created_paths_done(&created);

        /* Creating only in directories of one owner: ours here, as the caller's in the daemon. */
        char *refused_dir = NULL;
        uid_t me = geteuid();
        r = open_path_creating_owned(root, "/home/a/b", PATH_DIRECTORY, me + 1, &created, &refused_dir, &fd);
        snprintf(p, sizeof p, "%s/home/a", dir);
        check(r == -EPERM && refused_dir && streq(refused_dir, "/home") && created.n == 0 && lstat(p, &st) < 0,
              "open_path_creating_owned: nothing created in a directory of another owner, which is named");
        free(refused_dir);
        refused_dir = NULL;
        r = open_path_creating_owned(root, "/top", PATH_FILE, me + 1, &created, &refused_dir, &fd);
        check(r == -EPERM && refused_dir && streq(refused_dir, "/"), "open_path_creating_owned: the root is named '/'");
        free(refused_dir);
        refused_dir = NULL;
        r = open_path_creating_owned(root, "/home", PATH_DIRECTORY, me + 1, &created, &refused_dir, &fd);
        check(r == 0 && created.n == 0 && !refused_dir, "open_path_creating_owned: what exists is opened, whoever owns it");
        if (r == 0)
                close(fd);
        r = open_path_creating_owned(root, "/home/a/b", PATH_DIRECTORY, me, &created, &refused_dir, &fd);
        check(r == 0 && created.n == 2, "open_path_creating_owned: created in a directory of the owner, and on in its own");
        if (r == 0)
                close(fd);
        created_paths_undo(&created);
        created_paths_done(&created);
        close(root);

        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) system(cmd);
}

static void test_mount_table_below(void) {
        /* 1 is the root; 2 and 5 on it; 3 on 2, 4 on 3. Listed out of order, as a moved mount is. */
        const MountEntry t[] = { { .id = 4, .parent_id = 3 }, { .id = 1, .parent_id = 1 }, { .id = 2, .parent_id = 1 },
                                 { .id = 3, .parent_id = 2 }, { .id = 5, .parent_id = 1 } };
        const uint64_t tops[] = { 2 }, none[] = { 0 };
        bool below[ELEMENTSOF(t)];

        check(mount_table_mark_below(t, ELEMENTSOF(t), tops, 1, below) == 3 && below[0] && !below[1] && below[2] &&
              below[3] && !below[4], "mount_table_mark_below: a top and every mount below it, however deep");
        check(mount_table_mark_below(t, ELEMENTSOF(t), none, 0, below) == 0 && !below[0] && !below[2],
              "mount_table_mark_below: no tops, nothing below");
        check(mount_table_count_below(t, ELEMENTSOF(t), tops, 1) == 3, "mount_table_count_below counts the same");
}

/* statmount(2) and /proc/self/mountinfo must tell the same story (the fallback is the
 * reference: it is what findmnt reads). */
static void test_mount_info(void) {
        static const char *paths[] = { "/", "/proc", "/sys", "/dev" };
        MountEntry *e = NULL;
        size_t n = 0;

        if (mount_table_read_self(&e, &n) < 0) {
                check(false, "read /proc/self/mountinfo");
                return;
        }
        for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
                MountInfo mi, parent;
                uint64_t id;
                /* A path whose id cannot be had fails the test: skipping it would let every
                 * path be skipped, and the test pass without one comparison. */
                if (fd_get_mount_id(AT_FDCWD, paths[k], &id) < 0) {
                        check(false, "fd_get_mount_id('%s')", paths[k]);
                        continue;
                }
                bool found = false, same = false;
                int r = mount_info_get(AT_FDCWD, paths[k], &mi, &parent);
                for (size_t i = 0; i < n; i++)
                        if (e[i].id == id) {
                                found = true;
                                same = r == 0 && mi.id == e[i].id && mi.parent_id == e[i].parent_id &&
                                       mi.peer_group == e[i].peer_group && mi.master_group == e[i].master_group &&
                                       !!(mi.propagation & MS_SHARED) == !!e[i].peer_group;
                        }
                check(found && same, "mount_info_get('%s') agrees with mountinfo", paths[k]);
        }
        mount_entries_free(e, n);
}

/* namespace_parse_state(): a malformed record costs only itself. */
static void test_state_file(void) {
        static const char state[] =
                "LINGER=yes\n"
                "BIND=garbage\n"
                "SESSION=c1:2 10 0\n"
                "CHOICE=private\n"
                "BIND=1 2 admin /a\\x2\n"
                "BIND=3 4 user /kept\\x20too\n"
                "SESSION=c17 0 0\n"
                "CHOICE=slave recursive /media\n"
                "PENDING_JOIN=/run/media\n";
        Namespace *ns = calloc(1, sizeof(Namespace));
        bool had_sessions = false;
        FILE *f = fmemopen((void *) state, sizeof state - 1, "r");

        check(ns && f, "state file set up");
        if (!ns || !f)
                return;
        *ns = (Namespace) { .n_ref = 1, .mntns_fd = -EBADF };
        check(namespace_parse_state(ns, f, &had_sessions) == 0, "a state file with malformed records is read");
        check(ns->linger && had_sessions, "LINGER and SESSION seen");
        check(ns->n_binds == 1 && streq(ns->binds[0].destination, "/kept too") && ns->binds[0].for_user,
              "records after a malformed one are kept, paths unescaped");
        check(ns->sessions && streq(ns->sessions->id, "c17") && !ns->sessions->next && ns->sessions->pidfd < 0,
              "a session id the bus would refuse is dropped; sessions are not watched while parsing");
        check(ns->n_choices == 1 && ns->choices[0].recursive && strv_length(ns->pending_joins) == 1, "CHOICE and PENDING_JOIN");
        check(valid_session_id("pam-sshd-pts_3-42") && !valid_session_id("") && !valid_session_id("a b") &&
              !valid_session_id("a:b") && !valid_session_id("caf\xc3\xa9"), "valid_session_id");
        fclose(f);
        namespace_unref(ns);
}

/* The start time of /proc/PID/stat, whatever the command name holds. */
static void test_proc_stat(void) {
        static const char stat[] = "4242 (a) b\n(c) S 1 4242 4242 0 -1 4194560 1234 0 0 0 3 1 0 0 20 0 1 0 987654321 9027584\n";
        uint64_t start = 0;

        check(proc_stat_start_time(stat, sizeof stat - 1, &start) == 0 && start == 987654321,
              "proc_stat_start_time: blanks, ')' and a newline in the command name");
        check(proc_stat_start_time("1 (bash) S 1", 12, &start) == -EBADMSG, "proc_stat_start_time: a short line is -EBADMSG");
        check(process_start_time(getpid()) != 0, "process_start_time of this process");
}

static bool has_target(const MountTableCache *c, const char *target) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->table[i].target, target))
                        return true;
        return false;
}

/* In a mount namespace of the test's own, everything private: nothing reaches the host. */
static void test_mount_table_cache(void) {
        MountTableCache c = MOUNT_TABLE_CACHE_INIT;
        char dir[] = "/tmp/test-shared-mtc-XXXXXX";
        const MountEntry *first;
        size_t n;

        if (geteuid() != 0 || unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                printf("ok %d - # SKIP the mount table cache: needs root to mount in a namespace of its own\n",
                       ++tap_n_tests);
                return;
        }
        check(mount_table_cache_refresh(&c) == 0 && c.n > 0, "mount_table_cache: read at first");
        first = c.table;
        n = c.n;
        check(mount_table_cache_refresh(&c) == 0 && c.table == first && c.n == n,
              "mount_table_cache: not read again while nothing changed");
        check(mkdtemp(dir) != NULL && mount("tmpfs", dir, "tmpfs", 0, NULL) == 0, "a tmpfs mounted");
        check(mount_table_cache_refresh(&c) == 0 && c.n == n + 1 && has_target(&c, dir),
              "mount_table_cache: read again after a mount, which is in it");
        first = c.table;
        check(mount_table_cache_refresh(&c) == 0 && c.table == first, "mount_table_cache: and then not again");
        check(umount2(dir, MNT_DETACH) == 0, "the tmpfs unmounted");
        check(mount_table_cache_refresh(&c) == 0 && c.n == n && !has_target(&c, dir),
              "mount_table_cache: read again after the unmount, which it shows");
        (void) rmdir(dir);
        mount_table_cache_done(&c);
        check(c.fd < 0 && !c.table, "mount_table_cache_done: closed and emptied");
}

int main(void) {
        test_paths();
        test_user_names();
        test_tables();
        test_escape_words();
        test_login_filter();
        test_login_without_view();
        test_mount_ids();
        test_parsers();
        test_config_files();
        test_hashmap();
        test_hashmap_large();
        test_mount_info();
        test_mount_table_below();
        test_open_path_creating();
        test_state_file();
        test_proc_stat();
        test_mount_table_cache();   /* last: it moves the test into a mount namespace of its own */
        return tap_finish();
}
