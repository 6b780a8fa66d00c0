/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <systemd/sd-daemon.h>

#include "attach-process.h"
#include "attach-unit.h"
#include "bus-errors.h"
#include "bus-request.h"
#include "private-bus.h"
#include "config.h"
#include "host.h"
#include "log.h"
#include "manager-dbus.h"
#include "manager.h"
#include "manager-config.h"
#include "orphans.h"
#include "strv.h"

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        _cleanup_(nsm_error_done) NsmError e = {};
        int r = manager_reload(userdata, &e);
        if (r < 0)
                log_error("%s", nsm_error_message(&e));
        return 0;
}

static void help(void) {
        printf("Usage: nsmanagerd [OPTIONS]\n\n"
               "Per-user mount namespace manager (org.example.NSManager on the system bus).\n\n"
               "Options:\n"
               "  -h --help           Show this help\n"
               "     --version        Show the version\n"
               "     --config=FILE    Read FILE (and FILE.d/*.conf) instead of %s\n"
               "     --debug          Log debug messages (as --log-level=debug)\n"
               "     --log-level=LEVEL  emerg … debug (default: info)\n"
               "     --log-target=TARGET  auto, console, console-prefixed, journal or null\n"
               "     --log-export=FILE  Also append every record, with its fields, to FILE in\n"
               "                        the journal's export format\n"
               "     --release        Do not start: unmount what nsmanagerd mounted on the host\n"
               "                      (for removing the package; refused while it runs), and\n"
               "                      name the users with processes still in their views\n"
               "     --orphans        Do not start: name the users with processes in views a\n"
               "                      removed package left (for a reinstall)\n\n"
               "See nsmanagerd(8) and nsmanagerd.conf(5).\n",
               NSM_CONFIG_FILE);
}

static bool arg_release = false;
static bool arg_orphans = false;

static int parse_argv(int argc, char *argv[], Manager *m) {
        enum { ARG_VERSION = 0x100, ARG_CONFIG, ARG_DEBUG, ARG_LOG_LEVEL, ARG_LOG_TARGET, ARG_LOG_EXPORT, ARG_RELEASE,
               ARG_ORPHANS };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h'            },
                { "version",    no_argument,       NULL, ARG_VERSION    },
                { "config",     required_argument, NULL, ARG_CONFIG     },
                { "debug",      no_argument,       NULL, ARG_DEBUG      },
                { "log-level",  required_argument, NULL, ARG_LOG_LEVEL  },
                { "log-target", required_argument, NULL, ARG_LOG_TARGET },
                { "log-export", required_argument, NULL, ARG_LOG_EXPORT },
                { "release",    no_argument,       NULL, ARG_RELEASE    },
                { "orphans",    no_argument,       NULL, ARG_ORPHANS    },
                {}
        };
        int c, fd, level;
        LogTarget target;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("nsmanagerd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_CONFIG:
                        free(m->config_file);
                        m->config_file = strdup(optarg);
                        if (!m->config_file)
                                return log_oom();
                        break;
                case ARG_DEBUG:
                        log_set_max_level(LOG_DEBUG);
                        break;
                case ARG_RELEASE:
                        arg_release = true;
                        break;
                case ARG_ORPHANS:
                        arg_orphans = true;
                        break;
                case ARG_LOG_LEVEL:
                        level = log_level_from_string(optarg);
                        if (level < 0)
                                return log_error_errno(level, "Invalid log level '%s'.", optarg);
                        log_set_max_level(level);
                        break;
                case ARG_LOG_TARGET:
                        target = log_target_from_string(optarg);
                        if (target < 0)
                                return log_error_errno(target, "Invalid log target '%s'.", optarg);
                        log_set_target(target);
                        break;
                case ARG_LOG_EXPORT:
                        /* Kept open for the whole run (and inherited by the helpers, which
                         * log too); O_APPEND: every record is one write. */
                        fd = open(optarg, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
                        if (fd < 0)
                                return log_error_errno(-errno, "Failed to open '%s': %m", optarg);
                        log_set_export_fd(fd);
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("This program takes no arguments.");
                return -EINVAL;
        }
        return 1;
}

/* StateDirectory= of the files, the default where they do not read: a maintainer script must
 * not fail over a typo. */
static char *state_directory(Manager *m) {
        _cleanup_strv_free_ char **errors = NULL;
        ManagerConfig c;
        char *d;

        manager_config_init(&c);
        if (manager_config_load(m->config_file, &c, &errors) < 0) {
                manager_config_done(&c);
                manager_config_init(&c);
        }
        d = c.state_directory ? strdup(c.state_directory) : NULL;
        manager_config_done(&c);
        return d;
}

/* nsmanagerd --orphans (the package's postinst): views a removal left that processes are still in. */
static int orphans(Manager *m) {
        _cleanup_free_ char *dir = state_directory(m);

        if (!dir)
                return log_oom(), EXIT_FAILURE;
        (void) orphans_report(dir, /* removing= */ false);
        return EXIT_SUCCESS;
}

/* nsmanagerd --release (the package's prerm on removal): the host's mounts the daemon made go,
 * as recorded in NSM_HOST_MOUNTS_FILE; the namespaces that processes are in live on in them. */
static int release(Manager *m) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int has_owner = 0, r;

        /* A running daemon would only make them again. Without a bus no daemon runs (it exits
         * when it loses the bus). */
        if (sd_bus_open_system(&bus) >= 0 &&
            sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", NULL, &reply, "s", NSM_BUS_NAME) >= 0 &&
            sd_bus_message_read(reply, "b", &has_owner) >= 0 && has_owner) {
                log_error("nsmanagerd runs (%s is owned on the bus): stop it first.", NSM_BUS_NAME);
                return EXIT_FAILURE;
        }
        dir = state_directory(m);
        if (!dir)
                return log_oom(), EXIT_FAILURE;
        /* Before the pins go: who will be left in a view no daemon knows. */
        (void) orphans_report(dir, /* removing= */ true);
        r = host_release();
        if (r < 0)
                return EXIT_FAILURE;
        if (r > 0)
                log_notice("Some of nsmanagerd's mounts stay on the host (see above).");
        return EXIT_SUCCESS;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        *(bool *) userdata = true;
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int main(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        bool asked_to_exit = false;
        sigset_t ss;
        int r;

        r = manager_new(&m);
        if (r < 0) {
                log_error_errno(r, "Failed to allocate the manager: %m");
                return EXIT_FAILURE;
        }
        m->version = PACKAGE_VERSION;
        r = parse_argv(argc, argv, m);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        /* The journal when run as a service, plain lines on a terminal (no "<N>"). */
        log_target_resolve();

        if (geteuid() != 0) {
                log_error("nsmanagerd must run as root: it creates mount namespaces.");
                return EXIT_FAILURE;
        }
        if (arg_release)
                return release(m);
        if (arg_orphans)
                return orphans(m);

        /* sd-event wants these blocked; children unblock them again (child.c, attach-process.c). Blocked,
         * a signal without its handler would never arrive: SIGTERM would be ignored until systemd
         * gives up and kills us. So no handler, no start (nothing has changed yet). */
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigaddset(&ss, SIGCHLD);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_exit_signal, &asked_to_exit);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_exit_signal, &asked_to_exit);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m);
        if (r < 0) {
                log_error_errno(r, "Failed to handle SIGTERM, SIGINT and SIGHUP, not starting: %m");
                return EXIT_FAILURE;
        }

        /* Nothing on the host changes before the configuration is whole and the bus is there:
         * a start that cannot serve leaves the host as it found it. */
        _cleanup_(nsm_error_done) NsmError why = {};
        r = manager_load_config(m, &why);
        if (r < 0) {
                log_error("%s", nsm_error_message(&why));
                return EXIT_FAILURE;
        }
        r = manager_connect_bus(m);
        if (r < 0)
                return EXIT_FAILURE;
        r = manager_startup(m);
        if (r < 0)
                return EXIT_FAILURE;

        /* Without it logins take the system bus: slower, not broken. Before the bus name is
         * ours, so that whoever sees the name finds the socket too. */
        r = private_server_new(m->event, &m->config, manager_bus_add_login_objects, m, &m->private_server);
        if (r < 0)
                log_warning_errno(r, "Failed to listen on %s, ignoring (logins use the system bus): %m", NSM_PRIVATE_SOCKET);
        r = manager_bus_serve(m);
        if (r >= 0)
                r = manager_serve(m);
        if (r < 0) {
                manager_undo_startup(m);
                return EXIT_FAILURE;
        }

        (void) sd_notify(false, "READY=1\nSTATUS=Managing user mount namespaces.");
        log_info("nsmanagerd %s running; SubtreeRoot=%s, StateDirectory=%s.", PACKAGE_VERSION, m->config.subtree_root,
                 m->state.root);

        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1");
        /* sd-bus ends the loop when the bus goes (exit-on-disconnect): that, or a signal. Losing
         * the bus is a failure, whoever made us lose it: Restart=on-failure starts us again
         * (the next call would only activate a daemon that lost every subscription and every
         * attached command's status meanwhile). */
        if (!asked_to_exit)
                log_error("Lost the connection to the system bus; exiting with failure (the namespaces stay pinned).");
        attach_done(m);
        attach_unit_done(m);
        manager_shutdown(m);
        if (r < 0) {
                log_error_errno(r, "Event loop failed: %m");
                return EXIT_FAILURE;
        }
        if (!asked_to_exit)
                return EXIT_FAILURE;
        log_info("Exiting; namespaces stay pinned under %s.", m->state.root);
        return EXIT_SUCCESS;
}
