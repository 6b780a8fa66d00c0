/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/user-util.c: which user names are valid. TAP output. */
#include "macros.h"
#include "tap.h"
#include "user-util.h"

static void test_user_names(void) {
        static const char *good[] = { "alice", "bob-2", "_svc", "a.b", "machine$", "A" };
        static const char *bad[] = { "", "../x", "a/b", "-x", "1abc", "a b", "a:b", "a$b", "averyveryveryveryveryverylongname1" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                check(valid_user_name(good[i]), "user name '%s' is valid", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                check(!valid_user_name(bad[i]), "user name '%s' is refused", bad[i]);
}

int main(void) {
        test_user_names();
        return tap_finish();
}
