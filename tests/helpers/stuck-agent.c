/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stuck-agent N USER
 *
 * An attacker of the shared polkit (tests/test_budgets.py): registers itself with polkitd as
 * the authentication agent of its own process, an agent that never answers BeginAuthentication,
 * then sends N interactive OpenAttach(USER, ["true"], [], "/", 0) calls at once (so that polkitd
 * asks this agent, and waits). Prints "asked" once polkitd asked the agent, then one line per
 * call as it is answered: "ok", or the D-Bus error's name and message, then "done" once every
 * call was answered. It stays on the bus, its agent registered (polkitd keeps asking it what it
 * was not told to stop asking), until its stdin ends: status 0 if every call was answered, 1 if
 * not.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-errors.h"

#define AGENT_PATH "/org/example/StuckAgent"

static unsigned answered, sent;
static bool asked;

static int begin_authentication(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        /* Never answered: polkitd waits until it is told to cancel. */
        if (!asked) {
                printf("asked\n");
                fflush(stdout);
                asked = true;
        }
        return 1;
}

static int cancel_authentication(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable agent_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("BeginAuthentication", "sssa{ss}sa(sa{sv})", "", begin_authentication, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("CancelAuthentication", "s", "", cancel_authentication, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (e)
                printf("%s %s\n", e->name, e->message ?: "");
        else
                printf("ok\n");
        fflush(stdout);
        answered++;
        return 0;
}

/* Field 22 of /proc/self/stat: polkit tells processes apart by pid and start time. */
static uint64_t start_time(void) {
        char buf[4096], *p;
        unsigned long long t = 0;
        FILE *f = fopen("/proc/self/stat", "re");

        if (!f)
                return 0;
        if (!fgets(buf, sizeof buf, f))
                buf[0] = 0;
        fclose(f);
        p = strrchr(buf, ')');
        /* ") " is followed by field 3 */
        for (int i = 2; p && i < 22; i++)
                p = strchr(p + 1, ' ');
        if (p)
                t = strtoull(p + 1, NULL, 10);
        return t;
}

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        unsigned n;
        int r;

        if (argc != 3) {
                fprintf(stderr, "Usage: %s N USER\n", argv[0]);
                return 2;
        }
        n = (unsigned) atoi(argv[1]);
        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, AGENT_PATH, "org.freedesktop.PolicyKit1.AuthenticationAgent",
                                             agent_vtable, NULL);
        if (r < 0) {
                fprintf(stderr, "bus: %s\n", strerror(-r));
                return 1;
        }
        r = sd_bus_call_method(bus, "org.freedesktop.PolicyKit1", "/org/freedesktop/PolicyKit1/Authority",
                               "org.freedesktop.PolicyKit1.Authority", "RegisterAuthenticationAgent", &error, NULL,
                               "(sa{sv})ss", "unix-process", 3, "pid", "u", (uint32_t) getpid(), "start-time", "t",
                               start_time(), "uid", "i", (int32_t) getuid(), "C", AGENT_PATH);
        if (r < 0) {
                fprintf(stderr, "RegisterAuthenticationAgent: %s\n", error.message ?: strerror(-r));
                return 1;
        }
        for (unsigned i = 0; i < n; i++) {
                sd_bus_message *m = NULL;

                r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE,
                                                   "OpenAttach");
                if (r >= 0)
                        r = sd_bus_message_append(m, "sasasst", argv[2], 1, "true", 0, "/", UINT64_C(0));
                if (r >= 0)
                        r = sd_bus_message_set_allow_interactive_authorization(m, true);
                if (r >= 0)
                        r = sd_bus_call_async(bus, NULL, m, on_reply, NULL, 120 * UINT64_C(1000000));
                sd_bus_message_unref(m);
                if (r < 0) {
                        fprintf(stderr, "OpenAttach: %s\n", strerror(-r));
                        return 1;
                }
                sent++;
        }
        for (bool done = false;;) {
                struct pollfd p[2] = { { .fd = sd_bus_get_fd(bus), .events = (short) sd_bus_get_events(bus) },
                                       { .fd = STDIN_FILENO, .events = POLLIN } };
                char c;

                if (!done && answered == sent) {
                        printf("done\n");
                        fflush(stdout);
                        done = true;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        fprintf(stderr, "process: %s\n", strerror(-r));
                        return 1;
                }
                if (r > 0)
                        continue;
                if (poll(p, 2, 1000) < 0 && errno != EINTR)
                        return 1;
                if ((p[1].revents & (POLLIN | POLLHUP)) && read(STDIN_FILENO, &c, 1) <= 0)
                        return answered == sent ? 0 : 1;
        }
}
