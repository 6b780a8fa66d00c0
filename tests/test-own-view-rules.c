/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/own-view-rules.c: the request-level rule, checked by the daemon before polkit. The
 * rules on files run as root in a mount child (tests/test_own_view.py). TAP output. */
#include <string.h>

#include "own-view-rules.h"
#include "tap.h"

static void test_share_only_at_or_below_shared_subtrees(void) {
        char *shared[] = { (char *) "/home", (char *) "/srv/data", NULL };
        static const struct {
                const char *path;
                bool allowed;
        } cases[] = {
                { "/home", true },
                { "/home/alice", true },
                { "/srv/data/x/y", true },
                { "/homeless", false },          /* a prefix, not a parent */
                { "/srv", false },               /* above a shared subtree */
                { "/", false },
                { "/mnt", false },
        };

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                _cleanup_(nsm_error_done) NsmError e = {};
                int r = own_view_check_request(OWN_VIEW_SHARE, cases[i].path, shared, &e);

                if (cases[i].allowed)
                        check(r == 0 && !nsm_error_is_set(&e), "ShareSubtree(%s) may go ahead", cases[i].path);
                else
                        check(r < 0 && e.code == NSM_ERROR_ACCESS_DENIED && e.message &&
                              strstr(e.message, cases[i].path) && strstr(e.message, "/home /srv/data"),
                              "ShareSubtree(%s) refused as AccessDenied, naming the path and SharedSubtrees=",
                              cases[i].path);
        }
}

static void test_no_shared_subtrees(void) {
        _cleanup_(nsm_error_done) NsmError e = {};

        check(own_view_check_request(OWN_VIEW_SHARE, "/home", NULL, &e) < 0 && e.code == NSM_ERROR_ACCESS_DENIED,
              "without SharedSubtrees=, no path may be shared");
}

static void test_other_requests_go_on_to_the_child(void) {
        for (OwnViewRequest r = 0; r < _OWN_VIEW_REQUEST_MAX; r++) {
                _cleanup_(nsm_error_done) NsmError e = {};

                if (r == OWN_VIEW_SHARE)
                        continue;
                check(own_view_check_request(r, "/mnt", NULL, &e) == 0 && !nsm_error_is_set(&e),
                      "request %d is left to the rules on files", (int) r);
        }
}

int main(void) {
        test_share_only_at_or_below_shared_subtrees();
        test_no_shared_subtrees();
        test_other_requests_go_on_to_the_child();
        return tap_finish();
}
