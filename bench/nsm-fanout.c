/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What one mount on the host costs: mount a small tmpfs on TARGET and unmount it, N times.
 *
 *   nsm-fanout TARGET [N]
 *
 * prints the median mount and the median umount in microseconds ("MOUNT_US UMOUNT_US").
 * TARGET must be an empty directory: every mount namespace that receives mounts from
 * there (a peer or a slave of its mount) gets and loses a copy each time, which is what
 * this measures (bench/bench_fanout.py). Run it as root in a throwaway mount namespace. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>

#include "bench-util.h"

int main(int argc, char *argv[]) {
        int n = argc > 2 ? atoi(argv[2]) : 50;
        double *m, *u;

        if (argc < 2 || argc > 3 || n <= 0) {
                fprintf(stderr, "usage: nsm-fanout TARGET [ITERATIONS]\n");
                return 2;
        }
        m = calloc(n, sizeof(double));
        u = calloc(n, sizeof(double));
        if (!m || !u)
                return 1;
        for (int i = 0; i < n; i++) {
                double t0 = now_us();
                if (mount("nsm-fanout", argv[1], "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") < 0) {
                        perror("mount");
                        return 1;
                }
                double t1 = now_us();
                if (umount2(argv[1], 0) < 0) {
                        perror("umount");
                        return 1;
                }
                m[i] = t1 - t0;
                u[i] = now_us() - t1;
        }
        printf("%.1f %.1f\n", median_of(m, n), median_of(u, n));
        return 0;
}
