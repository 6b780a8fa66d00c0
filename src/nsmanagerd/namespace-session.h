/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "fd-store.h"
#include "namespace.h"
#include "nsm-error.h"

/* Sessions: one ends when the login's last copy of *ret_fd (the write end, returned to the
 * caller) is closed, or with CloseSession, which ends every session of that id. */
int namespace_add_session(Namespace *ns, const char *id, pid_t leader, int *ret_fd);
int namespace_remove_session(Namespace *ns, const char *id, NsmError *error); /* NoSuchSession if unknown */
/* Whether 'id' is among the first 'before' sessions of the list with that id (the Sessions
 * property lists each id once). */
bool namespace_session_id_seen(Namespace *ns, const Session *before);
int namespace_set_linger(Namespace *ns, bool b);

/* Between the namespace's files. Each session of a loaded state file watched again: by its fd, where systemd kept it for us,
 * else by its leader; one whose leader is gone ended while the daemon was not running. */
void namespace_watch_loaded_sessions(Namespace *ns, StoredFds *stored_fds);
/* After the last session: StopDelaySec=, then gone, unless lingering or reopened meanwhile. */
void namespace_maybe_schedule_stop(Namespace *ns);
