/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam_nsmanager: puts a login into its user's mount namespace.
 *
 *   session optional pam_nsmanager.so [debug] [attach]
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
 * The module keeps no bus connection and no global state: every call connects, talks and
 * disconnects before it returns; what close_session needs is kept with pam_set_data().
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
#include "login-filter.h"
#include "macros.h"
#include "user-util.h"

#define PAM_DATA_SESSION "pam_nsmanager:session"

#define _public_ __attribute__((visibility("default")))

#define ATTACH_NAMESPACE_ENV "NSMANAGER_ATTACH_NAMESPACE"

typedef struct ModuleOptions {
        bool debug;
        bool attach;
} ModuleOptions;

/* What close_session needs to know about the session open_session opened. */
typedef struct SessionData {
        char *user;
        char *id;
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

static int parse_argv(pam_handle_t *handle, int argc, const char **argv, ModuleOptions *ret) {
        ModuleOptions opts = {};

        for (int i = 0; i < argc; i++) {
                if (streq(argv[i], "debug"))
                        opts.debug = true;
                else if (streq(argv[i], "attach"))
                        opts.attach = true;
                else
                        pam_syslog(handle, LOG_WARNING, "Unknown option '%s', ignoring.", argv[i]);
        }

        *ret = opts;
        return 0;
}

/* Is the user one nsmanagerd manages? Root never is, and no bus call is made for it. The others
 * by what the daemon published from its MinUID= and ExcludeUsers= (login-filter.h): every cron
 * job of a system user loads this module, and none of them should cost a bus call, nor start
 * the daemon. Without the file (the daemon never ran) the daemon is asked, and its UserExcluded
 * answer is followed. */
static bool user_is_managed(pam_handle_t *handle, const ModuleOptions *opts, const char *user, uid_t uid) {
        _cleanup_(login_filter_done) LoginFilter filter = {};
        int r;

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

static int bus_open(pam_handle_t *handle, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to connect to the system bus: %s", strerror(-r));
                return r;
        }

        *ret = bus;
        return 0;
}

/* attach: the namespace nsmanagerd named in the unit, and the home of the PAM user (the caller),
 * where the command starts. */
static int attach_target(pam_handle_t *handle, const char *pam_user, const char **ret_user, char **ret_home) {
        _cleanup_(user_record_done) UserRecord caller = {};
        const char *user = pam_getenv(handle, ATTACH_NAMESPACE_ENV);
        int r;

        if (!user || !user[0]) {
                pam_syslog(handle, LOG_ERR, "%s is not set: 'attach' is for nsmanagerd's attach units only.",
                           ATTACH_NAMESPACE_ENV);
                return PAM_SESSION_ERR;
        }
        r = user_record_by_name(pam_user, &caller);
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to look up user '%s': %s", pam_user, strerror(-r));
                return PAM_SESSION_ERR;
        }
        *ret_user = user;
        *ret_home = TAKE_PTR(caller.home);
        return PAM_SUCCESS;
}

_public_ PAM_EXTERN int pam_sm_open_session(pam_handle_t *handle, int flags _unused_, int argc, const char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(session_data_freep) SessionData *data = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(user_record_done) UserRecord record = {};
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *attach_home = NULL;
        const char *user = NULL, *object = NULL;
        ModuleOptions opts;
        uid_t uid = (uid_t) -1;
        int r, received_fd;

        if (parse_argv(handle, argc, argv, &opts) < 0)
                return PAM_SESSION_ERR;

        r = pam_get_user(handle, &user, NULL);
        if (r != PAM_SUCCESS || !user || !user[0]) {
                pam_syslog(handle, LOG_ERR, "Failed to get the user name: %s", pam_strerror(handle, r));
                return r == PAM_SUCCESS ? PAM_USER_UNKNOWN : r;
        }
        if (opts.attach) {
                r = attach_target(handle, user, &user, &attach_home);
                if (r != PAM_SUCCESS)
                        return r;
        }

        /* A name the daemon could never serve (nsmanagerd accepts what useradd does) is not ours. */
        if (!valid_user_name(user)) {
                if (opts.debug)
                        pam_syslog(handle, LOG_DEBUG, "'%s' is not a user name nsmanagerd serves, ignoring.", user);
                return PAM_IGNORE;
        }
        r = user_record_by_name(user, &record);
        if (r == -ESRCH) {
                pam_syslog(handle, LOG_ERR, "User '%s' does not exist.", user);
                return PAM_USER_UNKNOWN;
        }
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to look up user '%s': %s", user, strerror(-r));
                return PAM_SESSION_ERR;
        }
        uid = record.uid;

        if (!user_is_managed(handle, &opts, user, uid))
                return PAM_IGNORE;

        data = calloc(1, sizeof(SessionData));
        if (!data)
                return log_oom_pam(handle);
        data->user = strdup(user);
        if (!data->user)
                return log_oom_pam(handle);
        r = make_session_id(handle, &opts, &data->id);
        if (r < 0)
                return log_oom_pam(handle);

        pam_debug_syslog(handle, &opts, "Opening session '%s' of user '%s'.", data->id, user);

        if (bus_open(handle, &bus) < 0)
                return PAM_SESSION_ERR;

        r = sd_bus_call_method(bus, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "OpenSession",
                               &error, &reply, "ss", user, data->id);
        if (r < 0) {
                if (sd_bus_error_has_name(&error, NSM_ERROR_USER_EXCLUDED)) {
                        /* The daemon is the authority on its range (the filter file may be older). */
                        pam_syslog(handle, LOG_NOTICE, "nsmanagerd does not manage user '%s': %s",
                                   user, bus_error_message(&error, r));
                        return PAM_IGNORE;
                }

                pam_syslog(handle, LOG_ERR, "Failed to open session '%s' of user '%s' with nsmanagerd: %s",
                           data->id, user, bus_error_message(&error, r));
                return PAM_SESSION_ERR;
        }

        r = sd_bus_message_read(reply, "oh", &object, &received_fd);
        if (r < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to parse the reply of OpenSession: %s", strerror(-r));
                goto undo;
        }

        /* The fd belongs to the message; ours must outlive it. */
        fd = fcntl(received_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
                pam_syslog(handle, LOG_ERR, "Failed to duplicate the namespace fd: %m");
                goto undo;
        }

        if (join_namespace(handle, &opts, fd, attach_home ?: record.home) < 0)
                goto undo;

        if (opts.debug) {
                struct stat st;

                if (fstat(fd, &st) >= 0)
                        pam_syslog(handle, LOG_DEBUG, "Session '%s' of user '%s' joined %s, mnt:[%ju].",
                                   data->id, user, object, (uintmax_t) st.st_ino);
        }

        r = pam_set_data(handle, PAM_DATA_SESSION, data, session_data_cleanup);
        if (r != PAM_SUCCESS) {
                /* Joined, but close_session will not find it: the daemon closes the session when
                 * this process exits. */
                pam_syslog(handle, LOG_ERR, "Failed to store the session id: %s", pam_strerror(handle, r));
                return PAM_SESSION_ERR;
        }
        TAKE_PTR(data);

        return PAM_SUCCESS;

undo:
        /* The daemon recorded a session we will not use: tell it now rather than when this
         * process exits. Our thread is still in the namespace it was in. */
        r = sd_bus_call_method(bus, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "CloseSession",
                               &error, NULL, "ss", user, data->id);
        if (r < 0)
                pam_syslog(handle, LOG_WARNING, "Failed to close the unused session '%s', ignoring: %s",
                           data->id, bus_error_message(&error, r));
        return PAM_SESSION_ERR;
}

/* A failure here must not stand in the way of a logout, and it cannot: PAM runs every
 * session module's close_session regardless of the others' results, and applications
 * ignore the result. We still return PAM_SESSION_ERR when the daemon could not be told
 * (it closes the session itself when the login process exits), and PAM_SUCCESS when the
 * daemon no longer knew the session (already closed: nothing left to do). */
_public_ PAM_EXTERN int pam_sm_close_session(pam_handle_t *handle, int flags _unused_, int argc, const char **argv) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const SessionData *data = NULL;
        ModuleOptions opts;
        int r;

        if (parse_argv(handle, argc, argv, &opts) < 0)
                return PAM_SESSION_ERR;

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

        if (bus_open(handle, &bus) < 0)
                return PAM_SESSION_ERR;

        r = sd_bus_call_method(bus, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "CloseSession",
                               &error, NULL, "ss", data->user, data->id);
        if (r < 0) {
                if (sd_bus_error_has_name(&error, NSM_ERROR_NO_SUCH_SESSION)) {
                        pam_debug_syslog(handle, &opts, "Session '%s' of user '%s' was already closed: %s",
                                         data->id, data->user, bus_error_message(&error, r));
                        r = PAM_SUCCESS;
                } else {
                        pam_syslog(handle, LOG_ERR, "Failed to close session '%s' of user '%s' with nsmanagerd: %s",
                                   data->id, data->user, bus_error_message(&error, r));
                        r = PAM_SESSION_ERR;
                }
        } else
                r = PAM_SUCCESS;

        /* Closed (or given up on): a second close_session on this handle has nothing to do. */
        (void) pam_set_data(handle, PAM_DATA_SESSION, NULL, NULL);
        return r;
}
