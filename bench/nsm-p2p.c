/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What talking to a forked child costs, per protocol: a parent forks a child on a socketpair,
 * sends it one request with an fd, waits for the answer and reaps the child.
 *
 *   fork    the fork, the child's exit and the reaping alone: the floor;
 *   sdbus   sd-bus peer to peer on a SOCK_STREAM pair: the child is the server (its own
 *           connection, a server id), the parent the client; the handshake, then one method
 *           call with the fd ('h') and its reply: what a short-lived child pays per operation;
 *   call    one more call on a connection already made: what a long-lived child (the view
 *           builder) pays per request once its handshake is behind it.
 *
 * Prints the median of N iterations (default 500) of each in microseconds.
 * Usage: nsm-p2p [N] */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "bench-util.h"

#define PATH "/org/example/NSManager/Child"
#define IFACE "org.example.NSManager.Child"

static int method_op(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *path;
        int fd, *done = userdata;

        if (sd_bus_message_read(m, "sh", &path, &fd) < 0 || fcntl(fd, F_GETFD) < 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "Malformed request.");
        *done = 1;
        return sd_bus_reply_method_return(m, "t", (uint64_t) 42);
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Op", "sh", "t", method_op, 0),
        SD_BUS_VTABLE_END,
};

static sd_bus *bus_on(int fd, int server) {
        sd_bus *bus = NULL;
        sd_id128_t id;

        if (sd_bus_new(&bus) < 0 || sd_bus_set_fd(bus, fd, fd) < 0 || sd_bus_negotiate_fds(bus, 1) < 0)
                exit(EXIT_FAILURE);
        if (server && (sd_id128_randomize(&id) < 0 || sd_bus_set_server(bus, 1, id) < 0))
                exit(EXIT_FAILURE);
        if (sd_bus_start(bus) < 0)
                exit(EXIT_FAILURE);
        return bus;
}

/* The child: serves calls until its peer hangs up ('once': until the first one is answered). */
static _Noreturn void serve(int fd, int once) {
        sd_bus *bus = bus_on(fd, 1);
        int done = 0;

        if (sd_bus_add_object_vtable(bus, NULL, PATH, IFACE, vtable, &done) < 0)
                _exit(EXIT_FAILURE);
        for (;;) {
                int r = sd_bus_process(bus, NULL);
                if (r < 0)
                        _exit(r == -ECONNRESET || r == -ENOTCONN ? EXIT_SUCCESS : EXIT_FAILURE);
                if (once && done)
                        break;
                if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                        _exit(EXIT_FAILURE);
        }
        (void) sd_bus_flush(bus);
        _exit(EXIT_SUCCESS);
}

static void call(sd_bus *bus) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        uint64_t v;

        if (sd_bus_call_method(bus, NULL, PATH, IFACE, "Op", &error, &reply, "sh", "/mnt", STDIN_FILENO) < 0 ||
            sd_bus_message_read(reply, "t", &v) < 0 || v != 42) {
                fprintf(stderr, "call failed: %s\n", error.message ?: "bad reply");
                exit(EXIT_FAILURE);
        }
        sd_bus_message_unref(reply);
}

static void reap(pid_t pid) {
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "child failed\n");
                exit(EXIT_FAILURE);
        }
}

static double once_fork(void) {
        double start = now_us();
        pid_t pid = fork();
        if (pid == 0)
                _exit(EXIT_SUCCESS);
        reap(pid);
        return now_us() - start;
}

static double once_sdbus(void) {
        int pair[2];
        double start = now_us();

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                exit(EXIT_FAILURE);
        pid_t pid = fork();
        if (pid == 0) {
                close(pair[0]);
                serve(pair[1], 1);
        }
        close(pair[1]);
        sd_bus *bus = bus_on(pair[0], 0);
        call(bus);
        sd_bus_flush_close_unref(bus);
        reap(pid);
        return now_us() - start;
}

int main(int argc, char **argv) {
        size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 500;
        double *t = calloc(n ? n : 1, sizeof(double));
        int pair[2];

        if (!n || !t)
                return EXIT_FAILURE;
        for (size_t i = 0; i < n; i++)
                t[i] = once_fork();
        printf("fork   %8.1f us  fork, exit, reap\n", median_of(t, n));
        for (size_t i = 0; i < n; i++)
                t[i] = once_sdbus();
        printf("sdbus  %8.1f us  fork, handshake, one call with an fd, reap\n", median_of(t, n));

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return EXIT_FAILURE;
        pid_t pid = fork();
        if (pid == 0) {
                close(pair[0]);
                serve(pair[1], 0);
        }
        close(pair[1]);
        sd_bus *bus = bus_on(pair[0], 0);
        call(bus);
        for (size_t i = 0; i < n; i++) {
                double start = now_us();
                call(bus);
                t[i] = now_us() - start;
        }
        printf("call   %8.1f us  one call with an fd on a connection already made\n", median_of(t, n));
        sd_bus_flush_close_unref(bus);
        reap(pid);
        free(t);
        return EXIT_SUCCESS;
}
