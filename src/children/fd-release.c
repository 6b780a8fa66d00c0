/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-release.h"

static int method_release(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        int sock = sd_bus_get_fd(sd_bus_message_get_bus(m));

        /* What it holds beside its socket is what the fork kept for it (child_setup() closed
         * the rest): closing may wait for a lock the other end's holder keeps, here. */
        if (sock < 0)
                return sock;
        if (sock > 3)
                (void) syscall(SYS_close_range, 3U, (unsigned) sock - 1, 0U);
        (void) syscall(SYS_close_range, (unsigned) sock + 1, ~0U, 0U);
        return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable fd_release_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Release", "", "", method_release, 0),
        SD_BUS_VTABLE_END,
};

const ChildInterface fd_release_interface = { FD_RELEASE_INTERFACE, fd_release_vtable };
