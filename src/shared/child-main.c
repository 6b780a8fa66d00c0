/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-util.h"
#include "child-main.h"
#include "child-setup.h"

static int on_message(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        bool *called = userdata;
        uint8_t type;

        /* Calls that expect no reply go ahead of the one that does (the eject child's views). */
        if (sd_bus_message_get_type(m, &type) >= 0 && type == SD_BUS_MESSAGE_METHOD_CALL &&
            sd_bus_message_get_expect_reply(m) > 0)
                *called = true;
        return 0;
}

int child_warn(sd_bus_message *call, const char *text) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        sd_bus *bus = sd_bus_message_get_bus(call);
        int r;

        r = sd_bus_message_new_signal(bus, &m, CHILD_OBJECT_PATH, sd_bus_message_get_interface(call), "Warning");
        if (r >= 0)
                r = bus_message_append_text(m, text);
        if (r >= 0)
                r = sd_bus_send(bus, m, NULL);
        return r;
}

int child_serve(int sock, const ChildInterface *interface, bool once, void *userdata) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        bool called = false;
        sd_id128_t id;
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_id128_randomize(&id);
        if (r >= 0)
                r = sd_bus_set_fd(bus, sock, sock);
        if (r >= 0)
                r = sd_bus_set_server(bus, true, id);
        if (r >= 0)
                r = sd_bus_negotiate_fds(bus, true);
        if (r >= 0)
                r = sd_bus_add_filter(bus, NULL, on_message, &called);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, CHILD_OBJECT_PATH, interface->name, interface->vtable, userdata);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0)
                return r;
        /* Each method answers before it returns: once the call was dispatched, its reply is
         * queued. */
        while (!(once && called)) {
                r = sd_bus_process(bus, NULL);
                if (r == -ECONNRESET || r == -ENOTCONN)
                        return 0;   /* the daemon hung up */
                if (r < 0)
                        return r;
                if (r == 0) {
                        r = sd_bus_wait(bus, UINT64_MAX);
                        if (r < 0 && r != -EINTR)
                                return r;
                }
        }
        return sd_bus_flush(bus);
}

_noreturn_ void child_main(int sock, const ChildInterface *interface, const int *keep, size_t n_keep) {
        if (child_setup(sock, keep, n_keep) < 0)
                _exit(EXIT_FAILURE);
        _exit(child_serve(sock, interface, true, NULL) < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}
