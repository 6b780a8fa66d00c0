/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "nsm-error.h"

#define NSM_ERROR_PREFIX "org.example.NSManager.Error."
#define DBUS_ERROR_PREFIX "org.freedesktop.DBus.Error."

typedef struct NsmErrorInfo {
        const char *name;        /* the D-Bus name */
        int errno_value;         /* what a client reads from it */
        const char *message;     /* for a failure that came without a sentence */
} NsmErrorInfo;

/* The contract's names (docs/interface.md, "Errors"), then the standard ones the daemon uses,
 * with the errno sd-bus gives them too. */
static const NsmErrorInfo nsm_error_table[_NSM_ERROR_CODE_MAX] = {
        [NSM_ERROR_SYSTEM] = { NULL, EIO, "A system call failed." },
        [NSM_ERROR_NO_SUCH_USER] = {
                NSM_ERROR_PREFIX "NoSuchUser", ESRCH,
                "The system does not know the user, or her name cannot name a view." },
        [NSM_ERROR_NO_SUCH_NAMESPACE] = {
                NSM_ERROR_PREFIX "NoSuchNamespace", ENXIO,
                "The user has no namespace (or it was removed meanwhile)." },
        [NSM_ERROR_NO_SUCH_SESSION] = {
                NSM_ERROR_PREFIX "NoSuchSession", ENOENT,
                "The namespace has no session of that id." },
        [NSM_ERROR_USER_EXCLUDED] = {
                NSM_ERROR_PREFIX "UserExcluded", EPERM,
                "The user is not managed: root, below MinUID=, or in ExcludeUsers=." },
        [NSM_ERROR_INVALID_PATH] = {
                NSM_ERROR_PREFIX "InvalidPath", EINVAL,
                "The path does not qualify: relative, not normalized, missing, through a symbolic link, "
                "outside the view, not a mount point where one is needed, or unbindable." },
        [NSM_ERROR_INVALID_MODE] = {
                NSM_ERROR_PREFIX "InvalidMode", EINVAL,
                "Not a propagation mode: shared, slave, private or unbindable." },
        [NSM_ERROR_BUSY] = {
                NSM_ERROR_PREFIX "Busy", EBUSY,
                "The mount or its file system is in use." },
        [NSM_ERROR_TIMED_OUT] = {
                NSM_ERROR_PREFIX "TimedOut", ETIMEDOUT,
                "The operation's deadline (OperationTimeoutSec=) passed; nothing was changed after the step it "
                "was stuck in." },
        [NSM_ERROR_LIMIT_EXCEEDED] = {
                NSM_ERROR_PREFIX "LimitExceeded", EDQUOT,
                "A per-user limit of the configuration was reached." },
        [NSM_ERROR_MOUNT_CHANGED] = {
                NSM_ERROR_PREFIX "MountChanged", ESTALE,
                "The mount at that path is not the one the caller named by its id: it is gone or has moved." },
        [NSM_ERROR_ACCESS_DENIED] = { DBUS_ERROR_PREFIX "AccessDenied", EACCES, "Access denied." },
        [NSM_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED] = {
                DBUS_ERROR_PREFIX "InteractiveAuthorizationRequired", EACCES,
                "Authorization is required, and the call did not allow asking for it." },
        [NSM_ERROR_INVALID_ARGS] = { DBUS_ERROR_PREFIX "InvalidArgs", EINVAL, "Invalid arguments." },
        [NSM_ERROR_NOT_SUPPORTED] = { DBUS_ERROR_PREFIX "NotSupported", EOPNOTSUPP, "Not supported here." },
        [NSM_ERROR_FAILED] = { DBUS_ERROR_PREFIX "Failed", EACCES, "The operation failed." },
};

/* An errno either way round as the negative one callers return; 0 (none) as -EIO. */
static int negative(int r) {
        return r < 0 ? r : r > 0 ? -r : -EIO;
}

static bool code_is_valid(NsmErrorCode code) {
        return code > NSM_ERROR_NONE && code < _NSM_ERROR_CODE_MAX;
}

const char *nsm_error_code_to_name(NsmErrorCode code) {
        return code_is_valid(code) ? nsm_error_table[code].name : NULL;
}

NsmErrorCode nsm_error_code_from_name(const char *name) {
        for (NsmErrorCode c = 0; name && c < _NSM_ERROR_CODE_MAX; c++)
                if (nsm_error_table[c].name && streq(nsm_error_table[c].name, name))
                        return c;
        return _NSM_ERROR_CODE_INVALID;
}

int nsm_error_code_to_errno(NsmErrorCode code) {
        return code_is_valid(code) ? nsm_error_table[code].errno_value : EIO;
}

const char *nsm_error_code_to_message(NsmErrorCode code) {
        return code_is_valid(code) ? nsm_error_table[code].message : nsm_error_table[NSM_ERROR_SYSTEM].message;
}

void nsm_error_done(NsmError *e) {
        if (!e)
                return;
        free(e->message);
        *e = (NsmError) {};
}

/* Names the failure: takes 'message' (NULL: the table's sentence). */
static int error_set(NsmError *e, NsmErrorCode code, int r, char *message) {
        if (!code_is_valid(code))
                code = NSM_ERROR_SYSTEM;
        r = r < 0 ? -r : r;
        if (code == NSM_ERROR_SYSTEM && r == 0)
                r = EIO;
        if (!e || nsm_error_is_set(e)) {
                free(message);
                if (nsm_error_is_set(e))
                        return nsm_error_to_errno(e);
                return code == NSM_ERROR_SYSTEM ? -r : -nsm_error_code_to_errno(code);
        }
        *e = (NsmError) { .code = code, .errno_value = code == NSM_ERROR_SYSTEM ? r : 0, .message = message };
        return nsm_error_to_errno(e);
}

int nsm_error_setfv(NsmError *e, NsmErrorCode code, int r, const char *fmt, va_list ap) {
        char *message = NULL;
        int saved = errno;

        if (fmt && e && !nsm_error_is_set(e)) {
                errno = r < 0 ? -r : r;   /* for %m */
                if (vasprintf(&message, fmt, ap) < 0)
                        message = NULL;   /* the table's sentence */
                errno = saved;
        }
        return error_set(e, code, r, message);
}

int nsm_error_set(NsmError *e, NsmErrorCode code, int r, const char *message) {
        return error_set(e, code, r, message && e && !nsm_error_is_set(e) ? strdup(message) : NULL);
}

int nsm_error_setf(NsmError *e, NsmErrorCode code, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = nsm_error_setfv(e, code, 0, fmt, ap);
        va_end(ap);
        return r;
}

int nsm_error_set_errnof(NsmError *e, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) nsm_error_setfv(e, NSM_ERROR_SYSTEM, r, fmt, ap);
        va_end(ap);
        return negative(r);
}

static NsmErrorCode path_errno_code(int r) {
        switch (r < 0 ? -r : r) {
        case ENOENT:
        case ENOTDIR:
        case ELOOP:
        case EXDEV:
        case ENAMETOOLONG:
        case EINVAL:
                return NSM_ERROR_INVALID_PATH;
        case EACCES:
        case EPERM:
                return NSM_ERROR_ACCESS_DENIED;
        case EBUSY:
                return NSM_ERROR_BUSY;
        default:
                return NSM_ERROR_SYSTEM;
        }
}

int nsm_error_set_path_errnof(NsmError *e, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        (void) nsm_error_setfv(e, path_errno_code(r), r, fmt, ap);
        va_end(ap);
        return negative(r);
}

int nsm_error_copy(NsmError *dst, const NsmError *src) {
        if (!nsm_error_is_set(src) || nsm_error_is_set(dst))
                return 0;
        *dst = (NsmError) { .code = src->code, .errno_value = src->errno_value };
        if (src->message && !(dst->message = strdup(src->message)))
                return -ENOMEM;
        return 0;
}

const char *nsm_error_message(const NsmError *e) {
        if (!nsm_error_is_set(e))
                return NULL;
        if (!e->message && e->code == NSM_ERROR_SYSTEM)
                return strerror(e->errno_value > 0 ? e->errno_value : EIO);
        return e->message ?: nsm_error_code_to_message(e->code);
}

int nsm_error_to_errno(const NsmError *e) {
        if (!nsm_error_is_set(e))
                return 0;
        if (e->code == NSM_ERROR_SYSTEM)
                return -(e->errno_value > 0 ? e->errno_value : EIO);
        return -nsm_error_code_to_errno(e->code);
}
