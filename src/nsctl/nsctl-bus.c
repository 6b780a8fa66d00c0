/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bus-errors.h"
#include "bus-util.h"
#include "log.h"
#include "nsctl-bus.h"
#include "strv.h"
#include "text-escape.h"

BusSettings arg_bus = {
        .transport = BUS_TRANSPORT_LOCAL,
        .ask_password_mode = -1,
        .ask_password = true,
};

/* Why polkit could not ask for a password, for a refusal that says it would have to. */
static const char *no_agent_reason(void) {
        if (arg_bus.ask_password_mode == 0)
                return "--no-ask-password was given";
        if (arg_bus.transport != BUS_TRANSPORT_LOCAL)
                return "the daemon is on another machine, whose polkit cannot reach this terminal";
        return "standard input is not a terminal";
}

/* Errors whose D-Bus text would not tell a person what to do. NULL: the daemon's message is
 * fine as it is. */
static char *error_advice(const sd_bus_error *error) {
        char *s = NULL;

        if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                if (asprintf(&s, "nsmanagerd is not running%s%s, and the bus cannot start it (is nsmanager "
                             "installed?). Check with: systemctl status nsmanagerd; busctl status %s",
                             arg_bus.host ? " on " : "", arg_bus.host ?: "", NSM_BUS_NAME) < 0)
                        return NULL;
                return s;
        }
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED)) {
                if (asprintf(&s, "%s No polkit agent can ask for a password here (%s): run it as root (sudo nsctl ...)%s.",
                             error->message ?: "Authorization is required.", no_agent_reason(),
                             arg_bus.transport == BUS_TRANSPORT_LOCAL && arg_bus.ask_password_mode != 0 ?
                             ", or with --ask-password where a polkit agent runs in this session" : "") < 0)
                        return NULL;
                return s;
        }
        return NULL;
}

/* The daemon's message is meant for people: print it, never the D-Bus error name. An error
 * sd-bus made up from an errno of ours (the connection failed: "System.Error.ENOTCONN") says
 * nothing about the call, so the context goes first then. */
int bus_log_error(const sd_bus_error *error, int r, const char *fmt, ...) {
        _cleanup_free_ char *context = NULL, *advice = NULL;
        va_list ap;
        int k;

        advice = error ? error_advice(error) : NULL;
        if (advice)
                return log_error_errno(r, "%s", advice);

        if (error && error->message && error->message[0] &&
            !(error->name && strncmp(error->name, "System.Error.", strlen("System.Error.")) == 0)) {
                _cleanup_free_ char *message = NULL;

                /* The daemon escaped the sentence (text-escape.h); the log escapes what it prints
                 * by the same rule, so it gets the bytes back first and the text comes out as the
                 * daemon sent it, escaped once. A message that is not an escape is passed on as
                 * it came, and escaped there. */
                if (text_unescape(error->message, &message) < 0) {
                        message = strdup(error->message);
                        if (!message)
                                return log_oom();
                }
                return log_error_errno(r, "%s", message);
        }

        va_start(ap, fmt);
        k = vasprintf(&context, fmt, ap);
        va_end(ap);
        if (k < 0)
                return log_oom();
        return log_error_errno(r, "%s: %m", context);
}

int bus_connect(sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        /* Our named errors carry errno values: the table, registered, makes sd_bus_error_get_errno()
         * useful. */
        r = bus_error_add_map();
        if (r < 0)
                return log_error_errno(r, "Failed to register the error map: %m");

        switch (arg_bus.transport) {
        case BUS_TRANSPORT_LOCAL:
                /* sd_bus_open_system() honours $DBUS_SYSTEM_BUS_ADDRESS. */
                r = sd_bus_open_system(&bus);
                if (r < 0)
                        return log_error_errno(r, "Failed to connect to the system bus: %m");
                break;
        case BUS_TRANSPORT_REMOTE:
                /* "ssh -xT [-p PORT] [USER@]HOST systemd-stdio-bridge": the remote system bus. */
                r = sd_bus_open_system_remote(&bus, arg_bus.host);
                if (r < 0)
                        return log_error_errno(r, "Failed to connect to the system bus of '%s' over ssh: %m", arg_bus.host);
                break;
        case BUS_TRANSPORT_MACHINE:
                /* Enters the namespaces of the container's leader, which libsystemd finds in
                 * systemd-machined's /run/systemd/machines/NAME, and connects to the system bus
                 * there. ".host" names this machine's own bus. */
                r = sd_bus_open_system_machine(&bus, arg_bus.host);
                if (r == -EHOSTDOWN)
                        return log_error_errno(r, "Container '%s' is not running: systemd-machined knows no such machine.",
                                               arg_bus.host);
                if (r < 0)
                        return log_error_errno(r, "Failed to connect to the system bus of container '%s': %m", arg_bus.host);
                break;
        default:
                abort();
        }

        *ret = bus;
        return 0;
}

int manager_callv(sd_bus *bus, const char *member, uint64_t usec, sd_bus_error *error,
                  sd_bus_message **ret_reply, const char *types, va_list ap) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH,
                                           NSM_MANAGER_INTERFACE, member);
        if (r < 0)
                return r;

        if (types) {
                r = sd_bus_message_appendv(m, types, ap);
                if (r < 0)
                        return r;
        }

        r = sd_bus_message_set_allow_interactive_authorization(m, arg_bus.ask_password);
        if (r < 0)
                return r;

        return sd_bus_call(bus, m, usec, error, ret_reply);
}

int manager_call(sd_bus *bus, const char *member, uint64_t usec, sd_bus_error *error,
                 sd_bus_message **ret_reply, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = manager_callv(bus, member, usec, error, ret_reply, types, ap);
        va_end(ap);
        return r;
}

void namespace_info_done(NamespaceInfo *i) {
        if (!i)
                return;
        free(i->user);
        free(i->state);
        free(i->object);
        free(i->root);
        strv_free(i->sessions);
        *i = (NamespaceInfo) {};
}

void namespace_info_array_free(NamespaceInfo *a, size_t n) {
        for (size_t i = 0; i < n; i++)
                namespace_info_done(a + i);
        free(a);
}

static int read_string_variant(sd_bus_message *m, char **ret) {
        const char *s;
        char *copy;
        int r;

        r = sd_bus_message_read(m, "v", "s", &s);
        if (r < 0)
                return r;
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        free(*ret);
        *ret = copy;
        return 0;
}

static int read_namespace_property(sd_bus_message *m, const char *name, void *userdata) {
        NamespaceInfo *i = userdata;
        int r;

        if (streq(name, "Name"))
                r = read_string_variant(m, &i->user);
        else if (streq(name, "State"))
                r = read_string_variant(m, &i->state);
        else if (streq(name, "Root"))
                r = read_string_variant(m, &i->root);
        else if (streq(name, "UID"))
                r = sd_bus_message_read(m, "v", "u", &i->uid);
        else if (streq(name, "GID"))
                r = sd_bus_message_read(m, "v", "u", &i->gid);
        else if (streq(name, "NMounts"))
                r = sd_bus_message_read(m, "v", "u", &i->n_mounts);
        else if (streq(name, "MountNamespaceId"))
                r = sd_bus_message_read(m, "v", "t", &i->mntns_id);
        else if (streq(name, "Timestamp"))
                r = sd_bus_message_read(m, "v", "t", &i->timestamp);
        else if (streq(name, "Linger")) {
                int b;

                r = sd_bus_message_read(m, "v", "b", &b);
                i->linger = b;
        } else if (streq(name, "Sessions")) {
                r = sd_bus_message_enter_container(m, 'v', "as");
                if (r >= 0) {
                        i->sessions = strv_free(i->sessions);
                        r = sd_bus_message_read_strv(m, &i->sessions);
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        } else
                return 0;
        return r < 0 ? r : 1;
}

static int namespace_info_read_properties(sd_bus *bus, const char *object, NamespaceInfo *i,
                                          sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, NSM_BUS_NAME, object, "org.freedesktop.DBus.Properties",
                               "GetAll", error, &reply, "s", NSM_NAMESPACE_INTERFACE);
        if (r < 0)
                return r;
        return bus_message_read_dict(reply, read_namespace_property, i);
}

static int namespace_cmp(const void *a, const void *b) {
        const NamespaceInfo *x = a, *y = b;

        return strcmp(x->user, y->user);
}

int list_namespaces(sd_bus *bus, bool properties, NamespaceInfo **ret, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        NamespaceInfo *a = NULL;
        size_t n = 0, allocated = 0;
        const char *user, *state, *object;
        uint32_t uid;
        int r;

        r = manager_call(bus, "ListNamespaces", 0, &error, &reply, NULL);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to list namespaces");

        r = sd_bus_message_enter_container(reply, 'a', "(suso)");
        if (r < 0)
                goto parse_error;

        while ((r = sd_bus_message_read(reply, "(suso)", &user, &uid, &state, &object)) > 0) {
                if (n >= allocated) {
                        NamespaceInfo *b;

                        allocated = allocated ? allocated * 2 : 16;
                        b = realloc(a, allocated * sizeof(NamespaceInfo));
                        if (!b) {
                                namespace_info_array_free(a, n);
                                return log_oom();
                        }
                        a = b;
                }
                a[n] = (NamespaceInfo) {
                        .user = strdup(user),
                        .uid = uid,
                        .state = strdup(state),
                        .object = strdup(object),
                };
                n++;
                if (!a[n - 1].user || !a[n - 1].state || !a[n - 1].object) {
                        namespace_info_array_free(a, n);
                        return log_oom();
                }
        }
        if (r < 0)
                goto parse_error;

        if (properties)
                for (size_t i = 0; i < n; i++) {
                        r = namespace_info_read_properties(bus, a[i].object, a + i, &error);
                        if (r < 0) {
                                /* Removed between the two calls: not an error, drop it. */
                                if (sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_OBJECT) ||
                                    sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD)) {
                                        sd_bus_error_free(&error);
                                        namespace_info_done(a + i);
                                        memmove(a + i, a + i + 1, (n - i - 1) * sizeof(NamespaceInfo));
                                        n--;
                                        i--;
                                        continue;
                                }
                                r = bus_log_error(&error, r, "Failed to read the properties of %s", a[i].object);
                                namespace_info_array_free(a, n);
                                return r;
                        }
                }

        if (n > 1)
                qsort(a, n, sizeof(NamespaceInfo), namespace_cmp);

        *ret = a;
        *ret_n = n;
        return 0;

parse_error:
        namespace_info_array_free(a, n);
        return log_error_errno(r, "Failed to parse the reply of ListNamespaces: %m");
}

int get_namespace(sd_bus *bus, const char *user, NamespaceInfo *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        NamespaceInfo i = {};
        const char *object;
        int r;

        r = manager_call(bus, "GetNamespace", 0, &error, &reply, "s", user);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to get the namespace of '%s'", user);

        r = sd_bus_message_read(reply, "o", &object);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of GetNamespace: %m");

        i.object = strdup(object);
        if (!i.object)
                return log_oom();

        r = namespace_info_read_properties(bus, object, &i, &error);
        if (r < 0) {
                namespace_info_done(&i);
                return bus_log_error(&error, r, "Failed to read the properties of %s", object);
        }

        *ret = i;
        return 0;
}

int namespace_name_by_uid(sd_bus *bus, uid_t uid, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *object;
        char *name = NULL;
        int r;

        r = manager_call(bus, "GetNamespaceByUID", 0, &error, &reply, "u", (uint32_t) uid);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to get the namespace of UID %u", (unsigned) uid);
        r = sd_bus_message_read(reply, "o", &object);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of GetNamespaceByUID: %m");
        r = sd_bus_get_property_string(bus, NSM_BUS_NAME, object, NSM_NAMESPACE_INTERFACE, "Name", &error, &name);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to read the name of %s", object);
        *ret = name;
        return 0;
}

int get_mounts(sd_bus *bus, const char *user, sd_bus_error *error, MountEntry **ret, size_t *ret_n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        MountEntry *a = NULL;
        size_t n = 0, allocated = 0;
        int r;

        r = manager_call(bus, "GetMounts", 0, error, &reply, "s", user);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(ttttssss)");
        if (r < 0)
                return r;

        for (;;) {
                MountEntry mi = {};
                const char *target, *source, *fstype, *propagation;

                r = sd_bus_message_read(reply, "(ttttssss)", &mi.id, &mi.parent_id,
                                        &mi.peer_group, &mi.master_group,
                                        &target, &source, &fstype, &propagation);
                if (r < 0) {
                        mount_entries_free(a, n);
                        return r;
                }
                if (r == 0)
                        break;

                if (n >= allocated) {
                        MountEntry *b;

                        allocated = allocated ? allocated * 2 : 64;
                        b = realloc(a, allocated * sizeof(MountEntry));
                        if (!b) {
                                mount_entries_free(a, n);
                                return -ENOMEM;
                        }
                        a = b;
                }
                mi.target = strdup(target);
                mi.source = strdup(source);
                mi.fstype = strdup(fstype);
                mi.propagation = strdup(propagation);
                a[n++] = mi;
                if (!mi.target || !mi.source || !mi.fstype || !mi.propagation) {
                        mount_entries_free(a, n);
                        return -ENOMEM;
                }
        }

        *ret = a;
        *ret_n = n;
        return 0;
}

int get_mounts_ex(sd_bus *bus, const char *user, sd_bus_error *error, MountEntry **ret, size_t *ret_n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        MountEntry *a = NULL;
        size_t n = 0;
        int r;

        r = manager_call(bus, "GetMountsEx", 0, error, &reply, "s", user);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(tttttsaysaysssts)");
        while (r >= 0) {
                MountEntry mi = {}, *b;
                const char *target, *source, *fstype, *options, *propagation, *origin;

                r = sd_bus_message_enter_container(reply, 'r', "tttttsaysaysssts");
                if (r <= 0)
                        break;
                /* The escaped strings (shown as they are), not the bytes. */
                r = sd_bus_message_read(reply, "ttttts", &mi.id, &mi.fingerprint, &mi.parent_id, &mi.peer_group,
                                        &mi.master_group, &target);
                if (r >= 0)
                        r = sd_bus_message_skip(reply, "ay");
                if (r >= 0)
                        r = sd_bus_message_read(reply, "s", &source);
                if (r >= 0)
                        r = sd_bus_message_skip(reply, "ay");
                if (r >= 0)
                        r = sd_bus_message_read(reply, "sssts", &fstype, &options, &propagation, &mi.dev,
                                                &origin);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        break;
                b = realloc(a, (n + 1) * sizeof(MountEntry));
                if (!b) {
                        r = -ENOMEM;
                        break;
                }
                a = b;
                mi.target = strdup(target);
                mi.source = strdup(source);
                mi.fstype = strdup(fstype);
                mi.options = strdup(options);
                mi.propagation = strdup(propagation);
                mi.origin = strdup(origin);
                a[n++] = mi;
                if (!mi.target || !mi.source || !mi.fstype || !mi.options || !mi.propagation || !mi.origin)
                        r = -ENOMEM;
        }
        if (r < 0) {
                mount_entries_free(a, n);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

/* The polkit agent: as systemctl does, run pkttyagent on our terminal while a call that may
 * need authorization is under way, so that an administrator is asked for a password. */
static pid_t agent_pid = 0;

void polkit_agent_open_if_enabled(void) {
        _cleanup_close_ int notify_read = -EBADF, notify_write = -EBADF;
        int pipefd[2];
        char pidbuf[32], fdbuf[32];
        pid_t pid;

        if (agent_pid > 0 || !arg_bus.ask_password)
                return;
        /* The agent registers with this machine's polkitd; over --host or --machine another
         * polkitd decides, and nobody could answer it here. */
        if (arg_bus.transport != BUS_TRANSPORT_LOCAL)
                return;
        if (geteuid() == 0) /* root is always allowed */
                return;
        if (!isatty(STDIN_FILENO) || access("/usr/bin/pkttyagent", X_OK) < 0)
                return;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return;
        notify_read = pipefd[0];
        notify_write = pipefd[1];

        snprintf(pidbuf, sizeof(pidbuf), "%d", (int) getpid());

        pid = fork();
        if (pid < 0)
                return;
        if (pid == 0) {
                int fd = fcntl(notify_write, F_DUPFD, 3); /* without O_CLOEXEC */
                sigset_t ss;

                /* attach blocks the signals it handles: the agent must die of SIGTERM */
                sigemptyset(&ss);
                (void) sigprocmask(SIG_SETMASK, &ss, NULL);
                if (fd < 0)
                        _exit(EXIT_FAILURE);
                snprintf(fdbuf, sizeof(fdbuf), "%d", fd);
                execl("/usr/bin/pkttyagent", "pkttyagent", "--notify-fd", fdbuf, "--fallback",
                      "--process", pidbuf, (char *) NULL);
                _exit(EXIT_FAILURE);
        }

        agent_pid = pid;
        notify_write = safe_close(notify_write);

        /* Wait until the agent has registered (it closes the notify fd), or has died. */
        for (;;) {
                char c;
                ssize_t k = read(notify_read, &c, 1);

                if (k < 0 && errno == EINTR)
                        continue;
                break;
        }
}

void polkit_agent_close(void) {
        if (agent_pid <= 0)
                return;

        (void) kill(agent_pid, SIGTERM);
        (void) kill(agent_pid, SIGCONT);
        while (waitpid(agent_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        agent_pid = 0;
}
