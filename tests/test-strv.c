/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/strv.c: NULL-terminated string lists. TAP output. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"
#include "strv.h"
#include "tap.h"

static void test_build_and_compare(void) {
        _cleanup_strv_free_ char **l = NULL, **split = NULL;
        _cleanup_free_ char *joined = NULL;
        char *const abc[] = { (char *) "a", (char *) "b", (char *) "c", NULL };
        char *const ab[] = { (char *) "a", (char *) "b", NULL };
        char *const empty[] = { NULL };

        check(strv_length(NULL) == 0 && strv_length(empty) == 0 && strv_length(abc) == 3, "strv_length");
        check(strv_extend(&l, "a") == 0 && strv_extend(&l, "b") == 0 && strv_extend(&l, "b") == 0 &&
              strv_extend(&l, "c") == 0 && strv_length(l) == 4, "strv_extend appends copies");
        char *mine = strdup("d");
        check(strv_consume(&l, mine) == 0 && strv_length(l) == 5 && l[4] == mine, "strv_consume appends the string itself");
        check(strv_consume(&l, NULL) == -ENOMEM && strv_length(l) == 5, "strv_consume of a failed strdup is -ENOMEM");
        check(strv_remove(l, "d"), "strv_remove of it");
        check(strv_remove(l, "b") && !strv_remove(l, "b") && !strv_remove(l, "x"), "strv_remove: every equal entry, once");
        check(strv_equal(l, (char *const[]) { (char *) "a", (char *) "c", NULL }) && !strv_equal(l, abc),
              "what is left, in order");
        check(!strv_equal(abc, ab) && !strv_equal(ab, abc), "a list is not its own beginning, nor the other way");
        check(strv_equal(NULL, empty) && strv_equal(empty, NULL) && strv_equal(NULL, NULL) && !strv_equal(NULL, ab),
              "NULL and an empty list are the same");
        check(!strv_equal((char *const[]) { (char *) "a", (char *) "x", (char *) "c", NULL }, abc), "one string differs");
        split = strv_split_whitespace(" a\tb  c ");
        check(strv_equal(split, abc), "strv_split_whitespace on spaces and tabs");
        joined = strv_join(abc, "+");
        check(joined && streq(joined, "a+b+c"), "strv_join");
        check(strv_contains((const char *const[]) { "x", "b", NULL }, "b") && STR_IN_SET("c", "a", "c") &&
              !STR_IN_SET("d", "a", "c"), "strv_contains, STR_IN_SET");
}

int main(void) {
        test_build_and_compare();
        return tap_finish();
}
