/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"
#include "view-ops.h"

/* Running view operations (view-ops.h) for the Manager: each on its namespace's queue (or the
 * host's), in a killable child with a deadline (child.c), at most VIEW_JOBS_RUNNING_MAX at a
 * time across all namespaces (ShareSubtree("") fans out to every view). A user whose stuck
 * children reached MaxStuckOperations= gets LimitExceeded instead of another child.
 *
 * When the child succeeds, what it did is recorded in the namespace (namespace.h): the binds
 * it made or removed, the propagation choices, the subtrees joined. */

#define VIEW_JOBS_RUNNING_MAX 32

/* 'error': why it failed (NULL: it succeeded, with 'result'; NULL on failure). */
typedef void (*ViewJobDoneFunc)(const NsmError *error, const ViewOpResult *result, void *userdata);

/* Queues 'op' (its strings are copied) on ns's queue, NULL: the host's. 'caller': the user,
 * held to own-view-rules.h (their binds and the policy's mounts are taken from the
 * namespace's records when it starts), NULL: full power. 'owner': whose stuck count a stuck
 * child adds to. */
int view_job_queue(Manager *m, Namespace *ns, const ViewOp *op, const Credentials *caller, uid_t owner,
                   uint64_t deadline, ViewJobDoneFunc done, void *userdata);

/* Answers that the daemon is shutting down (ESHUTDOWN) to what waits for a slot (at exit). */
void view_jobs_free(Manager *m);
