/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <systemd/sd-id128.h>

#include "hashmap.h"
#include "id-map.h"
#include "host.h"
#include "manager-config.h"
#include "namespace.h"
#include "nsm-error.h"
#include "state-dir.h"
#include "group-lookup.h"
#include "user-lookup.h"
#include "user-util.h"

typedef struct Builder Builder;
typedef struct BusCreds BusCreds;
typedef struct ChildSet ChildSet;
typedef struct Namespace Namespace;
typedef struct OpQueue OpQueue;
typedef struct PolkitRegistry PolkitRegistry;
typedef struct AttachProcess AttachProcess;
typedef struct AttachUnits AttachUnits;
typedef struct BusRequest BusRequest;
typedef struct PrivateServer PrivateServer;
typedef struct StoredFds StoredFds;
typedef struct ViewJobs ViewJobs;
typedef struct MountEvents MountEvents;
typedef struct MountEventsBus MountEventsBus;
typedef struct Ejector Ejector;

/* The daemon: the event loop, the bus, the configuration, and the namespaces it owns. */
typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        PolkitRegistry *polkit_registry;
        BusCreds *creds;         /* who sent a message, as the bus driver says (bus-creds.h) */

        const char *version;     /* the Version property */
        char *config_file;       /* --config=FILE, or NULL for the standard files */
        ManagerConfig config;    /* config.shared_subtrees: the configured ones that are shared, and those of: */
        char **shared_at_runtime; /* ShareSubtree("", P) since the first start (StateDirectory/shared-subtrees) */
        StateDir state;          /* computed once, at start: StateDirectory= changes only then */
        HostChanges startup_changes; /* what this start changed on the host, until it serves */
        bool registry_created;   /* this start created the registry (until it serves) */

        NamespaceSet namespaces; /* every namespace, and what they share (namespace.h) */

        Builder *builder;        /* builds views, pins them, reads mount tables (builder.c) */
        ChildSet *children;      /* killable mount-work children (child.c) */
        OpQueue *host_ops;       /* operations on the host, one at a time */
        ViewJobs *jobs;          /* runs view operations in killable children (view-job.c) */

        BusRequest *requests;    /* method calls in flight (bus-request.c) */
        void (*bus_done)(struct Manager *m); /* the bus glue's teardown, once the work in flight is answered */
        PrivateServer *private_server; /* the private socket for logins (private-bus.c), NULL if not listening */
        StoredFds *stored_fds;   /* what systemd's fd store gave this start, until the namespaces are restored */
        IdMap *rate_limits;      /* uid_key(caller uid) → RateLimit (manager.c) */
        UserLookups *user_lookups; /* NSS lookups of the names callers send, off the loop (user-lookup.h) */
        GroupLookups *group_lookups; /* NSS lookups of callers' groups, off the loop (group-lookup.h) */
        IdMap *audit_limits;     /* uid_key(caller uid) → its audit records' window (audit.c) */

        AttachProcess *attach_processes; /* commands Attach() started that have not ended (attach-process.c) */
        AttachUnits *attach_units;       /* systemd's: the two matches, calls in flight (attach-unit.c) */
        MountEvents *mount_events;       /* subscribers' signals, ReleaseWithHost= (mount-events.c) */
        const MountEventsBus *mount_events_bus; /* what the bus glue does for them (mount-events-dbus.c) */
        Ejector *ejector;                /* Eject(), ReleaseWithHost= (eject.c) */
} Manager;

/* The Manager of a namespace still in its set (NULL once dropped): for the bus glue, whose
 * Namespace objects' methods are given the Namespace. */
static inline Manager *manager_of_namespace(Namespace *ns) {
        return ns->set ? (Manager *) ((char *) ns->set - offsetof(Manager, namespaces)) : NULL;
}

int manager_new(Manager **ret);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        if (*m)
                manager_free(*m);
}

/* The configuration (nsmanagerd.conf and drop-ins), at start. */
int manager_load_config(Manager *m, NsmError *error);
/* Re-reads it for namespaces created from now on (ReloadConfig(), SIGHUP). On failure the old
 * one stays, and 'error' is Failed, saying FILE:LINE: what. */
int manager_reload(Manager *m, NsmError *error);
/* Start-up changes nothing on the host before the configuration is read and the bus connected
 * (manager_connect_bus()), and takes back what it changed if it fails before it serves:
 *
 * manager_startup(): the host's set-up (StateDirectory, SubtreeRoot, the shared subtrees), the
 * builder, what a previous instance left (namespaces restored), the login filter published;
 * undone on failure.
 * Then the bus glue takes the name and attaches the bus to the loop (manager_bus_serve(),
 * manager-dbus.h), and manager_serve(): '/' shared (the one change never undone: nothing can
 * fail after it), the mounts made recorded for --release. If either fails,
 * manager_undo_startup(). */
int manager_startup(Manager *m);
int manager_serve(Manager *m);
void manager_undo_startup(Manager *m);
/* On a clean exit: drops the registry when no namespace is left. */
void manager_shutdown(Manager *m);

/* Now + OperationTimeoutSec=: the deadline of an operation that arrives now. */
uint64_t manager_deadline(Manager *m);

Namespace *manager_get_namespace(Manager *m, const char *user);
Namespace *manager_get_namespace_by_uid(Manager *m, uid_t uid);
/* The canonical name of 'user' (any spelling, or a UID) where it is known without asking NSS:
 * a namespace's name or uid, a cached lookup (user-lookup.h). For the records of a call that
 * resolved it. NULL if it is not known. */
char *manager_canonical_user(Manager *m, const char *user);
/* Records session 'id' of ready namespace 'ns', opened by login process 'leader', logged; the
 * session lasts while the login holds a copy of *ret_fd (namespace.h). */
int manager_open_session(Manager *m, Namespace *ns, const char *id, pid_t leader, int *ret_fd);
/* Ends session 'id' of ready namespace 'ns' (CloseSession), logged: NoSuchSession if it has no
 * such session. */
int manager_close_session(Manager *m, Namespace *ns, const char *id, NsmError *error);

/* Whether the daemon serves a user NSS resolved (user-lookup.h): UserExcluded for root, below
 * MinUID=, or in ExcludeUsers= (by canonical name or uid). */
int manager_check_user(Manager *m, const UserRecord *u, NsmError *error);

/* The namespace of user 'u' (resolved: canonical name and uid), created if needed; 'callback'
 * learns when it is ready, or why it is not. Errors of the user check, and a failure to wait at
 * all, are returned at once in 'error' (and 'callback' is not called). */
int manager_acquire_namespace(Manager *m, const UserRecord *u, uint64_t deadline,
                              void (*callback)(Namespace *ns, const NsmError *error, void *userdata), void *userdata,
                              NsmError *error);

/* Unprivileged callers' calls that cost work, per uid: LimitExceeded once RateLimitBurst= calls
 * came within RateLimitIntervalSec=. Root is not limited. */
int manager_rate_limit(Manager *m, uid_t uid, NsmError *error);

/* ShareSubtree("", path): the host's path shared, then every existing view's path joins it
 * (except where the view's user made an explicit choice there), each view on its own queue.
 * 'done' gets the names of the views that timed out (retried at the next start): then 'error'
 * is TimedOut, naming them. */
typedef void (*ShareDoneFunc)(const NsmError *error, char **timed_out, void *userdata);
int manager_share_subtree(Manager *m, const char *path, uint64_t deadline, ShareDoneFunc done, void *userdata);

/* Persists SharedSubtrees added at run time, so a restart keeps them. */
int manager_save_shared(Manager *m);

