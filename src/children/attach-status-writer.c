/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "attach-status.h"
#include "bus-errors.h"

static int method_write_status(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *line;
        size_t done = 0, n;
        int fd, r;

        r = sd_bus_message_read(m, "sh", &line, &fd);
        if (r < 0)
                return r;
        n = strlen(line);
        if (n == 0 || n > ATTACH_STATUS_LINE_MAX)
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
        /* A reader gone is EPIPE here, not the end of the child. */
        (void) signal(SIGPIPE, SIG_IGN);
        while (done < n) {
                ssize_t k = write(fd, line + done, n - done);
                if (k < 0 && errno == EAGAIN) /* O_NONBLOCK, set by the caller on her side: wait for room */
                        (void) poll(&(struct pollfd) { .fd = fd, .events = POLLOUT }, 1, -1);
                else if (k < 0 && errno != EINTR)
                        return bus_error_set_errnof(error, -errno, "Failed to write the status: %m");
                else if (k > 0)
                        done += (size_t) k;
        }
        return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable attach_status_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("WriteStatus", "sh", "", method_write_status, 0),
        SD_BUS_VTABLE_END,
};

const ChildInterface attach_status_interface = { ATTACH_STATUS_INTERFACE, attach_status_vtable };
