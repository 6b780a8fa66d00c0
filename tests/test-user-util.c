/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/user-util.c: which user names are valid. TAP output. */
#include <limits.h>
#include <string.h>

#include "macros.h"
#include "tap.h"
#include "user-util.h"

static void test_user_names(void) {
        /* What directories answer: sssd's fully-qualified names, winbind's, AD's display names. */
        static const char *good[] = { "alice", "bob-2", "_svc", "a.b", "machine$", "A", "alice@corp.example",
                                      "CORP\\alice", "domain user", "-x", "1abc", "a:b", "j\xc3\xb6rg",
                                      "averyveryveryveryveryverylongname1@corp.example" };
        static const char *bad[] = { "", ".", "..", "../x", "a/b", "alice\n", "a\tb", "a\x7f", "\xc2\x9b",
                                     "bad\xff", "\xc0\xaf" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                check(valid_user_name(good[i]), "user name '%s' is valid", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                /* By number: the names hold a newline and bytes a TAP line cannot carry. */
                check(!valid_user_name(bad[i]), "bad user name #%zu is refused", i);
}

static void test_long_names(void) {
        char name[NAME_MAX + 2];

        memset(name, 'a', sizeof name - 1);
        name[NAME_MAX] = 0;
        check(valid_user_name(name), "a name of NAME_MAX bytes is valid");
        name[NAME_MAX] = 'a';
        name[NAME_MAX + 1] = 0;
        check(!valid_user_name(name), "a name longer than NAME_MAX is refused");
}

int main(void) {
        test_user_names();
        test_long_names();
        return tap_finish();
}
