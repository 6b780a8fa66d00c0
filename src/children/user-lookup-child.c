/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-errors.h"
#include "bus-util.h"
#include "parse-util.h"
#include "text-escape.h"
#include "user-lookup-child.h"
#include "user-util.h"

static int reply_record(sd_bus_message *call, const UserRecord *u) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = bus_message_append_bytes(reply, u->name);
        if (r >= 0)
                r = sd_bus_message_append(reply, "uu", u->uid, u->gid);
        if (r >= 0)
                r = bus_message_append_bytes(reply, u->home);
        if (r >= 0)
                r = bus_message_append_bytes(reply, u->shell);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

static int method_look_up(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        _cleanup_free_ char *shown = NULL;
        const char *name;
        uid_t uid;
        int r;

        r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        r = parse_uid(name, &uid) >= 0 ? user_record_by_uid(uid, &u) : user_record_by_name(name, &u);
        if (r < 0) {
                shown = text_escape(name);
                if (r == -ESRCH)
                        return bus_error_setf(error, NSM_ERROR_NO_SUCH_USER, "No user '%s' is known to the system.",
                                              shown ?: "?");
                return bus_error_set_errnof(error, r, "Failed to look up user '%s': %m", shown ?: "?");
        }
        /* NSS's bytes as they are ("ay": D-Bus strings must be UTF-8): the daemon checks them
         * (valid_user_name()). */
        return reply_record(m, &u);
}

static const sd_bus_vtable user_lookup_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("LookUp", "s", "ayuuayay", method_look_up, 0),
        SD_BUS_VTABLE_END,
};

const ChildInterface user_lookup_interface = { USER_LOOKUP_INTERFACE, user_lookup_vtable };
