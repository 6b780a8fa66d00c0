/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#define NSM_BUS_NAME "org.example.NSManager"
#define NSM_MANAGER_PATH "/org/example/NSManager"
#define NSM_MANAGER_INTERFACE "org.example.NSManager.Manager"
#define NSM_NAMESPACE_INTERFACE "org.example.NSManager.Namespace"
#define NSM_NAMESPACE_PATH_PREFIX "/org/example/NSManager/user"

/* nsmanagerd's private socket: the same objects and methods as on the system bus, for root
 * only (mode 0600), without dbus-daemon in between — root's logins (pam_nsmanager) try it
 * first, as systemctl does with /run/systemd/private. */
#define NSM_PRIVATE_SOCKET "/run/nsmanager/private"

#define NSM_ERROR_NO_SUCH_USER "org.example.NSManager.Error.NoSuchUser"
#define NSM_ERROR_NO_SUCH_NAMESPACE "org.example.NSManager.Error.NoSuchNamespace"
#define NSM_ERROR_NO_SUCH_SESSION "org.example.NSManager.Error.NoSuchSession"
#define NSM_ERROR_USER_EXCLUDED "org.example.NSManager.Error.UserExcluded"
#define NSM_ERROR_INVALID_PATH "org.example.NSManager.Error.InvalidPath"
#define NSM_ERROR_INVALID_MODE "org.example.NSManager.Error.InvalidMode"
#define NSM_ERROR_BUSY "org.example.NSManager.Error.Busy"
#define NSM_ERROR_TIMED_OUT "org.example.NSManager.Error.TimedOut"
#define NSM_ERROR_LIMIT_EXCEEDED "org.example.NSManager.Error.LimitExceeded"

/* Maps our named errors to errno values, so clients (nsctl, the PAM module) can act on
 * sd_bus_error_get_errno(). Register with sd_bus_error_add_map(). */
extern const sd_bus_error_map nsm_bus_error_map[];

/* Flags of the Manager methods */
#define NSM_PROPAGATION_RECURSIVE UINT64_C(0x1)
#define NSM_BIND_READ_ONLY UINT64_C(0x1)
#define NSM_BIND_MKDIR UINT64_C(0x2)
#define NSM_UNMOUNT_DETACH UINT64_C(0x1)
#define NSM_EJECT_LAZY UINT64_C(0x1)
