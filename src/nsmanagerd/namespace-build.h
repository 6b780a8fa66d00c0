/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "fd-store.h"
#include "namespace.h"
#include "view-job.h"

/* Makes ns's view, asynchronously: the builder builds and pins it, then its [View] policy is
 * applied on 'jobs' (in a killable child); the state is saved. Calls waiting with
 * namespace_wait_ready() learn how it went, the set's listeners that it is ready; a failed one
 * is dropped (its pin undone). */
int namespace_build(Namespace *ns, ViewJobs *jobs, uint64_t deadline);

/* The namespace a previous start pinned as 'name' ('mntns_fd', taken on success), from its
 * state file: its sessions watched again (by their fds in 'stored_fds', else by their leaders),
 * ready at once. Nothing is told to the listeners: it is there before anyone can ask. */
int namespace_load(NamespaceSet *set, StoredFds *stored_fds, const char *name, int mntns_fd, Namespace **ret);
