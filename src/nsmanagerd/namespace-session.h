/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "namespace.h"
#include "nsm-error.h"

/* A session id is one word of the state file: 1-255 printable ASCII bytes, no ':'. The bus
 * refuses any other (OpenSession), and so does the state file's reader. */
#define SESSION_ID_MAX 255
bool valid_session_id(const char *id);

/* One OpenSession. A session lasts while the login holds any copy of the write end of a pipe
 * the daemon made (logind's pattern): the daemon keeps the read end, and the kernel says when
 * the last writer is gone (EPOLLHUP). A crashed login, or a forked child that keeps the fd
 * (sshd's internal-sftp), need nothing special. Several OpenSessions may share an id (su -l
 * inside an ssh session is in that session too): the id lasts until the last of them ends.
 *
 * Across a restart the read end stays with systemd (fd-store.h) where systemd runs us. Where
 * it does not, or systemd dropped it (a stop), the leader's pid and start time stand in: the
 * session then ends with the process that opened it. */
struct Session {
        char *id;
        int fd;                  /* the pipe's read end, -EBADF where only the leader is left to watch */
        sd_event_source *fd_source;
        char *fdname;            /* its name in systemd's fd store, NULL if it is not there */
        pid_t leader;            /* the process that opened it (0 if unknown) */
        uint64_t leader_start;   /* its start time (clock ticks since boot): a pid alone may be reused */
        int pidfd;               /* watches the leader, where there is no fd */
        sd_event_source *pidfd_source;
        struct Session *next;
};

/* Sessions: one ends when the login's last copy of *ret_fd (the write end, returned to the
 * caller) is closed, or with CloseSession, which ends every session of that id. */
int namespace_add_session(Namespace *ns, const char *id, pid_t leader, int *ret_fd);
int namespace_remove_session(Namespace *ns, const char *id, NsmError *error); /* NoSuchSession if unknown */
/* Whether 'id' is among the first 'before' sessions of the list with that id (the Sessions
 * property lists each id once). */
bool namespace_session_id_seen(Namespace *ns, const Session *before);
int namespace_set_linger(Namespace *ns, bool b);

/* Between the namespace's files. */
Session *session_new(const char *id);
Session *session_free(Session *s);
/* Every session of ns ends, unwatched and unsaved (the namespace is freed or dropped). */
void namespace_free_sessions(Namespace *ns);
/* Each session of a loaded state file watched again: by its fd, where systemd kept it for us,
 * else by its leader; one whose leader is gone ended while the daemon was not running. */
void namespace_watch_loaded_sessions(Namespace *ns);
/* After the last session: StopDelaySec=, then gone, unless lingering or reopened meanwhile. */
void namespace_maybe_schedule_stop(Namespace *ns);
