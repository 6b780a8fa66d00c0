/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The login filter (/run/nsmanager/login-filter) as pam_nsmanager reads it in every login and
 * cron job: root writes it, but a module loaded into every PAM stack must survive any
 * content. */
#include "fuzz.h"
#include "login-filter.h"
#include "login-rule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_fclose_ FILE *f = fuzz_stream(data, size, &buf);
        LoginFilter lf;
        int r;

        if (!f)
                return 0;
        r = login_filter_parse(f, &lf);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r < 0)
                return 0;
        FUZZ_CHECK(lf.min_uid != (uid_t) -1);
        /* Root never gets a namespace, whatever the file says. */
        FUZZ_CHECK(login_filter_excludes(&lf, "root", 0));
        for (char **u = lf.exclude_users; u && *u; u++)
                FUZZ_CHECK(**u && !strpbrk(*u, " \t\n"));
        (void) login_filter_excludes(&lf, "alice", 2001);
        /* The rule, with and without groups; deny never allows, allow always does. */
        char *groups[] = { (char *) "alice", (char *) "students", NULL };
        bool with = login_filter_allows_without_view(&lf, "alice", groups, true);
        bool without = login_filter_allows_without_view(&lf, "alice", NULL, false);
        (void) login_filter_allows_without_view(&lf, NULL, NULL, false);
        if (lf.login_without_view == LOGIN_WITHOUT_VIEW_DENY)
                FUZZ_CHECK(!with && !without);
        if (lf.login_without_view == LOGIN_WITHOUT_VIEW_ALLOW || lf.login_without_view < 0)
                FUZZ_CHECK(with && without);
        /* Unknown groups never allow more than known ones. */
        FUZZ_CHECK(!without || with || !login_filter_needs_groups(&lf));
        /* What it says, said again, reads back the same. */
        _cleanup_free_ char *text = NULL;
        if (login_filter_format(&lf, &text) == 0) {
                FILE *again = fmemopen(text, strlen(text), "r");
                LoginFilter lf2;
                if (again && login_filter_parse(again, &lf2) == 0) {
                        FUZZ_CHECK(lf2.min_uid == lf.min_uid && lf2.login_without_view == lf.login_without_view);
                        FUZZ_CHECK(login_filter_allows_without_view(&lf2, "alice", groups, true) == with);
                        login_filter_done(&lf2);
                }
                if (again)
                        fclose(again);
        }
        login_filter_done(&lf);
        return 0;
}
