/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pam-stamp.so FILE TAG: a PAM session module for bench/bench_pam.py that appends
 * "open|close TAG <CLOCK_MONOTONIC ns>" to FILE and returns PAM_IGNORE. Two of them around
 * another module time that module's open_session and close_session inside a real login
 * (PAM runs both in stack order), without the noise of starting the login's processes. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_modules.h>

#define _public_ __attribute__((visibility("default")))

static int stamp(const char *what, int argc, const char **argv) {
        struct timespec ts;
        char line[256];
        int fd, n;

        if (argc != 2)
                return PAM_IGNORE;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        n = snprintf(line, sizeof line, "%s %s %" PRIu64 "\n", what, argv[1],
                     (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec);
        fd = open(argv[0], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
                if (n > 0 && (size_t) n < sizeof line)
                        (void) !write(fd, line, (size_t) n);
                (void) close(fd);
        }
        return PAM_IGNORE;
}

_public_ PAM_EXTERN int pam_sm_open_session(pam_handle_t *handle, int flags, int argc, const char **argv) {
        (void) handle, (void) flags;
        return stamp("open", argc, argv);
}

_public_ PAM_EXTERN int pam_sm_close_session(pam_handle_t *handle, int flags, int argc, const char **argv) {
        (void) handle, (void) flags;
        return stamp("close", argc, argv);
}
