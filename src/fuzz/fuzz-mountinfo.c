/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc/PID/mountinfo as mount_table_read() reads it (libmount, then the optional fields and
 * propagation words ourselves). The kernel writes it, but the targets and sources in it are
 * paths users choose: a FUSE file system names its own source, a user names their mount
 * points. */
#include "fuzz.h"
#include "mount-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_fclose_ FILE *f = fuzz_stream(data, size, &buf);
        MountEntry *e = NULL;
        size_t n = 0;

        if (!f)
                return 0;
        if (mount_table_read(f, &e, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                FUZZ_CHECK(e[i].target && e[i].source && e[i].fstype && e[i].propagation);
                FUZZ_CHECK(strncmp(e[i].propagation, "shared", 6) == 0 || strncmp(e[i].propagation, "private", 7) == 0);
        }
        mount_entries_free(e, n);
        return 0;
}
