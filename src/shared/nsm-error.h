/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>

#include "macros.h"

/* The project's errors, in one table (nsm-error.c). Each condition a caller can act on has a
 * code; the table gives its D-Bus name (the contract's org.example.NSManager.Error.*, or one of
 * the standard org.freedesktop.DBus.Error.* the daemon uses), the errno a client of the bus
 * reads from it (sd_bus_error_get_errno() once bus_error_add_map() registered the table:
 * bus-errors.h), and a sentence for a failure that came without one. Both directions go
 * through it: the daemon names its replies from a code (bus_error_set_nsm()), clients read
 * codes back from names (bus_error_code()).
 *
 * The code that knows the condition names it: the core and the helper processes return an
 * NsmError, a code and a sentence, not an errno for the bus glue to guess from afterwards.
 * errno stays the vocabulary of system calls: NSM_ERROR_SYSTEM carries the errno of a call
 * that failed for no reason a caller can act on (out of memory, an I/O error), and sd-bus
 * names it from that errno (org.freedesktop.DBus.Error.NoMemory, System.Error.EIO, …). Where a
 * system call on a path the request or the configuration named failed, the errno says what was
 * wrong with the path: nsm_error_set_path_errnof() names that, at the place that made the call. */

typedef enum NsmErrorCode {
        NSM_ERROR_NONE,                                  /* no error: a zeroed NsmError */
        NSM_ERROR_SYSTEM,                                /* named by sd-bus from its errno */
        NSM_ERROR_NO_SUCH_USER,
        NSM_ERROR_NO_SUCH_NAMESPACE,
        NSM_ERROR_NO_SUCH_SESSION,
        NSM_ERROR_USER_EXCLUDED,
        NSM_ERROR_INVALID_PATH,
        NSM_ERROR_INVALID_MODE,
        NSM_ERROR_BUSY,
        NSM_ERROR_TIMED_OUT,
        NSM_ERROR_LIMIT_EXCEEDED,
        NSM_ERROR_MOUNT_CHANGED,
        NSM_ERROR_ACCESS_DENIED,
        NSM_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
        NSM_ERROR_INVALID_ARGS,
        NSM_ERROR_NOT_SUPPORTED,
        NSM_ERROR_FAILED,
        _NSM_ERROR_CODE_MAX,
        _NSM_ERROR_CODE_INVALID = -EINVAL,
} NsmErrorCode;

/* Its D-Bus name; NULL for NSM_ERROR_NONE and NSM_ERROR_SYSTEM (sd-bus names that one). */
const char *nsm_error_code_to_name(NsmErrorCode code) _pure_;
/* The code of a D-Bus name in the table; -EINVAL for any other name. */
NsmErrorCode nsm_error_code_from_name(const char *name) _pure_;
/* The errno (> 0) a client gets for the name: sd_bus_error_get_errno() with the table
 * registered. NSM_ERROR_SYSTEM: EIO (an NsmError of that code carries its own). */
int nsm_error_code_to_errno(NsmErrorCode code) _pure_;
/* The sentence for a failure of that code that came without one. */
const char *nsm_error_code_to_message(NsmErrorCode code) _pure_;

/* A failure: what went wrong (the code) and a sentence a person can act on. Zeroed: none.
 * Functions that take one return a negative errno on failure and have set it; the caller
 * frees it (nsm_error_done(), or _cleanup_(nsm_error_done)). */
typedef struct NsmError {
        NsmErrorCode code;
        int errno_value;         /* NSM_ERROR_SYSTEM: the system call's errno (> 0) */
        char *message;           /* NULL: the table's sentence for the code */
} NsmError;

static inline bool nsm_error_is_set(const NsmError *e) {
        return e && e->code != NSM_ERROR_NONE;
}
void nsm_error_done(NsmError *e);

/* The sentence helper, the only one: names the failure 'code' in 'e' with the sentence 'fmt'
 * (NULL: the table's), and returns the code's negative errno. 'e' may be NULL (the caller
 * wants the errno alone). A failure already named in 'e' stays: the first place that knew
 * what went wrong is the most precise one (its errno is returned then). */
int nsm_error_setf(NsmError *e, NsmErrorCode code, const char *fmt, ...) _printf_(3, 4);
/* A system call failed with errno 'r' (either sign), for no reason the caller can act on:
 * NSM_ERROR_SYSTEM. "%m" in fmt is r's text. Returns -|r| (-EIO for 0). */
int nsm_error_set_errnof(NsmError *e, int r, const char *fmt, ...) _printf_(3, 4);
/* A system call on a path the request or the configuration named failed with 'r': what r
 * says about the path, named — one that does not exist, is no directory, has a symbolic link
 * on the way, leaves the namespace's root, is too long or does not qualify (ENOENT, ENOTDIR,
 * ELOOP, EXDEV, ENAMETOOLONG, EINVAL: InvalidPath), one the caller may not reach (EACCES,
 * EPERM: AccessDenied), one in use (EBUSY: Busy); anything else as nsm_error_set_errnof().
 * "%m" is r's text. Returns -|r| (-EIO for 0). */
int nsm_error_set_path_errnof(NsmError *e, int r, const char *fmt, ...) _printf_(3, 4);
/* What the three above share: 'r' is the system call's errno behind it (0: none). */
int nsm_error_setfv(NsmError *e, NsmErrorCode code, int r, const char *fmt, va_list ap) _printf_(4, 0);
/* The same with a sentence that needs no formatting ('r' names an NSM_ERROR_SYSTEM failure). */
int nsm_error_set(NsmError *e, NsmErrorCode code, int r, const char *message);
/* What every piece of work still waiting hears when the daemon exits. */
#define NSM_SHUTTING_DOWN "nsmanagerd is shutting down."
static inline int nsm_error_set_shutting_down(NsmError *e) {
        return nsm_error_set(e, NSM_ERROR_SYSTEM, -ESHUTDOWN, NSM_SHUTTING_DOWN);
}

/* A copy of 'src' in 'dst' (unset: as src; -ENOMEM keeps the code without its sentence). */
int nsm_error_copy(NsmError *dst, const NsmError *src);
/* Its sentence, or the table's for its code (for NSM_ERROR_SYSTEM: its errno's text). */
const char *nsm_error_message(const NsmError *e);
/* The negative errno a client gets for it (0 if unset). */
int nsm_error_to_errno(const NsmError *e);
