/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsctl attach USER [-- COMMAND [ARG...]]
 *
 * As root we enter the namespace ourselves: OpenMountNamespace() hands us an nsfs fd, we
 * setns() into it (nsctl is single-threaded, so CLONE_NEWNS is allowed) and exec COMMAND,
 * like nsenter(1).
 *
 * Everyone else asks nsmanagerd to start COMMAND inside the namespace with their own ids:
 * Attach(user, command, environment, working_directory, stdin, stdout, stderr, status). The
 * daemon writes "EXITED <code>" or "KILLED <signo>" into 'status' (the write end of our pipe)
 * when the command ends. When our stdin is a terminal we give the command a pseudo terminal
 * of its own (it becomes the controlling terminal of the command's session, so ^C and ^Z
 * work through the pty's line discipline), put our terminal into raw mode and relay bytes
 * both ways; otherwise the command gets our own fds 0/1/2.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "bus-errors.h"
#include "nsctl.h"

extern char **environ;

#define EXIT_EXEC_FAILED 127

/* ---- as root: like nsenter ---- */

static int attach_as_root(sd_bus *bus, const char *user, char **command) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *cwd = NULL, *home = NULL, *shell = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct passwd *pw;
        int r, nsfd;

        r = manager_call(bus, "OpenMountNamespace", 0, &error, &reply, "s", user);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to open the namespace of '%s'", user);

        r = sd_bus_message_read(reply, "h", &nsfd);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of OpenMountNamespace: %m");

        fd = fcntl(nsfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to duplicate the namespace fd: %m");

        /* Resolve the user before entering: NSS may need the host's sockets. */
        pw = getpwnam(user);
        if (pw) {
                home = strdup(pw->pw_dir ?: "/");
                shell = strdup(pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh");
        } else {
                home = strdup("/");
                shell = strdup("/bin/sh");
        }
        if (!home || !shell)
                return log_oom();

        cwd = getcwd(NULL, 0); /* may fail (deleted cwd): then home */

        /* The bus connection is O_CLOEXEC: exec closes it. */
        reply = sd_bus_message_unref(reply);

        if (setns(fd, CLONE_NEWNS) < 0)
                return log_error_errno(-errno, "Failed to enter the mount namespace of '%s': %m", user);

        /* setns() put us at the namespace's root: go back to where we were if the view has
         * it, else to the user's home, else stay at /. */
        if (!cwd || chdir(cwd) < 0)
                if (chdir(home) < 0)
                        (void) chdir("/");

        if (command && command[0]) {
                execvp(command[0], command);
                (void) log_error_errno(-errno, "Failed to execute '%s': %m", command[0]);
        } else {
                execl(shell, shell, (char *) NULL);
                (void) log_error_errno(-errno, "Failed to execute '%s': %m", shell);
        }
        _exit(EXIT_EXEC_FAILED);
}

/* ---- as a user: through the daemon ---- */

typedef struct Attach {
        pid_t pid;
        int status_fd;    /* read end of the status pipe */
        int signal_fd;
        int master;       /* pty master, or -EBADF */
        bool raw;         /* our terminal is in raw mode */
        struct termios saved_termios;
        char status_buf[64];
        size_t status_len;
        bool status_done; /* a line, or EOF */
        int exit_status;  /* from the line; -1 = unknown */
} Attach;

static void attach_restore_terminal(Attach *a) {
        if (!a->raw)
                return;
        (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &a->saved_termios);
        a->raw = false;
}

static int parse_status_line(const char *line, int *ret) {
        unsigned long v;
        char *end;

        if (strncmp(line, "EXITED ", 7) == 0) {
                errno = 0;
                v = strtoul(line + 7, &end, 10);
                if (errno == 0 && end != line + 7 && *end == '\0' && v <= 255) {
                        *ret = (int) v;
                        return 0;
                }
        } else if (strncmp(line, "KILLED ", 7) == 0) {
                errno = 0;
                v = strtoul(line + 7, &end, 10);
                if (errno == 0 && end != line + 7 && *end == '\0' && v > 0 && v < 128) {
                        *ret = 128 + (int) v;
                        return 0;
                }
        }
        return -EBADMSG;
}

/* Reads what is there on the status pipe. Returns 1 when done (a line, or EOF). */
static int attach_read_status(Attach *a) {
        for (;;) {
                ssize_t k;
                char *nl;

                if (a->status_len >= sizeof(a->status_buf) - 1) {
                        a->status_done = true;
                        return 1;
                }
                k = read(a->status_fd, a->status_buf + a->status_len, sizeof(a->status_buf) - 1 - a->status_len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        a->status_done = true;
                        return 1;
                }
                if (k == 0) {
                        a->status_done = true;
                        return 1;
                }
                a->status_len += (size_t) k;
                a->status_buf[a->status_len] = '\0';
                nl = strchr(a->status_buf, '\n');
                if (nl) {
                        *nl = '\0';
                        if (parse_status_line(a->status_buf, &a->exit_status) < 0)
                                a->exit_status = -1;
                        a->status_done = true;
                        return 1;
                }
        }
}

static int loop_write(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                                (void) poll(&pfd, 1, -1);
                                continue;
                        }
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

static void attach_forward_winsize(Attach *a) {
        struct winsize ws;

        if (a->master >= 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) >= 0)
                (void) ioctl(a->master, TIOCSWINSZ, &ws);
}

static uint64_t now_msec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* How long to keep relaying output once the command has ended while something else (a
 * background job) still holds the pty open. */
#define DRAIN_MSEC 500

/* The main loop. Returns the signal that made us stop (> 0), or 0. */
static int attach_run(Attach *a) {
        char inbuf[4096], outbuf[16384];
        size_t in_len = 0;
        bool stdin_open = a->master >= 0, master_open = a->master >= 0;
        uint64_t drain_until = 0;

        for (;;) {
                struct pollfd p[4];
                int n = 0, i_stdin = -1, i_master = -1, i_status = -1, i_signal, timeout = -1;

                if (a->status_done && (!master_open || (drain_until && now_msec() >= drain_until)))
                        return 0;
                /* Once the command has ended, relay what it wrote last; but if the daemon went
                 * away without telling us (EOF), keep going while the pty is in use. */
                if (a->status_done && a->exit_status >= 0 && master_open && drain_until == 0)
                        drain_until = now_msec() + DRAIN_MSEC;
                if (drain_until) {
                        uint64_t t = now_msec();
                        timeout = drain_until > t ? (int) (drain_until - t) : 0;
                }

                if (stdin_open && master_open && in_len < sizeof(inbuf) && !drain_until) {
                        i_stdin = n;
                        p[n++] = (struct pollfd) { .fd = STDIN_FILENO, .events = POLLIN };
                }
                if (master_open) {
                        i_master = n;
                        p[n++] = (struct pollfd) {
                                .fd = a->master,
                                .events = POLLIN | (in_len > 0 ? POLLOUT : 0),
                        };
                }
                if (!a->status_done) {
                        i_status = n;
                        p[n++] = (struct pollfd) { .fd = a->status_fd, .events = POLLIN };
                }
                i_signal = n;
                p[n++] = (struct pollfd) { .fd = a->signal_fd, .events = POLLIN };

                if (poll(p, (nfds_t) n, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        (void) log_error_errno(-errno, "poll() failed: %m");
                        a->status_done = true;
                        a->exit_status = -1;
                        return 0;
                }

                if (p[i_signal].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        if (read(a->signal_fd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                if (si.ssi_signo == SIGWINCH)
                                        attach_forward_winsize(a);
                                else if (a->master >= 0)
                                        /* Our terminal or our caller wants us gone: the pty
                                         * hangs up when we close the master, and the command
                                         * gets SIGHUP from the kernel. */
                                        return (int) si.ssi_signo;
                                else if (a->pid > 0 && !a->status_done)
                                        /* Without a pty the command is not in our
                                         * terminal's process group: pass ^C and friends on. */
                                        (void) kill(-a->pid, (int) si.ssi_signo);
                        }
                }

                if (i_status >= 0 && p[i_status].revents)
                        (void) attach_read_status(a);

                if (i_master >= 0 && (p[i_master].revents & (POLLIN | POLLHUP | POLLERR))) {
                        ssize_t k = read(a->master, outbuf, sizeof(outbuf));

                        if (k > 0) {
                                if (loop_write(STDOUT_FILENO, outbuf, (size_t) k) < 0) {
                                        /* our output went away: nothing left to show */
                                        master_open = false;
                                        stdin_open = false;
                                }
                        } else if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
                                /* EIO: every holder of the pty's other end has closed it */
                                master_open = false;
                        }
                }

                if (i_master >= 0 && master_open && in_len > 0 && (p[i_master].revents & POLLOUT)) {
                        ssize_t k = write(a->master, inbuf, in_len);

                        if (k > 0) {
                                memmove(inbuf, inbuf + k, in_len - (size_t) k);
                                in_len -= (size_t) k;
                        } else if (k < 0 && errno != EAGAIN && errno != EINTR)
                                master_open = false;
                }

                if (i_stdin >= 0 && (p[i_stdin].revents & (POLLIN | POLLHUP | POLLERR))) {
                        ssize_t k = read(STDIN_FILENO, inbuf + in_len, sizeof(inbuf) - in_len);

                        if (k > 0)
                                in_len += (size_t) k;
                        else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                                /* our terminal hung up */
                                return SIGHUP;
                }
        }
}

static int open_pty(int *ret_master, int *ret_slave) {
        _cleanup_close_ int master = -EBADF, slave = -EBADF;
        char name[PATH_MAX];
        struct termios t;
        struct winsize ws;
        int r;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                return log_error_errno(-errno, "Failed to allocate a pseudo terminal: %m");
        if (grantpt(master) < 0 || unlockpt(master) < 0)
                return log_error_errno(-errno, "Failed to unlock the pseudo terminal: %m");
        r = ptsname_r(master, name, sizeof(name));
        if (r != 0)
                return log_error_errno(-r, "Failed to get the name of the pseudo terminal: %m");

        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                return log_error_errno(-errno, "Failed to open %s: %m", name);

        /* Start with our terminal's settings and size; the shell inside changes them at will. */
        if (tcgetattr(STDIN_FILENO, &t) >= 0)
                (void) tcsetattr(slave, TCSANOW, &t);
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) >= 0)
                (void) ioctl(master, TIOCSWINSZ, &ws);

        r = fcntl(master, F_GETFL);
        if (r < 0 || fcntl(master, F_SETFL, r | O_NONBLOCK) < 0)
                return log_error_errno(-errno, "Failed to make the pty master non-blocking: %m");

        *ret_master = TAKE_FD(master);
        *ret_slave = TAKE_FD(slave);
        return 0;
}

/* The signals we handle, blocked from before the command exists (none may get lost) until we
 * return, and read from a signalfd meanwhile. */
typedef struct BlockedSignals {
        sigset_t old_mask;
        bool blocked;
} BlockedSignals;

static void blocked_signals_restore(BlockedSignals *b) {
        if (b->blocked)
                (void) sigprocmask(SIG_SETMASK, &b->old_mask, NULL);
}

static int block_signals(BlockedSignals *b, int *ret_fd) {
        static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH };
        sigset_t mask;
        int fd;

        sigemptyset(&mask);
        for (size_t i = 0; i < ELEMENTSOF(signals); i++)
                sigaddset(&mask, signals[i]);
        if (sigprocmask(SIG_BLOCK, &mask, &b->old_mask) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m");
        b->blocked = true;
        fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to create a signalfd: %m");
        *ret_fd = fd;
        return 0;
}

/* Attach(): the command started in USER's view with the given stdio and status pipe; its pid. */
static int call_attach(sd_bus *bus, const char *user, char **command, const int fds[4], pid_t *ret_pid) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        /* Our working directory, if the view has it; else the daemon picks our home. */
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        uint32_t pid;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "Attach");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", user);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, command);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, environ);
        if (r >= 0)
                r = sd_bus_message_append(m, "shhhh", cwd ?: "", fds[0], fds[1], fds[2], fds[3]);
        if (r >= 0)
                r = sd_bus_message_set_allow_interactive_authorization(m, arg_ask_password);
        if (r < 0)
                return log_error_errno(r, "Failed to build the Attach call: %m");

        /* The call itself is short (the daemon replies as soon as the command runs), but an
         * interactive polkit authorization may take its time. */
        polkit_agent_open_if_enabled();
        r = sd_bus_call(bus, m, UINT64_MAX, &error, &reply);
        polkit_agent_close();
        if (r < 0)
                return bus_log_error(&error, r, "Failed to attach to the namespace of '%s'", user);
        r = sd_bus_message_read(reply, "u", &pid);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of Attach: %m");
        *ret_pid = (pid_t) pid;
        return 0;
}

/* Relays between our terminal and the command until it has ended: its exit status, 128 + the
 * signal that made us stop, or a negative errno (logged). */
static int relay(Attach *a, bool pty) {
        int sig;

        if (pty && tcgetattr(STDIN_FILENO, &a->saved_termios) >= 0) {
                struct termios raw = a->saved_termios;

                cfmakeraw(&raw);
                if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) >= 0)
                        a->raw = true;
        }
        /* Writing to a closed stdout must not kill us in raw mode. */
        (void) signal(SIGPIPE, SIG_IGN);

        sig = attach_run(a);
        /* The pty hangs up: the command gets SIGHUP from the kernel if it is still there. */
        a->master = safe_close(a->master);
        attach_restore_terminal(a);
        if (sig > 0)
                return 128 + sig;

        if (a->exit_status < 0) {
                /* The daemon went away before the command ended, or wrote nonsense. Without
                 * a pty, at least wait for the command to finish. */
                _cleanup_close_ int pidfd = (int) pidfd_open(a->pid, 0);

                if (pidfd >= 0 && !pty) {
                        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
                        while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
                                ;
                }
                return log_error_errno(-EPROTO, "The exit status of the command is unknown (nsmanagerd went away?).");
        }
        return a->exit_status;
}

static void attach_done(Attach *a) {
        attach_restore_terminal(a);
        a->master = safe_close(a->master);
        a->status_fd = safe_close(a->status_fd);
        a->signal_fd = safe_close(a->signal_fd);
}

static int attach_via_daemon(sd_bus *bus, const char *user, char **command) {
        /* Declared first, restored last: the terminal is back before the signals are. */
        _cleanup_(blocked_signals_restore) BlockedSignals blocked = {};
        _cleanup_(attach_done) Attach a = {
                .status_fd = -EBADF,
                .signal_fd = -EBADF,
                .master = -EBADF,
                .exit_status = -1,
        };
        _cleanup_close_ int slave = -EBADF, status_write = -EBADF;
        _cleanup_free_ char *shell = NULL;
        char *default_command[2] = {};
        bool pty = isatty(STDIN_FILENO);
        int pipefd[2], fds[4], r;

        if (!command || !command[0]) {
                struct passwd *pw = getpwnam(user);

                shell = strdup(pw && pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh");
                if (!shell)
                        return log_oom();
                default_command[0] = shell;
                command = default_command;
        }

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return log_error_errno(-errno, "Failed to create the status pipe: %m");
        a.status_fd = pipefd[0];
        status_write = pipefd[1];
        if (pty) {
                r = open_pty(&a.master, &slave);
                if (r < 0)
                        return r;
        }
        fds[0] = pty ? slave : STDIN_FILENO;
        fds[1] = pty ? slave : STDOUT_FILENO;
        fds[2] = pty ? slave : STDERR_FILENO;
        fds[3] = status_write;

        r = block_signals(&blocked, &a.signal_fd);
        if (r < 0)
                return r;
        r = call_attach(bus, user, command, fds, &a.pid);
        if (r < 0)
                return r;

        /* Only the command may hold the pty's other end and the status pipe's write end now:
         * that is how we learn it has gone. */
        slave = safe_close(slave);
        status_write = safe_close(status_write);
        if (fcntl(a.status_fd, F_SETFL, O_NONBLOCK) < 0)
                return log_error_errno(-errno, "Failed to make the status pipe non-blocking: %m");

        return relay(&a, pty);
}

int verb_attach(sd_bus *bus, int argc, char **argv) {
        const char *user = argv[1];
        char **command = argc > 2 ? argv + 2 : NULL;

        if (geteuid() == 0)
                return attach_as_root(bus, user, command);

        return attach_via_daemon(bus, user, command);
}
