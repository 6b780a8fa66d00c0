/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/login-filter.c: the rules the daemon publishes for pam_nsmanager, as the module reads
 * and applies them (LoginWithoutView=). TAP output. */
#include <stdio.h>

#include "login-filter.h"
#include "macros.h"
#include "tap.h"

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
        /* An excluded name that unescapes to blanks is no name (the fuzzer's find). */
        for (const char *const *t = (const char *const[]) { "MIN_UID=1000\nEXCLUDE_USERS=a\\x09b\n",
                                                               "MIN_UID=1000\nEXCLUDE_USERS=\\x20\n", NULL }; *t; t++) {
                LoginFilter h = {};
                in = fmemopen((void *) *t, strlen(*t), "r");
                check(in && login_filter_parse(in, &h) == -EINVAL, "an excluded name with a blank is refused");
                if (in)
                        fclose(in);
        }
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

int main(void) {
        test_login_filter();
        test_login_without_view();
        return tap_finish();
}
