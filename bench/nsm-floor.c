/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The raw-syscall floor of building a view: what the daemon cannot avoid per namespace —
 * fork a child, clone the host's tree (open_tree), unshare(CLONE_NEWNS), reap the child.
 * Prints the median per-iteration time in microseconds. Run it as root in a throwaway
 * mount namespace (bench/bench_create.py does). */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char *argv[]) {
        int n = argc > 1 ? atoi(argv[1]) : 200;
        double *t = calloc(n, sizeof(double));

        if (!t || n <= 0)
                return 2;
        for (int i = 0; i < n; i++) {
                double start = now_us();
                pid_t pid = fork();
                if (pid < 0)
                        return 1;
                if (pid == 0) {
                        int fd = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | AT_RECURSIVE);
                        if (fd < 0 || unshare(CLONE_NEWNS) < 0)
                                _exit(1);
                        _exit(0);
                }
                int status;
                if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                        fprintf(stderr, "floor child failed (not root, or no open_tree?)\n");
                        return 1;
                }
                t[i] = now_us() - start;
        }
        qsort(t, n, sizeof(double), cmp);
        printf("%.1f\n", t[n / 2]);
        free(t);
        return 0;
}
