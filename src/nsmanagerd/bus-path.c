/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>

#include "bus-errors.h"
#include "bus-path.h"
#include "parse-util.h"

char *namespace_bus_path(Namespace *ns) {
        char *p = NULL;
        if (asprintf(&p, "%s/_%u", NSM_NAMESPACE_PATH_PREFIX, (unsigned) ns->uid) < 0)
                return NULL;
        return p;
}

int namespace_bus_path_to_uid(const char *path, uid_t *ret) {
        static const char prefix[] = NSM_NAMESPACE_PATH_PREFIX "/_";
        const char *p;

        if (!path || strncmp(path, prefix, strlen(prefix)) != 0)
                return -EINVAL;
        p = path + strlen(prefix);
        /* One spelling per object: no leading zeros ("_01" is not "_1"). */
        if (p[0] == '0' && p[1] != '\0')
                return -EINVAL;
        return parse_uid(p, ret);
}
