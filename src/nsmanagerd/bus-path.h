/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include "namespace.h"

/* The Namespace objects' paths on the bus: /org/example/NSManager/user/_UID. Pure: the audit
 * record (audit.c) reads them as the objects' glue (namespace-dbus.c) writes them. */
char *namespace_bus_path(Namespace *ns);
/* The uid in such a path, spelled as namespace_bus_path() spells it; -EINVAL for any other
 * path. Any caller may name any path: fuzzed (src/fuzz/fuzz-bus-args.c). */
int namespace_bus_path_to_uid(const char *path, uid_t *ret);
