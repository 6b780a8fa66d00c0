/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/socket.h>

#include "manager.h"

/* A login's OpenSession, answered on the private socket without sd-bus, where it can be.
 *
 * pam_nsmanager writes the authentication and its OpenSession in one write
 * (src/pam/direct-call.c). Most logins are of a user whose namespace is up; for those the
 * answer is the namespace's object path and fd, and nothing else happens but recording the
 * session. Setting up an sd-bus server connection for that one call (some twenty system
 * calls, the daemon's objects registered on it, then all of it torn down) was most of what
 * the daemon did for a login, and the login waited for it. Here the waiting bytes are looked
 * at (MSG_PEEK) and, if they are exactly that authentication and that call and the answer is
 * a success, the call is taken from the socket and answered in one write; the connection
 * then goes straight to kept-connection.h.
 *
 * Everything else goes to sd-bus untouched, the bytes still in the socket: another client, a
 * client that waits for the authentication's answer, another method, a first login (the
 * namespace to build), an invalid session id or user, anything more behind the call, and any
 * failure here. So every refusal and error of OpenSession has one source, the method in
 * manager-dbus.c; this is only its common success, with the same checks: a root peer
 * (private-bus.c, at accept()), a valid session id, a ready namespace. */

/* On a private connection from 'peer' (root), just accepted: 1 if its OpenSession was
 * answered here ('fd' taken), -EAGAIN if nothing has come yet, 0 if it is for sd-bus. */
int pipelined_open(Manager *m, int fd, const struct ucred *peer);
