/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-errors.h"
#include "bus-util.h"
#include "group-lookup-child.h"
#include "strv.h"
#include "text-escape.h"
#include "user-util.h"

static int reply_groups(sd_bus_message *call, const Credentials *c, char **names, const char *primary,
                        const char *name) {
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
                r = bus_message_append_bytes(reply, name);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

static int method_look_up(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(credentials_done) Credentials c = {};
        _cleanup_(user_record_done) UserRecord u = {};
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *primary = NULL, *shown = NULL;
        uint32_t uid, gid;
        int with_names, r;

        r = sd_bus_message_read(m, "uub", &uid, &gid, &with_names);
        if (r < 0 || uid == (uid_t) -1 || gid == (gid_t) -1)
                return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");

        /* A user is her uid: her groups are those of the name NSS gives it now, not of a name
         * the daemon keeps (her view's), which a rename may have given to another user. */
        r = user_record_by_uid((uid_t) uid, &u);
        if (r == -ESRCH)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_USER, "UID %u has no user record (NSS).",
                                      (unsigned) uid);
        if (r < 0)
                return bus_error_set_errnof(error, r, "Failed to look up UID %u: %m", (unsigned) uid);
        const char *name = u.name;
        /* initgroups asks by the name and the primary gid. */
        r = user_credentials_from_record(&(const UserRecord) { .name = u.name, .uid = 0, .gid = gid }, &c);
        if (r >= 0 && with_names) {
                r = user_group_names(name, gid, &names);
                if (r >= 0 && group_name_by_gid(gid, &primary) < 0)
                        primary = NULL;         /* a gid without a name: %g cannot be expanded */
        }
        if (r < 0) {
                shown = text_escape(name);
                return bus_error_set_errnof(error, r, "Failed to look up the groups of user '%s': %m", shown ?: "?");
        }
        return reply_groups(m, &c, names, primary, name);
}

static const sd_bus_vtable group_lookup_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("LookUp", "uub", "auaayayay", method_look_up, 0),
        SD_BUS_VTABLE_END,
};

const ChildInterface group_lookup_interface = { GROUP_LOOKUP_INTERFACE, group_lookup_vtable };
