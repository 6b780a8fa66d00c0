/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* A login keeps the private connection its OpenSession went on, for its CloseSession
 * (pam_nsmanager, src/pam/direct-call.h), as pam_systemd keeps an fd to logind for the
 * session: the end of a session then costs the login one write, and no connection.
 *
 * Here such a connection is no D-Bus connection any more, only its socket, waiting for one
 * message: that session's CloseSession, read with bus-wire.h. An sd-bus server connection
 * with the daemon's objects costs some 9 kB; this costs an fd and a few dozen bytes, and
 * sd-event does not look at it until its peer writes. Anything but that one call closes it
 * (logged): the login process holds it as root, but what the login forks keeps it until its
 * exec(), a process that has become the user's by then. The connection is closed once the
 * call came, or when its peer hangs up (the session then ends with its leader, namespace.c).
 *
 * There is no reply: the login does not wait for one (it exits, often). A caller that asks
 * for one gets the connection closed instead.
 *
 * The rule holds from the moment OpenSession is answered: until the connection comes here,
 * private-bus.c holds its sd-bus connection to it too (kept_call_refusal()). */

#define KEPT_REFUSAL_FMT "The connection kept for session '%s' of '%s' sent %s, closing it."

/* NULL if the method call (its path, interface, member, and its two string arguments, NULL if
 * it has not those) is the CloseSession of session_user's session session_id; else what it
 * is instead, for the log (KEPT_REFUSAL_FMT). */
const char *kept_call_refusal(const char *session_user, const char *session_id, const char *path,
                              const char *interface, const char *member, const char *user, const char *id);

/* Takes 'fd', a private connection on which OpenSession(user, id) was just answered. Beyond
 * kept_connections_max_for_limit() it is closed at once (-EDQUOT), and the login calls
 * CloseSession on a new connection. */
int kept_connection_new(Manager *m, int fd, const char *user, const char *id);

/* The most connections kept at once: a quarter of RLIMIT_NOFILE, at most 65,536. */
unsigned kept_connections_max_for_limit(void);

void kept_connections_free(Manager *m);
