/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "mount-entry.h"

void mount_entries_free(MountEntry *e, size_t n) {
        for (size_t i = 0; e && i < n; i++) {
                free(e[i].target);
                free(e[i].source);
                free(e[i].fstype);
                free(e[i].propagation);
                free(e[i].options);
                free(e[i].origin);
        }
        free(e);
}
