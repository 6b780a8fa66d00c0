/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Attach() where systemd is PID 1: systemd starts the command, as a transient service in the
 * caller's slice, the way `systemd-run --uid=… --wait` would. So the command is a process of
 * the user like a login's, not a child of the daemon:
 *
 *   - User=UID: systemd takes gid and supplementary groups from NSS (initgroups);
 *   - Slice=user-UID.slice: the user's TasksMax= and memory limits, not the daemon's;
 *   - PAMName=nsmanager-attach (/usr/lib/pam.d/nsmanager-attach): pam_loginuid sets the
 *     loginuid, pam_limits the limits a login gets, and pam_nsmanager enters the namespace
 *     named by NSMANAGER_ATTACH_NAMESPACE= (set here, never taken from the caller), the way
 *     user@.service enters its user's;
 *   - none of the daemon's hardening (seccomp, NoNewPrivileges, bounding set) is inherited.
 *
 * Everything is asynchronous: the event loop never waits for systemd. The steps:
 *   1. StartTransientUnit (Type=simple: the start job is done once systemd forked), once the
 *      daemon's two matches are in place: one JobRemoved and one PropertiesChanged (of every
 *      service under systemd's unit path) for all attached commands, dispatched by unit name.
 *      A match per command made 256 commands of one user use up the 512 match rules
 *      dbus-daemon allows a connection; the refused AddMatch then closed the connection;
 *   2. the job is removed: read the service's properties (ExecMainPID, …) and have the call
 *      answered with the PID, or with an error if the job failed (the AttachStartedFunc of
 *      the bus glue, attach-dbus.c, which holds the call: nothing here calls up into it);
 *   3. on every PropertiesChanged, read them again: once ExecMainCode is set the command has
 *      ended: write its status, drop our reference to the unit (AddRef=yes kept it loaded).
 *
 * No text the caller chose is in the unit: systemd 252 writes a transient unit into
 * /run/systemd/transient escaping only '%', reads it back at every daemon-reload, and a newline
 * in a working directory (WorkingDirectory=) or a command name (Description=) became a line of
 * root's unit (ExecStopPost=+…). The unit's settings are ours alone: a Description= of numbers
 * and the validated user name, WorkingDirectory=-~, and ExecStart= of our own fixed program,
 * nsmanager-attach-exec (attach-exec.c), which runs as the caller in the view and takes the
 * command, its environment and its directory from an EnvironmentFile= that only root can read,
 * removed as soon as the job is done (a unit's Environment= is a property every user can read on
 * the bus). There they are under names of ours, escaped: systemd puts the unit's environment
 * into the PAM handle before pam_open_session, and the root PAM stack must see none of the
 * caller's variables under a name a module reads (LD_PRELOAD for pam_exec's programs,
 * XDG_SESSION_ID, NSMANAGER_ATTACH_NAMESPACE). The program puts them in place after PAM, as
 * the caller. Only properties that systemd 252 writes in a form it reads back are used: not
 * ExecStartEx=, which it writes under its own name and then refuses ("Unknown key").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "attach-unit.h"
#include "bus-creds.h"
#include "config.h"
#include "bus-util.h"
#include "hashmap.h"
#include "log.h"

#define SYSTEMD_BUS_NAME "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER_INTERFACE "org.freedesktop.systemd1.Manager"
#define SYSTEMD_SERVICE_INTERFACE "org.freedesktop.systemd1.Service"
#define SYSTEMD_UNIT_PATH_PREFIX "/org/freedesktop/systemd1/unit"

/* The PAM service the package ships (pam.d/nsmanager-attach), and the variable by which its
 * pam_nsmanager learns which namespace to enter. */
#define ATTACH_PAM_SERVICE "nsmanager-attach"
#define ATTACH_ENV_PREFIX "NSMANAGER_ATTACH_"
#define ATTACH_NAMESPACE_ENV ATTACH_ENV_PREFIX "NAMESPACE"

bool attach_unit_available(void) {
        return sd_booted() > 0;
}

/* --- the environment file ------------------------------------------------------------ */

/* One line NSMANAGER_ATTACH_<name>="VALUE". The value escaped for nsmanager-attach-exec first
 * ('\' as "\\", a byte below 0x20 or 0x7f as "\xHH"; UTF-8 is all the bus lets through), so
 * that it holds no control character; then for systemd's parser, which inside double quotes
 * unescapes \" \\ \` \$ and keeps everything else. */
static void write_variable(FILE *f, const char *name, const char *value) {
        fprintf(f, ATTACH_ENV_PREFIX "%s=\"", name);
        for (const unsigned char *c = (const unsigned char *) value; *c; c++) {
                if (*c < 0x20 || *c == 0x7f)
                        fprintf(f, "\\\\x%02x", *c);     /* \xHH, its '\' escaped for systemd */
                else if (*c == '\\')
                        fputs("\\\\\\\\", f);        /* \\, each '\' escaped for systemd */
                else {
                        if (strchr("\"`$", *c))
                                fputc('\\', f);
                        fputc(*c, f);
                }
        }
        fputs("\"\n", f);
}

static int write_environment(FILE *f, const AttachRequest *req) {
        char name[32];
        size_t n = 0;

        for (char **c = req->command; *c; c++, n++) {
                (void) snprintf(name, sizeof name, "ARGV_%zu", n);
                write_variable(f, name, *c);
        }
        (void) snprintf(name, sizeof name, "%zu", n);
        write_variable(f, "ARGC", name);

        n = 0;
        for (char **e = req->environment; e && *e; e++) {
                /* Ours to set: the caller's would choose the namespace, or the command. */
                if (strncmp(*e, ATTACH_ENV_PREFIX, strlen(ATTACH_ENV_PREFIX)) == 0) {
                        log_debug("Leaving the caller's %.*s out of the environment.", (int) strcspn(*e, "="), *e);
                        continue;
                }
                (void) snprintf(name, sizeof name, "ENV_%zu", n++);
                write_variable(f, name, *e);
        }
        (void) snprintf(name, sizeof name, "%zu", n);
        write_variable(f, "ENVC", name);

        if (req->working_directory)
                write_variable(f, "DIRECTORY", req->working_directory);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

/* <StateDirectory>/attach/, root's only; emptied the first time in this process (files of a
 * daemon that died before systemd read them). */
static int environment_directory(Manager *m, char **ret) {
        static bool cleaned = false;
        _cleanup_free_ char *dir = strdup(m->state.attach);

        if (!dir)
                return -ENOMEM;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (!cleaned) {
                DIR *d = opendir(dir);
                struct dirent *de;

                if (!d)
                        return -errno;
                while ((de = readdir(d)))
                        if (de->d_type == DT_REG)
                                (void) unlinkat(dirfd(d), de->d_name, 0);
                closedir(d);
                cleaned = true;
        }
        *ret = TAKE_PTR(dir);
        return 0;
}

static int environment_file_create(AttachProcess *p, const AttachRequest *req) {
        _cleanup_free_ char *dir = NULL, *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        r = environment_directory(p->manager, &dir);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/%s.env", dir, p->unit) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        p->env_file = TAKE_PTR(path);
        f = fdopen(fd, "w");
        if (!f) {
                safe_close(fd);
                return -errno;
        }
        return write_environment(f, req);
}

static void environment_file_remove(AttachProcess *p) {
        if (p->env_file && unlink(p->env_file) < 0 && errno != ENOENT)
                log_warning_errno(-errno, "Failed to remove '%s', ignoring: %m", p->env_file);
        free(p->env_file);
        p->env_file = NULL;
}

/* --- the control group ------------------------------------------------------------- */

/* Threads in the unit's control group, from whichever hierarchy systemd keeps: unified
 * (cgroup v2 on /sys/fs/cgroup), hybrid (/sys/fs/cgroup/unified) or legacy (name=systemd). */
static int cgroup_count_tasks(const char *cgroup, unsigned *ret) {
        static const struct {
                const char *root, *file;
        } places[] = {
                { "/sys/fs/cgroup",         "cgroup.threads" },
                { "/sys/fs/cgroup/unified", "cgroup.threads" },
                { "/sys/fs/cgroup/systemd", "tasks" },
        };

        for (size_t i = 0; i < ELEMENTSOF(places); i++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_fclose_ FILE *f = NULL;
                unsigned n = 0;
                int c;

                if (asprintf(&path, "%s%s/%s", places[i].root, cgroup, places[i].file) < 0)
                        return -ENOMEM;
                f = fopen(path, "re");
                if (!f)
                        continue;
                while ((c = fgetc(f)) != EOF)
                        n += c == '\n';
                *ret = n;
                return 0;
        }
        return -ENOENT;
}

unsigned attach_unit_tasks(AttachProcess *p) {
        unsigned n;

        if (!p->cgroup || cgroup_count_tasks(p->cgroup, &n) < 0 || n == 0)
                return 1;
        return n;
}

/* --- talking to systemd ------------------------------------------------------------- */

/* The Manager's: both matches, and the commands they dispatch to. */
struct AttachUnits {
        Manager *manager;
        sd_bus_slot *job_match, *properties_match;
        unsigned n_installing;          /* AddMatch calls not answered yet */
        bool installed;                 /* both answered, and taken */
        Hashmap *units;                 /* unit name → AttachProcess */
        unsigned n_calls, n_user_calls; /* in flight: all, and of callers other than root */
};

static void unit_call_async(AttachProcess *p, const char *method, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        /* No reply expected: nothing the bus keeps pending for us. */
        r = sd_bus_message_new_method_call(p->manager->bus, &m, SYSTEMD_BUS_NAME, SYSTEMD_PATH,
                                           SYSTEMD_MANAGER_INTERFACE, method);
        if (r >= 0) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_message_set_expect_reply(m, false);
        if (r >= 0)
                r = sd_bus_send(p->manager->bus, m, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to call %s for %s, ignoring: %m", method, p->unit);
}

/* --- calls in flight --- */

static unsigned calls_of_uid(Manager *m, uid_t uid) {
        unsigned n = 0;

        for (AttachProcess *p = m->attach_processes; p; p = p->next)
                if (p->uid == uid)
                        n += p->n_calls;
        return n;
}

/* Whether a call for a command of 'uid' may go now; if not, and 'error' is given, which
 * budget it would exceed. */
static bool may_call(AttachUnits *u, uid_t uid, NsmError *error) {
        unsigned n;

        if (u->n_calls >= SYSTEMD_CALLS_MAX) {
                if (error)
                        (void) nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "The daemon has %u calls to systemd in "
                                              "flight (SystemdCalls=%u); try again once they are answered.",
                                              u->n_calls, SYSTEMD_CALLS_MAX);
                return false;
        }
        if (uid == 0)
                return true;
        if (u->n_user_calls >= SYSTEMD_CALLS_OF_USERS_MAX) {
                if (error)
                        (void) nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "Users have %u calls to systemd in "
                                              "flight (SystemdCallsOfUsers=%u); try again once they are answered.",
                                              u->n_user_calls, SYSTEMD_CALLS_OF_USERS_MAX);
                return false;
        }
        n = calls_of_uid(u->manager, uid);
        if (n >= SYSTEMD_CALLS_PER_UID_MAX) {
                if (error)
                        (void) nsm_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED, "uid %u has %u calls to systemd in "
                                              "flight (SystemdCallsPerUID=%u); try again once its commands started.",
                                              (unsigned) uid, n, SYSTEMD_CALLS_PER_UID_MAX);
                return false;
        }
        return true;
}

static void call_begin(AttachProcess *p) {
        AttachUnits *u = p->manager->attach_units;

        p->n_calls++;
        u->n_calls++;
        u->n_user_calls += p->uid != 0;
}

static void call_end(AttachProcess *p) {
        AttachUnits *u = p->manager->attach_units;

        if (p->n_calls == 0)
                return;
        p->n_calls--;
        u->n_calls--;
        u->n_user_calls -= p->uid != 0;
}

static void refresh(AttachProcess *p);

/* A call was answered: the properties that waited for one are read now, as far as the
 * budgets allow. */
static void run_deferred(AttachUnits *u) {
        for (AttachProcess *p = u->manager->attach_processes; p && u->n_calls < SYSTEMD_CALLS_MAX; p = p->next)
                if (p->refresh_deferred && may_call(u, p->uid, NULL)) {
                        p->refresh_deferred = false;
                        refresh(p);
                }
}

/* The client hung up: SIGHUP to the command, as a terminal hangup would. Only to the main
 * process: systemd's PAM helper (sd-pam) in the same unit would die of it and skip
 * pam_close_session. */
static void hang_up(AttachProcess *p) {
        unit_call_async(p, "KillUnit", "ssi", p->unit, "main", (int32_t) SIGHUP);
}

/* Done with the unit: it ended, or never started. CollectMode=inactive-or-failed lets systemd
 * forget it once our reference is gone. */
static void finish(AttachProcess *p) {
        unit_call_async(p, "UnrefUnit", "s", p->unit);
        attach_process_free(p);
}

typedef struct ServiceState {
        uint32_t exec_main_pid;
        int32_t exec_main_code;        /* CLD_EXITED, CLD_KILLED, CLD_DUMPED; 0 while it runs */
        int32_t exec_main_status;
        const char *result;
        const char *control_group;
} ServiceState;

/* After the start job: the PID (or an error if systemd could not even fork it) goes to
 * p->on_started(), which answers the call. Returns 1 if the command runs (or ran), 0 if it
 * never did and 'p' is gone. */
static int answer_call(AttachProcess *p, const ServiceState *st) {
        if (!streq(p->job_result, "done")) {
                _cleanup_(nsm_error_done) NsmError e = {};
                (void) nsm_error_setf(&e, NSM_ERROR_FAILED, "systemd could not start '%s' in the namespace of '%s' "
                                      "(job %s, result '%s'; see journalctl -u %s).", p->command, p->user,
                                      p->job_result, st->result ?: "unknown", p->unit);
                p->on_started(p, &e);
                finish(p);
                return 0;
        }

        p->pid = (pid_t) st->exec_main_pid;
        p->on_started(p, NULL);
        log_debug("%s runs the command of uid %u in the namespace of '%s' as PID %d.", p->unit, (unsigned) p->uid,
                  p->user, (int) p->pid);
        return 1;
}

static int read_service_property(sd_bus_message *m, const char *name, void *userdata) {
        ServiceState *st = userdata;
        int r;

        if (streq(name, "ExecMainPID"))
                r = sd_bus_message_read(m, "v", "u", &st->exec_main_pid);
        else if (streq(name, "ExecMainCode"))
                r = sd_bus_message_read(m, "v", "i", &st->exec_main_code);
        else if (streq(name, "ExecMainStatus"))
                r = sd_bus_message_read(m, "v", "i", &st->exec_main_status);
        else if (streq(name, "Result"))
                r = sd_bus_message_read(m, "v", "s", &st->result);
        else if (streq(name, "ControlGroup"))
                r = sd_bus_message_read(m, "v", "s", &st->control_group);
        else
                return 0;
        return r < 0 ? r : 1;
}

/* Where the unit is now: started (answer the call), ended (report the status). Returns 0 if
 * 'p' is gone, 1 if it waits for more. */
static int advance(AttachProcess *p, const ServiceState *st) {
        if (p->call) {
                if (!p->job_result)
                        return 1;                          /* still starting */
                environment_file_remove(p);                /* systemd has read it */
                if (answer_call(p, st) == 0)
                        return 0;
        }
        if (st->exec_main_code <= 0)
                return 1;                                  /* still running */

        attach_process_report(p, st->exec_main_code == CLD_EXITED ? CLD_EXITED : CLD_KILLED, st->exec_main_status);
        finish(p);
        return 0;
}

static int on_service_state(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        AttachProcess *p = userdata;
        AttachUnits *u = p->manager->attach_units;
        ServiceState st = {};
        int r;

        p->call_slot = sd_bus_slot_unref(p->call_slot);
        call_end(p);
        r = sd_bus_message_get_errno(reply);
        if (r == 0)
                r = bus_message_read_dict(reply, read_service_property, &st);
        if (r < 0) {
                if (p->call) {
                        _cleanup_(nsm_error_done) NsmError e = {};
                        (void) nsm_error_setf(&e, NSM_ERROR_FAILED, "Failed to learn whether %s started: %s", p->unit,
                                              strerror(-r));
                        p->on_started(p, &e);
                } else
                        log_warning_errno(r, "Failed to read the state of %s, no longer watching it: %m", p->unit);
                finish(p);
        } else {
                if (st.control_group && st.control_group[0] && !p->cgroup)
                        p->cgroup = strdup(st.control_group);      /* without it, it counts 1 */
                if (advance(p, &st) > 0 && p->refresh_again)
                        refresh(p);
        }
        run_deferred(u);
        return 0;
}

/* Reads the service's properties, one request at a time; a change meanwhile reads again. A
 * read that would exceed a budget waits for a call to be answered (run_deferred()). */
static void refresh(AttachProcess *p) {
        AttachUnits *u = p->manager->attach_units;
        _cleanup_free_ char *path = NULL;
        int r;

        if (p->call_slot) {
                p->refresh_again = true;
                return;
        }
        p->refresh_again = false;
        if (!may_call(u, p->uid, NULL)) {
                p->refresh_deferred = true;
                return;
        }

        r = sd_bus_path_encode(SYSTEMD_UNIT_PATH_PREFIX, p->unit, &path);
        if (r >= 0)
                r = sd_bus_call_method_async(p->manager->bus, &p->call_slot, SYSTEMD_BUS_NAME, path,
                                             "org.freedesktop.DBus.Properties", "GetAll", on_service_state, p,
                                             "s", SYSTEMD_SERVICE_INTERFACE);
        if (r < 0) {
                log_warning_errno(r, "Failed to ask systemd about %s, ignoring: %m", p->unit);
                return;
        }
        call_begin(p);
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        AttachUnits *u = userdata;
        const char *job, *unit, *result;
        AttachProcess *p;
        uint32_t id;

        if (!bus_creds_sent_by(u->manager->creds, m, SYSTEMD_BUS_NAME))
                return 0;       /* a peer's fake, sent straight to us (bus-creds.h) */
        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0)
                return 0;
        p = hashmap_get(u->units, unit);
        if (!p || (p->job && !streq(job, p->job)))
                return 0;
        free(p->job_result);
        p->job_result = strdup(result);
        if (!p->job_result)
                return log_oom();
        refresh(p);
        return 0;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        AttachUnits *u = userdata;
        _cleanup_free_ char *unit = NULL;
        AttachProcess *p;

        if (!bus_creds_sent_by(u->manager->creds, m, SYSTEMD_BUS_NAME))
                return 0;
        if (sd_bus_path_decode(sd_bus_message_get_path(m), SYSTEMD_UNIT_PATH_PREFIX, &unit) <= 0)
                return 0;
        p = hashmap_get(u->units, unit);
        if (p)
                refresh(p);
        return 0;
}

static int on_start_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        AttachProcess *p = userdata;
        AttachUnits *u = p->manager->attach_units;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        const char *job;

        p->start_slot = sd_bus_slot_unref(p->start_slot);
        call_end(p);
        if (e) {
                /* systemd's refusal keeps its name where it is one of ours (AccessDenied,
                 * InvalidArgs, …); any other (systemd's own) is Failed, and named in the sentence. */
                _cleanup_(nsm_error_done) NsmError refused = {};
                NsmErrorCode code = nsm_error_code_from_name(e->name);
                (void) nsm_error_setf(&refused, code >= 0 ? code : NSM_ERROR_FAILED, "systemd refused to start '%s': "
                                      "%s%s%s%s", p->command, e->message ?: e->name, code >= 0 ? "" : " (",
                                      code >= 0 ? "" : e->name, code >= 0 ? "" : ")");
                p->on_started(p, &refused);
                attach_process_free(p);
        } else if (sd_bus_message_read(reply, "o", &job) >= 0 && !(p->job = strdup(job)))
                log_oom();
        run_deferred(u);
        return 0;
}

/* Sends the StartTransientUnit a start was kept with (it was charged to the budgets then). */
static void send_start(AttachProcess *p) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = TAKE_PTR(p->start_message);
        int r;

        r = sd_bus_call_async(p->manager->bus, &p->start_slot, m, on_start_reply, p, 0);
        if (r < 0) {
                _cleanup_(nsm_error_done) NsmError e = {};
                call_end(p);
                (void) nsm_error_set_errnof(&e, r, "Failed to call StartTransientUnit: %m");
                p->on_started(p, &e);
                attach_process_free(p);
        }
}

/* --- the matches --- */

/* Both matches answered: the starts that waited for them go, or fail, each alone; the
 * connection stays whatever the bus said (sd-bus closes it when an AddMatch without install
 * callback is refused). A refused match is asked for again at the next start. */
static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        AttachUnits *u = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        _cleanup_free_ char *why = NULL;

        if (e) {
                log_error("The bus refused a match for systemd's units (%s: %s); the attached commands waiting for "
                          "it fail.", e->name, e->message ?: "");
                if (asprintf(&why, "%s: %s", e->name, e->message ?: "") < 0)
                        why = NULL;
                /* Both go (the other's answer with it); the next start asks again. */
                u->job_match = sd_bus_slot_unref(u->job_match);
                u->properties_match = sd_bus_slot_unref(u->properties_match);
                u->n_installing = 0;
        } else {
                if (u->n_installing > 0)
                        u->n_installing--;
                if (u->n_installing > 0)
                        return 0;              /* the other one's answer is still to come */
                u->installed = true;
        }

        for (AttachProcess *p = u->manager->attach_processes, *next; p; p = next) {
                next = p->next;
                if (!p->start_message)
                        continue;
                if (u->installed)
                        send_start(p);
                else {
                        _cleanup_(nsm_error_done) NsmError refused = {};
                        (void) nsm_error_setf(&refused, NSM_ERROR_FAILED, "The bus refused the daemon's watch of "
                                              "systemd's units (%s); try again.", why ?: "?");
                        call_end(p);
                        p->on_started(p, &refused);
                        attach_process_free(p);
                }
        }
        return 0;
}

static int install_matches(AttachUnits *u) {
        int r;

        if (u->installed || u->n_installing > 0)
                return 0;
        /* Who systemd is, asked before the matches are added and so answered before any
         * command is started: its signals are told from a peer's fakes by the sender. */
        r = bus_creds_follow_owner(u->manager->creds, u->manager->bus, SYSTEMD_BUS_NAME);
        if (r < 0)
                return r;
        /* Every JobRemoved: an arg2='UNIT' match would do on the bus, but sd-bus (252) counts
         * only string arguments when it checks argN itself, and "uoss" has its unit third among
         * those. on_job_removed() picks ours by name. */
        r = sd_bus_add_match_async(u->manager->bus, &u->job_match,
                                   "type='signal',sender='" SYSTEMD_BUS_NAME "',path='" SYSTEMD_PATH "',"
                                   "interface='" SYSTEMD_MANAGER_INTERFACE "',member='JobRemoved'",
                                   on_job_removed, on_match_installed, u);
        if (r < 0)
                return r;
        u->n_installing++;
        /* Every service's: systemd sends them for units of the whole system, and
         * on_properties_changed() picks ours by the object's path. */
        r = sd_bus_add_match_async(u->manager->bus, &u->properties_match,
                                   "type='signal',sender='" SYSTEMD_BUS_NAME "',"
                                   "path_namespace='" SYSTEMD_UNIT_PATH_PREFIX "',"
                                   "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                                   "arg0='" SYSTEMD_SERVICE_INTERFACE "'",
                                   on_properties_changed, on_match_installed, u);
        if (r < 0) {
                u->job_match = sd_bus_slot_unref(u->job_match);
                u->n_installing = 0;
                return r;
        }
        u->n_installing++;
        return 0;
}

static void forget(AttachProcess *p) {
        AttachUnits *u = p->manager->attach_units;

        if (!u)
                return;
        if (p->unit && hashmap_get(u->units, p->unit) == p)
                (void) hashmap_remove(u->units, p->unit);
        while (p->n_calls > 0)
                call_end(p);
}

static int attach_units_get(Manager *m, AttachUnits **ret) {
        AttachUnits *u = m->attach_units;

        if (!u) {
                u = calloc(1, sizeof(AttachUnits));
                if (!u)
                        return -ENOMEM;
                u->manager = m;
                u->units = hashmap_new();
                if (!u->units) {
                        free(u);
                        return -ENOMEM;
                }
                m->attach_units = u;
        }
        *ret = u;
        return 0;
}

void attach_unit_done(Manager *m) {
        AttachUnits *u = m->attach_units;

        if (!u)
                return;
        for (AttachProcess *p = m->attach_processes; p; p = p->next)
                if (p->forget == forget)
                        p->forget = NULL;
        sd_bus_slot_unref(u->job_match);
        sd_bus_slot_unref(u->properties_match);
        hashmap_free(u->units);
        free(u);
        m->attach_units = NULL;
}

/* --- the transient unit -------------------------------------------------------------- */

/* ExecStart=ATTACH_EXEC_PATH, nothing else: the command is in the environment file. The program
 * replaces itself with the command, so the command is the unit's main process (its PID is the
 * one Attach() returns); if it cannot, it says why on the command's stderr and exits 127 or
 * 126, as a shell does: systemd itself would only log that, and with PAMName= systemd 252
 * cannot tell the job when execve() succeeded (Type=exec hangs: its sd-pam helper keeps the
 * exec fd open), so the job is done at the fork. */
static int append_properties(sd_bus_message *m, AttachProcess *p, const AttachRequest *req) {
        _cleanup_free_ char *description = NULL, *slice = NULL, *user = NULL, *env = NULL;
        int r;

        /* Numbers and the namespace's user name (valid_user_name(), from NSS): nothing else. */
        if (asprintf(&description, "nsctl attach of uid %u to the namespace of %s", (unsigned) req->uid,
                     req->user) < 0 ||
            asprintf(&slice, "user-%u.slice", (unsigned) req->uid) < 0 ||
            asprintf(&user, "%u", (unsigned) req->uid) < 0 ||
            asprintf(&env, ATTACH_NAMESPACE_ENV "=%s", req->user) < 0)
                return -ENOMEM;

        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)",
                                          "Description", "s", description,
                                          "Type", "s", "simple",
                                          "Slice", "s", slice,
                                          "User", "s", user,
                                          "PAMName", "s", ATTACH_PAM_SERVICE,
                                          "Environment", "as", 1, env,
                                          "EnvironmentFiles", "a(sb)", 1, p->env_file, false);
        if (r >= 0)
                /* The caller's home, as the user, once PAM entered the view (pam_nsmanager put us
                 * there already); "-": / if the view lacks it. The caller's directory is
                 * nsmanager-attach-exec's to change to. */
                r = sd_bus_message_append(m, "(sv)", "WorkingDirectory", "s", "-~");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "ExecStart", "a(sasb)", 1, ATTACH_EXEC_PATH, 1, ATTACH_EXEC_PATH,
                                          false);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)",
                                          "StandardInputFileDescriptor", "h", req->fds[0],
                                          "StandardOutputFileDescriptor", "h", req->fds[1],
                                          "StandardErrorFileDescriptor", "h", req->fds[2],
                                          /* As after a login: default dispositions, and a
                                           * shell that ignores SIGTERM still goes on stop. */
                                          "IgnoreSIGPIPE", "b", false,
                                          "SendSIGHUP", "b", true,
                                          "TasksMax", "t", (uint64_t) p->manager->config.attach_tasks_max,
                                          "CollectMode", "s", "inactive-or-failed",
                                          "AddRef", "b", true);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int unit_name(uid_t uid, char **ret) {
        uint64_t random;

        if (getrandom(&random, sizeof random, 0) != sizeof random)
                return -errno;
        return asprintf(ret, "nsmanager-attach-%u-%016" PRIx64 ".service", (unsigned) uid, random) < 0 ? -ENOMEM : 0;
}

int attach_unit_start(AttachProcess *p, const AttachRequest *req, sd_bus_message *message,
                      AttachStartedFunc on_started, NsmError *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        AttachUnits *u;
        int r;

        r = attach_units_get(p->manager, &u);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to keep track of systemd's units: %m");
        /* Before anything is written: a refusal leaves nothing behind. */
        if (!may_call(u, req->uid, error))
                return -EDQUOT;
        r = unit_name(req->uid, &p->unit);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to name the unit: %m");
        r = environment_file_create(p, req);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to write the environment for systemd: %m");
        r = install_matches(u);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to watch systemd's units: %m");

        r = sd_bus_message_new_method_call(p->manager->bus, &m, SYSTEMD_BUS_NAME, SYSTEMD_PATH,
                                           SYSTEMD_MANAGER_INTERFACE, "StartTransientUnit");
        if (r >= 0)
                r = sd_bus_message_append(m, "ss", p->unit, "fail");
        if (r >= 0)
                r = append_properties(m, p, req);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to build the StartTransientUnit call: %m");
        r = hashmap_put(u->units, p->unit, p);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to keep track of %s: %m", p->unit);
        p->forget = forget;

        /* Sent once the matches are in place (at once if they are): the bus applies them
         * before the start, so no signal of the unit's is missed. */
        if (u->installed) {
                r = sd_bus_call_async(p->manager->bus, &p->start_slot, m, on_start_reply, p, 0);
                if (r < 0)
                        return nsm_error_set_errnof(error, r, "Failed to call StartTransientUnit: %m");
        } else
                p->start_message = TAKE_PTR(m);
        call_begin(p);

        p->call = sd_bus_message_ref(message);
        p->on_started = on_started;
        r = attach_process_watch_client(p, hang_up);
        if (r < 0)
                log_warning_errno(r, "Cannot watch the client of %s, ignoring: %m", p->unit);
        return 0;
}
