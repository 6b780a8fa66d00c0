/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "macros.h"
#include "parse-util.h"
#include "strv.h"

int parse_boolean(const char *s) {
        if (STR_IN_SET(s, "1", "yes", "y", "true", "t", "on"))
                return 1;
        if (STR_IN_SET(s, "0", "no", "n", "false", "f", "off"))
                return 0;
        return -EINVAL;
}

typedef struct UnitSuffix {
        const char *suffix;
        uint64_t factor;
} UnitSuffix;

static int parse_number_with_suffix(const char *s, const UnitSuffix *table, size_t n_table, uint64_t default_factor,
                                    uint64_t *ret) {
        uint64_t total = 0;
        char *end;

        if (!s || !*s)
                return -EINVAL;
        /* Sums like "1min 30s" are accepted, as systemd does. */
        while (*s) {
                s += strspn(s, " ");
                if (!*s)
                        break;
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                errno = 0;
                unsigned long long v = strtoull(s, &end, 10);
                if (errno != 0)
                        return -ERANGE;
                s = end;
                size_t n = strcspn(s, " 0123456789");
                uint64_t factor = 0;
                if (n == 0)
                        factor = default_factor;
                else
                        for (size_t i = 0; i < n_table; i++)
                                if (strlen(table[i].suffix) == n && strncmp(table[i].suffix, s, n) == 0) {
                                        factor = table[i].factor;
                                        break;
                                }
                if (factor == 0)
                        return -EINVAL;
                if (v > UINT64_MAX / factor || total + v * factor < total)
                        return -ERANGE;
                total += v * factor;
                s += n;
        }
        *ret = total;
        return 0;
}

int parse_sec(const char *s, uint64_t *ret_usec) {
        static const UnitSuffix table[] = {
                { "us", 1 }, { "usec", 1 }, { "ms", USEC_PER_MSEC }, { "msec", USEC_PER_MSEC },
                { "s", USEC_PER_SEC }, { "sec", USEC_PER_SEC }, { "min", 60 * USEC_PER_SEC },
                { "m", 60 * USEC_PER_SEC }, { "h", 3600 * USEC_PER_SEC }, { "hr", 3600 * USEC_PER_SEC },
        };
        if (s && streq(s, "infinity")) {
                *ret_usec = UINT64_MAX;
                return 0;
        }
        return parse_number_with_suffix(s, table, ELEMENTSOF(table), USEC_PER_SEC, ret_usec);
}

int parse_size(const char *s, uint64_t *ret_bytes) {
        static const UnitSuffix table[] = {
                { "B", 1 }, { "K", 1024 }, { "M", 1024 * 1024 }, { "G", 1024 * 1024 * 1024 },
                { "T", UINT64_C(1024) * 1024 * 1024 * 1024 },
        };
        return parse_number_with_suffix(s, table, ELEMENTSOF(table), 1, ret_bytes);
}

static int parse_decimal(const char *s, unsigned long max, unsigned long *ret) {
        char *end;

        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (*end)
                return -EINVAL;
        if (errno != 0 || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_uid(const char *s, uid_t *ret) {
        unsigned long v;
        int r = parse_decimal(s, UINT32_MAX - 1, &v);
        if (r < 0)
                return r;
        *ret = (uid_t) v;
        return 0;
}

int parse_unsigned(const char *s, unsigned *ret) {
        unsigned long v;
        int r = parse_decimal(s, UINT_MAX, &v);
        if (r < 0)
                return r;
        *ret = (unsigned) v;
        return 0;
}
