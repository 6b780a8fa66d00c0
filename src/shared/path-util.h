/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* "/a/b": absolute, no empty, "." or ".." components, no trailing slash (except "/"). */
bool path_is_absolute_normalized(const char *p);
/* A single path component: not empty, ".", "..", no '/', at most NAME_MAX. */
bool filename_is_valid(const char *s);
/* Returns the path without its leading slashes ("" for "/"), for *at() calls relative to a root fd. */
const char *path_skip_root(const char *p);
