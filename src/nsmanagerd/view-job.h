/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "child.h"
#include "manager-config.h"
#include "namespace.h"
#include "op-queue.h"
#include "view-op-message.h"

/* A plain runner of view operations (view-op-message.h): each on its namespace's queue (or the
 * host's), in a killable child with a deadline (child.c), at most VIEW_JOBS_RUNNING_MAX at a
 * time across all namespaces (ShareSubtree("") fans out to every view). A user whose stuck
 * children reached MaxStuckOperations= gets LimitExceeded instead of another child.
 *
 * It knows nothing of what a result means to a namespace: it hands each success back through
 * namespace_note_view_op() (namespace-state.h), which records it. The Manager owns the
 * runner (Manager.jobs). */

#define VIEW_JOBS_RUNNING_MAX 32

typedef struct ViewJobs ViewJobs;

/* 'config' is the owner's and outlives the runner (MaxStuckOperations= as it is now). */
int view_jobs_new(sd_event *event, ChildSet *children, OpQueue *host_ops, const ManagerConfig *config,
                  ViewJobs **ret);
/* At exit, before the children go: answers what waits for a slot that the daemon is shutting
 * down (ESHUTDOWN), and starts nothing more. */
void view_jobs_shutdown(ViewJobs *jobs);
ViewJobs *view_jobs_free(ViewJobs *jobs);

/* 'error': why it failed (NULL: it succeeded, with 'result'; NULL on failure). */
typedef void (*ViewJobDoneFunc)(const NsmError *error, const ViewOpResult *result, void *userdata);

/* Queues 'op' (its strings are copied) on ns's queue, NULL: the host's. 'caller': the user,
 * held to own-view-rules.h (their binds and the policy's mounts are taken from the
 * namespace's records when it starts), NULL: full power. 'owner': whose stuck count a stuck
 * child adds to. */
int view_job_queue(ViewJobs *jobs, Namespace *ns, const ViewOp *op, const Credentials *caller, uid_t owner,
                   uint64_t deadline, ViewJobDoneFunc done, void *userdata);

