/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>

#include "bus-errors.h"
#include "text-escape.h"

int bus_error_add_map(void) {
        /* Made from the table once; sd-bus keeps the pointer for the life of the process. */
        static sd_bus_error_map map[_NSM_ERROR_CODE_MAX + 1];
        size_t n = 0;

        if (!map[0].name) {
                for (NsmErrorCode c = 0; c < _NSM_ERROR_CODE_MAX; c++)
                        if (nsm_error_code_to_name(c))
                                map[n++] = (sd_bus_error_map) SD_BUS_ERROR_MAP(nsm_error_code_to_name(c),
                                                                               nsm_error_code_to_errno(c));
                map[n] = (sd_bus_error_map) SD_BUS_ERROR_MAP_END;
        }
        return sd_bus_error_add_map(map);
}

int bus_error_set_nsm(sd_bus_error *error, const NsmError *e) {
        _cleanup_free_ char *message = NULL;

        if (!nsm_error_is_set(e))
                return sd_bus_error_set_errnof(error, EIO, "A failure without a name (a bug of nsmanagerd).");
        /* The sentence may quote a user's path or a process's comm: escaped (text-escape.h), or
         * the bus refuses a reply that is not UTF-8 and the caller gets no answer at all. */
        message = text_escape(nsm_error_message(e));
        if (!message)
                return sd_bus_error_set_errno(error, ENOMEM);
        if (e->code == NSM_ERROR_SYSTEM)
                return sd_bus_error_set_errnof(error, e->errno_value > 0 ? e->errno_value : EIO, "%s", message);
        return sd_bus_error_set(error, nsm_error_code_to_name(e->code), message);
}

_printf_(4, 0)
static int bus_error_setfv(sd_bus_error *error, NsmErrorCode code, int r, const char *fmt, va_list ap) {
        NsmError e = {};
        int k;

        (void) nsm_error_setfv(&e, code, r, fmt, ap);
        k = bus_error_set_nsm(error, &e);
        nsm_error_done(&e);
        return k;
}

int bus_error_setf(sd_bus_error *error, NsmErrorCode code, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = bus_error_setfv(error, code, 0, fmt, ap);
        va_end(ap);
        return r;
}

int bus_error_set_errnof(sd_bus_error *error, int r, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = bus_error_setfv(error, NSM_ERROR_SYSTEM, r, fmt, ap);
        va_end(ap);
        return k;
}

int bus_reply_method_errorf(sd_bus_message *call, NsmErrorCode code, const char *fmt, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;

        va_start(ap, fmt);
        (void) bus_error_setfv(&error, code, 0, fmt, ap);
        va_end(ap);
        return sd_bus_reply_method_error(call, &error);
}

NsmErrorCode bus_error_code(const sd_bus_error *error) {
        NsmErrorCode c;

        if (!sd_bus_error_is_set(error))
                return _NSM_ERROR_CODE_INVALID;
        c = nsm_error_code_from_name(error->name);
        if (c >= 0)
                return c;
        /* What sd-bus names after an errno: its own standard names and System.Error.E… */
        if (strncmp(error->name, "System.Error.", strlen("System.Error.")) == 0 ||
            strncmp(error->name, "org.freedesktop.DBus.Error.", strlen("org.freedesktop.DBus.Error.")) == 0)
                return NSM_ERROR_SYSTEM;
        return _NSM_ERROR_CODE_INVALID;
}

int nsm_error_from_bus(NsmError *e, const sd_bus_error *error) {
        _cleanup_free_ char *message = NULL;
        NsmErrorCode code = bus_error_code(error);

        if (code < 0)
                return nsm_error_set_errnof(e, -EPROTO, "A helper process answered with an unknown error: %s",
                                      error && error->name ? error->name : "(none)");
        if (error->message && text_unescape(error->message, &message) < 0)
                message = NULL;
        return nsm_error_set(e, code, code == NSM_ERROR_SYSTEM ? sd_bus_error_get_errno(error) : 0,
                             message ?: error->message);
}
