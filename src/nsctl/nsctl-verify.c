/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsctl verify: the configuration checked by the daemon's own parser (manager-config.c is
 * linked into nsctl), in the spirit of sshd -t and visudo -c. The daemon is not asked and
 * nothing is mounted: it also checks files before they are installed, and works while the
 * daemon is down. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <unistd.h>

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
                if (r >= 0)
                        warn_unknown_names(&c);
                manager_config_done(&c);
        }

        for (char **e = errors; e && *e; e++)
                fprintf(stderr, "%s\n", *e);
        return errors ? -EINVAL : 0;
}
