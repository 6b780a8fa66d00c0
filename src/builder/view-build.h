/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "builder-message.h"
#include "mount-util.h"

/* Building a user's view: a new mount namespace whose root is a recursive copy of the host's
 * '/', assembled at SubtreeRoot/USER. Runs in the view builder (builder.c), in-process: the
 * builder creates the namespace itself and setns()es back to the host, so a view costs a few
 * syscalls, no fork. Nothing here looks up a path a user controls (the [View] policy, which
 * does, runs afterwards in a killable child: view-policy.c), so the builder cannot get stuck
 * on a user's file system. */

/* The step that failed, for the message the caller gets. */
typedef enum ViewStage {
        VIEW_STAGE_NONE,
        VIEW_STAGE_CLONE,
        VIEW_STAGE_PEERS,
        VIEW_STAGE_UNSHARE,
        VIEW_STAGE_ATTACH,
        VIEW_STAGE_PIVOT,
        VIEW_STAGE_POLICY,
        VIEW_STAGE_PIN,
        _VIEW_STAGE_MAX,
        _VIEW_STAGE_INVALID = -EINVAL,
} ViewStage;

const char *view_stage_to_string(ViewStage s) _pure_;
ViewStage view_stage_from_string(const char *s) _pure_;

/* Builds the view and returns an nsfs fd of it and its number of mounts; the builder is back
 * in the host namespace (host_ns_fd) when this returns, success or not. *ret_stage names the
 * failing step. */
int view_build(const ViewSpec *spec, int host_ns_fd, int *ret_ns_fd, size_t *ret_n_mounts, ViewStage *ret_stage);
