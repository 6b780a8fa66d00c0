/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam_nsmanager: puts a login into its user's mount namespace.
 *
 *   session optional pam_nsmanager.so [debug] [timeout=SECONDS] [attach]
 *
 * open_session asks nsmanagerd for the session (OpenSession(user, session_id) → (o, h)),
 * and setns()es the calling thread into the returned mount namespace, so everything the
 * login process forks afterwards (shell, systemd --user, the desktop) lives in the user's
 * view. close_session tells the daemon the session is over (CloseSession). The daemon also
 * watches the process that opened the session, so a login that dies without
 * close_session still has its session closed.
 *
 * With "attach" (only in the PAM service nsmanager-attach, pam.d/nsmanager-attach, which
 * nsmanagerd's transient units for Attach() name in PAMName=) the namespace is not the PAM
 * user's but the one in NSMANAGER_ATTACH_NAMESPACE of the PAM environment, which nsmanagerd
 * sets in the unit: the caller may attach to another user's view.
 *
 * The module keeps no global state; what close_session needs is kept with pam_set_data():
 * the session's id and, where OpenSession went through nsmanagerd's private socket (root only,
 * no dbus-daemon in between), that connection, as pam_systemd keeps its fd to logind for the
 * session: CloseSession is then written on it and not waited for (direct-call.h). Through the
 * system bus (the daemon is not running yet, and the bus starts it) every call connects,
 * talks and disconnects before it returns.
 *
 * Nothing it does may reach the login's terminal: it reports through pam_syslog() only, never
 * through the conversation function, stdio or the shared code's log functions (log.c, which
 * writes to stderr, is not linked in: tests/test_pam.py checks the module's imports).
 *
 * A login never waits for the daemon longer than timeout= (10 s by default): one deadline,
 * taken when open_session (or close_session) starts, bounds connecting, authenticating, Hello
 * and the call. sd_bus_call() cannot give that (it first waits for the connection with
 * sd-bus's own 25 s authentication timeout), so the module drives the bus connection itself
 * (bus_run_until_answered()).
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

#include "bus-errors.h"
#include "direct-call.h"
#include "login-filter.h"
#include "macros.h"
#include "parse-util.h"
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
} ModuleOptions;

/* What close_session needs to know about the session open_session opened. */
typedef struct SessionData {
        char *user;
        char *id;
        int connection;         /* the private socket's connection OpenSession went on, or -EBADF */
        bool pipelined_calls;   /* the daemon takes the call behind the authentication (login-filter.h) */
} SessionData;

/* The serial numbers of the calls on such a connection: the first, and the CloseSession that
 * follows an OpenSession. */
#define SERIAL_FIRST 1U
#define SERIAL_CLOSE_SESSION 2U

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
        safe_close(d->connection);
        free(d);
}

static void session_data_freep(SessionData **d) {
        session_data_free(*d);
}

static void session_data_cleanup(pam_handle_t *handle _unused_, void *data, int error_status _unused_) {
        session_data_free(data);
}

static int log_oom_pam(pam_handle_t *handle) {
        pam_syslog(handle, LOG_ERR, "Out of memory.");
        return PAM_BUF_ERR;
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

/* Is the user one nsmanagerd manages? Root never is, and no bus call is made for it. The others
 * by what the daemon published from its MinUID= and ExcludeUsers= (login-filter.h): every cron
 * job of a system user loads this module, and none of them should cost a bus call, nor start
 * the daemon. Without the file (the daemon never ran) the daemon is asked, and its UserExcluded
 * answer is followed. */
static bool user_is_managed(pam_handle_t *handle, const ModuleOptions *opts, const char *user, uid_t uid,
                            bool *ret_pipelined_calls) {
        _cleanup_(login_filter_done) LoginFilter filter = {};
        int r;

        *ret_pipelined_calls = false;
        if (uid == 0)
                return false;
        r = login_filter_read(NSM_LOGIN_FILTER_FILE, &filter);
        if (r < 0) {
                if (r != -ENOENT)
                        pam_syslog(handle, LOG_WARNING, "Failed to read %s, asking nsmanagerd: %s",
                                   NSM_LOGIN_FILTER_FILE, strerror(-r));
                return true;
        }
        if (login_filter_excludes(&filter, user, uid)) {
                pam_debug_syslog(handle, opts, "User '%s' (UID %u) is outside nsmanagerd's range (MinUID=, ExcludeUsers=).",
                                 user, (unsigned) uid);
                return false;
        }
        *ret_pipelined_calls = filter.pipelined_calls;
        return true;
}

/* The session id: logind's (XDG_SESSION_ID, which pam_systemd puts into the PAM environment
 * when it registered a session), else one made of this handle's service, tty and the login
 * process's pid: unique among live logins, and kept for close_session with pam_set_data().
 *
 * Only the PAM environment is consulted, never the process's own: a login started from
 * inside another session (runuser in an ssh session) inherits that session's XDG_SESSION_ID,
 * which names the outer session, not this one. */
static int make_session_id(pam_handle_t *handle, const ModuleOptions *opts, char **ret) {
        const char *xdg, *service = NULL, *tty = NULL;
        char *id;

        /* An attach unit is no logind session; its environment is the caller's, whose
         * XDG_SESSION_ID names the caller's own session. */
        xdg = opts->attach ? NULL : pam_getenv(handle, "XDG_SESSION_ID");
        if (xdg && xdg[0]) {
                id = strdup(xdg);
                if (!id)
                        return -ENOMEM;
                *ret = id;
                return 0;
        }

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

/* A method call on its way, and its reply once it came (or the error sd-bus made up for it:
 * the connection went away). */
typedef struct PendingCall {
        sd_bus_slot *slot;
        sd_bus_message *reply;
} PendingCall;

static void pending_call_done(PendingCall *c) {
        c->slot = sd_bus_slot_unref(c->slot);
        c->reply = sd_bus_message_unref(c->reply);
}

static int pending_call_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error _unused_) {
        PendingCall *c = userdata;

        c->reply = sd_bus_message_ref(m);
        return 1;
}

/* The system bus: where nsmanagerd's private socket is not there or nobody listens
 * (connect() fails at once: the daemon is not running), the bus starts the daemon. Its address
 * is the one sd_bus_open_system() would use, read with secure_getenv(), because su and sudo are
 * setuid: a user must not point a root login at a bus of their own, which would hand the module
 * a namespace fd of the user's choosing. sd_bus_start() only starts the non-blocking connect()
 * and queues the authentication and Hello(). */
static int bus_connect(sd_bus **ret) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        const char *address = secure_getenv("DBUS_SYSTEM_BUS_ADDRESS");
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address ?: SYSTEM_BUS_ADDRESS_DEFAULT);
        if (r < 0)
                return r;
        r = sd_bus_set_bus_client(bus, true);
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

/* Runs the connection (connect, authenticate, Hello, write, read) until the call is answered:
 * -ETIMEDOUT at the deadline, which is checked on every turn, also while there is work. */
static int bus_run_until_answered(sd_bus *bus, const PendingCall *call, uint64_t deadline) {
        for (;;) {
                uint64_t n;
                int r;

                if (call->reply)
                        return 0;
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

/* Calls Manager.METHOD(user, session_id) on the bus and waits for the reply until the
 * deadline: 0 with the reply (which may be an error reply) in 'call', or a negative errno.
 *
 * On a connection that is not up yet the call is queued, and written right behind the
 * authentication and Hello(): one round trip for both, where sd_bus_call() would first wait
 * for Hello()'s reply. Always waited for, CloseSession too: the daemon asks the bus driver who
 * the caller is when the call arrives, and a caller that is gone by then cannot be checked. */
static int bus_call_session_method(sd_bus *bus, const char *method, const char *user, const char *id,
                                   uint64_t deadline, PendingCall *call) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, method);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", user, id);
        if (r < 0)
                return r;
        /* No timeout of sd-bus's own (UINT64_MAX): the deadline is the one. */
        r = sd_bus_call_async(bus, &call->slot, m, pending_call_reply, call, UINT64_MAX);
        if (r < 0)
                return r;
        return bus_run_until_answered(bus, call, deadline);
}

/* A session method's answer, whichever way it came. */
typedef struct SessionReply {
        const char *error_name;     /* NULL: success */
        const char *error_message;  /* for the log */
        const char *object;         /* OpenSession's */
        int fd;                     /* OpenSession's, owned by the reply it came with */
} SessionReply;

/* Manager.METHOD(user, session_id) of the session in 'data' on a new connection to the private
 * socket (left in data->connection), else, where nobody listens there, through the system bus
 * (data->connection -EBADF). 0 with *ret filled from the reply, which 'direct' or 'call' keeps
 * alive, or a -errno, logged (-ETIMEDOUT at the deadline). */
static int call_session_method(pam_handle_t *handle, const ModuleOptions *opts, const char *method,
                               SessionData *data, uint64_t deadline, DirectReply *direct, PendingCall *call,
                               SessionReply *ret) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        const char *user = data->user, *id = data->id;
        int r;

        data->connection = safe_close(data->connection);
        if (direct_connect(&data->connection) < 0)
                data->connection = -EBADF;
        if (data->connection >= 0) {
                r = direct_call(data->connection, data->pipelined_calls ? DIRECT_AUTH_PIPELINED : DIRECT_AUTH_WAIT,
                                SERIAL_FIRST, method, user, id, deadline, direct);
                /* A success without the namespace is no answer to OpenSession. */
                if (r >= 0 && !direct->error_name && streq(method, "OpenSession") && (!direct->object || direct->fd < 0))
                        r = -EBADMSG;
                if (r >= 0)
                        *ret = (SessionReply) {
                                .error_name = direct->error_name,
                                .error_message = direct->error_message ?: direct->error_name,
                                .object = direct->object,
                                .fd = direct->fd,
                        };
        } else {
                r = bus_connect(&bus);
                if (r >= 0)
                        r = bus_call_session_method(bus, method, user, id, deadline, call);
                if (r >= 0) {
                        const sd_bus_error *e = sd_bus_message_get_error(call->reply);

                        *ret = (SessionReply) { .fd = -EBADF };
                        if (e) {
                                ret->error_name = e->name;
                                ret->error_message = bus_error_message(e, sd_bus_message_get_errno(call->reply));
                        } else if (streq(method, "OpenSession"))
                                r = sd_bus_message_read(call->reply, "oh", &ret->object, &ret->fd);
                }
        }
        if (r == -ETIMEDOUT)
                pam_syslog(handle, LOG_ERR, "nsmanagerd did not answer %s for session '%s' of user '%s' within %.3gs (timeout=).",
                           method, id, user, (double) opts->timeout_usec / USEC_PER_SEC);
        else if (r < 0)
                pam_syslog(handle, LOG_ERR, "Failed to call %s for session '%s' of user '%s': %s",
                           method, id, user, strerror(-r));
        return r;
}

/* CloseSession on the connection open_session kept: written, not waited for. 0, or -errno
 * (the daemon restarted and the connection is gone, say): then it is called again on a new
 * connection, which is safe, because nothing was written (or half a message, which the
 * daemon drops with the connection). */
static int close_on_kept_connection(pam_handle_t *handle, const ModuleOptions *opts, SessionData *data,
                                    uint64_t deadline) {
        int r;

        if (data->connection < 0)
                return -EBADF;
        r = direct_call(data->connection, DIRECT_AUTH_NONE, SERIAL_CLOSE_SESSION, "CloseSession", data->user, data->id,
                        deadline, NULL);
        data->connection = safe_close(data->connection);
        if (r < 0)
                pam_debug_syslog(handle, opts, "The connection of session '%s' is gone (%s), calling CloseSession on a new one.",
                                 data->id, strerror(-r));
        return r;
}

/* Who logs in: PAM_SUCCESS with the user's record, PAM_IGNORE for a user not ours (logged at
 * debug level), or an error (logged). */
static int resolve_user(pam_handle_t *handle, const ModuleOptions *opts, const char *user, UserRecord *ret_record,
                        bool *ret_pipelined_calls) {
        int r;

        /* A name the daemon could never serve (nsmanagerd accepts what useradd does) is not ours. */
        if (!valid_user_name(user)) {
                pam_debug_syslog(handle, opts, "'%s' is not a user name nsmanagerd serves, ignoring.", user);
                return PAM_IGNORE;
        }
        r = user_record_by_name(user, ret_record);
        if (r == -ESRCH) {
                pam_syslog(handle, LOG_ERR, "User '%s' does not exist.", user);
                return PAM_USER_UNKNOWN;
        }
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to look up user '%s': %s", user, strerror(-r));
                return PAM_SESSION_ERR;
        }
        if (!user_is_managed(handle, opts, user, ret_record->uid, ret_pipelined_calls))
                return PAM_IGNORE;
        return PAM_SUCCESS;
}

/* Whose namespace: the PAM user's; with "attach" the one nsmanagerd named in the unit, and the
 * command starts in the home of the PAM user (the caller). */
static int resolve_target(pam_handle_t *handle, const ModuleOptions *opts, const char **ret_user,
                          UserRecord *ret_record, char **ret_home, bool *ret_pipelined_calls) {
        _cleanup_(user_record_done) UserRecord caller = {};
        const char *user = NULL;
        int r;

        r = pam_get_user(handle, &user, NULL);
        if (r != PAM_SUCCESS || !user || !user[0]) {
                pam_syslog(handle, LOG_ERR, "Failed to get the user name: %s", pam_strerror(handle, r));
                return r == PAM_SUCCESS ? PAM_USER_UNKNOWN : r;
        }
        if (opts->attach) {
                r = user_record_by_name(user, &caller);
                if (r < 0) {
                        pam_syslog(handle, LOG_ERR, "Failed to look up user '%s': %s", user, strerror(-r));
                        return PAM_SESSION_ERR;
                }
                user = pam_getenv(handle, ATTACH_NAMESPACE_ENV);
                if (!user || !user[0]) {
                        pam_syslog(handle, LOG_ERR, "%s is not set: 'attach' is for nsmanagerd's attach units only.",
                                   ATTACH_NAMESPACE_ENV);
                        return PAM_SESSION_ERR;
                }
        }
        r = resolve_user(handle, opts, user, ret_record, ret_pipelined_calls);
        if (r != PAM_SUCCESS)
                return r;
        *ret_user = user;
        *ret_home = TAKE_PTR(caller.home);
        return PAM_SUCCESS;
}

static SessionData *session_data_new(pam_handle_t *handle, const ModuleOptions *opts, const char *user) {
        _cleanup_(session_data_freep) SessionData *data = calloc(1, sizeof(SessionData));

        if (!data)
                return NULL;
        data->connection = -EBADF;
        if (!(data->user = strdup(user)) || make_session_id(handle, opts, &data->id) < 0)
                return NULL;
        return TAKE_PTR(data);
}

/* OpenSession: PAM_SUCCESS with the namespace fd (and data->connection kept, where it went
 * on the private socket), PAM_IGNORE for a user the daemon does not manage, else
 * PAM_SESSION_ERR (logged). *ret_recorded: the daemon recorded the session. */
static int open_with_daemon(pam_handle_t *handle, const ModuleOptions *opts, SessionData *data, uint64_t deadline,
                            int *ret_fd, bool *ret_recorded) {
        _cleanup_(pending_call_done) PendingCall call = {};
        _cleanup_(direct_reply_done) DirectReply direct = { .fd = -EBADF };
        SessionReply reply;
        int r;

        *ret_recorded = false;
        r = call_session_method(handle, opts, "OpenSession", data, deadline, &direct, &call, &reply);
        if (r < 0)
                return PAM_SESSION_ERR;
        if (reply.error_name) {
                if (streq(reply.error_name, NSM_ERROR_USER_EXCLUDED)) {
                        /* The daemon is the authority on its range (the filter file may be older). */
                        pam_syslog(handle, LOG_NOTICE, "nsmanagerd does not manage user '%s': %s",
                                   data->user, reply.error_message);
                        return PAM_IGNORE;
                }
                pam_syslog(handle, LOG_ERR, "Failed to open session '%s' of user '%s' with nsmanagerd: %s",
                           data->id, data->user, reply.error_message);
                return PAM_SESSION_ERR;
        }
        *ret_recorded = true;
        /* The fd belongs to the reply; ours must outlive it. */
        *ret_fd = fcntl(reply.fd, F_DUPFD_CLOEXEC, 3);
        if (*ret_fd < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to duplicate the namespace fd: %m");
                return PAM_SESSION_ERR;
        }
        pam_debug_syslog(handle, opts, "Session '%s' of user '%s' is in %s.", data->id, data->user, reply.object);
        return PAM_SUCCESS;
}

/* CloseSession, wherever it goes: 0, -ENOENT if the daemon no longer knew the session, or
 * another -errno (logged). */
static int close_with_daemon(pam_handle_t *handle, const ModuleOptions *opts, SessionData *data, uint64_t deadline) {
        _cleanup_(pending_call_done) PendingCall call = {};
        _cleanup_(direct_reply_done) DirectReply direct = { .fd = -EBADF };
        SessionReply reply;
        int r;

        if (close_on_kept_connection(handle, opts, data, deadline) >= 0)
                return 0;
        r = call_session_method(handle, opts, "CloseSession", data, deadline, &direct, &call, &reply);
        data->connection = safe_close(data->connection);
        if (r < 0)
                return r;
        if (!reply.error_name)
                return 0;
        if (streq(reply.error_name, NSM_ERROR_NO_SUCH_SESSION)) {
                pam_debug_syslog(handle, opts, "Session '%s' of user '%s' was already closed: %s",
                                 data->id, data->user, reply.error_message);
                return -ENOENT;
        }
        pam_syslog(handle, LOG_ERR, "Failed to close session '%s' of user '%s' with nsmanagerd: %s",
                   data->id, data->user, reply.error_message);
        return -EIO;
}

_public_ PAM_EXTERN int pam_sm_open_session(pam_handle_t *handle, int flags _unused_, int argc, const char **argv) {
        _cleanup_(session_data_freep) SessionData *data = NULL;
        _cleanup_(user_record_done) UserRecord record = {};
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *attach_home = NULL;
        const char *user = NULL;
        ModuleOptions opts;
        uint64_t deadline;
        bool recorded, pipelined_calls;
        int r;

        parse_argv(handle, argc, argv, &opts);
        deadline = now_usec(CLOCK_MONOTONIC) + opts.timeout_usec;

        r = resolve_target(handle, &opts, &user, &record, &attach_home, &pipelined_calls);
        if (r != PAM_SUCCESS)
                return r;
        data = session_data_new(handle, &opts, user);
        if (!data)
                return log_oom_pam(handle);
        data->pipelined_calls = pipelined_calls;
        pam_debug_syslog(handle, &opts, "Opening session '%s' of user '%s'.", data->id, user);

        r = open_with_daemon(handle, &opts, data, deadline, &fd, &recorded);
        if (r == PAM_SUCCESS && join_namespace(handle, &opts, fd, attach_home ?: record.home) < 0)
                r = PAM_SESSION_ERR; /* our thread is still in the namespace it was in */
        if (r != PAM_SUCCESS) {
                /* The daemon recorded a session we will not use: tell it now rather than when
                 * this process exits, within what is left of the deadline. */
                if (recorded)
                        (void) close_with_daemon(handle, &opts, data, deadline);
                return r;
        }
        /* An attach unit's session ends with its command (close_session runs as the user
         * there, below): nothing to keep the connection for. */
        if (opts.attach)
                data->connection = safe_close(data->connection);
        r = pam_set_data(handle, PAM_DATA_SESSION, data, session_data_cleanup);
        if (r != PAM_SUCCESS) {
                /* Joined, but close_session will not find it: the daemon closes the session when
                 * this process exits. */
                pam_syslog(handle, LOG_ERR, "Failed to store the session id: %s", pam_strerror(handle, r));
                return PAM_SESSION_ERR;
        }
        TAKE_PTR(data);
        return PAM_SUCCESS;
}

/* A failure here must not stand in the way of a logout, and it cannot: PAM runs every
 * session module's close_session regardless of the others' results, and applications
 * ignore the result. We still return PAM_SESSION_ERR when the daemon could not be told
 * (it closes the session itself when the login process exits), and PAM_SUCCESS when the
 * daemon no longer knew the session (already closed: nothing left to do). */
_public_ PAM_EXTERN int pam_sm_close_session(pam_handle_t *handle, int flags _unused_, int argc, const char **argv) {
        SessionData *data = NULL;
        ModuleOptions opts;
        uint64_t deadline;
        int r;

        parse_argv(handle, argc, argv, &opts);
        deadline = now_usec(CLOCK_MONOTONIC) + opts.timeout_usec;

        /* No data: open_session did not open a session (a user not ours, or it failed). */
        r = pam_get_data(handle, PAM_DATA_SESSION, (const void **) &data);
        if (r != PAM_SUCCESS || !data) {
                pam_debug_syslog(handle, &opts, "No session opened by this handle, nothing to close.");
                return PAM_IGNORE;
        }

        /* systemd's sd-pam has dropped to the user before it closes the session of an attach
         * unit, and CloseSession is root's: the daemon closes it when its leader, the attached
         * command, has exited. */
        if (opts.attach && geteuid() != 0) {
                pam_debug_syslog(handle, &opts, "Session '%s' of user '%s' is closed by nsmanagerd when its command exits.",
                                 data->id, data->user);
                (void) pam_set_data(handle, PAM_DATA_SESSION, NULL, NULL);
                return PAM_SUCCESS;
        }

        pam_debug_syslog(handle, &opts, "Closing session '%s' of user '%s'.", data->id, data->user);
        r = close_with_daemon(handle, &opts, data, deadline);

        /* Closed (or given up on): a second close_session on this handle has nothing to do. */
        (void) pam_set_data(handle, PAM_DATA_SESSION, NULL, NULL);
        return r >= 0 || r == -ENOENT ? PAM_SUCCESS : PAM_SESSION_ERR;
}
