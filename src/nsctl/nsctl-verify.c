/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsctl verify: the configuration checked by the daemon's own parser (manager-config.c is
 * linked into nsctl), in the spirit of sshd -t and visudo -c. The daemon is not asked and
 * nothing is mounted: it also checks files before they are installed, and works while the
 * daemon is down. */
#include <errno.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "bus-errors.h"
#include "manager-config.h"
#include "nsctl.h"
#include "user-util.h"

const char *arg_config = NULL;

/* Groups are looked up by name here, and nowhere else in nsctl. */
static int group_exists(const char *name) {
        struct group g, *found = NULL;
        char buf[16384];
        int r = getgrnam_r(name, &g, buf, sizeof buf, &found);
        if (r != 0)
                return -r;
        return !!found;
}

/* What parses but applies to nobody: a user.d or group.d file whose name NSS does not know
 * (a typo in a file name is as quiet as one in a key). A warning, not an error: the user may
 * come later, or from a directory that is not reachable now. */
static void warn_unknown_names(const ManagerConfig *c) {
        for (size_t i = 0; i < c->n_user_policies; i++) {
                _cleanup_(user_record_done) UserRecord u = {};
                if (user_record_by_name(c->user_policies[i].name, &u) == -ESRCH)
                        fprintf(stderr, "%s: warning: no user '%s' is known to the system; this file applies to nobody\n",
                                c->user_policies[i].path, c->user_policies[i].name);
                /* Each user's effective [View] policy (view_policy_load() with the user's
                 * groups) is where warnings about the policy's paths belong, from
                 * view-policy.c's view_policy_warnings() (a source or destination under a
                 * directory someone other than root and that user can write). */
        }
        for (size_t i = 0; i < c->n_group_policies; i++)
                if (group_exists(c->group_policies[i].name) == 0)
                        fprintf(stderr, "%s: warning: no group '%s' is known to the system; this file applies to nobody\n",
                                c->group_policies[i].path, c->group_policies[i].name);
}

/* A property of the running daemon's Manager, without starting it (a daemon that does not run
 * is not D-Bus activated for this): NULL if there is none to ask. */
static char *running_property(sd_bus *bus, const char *name) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        const char *value;
        char *s;

        if (sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH, "org.freedesktop.DBus.Properties",
                                           "Get") < 0 ||
            sd_bus_message_set_auto_start(m, false) < 0 ||
            sd_bus_message_append(m, "ss", NSM_MANAGER_INTERFACE, name) < 0 ||
            sd_bus_call(bus, m, 5 * USEC_PER_SEC, NULL, &reply) < 0 ||
            sd_bus_message_read(reply, "v", "s", &value) < 0)
                return NULL;
        s = strdup(value);
        return s;
}

/* The settings that a reload cannot change (the daemon keeps its views and pins where it
 * started): said when the files now hold another value than the running daemon's, so that
 * "nsctl verify && nsctl reload" is not taken for the whole change. */
static void note_start_only_changes(const ManagerConfig *c) {
        static const struct {
                const char *property, *setting;
                size_t offset;
        } keys[] = {
                { "SubtreeRoot", "SubtreeRoot=", offsetof(ManagerConfig, subtree_root) },
                { "StateDirectory", "StateDirectory=", offsetof(ManagerConfig, state_directory) },
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;

        if (sd_bus_open_system(&bus) < 0)
                return;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                _cleanup_free_ char *running = running_property(bus, keys[i].property);
                const char *files = *(char *const *) ((const char *) c + keys[i].offset);

                if (running && files && !streq(running, files))
                        fprintf(stderr, "note: %s is '%s' in the files but '%s' in the running nsmanagerd: a reload does "
                                "not change it, the next start does (systemctl restart nsmanagerd)\n",
                                keys[i].setting, files, running);
        }
}

int verb_verify(sd_bus *bus _unused_, int argc, char **argv) {
        _cleanup_strv_free_ char **errors = NULL;
        int r;

        if (argc > 1)
                /* Each file alone, as what its place makes it (group.d/, user.d/: [View] only). */
                for (int i = 1; i < argc; i++) {
                        r = manager_config_check_file(argv[i], &errors);
                        if (r == -ENOMEM)
                                return log_oom();
                }
        else {
                /* The set the daemon reads: the main file, its drop-ins, group.d/, user.d/. */
                ManagerConfig c;

                manager_config_init(&c);
                r = manager_config_load(arg_config, &c, &errors);
                if (r == -ENOMEM) {
                        manager_config_done(&c);
                        return log_oom();
                }
                if (r >= 0) {
                        warn_unknown_names(&c);
                        note_start_only_changes(&c);
                }
                manager_config_done(&c);
        }

        for (char **e = errors; e && *e; e++)
                fprintf(stderr, "%s\n", *e);
        return errors ? -EINVAL : 0;
}
