/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/config/manager-config.c: nsmanagerd.conf, its drop-ins, group.d and user.d, the policy
 * composed from them, and every refusal with file and line. TAP output. */
#include <sys/stat.h>

#include "manager-config.h"
#include "strv.h"
#include "tap.h"
#include "time-util.h"

/* The names of ViewPropagation=, both ways. */
static void test_view_propagation_table(void) {
        for (int i = 0; i < _VIEW_PROPAGATION_MAX; i++)
                check(view_propagation_from_string(view_propagation_to_string(i)) == (ViewPropagation) i,
                      "view propagation %d round-trips", i);
        check(view_propagation_from_string("unbindable") == _VIEW_PROPAGATION_INVALID, "'unbindable' is no ViewPropagation");
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

        test_write_file(path, text);
        r = load(path, &c, &errors);
        check(r == -EINVAL && strv_length(errors) >= 1 && strstr(errors[0], want), "refused: %s (%s)",
              want, errors ? errors[0] : "accepted");
        manager_config_done(&c);
        strv_free(errors);
}

static void test_config_files(void) {
        char dir[256], path[300], sub[400];
        ManagerConfig c;
        ViewPolicy p = {};
        char **errors = NULL;
        int r;

        if (!test_mkdtemp(dir, sizeof dir, "conf"))
                return;
        snprintf(path, sizeof path, "%s/nsmanagerd.conf", dir);

        /* A file named explicitly must exist (nsmanagerd --config=FILE). */
        r = load(path, &c, &errors);
        check(r == -ENOENT && strv_length(errors) == 1 && strstr(errors[0], "nsmanagerd.conf: "),
              "a missing explicit file is an error naming it (%s)", errors ? errors[0] : "(none)");
        manager_config_done(&c);

        /* Defaults when the file is empty. */
        test_write_file(path, "");
        check(load(path, &c, &errors) == 0 && !errors, "an empty file is fine");
        check(streq(c.subtree_root, "/subtree") && streq(c.state_directory, "/run/nsmanager") &&
              c.min_uid == 1000 && c.stop_delay_usec == 10 * USEC_PER_SEC &&
              c.view_propagation == VIEW_PROPAGATION_SLAVE && strv_length(c.shared_subtrees) == 1 &&
              streq(c.shared_subtrees[0], "/mnt") && strv_length(c.exclude_users) == 0,
              "defaults match the contract");
        manager_config_done(&c);

        test_write_file(path, "# comment\n[Manager]\nSubtreeRoot=/srv/views\nSharedSubtrees=/media\nStopDelaySec=2s\n"
                         "MinUID=500\nExcludeUsers=bob carol\nViewPropagation=private\n[View]\nPrivateTmp=yes\n"
                         "BindPaths=/a\nTmpSize=\n");
        snprintf(sub, sizeof sub, "%s.d", path);
        mkdir(sub, 0755);
        snprintf(sub, sizeof sub, "%s.d/50-more.conf", path);
        test_write_file(sub, "[Manager]\nSharedSubtrees=/run/media\nExcludeUsers=\nExcludeUsers=dave\n[View]\nBindPaths=\nBindPaths=/b /c\n");
        snprintf(sub, sizeof sub, "%s.d/10-first.conf", path);
        test_write_file(sub, "[Manager]\nMinUID=600\n");
        snprintf(sub, sizeof sub, "%s.d/ignored.txt", path);
        test_write_file(sub, "[Manager]\nMinUID=700\n");

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
        test_write_file(sub, "[View]\nBindReadOnlyPaths=/srv/project:/project\nHideOtherHomes=yes\n");
        snprintf(sub, sizeof sub, "%s/group.d/notes.txt", dir);
        test_write_file(sub, "[View]\nPrivateTmp=yes\n");
        snprintf(sub, sizeof sub, "%s/user.d/alice.conf", dir);
        test_write_file(sub, "[View]\nPrivateTmp=no\nTmpSize=64M\nInaccessiblePaths=-/secret\n");
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
        test_write_file(sub, "[View]\nPrivateTmp=maybe\n");
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
        test_write_file(sub, "[View]\nHideOtherHome=yes\n[Manager]\nMinUID=1\nPrivateTmp=maybe\n");
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
        {
                /* Every view's build request carries SharedSubtrees=: past what it holds, the
                 * configuration is refused, not each login. Just within the bound is taken. */
                char text[SHARED_SUBTREES_BYTES_MAX + 200], *t = text, big[320];
                size_t each = SHARED_SUBTREE_BYTES_EACH + 100, fit = SHARED_SUBTREES_BYTES_MAX / each;

                snprintf(big, sizeof big, "%s/big.conf", dir);     /* no drop-ins of its own */

                t += sprintf(t, "[Manager]\nSharedSubtrees=\nSharedSubtrees=");     /* without /mnt */
                for (size_t i = 0; i < fit; i++)
                        t += sprintf(t, "/%099zu ", i);
                strcpy(t, "\n");
                test_write_file(big, text);
                check(load(big, &c, &errors) == 0 && strv_length(c.shared_subtrees) == fit,
                      "SharedSubtrees= of %zu paths (%zu bytes in a request) is taken", fit, fit * each);
                manager_config_done(&c);
                strcpy(t, "/one-more\n");
                check_refused(big, text, "SharedSubtrees= takes");
        }
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
        test_write_file(path, "[View]\nBindPaths=-%h/src:/srv/%u:norbind /srv/%U-%G/%g:%h/x %%h\nTemporaryFileSystem=%h/t:mode=0700,size=1M\n"
                         "InaccessiblePaths=-/a:b %h/.ssh\nHideOtherHomes=yes\n");
        check(load(path, &c, &errors) == -EINVAL && strstr(errors[0], "'%%h'"), "a literal %%h is a relative path");
        manager_config_done(&c);
        test_write_file(path, "[View]\nBindPaths=-%h/src:/srv/%u:norbind /srv/%U-%G/%g:%h/x /srv/%%h\nTemporaryFileSystem=%h/t:mode=0700,size=1M\n"
                         "InaccessiblePaths=-/a:b %h/.ssh\nHideOtherHomes=yes\n");
        r = load(path, &c, &errors);
        check(r == 0, "valid entries with specifiers load (%s)", errors ? errors[0] : "");
        manager_config_done(&c);
        strv_free(errors), errors = NULL;
        test_rm_rf(dir);
}

int main(void) {
        test_view_propagation_table();
        test_config_files();
        return tap_finish();
}
