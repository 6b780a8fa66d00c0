/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsctl verify: the configuration checked by the daemon's own parser (manager-config.c is
 * linked into nsctl), in the spirit of sshd -t and visudo -c, and each user's [View] policy
 * looked at as the daemon looks at it before it applies one (the read-only half of the policy,
 * view-policy.c, is linked in too). The daemon is not asked and nothing is mounted: it also
 * checks files before they are installed, and works while the daemon is down. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "bus-errors.h"
#include "manager-config.h"
#include "nsctl.h"
#include "text-escape.h"
#include "user-util.h"
#include "view-policy.h"

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

/* The walk names what it found on the way, and a user names her own links and directories:
 * escaped, as everything nsctl prints, so that none of it reaches root's terminal as control
 * sequences. -ENOMEM, else 0. */
static int print_policy_warning(const PolicyFile *f, const UserRecord *u, bool fails, const char *text) {
        _cleanup_free_ char *path = text_escape(f->path), *user = text_escape(u->name),
                            *t = text_escape(text);

        if (!path || !user || !t)
                return -ENOMEM;
        if (fails)
                fprintf(stderr, "%s: warning: the [View] policy of '%s' fails for this user: %s\n", path, user, t);
        else
                fprintf(stderr, "%s: warning: in the [View] policy of '%s': %s\n", path, user, t);
        return 0;
}

/* The [View] policy of a user with a user.d file, as the daemon composes it for their next view
 * (the main file's [View], then group.d/ of their groups, then their file), and what an
 * administrator should know about it: the paths someone other than root and the user could
 * spoil (view_policy_warnings(), which the daemon logs at every build of the view), looked up
 * in the host's tree from "/" (a view's is a copy of it); and an entry that names nothing
 * valid for this user (a %h that leaves no parent for HideOtherHomes=, say), which fails her
 * view. Warnings only, as a reload takes the files: the exit status stays 0. What only root
 * may look at is seen only when root runs verify. -ENOMEM, else 0. */
static int warn_policy(const ManagerConfig *c, const PolicyFile *f, const UserRecord *u, int root_fd) {
        _cleanup_(view_policy_done) ViewPolicy p = {};
        _cleanup_strv_free_ char **groups = NULL, **with_files = NULL, **warnings = NULL;
        _cleanup_(nsm_error_done) NsmError e = {};
        int r;

        /* The user's groups matter only to the groups that have a file (as the daemon: NSS's
         * initgroups can be slow). */
        r = view_policy_groups_with_files(c, &with_files);
        if (r >= 0 && with_files)
                r = user_group_names(u->name, u->gid, &groups);
        if (r >= 0)
                r = view_policy_load(c, u->name, groups, &p);
        if (r < 0)
                /* The daemon fails her view then too. */
                (void) nsm_error_set_errnof(&e, r, "Failed to find it: %m");
        else
                r = view_policy_check(&p, u, &e);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return print_policy_warning(f, u, /* fails= */ true, nsm_error_message(&e));
        r = view_policy_warnings(&p, u, root_fd, &warnings);
        if (r == -ENOMEM)
                return r;
        for (char **w = warnings; w && *w; w++)
                if (print_policy_warning(f, u, /* fails= */ false, *w) < 0)
                        return -ENOMEM;
        return 0;
}

/* What parses but applies to nobody: a user.d or group.d file whose name NSS does not know
 * (a typo in a file name is as quiet as one in a key). A warning, not an error: the user may
 * come later, or from a directory that is not reachable now. For the users it knows, what
 * their policy warns about (warn_policy()). 0, or a negative errno, logged. */
static int warn_policy_files(const ManagerConfig *c) {
        _cleanup_close_ int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        int r;

        if (root_fd < 0)
                return log_error_errno(errno, "Failed to open /: %m");
        for (size_t i = 0; i < c->n_user_policies; i++) {
                _cleanup_(user_record_done) UserRecord u = {};
                r = user_record_by_name(c->user_policies[i].name, &u);
                if (r == -ESRCH)
                        fprintf(stderr, "%s: warning: no user '%s' is known to the system; this file applies to nobody\n",
                                c->user_policies[i].path, c->user_policies[i].name);
                if (r < 0)
                        continue;
                r = warn_policy(c, &c->user_policies[i], &u, root_fd);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c->n_group_policies; i++)
                if (group_exists(c->group_policies[i].name) == 0)
                        fprintf(stderr, "%s: warning: no group '%s' is known to the system; this file applies to nobody\n",
                                c->group_policies[i].path, c->group_policies[i].name);
        return 0;
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
                int k = 0;

                manager_config_init(&c);
                r = manager_config_load(arg_config, &c, &errors);
                if (r == -ENOMEM) {
                        manager_config_done(&c);
                        return log_oom();
                }
                if (r >= 0)
                        k = warn_policy_files(&c);
                if (r >= 0 && k >= 0)
                        note_start_only_changes(&c);
                manager_config_done(&c);
                if (k == -ENOMEM)
                        return log_oom();
                if (k < 0)
                        return k;
        }

        for (char **e = errors; e && *e; e++)
                fprintf(stderr, "%s\n", *e);
        return errors ? -EINVAL : 0;
}
