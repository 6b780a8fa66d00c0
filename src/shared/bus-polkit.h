/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "bus-creds.h"

/* Asynchronous polkit checks for sd-bus method handlers.
 *
 * A handler calls bus_verify_polkit_async() after validating its arguments:
 *
 *         r = bus_verify_polkit_async(m, "org.example.NSManager.manage", details, &manager->polkit_registry, error);
 *         if (r < 0)
 *                 return r;
 *         if (r == 0)
 *                 return 1;   (polkit is thinking: the call is dispatched again once it answered)
 *         ... act and reply ...
 *
 * The first call sends CheckAuthorization without waiting, so the event loop keeps serving other clients.
 * When polkit answers, the original message is put back into the bus's read queue; the handler runs
 * again from the start and this time the same call returns the answer. A handler may check several
 * actions in a row: each one is asked once and remembered until the re-dispatched message was handled. */

typedef struct PolkitRegistry PolkitRegistry;

/* A registry that learns who sent a message from 'creds' (the owner's, which outlives it). One
 * made on first use by the calls below asks the bus driver each time. */
int polkit_registry_new(BusCreds *creds, PolkitRegistry **ret);
/* The budgets of the questions, read at each question (they point into the owner's configuration,
 * which may change between questions): at most *questions_per_uid interactive questions of one
 * uid waiting or in flight (0: no limit), and a question not answered after *timeout_usec is
 * cancelled and its caller answered TimedOut. Unset (NULL): 4 and 20 s. */
void polkit_registry_set_limits(PolkitRegistry *r, const unsigned *questions_per_uid, const uint64_t *timeout_usec);

/* Whether 'm' was asked about already (it is being dispatched again with polkit's answer): for a
 * handler that charges each call once, before polkit is asked. */
bool polkit_registry_knows(const PolkitRegistry *r, sd_bus_message *m);

/* NULL-safe; drops every query, pending ones included (their callers never get a reply from us). */
PolkitRegistry *polkit_registry_free(PolkitRegistry *r);
static inline void polkit_registry_freep(PolkitRegistry **r) {
        if (*r)
                polkit_registry_free(*r);
}

/* 'details': NULL-terminated key, value, key, value, … list handed to polkit rules (may be NULL).
 * Returns 1 if the caller may proceed now (the sender's EUID is 0, or polkit said yes for this very
 * message), 0 if a query was started (return 1 from the handler and wait to be called again), or a
 * negative errno with 'error' set to org.freedesktop.DBus.Error.AccessDenied,
 * org.freedesktop.DBus.Error.InteractiveAuthorizationRequired, LimitExceeded (the caller's uid has
 * its interactive questions' worth waiting) or TimedOut (polkit did not answer in time). The
 * registry is created on first use. */
int bus_verify_polkit_async(
                sd_bus_message *m,
                const char *action,
                const char **details,
                PolkitRegistry **registry,
                sd_bus_error *error);

/* What polkit would say, asked without interaction (as logind's CanPowerOff()): for Can(). */
typedef enum PolkitResult {
        POLKIT_RESULT_YES,
        POLKIT_RESULT_CHALLENGE,   /* yes, after the caller authenticates */
        POLKIT_RESULT_NO,
} PolkitResult;

/* As bus_verify_polkit_async(), but only asks: never with ALLOW_USER_INTERACTION, whatever the
 * message allows, and a verdict is not an error. 1 with *ret set (root: YES), 0 while asking,
 * < 0 with 'error' set when polkit gave no verdict (not running, the action not installed). */
int bus_test_polkit_async(
                sd_bus_message *m,
                const char *action,
                const char **details,
                PolkitRegistry **registry,
                PolkitResult *ret,
                sd_bus_error *error);
