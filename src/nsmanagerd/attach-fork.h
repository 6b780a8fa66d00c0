/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "attach-process.h"

/* Attach() where systemd is not PID 1: forks the command now, into the namespace and the
 * caller's ids; p->pid is set, and the caller replies. When the command ends, its status goes
 * to p's status fd and 'p' is freed; when the client hangs up, the command gets SIGHUP.
 * 0 once the command is on its way, or a negative errno and in 'error' the step that failed
 * ("Failed to fork: …"); on error the caller frees 'p'. */
int attach_fork_start(AttachProcess *p, const AttachRequest *req, NsmError *error);
