/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The value parsers of the configuration, the login filter and nsctl's options (parse_boolean,
 * parse_sec, parse_size, parse_uid, parse_unsigned), each on the same string. What one
 * accepts, it reads back the same from its own canonical spelling. */
#include <inttypes.h>

#include "fuzz.h"
#include "parse-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size);
        char canonical[64];
        uint64_t v, w;
        unsigned un, un2;
        uid_t uid, uid2;
        int r;

        if (!s)
                return 0;

        r = parse_boolean(s);
        FUZZ_CHECK(r == 0 || r == 1 || r == -EINVAL);

        r = parse_sec(s, &v);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0 && v != UINT64_MAX) {
                snprintf(canonical, sizeof canonical, "%" PRIu64 "us", v);
                FUZZ_CHECK(parse_sec(canonical, &w) == 0 && w == v);
        }

        r = parse_size(s, &v);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                snprintf(canonical, sizeof canonical, "%" PRIu64, v);
                FUZZ_CHECK(parse_size(canonical, &w) == 0 && w == v);
        }

        r = parse_uid(s, &uid);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                FUZZ_CHECK(uid != (uid_t) -1);
                snprintf(canonical, sizeof canonical, "%u", (unsigned) uid);
                FUZZ_CHECK(parse_uid(canonical, &uid2) == 0 && uid2 == uid);
        }

        r = parse_unsigned(s, &un);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                snprintf(canonical, sizeof canonical, "%u", un);
                FUZZ_CHECK(parse_unsigned(canonical, &un2) == 0 && un2 == un);
        }
        return 0;
}
