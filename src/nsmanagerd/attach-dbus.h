/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"

/* Manager.Attach(s user, as command, as environment, s working_directory,
 *                h stdin, h stdout, h stderr, h status) -> (u pid)
 *
 * Root's alone (AccessDenied for anybody else: see OpenAttach()). Starts 'command' inside the user's mount namespace as the caller: the uid the bus
 * authenticated, with that uid's primary group and supplementary groups from NSS (never from
 * /proc). 'environment' is its environment and the three fds its stdin/stdout/stderr; if stdin
 * is a terminal it becomes the controlling terminal of the command's new session. The command
 * runs in 'working_directory' if that exists in the view, else in the caller's home, else in /.
 * command[0] is an absolute path or a name looked up in the environment's $PATH inside the
 * view. Replies with the PID once the command runs; when it ends, one line "EXITED <code>\n" or
 * "KILLED <signo>\n" is written to 'status' (a pipe or socket), which is then closed. If the
 * client closes its end of 'status' first, the command gets SIGHUP, as on a terminal hangup.
 *
 * Where systemd is PID 1, systemd starts the command as a transient service in the caller's
 * user-UID.slice, through the PAM service nsmanager-attach (loginuid, limits, the namespace);
 * a command that cannot be started there is an error reply. Elsewhere the daemon forks it, and
 * a command that cannot be executed reports "EXITED 127". docs/attach.md has the details.
 *
 * polkit: org.example.NSManager.attach-own for the caller's own namespace, else
 * org.example.NSManager.attach; details: user. AttachTasksMax= caps the tasks of one uid's
 * attached commands (LimitExceeded). */
int method_attach(sd_bus_message *message, void *userdata, sd_bus_error *error);

/* Manager.OpenAttach(s user, as command, as environment, s working_directory, t flags)
 *     -> (u pid, h stdin, h stdout, h stderr, h status)
 *
 * Attach() for everyone, without fds from the caller: the daemon makes them and returns the
 * caller's ends. Flag 0x1: a pseudo terminal, owned by the caller, whose slave is the command's
 * stdin, stdout, stderr and controlling terminal; the three fds returned are then its master.
 * Without it, three pipes (the write end of the command's stdin, the read ends of its stdout and
 * stderr). 'status' is a stream socket that carries the status line and can only be read; when
 * the caller closes it, the command gets SIGHUP. The daemon closes its own copies right after
 * the reply, in a child of its own. Otherwise as Attach(). */
int method_open_attach(sd_bus_message *message, void *userdata, sd_bus_error *error);
