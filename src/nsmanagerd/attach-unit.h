/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "attach-process.h"

/* Whether Attach() goes through systemd: it is PID 1 (sd_booted()). */
bool attach_unit_available(void);

/* Asks systemd for a transient service that runs the command, and returns without waiting
 * for it. Once systemd has started the command (or could not), on_started() gets the outcome,
 * to answer 'message' (held in p->call until then); a start that failed also frees 'p'
 * afterwards. When the command ends, its status goes to p's status fd and 'p' is freed.
 * 0 once the start is on its way, or a negative errno and in 'error' the step that failed;
 * on error the caller frees 'p' (on_started() is not called). */
int attach_unit_start(AttachProcess *p, const AttachRequest *req, sd_bus_message *message,
                      AttachStartedFunc on_started, NsmError *error);

/* Tasks in the unit's control group (1 while it starts). */
unsigned attach_unit_tasks(AttachProcess *p);

/* The matches and what they dispatch to go, after every attached command (attach_done()). */
void attach_unit_done(Manager *m);

/* The calls to systemd that expect a reply, in flight at once: each one is a reply dbus-daemon
 * keeps pending for the daemon's connection (max_replies_per_connection, 128 on the system
 * bus), which polkit's questions share. Users together have fewer than all of them: the rest
 * is root's. docs/security.md, "Shared budgets". */
#define SYSTEMD_CALLS_MAX 48U
#define SYSTEMD_CALLS_OF_USERS_MAX 32U
#define SYSTEMD_CALLS_PER_UID_MAX 8U
