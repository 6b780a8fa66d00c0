/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The login filter (/run/nsmanager/login-filter) as pam_nsmanager reads it in every login and
 * cron job: root writes it, but a module loaded into every PAM stack must survive any
 * content. */
#include "fuzz.h"
#include "login-filter.h"

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
        login_filter_done(&lf);
        return 0;
}
