/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-bus.h>

#include "macros.h"

/* The child's side of a killable child (the daemon's side, ChildSet, is child.h).
 * docs/processes.md: who runs what, and what each one's interface is. */

/* The one object a process of the daemon serves peer to peer on its socket: the daemon calls
 * its interface's methods there (docs/processes.md, per process). */
#define CHILD_OBJECT_PATH "/org/example/NSManager/Child"

/* A process's interface: its D-Bus name and its methods. Each method reads its arguments from
 * the call alone (never the daemon's memory as the fork left it), and answers with its reply,
 * or with the failure's name from the error table (bus_error_set_nsm()). */
typedef struct ChildInterface {
        const char *name;
        const sd_bus_vtable *vtable;
} ChildInterface;

/* A sentence for the daemon's log, sent ahead of the reply to 'call' as a Warning(s) signal
 * (escaped, text-escape.h): the daemon logs it with the child's description. */
int child_warn(sd_bus_message *call, const char *text);

/* Serves 'interface' on 'sock' as the server of a peer-to-peer sd-bus connection, its methods
 * called with 'userdata' (the process's own state, never the daemon's): until the first call
 * is answered ('once'), or until the daemon hangs up. 0, or a negative errno. */
int child_serve(int sock, const ChildInterface *interface, bool once, void *userdata);

/* A killable child, from the fork to its exit: child_setup(), then one call of 'interface'. */
_noreturn_ void child_main(int sock, const ChildInterface *interface, const int *keep, size_t n_keep);
