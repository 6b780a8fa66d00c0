/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>

#include "macros.h"
#include "process-util.h"

int proc_stat_start_time(const char *stat, size_t size, uint64_t *ret) {
        _cleanup_free_ char *s = strndup(stat, size);
        unsigned long long start;
        const char *p;

        if (!s)
                return -ENOMEM;
        /* "PID (COMM) STATE …": the fields follow the last ')', which the command name cannot
         * fake (it comes before). */
        p = strrchr(s, ')');
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                         &start) != 1)
                return -EBADMSG;
        *ret = start;
        return 0;
}

uint64_t process_start_time(pid_t pid) {
        _cleanup_close_ int fd = -EBADF;
        char path[64], buf[4096];
        size_t n = 0;
        uint64_t start;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        /* The whole file, not a line: a newline in the command name would end a line early. */
        while (n < sizeof buf) {
                ssize_t k = read(fd, buf + n, sizeof buf - n);
                if (k < 0)
                        return 0;
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        if (proc_stat_start_time(buf, n, &start) < 0)
                return 0;
        return start;
}

int process_real_uid(pid_t pid, uid_t *ret) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char path[64];
        size_t n = 0;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -ESRCH : -errno;
        /* "Uid:\tREAL\tEFFECTIVE\tSAVED\tFS": the name before it is the kernel's, "Name:" on a
         * line of its own, with any newline of the command's name escaped. */
        while (getline(&line, &n, f) >= 0) {
                unsigned u;

                if (strncmp(line, "Uid:", 4) != 0)
                        continue;
                if (sscanf(line + 4, "%u", &u) != 1)
                        return -EBADMSG;
                *ret = (uid_t) u;
                return 0;
        }
        return -EBADMSG;
}
