/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"

/* The record of who changed what: one journal record for every call of a method that changes
 * state (a namespace, a view's mounts, the host's, a session, lingering, the configuration,
 * an attached command), once its outcome is known, refusals included. Reads are not
 * recorded.
 *
 * Each kind of change has its MESSAGE_ID (catalog/nsmanager.catalog explains each), and the
 * record carries the caller and the arguments as fields, so that the journal answers "who
 * touched bob's view":
 *
 *   journalctl NSM_USER=bob
 *   journalctl MESSAGE_ID=234f4ef9fa8841c8ba2eaf1e05ba42f3 NSM_CALLER_UID=2001
 *
 *   NSM_ACTION=       the method (BindMount, SetLinger, …)
 *   NSM_CALLER_UID=, NSM_CALLER_USER=, NSM_CALLER_PID=   who asked, as the bus (or, on the
 *                     private socket, the kernel) authenticated the sender
 *   NSM_USER=         whose view ("" for the host: NSM_HOST=1 instead)
 *   NSM_PATH=, NSM_SOURCE=, NSM_MODE=, NSM_FLAGS=, NSM_LINGER=, NSM_SESSION=, NSM_COMMAND=,
 *   NSM_WHAT=         the arguments the method has (never an attached command's environment)
 *   NSM_PID=          an attached command's PID, once it runs
 *   NSM_RESULT=       "done", or the D-Bus error's name
 *
 * 'call' is the method call (read again from its start); 'error' NULL for success. Methods
 * that change nothing are ignored.
 *
 * The journal drops a unit's records beyond its burst (journald: 10,000 per 30 s), root's
 * among them, so callers other than root are held to budgets: at most AuditRateLimitBurst=
 * records per uid and AuditRateLimitBurstAll= of all of them together per
 * AuditRateLimitIntervalSec=. What a uid's budget kept out is summed up in one record when its
 * interval ends ("N calls of uid U (bob) not recorded"), or when the daemon stops. Root's
 * records (logins' included: those are root's calls) are never held back. */
void audit_call(Manager *m, sd_bus_message *call, const sd_bus_error *error);
/* The same for a method that returned 'r' to sd-bus: 'error' if it is set, else what sd-bus
 * makes of r (< 0), or success. */
void audit_call_result(Manager *m, sd_bus_message *call, const sd_bus_error *error, int r);
/* The same, for an attached command that started as PID 'pid'. */
void audit_call_pid(Manager *m, sd_bus_message *call, const sd_bus_error *error, pid_t pid);
/* Logs the summaries still due, and frees the budgets (at exit, with the bus glue). */
void audit_limits_free(Manager *m);
