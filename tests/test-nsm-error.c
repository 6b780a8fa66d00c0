/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/nsm-error.c and bus-errors.c: the one table of the project's errors, both ways —
 * code ↔ D-Bus name ↔ the errno a client reads ↔ the sentence — and through the daemon's
 * answers of its helper processes (sd-bus peer to peer: nsm_error_from_bus()). TAP output. */
#include <string.h>

#include "bus-errors.h"
#include "nsm-error.h"
#include "tap.h"

/* The contract (docs/interface.md, "Errors"): each name, and the errno a client gets for it.
 * Written out here rather than read from the table: a row of the table that drifts from the
 * contract fails this test. */
static const struct {
        NsmErrorCode code;
        const char *name;
        int errno_value;
} contract[] = {
        { NSM_ERROR_NO_SUCH_USER, "org.example.NSManager.Error.NoSuchUser", ESRCH },
        { NSM_ERROR_NO_SUCH_NAMESPACE, "org.example.NSManager.Error.NoSuchNamespace", ENXIO },
        { NSM_ERROR_NO_SUCH_SESSION, "org.example.NSManager.Error.NoSuchSession", ENOENT },
        { NSM_ERROR_USER_EXCLUDED, "org.example.NSManager.Error.UserExcluded", EPERM },
        { NSM_ERROR_INVALID_PATH, "org.example.NSManager.Error.InvalidPath", EINVAL },
        { NSM_ERROR_INVALID_MODE, "org.example.NSManager.Error.InvalidMode", EINVAL },
        { NSM_ERROR_BUSY, "org.example.NSManager.Error.Busy", EBUSY },
        { NSM_ERROR_TIMED_OUT, "org.example.NSManager.Error.TimedOut", ETIMEDOUT },
        { NSM_ERROR_LIMIT_EXCEEDED, "org.example.NSManager.Error.LimitExceeded", EDQUOT },
        { NSM_ERROR_MOUNT_CHANGED, "org.example.NSManager.Error.MountChanged", ESTALE },
        /* The standard ones, with the errno sd-bus gives them too. */
        { NSM_ERROR_ACCESS_DENIED, "org.freedesktop.DBus.Error.AccessDenied", EACCES },
        { NSM_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED, "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired",
          EACCES },
        { NSM_ERROR_INVALID_ARGS, "org.freedesktop.DBus.Error.InvalidArgs", EINVAL },
        { NSM_ERROR_NOT_SUPPORTED, "org.freedesktop.DBus.Error.NotSupported", EOPNOTSUPP },
        { NSM_ERROR_FAILED, "org.freedesktop.DBus.Error.Failed", EACCES },
};

static bool streq_or_null(const char *a, const char *b) {
        return a && b ? strcmp(a, b) == 0 : a == b;
}

static void test_contract_rows(void) {
        size_t named = 0;

        for (NsmErrorCode c = 0; c < _NSM_ERROR_CODE_MAX; c++)
                named += nsm_error_code_to_name(c) != NULL;
        check(named == ELEMENTSOF(contract), "the table names %zu errors, the contract %zu", named, ELEMENTSOF(contract));

        for (size_t i = 0; i < ELEMENTSOF(contract); i++) {
                NsmErrorCode c = contract[i].code;
                const char *name = contract[i].name;

                check(streq_or_null(nsm_error_code_to_name(c), name), "%s: its name is the contract's (%s)", name,
                      nsm_error_code_to_name(c) ?: "(none)");
                check(nsm_error_code_from_name(name) == c, "%s: the name gives its code back", name);
                check(nsm_error_code_to_errno(c) == contract[i].errno_value, "%s: a client reads errno %d (table: %d)",
                      name, contract[i].errno_value, nsm_error_code_to_errno(c));
                check(nsm_error_code_to_message(c) && *nsm_error_code_to_message(c), "%s: has a sentence of its own", name);
        }
        check(!nsm_error_code_to_name(NSM_ERROR_NONE) && !nsm_error_code_to_name(NSM_ERROR_SYSTEM),
              "no error and a system call's failure have no name of ours");
        check(nsm_error_code_from_name("org.example.NSManager.Error.NoSuchThing") == _NSM_ERROR_CODE_INVALID &&
              nsm_error_code_from_name(NULL) == _NSM_ERROR_CODE_INVALID, "an unknown name has no code");
}

/* Daemon → bus → client, and helper → daemon, for each row: name, errno and sentence
 * arrive as the table says. */
static void test_round_trips(void) {
        for (size_t i = 0; i < ELEMENTSOF(contract); i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL, plain = SD_BUS_ERROR_NULL;
                _cleanup_(nsm_error_done) NsmError in = {}, bare = {};
                const char *name = contract[i].name;
                int r;

                r = nsm_error_setf(&in, contract[i].code, "Sentence %zu: '%s'.", i, "x y");
                check(r == -contract[i].errno_value, "%s: nsm_error_setf() returns -%d (got %d)", name,
                      contract[i].errno_value, r);
                r = bus_error_set_nsm(&e, &in);
                check(streq_or_null(e.name, name) && streq_or_null(e.message, in.message),
                      "%s: the reply carries the name and the sentence (%s: %s)", name, e.name ?: "(null)",
                      e.message ?: "(null)");
                check(r == -contract[i].errno_value, "%s: bus_error_set_nsm() returns -%d (got %d)", name,
                      contract[i].errno_value, r);
                check(sd_bus_error_get_errno(&e) == contract[i].errno_value, "%s: the client reads errno %d (got %d)",
                      name, contract[i].errno_value, sd_bus_error_get_errno(&e));
                check(bus_error_code(&e) == contract[i].code, "%s: the client reads the code back", name);

                _cleanup_(nsm_error_done) NsmError via_bus = {};
                (void) nsm_error_from_bus(&via_bus, &e);
                check(via_bus.code == in.code && streq_or_null(via_bus.message, in.message),
                      "%s: a child's failure on its bus reads back as the code and the sentence", name);

                (void) nsm_error_setf(&bare, contract[i].code, NULL);
                (void) bus_error_set_nsm(&plain, &bare);
                check(streq_or_null(plain.message, nsm_error_code_to_message(contract[i].code)),
                      "%s: without a sentence, the table's", name);
        }
}

/* A system call's failure keeps its errno all the way, and sd-bus names it: never one of the
 * contract's names by accident (a timeout of a system call is not TimedOut). */
static void test_system_errors(void) {
        static const struct {
                int errno_value;
                NsmErrorCode client;     /* what a client makes of sd-bus's name */
        } cases[] = {
                { ENOMEM, NSM_ERROR_SYSTEM }, { EIO, NSM_ERROR_SYSTEM }, { ESHUTDOWN, NSM_ERROR_SYSTEM },
                { EPROTO, NSM_ERROR_SYSTEM }, { EAGAIN, NSM_ERROR_SYSTEM }, { ETIMEDOUT, NSM_ERROR_SYSTEM },
                { ENOENT, NSM_ERROR_SYSTEM }, { EBUSY, NSM_ERROR_SYSTEM }, { EDQUOT, NSM_ERROR_SYSTEM },
                /* sd-bus's own names for these are standard ones of the table */
                { EACCES, NSM_ERROR_ACCESS_DENIED }, { EINVAL, NSM_ERROR_INVALID_ARGS },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
                _cleanup_(nsm_error_done) NsmError in = {};
                int errno_value = cases[i].errno_value, r;

                r = nsm_error_set_errnof(&in, -errno_value, "Failed to do %s: %%m gives '%m'.", "it");
                check(r == -errno_value && in.code == NSM_ERROR_SYSTEM && in.errno_value == errno_value &&
                      strstr(in.message, strerror(errno_value)), "errno %d: named SYSTEM, %%m is its text: %s",
                      errno_value, in.message);
                (void) bus_error_set_nsm(&e, &in);
                check(sd_bus_error_get_errno(&e) == errno_value, "errno %d: the client reads it back from '%s'",
                      errno_value, e.name);
                check(bus_error_code(&e) == cases[i].client, "errno %d: '%s' is %s to a client", errno_value, e.name,
                      nsm_error_code_to_name(cases[i].client) ?: "a system call's failure");
                _cleanup_(nsm_error_done) NsmError via_bus = {};
                (void) nsm_error_from_bus(&via_bus, &e);
                check(via_bus.code == cases[i].client && streq_or_null(via_bus.message, in.message) &&
                      (via_bus.code != NSM_ERROR_SYSTEM || via_bus.errno_value == errno_value),
                      "errno %d: through a child's bus, with its sentence", errno_value);
        }
}

/* What a failed system call on a path the request named says about the path. */
static void test_path_errors(void) {
        static const struct {
                int errno_value;
                NsmErrorCode code;
        } cases[] = {
                { ENOENT, NSM_ERROR_INVALID_PATH }, { ENOTDIR, NSM_ERROR_INVALID_PATH }, { ELOOP, NSM_ERROR_INVALID_PATH },
                { EXDEV, NSM_ERROR_INVALID_PATH }, { ENAMETOOLONG, NSM_ERROR_INVALID_PATH }, { EINVAL, NSM_ERROR_INVALID_PATH },
                { EACCES, NSM_ERROR_ACCESS_DENIED }, { EPERM, NSM_ERROR_ACCESS_DENIED }, { EBUSY, NSM_ERROR_BUSY },
                { ENOMEM, NSM_ERROR_SYSTEM }, { EIO, NSM_ERROR_SYSTEM }, { ETIMEDOUT, NSM_ERROR_SYSTEM },
                { EDQUOT, NSM_ERROR_SYSTEM }, { ESTALE, NSM_ERROR_SYSTEM },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(nsm_error_done) NsmError e = {};
                int r = nsm_error_set_path_errnof(&e, -cases[i].errno_value, "'/x': %m");

                check(r == -cases[i].errno_value && e.code == cases[i].code && strstr(e.message, strerror(cases[i].errno_value)),
                      "a path's errno %d is %s", cases[i].errno_value,
                      nsm_error_code_to_name(cases[i].code) ?: "a system call's failure");
        }
}

static void test_first_failure_stays(void) {
        _cleanup_(nsm_error_done) NsmError e = {}, copy = {};
        int r;

        (void) nsm_error_setf(&e, NSM_ERROR_BUSY, "The first: %s.", "busy");
        r = nsm_error_set_errnof(&e, -ENOMEM, "A later one.");
        (void) nsm_error_setf(&e, NSM_ERROR_INVALID_PATH, "Another.");
        check(e.code == NSM_ERROR_BUSY && streq_or_null(e.message, "The first: busy.") && r == -ENOMEM,
              "the first place that knew names it; the others return their own errno");
        check(nsm_error_copy(&copy, &e) >= 0 && copy.code == NSM_ERROR_BUSY && streq_or_null(copy.message, e.message) &&
              copy.message != e.message, "a copy is a copy");
        check(nsm_error_setf(NULL, NSM_ERROR_TIMED_OUT, "nobody reads it") == -ETIMEDOUT &&
              nsm_error_set_errnof(NULL, 5, NULL) == -5, "without an NsmError, the errno alone");
        check(!nsm_error_is_set(&(NsmError) {}) && !nsm_error_message(NULL) && nsm_error_to_errno(NULL) == 0,
              "a zeroed NsmError is no error");
}

/* nsctl registers the table: sd_bus_error_get_errno() then gives the contract's errno for
 * every name, where sd-bus alone gives EIO for names it does not know. */
static void test_client_map(void) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;

        check(bus_error_add_map() >= 0, "the table registers as an sd-bus error map");
        check(bus_error_add_map() >= 0, "registering it again is harmless");
        (void) sd_bus_error_set(&e, "org.example.Other.Error.Thing", "another service's");
        check(sd_bus_error_get_errno(&e) == EIO && bus_error_code(&e) == _NSM_ERROR_CODE_INVALID,
              "another service's name is none of ours");
}

int main(void) {
        /* First, so that the other tests see the client's view of the names. */
        test_client_map();
        test_contract_rows();
        test_round_trips();
        test_system_errors();
        test_path_errors();
        test_first_failure_stays();
        return tap_finish();
}
