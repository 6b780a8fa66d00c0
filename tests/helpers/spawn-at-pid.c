/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Runs a command under a pid chosen by the caller, which must be free:
 *
 *   spawn-at-pid PID COMMAND [ARG...]
 *
 * A pid reused by an unrelated process, on purpose: tests/test_restart.py gives a session
 * leader's pid, freed while nsmanagerd was down, to another process, as the kernel may do
 * once its pids wrap around. clone3() with set_tid (Linux 5.5) takes the pid asked for or
 * fails with EEXIST; it needs CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN) in the pid
 * namespace's user namespace. Prints "ready" once the child exists, then waits for it and
 * exits with its status; 1 if the pid cannot be had. */
#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        struct clone_args args = { .exit_signal = SIGCHLD };
        char *end = NULL;
        pid_t want, child;
        long n;
        int status;

        if (argc < 3) {
                fprintf(stderr, "Usage: %s PID COMMAND [ARG...]\n", argv[0]);
                return 2;
        }
        errno = 0;
        n = strtol(argv[1], &end, 10);
        if (errno != 0 || !end || *end || n <= 1 || n > INT32_MAX) {
                fprintf(stderr, "Invalid pid '%s'.\n", argv[1]);
                return 2;
        }
        want = (pid_t) n;
        args.set_tid = (uint64_t) (uintptr_t) &want;
        args.set_tid_size = 1;

        child = (pid_t) syscall(SYS_clone3, &args, sizeof args);
        if (child < 0) {
                fprintf(stderr, "clone3() with pid %d: %s\n", (int) want, strerror(errno));
                return 1;
        }
        if (child == 0) {
                execvp(argv[2], argv + 2);
                fprintf(stderr, "Failed to run %s: %s\n", argv[2], strerror(errno));
                _exit(127);
        }
        printf("ready\n");
        fflush(stdout);
        while (waitpid(child, &status, 0) < 0)
                if (errno != EINTR)
                        return 1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
