/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A statmount(2) record (STATMOUNT_MNT_BASIC) as the kernel writes it, turned into a MountInfo
 * (mount_info_from_statmount()): a record of any length, with any size field and mask. */
#include <sys/mount.h>

#include "fuzz.h"
#include "mount-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MountInfo mi;
        uint64_t id, parent;
        int r;

        r = mount_info_from_statmount(data, size, &mi, &id, &parent);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EOPNOTSUPP);
        if (r == 0)
                FUZZ_CHECK((mi.propagation & ~(unsigned long) (MS_SHARED | MS_SLAVE | MS_UNBINDABLE)) == 0);
        return 0;
}
