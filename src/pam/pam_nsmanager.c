/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam_nsmanager: puts a login into its user's mount namespace.
 *
 *   session optional pam_nsmanager.so [debug] [timeout=SECONDS] [attach]
 *
 * open_session asks nsmanagerd for the session (OpenSession(user, session_id) → (o, h, h)) and
 * setns()es the calling thread into the mount namespace of the first fd, so everything the
 * login process forks afterwards (shell, systemd --user, the desktop) lives in the user's view.
 * The second fd is the session: it lasts while any copy of it is open (logind's pattern, as
 * pam_systemd keeps its session FIFO). The module keeps it, close-on-exec, with pam_set_data();
 * close_session closes it, and so does the end of the login process, however it ends. A child
 * that forks without exec keeps the session open until it exits too. No call is made to close.
 *
 * With "attach" (only in the PAM service nsmanager-attach, pam.d/nsmanager-attach, which
 * nsmanagerd's transient units for Attach() name in PAMName=) the namespace is not the PAM
 * user's but the one in NSMANAGER_ATTACH_NAMESPACE of the PAM environment, which nsmanagerd
 * sets in the unit: the caller may attach to another user's view.
 *
 * The call goes through sd-bus, to nsmanagerd's private socket (root only, peer to peer, no
 * dbus-daemon in between), else, where nobody listens there (the daemon is not running), to the
 * system bus, which starts the daemon. One code path either way: only the address differs.
 *
 * A login that does not get its view, whatever the reason (the daemon down, stuck or refusing,
 * an NSS failure, a failed setns), follows LoginWithoutView= as the daemon last published it
 * (login-filter.h): PAM_IGNORE where the login may go on in the host namespace, PAM_SESSION_ERR
 * where it may not, which the package's profile ([... session_err=bad default=ignore]) and
 * `required` turn into a failed login. Root and users outside MinUID=/ExcludeUsers= always get
 * PAM_IGNORE. The module returns nothing else from open_session but PAM_SUCCESS, so that a
 * stack's other controls (default=ignore) never meet an answer they did not expect.
 *
 * Nothing it does may reach the login's terminal but one line when it refuses a login
 * (say_refused(), through the conversation as pam_nologin, not under PAM_SILENT): it reports
 * through pam_syslog() only, never through stdio or the shared code's log functions (log.c,
 * which writes to stderr, is not linked in: tests/test_pam.py checks the module's imports).
 *
 * A login never waits for the daemon longer than timeout= (10 s by default): one deadline,
 * taken when open_session starts, bounds connecting, authenticating, Hello and the call.
 * sd_bus_call() cannot give that (it first waits for the connection with sd-bus's own 25 s
 * authentication timeout), so the module drives the connection itself (bus_run_until_answered()).
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>

#include "bus-errors.h"
#include "login-filter.h"
#include "macros.h"
#include "parse-util.h"
#include "strv.h"
#include "text-escape.h"
#include "time-util.h"
#include "user-util.h"

#define PAM_DATA_SESSION "pam_nsmanager:session"

#define _public_ __attribute__((visibility("default")))

/* sd-bus's default, which sd_bus_open_system() uses where DBUS_SYSTEM_BUS_ADDRESS is not set. */
#define SYSTEM_BUS_ADDRESS_DEFAULT "unix:path=/run/dbus/system_bus_socket"

#define TIMEOUT_DEFAULT_USEC (10 * USEC_PER_SEC)
/* More than this is a typo (timeout=3600000, meant as ms), not a wish to wait for an hour. */
#define TIMEOUT_MAX_USEC (3600 * USEC_PER_SEC)

#define ATTACH_NAMESPACE_ENV "NSMANAGER_ATTACH_NAMESPACE"

typedef struct ModuleOptions {
        bool debug;
        uint64_t timeout_usec;
        bool attach;
        bool silent;                    /* PAM_SILENT: not even the refusal's line */
} ModuleOptions;

/* The session open_session opened, for close_session (and for the end of the handle). */
typedef struct SessionData {
        char *user;
        char *id;
        int fd;                 /* the session fd: the session lasts while a copy is open */
} SessionData;

#define pam_debug_syslog(handle, opts, ...)                             \
        do {                                                            \
                if ((opts)->debug)                                      \
                        pam_syslog((handle), LOG_DEBUG, __VA_ARGS__);   \
        } while (0)

static void session_data_free(SessionData *d) {
        if (!d)
                return;
        free(d->user);
        free(d->id);
        safe_close(d->fd);
        free(d);
}

static void session_data_freep(SessionData **d) {
        session_data_free(*d);
}

/* pam_end(), or pam_set_data() replacing it: this process's copy of the session fd goes. */
static void session_data_cleanup(pam_handle_t *handle _unused_, void *data, int error_status _unused_) {
        session_data_free(data);
}

/* A bad option is logged and ignored: the login goes on with the default, as it would for a
 * missing option (refusing it would lock out every login of a stack with `required`). */
static void parse_argv(pam_handle_t *handle, int argc, const char **argv, ModuleOptions *ret) {
        ModuleOptions opts = {
                .timeout_usec = TIMEOUT_DEFAULT_USEC,
        };

        for (int i = 0; i < argc; i++) {
                const char *v;

                if (streq(argv[i], "debug"))
                        opts.debug = true;
                else if (streq(argv[i], "attach"))
                        opts.attach = true;
                else if (strncmp(argv[i], "timeout=", 8) == 0) {
                        uint64_t usec;

                        v = argv[i] + 8;
                        if (parse_sec(v, &usec) < 0 || usec == 0 || usec > TIMEOUT_MAX_USEC)
                                pam_syslog(handle, LOG_WARNING,
                                           "Invalid timeout '%s' (seconds, more than 0 and at most 3600), using %llus.",
                                           v, (unsigned long long) (TIMEOUT_DEFAULT_USEC / USEC_PER_SEC));
                        else
                                opts.timeout_usec = usec;
                } else
                        pam_syslog(handle, LOG_WARNING, "Unknown option '%s', ignoring.", argv[i]);
        }

        *ret = opts;
}

/* What the daemon published (login-filter.h): this boot's copy, else, before the daemon's first
 * start since boot, the one it keeps across reboots. 1 with *ret filled, 0 if there is none
 * (none was ever published: the daemon is asked about the range, and a login without its view
 * is allowed). */
static int read_login_filter(pam_handle_t *handle, const ModuleOptions *opts, LoginFilter *ret) {
        const char *const paths[] = { NSM_LOGIN_FILTER_FILE, NSM_LOGIN_FILTER_PERSISTENT_FILE };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                int r = login_filter_read(paths[i], ret);
                if (r >= 0) {
                        if (i > 0)
                                pam_debug_syslog(handle, opts, "Following %s: nsmanagerd has not started since boot.",
                                                 paths[i]);
                        return 1;
                }
                if (r != -ENOENT)
                        pam_syslog(handle, LOG_WARNING, "Failed to read %s, ignoring: %s", paths[i], strerror(-r));
        }
        return 0;
}

/* Is the user one nsmanagerd manages? Root never is, and no bus call is made for it. The others
 * by what the daemon published from its MinUID= and ExcludeUsers=: every cron job of a system
 * user loads this module, and none of them should cost a bus call, nor start the daemon.
 * Without the filter (the daemon never ran) the daemon is asked, and its UserExcluded answer is
 * followed. */
static bool user_is_managed(pam_handle_t *handle, const ModuleOptions *opts, const LoginFilter *filter,
                            const char *user, uid_t uid) {
        if (uid == 0)
                return false;
        if (!filter) {
                pam_debug_syslog(handle, opts, "No login filter published, asking nsmanagerd about user '%s'.", user);
                return true;
        }
        if (login_filter_excludes(filter, user, uid)) {
                pam_debug_syslog(handle, opts, "User '%s' (UID %u) is outside nsmanagerd's range (MinUID=, ExcludeUsers=).",
                                 user, (unsigned) uid);
                return false;
        }
        return true;
}

/* The one line a refused login is told, through the PAM conversation (su, login and display
 * managers show it; sshd and user@.service have nowhere to: docs/pam.md): the administrator's
 * LoginRefusedMessage= as published, else a neutral sentence. Never the reason, which may be
 * another's business (the journal has it). */
static void say_refused(pam_handle_t *handle, const ModuleOptions *opts, const LoginFilter *filter) {
        const char *text = filter && filter->refused_message ? filter->refused_message : LOGIN_REFUSED_MESSAGE_DEFAULT;

        if (opts->silent)
                return;
        (void) pam_error(handle, "%s", text);
}

/* The answer for a login that does not get its view: LoginWithoutView= as the daemon last
 * published it (none: allow). 'record' is the user's, NULL where NSS did not say; under
 * `restricted` her groups are looked up where a group has a [View] policy, and a failed lookup
 * counts as a policy. An attach unit's command runs in the view or not at all. Logged. */
static int without_view(pam_handle_t *handle, const ModuleOptions *opts, const LoginFilter *filter, const char *user,
                        const UserRecord *record) {
        _cleanup_strv_free_ char **groups = NULL;
        const char *rule = filter && filter->login_without_view >= 0 ? login_without_view_to_string(filter->login_without_view)
                                                                      : "allow";
        bool groups_known = false;

        if (opts->attach)
                return PAM_SESSION_ERR;
        if (record && login_filter_needs_groups(filter)) {
                int r = user_group_names(record->name, record->gid, &groups);
                if (r < 0)
                        pam_syslog(handle, LOG_ERR, "Failed to look up the groups of user '%s': %s", record->name,
                                   strerror(-r));
                else
                        groups_known = true;
        }
        if (login_filter_allows_without_view(filter, user, groups, groups_known)) {
                pam_syslog(handle, LOG_NOTICE, "The session of user '%s' goes on in the host namespace, without its view "
                           "(LoginWithoutView=%s%s).", user ?: "(unknown)", rule,
                           filter ? "" : ", none published");
                return PAM_IGNORE;
        }
        pam_syslog(handle, LOG_ERR, "Refusing the session of user '%s' without its view (LoginWithoutView=%s%s).",
                   user ?: "(unknown)", rule,
                   filter && filter->login_without_view == LOGIN_WITHOUT_VIEW_RESTRICTED ?
                   ": a [View] policy applies, or cannot be ruled out" : "");
        say_refused(handle, opts, filter);
        return PAM_SESSION_ERR;
}

/* The session id: logind's session of the login process, as the kernel says (the process's
 * cgroup, session-N.scope, where pam_systemd put it before us), else one made of this handle's
 * service, tty and the login process's pid, kept for close_session with pam_set_data().
 *
 * Never XDG_SESSION_ID: in the PAM environment a stack with pam_env's user_readenv=1 before us
 * lets the user choose it, and the process's own is inherited from whatever session started
 * the login. (A login started inside another logind session, su in an ssh session, is in that
 * session: it gets that id, and the daemon keeps the id until the last session of it ends.) */
static int make_session_id(pam_handle_t *handle, const ModuleOptions *opts, char **ret) {
        const char *service = NULL, *tty = NULL;
        char *id = NULL;

        /* An attach unit runs in the caller's user slice, in no session. */
        if (!opts->attach && sd_pid_get_session(0, &id) >= 0) {
                *ret = id;
                return 0;
        }
        id = mfree(id);

        (void) pam_get_item(handle, PAM_SERVICE, (const void **) &service);
        (void) pam_get_item(handle, PAM_TTY, (const void **) &tty);

        if (tty && strncmp(tty, "/dev/", 5) == 0)
                tty += 5;

        if (asprintf(&id, "pam-%s-%s-%i",
                     service && service[0] ? service : "unknown",
                     tty && tty[0] ? tty : "notty",
                     (int) getpid()) < 0)
                return -ENOMEM;

        /* Keep it a plain token (the daemon refuses spaces and ':'): "pts/3" → "pts_3", ":0" → "_0". */
        for (char *p = id; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '-' || *p == '_' || *p == '.'))
                        *p = '_';

        *ret = id;
        return 0;
}

static const char *bus_error_message(const sd_bus_error *error, int r) {
        if (error && sd_bus_error_is_set(error) && error->message)
                return error->message;
        if (error && sd_bus_error_is_set(error))
                return error->name;
        return strerror(r < 0 ? -r : r);
}

/* Joins the mount namespace behind 'fd' with the calling thread, keeping the working
 * directory if it exists in the new view, else going to 'home', else to "/". */
static int join_namespace(pam_handle_t *handle, const ModuleOptions *opts, int fd, const char *home) {
        _cleanup_free_ char *cwd = NULL;

        /* setns(CLONE_NEWNS) refuses (EINVAL) a thread that shares its fs_struct with others,
         * as every thread of a multi-threaded process does (a display manager's session worker).
         * Give this thread its own first; in a single-threaded process this changes nothing. */
        if (unshare(CLONE_FS) < 0) {
                int r = -errno;
                pam_syslog(handle, LOG_ERR, "Failed to unshare the file system attributes of this thread: %m");
                return r;
        }

        /* NULL (e.g. a deleted directory) is fine: we go home then. An attach unit's is systemd's
         * "/": home, and systemd then changes to the caller's directory where the view has it. */
        cwd = opts->attach ? NULL : getcwd(NULL, 0);

        if (setns(fd, CLONE_NEWNS) < 0) {
                int r = -errno;
                pam_syslog(handle, LOG_ERR, "Failed to join the user's mount namespace: %m");
                return r;
        }

        /* setns() moved root and working directory to the root of the new namespace. */
        if (cwd && chdir(cwd) >= 0)
                pam_debug_syslog(handle, opts, "Working directory kept: %s", cwd);
        else if (chdir(home) >= 0)
                pam_debug_syslog(handle, opts, "Working directory %s does not exist in the view, using %s.",
                                 cwd ?: "(unknown)", home);
        else {
                pam_debug_syslog(handle, opts, "Neither %s nor %s exists in the view, using /.",
                                 cwd ?: "(unknown)", home);
                (void) chdir("/");
        }

        return 0;
}

/* Starts a connection without waiting for anything: sd_bus_start() only starts the
 * non-blocking connect() and queues the authentication (and Hello(), on a bus). */
static int connection_start(const char *address, bool bus_client, sd_bus **ret) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;
        r = sd_bus_set_bus_client(bus, bus_client);
        if (r < 0)
                return r;
        r = sd_bus_negotiate_fds(bus, true);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(bus);
        return 0;
}

/* nsmanagerd's private socket first (NSM_PRIVATE_SOCKET: root only, no dbus-daemon in
 * between, half the trips); where it is not there or nobody listens (connect() fails at
 * once: the daemon is not running), the system bus, which also starts the daemon. Its
 * address is the one sd_bus_open_system() would use, read with secure_getenv(), because su and
 * sudo are setuid: a user must not point a root login at a bus of their own, which would hand
 * the module a namespace fd of the user's choosing. */
static int bus_connect(pam_handle_t *handle, const ModuleOptions *opts, sd_bus **ret) {
        const char *address;
        int r;

        r = connection_start("unix:path=" NSM_PRIVATE_SOCKET, /* bus_client= */ false, ret);
        if (r >= 0)
                return 0;
        pam_debug_syslog(handle, opts, "No connection to %s (%s), taking the system bus.", NSM_PRIVATE_SOCKET,
                         strerror(-r));
        address = secure_getenv("DBUS_SYSTEM_BUS_ADDRESS");
        return connection_start(address ?: SYSTEM_BUS_ADDRESS_DEFAULT, /* bus_client= */ true, ret);
}

static int reply_received(sd_bus_message *m, void *userdata, sd_bus_error *ret_error _unused_) {
        sd_bus_message **reply = userdata;

        *reply = sd_bus_message_ref(m);
        return 1;
}

/* Calls OpenSession(user, id) and runs the connection (connect, authenticate, Hello, write,
 * read) until the reply came, which may be an error reply (or the error sd-bus made up for it:
 * the connection went away): -ETIMEDOUT at the deadline, which is checked on every turn, also
 * while there is work. On a connection that is not up yet the call is queued, and written right
 * behind the authentication (and Hello(), on the bus). */
static int call_open_session(sd_bus *bus, const char *user, const char *id, uint64_t deadline,
                             sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "OpenSession");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", user, id);
        if (r < 0)
                return r;
        /* No timeout of sd-bus's own (UINT64_MAX): the deadline is the one. */
        r = sd_bus_call_async(bus, &slot, m, reply_received, &reply, UINT64_MAX);
        if (r < 0)
                return r;
        for (;;) {
                uint64_t n;

                if (reply) {
                        *ret_reply = TAKE_PTR(reply);
                        return 0;
                }
                n = now_usec(CLOCK_MONOTONIC);
                if (n >= deadline)
                        return -ETIMEDOUT;
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, deadline - n);
                if (r < 0 && r != -EINTR)
                        return r;
        }
}

/* Who logs in: PAM_SUCCESS with the user's record, PAM_IGNORE for a user not ours (logged at
 * debug level), or what LoginWithoutView= says for a user NSS could not tell about (logged).
 *
 * A user is her uid, and NSS decides who a name is: the name as the login program got it (sshd
 * and login hand on what was typed: "ALICE", "alice@CORP.EXAMPLE", "CORP\\alice") goes to NSS
 * first, whatever its shape, and from then on only the record's canonical name and uid count,
 * for the range, the rule and the call. Judging the typed name first would let a spelling the
 * directory resolves to a managed user walk past her view. */
static int resolve_user(pam_handle_t *handle, const ModuleOptions *opts, const LoginFilter *filter, const char *user,
                        UserRecord *ret_record) {
        _cleanup_free_ char *shown = text_escape(user);
        int r;

        r = user_record_by_name(user, ret_record);
        if (r < 0) {
                if (r == -ESRCH)
                        pam_syslog(handle, LOG_ERR, "User '%s' does not exist.", shown ?: "?");
                else
                        pam_syslog(handle, LOG_ERR, "Failed to look up user '%s': %s", shown ?: "?", strerror(-r));
                /* Without a uid only what the name says: root, and ExcludeUsers=. */
                if (streq(user, "root") ||
                    (filter && strv_contains((const char *const *) filter->exclude_users, user)))
                        return PAM_IGNORE;
                return without_view(handle, opts, filter, NULL, NULL);
        }
        if (!user_is_managed(handle, opts, filter, ret_record->name, ret_record->uid))
                return PAM_IGNORE;
        if (!valid_user_name(ret_record->name)) {
                _cleanup_free_ char *canonical = text_escape(ret_record->name);
                pam_syslog(handle, LOG_ERR, "NSS names the user of '%s' (UID %u) '%s', which cannot name a view (a '/', "
                           "'.' or '..', control characters, invalid UTF-8, or longer than NAME_MAX).", shown ?: "?",
                           (unsigned) ret_record->uid, canonical ?: "?");
                return without_view(handle, opts, filter, NULL, NULL);
        }
        if (!streq(user, ret_record->name))
                pam_debug_syslog(handle, opts, "'%s' is user '%s' (UID %u) to NSS.", shown ?: "?", ret_record->name,
                                 (unsigned) ret_record->uid);
        return PAM_SUCCESS;
}

/* Whose namespace: the PAM user's; with "attach" the one nsmanagerd named in the unit, and the
 * command starts in the home of the PAM user (the caller). *ret_user is the canonical name, in
 * *ret_record. */
static int resolve_target(pam_handle_t *handle, const ModuleOptions *opts, const LoginFilter *filter,
                          const char **ret_user, UserRecord *ret_record, char **ret_home) {
        _cleanup_(user_record_done) UserRecord caller = {};
        const char *user = NULL;
        int r;

        r = pam_get_user(handle, &user, NULL);
        if (r != PAM_SUCCESS || !user || !user[0]) {
                pam_syslog(handle, LOG_ERR, "Failed to get the user name: %s", pam_strerror(handle, r));
                return without_view(handle, opts, filter, NULL, NULL);
        }
        if (opts->attach) {
                r = user_record_by_name(user, &caller);
                if (r < 0) {
                        _cleanup_free_ char *shown = text_escape(user);
                        pam_syslog(handle, LOG_ERR, "Failed to look up user '%s': %s", shown ?: "?", strerror(-r));
                        return PAM_SESSION_ERR;
                }
                user = pam_getenv(handle, ATTACH_NAMESPACE_ENV);
                if (!user || !user[0]) {
                        pam_syslog(handle, LOG_ERR, "%s is not set: 'attach' is for nsmanagerd's attach units only.",
                                   ATTACH_NAMESPACE_ENV);
                        return PAM_SESSION_ERR;
                }
        }
        r = resolve_user(handle, opts, filter, user, ret_record);
        if (r != PAM_SUCCESS)
                return r;
        *ret_user = ret_record->name;
        *ret_home = TAKE_PTR(caller.home);
        return PAM_SUCCESS;
}

static SessionData *session_data_new(pam_handle_t *handle, const ModuleOptions *opts, const char *user) {
        _cleanup_(session_data_freep) SessionData *data = calloc(1, sizeof(SessionData));

        if (!data)
                return NULL;
        data->fd = -EBADF;
        if (!(data->user = strdup(user)) || make_session_id(handle, opts, &data->id) < 0)
                return NULL;
        return TAKE_PTR(data);
}

/* OpenSession: PAM_SUCCESS with the namespace fd in *ret_fd and the session's in data->fd,
 * PAM_IGNORE for a user the daemon does not manage, else PAM_SESSION_ERR (logged). */
static int open_with_daemon(pam_handle_t *handle, const ModuleOptions *opts, SessionData *data, uint64_t deadline,
                            int *ret_fd) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const sd_bus_error *error;
        const char *object = NULL;
        int r, mntns_fd, session_fd;

        r = bus_connect(handle, opts, &bus);
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to connect to nsmanagerd or the system bus: %s", strerror(-r));
                return PAM_SESSION_ERR;
        }
        r = call_open_session(bus, data->user, data->id, deadline, &reply);
        if (r == -ETIMEDOUT) {
                pam_syslog(handle, LOG_ERR, "nsmanagerd did not answer OpenSession for session '%s' of user '%s' within %.3gs (timeout=).",
                           data->id, data->user, (double) opts->timeout_usec / USEC_PER_SEC);
                return PAM_SESSION_ERR;
        }
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to call OpenSession for session '%s' of user '%s': %s",
                           data->id, data->user, strerror(-r));
                return PAM_SESSION_ERR;
        }
        error = sd_bus_message_get_error(reply);
        if (error) {
                if (bus_error_code(error) == NSM_ERROR_USER_EXCLUDED) {
                        /* The daemon is the authority on its range (the filter file may be older). */
                        pam_syslog(handle, LOG_NOTICE, "nsmanagerd does not manage user '%s': %s",
                                   data->user, bus_error_message(error, 0));
                        return PAM_IGNORE;
                }
                pam_syslog(handle, LOG_ERR, "Failed to open session '%s' of user '%s' with nsmanagerd: %s",
                           data->id, data->user, bus_error_message(error, sd_bus_message_get_errno(reply)));
                return PAM_SESSION_ERR;
        }
        r = sd_bus_message_read(reply, "ohh", &object, &mntns_fd, &session_fd);
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to read nsmanagerd's answer to OpenSession: %s", strerror(-r));
                return PAM_SESSION_ERR;
        }
        /* Both belong to the message; ours must outlive it. */
        data->fd = fcntl(session_fd, F_DUPFD_CLOEXEC, 3);
        *ret_fd = data->fd >= 0 ? fcntl(mntns_fd, F_DUPFD_CLOEXEC, 3) : -EBADF;
        if (*ret_fd < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to keep the fds of nsmanagerd's answer: %m");
                return PAM_SESSION_ERR;
        }
        pam_debug_syslog(handle, opts, "Session '%s' of user '%s' is in %s.", data->id, data->user, object);
        return PAM_SUCCESS;
}

_public_ PAM_EXTERN int pam_sm_open_session(pam_handle_t *handle, int flags, int argc, const char **argv) {
        _cleanup_(session_data_freep) SessionData *data = NULL;
        _cleanup_(user_record_done) UserRecord record = {};
        _cleanup_(login_filter_done) LoginFilter filter_data = {};
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *attach_home = NULL;
        const LoginFilter *filter;
        const char *user = NULL;
        ModuleOptions opts;
        uint64_t deadline;
        int r;

        parse_argv(handle, argc, argv, &opts);
        opts.silent = flags & PAM_SILENT;
        deadline = now_usec(CLOCK_MONOTONIC) + opts.timeout_usec;
        filter = read_login_filter(handle, &opts, &filter_data) > 0 ? &filter_data : NULL;

        r = resolve_target(handle, &opts, filter, &user, &record, &attach_home);
        if (r != PAM_SUCCESS)
                return r;
        data = session_data_new(handle, &opts, user);
        if (!data) {
                pam_syslog(handle, LOG_ERR, "Out of memory.");
                return without_view(handle, &opts, filter, user, &record);
        }
        pam_debug_syslog(handle, &opts, "Opening session '%s' of user '%s'.", data->id, user);

        r = open_with_daemon(handle, &opts, data, deadline, &fd);
        if (r == PAM_IGNORE)
                return r;
        /* On a failure to join our thread is still in the namespace it was in, and the session
         * ends as 'data' goes, with our only copy of its fd. */
        if (r != PAM_SUCCESS || join_namespace(handle, &opts, fd, attach_home ?: record.home) < 0)
                return without_view(handle, &opts, filter, user, &record);
        r = pam_set_data(handle, PAM_DATA_SESSION, data, session_data_cleanup);
        if (r != PAM_SUCCESS) {
                pam_syslog(handle, LOG_ERR, "Failed to keep the session: %s", pam_strerror(handle, r));
                return without_view(handle, &opts, filter, user, &record);
        }
        pam_debug_syslog(handle, &opts, "Session '%s' of user '%s' joined.", data->id, user);
        TAKE_PTR(data);
        return PAM_SUCCESS;
}

/* Closes this process's copy of the session fd: the session ends once no other copy is left
 * (a child that forked without exec may hold one). Nothing to wait for, nothing that can fail. */
_public_ PAM_EXTERN int pam_sm_close_session(pam_handle_t *handle, int flags _unused_, int argc, const char **argv) {
        SessionData *data = NULL;
        ModuleOptions opts;
        int r;

        parse_argv(handle, argc, argv, &opts);

        /* No data: open_session did not open a session (a user not ours, or it failed). */
        r = pam_get_data(handle, PAM_DATA_SESSION, (const void **) &data);
        if (r != PAM_SUCCESS || !data) {
                pam_debug_syslog(handle, &opts, "No session opened by this handle, nothing to close.");
                return PAM_IGNORE;
        }
        pam_debug_syslog(handle, &opts, "Closing session '%s' of user '%s'.", data->id, data->user);
        /* Frees it (session_data_cleanup()), and a second close_session finds nothing. */
        (void) pam_set_data(handle, PAM_DATA_SESSION, NULL, NULL);
        return PAM_SUCCESS;
}
