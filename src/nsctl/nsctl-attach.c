/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsctl attach USER [-- COMMAND [ARG...]]
 *
 * As root we enter the namespace ourselves: OpenMountNamespace() hands us an nsfs fd, we
 * setns() into it (nsctl is single-threaded, so CLONE_NEWNS is allowed) and exec COMMAND,
 * like nsenter(1).
 *
 * Everyone else asks nsmanagerd to start COMMAND inside the namespace with their own ids:
 * OpenAttach(user, command, environment, working_directory, flags) -> (pid, stdin, stdout,
 * stderr, status). We send no fd: the bus lets only root send them, since a daemon that closes
 * a user's fd of a file on her FUSE mount can wait forever. The daemon makes the command's
 * stdio and hands us the other ends, as machined's OpenMachinePTY does for `machinectl shell`,
 * and we relay. When our stdin is a terminal we ask for a pseudo terminal (flag 0x1; it becomes
 * the controlling terminal of the command's session, so ^C and ^Z work through the pty's line
 * discipline), give it our terminal's settings and size, put our terminal into raw mode and
 * relay bytes both ways; otherwise three pipes, relayed to and from our fds 0/1/2. The daemon
 * writes "EXITED <code>" or "KILLED <signo>" to the status socket when the command ends; when
 * we close it, the command gets SIGHUP.
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
        int status_fd;    /* our end of the status socket */
        int signal_fd;
        int master;       /* pty master, or -EBADF */
        int in_fd;        /* without a pty: the command's stdin (write end), -EBADF once closed */
        int out_fd;       /* ... its stdout and stderr (read ends) */
        int err_fd;
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

/* One signal from the signalfd, or 0 when there was none to read. */
static int attach_read_signal(Attach *a) {
        struct signalfd_siginfo si;

        if (read(a->signal_fd, &si, sizeof(si)) != (ssize_t) sizeof(si))
                return 0;
        return (int) si.ssi_signo;
}

/* To the command's process group, while it runs (after its status, the pid may be reused). */
static void attach_pass_signal(Attach *a, int sig) {
        if (a->pid > 0 && !a->status_done)
                (void) kill(-a->pid, sig);
}

/* Both loops end their poll set with the status pipe (until it has spoken) and the signalfd,
 * and poll. A failed poll() ends the session as a lost command: -1 and no status. */
static int attach_poll(Attach *a, struct pollfd *p, int n, int timeout, int *i_status, int *i_signal) {
        if (!a->status_done) {
                *i_status = n;
                p[n++] = (struct pollfd) { .fd = a->status_fd, .events = POLLIN };
        }
        *i_signal = n;
        p[n++] = (struct pollfd) { .fd = a->signal_fd, .events = POLLIN };

        if (poll(p, (nfds_t) n, timeout) < 0) {
                if (errno == EINTR)
                        return -EINTR;
                a->status_done = true;
                a->exit_status = -1;
                return log_error_errno(-errno, "poll() failed: %m");
        }
        return 0;
}

/* The main loop. Returns the signal that made us stop (> 0), or 0. */
static int attach_run(Attach *a) {
        char inbuf[4096], outbuf[16384];
        size_t in_len = 0;
        bool stdin_open = a->master >= 0, master_open = a->master >= 0;
        uint64_t drain_until = 0;

        for (;;) {
                struct pollfd p[4];
                int n = 0, i_stdin = -1, i_master = -1, i_status = -1, i_signal, timeout = -1, r;

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
                r = attach_poll(a, p, n, timeout, &i_status, &i_signal);
                if (r == -EINTR)
                        continue;
                if (r < 0)
                        return 0;

                if (p[i_signal].revents & POLLIN) {
                        int sig = attach_read_signal(a);

                        if (sig == SIGWINCH)
                                attach_forward_winsize(a);
                        else if (sig > 0 && a->master >= 0)
                                /* Our terminal or our caller wants us gone: the pty hangs up
                                 * when we close the master, and the command gets SIGHUP from
                                 * the kernel. */
                                return sig;
                        else if (sig > 0)
                                /* Without a pty the command is not in our terminal's process
                                 * group: pass ^C and friends on. */
                                attach_pass_signal(a, sig);
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

/* Without a pty: our stdin into the command's, its stdout and stderr out to ours, until the
 * command has ended and both are at their end (or nothing came for DRAIN_MSEC after the end:
 * something it left running holds them). Returns the signal that made us stop (> 0), or 0. */
static int attach_run_pipes(Attach *a) {
        char inbuf[16384], outbuf[16384];
        size_t in_len = 0;
        bool stdin_open = true;
        uint64_t drain_until = 0;

        for (;;) {
                struct pollfd p[6];
                int n = 0, i_stdin = -1, i_in = -1, i_out = -1, i_err = -1, i_status = -1, i_signal, timeout = -1, r;

                if (a->status_done && ((a->out_fd < 0 && a->err_fd < 0) ||
                                       (drain_until && now_msec() >= drain_until)))
                        return 0;
                if (a->status_done && drain_until == 0)
                        drain_until = now_msec() + DRAIN_MSEC;
                if (drain_until) {
                        uint64_t t = now_msec();
                        timeout = drain_until > t ? (int) (drain_until - t) : 0;
                }
                /* Our stdin is done once it ended and all of it went in: the command sees EOF. */
                if (!stdin_open && in_len == 0)
                        a->in_fd = safe_close(a->in_fd);

                if (stdin_open && a->in_fd >= 0 && in_len < sizeof(inbuf) && !a->status_done) {
                        i_stdin = n;
                        p[n++] = (struct pollfd) { .fd = STDIN_FILENO, .events = POLLIN };
                }
                if (a->in_fd >= 0 && in_len > 0) {
                        i_in = n;
                        p[n++] = (struct pollfd) { .fd = a->in_fd, .events = POLLOUT };
                }
                if (a->out_fd >= 0) {
                        i_out = n;
                        p[n++] = (struct pollfd) { .fd = a->out_fd, .events = POLLIN };
                }
                if (a->err_fd >= 0) {
                        i_err = n;
                        p[n++] = (struct pollfd) { .fd = a->err_fd, .events = POLLIN };
                }
                r = attach_poll(a, p, n, timeout, &i_status, &i_signal);
                if (r == -EINTR)
                        continue;
                if (r < 0)
                        return 0;

                if (p[i_signal].revents & POLLIN) {
                        int sig = attach_read_signal(a);

                        /* The command is not in our terminal's process group: pass ^C and
                         * friends on, as to a child of ours (it runs under our uid). */
                        if (sig > 0 && sig != SIGWINCH)
                                attach_pass_signal(a, sig);
                }

                if (i_status >= 0 && p[i_status].revents)
                        (void) attach_read_status(a);

                for (int i = 0; i < 2; i++) {
                        int idx = i == 0 ? i_out : i_err, *fd = i == 0 ? &a->out_fd : &a->err_fd;
                        ssize_t k;

                        if (idx < 0 || !(p[idx].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        k = read(*fd, outbuf, sizeof(outbuf));
                        if (k > 0) {
                                if (drain_until)
                                        drain_until = now_msec() + DRAIN_MSEC;
                                /* Where ours went away, the command's goes too: its next write
                                 * gets SIGPIPE, as if it had written to ours. */
                                if (loop_write(i == 0 ? STDOUT_FILENO : STDERR_FILENO, outbuf, (size_t) k) < 0)
                                        *fd = safe_close(*fd);
                        } else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                                *fd = safe_close(*fd);
                }

                if (i_in >= 0 && (p[i_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
                        ssize_t k = write(a->in_fd, inbuf, in_len);

                        if (k > 0) {
                                memmove(inbuf, inbuf + k, in_len - (size_t) k);
                                in_len -= (size_t) k;
                        } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
                                /* EPIPE: the command closed its stdin; what is left is not read */
                                a->in_fd = safe_close(a->in_fd);
                                stdin_open = false;
                                in_len = 0;
                        }
                }

                if (i_stdin >= 0 && (p[i_stdin].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
                        ssize_t k = (p[i_stdin].revents & POLLNVAL) ? 0 :
                                read(STDIN_FILENO, inbuf + in_len, sizeof(inbuf) - in_len);

                        if (k > 0)
                                in_len += (size_t) k;
                        else if (k == 0 || (errno != EAGAIN && errno != EINTR))
                                stdin_open = false;
                }
        }
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

#define OPEN_ATTACH_PTY UINT64_C(0x1)
#define OPEN_ATTACH_PTY_SIZE UINT64_C(0x2)

/* With a pty: our terminal's size goes with the call, for the daemon to set before the command
 * starts (set afterwards, the command could look first and see 0 by 0). */
static uint64_t open_attach_flags(bool pty) {
        struct winsize ws;

        if (!pty)
                return 0;
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
                return OPEN_ATTACH_PTY;
        return OPEN_ATTACH_PTY | OPEN_ATTACH_PTY_SIZE | (uint64_t) ws.ws_row << 32 | (uint64_t) ws.ws_col << 48;
}

/* Takes a copy of an fd of the reply, non-blocking: the reply owns its own. */
static int take_fd(sd_bus_message *reply, int *ret) {
        int fd, r;

        r = sd_bus_message_read(reply, "h", &fd);
        if (r < 0)
                return r;
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        *ret = fd;
        r = fcntl(fd, F_GETFL);
        if (r < 0 || fcntl(fd, F_SETFL, r | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

/* OpenAttach(): the command started in USER's view; its pid and our ends of its stdio and of
 * the status socket. */
static int call_open_attach(sd_bus *bus, const char *user, char **command, bool pty, Attach *a) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        /* Our working directory, if the view has it; else the daemon picks our home. */
        _cleanup_free_ char *cwd = getcwd(NULL, 0);
        int *fds[3] = { pty ? &a->master : &a->in_fd, &a->out_fd, &a->err_fd };
        uint32_t pid;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE,
                                           "OpenAttach");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", user);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, command);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, environ);
        if (r >= 0)
                r = sd_bus_message_append(m, "st", cwd ?: "", open_attach_flags(pty));
        if (r >= 0)
                r = sd_bus_message_set_allow_interactive_authorization(m, arg_bus.ask_password);
        if (r < 0)
                return log_error_errno(r, "Failed to build the OpenAttach call: %m");

        /* The call itself is short (the daemon replies as soon as the command runs), but an
         * interactive polkit authorization may take its time. */
        polkit_agent_open_if_enabled();
        r = sd_bus_call(bus, m, UINT64_MAX, &error, &reply);
        polkit_agent_close();
        if (r < 0)
                return bus_log_error(&error, r, "Failed to attach to the namespace of '%s'", user);
        r = sd_bus_message_read(reply, "u", &pid);
        /* With a pty the three are its master: one copy is ours. */
        for (int i = 0; r >= 0 && i < 3; i++)
                r = pty && i > 0 ? sd_bus_message_skip(reply, "h") : take_fd(reply, fds[i]);
        if (r >= 0)
                r = take_fd(reply, &a->status_fd);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of OpenAttach: %m");
        a->pid = (pid_t) pid;
        return 0;
}

/* Our terminal's settings for the pty (on its master: they are the slave's), and its size again,
 * should it have changed since the call (the command gets SIGWINCH). */
static void pty_take_terminal(Attach *a) {
        struct termios t;

        if (tcgetattr(STDIN_FILENO, &t) >= 0)
                (void) tcsetattr(a->master, TCSANOW, &t);
        attach_forward_winsize(a);
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

        sig = pty ? attach_run(a) : attach_run_pipes(a);
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
        a->in_fd = safe_close(a->in_fd);
        a->out_fd = safe_close(a->out_fd);
        a->err_fd = safe_close(a->err_fd);
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
                .in_fd = -EBADF,
                .out_fd = -EBADF,
                .err_fd = -EBADF,
                .exit_status = -1,
        };
        _cleanup_free_ char *shell = NULL;
        char *default_command[2] = {};
        bool pty = isatty(STDIN_FILENO);
        int r;

        if (!command || !command[0]) {
                struct passwd *pw = getpwnam(user);

                shell = strdup(pw && pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh");
                if (!shell)
                        return log_oom();
                default_command[0] = shell;
                command = default_command;
        }

        r = block_signals(&blocked, &a.signal_fd);
        if (r < 0)
                return r;
        r = call_open_attach(bus, user, command, pty, &a);
        if (r < 0)
                return r;
        if (pty)
                pty_take_terminal(&a);

        return relay(&a, pty);
}

int verb_attach(sd_bus *bus, int argc, char **argv) {
        const char *user = argv[1];
        char **command = argc > 2 ? argv + 2 : NULL;

        if (geteuid() == 0)
                return attach_as_root(bus, user, command);

        return attach_via_daemon(bus, user, command);
}
