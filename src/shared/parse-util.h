/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* Value parsers shared by the daemon's configuration, nsctl and the tests. Pure: they neither
 * log nor allocate; -EINVAL for anything malformed, -ERANGE for overflow. */

/* 1/yes/y/true/t/on and 0/no/n/false/f/off. */
int parse_boolean(const char *s);
/* "10s", "500ms", "1min 30s", "2h", "infinity" (UINT64_MAX); plain numbers are seconds. */
int parse_sec(const char *s, uint64_t *ret_usec);
/* "64M", "1G", "4096" (bytes); "50%" is refused. */
int parse_size(const char *s, uint64_t *ret_bytes);
/* A decimal uid below 2^32-1 (which is (uid_t) -1, "no uid"). */
int parse_uid(const char *s, uid_t *ret);
/* A decimal unsigned number. */
int parse_unsigned(const char *s, unsigned *ret);
