/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the kernel hands the daemon about mounts: a read() of a fanotify group with mount events
 * (mount_notify_parse()), and a statmount(2) record with its mount point
 * (mount_stat_from_buffer()). Each input is tried as both. */
#include "fuzz.h"
#include "mount-notify.h"

static void count(const MountEvent *e, void *userdata) {
        size_t *n = userdata;
        FUZZ_CHECK(e->kind == MOUNT_EVENT_OVERFLOW || e->mnt_id != 0);
        (*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MountStat st = {};
        size_t n = 0;
        int r;

        r = mount_notify_parse(data, size, count, &n);
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        /* An event is at least 24 bytes: never more events than that allows (two per event). */
        FUZZ_CHECK(n <= 2 * (size / 24 + 1));

        r = mount_stat_from_buffer(data, size, true, &st);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0)
                FUZZ_CHECK(st.path != NULL);
        mount_stat_done(&st);
        return 0;
}
