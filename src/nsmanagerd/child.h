/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "child-main.h"
#include "nsm-error.h"

/* Mount work that touches paths a user controls (their view, their home, a FUSE mount of
 * theirs, a dead NFS server) runs in a forked child that the event loop watches and never
 * waits for: each child has a deadline, at which its caller is answered TimedOut and the
 * child gets SIGKILL.
 *
 * SIGKILL does not always end a child at once: a process waiting for a FUSE request that
 * the server has already read (or on a hard NFS mount) stays until the server answers or
 * the connection is aborted. Such a child is "stuck": it stays in the set, charged to its
 * owner (the user whose call it serves, see child_set_stuck()), until it exits; nothing is
 * waited for. Whatever syscall it was blocked in may still complete, but nothing after it
 * runs: the signal is delivered on the way back to user space.
 *
 * A child has its own fd table (a plain fork): a killed or stuck child must not hold the
 * daemon's fds (the bus connection!) nor leave what it opened in the daemon. Right after the
 * fork it closes everything but its socket and the fds its spec names. Then it serves its
 * interface peer to peer on that socket (sd-bus, child-main.h) and the daemon calls it
 * without waiting (docs/processes.md). */

typedef struct ChildSet ChildSet;

/* Called once per child, with its reply, or with
 * 'error' (its failure as it named it, or why there is no reply: its deadline passed, it died,
 * the daemon is shutting down; reply is NULL then). */
typedef void (*ChildReplyFunc)(const NsmError *error, sd_bus_message *reply, void *userdata);
/* Sends what goes ahead of the call on the child's bus. */
typedef int (*ChildPrepareFunc)(sd_bus *bus, void *userdata);
/* Appends the call's arguments. */
typedef int (*ChildAppendFunc)(sd_bus_message *call, void *userdata);

typedef struct ChildSpec {
        const char *description;       /* for the log: "SetPropagation of '/mnt' in the view of 'alice'" */
        /* The child serves 'interface' peer to peer on its socket (child-main.h); the daemon
         * calls 'method' on it, without waiting, its arguments from 'append', and hears the
         * answer in 'reply'. */
        const ChildInterface *interface;
        ChildPrepareFunc prepare;      /* sends calls that expect no reply ahead of 'method' */
        const char *method;
        ChildAppendFunc append;
        ChildReplyFunc reply;
        const int *keep_fds;           /* fds the child keeps besides its socket (inherited) */
        size_t n_keep_fds;
        uint64_t deadline;             /* CLOCK_MONOTONIC µs; 0: none */
        uid_t owner;                   /* charged with the child if it gets stuck */
        void *userdata;                /* for prepare, append and reply */
} ChildSpec;

ChildSet *child_set_new(sd_event *event);
/* Kills what still runs (SIGKILL), answers that the daemon is shutting down (ESHUTDOWN) to what
 * waits for it, and reaps what
 * ends within a second (a child stuck on a file system is left to whoever reaps orphans). */
ChildSet *child_set_free(ChildSet *s);
static inline void child_set_freep(ChildSet **s) {
        child_set_free(*s);
}

/* Starts a child; its 'reply' is called later, from the event loop, never from here. */
int child_start(ChildSet *s, const ChildSpec *spec);

/* Children of 'owner' past their deadline that have not exited yet. */
unsigned child_set_stuck(ChildSet *s, uid_t owner);

/* Takes over watching an already running child of ours (pidfd), e.g. a view builder that was
 * given up: it is reaped when it exits, and counts as stuck for 'owner' until then. */
int child_set_adopt(ChildSet *s, int pidfd, const char *description, uid_t owner);

/* SIGKILL, then reap it if it ends within 'usec' (never blocks longer). */
void pidfd_kill_and_reap(int pidfd, uint64_t usec);
