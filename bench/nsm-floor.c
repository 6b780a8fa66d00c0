/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The raw-syscall floors of building a view: what any implementation pays per namespace.
 *
 *   nsm-floor forked [N]   fork a child that clones the host's tree (open_tree) and
 *                          unshare(CLONE_NEWNS)s, then reap it: a helper process per view;
 *   nsm-floor inproc [N]   the same two calls made by this process, which then setns()es
 *                          back to where it started and closes the clone: no process at all;
 *   nsm-floor serve        one iteration of the floor named by each line of stdin ("forked"
 *                          or "inproc"), its time on a line of stdout: for a caller that
 *                          interleaves the floors with what it compares them to, so that all
 *                          see the same load.
 *
 * Both end with the copies gone (the child's exit, or the setns and close), as a view that
 * is not kept. Prints the median of N iterations (default 200) in microseconds. Run it as
 * root in a throwaway mount namespace (bench/bench_create.py does). */
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-util.h"

/* Clone of / and a new mount namespace: 0, or -1 with errno. */
static int clone_and_unshare(int *ret_tree_fd) {
        int fd = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (fd < 0)
                return -1;
        if (unshare(CLONE_NEWNS) < 0) {
                close(fd);
                return -1;
        }
        *ret_tree_fd = fd;
        return 0;
}

static int forked_once(void) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return -1;
        if (pid == 0) {
                int fd;
                _exit(clone_and_unshare(&fd) < 0 ? 1 : 0);
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -1;
        return 0;
}

static int inproc_once(int home_fd) {
        int fd;

        if (clone_and_unshare(&fd) < 0)
                return -1;
        /* Home again: the new namespace loses its last user and goes, then the clone. */
        if (setns(home_fd, CLONE_NEWNS) < 0) {
                perror("setns back");
                exit(1);   /* stranded in the copy: nothing sensible to measure any more */
        }
        close(fd);
        return 0;
}

/* One iteration: its time in µs, or < 0. */
static double once(bool inproc, int home_fd) {
        double start = now_us();
        if ((inproc ? inproc_once(home_fd) : forked_once()) < 0) {
                fprintf(stderr, "nsm-floor %s failed (not root, or no open_tree?)\n", inproc ? "inproc" : "forked");
                return -1;
        }
        return now_us() - start;
}

static int serve(int home_fd) {
        char line[64];

        while (fgets(line, sizeof line, stdin)) {
                line[strcspn(line, "\n")] = 0;
                if (strcmp(line, "forked") != 0 && strcmp(line, "inproc") != 0) {
                        fprintf(stderr, "nsm-floor serve: '%s' is neither forked nor inproc\n", line);
                        return 2;
                }
                double t = once(strcmp(line, "inproc") == 0, home_fd);
                if (t < 0)
                        return 1;
                printf("%.1f\n", t);
                fflush(stdout);
        }
        return 0;
}

int main(int argc, char *argv[]) {
        const char *mode = argc > 1 ? argv[1] : "";
        int n = argc > 2 ? atoi(argv[2]) : 200;
        int home_fd;
        double *t;

        if ((strcmp(mode, "forked") != 0 && strcmp(mode, "inproc") != 0 && strcmp(mode, "serve") != 0) || n <= 0) {
                fprintf(stderr, "usage: nsm-floor forked|inproc [ITERATIONS]\n"
                                "       nsm-floor serve\n");
                return 2;
        }
        home_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (home_fd < 0) {
                perror("/proc/self/ns/mnt");
                return 1;
        }
        if (strcmp(mode, "serve") == 0)
                return serve(home_fd);
        t = calloc(n, sizeof(double));
        if (!t)
                return 1;
        for (int i = 0; i < n; i++) {
                t[i] = once(strcmp(mode, "inproc") == 0, home_fd);
                if (t[i] < 0)
                        return 1;
        }
        printf("%.1f\n", median_of(t, n));
        free(t);
        return 0;
}
