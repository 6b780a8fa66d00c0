/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macros.h"
#include "manager.h"
#include "mount-util.h"
#include "nsm-error.h"
#include "op-queue.h"
#include "user-util.h"

/* A user's namespace: its lifecycle (built, ready, removed), its sessions, what the daemon
 * remembers about it (binds made, the [View] policy's mounts, explicit propagation choices)
 * and its state file. No bus types here: namespace-dbus.c is the glue. */

typedef enum NamespaceState {
        NAMESPACE_ACTIVE,
        NAMESPACE_LINGERING,
        NAMESPACE_CLOSING,
        _NAMESPACE_STATE_MAX,
        _NAMESPACE_STATE_INVALID = -EINVAL,
} NamespaceState;

const char *namespace_state_to_string(NamespaceState s) _pure_;
NamespaceState namespace_state_from_string(const char *s) _pure_;

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
typedef struct Session {
        char *id;
        int fd;                  /* the pipe's read end, -EBADF where only the leader is left to watch */
        sd_event_source *fd_source;
        char *fdname;            /* its name in systemd's fd store, NULL if it is not there */
        pid_t leader;            /* the process that opened it (0 if unknown) */
        uint64_t leader_start;   /* its start time (clock ticks since boot): a pid alone may be reused */
        int pidfd;               /* watches the leader, where there is no fd */
        sd_event_source *pidfd_source;
        struct Session *next;
} Session;

/* A bind made by BindMount: its top mount (a policy mount copied inside it is not it). */
typedef struct BindRecord {
        MountId id;
        char *destination;
        bool for_user;           /* at the user's own request (manage-own): theirs to unmount */
} BindRecord;

/* An explicit propagation choice (EnslaveSubtree, SetPropagation): ShareSubtree("", P) leaves
 * such a path of that view as it is. A recursive choice covers everything below its path. */
typedef struct PropagationChoice {
        char *path;
        char *mode;              /* "slave" for EnslaveSubtree, else SetPropagation's mode */
        bool recursive;
} PropagationChoice;

/* 'error': why it could not be made ready (NULL: it is). */
typedef void (*NamespaceReadyFunc)(Namespace *ns, const NsmError *error, void *userdata);

typedef struct NamespaceWaiter {
        NamespaceReadyFunc callback;
        void *userdata;
        struct NamespaceWaiter *next;
} NamespaceWaiter;

struct Namespace {
        unsigned n_ref;
        Manager *manager;        /* NULL once dropped */

        char *name;
        uid_t uid;
        gid_t gid;
        char *home;
        char *shell;

        int mntns_fd;            /* an nsfs fd of the user's mount namespace */
        uint64_t mntns_inode;    /* as readlink /proc/PID/ns/mnt shows it: MountNamespaceId */
        uint64_t mntns_id;       /* NS_GET_MNTNS_ID (listmount, statmount), 0 if unknown */
        uint64_t timestamp;      /* creation, µs since the epoch */
        bool linger;
        bool ready;              /* built, policy applied, saved: usable */
        uint32_t n_mounts;       /* as last seen (NMounts where listmount is missing) */

        NamespaceWaiter *waiters;/* calls waiting for it to be ready */
        Session *sessions;
        sd_event_source *stop_timer; /* armed when the last session closed */
        OpQueue *ops;            /* its mount operations, one at a time */

        BindRecord *binds;
        size_t n_binds;
        MountId *policy_mounts;
        size_t n_policy_mounts;
        PropagationChoice *choices;
        size_t n_choices;
        char **pending_joins;    /* SharedSubtrees this view has yet to join (ShareSubtree("") timed out) */
};

/* SubtreeRoot/Name: the Root property */
char *namespace_root(Namespace *ns);
NamespaceState namespace_get_state(Namespace *ns);

/* Lifecycle. namespace_new() links an empty object into the Manager; namespace_build() makes
 * the view (asynchronously: calls waiting with namespace_wait_ready() learn how it went; a
 * failed one is dropped). namespace_drop() unlinks it from the Manager; the object lives on
 * while someone holds a reference. */
int namespace_new(Manager *m, const UserRecord *u, Namespace **ret);
Namespace *namespace_ref(Namespace *ns);
Namespace *namespace_unref(Namespace *ns);
static inline void namespace_unrefp(Namespace **ns) {
        namespace_unref(*ns);
}
/* What still waits for it gets 'why' (namespace_drop(): NoSuchNamespace, it was removed). */
void namespace_drop_with(Namespace *ns, const NsmError *why);
void namespace_drop(Namespace *ns);
int namespace_build(Namespace *ns, uint64_t deadline);
/* Calls 'callback' (from the event loop) once the namespace is ready, or failed. */
int namespace_wait_ready(Namespace *ns, NamespaceReadyFunc callback, void *userdata);
/* Unpins it and removes its state; 'done' (may be NULL) learns how it went. The namespace is
 * dropped at once: nothing new finds it. */
int namespace_remove(Namespace *ns, uint64_t deadline, void (*done)(const NsmError *error, void *userdata),
                     void *userdata);

/* State: StateDirectory/namespaces/NAME. */
int namespace_save(Namespace *ns);
int namespace_load(Manager *m, const char *name, int mntns_fd, Namespace **ret);
/* The records of a state file (what namespace_save() writes) into ns, which needs no Manager:
 * no syscalls, and the sessions it adds are not watched yet (namespace_load() does that). A
 * malformed record is dropped, the rest kept; -ENOMEM is the only error. State files outlive
 * daemon versions, so this is fuzzed (src/fuzz/fuzz-namespace-state.c). */
int namespace_parse_state(Namespace *ns, FILE *f, bool *ret_had_sessions);

/* Sessions: one ends when the login's last copy of *ret_fd (the write end, returned to the
 * caller) is closed, or with CloseSession, which ends every session of that id. */
int namespace_add_session(Namespace *ns, const char *id, pid_t leader, int *ret_fd);
int namespace_remove_session(Namespace *ns, const char *id, NsmError *error); /* NoSuchSession if unknown */
/* Whether 'id' is among the first 'before' sessions of the list with that id (the Sessions
 * property lists each id once). */
bool namespace_session_id_seen(Namespace *ns, const Session *before);
int namespace_set_linger(Namespace *ns, bool b);

/* Records. */
int namespace_record_bind(Namespace *ns, MountId id, const char *destination, bool for_user, MountId replaced);
void namespace_forget_mount(Namespace *ns, MountId id);
int namespace_record_choice(Namespace *ns, const char *path, const char *mode, bool recursive);
void namespace_clear_choice(Namespace *ns, const char *path);
bool namespace_has_choice(Namespace *ns, const char *path);
int namespace_set_pending_join(Namespace *ns, const char *path, bool pending);
