/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "child.h"
#include "namespace.h"
#include "op-queue.h"

/* Eject(): every mount of a block device's file system detached, in the host and in every
 * view — copies a user made private, binds of its subdirectories, mounts stacked on one
 * another — so that the device is free. And ReleaseWithHost=: the same for the copies views
 * still hold once the host unmounted the file system's last mount there.
 *
 * The work runs on the host's queue in a killable child (child.c) with the call's deadline:
 * it enters each namespace, finds the file system's mounts in its table, finds the processes
 * that hold them (by the mount ids of their open files, working directory and root, and the
 * device of their mapped files: no file system is asked anything) and unmounts, deepest
 * first, each checked to be the mount it was before (a path a user can change is never
 * trusted). */

typedef struct EjectMount {
        char *user;              /* "" for the host */
        char *path;
} EjectMount;

typedef struct EjectResult {
        NsmError error;          /* set: failed (Busy: in use, nothing detached without the lazy flag) */
        dev_t dev;               /* the file system's device (0 if it was not found) */
        EjectMount *detached;
        size_t n_detached;
} EjectResult;

typedef void (*EjectDoneFunc)(const EjectResult *result, void *userdata);

/* Ejects for its owner (the Manager's Manager.ejector), on the host's queue; remembers which
 * block devices an Eject() detached everywhere, so that the host's unmount of one needs no
 * release. The arguments are the owner's and outlive it. */
typedef struct Ejector Ejector;
int ejector_new(NamespaceSet *namespaces, ChildSet *children, OpQueue *host_ops, Ejector **ret);
Ejector *ejector_free(Ejector *x);
/* The host mounted 'dev' again: what an earlier Eject() did no longer tells about its next
 * unmount. */
void ejector_forget(Ejector *x, dev_t dev);

/* Eject(what, flags): 'what' a block device or a host mount point (absolute, normalized).
 * 'lazy': detach what is in use anyway. 'done' is called later, from the event loop. */
int eject_start(Ejector *x, const char *what, bool lazy, uint64_t deadline, EjectDoneFunc done, void *userdata);

/* ReleaseWithHost=: the host has no mount of 'dev' left; the views' copies are detached (one
 * that is in use lazily, logged with its holders). Logs what it did. */
int eject_release(Ejector *x, dev_t dev);
