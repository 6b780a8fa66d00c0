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

/* A user's namespace: the object and its lifecycle (built, ready, removed), and what the
 * daemon remembers about it (binds made, the [View] policy's mounts, explicit propagation
 * choices). Its sessions are namespace-session.h's, its state file namespace-state.h's. No bus
 * types here: namespace-dbus.c is the glue. */

typedef struct Session Session;   /* namespace-session.h */

typedef enum NamespaceState {
        NAMESPACE_ACTIVE,
        NAMESPACE_LINGERING,
        NAMESPACE_CLOSING,
        _NAMESPACE_STATE_MAX,
        _NAMESPACE_STATE_INVALID = -EINVAL,
} NamespaceState;

const char *namespace_state_to_string(NamespaceState s) _pure_;
NamespaceState namespace_state_from_string(const char *s) _pure_;


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

/* The mount namespace 'fd' (taken) becomes ns's; its inode and id are read. */
int namespace_set_fd(Namespace *ns, int fd);

/* Records. */
int namespace_record_bind(Namespace *ns, MountId id, const char *destination, bool for_user, MountId replaced);
void namespace_forget_mount(Namespace *ns, MountId id);
int namespace_record_choice(Namespace *ns, const char *path, const char *mode, bool recursive);
void namespace_clear_choice(Namespace *ns, const char *path);
bool namespace_has_choice(Namespace *ns, const char *path);
int namespace_set_pending_join(Namespace *ns, const char *path, bool pending);
