/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "hashmap.h"

/* systemd's file descriptor store (sd_pid_notify_with_fds(), "FDSTORE=1"), where systemd runs
 * the daemon (NOTIFY_SOCKET set; the unit's FileDescriptorStoreMax=): it keeps the daemon's
 * end of each session's pipe across a restart, as it keeps logind's session FIFOs, and drops
 * one by itself once the login's last copy of the other end is closed (POLLHUP). Each fd has a
 * name of its own, recorded in the namespace's state file, by which a restart finds it again.
 * Without systemd all of this does nothing, and a restart falls back to the sessions' leaders
 * (namespace.c).
 *
 * systemd 252 empties the store when the unit is stopped (FileDescriptorStorePreserve= came
 * with 254): only a crash or kill -9 and the automatic restart that follows find the fds again. */

#define FD_STORE_NAME_MAX 64

/* Whether there is a service manager to hand fds to (NOTIFY_SOCKET). */
bool fd_store_available(void);
/* A fresh name: "session-" and 16 random hex digits. */
int fd_store_new_name(char ret[static FD_STORE_NAME_MAX]);
/* Hands a copy of 'fd' to systemd under 'name'; 0 where there is no service manager to
 * ask. Never fails a login: the caller logs and goes on. */
int fd_store_add(int fd, const char *name);
/* Asks systemd to close its copy (the session ended while the login still holds its end). */
void fd_store_remove(const char *name);

/* What the store gave this start (LISTEN_FDS, LISTEN_FDNAMES): name → fd. Empty where nothing
 * was passed. */
typedef struct StoredFds StoredFds;
int stored_fds_receive(StoredFds **ret);
/* The fd stored under 'name', now the caller's; -ENOENT if there is none. */
int stored_fds_take(StoredFds *s, const char *name);
/* Closes what nobody took; with 'unstore' also takes it out of the store: fds of sessions whose
 * records are gone. (Without, when start-up failed: the next start may still find them.) */
StoredFds *stored_fds_release(StoredFds *s, bool unstore);
