/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "macros.h"
#include "mount-entry.h"

/* Which daemon nsctl talks to */
typedef enum BusTransport {
        BUS_TRANSPORT_LOCAL,   /* this machine's system bus */
        BUS_TRANSPORT_REMOTE,  /* --host: another machine's, over ssh */
        BUS_TRANSPORT_MACHINE, /* --machine: a local container's */
} BusTransport;

/* How nsctl reaches the daemon and whether polkit may ask for a password: set from the
 * command line before the first call. */
typedef struct BusSettings {
        BusTransport transport;
        const char *host;              /* --host or --machine */
        int ask_password_mode;         /* --ask-password (1), --no-ask-password (0), or neither (-1) */
        bool ask_password;             /* resolved from ask_password_mode by main() */
} BusSettings;

extern BusSettings arg_bus;

/* A failed call, as one line on stderr (the shared logger, log.h, prints plain lines for
 * nsctl): the daemon's message if it gave one, else the context and the errno text. Returns
 * r, negative, so a verb can "return bus_log_error(...)"; main() maps any negative return to
 * exit status 1. */
int bus_log_error(const sd_bus_error *error, int r, const char *fmt, ...) _printf_(3, 4);

/* sd-bus.h provides sd_bus_message_unrefp() and friends for _cleanup_(). */

/* The system bus of this machine, of --host or of --machine. */
int bus_connect(sd_bus **ret);

/* Calls a method of the Manager object; 'usec' 0 = the default timeout; 'types' NULL: no
 * arguments. */
int manager_call(sd_bus *bus, const char *member, uint64_t usec, sd_bus_error *error,
                 sd_bus_message **ret_reply, const char *types, ...);
int manager_callv(sd_bus *bus, const char *member, uint64_t usec, sd_bus_error *error,
                  sd_bus_message **ret_reply, const char *types, va_list ap);

typedef struct NamespaceInfo {
        char *user;
        uint32_t uid;
        uint32_t gid;
        char *state;
        char *object;
        char *root;
        char **sessions;
        bool linger;
        uint64_t mntns_id;
        uint64_t timestamp;
        uint32_t n_mounts;
} NamespaceInfo;

void namespace_info_done(NamespaceInfo *i);
void namespace_info_array_free(NamespaceInfo *a, size_t n);

/* ListNamespaces(): one entry per namespace, sorted by user (as the daemon sorts them).
 * With 'properties' each entry is completed from the object's properties. */
int list_namespaces(sd_bus *bus, bool properties, NamespaceInfo **ret, size_t *ret_n);
/* GetNamespace(user) + properties. Refusals are reported and returned negative. */
int get_namespace(sd_bus *bus, const char *user, NamespaceInfo *ret);

/* The user of the namespace of UID 'uid' (GetNamespaceByUID, then its Name): for a UID given
 * where nsctl cannot ask NSS (the daemon of another machine). Errors are reported. */
int namespace_name_by_uid(sd_bus *bus, uid_t uid, char **ret);
/* GetMounts(user), user "" = host: one MountEntry (mount-entry.h) per mount, in the daemon's
 * order. The error is left in 'error' and not printed. */
int get_mounts(sd_bus *bus, const char *user, sd_bus_error *error, MountEntry **ret, size_t *ret_n);
/* GetMountsEx: ids those of MountsChanged, 'dev' the block device (major << 32 | minor, 0 for
 * none), 'origin' set. */
int get_mounts_ex(sd_bus *bus, const char *user, sd_bus_error *error, MountEntry **ret, size_t *ret_n);

/* Spawns pkttyagent for the duration of a call that may ask for authorization, when stdin is
 * a terminal and --no-ask-password was not given. */
void polkit_agent_open_if_enabled(void);
void polkit_agent_close(void);
