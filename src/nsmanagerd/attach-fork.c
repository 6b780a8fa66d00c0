/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Attach() where systemd is not PID 1: the daemon forks the command itself.
 *
 * setns() into a mount namespace needs CAP_SYS_ADMIN, so the child enters the namespace while
 * still root, then drops to the caller's ids for good and execs. The uid is the one the bus
 * authenticated; gid and supplementary groups are that uid's in NSS (AttachRequest), never
 * read from /proc. The command is our child: sd-event tells us how it ended.
 *
 * What this path cannot give, unlike attach-unit.c: the command stays in the daemon's cgroup
 * with the daemon's resource limits (the soft fd limit is lowered, see below), no loginuid,
 * no PAM session, and only the forked process itself counts towards AttachTasksMax=.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach-fork.h"
#include "log.h"

/* Exit status of the child when the command could not be started, as a shell reports a
 * command it cannot run. */
#define EXIT_ATTACH_FAILED 127

_noreturn_ static void child_fail(const char *what, int error) {
        /* fd 2 is the caller's stderr once the fds are in place, the daemon's before. */
        dprintf(STDERR_FILENO, "nsmanagerd: %s: %s\n", what, strerror(error));
        _exit(EXIT_ATTACH_FAILED);
}

/* Undo what the daemon set up for itself: signal dispositions and the blocked mask survive
 * exec. Then a session of our own: the command must not share the daemon's, and a terminal
 * can only become the controlling terminal of a session leader. */
static void child_reset_signals(void) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t ss;

        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &sa, NULL);
        sigemptyset(&ss);
        (void) sigprocmask(SIG_SETMASK, &ss, NULL);
        if (setsid() < 0)
                child_fail("Failed to start a new session", errno);
}

/* Nothing of the daemon's may leak into the user's process: not the bus, not other users'
 * namespace fds, not the status pipe (so the command cannot fake its status); nor its limits
 * (a soft fd limit above FD_SETSIZE breaks programs that use select(), systemd lowers it for
 * services too) or its OOM protection. */
static void child_drop_daemon_state(const int fds[3]) {
        struct rlimit rl;
        int fd;

        for (int i = 0; i < 3; i++)
                if (dup2(fds[i], i) < 0)
                        child_fail("Failed to set up stdin/stdout/stderr", errno);
        if (close_range(3, ~0U, 0) < 0)
                for (fd = 3; fd < 65536; fd++)
                        (void) close(fd);

        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur > FD_SETSIZE) {
                rl.rlim_cur = FD_SETSIZE;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void) write(fd, "0", 1);
                (void) close(fd);
        }
}

/* For good: groups first (needs root), then gid, then uid (real, effective and saved).
 * Changing the uid away from 0 clears every capability. */
static void child_drop_privileges(uid_t uid, const Credentials *c) {
        if (setgroups(c->n_groups, c->groups) < 0)
                child_fail("Failed to set the supplementary groups", errno);
        if (setresgid(c->gid, c->gid, c->gid) < 0)
                child_fail("Failed to change the group", errno);
        if (setresuid(uid, uid, uid) < 0)
                child_fail("Failed to change the user", errno);
        if (uid != 0 && (setuid(0) >= 0 || errno != EPERM))
                child_fail("Failed to drop privileges", EPERM);
}

/* Everything it needs was prepared before fork(): the child only makes system calls. 'fds'
 * are its stdin, stdout and stderr, above 2. */
_noreturn_ static void attach_child(const AttachRequest *c, const int fds[3]) {
        extern char **environ;

        child_reset_signals();

        /* While we are still root. The child does not share the daemon's fs_struct, so
         * CLONE_NEWNS is allowed here. */
        if (setns(c->mntns_fd, CLONE_NEWNS) < 0)
                child_fail("Failed to enter the mount namespace", errno);

        child_drop_daemon_state(fds);
        child_drop_privileges(c->uid, c->caller);

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

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        AttachProcess *p = userdata;

        attach_process_report(p, si->si_code == CLD_EXITED ? CLD_EXITED : CLD_KILLED, si->si_status);
        attach_process_free(p);
        return 0;
}

/* As a terminal hangup would: SIGHUP to the command's process group. It is our child and not
 * reaped yet, so its pid (the group's id, it called setsid()) cannot have been reused. */
static void hang_up(AttachProcess *p) {
        if (kill(-p->pid, SIGHUP) < 0 && errno == ESRCH)
                (void) kill(p->pid, SIGHUP);
}

int attach_fork_start(AttachProcess *p, const AttachRequest *req, NsmError *error) {
        _cleanup_close_ int fd_in = -EBADF, fd_out = -EBADF, fd_err = -EBADF;
        pid_t pid;
        int r;

        /* Our own copies above 2: fd 0-2 of the daemon may be closed, and dup2() onto them in
         * the child must not clobber one another. */
        fd_in = fcntl(req->fds[0], F_DUPFD_CLOEXEC, 3);
        fd_out = fcntl(req->fds[1], F_DUPFD_CLOEXEC, 3);
        fd_err = fcntl(req->fds[2], F_DUPFD_CLOEXEC, 3);
        if (fd_in < 0 || fd_out < 0 || fd_err < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to duplicate the passed fds: %m");

        pid = fork();
        if (pid < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to fork: %m");
        if (pid == 0)
                attach_child(req, (const int[3]) { fd_in, fd_out, fd_err });
        p->pid = pid;

        r = sd_event_add_child(p->manager->event, &p->child_source, pid, WEXITED, on_child_exit, p);
        if (r < 0) {
                /* We could never report on it: do not leave it running. Never wait for it
                 * either: it may already be in the user's command, waiting on a file system of
                 * theirs that does not answer. If it has not exited by now it stays a zombie
                 * until we exit (as child.c does). */
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, WNOHANG);
                return nsm_error_set_errnof(error, r, "Failed to watch the new process: %m");
        }

        r = attach_process_watch_client(p, hang_up);
        if (r < 0)
                log_warning_errno(r, "Cannot watch the client of PID %d, ignoring: %m", (int) pid);
        return 0;
}
