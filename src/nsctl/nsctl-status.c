/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsctl status USER: the namespace's properties, then the processes in the view, as loginctl
 * user-status shows a user's: from ListProcesses, which only root, the view's user and
 * holders of 'manage' may call (who runs what is not public); for anybody else that part is
 * left out.
 */
#include <errno.h>
#include <pwd.h>
#include <inttypes.h>
#include <stdio.h>

#include "bus-errors.h"
#include "nsctl.h"

static int print_view_processes(sd_bus *bus, const char *user) {
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

int verb_status(sd_bus *bus, int argc _unused_, char **argv) {
        _cleanup_free_ char *created = NULL, *ago = NULL, *sessions = NULL, *user = NULL, *state = NULL,
                *root = NULL, *shown_sessions = NULL, *object = NULL;
        NamespaceInfo i = {};
        const char *dot_color;
        int r;

        r = get_namespace(bus, argv[1], &i);
        if (r < 0)
                return r;

        if (arg_json != JSON_OFF) {
                JsonWriter w;

                json_begin(&w, stdout, arg_json);
                json_namespace(&w, &i);
                json_end(&w);
                namespace_info_done(&i);
                return 0;
        }

        created = format_timestamp(i.timestamp);
        ago = format_timestamp_relative(i.timestamp);
        sessions = i.sessions && i.sessions[0] ? strv_join(i.sessions, " ") : strdup("none");
        if (!created || !ago || !sessions) {
                namespace_info_done(&i);
                return log_oom();
        }

        /* What the daemon sent is shown escaped (text-escape.h), as everywhere in nsctl. */
        user = text_show(i.user);
        state = text_show(i.state);
        root = text_show(i.root ?: "n/a");
        shown_sessions = text_show(sessions);
        object = text_show(i.object);
        if (!user || !state || !root || !shown_sessions || !object) {
                namespace_info_done(&i);
                return log_oom();
        }

        dot_color = state_color(i.state) ?: "";
        pager_open();
        printf("%s\u25CF%s %s%s%s (%" PRIu32 ")\n", dot_color, ansi_normal(),
               ansi_highlight(), user, ansi_normal(), i.uid);
        printf("      State: %s%s%s\n", dot_color, state, ansi_normal());
        printf("        UID: %" PRIu32 "\n", i.uid);
        printf("        GID: %" PRIu32 "\n", i.gid);
        printf("       Root: %s\n", root);
        printf("   Sessions: %s\n", shown_sessions);
        printf("     Linger: %s\n", i.linger ? "yes" : "no");
        printf("    Created: %s; %s\n", created, ago);
        printf("  Namespace: mnt:[%" PRIu64 "]\n", i.mntns_id);
        printf("     Mounts: %" PRIu32 "\n", i.n_mounts);
        printf("     Object: %s\n", object);
        r = print_view_processes(bus, i.user);

        namespace_info_done(&i);
        return r;
}
