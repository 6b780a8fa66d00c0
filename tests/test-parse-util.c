/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/parse-util.c: time spans, sizes and booleans. TAP output. */
#include "macros.h"
#include "parse-util.h"
#include "tap.h"
#include "time-util.h"

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

int main(void) {
        test_parsers();
        return tap_finish();
}
