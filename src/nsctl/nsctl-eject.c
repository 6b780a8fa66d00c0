/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsctl eject WHAT [--lazy]: Eject(), and what it detached, per view. */
#include "bus-errors.h"
#include "nsctl.h"

int verb_eject(sd_bus *bus, int argc _unused_, char **argv) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = NULL;
        static const char *const headers[] = { "VIEW", "MOUNT POINT" };
        const char *user, *path;
        JsonWriter w;
        int r;

        /* Ejecting a large machine takes a while: every view is looked at (no call timeout of
         * ours; the daemon answers TimedOut at its own deadline). */
        polkit_agent_open_if_enabled();
        r = manager_call(bus, "Eject", UINT64_MAX, &error, &reply, "st", argv[1], arg_lazy ? NSM_EJECT_LAZY : UINT64_C(0));
        polkit_agent_close();
        if (r < 0)
                return bus_log_error(&error, r, "Failed to eject '%s'", argv[1]);
        r = sd_bus_message_enter_container(reply, 'a', "(ss)");
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of Eject: %m");

        if (arg_json != JSON_OFF) {
                json_begin(&w, stdout, arg_json);
                json_object_begin(&w);
                json_key(&w, "detached");
                json_array_begin(&w);
        } else {
                t = table_new(ELEMENTSOF(headers), headers);
                if (!t)
                        return log_oom();
        }
        while ((r = sd_bus_message_read(reply, "(ss)", &user, &path)) > 0) {
                if (arg_json != JSON_OFF) {
                        json_object_begin(&w);
                        json_key(&w, "user");
                        json_string(&w, user);
                        json_key(&w, "mount_point");
                        json_string(&w, path);
                        json_object_end(&w);
                        continue;
                }
                _cleanup_free_ char *p = text_show(path);
                if (table_add_cell(t, *user ? user : "(host)", *user ? NULL : ansi_highlight()) < 0 ||
                    table_add_cell(t, p ?: "", NULL) < 0)
                        return log_oom();
        }
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of Eject: %m");
        if (arg_json != JSON_OFF) {
                json_array_end(&w);
                json_object_end(&w);
                json_end(&w);
                return 0;
        }
        if (table_get_rows(t) == 0) {
                printf("Nothing of '%s' was mounted anywhere.\n", argv[1]);
                return 0;
        }
        r = table_print(t, stdout);
        if (r < 0)
                return r;
        if (!arg_no_legend)
                printf("\n%zu mounts detached%s.\n", table_get_rows(t), arg_lazy ? " (lazily where in use)" : "");
        return 0;
}
