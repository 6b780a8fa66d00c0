/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "manager.h"
#include "user-util.h"
#include "macros.h"

typedef enum NamespaceState {
        NAMESPACE_ACTIVE,
        NAMESPACE_LINGERING,
        NAMESPACE_CLOSING,
        _NAMESPACE_STATE_MAX,
        _NAMESPACE_STATE_INVALID = -EINVAL,
} NamespaceState;

const char *namespace_state_to_string(NamespaceState s) _pure_;
NamespaceState namespace_state_from_string(const char *s) _pure_;

typedef struct Session {
        char *id;
        pid_t leader;            /* the process that opened it (0 if unknown) */
        int pidfd;               /* watches the leader: a crashed login closes its session */
        sd_event_source *pidfd_source;
        struct Session *next;
} Session;

struct Namespace {
        Manager *manager;

        char *name;
        char *uid_key;           /* uid as decimal string, the key of namespaces_by_uid */
        uid_t uid;
        gid_t gid;
        char *home;
        char *shell;

        int mntns_fd;            /* an nsfs fd of the user's mount namespace */
        uint64_t mntns_id;       /* its inode number, as readlink /proc/PID/ns/mnt shows it */
        uint64_t timestamp;      /* creation, µs since the epoch */
        bool linger;

        Session *sessions;
        sd_event_source *stop_timer; /* armed when the last session closed */

        char *object_path;
};

/* The Root property: SubtreeRoot/Name */
char *namespace_root(Namespace *ns);

NamespaceState namespace_get_state(Namespace *ns);

/* Lifecycle. namespace_new() only allocates; namespace_start() builds and pins the view. */
int namespace_new(Manager *m, const UserRecord *u, Namespace **ret);
Namespace *namespace_free(Namespace *ns);   /* unlinks from the Manager; the view stays pinned */
int namespace_start(Namespace *ns, char **ret_error_message);
/* Unpins the namespace, removes its state file and SubtreeRoot/NAME directory, frees it. */
int namespace_stop(Namespace *ns);
int namespace_save(Namespace *ns);
int namespace_load(Manager *m, const char *name, int mntns_fd, Namespace **ret);

int namespace_add_session(Namespace *ns, const char *id, pid_t leader);
int namespace_remove_session(Namespace *ns, const char *id); /* -ENOENT if unknown */
Session *namespace_get_session(Namespace *ns, const char *id);
int namespace_set_linger(Namespace *ns, bool b);
