/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "namespace.h"
#include "view-op-message.h"

/* A namespace's state file, StateDirectory/namespaces/NAME: what a restart needs to know of it
 * (its sessions, binds, the [View] policy's mounts, propagation choices, subtrees still to
 * join). Written whole on every change (state_dir_write_file(): atomically). */

int namespace_save(Namespace *ns);
/* The records of a state file (what namespace_save() writes) into ns, which needs no set: no
 * syscalls, and the sessions it adds are not watched yet (namespace_load(), namespace-build.h,
 * does that). A
 * malformed record is dropped, the rest kept; -ENOMEM is the only error. State files outlive
 * daemon versions, so this is fuzzed (src/fuzz/fuzz-namespace-state.c). */
int namespace_parse_state(Namespace *ns, FILE *f, bool *ret_had_sessions);
/* namespace_save(), a failure logged and ignored: the change stands, and the next save
 * writes it. */
void namespace_save_or_warn(Namespace *ns);

/* What a view operation that succeeded in ns did (view-job.h hands it back here): the binds
 * made or gone, the propagation choices, the subtrees joined; recorded and saved. A bind is the
 * user's own when the operation ran for a caller held to the rules (op->caller). 'what' names
 * the operation in a warning. */
void namespace_note_view_op(Namespace *ns, const ViewOp *op, const ViewOpResult *res, const char *what);
