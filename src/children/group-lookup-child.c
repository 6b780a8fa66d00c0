/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-errors.h"
#include "bus-util.h"
#include "group-lookup-child.h"
#include "strv.h"
#include "text-escape.h"
#include "user-util.h"

static int reply_groups(sd_bus_message *call, const Credentials *c, char **names, const char *primary) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = sd_bus_message_append_array(reply, 'u', c->groups, c->n_groups * sizeof(gid_t));
        if (r >= 0)
                r = bus_message_append_bytes_strv(reply, names);
        if (r >= 0)
                r = bus_message_append_bytes(reply, primary ?: "");
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

static int method_look_up(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(credentials_done) Credentials c = {};
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *name = NULL, *primary = NULL, *shown = NULL;
        uint32_t gid;
        int with_names, r;

        r = bus_message_read_bytes(m, &name);
        if (r >= 0)
                r = sd_bus_message_read(m, "ub", &gid, &with_names);
        if (r < 0 || !*name || gid == (gid_t) -1)
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");

        /* The uid plays no part in initgroups: the name and the primary gid are what NSS is asked. */
        r = user_credentials_from_record(&(const UserRecord) { .name = name, .uid = 0, .gid = gid }, &c);
        if (r >= 0 && with_names) {
                r = user_group_names(name, gid, &names);
                if (r >= 0 && group_name_by_gid(gid, &primary) < 0)
                        primary = NULL;         /* a gid without a name: %g cannot be expanded */
        }
        if (r < 0) {
                shown = text_escape(name);
                return bus_error_set_errnof(error, r, "Failed to look up the groups of user '%s': %m", shown ?: "?");
        }
        return reply_groups(m, &c, names, primary);
}

static const sd_bus_vtable group_lookup_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("LookUp", "ayub", "auaayay", method_look_up, 0),
        SD_BUS_VTABLE_END,
};

const ChildInterface group_lookup_interface = { GROUP_LOOKUP_INTERFACE, group_lookup_vtable };
