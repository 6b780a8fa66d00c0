/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "nsm-error.h"

#define NSM_BUS_NAME "org.example.NSManager"
#define NSM_MANAGER_PATH "/org/example/NSManager"
#define NSM_MANAGER_INTERFACE "org.example.NSManager.Manager"
#define NSM_NAMESPACE_INTERFACE "org.example.NSManager.Namespace"
#define NSM_NAMESPACE_PATH_PREFIX "/org/example/NSManager/user"

/* nsmanagerd's private socket: the same objects and methods as on the system bus, for root
 * only (mode 0600), without dbus-daemon in between — root's logins (pam_nsmanager) try it
 * first, as systemctl does with /run/systemd/private. */
#define NSM_PRIVATE_SOCKET "/run/nsmanager/private"

/* The project's errors as D-Bus errors: the table of nsm-error.h, both ways. */

/* Registers the table with sd_bus_error_add_map() (nsctl): sd_bus_error_get_errno() then gives
 * each name the table's errno. Once per process; never from a module that may be unloaded
 * (the PAM module): libsystemd would keep a pointer into it. */
int bus_error_add_map(void);

/* The reply's error, from the result of the code that knew what went wrong: its name from the
 * table (NSM_ERROR_SYSTEM: sd-bus's for its errno) and its sentence, in one sd_bus_error_set().
 * Returns a negative errno, as sd_bus_error_set() does. */
int bus_error_set_nsm(sd_bus_error *error, const NsmError *e);
/* The same for a refusal the bus glue itself knows (an argument that does not validate). */
int bus_error_setf(sd_bus_error *error, NsmErrorCode code, const char *fmt, ...) _printf_(3, 4);
/* The same for a system call of the bus glue that failed with 'r' ("%m": r's text). */
int bus_error_set_errnof(sd_bus_error *error, int r, const char *fmt, ...) _printf_(3, 4);
/* Replies to 'call' with the error 'code' and the sentence (where no handler returns it). */
int bus_reply_method_errorf(sd_bus_message *call, NsmErrorCode code, const char *fmt, ...) _printf_(3, 4);

/* The other way, for clients: the code of the error's name, NSM_ERROR_SYSTEM for a name sd-bus
 * makes from an errno, -EINVAL for any other (another service's). */
NsmErrorCode bus_error_code(const sd_bus_error *error);

/* The failure a process of the daemon answered with (bus_error_set_nsm() on its side) into 'e':
 * the code of its name (another name: EPROTO, the process broke the protocol), its errno for
 * NSM_ERROR_SYSTEM, and its sentence unescaped again, so that the reply the daemon makes of it
 * carries the child's text. Returns e's negative errno. */
int nsm_error_from_bus(NsmError *e, const sd_bus_error *error);

/* Flags of the Manager methods */
#define NSM_PROPAGATION_RECURSIVE UINT64_C(0x1)
#define NSM_BIND_READ_ONLY UINT64_C(0x1)
#define NSM_BIND_MKDIR UINT64_C(0x2)
#define NSM_UNMOUNT_DETACH UINT64_C(0x1)
#define NSM_EJECT_LAZY UINT64_C(0x1)
