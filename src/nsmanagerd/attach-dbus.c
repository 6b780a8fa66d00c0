/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Manager.Attach() and Manager.OpenAttach(): read, validate, authorize, act, reply. Who the
 * command runs as comes from the bus, never from the arguments: the uid the bus authenticated,
 * and that uid's primary group and supplementary groups in NSS. Nothing is read from /proc: the
 * caller could have exec'd a setgid program since it sent the call.
 *
 * Attach() takes the command's stdio and status fds from the caller: root's alone. Closing an
 * fd of a file on a user's FUSE mount sends her server FLUSH and waits for the answer, beyond
 * SIGKILL, so the process that answers everybody's logins never holds an fd a user sent (the
 * bus policy refuses users' messages with fds before they reach us). Users call OpenAttach()
 * instead: the daemon makes the pipes or the pty and the status socket, and hands the caller
 * their ends in the reply, as machined's OpenMachinePTY() does.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "attach-fork.h"
#include "attach-process.h"
#include "attach-unit.h"
#include "attach-dbus.h"
#include "audit.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "bus-request.h"
#include "child.h"
#include "log.h"
#include "namespace.h"
#include "strv.h"

/* OpenAttach() flags */
#define OPEN_ATTACH_PTY UINT64_C(0x1)
/* The pty's size travels with the call (rows in bits 32-47, columns in 48-63) and is set before
 * the command starts: set by the caller afterwards, it raced with the command's first look
 * (`stty size` said "0 0"). */
#define OPEN_ATTACH_PTY_SIZE UINT64_C(0x2)
#define OPEN_ATTACH_SIZE_BITS UINT64_C(0xffffffff00000000)
#define OPEN_ATTACH_FLAGS (OPEN_ATTACH_PTY | OPEN_ATTACH_PTY_SIZE | OPEN_ATTACH_SIZE_BITS)

/* The arguments, as read from the message (strings and fds belong to it). */
typedef struct AttachArgs {
        const char *user;
        char **command;
        char **environment;
        const char *working_directory;
        bool open_attach;              /* OpenAttach(): no fds, 'flags' */
        uint64_t flags;
        int fds[4];                    /* Attach(): stdin, stdout, stderr, status */
} AttachArgs;

static void attach_args_done(AttachArgs *a) {
        strv_free(a->command);
        strv_free(a->environment);
}

static int read_args(sd_bus_message *message, AttachArgs *ret) {
        int r;

        r = sd_bus_message_read(message, "s", &ret->user);
        if (r >= 0)
                r = sd_bus_message_read_strv(message, &ret->command);
        if (r >= 0)
                r = sd_bus_message_read_strv(message, &ret->environment);
        if (r >= 0)
                r = sd_bus_message_read(message, "s", &ret->working_directory);
        if (r >= 0 && ret->open_attach)
                r = sd_bus_message_read(message, "t", &ret->flags);
        else if (r >= 0)
                r = sd_bus_message_read(message, "hhhh", &ret->fds[0], &ret->fds[1], &ret->fds[2], &ret->fds[3]);
        return r;
}

/* The caller's stdin/stdout/stderr can be anything it could open; the status fd must be
 * something we can write a line to: a pipe or a socket, open for writing. Looked at without
 * asking their file system (AT_STATX_DONT_SYNC): an fd on the caller's hung FUSE mount would
 * make the whole daemon wait. The type of a file is known without asking. */
static int check_fds(const int fds[4], sd_bus_error *error) {
        static const char *const names[] = { "stdin", "stdout", "stderr", "status" };
        struct statx sx = {};
        int flags;

        for (int i = 0; i < 4; i++)
                if (statx(fds[i], "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &sx) < 0)
                        return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "The %s fd is not usable: %s",
                                              names[i], strerror(errno));

        if (!S_ISFIFO(sx.stx_mode) && !S_ISSOCK(sx.stx_mode))
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS,
                                      "The status fd must be the write end of a pipe or a socket.");
        flags = fcntl(fds[3], F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS,
                                      "The status fd must be open for writing (the write end of a pipe).");
        return 0;
}

static int validate_args(const AttachArgs *a, sd_bus_error *error) {
        const char *c = a->command ? a->command[0] : NULL;

        if (!c || !c[0])
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "No command given.");
        if (strchr(c, '/') && c[0] != '/')
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS,
                                      "Command '%s' must be an absolute path or a name looked up in $PATH.", c);
        for (char **e = a->environment; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq || eq == *e)
                        return bus_error_setf(error, NSM_ERROR_INVALID_ARGS,
                                              "Environment entry '%s' is not of the form KEY=VALUE.", *e);
        }
        if (a->working_directory[0] && a->working_directory[0] != '/')
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH, "Working directory '%s' is not an absolute path.",
                                      a->working_directory);
        if (a->open_attach) {
                if (a->flags & ~OPEN_ATTACH_FLAGS)
                        return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                              a->flags & ~OPEN_ATTACH_FLAGS);
                if ((a->flags & OPEN_ATTACH_PTY_SIZE) && !(a->flags & OPEN_ATTACH_PTY))
                        return bus_error_setf(error, NSM_ERROR_INVALID_ARGS,
                                              "Flag 0x2 (the terminal's size) needs flag 0x1 (a terminal).");
                if ((a->flags & OPEN_ATTACH_SIZE_BITS) && !(a->flags & OPEN_ATTACH_PTY_SIZE))
                        return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64
                                              " (a terminal's size needs flag 0x2).", a->flags & OPEN_ATTACH_SIZE_BITS);
                return 0;
        }
        return check_fds(a->fds, error);
}

/* Tasks (threads) of every command of 'uid' still running through us, descendants included
 * where systemd runs them (their units' control groups); a command whose start is still in
 * progress counts 1, and so does one the daemon forked. */
static unsigned tasks_of_uid(Manager *m, uid_t uid) {
        unsigned n = 0;

        for (AttachProcess *p = m->attach_processes; p; p = p->next)
                if (p->uid == uid)
                        n += p->unit ? attach_unit_tasks(p) : 1;
        return n;
}

/* AttachTasksMax=: every task of the caller's attached commands counts, their descendants too
 * where systemd runs them. Root is not limited. */
static int check_limit(Manager *m, uid_t uid, sd_bus_error *error) {
        unsigned n, max = m->config.attach_tasks_max;

        if (uid == 0)
                return 0;
        /* Each helper of hers that could not let go of an attached command's fds (or write its
         * status) waits on a lock she holds, a process of ours that nothing ends: no more. */
        if (m->config.max_stuck_operations > 0 &&
            child_set_stuck(m->children, uid) >= m->config.max_stuck_operations)
                return bus_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED,
                                      "uid %u has as many stuck operations as MaxStuckOperations=%u allows.",
                                      (unsigned) uid, m->config.max_stuck_operations);
        n = tasks_of_uid(m, uid);
        if (n >= max)
                return bus_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED,
                                      "The commands uid %u attached still run %u tasks (AttachTasksMax=%u).",
                                      (unsigned) uid, n, max);
        return 0;
}

/* A pseudo terminal for the command, owned by the caller: opened with the caller's file system
 * uid and gid, so devpts gives the new slave to them (its group is tty where devpts is mounted
 * with gid=5, as everywhere), as a login's terminal is theirs. No CAP_CHOWN needed. The slave
 * comes from the master itself (TIOCGPTPEER), never by its name in /dev/pts. */
static int open_pty(uid_t uid, gid_t gid, int *ret_master, int *ret_slave) {
        _cleanup_close_ int master = -EBADF, slave = -EBADF;
        int unlock = 0, r = 0;

        (void) setfsgid(gid);
        (void) setfsuid(uid);
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                r = -errno;
        (void) setfsuid(0);
        (void) setfsgid(0);
        if (r < 0)
                return r;
        if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
                return -errno;
        slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                return -errno;
        *ret_master = TAKE_FD(master);
        *ret_slave = TAKE_FD(slave);
        return 0;
}

/* OpenAttach(): the fds, made here. 'p' keeps every one until the hand-over; the command's
 * ends go to ret_command, the caller's to p->reply_fds. The status is a socket, not a pipe: the
 * daemon's end is shut for reading at once, so nothing (no fd either) can ever be queued to it,
 * and neither writing a line to it nor closing it takes a lock the caller's end can hold. */
static int make_fds(AttachProcess *p, bool pty, const struct winsize *size, gid_t gid, int ret_command[3],
                    int *ret_status, NsmError *error) {
        _cleanup_close_ int status = -EBADF;
        int pair[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to make the status socket: %m");
        status = pair[0];
        if (shutdown(status, SHUT_RD) < 0) {
                r = -errno;
                safe_close(pair[1]);
                return nsm_error_set_errnof(error, r, "Failed to make the status socket: %m");
        }
        p->reply_fds[3] = pair[1];
        r = attach_process_keep_fd(p, pair[1]);
        if (r < 0)
                return r;

        if (pty) {
                int master = -EBADF, slave = -EBADF;

                r = open_pty(p->uid, gid, &master, &slave);
                if (r < 0)
                        return nsm_error_set_errnof(error, r, "Failed to allocate a pseudo terminal: %m");
                if (size && ioctl(master, TIOCSWINSZ, size) < 0) {
                        r = -errno;
                        safe_close(master);
                        safe_close(slave);
                        return nsm_error_set_errnof(error, r, "Failed to set the terminal's size: %m");
                }
                r = attach_process_keep_fd(p, master);
                if (r >= 0)
                        r = attach_process_keep_fd(p, slave);
                if (r < 0)
                        return r;
                for (int i = 0; i < 3; i++) {
                        p->reply_fds[i] = master;
                        ret_command[i] = slave;
                }
        } else
                for (int i = 0; i < 3; i++) {
                        int fds[2];

                        if (pipe2(fds, O_CLOEXEC) < 0)
                                return nsm_error_set_errnof(error, -errno, "Failed to make the pipes: %m");
                        /* stdin: the command reads, the caller writes; stdout, stderr: the other way. */
                        ret_command[i] = fds[i == 0 ? 0 : 1];
                        p->reply_fds[i] = fds[i == 0 ? 1 : 0];
                        r = attach_process_keep_fd(p, fds[0]);
                        if (r >= 0)
                                r = attach_process_keep_fd(p, fds[1]);
                        if (r < 0)
                                return r;
                }
        *ret_status = TAKE_FD(status);
        return 0;
}

/* Answers 'call' (Attach() or OpenAttach()) with the PID, and for OpenAttach() the caller's
 * ends; then lets go of the daemon's copies. */
static int reply(AttachProcess *p, sd_bus_message *call) {
        int r;

        audit_call_pid(p->manager, call, NULL, p->pid);
        if (p->open_attach)
                r = sd_bus_reply_method_return(call, "uhhhh", (uint32_t) p->pid, p->reply_fds[0], p->reply_fds[1],
                                               p->reply_fds[2], p->reply_fds[3]);
        else
                r = sd_bus_reply_method_return(call, "u", (uint32_t) p->pid);
        /* The reply holds its own copies: the caller has them now, or never will. */
        attach_process_release_fds(p);
        return r;
}

/* The outcome of a start systemd finished later (AttachStartedFunc): the call attach-unit.c
 * held is answered here, with the PID or the error, and recorded. */
static void on_started(AttachProcess *p, const NsmError *error) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        if (!p->call)
                return;
        if (error) {
                (void) bus_error_set_nsm(&e, error);
                audit_call(p->manager, p->call, &e);
                r = sd_bus_reply_method_error(p->call, &e);
        } else
                r = reply(p, p->call);
        if (r < 0)
                log_debug_errno(r, "Failed to answer Attach(), ignoring: %m");
        p->call = sd_bus_message_unref(p->call);
}

/* Act: the command started one way or the other, as the caller NSS named (her record and
 * groups, looked up off the loop by attach_common()). Returns 1 when attach_unit_start()
 * answers the call later, 0 when the caller is to reply with p->pid. */
static int start(Manager *m, sd_bus_message *message, const AttachArgs *a, Namespace *ns, uid_t uid,
                 const UserRecord *record, const Credentials *caller, AttachProcess **ret, sd_bus_error *error) {
        _cleanup_(attach_process_freep) AttachProcess *p = NULL;
        _cleanup_(nsm_error_done) NsmError e = {};
        _cleanup_close_ int status_fd = -EBADF;
        int fds[3] = { a->fds[0], a->fds[1], a->fds[2] };
        AttachRequest req;
        int r;

        if (!a->open_attach) {
                status_fd = fcntl(a->fds[3], F_DUPFD_CLOEXEC, 3);
                if (status_fd < 0)
                        return bus_error_set_errnof(error, -errno, "Failed to duplicate the status fd: %m");
        }
        r = attach_process_new(m, uid, ns->name, a->command[0], TAKE_FD(status_fd), &p);
        if (r < 0)
                return bus_error_set_errnof(error, r, "Failed to set up the status fd: %m");
        if (a->open_attach) {
                p->open_attach = true;
                struct winsize size = { .ws_row = (unsigned short) (a->flags >> 32),
                                        .ws_col = (unsigned short) (a->flags >> 48) };
                r = make_fds(p, a->flags & OPEN_ATTACH_PTY, a->flags & OPEN_ATTACH_PTY_SIZE ? &size : NULL,
                             caller->gid, fds, &p->status_fd, &e);
                if (r < 0 && !nsm_error_is_set(&e))
                        (void) nsm_error_set_errnof(&e, r, "Failed to keep the command's fds: %m");
                if (r < 0)
                        return bus_error_set_nsm(error, &e);
        }

        req = (AttachRequest) {
                .user = ns->name,
                .mntns_fd = ns->mntns_fd,
                .uid = uid,
                .caller = caller,
                .home = record->home,
                .command = a->command,
                .environment = a->environment,
                .working_directory = a->working_directory[0] ? a->working_directory : NULL,
                .fds = { fds[0], fds[1], fds[2] },
        };
        if (attach_unit_available()) {
                r = attach_unit_start(p, &req, message, on_started, &e);
                if (r < 0)
                        return bus_error_set_nsm(error, &e);
                TAKE_PTR(p);
                return 1;
        }
        r = attach_fork_start(p, &req, &e);
        if (r < 0)
                return bus_error_set_nsm(error, &e);
        *ret = TAKE_PTR(p);
        return 0;
}

static int attach_common(sd_bus_message *message, Manager *m, bool open_attach, sd_bus_error *error) {
        _cleanup_(attach_args_done) AttachArgs a = { .open_attach = open_attach };
        _cleanup_(user_record_done) UserRecord u = {}, record = {};
        _cleanup_(credentials_done) Credentials caller = {};
        const char *details[] = { "user", NULL, NULL };
        AttachProcess *p = NULL;
        Namespace *ns;
        uid_t uid;
        int r;

        /* Read */
        r = read_args(message, &a);
        if (r < 0)
                return r;

        /* Validate */
        r = validate_args(&a, error);
        if (r < 0)
                return r;
        /* Any spelling, or a UID: the namespace of that uid (bus-request.h). A name only NSS can
         * answer costs a child: charged before it starts, as the call itself is below. */
        if (bus_user_needs_lookup(m, a.user)) {
                r = bus_message_caller_uid(m, message, &uid, error);
                if (r < 0)
                        return r;
                r = bus_rate_limit_uid(m, uid, error);
                if (r < 0)
                        return r;
        }
        r = bus_resolve_user(m, message, a.user, manager_deadline(m), &u, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1; /* NSS is asked; we are called again */
        ns = manager_get_namespace_by_uid(m, u.uid);
        if (!ns || !ns->ready)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "User '%s' has no namespace.", u.name);
        a.user = ns->name;
        r = bus_message_caller_uid(m, message, &uid, error);
        if (r < 0)
                return r;

        /* Who the command runs as: her record and groups, NSS's in a child, never on the loop.
         * Looked up before polkit is asked (not again in the dispatch that brings polkit's
         * answer): polkit's answer is kept for that one dispatch only, so a lookup started after
         * it would have the call charged and polkit asked a second time. Asked once more after
         * polkit, the answer is in the lookups' cache unless polkit took longer than it keeps
         * answers. The lookup is the caller's own, one in flight per uid (group-lookup.c). */
        if (!polkit_registry_knows(m->polkit_registry, message)) {
                r = bus_caller_credentials(m, message, uid, manager_deadline(m), NULL, NULL, error);
                if (r < 0)
                        return r;
                if (r == 0)
                        return 1; /* NSS is asked; we are called again */
        }

        /* Charged before polkit is asked, refused calls included; once (a call that waited for
         * polkit is dispatched twice). */
        if (!polkit_registry_knows(m->polkit_registry, message)) {
                r = bus_rate_limit_uid(m, uid, error);
                if (r < 0)
                        return r;
        }

        /* Authorize */
        details[1] = a.user;
        r = bus_verify_polkit_async(message,
                                    uid == ns->uid ? "org.example.NSManager.attach-own" : "org.example.NSManager.attach",
                                    details, &m->polkit_registry, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1; /* polkit is asking; we are called again */
        r = check_limit(m, uid, error);
        if (r < 0)
                return r;

        r = bus_caller_credentials(m, message, uid, manager_deadline(m), &record, &caller, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1; /* NSS is asked again (polkit took longer than the cache keeps answers) */

        /* Act */
        r = start(m, message, &a, ns, uid, &record, &caller, &p, error);
        if (r != 0)
                return r;

        /* Reply */
        return reply(p, message);
}

/* A refusal before the command started (attach_common() returned it, and sd-bus sends it):
 * recorded here; starts and later failures are recorded where they are answered. */
static int audited(Manager *m, sd_bus_message *message, sd_bus_error *error, int r) {
        if (r < 0)
                audit_call_result(m, message, error, r);
        return r;
}

int method_attach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        uid_t uid;
        int r;

        /* The fds are here already (the bus policy lets only root send any): refusing the
         * others by name tells a caller on a bus without that rule what to call instead. */
        r = bus_message_caller_uid(userdata, message, &uid, error);
        if (r < 0)
                return r;
        if (uid != 0)
                return audited(userdata, message, error,
                               bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                              "Attach() takes the command's fds from its caller, which only root may "
                                              "send; call OpenAttach(), which returns them."));
        return audited(userdata, message, error, attach_common(message, userdata, false, error));
}

int method_open_attach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return audited(userdata, message, error, attach_common(message, userdata, true, error));
}
