/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Attach(): start a process inside a user's view, as the caller.
 *
 * This is how a user without privileges enters a namespace (nsctl attach): setns() needs
 * CAP_SYS_ADMIN, so we fork, enter the namespace in the child while still root, then drop to
 * the caller's ids for good and exec. The ids come from the bus credentials of the call, never
 * from its arguments. The process is our child; we watch it with sd-event and report how it
 * ended on the status fd the caller gave us.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "log.h"
#include "macros.h"
#include "namespace.h"
#include "path-util.h"
#include "user-util.h"
#include "strv.h"

/* Exit status of the child when the command could not be started, as a shell reports a
 * command it cannot run. */
#define EXIT_ATTACH_FAILED 127

/* A caller may not keep more processes than this running through us: each costs the daemon an
 * fd and an event source. */
#define ATTACH_PROCESSES_PER_UID_MAX 128

typedef struct AttachProcess {
        Manager *manager;
        pid_t pid;
        uid_t uid;
        char *user;              /* the namespace's owner */
        int status_fd;
        sd_event_source *child_source;
        sd_event_source *hangup_source; /* the client closed its end of the status pipe */
        struct AttachProcess *next;
} AttachProcess;

/* The daemon has one Manager; the list is keyed by it anyway. */
static AttachProcess *attach_processes = NULL;

static AttachProcess *attach_process_free(AttachProcess *p) {
        if (!p)
                return NULL;

        for (AttachProcess **i = &attach_processes; *i; i = &(*i)->next)
                if (*i == p) {
                        *i = p->next;
                        break;
                }

        sd_event_source_disable_unref(p->child_source);
        sd_event_source_disable_unref(p->hangup_source);
        safe_close(p->status_fd);
        free(p->user);
        free(p);
        return NULL;
}

static unsigned attach_processes_of_uid(Manager *m, uid_t uid) {
        unsigned n = 0;

        for (AttachProcess *p = attach_processes; p; p = p->next)
                if (p->manager == m && p->uid == uid)
                        n++;
        return n;
}

void attach_done(Manager *m) {
        AttachProcess *p = attach_processes;

        while (p) {
                AttachProcess *next = p->next;

                if (p->manager == m)
                        attach_process_free(p);
                p = next;
        }
}

/* Writes the status line without blocking the daemon and without dying of SIGPIPE when the
 * caller has gone: SIGPIPE is blocked around the write and a signal we caused is dropped. */
static int write_status(int fd, const char *line) {
        struct timespec zero = {};
        sigset_t pipe_set, old, pending;
        bool was_pending;
        ssize_t k;
        int r = 0;

        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        if (sigprocmask(SIG_BLOCK, &pipe_set, &old) < 0)
                return -errno;
        was_pending = sigpending(&pending) >= 0 && sigismember(&pending, SIGPIPE);

        k = write(fd, line, strlen(line));
        if (k < 0) {
                r = -errno;
                if (r == -EPIPE && !was_pending)
                        (void) sigtimedwait(&pipe_set, NULL, &zero);
        } else if ((size_t) k != strlen(line))
                r = -EAGAIN;

        (void) sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}

static int on_attach_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        AttachProcess *p = userdata;
        char line[64];
        int r;

        if (si->si_code == CLD_EXITED)
                (void) snprintf(line, sizeof(line), "EXITED %d\n", si->si_status);
        else
                (void) snprintf(line, sizeof(line), "KILLED %d\n", si->si_status);

        log_debug("Attached process %d (uid %u) in the namespace of '%s' ended: %.*s", (int) p->pid,
                  (unsigned) p->uid, p->user, (int) strlen(line) - 1, line);

        r = write_status(p->status_fd, line);
        if (r < 0)
                log_debug_errno(r, "Failed to report the status of process %d, ignoring: %m", (int) p->pid);

        attach_process_free(p);
        return 0;
}

/* The client is gone (nsctl was killed, its terminal closed): as a terminal hangup would, send
 * SIGHUP to the command's process group. It is our child and not reaped yet, so its pid (the
 * group's id, it called setsid()) cannot have been reused. */
static int on_client_gone(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        AttachProcess *p = userdata;

        log_debug("The client of attached process %d went away, sending SIGHUP.", (int) p->pid);
        if (kill(-p->pid, SIGHUP) < 0 && errno == ESRCH)
                (void) kill(p->pid, SIGHUP);
        p->hangup_source = sd_event_source_disable_unref(p->hangup_source);
        return 0;
}

/* Everything the child needs, prepared before fork(): it only makes system calls. */
typedef struct AttachContext {
        int mntns_fd;
        int fds[3];
        uid_t uid;
        gid_t gid;
        const gid_t *gids;
        int n_gids;
        const char *working_directory; /* NULL or absolute */
        const char *home;              /* the caller's, NULL if unknown */
        char **command;
        char **environment;
} AttachContext;

static void child_fail(const char *what, int error) {
        /* fd 2 is the caller's stderr once the fds are in place, the daemon's before. */
        dprintf(STDERR_FILENO, "nsmanagerd: %s: %s\n", what, strerror(error));
        _exit(EXIT_ATTACH_FAILED);
}

_noreturn_ static void attach_child(const AttachContext *c) {
        extern char **environ;
        struct sigaction sa = { .sa_handler = SIG_DFL };
        struct rlimit rl;
        sigset_t ss;
        int fd;

        /* Undo what the daemon set up for itself: signal dispositions and the blocked mask
         * survive exec. */
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &sa, NULL);
        sigemptyset(&ss);
        (void) sigprocmask(SIG_SETMASK, &ss, NULL);

        /* Our own session: the command must not share the daemon's, and a terminal can only
         * become the controlling terminal of a session leader. */
        if (setsid() < 0)
                child_fail("Failed to start a new session", errno);

        /* While we are still root. The child does not share the daemon's fs_struct, so
         * CLONE_NEWNS is allowed here. */
        if (setns(c->mntns_fd, CLONE_NEWNS) < 0)
                child_fail("Failed to enter the mount namespace", errno);

        for (int i = 0; i < 3; i++)
                if (dup2(c->fds[i], i) < 0)
                        child_fail("Failed to set up stdin/stdout/stderr", errno);

        /* Nothing of the daemon's may leak into the user's process: not the bus, not other
         * users' namespace fds, not the status pipe (so the command cannot fake its status). */
        if (close_range(3, ~0U, 0) < 0)
                for (fd = 3; fd < 65536; fd++)
                        (void) close(fd);

        /* The daemon's own limits are not for the user's processes: a soft fd limit above
         * FD_SETSIZE breaks programs that use select() (systemd does the same for services). */
        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur > FD_SETSIZE) {
                rl.rlim_cur = FD_SETSIZE;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }

        /* Nor is the daemon's OOM protection. */
        fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void) write(fd, "0", 1);
                (void) close(fd);
        }

        /* Drop privileges for good: groups first (needs root), then gid, then uid (all three
         * of real, effective and saved). Changing the uid away from 0 clears every
         * capability. */
        if (setgroups((size_t) c->n_gids, c->gids) < 0)
                child_fail("Failed to set the supplementary groups", errno);
        if (setresgid(c->gid, c->gid, c->gid) < 0)
                child_fail("Failed to change the group", errno);
        if (setresuid(c->uid, c->uid, c->uid) < 0)
                child_fail("Failed to change the user", errno);
        if (c->uid != 0 && (setuid(0) >= 0 || errno != EPERM))
                child_fail("Failed to drop privileges", EPERM);

        /* A terminal as stdin becomes our controlling terminal; without stealing it from
         * another session (arg 0). Failure only costs job control. */
        if (isatty(STDIN_FILENO))
                (void) ioctl(STDIN_FILENO, TIOCSCTTY, 0);

        /* As the caller, so directories they may not enter stay closed to them. */
        if (!c->working_directory || chdir(c->working_directory) < 0)
                if (!c->home || chdir(c->home) < 0)
                        if (chdir("/") < 0)
                                child_fail("Failed to change to the root directory", errno);

        umask(0022);

        /* execvpe() looks $PATH up in environ: make it the command's environment. */
        environ = c->environment;
        execvpe(c->command[0], c->command, c->environment);

        dprintf(STDERR_FILENO, "nsmanagerd: Failed to execute '%s': %s\n", c->command[0], strerror(errno));
        _exit(EXIT_ATTACH_FAILED);
}

static bool environment_entry_is_valid(const char *e) {
        const char *eq = strchr(e, '=');

        return eq && eq != e;
}

/* The caller's stdin/stdout/stderr can be anything it could open; the status fd must be
 * something we can write a line to: a pipe or a socket, open for writing. */
static int check_fds(const int fds[4], sd_bus_error *error) {
        static const char *const names[] = { "stdin", "stdout", "stderr", "status" };
        struct stat st;
        int flags;

        for (int i = 0; i < 4; i++)
                if (fstat(fds[i], &st) < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "The %s fd is not usable: %s",
                                                 names[i], strerror(errno));

        if (!S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "The status fd must be the write end of a pipe or a socket.");
        flags = fcntl(fds[3], F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "The status fd must be open for writing (the write end of a pipe).");
        return 0;
}

int method_attach(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL, *bus_creds = NULL;
        _cleanup_strv_free_ char **command = NULL, **environment = NULL;
        _cleanup_close_ int fd_in = -EBADF, fd_out = -EBADF, fd_err = -EBADF, fd_status = -EBADF;
        _cleanup_(user_record_done) UserRecord caller = {};
        Manager *m = userdata;
        AttachProcess *p;
        const char *user, *working_directory;
        const char *details[] = { "user", NULL, NULL };
        const gid_t *gids = NULL;
        int fds[4], n_gids, r;
        uid_t uid, bus_uid;
        gid_t gid;
        Namespace *ns;
        pid_t pid;

        /* Read */
        r = sd_bus_message_read(message, "s", &user);
        if (r < 0)
                return r;
        r = sd_bus_message_read_strv(message, &command);
        if (r < 0)
                return r;
        r = sd_bus_message_read_strv(message, &environment);
        if (r < 0)
                return r;
        r = sd_bus_message_read(message, "shhhh", &working_directory, &fds[0], &fds[1], &fds[2], &fds[3]);
        if (r < 0)
                return r;

        /* Validate */
        if (!command || !command[0] || !command[0][0])
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "No command given.");
        if (strchr(command[0], '/') && command[0][0] != '/')
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Command '%s' must be an absolute path or a name looked up in $PATH.",
                                         command[0]);
        for (char **e = environment; e && *e; e++)
                if (!environment_entry_is_valid(*e))
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Environment entry '%s' is not of the form KEY=VALUE.", *e);
        if (working_directory[0] && working_directory[0] != '/')
                return sd_bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                         "Working directory '%s' is not an absolute path.", working_directory);
        r = check_fds(fds, error);
        if (r < 0)
                return r;

        ns = manager_get_namespace(m, user);
        if (!ns)
                return sd_bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "User '%s' has no namespace.", user);

        /* Who is calling: the uid the bus authenticated; gid and groups from /proc of the
         * sender (the bus driver does not tell them), checked against that uid. */
        r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID, &bus_creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(bus_creds, &bus_uid);
        if (r >= 0)
                r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID | SD_BUS_CREDS_EGID |
                                              SD_BUS_CREDS_SUPPLEMENTARY_GIDS | SD_BUS_CREDS_AUGMENT, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        if (r >= 0)
                r = sd_bus_creds_get_egid(creds, &gid);
        if (r >= 0)
                r = n_gids = sd_bus_creds_get_supplementary_gids(creds, &gids);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Cannot determine the caller's user and groups: %s", strerror(-r));
        if (uid != bus_uid)
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED,
                                        "The caller's credentials changed during the call.");

        /* Authorize */
        details[1] = user;
        r = bus_verify_polkit_async(message,
                                    uid == ns->uid ? "org.example.NSManager.attach-own" : "org.example.NSManager.attach",
                                    details, &m->polkit_registry, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1; /* polkit is asking; we are called again */

        if (attach_processes_of_uid(m, uid) >= ATTACH_PROCESSES_PER_UID_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Too many processes attached by uid %u are still running.", (unsigned) uid);

        /* Act. The fds belong to the message; take our own copies above 2 (fd 0-2 of the
         * daemon may be closed, and dup2() onto them in the child must not clobber one
         * another). */
        fd_in = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
        fd_out = fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
        fd_err = fcntl(fds[2], F_DUPFD_CLOEXEC, 3);
        fd_status = fcntl(fds[3], F_DUPFD_CLOEXEC, 3);
        if (fd_in < 0 || fd_out < 0 || fd_err < 0 || fd_status < 0)
                return sd_bus_error_set_errnof(error, errno, "Failed to duplicate the passed fds: %m");
        /* Never block the event loop on a full status pipe. */
        r = fcntl(fd_status, F_GETFL);
        if (r < 0 || fcntl(fd_status, F_SETFL, r | O_NONBLOCK) < 0)
                return sd_bus_error_set_errnof(error, errno, "Failed to set up the status fd: %m");

        /* The caller's home, for when the working directory does not exist in the view. */
        r = user_record_by_uid(uid, &caller);
        if (r < 0)
                log_debug_errno(r, "Cannot look up uid %u, using / as its home: %m", (unsigned) uid);

        p = calloc(1, sizeof(AttachProcess));
        if (!p)
                return -ENOMEM;
        *p = (AttachProcess) {
                .manager = m,
                .uid = uid,
                .user = strdup(ns->name),
                .status_fd = -EBADF,
        };
        if (!p->user) {
                free(p);
                return -ENOMEM;
        }

        pid = fork();
        if (pid < 0) {
                r = -errno;
                attach_process_free(p);
                return sd_bus_error_set_errnof(error, -r, "Failed to fork: %m");
        }
        if (pid == 0) {
                AttachContext c = {
                        .mntns_fd = ns->mntns_fd,
                        .fds = { fd_in, fd_out, fd_err },
                        .uid = uid,
                        .gid = gid,
                        .gids = gids,
                        .n_gids = n_gids,
                        .working_directory = working_directory[0] ? working_directory : NULL,
                        .home = caller.home,
                        .command = command,
                        .environment = environment,
                };
                attach_child(&c);
        }

        p->pid = pid;
        p->status_fd = TAKE_FD(fd_status);
        p->next = attach_processes;
        attach_processes = p;

        r = sd_event_add_child(m->event, &p->child_source, pid, WEXITED, on_attach_exit, p);
        if (r < 0) {
                /* We could never report on it: do not leave it running. */
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                attach_process_free(p);
                return sd_bus_error_set_errnof(error, -r, "Failed to watch the new process: %m");
        }

        /* EPOLLERR on a pipe's write end (EPOLLHUP on a socket): the reader has gone. */
        r = sd_event_add_io(m->event, &p->hangup_source, p->status_fd, EPOLLERR | EPOLLHUP, on_client_gone, p);
        if (r < 0)
                log_warning_errno(r, "Cannot watch the client of process %d, ignoring: %m", (int) pid);

        log_info("Started '%s' as uid %u in the namespace of '%s' (PID %d).", command[0], (unsigned) uid,
                 ns->name, (int) pid);

        /* Reply */
        return sd_bus_reply_method_return(message, "u", (uint32_t) pid);
}
