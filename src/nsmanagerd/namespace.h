/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macros.h"
#include "hashmap.h"
#include "id-map.h"
#include "manager-config.h"
#include "mount-util.h"
#include "nsm-error.h"
#include "op-queue.h"
#include "state-dir.h"
#include "user-util.h"

/* A user's namespace: the object and its lifecycle (built, ready, removed), and what the
 * daemon remembers about it (binds made, the [View] policy's mounts, explicit propagation
 * choices). Its sessions are namespace-session.h's, its state file namespace-state.h's. No bus
 * types here: namespace-dbus.c is the glue. */

typedef struct Namespace Namespace;
typedef struct NamespaceSet NamespaceSet;
typedef struct ChildSet ChildSet;
typedef struct LookupCache GroupLookups;

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

typedef struct Builder Builder;

/* Who hears of the namespaces' changes: the bus glue (its signals), mount events (their
 * watches). Any of them may be NULL. */
typedef struct NamespaceListener {
        void (*ready)(Namespace *ns, void *userdata);   /* built, usable (not one loaded at start) */
        void (*changed)(Namespace *ns, void *userdata); /* its sessions or its lingering */
        void (*removed)(Namespace *ns, void *userdata); /* being removed: it is dropped next */
        void (*gone)(Namespace *ns, void *userdata);    /* dropped: nothing finds it any more */
} NamespaceListener;

#define NAMESPACE_LISTENERS_MAX 2

/* Every namespace, by name and by uid, and what they share. The Manager's (Manager.namespaces),
 * which owns what it points to; a namespace knows its set, never the Manager. */
struct NamespaceSet {
        sd_event *event;
        const ManagerConfig *config;   /* the Manager's, as ReloadConfig left it */
        const StateDir *state;
        Builder *builder;              /* from manager_startup() until the builder goes */
        ChildSet *children;            /* the Manager's: the mount points of a view that ended go in one */
        GroupLookups *group_lookups;   /* the Manager's: a user's groups for her policy, off the loop */
        Hashmap *by_name;              /* user name → Namespace */
        IdMap *by_uid;                 /* uid_key(uid) → Namespace */
        struct {
                const NamespaceListener *l;
                void *userdata;
        } listeners[NAMESPACE_LISTENERS_MAX];
};

int namespace_set_init(NamespaceSet *s, sd_event *event, const ManagerConfig *config, const StateDir *state);
/* Drops every namespace (what waits for one learns that the daemon shuts down; the views stay
 * pinned), then the maps. */
void namespace_set_done(NamespaceSet *s);
/* -ENOSPC beyond NAMESPACE_LISTENERS_MAX. */
int namespace_set_listen(NamespaceSet *s, const NamespaceListener *l, void *userdata);
void namespace_set_unlisten(NamespaceSet *s, const NamespaceListener *l, void *userdata);
Namespace *namespace_set_get(NamespaceSet *s, const char *name);
Namespace *namespace_set_get_by_uid(NamespaceSet *s, uid_t uid);
/* Now + OperationTimeoutSec=: the deadline of an operation that starts now. */
uint64_t namespace_set_deadline(const NamespaceSet *s);

struct Namespace {
        unsigned n_ref;
        NamespaceSet *set;       /* NULL once dropped */

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
        char **mount_points;     /* where its [View] policy may have made mount points as the user:
                                  * what is still empty there goes when the view does (mount-points.h) */
};

/* SubtreeRoot/Name: the Root property */
char *namespace_root(Namespace *ns);
NamespaceState namespace_get_state(Namespace *ns);

/* Lifecycle. namespace_new() links an empty object into the set; namespace_build()
 * (namespace-build.h) makes the view. namespace_drop() unlinks it from the set; the object
 * lives on while someone holds a reference. */
int namespace_new(NamespaceSet *set, const UserRecord *u, Namespace **ret);
Namespace *namespace_ref(Namespace *ns);
Namespace *namespace_unref(Namespace *ns);
static inline void namespace_unrefp(Namespace **ns) {
        namespace_unref(*ns);
}
/* What still waits for it gets 'why' (namespace_drop(): NoSuchNamespace, it was removed). */
void namespace_drop_with(Namespace *ns, const NsmError *why);
void namespace_drop(Namespace *ns);
/* Calls 'callback' (from the event loop) once the namespace is ready, or failed. */
int namespace_wait_ready(Namespace *ns, NamespaceReadyFunc callback, void *userdata);
/* Unpins it and removes its state; 'done' (may be NULL) learns how it went. The namespace is
 * dropped at once: nothing new finds it. */
int namespace_remove(Namespace *ns, uint64_t deadline, void (*done)(const NsmError *error, void *userdata),
                     void *userdata);

/* The mount namespace 'fd' (taken) becomes ns's; its inode and id are read. */
int namespace_set_fd(Namespace *ns, int fd);

/* Between the namespace's files: what waits for ns learns how its build went; the listeners
 * learn that it is ready, or changed. */
void namespace_notify_waiters(Namespace *ns, const NsmError *error);
void namespace_notify_ready(Namespace *ns);
void namespace_notify_changed(Namespace *ns);
Session *session_new(const char *id);
Session *session_free(Session *s);

/* The ids of its mounts that the rules of own-view-rules.h look at: the binds (those made for
 * the user apart), the [View] policy's. Copies, the caller's to free. */
typedef struct NamespaceMountIds {
        MountId *own, *binds, *policy;
        size_t n_own, n_binds, n_policy;
} NamespaceMountIds;
int namespace_mount_ids(Namespace *ns, NamespaceMountIds *ret);

/* Records. */
int namespace_record_bind(Namespace *ns, MountId id, const char *destination, bool for_user, MountId replaced);
void namespace_forget_mount(Namespace *ns, MountId id);
int namespace_record_choice(Namespace *ns, const char *path, const char *mode, bool recursive);
void namespace_clear_choice(Namespace *ns, const char *path);
bool namespace_has_choice(Namespace *ns, const char *path);
int namespace_set_pending_join(Namespace *ns, const char *path, bool pending);
