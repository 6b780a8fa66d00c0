/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.freedesktop.LogControl1: LogLevel and LogTarget (read and written at run time),
 * SyslogIdentifier (read).
 *
 * Only root may change them, as in systemd's own services: the log is also the audit trail
 * (audit.c), and a user who could set LogTarget=null or LogLevel=emerg would erase the
 * record of what she does next. The sender is the uid the bus driver authenticated
 * (bus-creds.h), never anything the message says.
 */
#include <assert.h>
#include <errno.h>

#include "bus-creds.h"
#include "bus-errors.h"
#include "log-control.h"
#include "log.h"
#include "macros.h"

#define LOG_CONTROL_PATH "/org/freedesktop/LogControl1"
#define LOG_CONTROL_INTERFACE "org.freedesktop.LogControl1"

/* A new value, as root alone may write it: the sender is the uid the bus driver authenticated
 * ('creds': the owner's cache, the vtable's userdata). */
static int read_value_as_root(BusCreds *creds, sd_bus_message *value, sd_bus_error *error, const char **ret) {
        uid_t uid;
        int r;

        r = sd_bus_message_read(value, "s", ret);
        if (r < 0)
                return r;
        r = bus_creds_sender_uid(creds, value, &uid);
        if (r < 0)
                return r;
        if (uid != 0)
                return bus_error_setf(error, NSM_ERROR_ACCESS_DENIED,
                                      "Only root may change how nsmanagerd logs: the log is the audit trail.");
        return 0;
}

static int property_get_level(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", log_level_to_string(log_get_max_level()));
}

static int property_set_level(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *value, void *userdata, sd_bus_error *error) {
        const char *s;
        int level, r;

        r = read_value_as_root(userdata, value, error, &s);
        if (r < 0)
                return r;
        level = log_level_from_string(s);
        if (level < 0)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Invalid log level '%s': emerg, alert, crit, "
                                      "err, warning, notice, info or debug.", s);
        log_info("Log level set to '%s' by root.", s);
        log_set_max_level(level);
        return 0;
}

static int property_get_target(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", log_target_to_string(log_get_target()));
}

static int property_set_target(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *value, void *userdata, sd_bus_error *error) {
        LogTarget t;
        const char *s;
        int r;

        r = read_value_as_root(userdata, value, error, &s);
        if (r < 0)
                return r;
        t = log_target_from_string(s);
        if (t < 0)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS,
                                      "Invalid log target '%s': auto, console, console-prefixed, journal or null.", s);
        /* Said where it was going before it goes elsewhere, so the change is on record. */
        log_info("Log target set to '%s' by root.", s);
        log_set_target(t);
        log_target_resolve();
        return 0;
}

static int property_get_identifier(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", log_get_identifier());
}

static const sd_bus_vtable log_control_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_WRITABLE_PROPERTY("LogLevel", "s", property_get_level, property_set_level, 0, 0),
        SD_BUS_WRITABLE_PROPERTY("LogTarget", "s", property_get_target, property_set_target, 0, 0),
        SD_BUS_PROPERTY("SyslogIdentifier", "s", property_get_identifier, 0, 0),
        SD_BUS_VTABLE_END,
};

int log_control_add(sd_bus *bus, BusCreds *creds) {
        int r;

        assert(creds);   /* without it, each Set would ask the bus on the loop, uncached */
        r = sd_bus_add_object_vtable(bus, NULL, LOG_CONTROL_PATH, LOG_CONTROL_INTERFACE, log_control_vtable, creds);
        if (r < 0)
                return log_error_errno(r, "Failed to add the LogControl1 object: %m");
        return 0;
}
