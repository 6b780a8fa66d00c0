/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "child-setup.h"
#include "log.h"

static int int_cmp(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;
        return x < y ? -1 : x > y;
}

int child_setup(int sock, const int *keep, size_t n_keep) {
        sigset_t ss;
        int lo = 3;

        sigemptyset(&ss);
        (void) sigprocmask(SIG_SETMASK, &ss, NULL);
        /* Mount work for a daemon that is gone is work nobody waits for. */
        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);

        /* The journal's socket is one of the fds closed below, and libsystemd would go on
         * writing to its number, which the child may reuse for its own socket: log to stderr
         * (the daemon's, the journal's stream under systemd) from here on. */
        if (log_get_target() == LOG_TARGET_JOURNAL)
                log_set_target(LOG_TARGET_CONSOLE_PREFIXED);
        log_set_export_fd(-EBADF);

        /* Close every fd but sock and keep[]: walk the gaps between them in ascending order.
         * Many fds (Eject keeps every view's) are sorted first: the walk is then linear. */
        int *sorted = n_keep > 8 ? malloc((n_keep + 1) * sizeof(int)) : NULL;
        if (sorted) {
                memcpy(sorted, keep, n_keep * sizeof(int));
                sorted[n_keep] = sock;
                qsort(sorted, n_keep + 1, sizeof(int), int_cmp);
                for (size_t i = 0; i <= n_keep; i++) {
                        if (sorted[i] < lo)
                                continue;
                        if (sorted[i] > lo && syscall(SYS_close_range, (unsigned) lo, (unsigned) sorted[i] - 1, 0) < 0) {
                                free(sorted);
                                return -errno;
                        }
                        lo = sorted[i] + 1;
                }
                free(sorted);
                return syscall(SYS_close_range, (unsigned) lo, ~0U, 0) < 0 ? -errno : 0;
        }
        for (;;) {
                int next = INT32_MAX;
                if (sock >= lo)
                        next = sock;
                for (size_t i = 0; i < n_keep; i++)
                        if (keep[i] >= lo && keep[i] < next)
                                next = keep[i];
                if (next > lo && syscall(SYS_close_range, (unsigned) lo, (unsigned) next - 1, 0) < 0)
                        return -errno;
                if (next == INT32_MAX)
                        return 0;
                lo = next + 1;
        }
}
