/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <string.h>

/* Enum <-> string lookups from one table, as systemd's DEFINE_STRING_TABLE_LOOKUP: the enum
 * has _X_MAX and _X_INVALID = -EINVAL; the table is indexed by the enum.
 *
 *   static const char *const color_table[_COLOR_MAX] = { [COLOR_RED] = "red", … };
 *   DEFINE_STRING_TABLE_LOOKUP(color, Color);
 *
 * defines color_to_string() (NULL for values out of range) and color_from_string()
 * (-EINVAL for unknown strings and NULL). */
#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                          \
        const char *name##_to_string(type i) {                                          \
                if ((int) i < 0 || (size_t) i >= sizeof(name##_table) / sizeof(name##_table[0])) \
                        return NULL;                                                    \
                return name##_table[i];                                                 \
        }                                                                               \
        type name##_from_string(const char *s) {                                        \
                for (size_t i = 0; s && i < sizeof(name##_table) / sizeof(name##_table[0]); i++) \
                        if (name##_table[i] && strcmp(name##_table[i], s) == 0)          \
                                return (type) i;                                        \
                return (type) -EINVAL;                                                  \
        }
