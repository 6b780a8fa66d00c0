/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "manager-config.h"
#include "hashmap.h"
#include "user-util.h"

typedef struct Namespace Namespace;
typedef struct PolkitRegistry PolkitRegistry;
typedef struct AttachProcess AttachProcess;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        PolkitRegistry *polkit_registry;

        const char *version;     /* the Version property */
        char *config_file;       /* --config=FILE, or NULL for the standard files */
        ManagerConfig config;

        Hashmap *namespaces;     /* user name → Namespace */
        Hashmap *namespaces_by_uid; /* uid (as decimal string) → Namespace */

        int registry_fd;         /* the "registry" mount namespace that holds the pins */
        int pin_cpu;             /* CPU on which namespace ids sort after the registry's, or -1 */

        AttachProcess *attach_processes; /* commands Attach() started that have not ended (attach.c) */
} Manager;

int manager_new(Manager **ret);
Manager *manager_free(Manager *m);
static inline void manager_freep(Manager **m) {
        if (*m)
                manager_free(*m);
}

int manager_startup(Manager *m);
/* On a clean exit: drops the registry when no namespace is left. */
void manager_shutdown(Manager *m);
int manager_load_config(Manager *m);

Namespace *manager_get_namespace(Manager *m, const char *user);
Namespace *manager_get_namespace_by_uid(Manager *m, uid_t uid);

/* Create (or return the existing) namespace of the user; resolves the user through NSS and
 * applies MinUID/ExcludeUsers. On refusal sets a named error in 'error'. */
int manager_create_namespace(Manager *m, const char *user, Namespace **ret, sd_bus_error *error);

/* Resolves and checks a user name: NoSuchUser, UserExcluded. */
int manager_check_user(Manager *m, const char *user, UserRecord *ret, sd_bus_error *error);

int manager_connect_bus(Manager *m);

/* Re-reads the configuration for namespaces created from now on (ReloadConfig(), SIGHUP).
 * On failure the old one stays and *ret_error (if given) says FILE:LINE: what. */
int manager_reload(Manager *m, char **ret_error);
/* Persists SharedSubtrees added at run time by ShareSubtree(""), so a restart keeps them. */
int manager_save_shared(Manager *m);
int manager_load_shared(Manager *m);
