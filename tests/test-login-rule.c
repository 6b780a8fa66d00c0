/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/login-rule.c: what the daemon writes for pam_nsmanager reads back as it was meant.
 * TAP output. */
#include <stdio.h>
#include <string.h>

#include "login-filter.h"
#include "login-rule.h"
#include "macros.h"
#include "tap.h"

/* What the daemon writes, read back. */
static void test_login_filter_format(void) {
        FILE *in = NULL;
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

/* Names as NSS gives them: a group with blanks, fully-qualified users, a backslash. Each stays
 * one word of the file and reads back as it was. */
static void test_names_as_nss_gives_them(void) {
        FILE *in = NULL;
        _cleanup_(login_filter_done) LoginFilter w = {}, r = {};
        _cleanup_free_ char *written = NULL;
        char *users[] = { (char *) "CORP\\dave", (char *) "erin@corp.example", NULL };
        ViewEffect groups[] = { { .name = (char *) "domain users@corp.example", .effect = "--y---" } };
        ViewEffect people[] = { { .name = (char *) "alice@corp.example", .effect = "y-----" } };
        char *member[] = { (char *) "domain users@corp.example", NULL }, *other[] = { (char *) "domain", NULL };

        w = (LoginFilter) { .min_uid = 1000, .exclude_users = users, .login_without_view = LOGIN_WITHOUT_VIEW_RESTRICTED,
                            .view_main = "------", .view_groups = groups, .n_view_groups = 1, .view_users = people,
                            .n_view_users = 1 };
        check(login_filter_format(&w, &written) == 0, "a filter with such names is written");
        check(written && strstr(written, "VIEW_GROUP=domain\\x20users@corp.example --y---\n") &&
              strstr(written, "EXCLUDE_USERS=CORP\\x5cdave erin@corp.example\n"),
              "names are escaped words in the file");
        check(written && (in = fmemopen(written, strlen(written), "r")) && login_filter_parse(in, &r) == 0 &&
              r.n_view_groups == 1 && streq(r.view_groups[0].name, "domain users@corp.example") &&
              r.n_view_users == 1 && streq(r.view_users[0].name, "alice@corp.example") &&
              login_filter_excludes(&r, "CORP\\dave", 2004) && login_filter_excludes(&r, "erin@corp.example", 2005) &&
              !login_filter_excludes(&r, "dave", 2004), "they read back as NSS gave them");
        check(!login_filter_allows_without_view(&r, "bob", member, true) &&
              login_filter_allows_without_view(&r, "bob", other, true) &&
              !login_filter_allows_without_view(&r, "alice@corp.example", other, true),
              "the rule matches them with canonical names");
        if (in)
                fclose(in);
        w = (LoginFilter) {};
}

int main(void) {
        test_login_filter_format();
        test_names_as_nss_gives_them();
        return tap_finish();
}
