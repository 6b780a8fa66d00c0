/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A burst of logins as pam_nsmanager makes them: each one a connection of its own and one
 * call, through sd-bus. The connection is to the system bus (sd_bus_open_system), or with
 * --private to nsmanagerd's private socket (NSM_PRIVATE_SOCKET, root only, peer to peer),
 * which the module tries first; either way it is closed after the call. OpenSession's session
 * fd is kept, as a login keeps it for its session, until the burst is over: then every session
 * ends at once, as when that many logins end.
 *
 *   nsm-burst [--private] [--concurrency C] [--timeout SEC] OpenSession|CreateNamespace < USERS
 *
 * reads one user name a line and makes one call per line, C at a time (C threads, which
 * start together). OpenSession gets the session id "burst-LINE". Prints one line per call:
 *
 *   LINE CONNECT_US CALL_US RESULT
 *
 * CONNECT_US is the time setting up the connection took (connect(); the authentication
 * comes later), CALL_US the rest until the reply (the authentication, the bus's Hello, the call
 * and the daemon's work), RESULT "ok", the D-Bus error's name, or "errno:NAME" where the
 * connection failed. Exit status 0 if every call was made (whatever its answer), 1 on a
 * failure of the tool itself, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bench-util.h"
#include "bus-errors.h"

typedef struct Call {
        char *user;
        double connect_us, call_us;
        char result[128];
        int kept;               /* OpenSession's session fd, kept until the end */
} Call;

static Call *calls;
static size_t n_calls;
static atomic_size_t next_call;
static const char *method;
static bool private_socket;
static uint64_t timeout_usec = 120 * 1000000ULL;
static pthread_barrier_t start;

static void set_errno_result(Call *c, const char *what, int r) {
        const char *name = strerrorname_np(-r);
        snprintf(c->result, sizeof c->result, "%s:%s", what, name ?: "unknown");
}

static void one_call(size_t i) {
        Call *c = &calls[i];
        sd_bus *bus = NULL;
        sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char session[64];
        double t0, t1;
        int r;

        snprintf(session, sizeof session, "burst-%zu", i + 1);
        t0 = now_us();
        if (private_socket) {
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, "unix:path=" NSM_PRIVATE_SOCKET);
                if (r >= 0)
                        r = sd_bus_negotiate_fds(bus, true);
                if (r >= 0)
                        r = sd_bus_start(bus);
                if (r < 0)
                        bus = sd_bus_unref(bus);
        } else
                r = sd_bus_open_system(&bus);
        t1 = now_us();
        c->connect_us = t1 - t0;
        if (r < 0) {
                set_errno_result(c, "connect", r);
                return;
        }
        (void) sd_bus_set_method_call_timeout(bus, timeout_usec);
        if (strcmp(method, "OpenSession") == 0)
                r = sd_bus_call_method(bus, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "OpenSession",
                                       &error, &reply, "ss", c->user, session);
        else
                r = sd_bus_call_method(bus, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "CreateNamespace",
                                       &error, &reply, "s", c->user);
        c->call_us = now_us() - t1;
        if (r >= 0 && strcmp(method, "OpenSession") == 0) {
                const char *object;
                int mntns_fd, session_fd;

                r = sd_bus_message_read(reply, "ohh", &object, &mntns_fd, &session_fd);
                if (r >= 0 && (c->kept = fcntl(session_fd, F_DUPFD_CLOEXEC, 3)) < 0)
                        r = -errno;
        }
        if (r >= 0)
                snprintf(c->result, sizeof c->result, "ok");
        else if (sd_bus_error_is_set(&error))
                snprintf(c->result, sizeof c->result, "%s", error.name);
        else
                set_errno_result(c, "call", r);
        sd_bus_error_free(&error);
        sd_bus_message_unref(reply);   /* closes the message's copies of the fds */
        sd_bus_flush_close_unref(bus);
}

static void *worker(void *arg) {
        (void) arg;
        pthread_barrier_wait(&start);
        for (;;) {
                size_t i = atomic_fetch_add(&next_call, 1);
                if (i >= n_calls)
                        return NULL;
                one_call(i);
        }
}

static int read_users(void) {
        char *line = NULL;
        size_t allocated = 0, size = 0;
        ssize_t n;

        while ((n = getline(&line, &allocated, stdin)) > 0) {
                if (line[n - 1] == '\n')
                        line[n - 1] = 0;
                if (!*line)
                        continue;
                if (n_calls == size) {
                        size = size ? size * 2 : 1024;
                        Call *c = realloc(calls, size * sizeof(Call));
                        if (!c)
                                return -ENOMEM;
                        calls = c;
                }
                calls[n_calls] = (Call) { .user = strdup(line), .kept = -1 };
                if (!calls[n_calls].user)
                        return -ENOMEM;
                n_calls++;
        }
        free(line);
        return 0;
}

int main(int argc, char *argv[]) {
        unsigned concurrency = 200;
        pthread_t *threads;
        int i;

        for (i = 1; i < argc - 1; i++) {
                if (strcmp(argv[i], "--private") == 0)
                        private_socket = true;
                else if (strcmp(argv[i], "--concurrency") == 0 && i + 2 < argc)
                        concurrency = (unsigned) atoi(argv[++i]);
                else if (strcmp(argv[i], "--timeout") == 0 && i + 2 < argc)
                        timeout_usec = (uint64_t) atoi(argv[++i]) * 1000000ULL;
                else
                        break;
        }
        if (i != argc - 1 || concurrency == 0 ||
            (strcmp(argv[i], "OpenSession") != 0 && strcmp(argv[i], "CreateNamespace") != 0)) {
                fprintf(stderr, "usage: nsm-burst [--private] [--concurrency C] [--timeout SEC] "
                                "OpenSession|CreateNamespace < USERS\n");
                return 2;
        }
        method = argv[i];
        if (read_users() < 0) {
                fprintf(stderr, "Out of memory.\n");
                return 1;
        }
        if (concurrency > n_calls)
                concurrency = n_calls ? (unsigned) n_calls : 1;
        threads = calloc(concurrency, sizeof(pthread_t));
        if (!threads || pthread_barrier_init(&start, NULL, concurrency) != 0) {
                fprintf(stderr, "Out of memory.\n");
                return 1;
        }
        for (unsigned t = 0; t < concurrency; t++) {
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setstacksize(&attr, 512 * 1024);
                int r = pthread_create(&threads[t], &attr, worker, NULL);
                pthread_attr_destroy(&attr);
                if (r != 0) {
                        fprintf(stderr, "pthread_create: %s\n", strerror(r));
                        return 1;
                }
        }
        for (unsigned t = 0; t < concurrency; t++)
                pthread_join(threads[t], NULL);
        free(threads);
        pthread_barrier_destroy(&start);
        for (size_t k = 0; k < n_calls; k++) {
                printf("%zu %.0f %.0f %s\n", k + 1, calls[k].connect_us, calls[k].call_us, calls[k].result);
                if (calls[k].kept >= 0)
                        close(calls[k].kept);
                free(calls[k].user);
        }
        free(calls);
        return fflush(stdout) == 0 ? 0 : 1;
}
