/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "Processes:" part of nsctl status USER, as loginctl user-status shows a user's: from
 * ListProcesses, which only root, the view's user and holders of 'manage' may call (who runs
 * what is not public); for anybody else the part is left out.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>

#include "bus-errors.h"
#include "nsctl.h"

int print_view_processes(sd_bus *bus, const char *user) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *comm, *session;
        uint32_t pid, uid;
        bool first = true;
        int r;

        r = manager_call(bus, "ListProcesses", 0, &error, &reply, "s", user);
        if (r < 0) {
                /* Refused (polkit would have to ask for a password: status never prompts). */
                if (bus_error_code(&error) == NSM_ERROR_ACCESS_DENIED ||
                    sd_bus_error_has_name(&error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED))
                        return 0;
                return bus_log_error(&error, r, "Failed to list the processes of %s", user);
        }
        r = sd_bus_message_enter_container(reply, 'a', "(uuss)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(uuss)", &pid, &uid, &comm, &session)) > 0) {
                _cleanup_free_ char *c = text_show(comm), *s = text_show(session), *name = NULL;
                struct passwd *pw = getpwuid(uid);

                name = pw ? text_show(pw->pw_name) : NULL;
                if (!c || !s || (pw && !name))
                        return log_oom();
                printf("%s %10" PRIu32 " %-8s %s", first ? "  Processes:" : "            ", pid, name ?: "", c);
                if (name == NULL)
                        printf(" (uid %" PRIu32 ")", uid);
                if (*s)
                        printf(" (session %s)", s);
                putchar('\n');
                first = false;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of ListProcesses: %m");
        if (first)
                printf("  Processes: none\n");
        return 0;
}
