/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * private-call PATH INTERFACE METHOD [STRING...]
 *
 * Calls METHOD with string arguments on nsmanagerd's private socket (a peer-to-peer sd-bus
 * connection, as pam_nsmanager makes it: tests/test_private_socket.py) and prints "ok" or the
 * D-Bus error's name and message. A reply with fds: their count, then it holds them until
 * its stdin ends. (libdbus clients such as dbus-python write BEGIN and their first message in
 * one go, which the sd-bus of Debian 12 as a server leaves unread until more comes: the
 * module is an sd-bus client, and so is this.) Exit status 0 if the call was answered, 1 if
 * not.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "bus-errors.h"

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (argc < 4) {
                fprintf(stderr, "Usage: %s PATH INTERFACE METHOD [STRING...]\n", argv[0]);
                return 2;
        }
        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, "unix:path=" NSM_PRIVATE_SOCKET);
        if (r >= 0)
                r = sd_bus_negotiate_fds(bus, true);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, argv[1], argv[2], argv[3]);
        for (int i = 4; r >= 0 && i < argc; i++)
                r = sd_bus_message_append(m, "s", argv[i]);
        if (r >= 0)
                r = sd_bus_call(bus, m, 10 * 1000000ULL, &error, &reply);
        if (r < 0 && sd_bus_error_is_set(&error))
                printf("%s %s\n", error.name, error.message ?: "");
        else if (r < 0) {
                fprintf(stderr, "%s\n", strerror(-r));
                return 1;
        } else {
                unsigned n = 0;
                const char *sig = sd_bus_message_get_signature(reply, true);

                for (const char *c = sig; c && *c; c++)
                        n += *c == 'h';
                printf("ok %u\n", n);
                fflush(stdout);
                if (n > 0)
                        while (getchar() != EOF)
                                ;
        }
        sd_bus_message_unref(reply);
        sd_bus_message_unref(m);
        sd_bus_error_free(&error);
        sd_bus_flush_close_unref(bus);
        return 0;
}
