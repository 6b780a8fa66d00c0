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
const char *arg_verify_user = NULL;

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
static int print_policy_warning(const PolicyFile *f, const UserRecord *u, const char *text) {
        _cleanup_free_ char *path = text_escape(f->path), *user = text_escape(u->name),
                            *t = text_escape(text);

        if (!path || !user || !t)
                return -ENOMEM;
        fprintf(stderr, "%s: warning: in the [View] policy of '%s': %s\n", path, user, t);
        return 0;
}

/* The [View] policy of user 'u' as the daemon composes it for her next view (the main file's
 * [View], then group.d/ of her groups, then her user.d file). 0, or a negative errno and 'e'
 * set where the daemon fails her view then too. */
static int load_policy(const ManagerConfig *c, const UserRecord *u, ViewPolicy *ret, NsmError *e) {
        _cleanup_strv_free_ char **groups = NULL, **with_files = NULL;
        int r;

        /* The user's groups matter only to the groups that have a file (as the daemon: NSS's
         * initgroups can be slow). */
        r = view_policy_groups_with_files(c, &with_files);
        if (r >= 0 && with_files)
                r = user_group_names(u->name, u->gid, &groups);
        if (r >= 0)
                r = view_policy_load(c, u->name, groups, ret);
        if (r < 0 && r != -ENOMEM)
                (void) nsm_error_set_errnof(e, r, "Failed to find it: %m");
        return r;
}

/* What an administrator should know about the policy of a user with a user.d file that does
 * not keep it from being applied: the paths someone other than root and the user could spoil
 * (view_policy_warnings(), which the daemon logs at every build of the view), looked up in the
 * host's tree from "/" (a view's is a copy of it). Whether it can be applied at all is
 * forecast_login()'s. What only root may look at is seen only when root runs verify. -ENOMEM,
 * else 0. */
static int warn_policy(const ManagerConfig *c, const PolicyFile *f, const UserRecord *u, int root_fd) {
        _cleanup_(view_policy_done) ViewPolicy p = {};
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_(nsm_error_done) NsmError e = {};
        int r;

        r = load_policy(c, u, &p, &e);
        if (r >= 0)
                r = view_policy_warnings(&p, u, root_fd, &warnings);
        if (r == -ENOMEM)
                return r;
        for (char **w = warnings; w && *w; w++)
                if (print_policy_warning(f, u, *w) < 0)
                        return -ENOMEM;
        return 0;
}

/* "PrivateTmp=yes, BindPaths=/srv/a:/srv/b" for what the policy sets. */
static char *policy_summary(const ViewPolicy *p) {
        _cleanup_strv_free_ char **parts = NULL;
        const struct {
                const char *name;
                char **list;
        } lists[] = {
                { "BindPaths", p->bind_paths },
                { "BindReadOnlyPaths", p->bind_read_only_paths },
                { "TemporaryFileSystem", p->temporary_file_system },
                { "InaccessiblePaths", p->inaccessible_paths },
        };
        char *s;

        if (p->private_tmp && strv_extend(&parts, "PrivateTmp=yes") < 0)
                return NULL;
        if (p->hide_other_homes && strv_extend(&parts, "HideOtherHomes=yes") < 0)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                for (char **e = lists[i].list; e && *e; e++) {
                        _cleanup_free_ char *part = NULL;
                        if (asprintf(&part, "%s=%s", lists[i].name, *e) < 0 || strv_extend(&parts, part) < 0)
                                return NULL;
                }
        if (!parts)
                return strdup("no [View] policy");
        s = strv_join(parts, ", ");
        return s;
}

/* One line on stdout: what the next login of 'u' will do, from the files as they are now and the
 * host's tree as it is now — "lands in a view with …", "lands with entries skipped: …", "will
 * be refused: …" (or, where LoginWithoutView= lets it, "lands in the host namespace, without a
 * view: …"), or not managed at all. The same code as the daemon's: the composition of the
 * policy, its plan, and the view builder's lookups (view_policy_forecast()). -ENOMEM, else 0. */
static int forecast_login(const ManagerConfig *c, const UserRecord *u, int root_fd) {
        _cleanup_(view_policy_done) ViewPolicy p = {};
        _cleanup_strv_free_ char **skipped = NULL;
        _cleanup_(nsm_error_done) NsmError e = {};
        _cleanup_free_ char *name = text_escape(u->name), *text = NULL, *line = NULL;
        char number[32];
        bool loaded;
        int r;

        if (!name)
                return -ENOMEM;
        snprintf(number, sizeof number, "%u", (unsigned) u->uid);
        if (u->uid == 0 || u->uid < c->min_uid || strv_contains((const char *const *) c->exclude_users, u->name) ||
            strv_contains((const char *const *) c->exclude_users, number)) {
                printf("%s: not managed (root, below MinUID= or in ExcludeUsers=): logs in without a view\n", name);
                return 0;
        }
        r = load_policy(c, u, &p, &e);
        loaded = r >= 0;
        if (r >= 0)
                r = view_policy_forecast(&p, u, root_fd, &skipped, &e);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                /* As the module decides (login-filter.h): a policy it cannot look at counts as one. */
                bool allowed = c->login_without_view == LOGIN_WITHOUT_VIEW_ALLOW ||
                               (c->login_without_view == LOGIN_WITHOUT_VIEW_RESTRICTED && loaded &&
                                view_policy_is_empty(&p));
                text = text_escape(nsm_error_message(&e));
                if (!text)
                        return -ENOMEM;
                if (allowed)
                        printf("%s: lands in the host namespace, without a view (LoginWithoutView=%s): %s\n", name,
                               login_without_view_to_string(c->login_without_view), text);
                else
                        printf("%s: will be refused: %s\n", name, text);
                return 0;
        }
        if (skipped) {
                line = strv_join(skipped, " ");
                text = line ? text_escape(line) : NULL;
                if (!text)
                        return -ENOMEM;
                printf("%s: lands with entries skipped: %s\n", name, text);
                return 0;
        }
        line = policy_summary(&p);
        text = line ? text_escape(line) : NULL;
        if (!text)
                return -ENOMEM;
        printf("%s: lands in a view with %s\n", name, text);
        return 0;
}

/* The users whose next login verify forecasts: those of user.d/, then the members of the
 * group.d/ groups as NSS lists them (a group's own member list: users whose primary group it
 * is are not enumerated, nor can sssd's be), each once. */
static int forecast_users(const ManagerConfig *c, int root_fd) {
        _cleanup_strv_free_ char **done = NULL;
        int r;

        for (size_t i = 0; i < c->n_user_policies; i++) {
                _cleanup_(user_record_done) UserRecord u = {};
                if (user_record_by_name(c->user_policies[i].name, &u) < 0 ||
                    strv_contains((const char *const *) done, u.name))
                        continue;
                r = strv_extend(&done, u.name);
                if (r >= 0)
                        r = forecast_login(c, &u, root_fd);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c->n_group_policies; i++) {
                struct group g, *found = NULL;
                char buf[65536];

                if (getgrnam_r(c->group_policies[i].name, &g, buf, sizeof buf, &found) != 0 || !found)
                        continue;
                for (char **m = g.gr_mem; m && *m; m++) {
                        _cleanup_(user_record_done) UserRecord u = {};
                        if (user_record_by_name(*m, &u) < 0 || strv_contains((const char *const *) done, u.name))
                                continue;
                        r = strv_extend(&done, u.name);
                        if (r >= 0)
                                r = forecast_login(c, &u, root_fd);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* What parses but applies to nobody: a user.d or group.d file whose name NSS does not know
 * (a typo in a file name is as quiet as one in a key). A warning, not an error: the user may
 * come later, or from a directory that is not reachable now. For the users it knows, what
 * their policy warns about (warn_policy()). 0, or a negative errno, logged. */
static int warn_policy_files(const ManagerConfig *c, int root_fd) {
        int r;

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

/* Every file, then what each user's next login will do (only arg_verify_user's, with --user). */
static int verify_set(ManagerConfig *c, char ***errors) {
        _cleanup_close_ int root_fd = -EBADF;
        int r;

        r = manager_config_load(arg_config, c, errors);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return 0;       /* the errors say why */
        root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return log_error_errno(errno, "Failed to open /: %m");
        if (arg_verify_user) {
                _cleanup_(user_record_done) UserRecord u = {};
                _cleanup_free_ char *name = text_escape(arg_verify_user);

                r = user_record_by_name(arg_verify_user, &u);
                if (r == -ESRCH)
                        return log_error_errno(r, "No user '%s' is known to the system.", name ?: "?");
                if (r < 0)
                        return log_error_errno(r, "Failed to look up user '%s': %m", name ?: "?");
                r = forecast_login(c, &u, root_fd);
        } else {
                r = warn_policy_files(c, root_fd);
                if (r >= 0)
                        r = forecast_users(c, root_fd);
        }
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return r;
        note_start_only_changes(c);
        return 0;
}

int verb_verify(sd_bus *bus _unused_, int argc, char **argv) {
        _cleanup_strv_free_ char **errors = NULL;
        int r;

        if (argc > 1) {
                /* Each file alone, as what its place makes it (group.d/, user.d/: [View] only). */
                for (int i = 1; i < argc; i++) {
                        r = manager_config_check_file(argv[i], &errors);
                        if (r == -ENOMEM)
                                return log_oom();
                }
        } else {
                /* The set the daemon reads: the main file, its drop-ins, group.d/, user.d/. */
                ManagerConfig c;

                manager_config_init(&c);
                r = verify_set(&c, &errors);
                manager_config_done(&c);
                if (r < 0)
                        return r;
        }

        for (char **e = errors; e && *e; e++)
                fprintf(stderr, "%s\n", *e);
        if (errors)
                return -EINVAL;
        if (argc > 1)
                printf("No errors in %d file%s.\n", argc - 1, argc > 2 ? "s" : "");
        else
                printf("No errors in the configuration.\n");
        return 0;
}
