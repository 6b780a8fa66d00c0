/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The D-Bus wire format as bus-wire.c reads it: in pam_nsmanager, what nsmanagerd answers on
 * its private socket (the authentication's answer, then the reply); in nsmanagerd, what comes
 * on a connection a login kept (kept-connection.c), which is written as root, but by a
 * process the user may come to own. Whatever the bytes: no read outside them, a size within
 * them, strings that end where they say. And a call built from two strings reads back as
 * those strings. */
#include "bus-wire.h"
#include "fuzz.h"

static void check_string(const char *s) {
        if (s)
                (void) strlen(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ uint8_t *call = NULL;
        const char *a, *b, *path;
        size_t call_size, n;
        BusWireMessage m;
        uint32_t index;
        int r;

        r = bus_wire_parse_auth_reply((const char *) data, size);
        FUZZ_CHECK(r == 0 || r == -EACCES || r == -EPROTO || (r > 0 && (size_t) r <= size));

        r = bus_wire_parse_message(data, size, &m);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || (r > 0 && (size_t) r <= size));
        if (r > 0) {
                FUZZ_CHECK(m.body + m.body_size <= data + r);
                check_string(m.path);
                check_string(m.interface);
                check_string(m.member);
                check_string(m.error_name);
                check_string(m.signature);
                if (bus_wire_read_object_and_fd(&m, &path, &index) == 0)
                        FUZZ_CHECK(path[0] == '/' && index < m.n_unix_fds);
                if (bus_wire_read_string_pair(&m, &a, &b) == 0)
                        FUZZ_CHECK(strlen(a) + strlen(b) < m.body_size);
                check_string(bus_wire_error_message(&m));
        }

        /* The input as two strings (split at its first NUL): built into a call, read back. */
        n = strnlen((const char *) data, size);
        _cleanup_free_ char *first = strndup((const char *) data, n);
        _cleanup_free_ char *second = n < size ? strndup((const char *) data + n + 1, size - n - 1) : strdup("");
        if (!first || !second)
                return 0;
        r = bus_wire_method_call_ss(1, false, "/org/example/NSManager", "org.example.NSManager.Manager", "CloseSession",
                                    first, second, &call, &call_size);
        FUZZ_CHECK(r == 0 || r == -EINVAL);
        if (r < 0)
                return 0;
        r = bus_wire_parse_message(call, call_size, &m);
        FUZZ_CHECK(r > 0 && (size_t) r == call_size && m.type == BUS_WIRE_METHOD_CALL);
        FUZZ_CHECK(bus_wire_read_string_pair(&m, &a, &b) == 0 && streq(a, first) && streq(b, second));
        FUZZ_CHECK(streq(m.member, "CloseSession") && streq(m.signature, "ss"));
        return 0;
}
