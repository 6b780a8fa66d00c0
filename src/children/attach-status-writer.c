/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "attach-status.h"
#include "ipc.h"

int attach_status_child_run(int sock, const void *request, size_t size, int *fds, size_t n_fds, NsmError *error) {
        _cleanup_free_ char *line = NULL;
        size_t done = 0, n;
        int r;

        r = attach_status_request_decode(request, size, &line);
        if (r < 0)
                return r;
        if (n_fds != 1)
                return -EBADMSG;
        /* A reader gone is EPIPE here, not the end of the child. */
        (void) signal(SIGPIPE, SIG_IGN);
        n = strlen(line);
        while (done < n) {
                ssize_t k = write(fds[0], line + done, n - done);
                if (k < 0 && errno == EAGAIN) /* O_NONBLOCK, set by the caller on her side: wait for room */
                        (void) poll(&(struct pollfd) { .fd = fds[0], .events = POLLOUT }, 1, -1);
                else if (k < 0 && errno != EINTR)
                        return nsm_error_set_errnof(error, -errno, "Failed to write the status: %m");
                else if (k > 0)
                        done += (size_t) k;
        }
        return ipc_send(sock, 0, 0, NULL, 0, NULL, 0);
}
