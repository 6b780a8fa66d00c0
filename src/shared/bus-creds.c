/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>

#include "bus-creds.h"
#include "bus-util.h"
#include "hashmap.h"
#include "macros.h"

/* A storm of short connections (1,000 logins) must not grow it without bound: past this it is
 * emptied, which costs one lookup each for the connections still around. */
#define BUS_CREDS_CACHE_MAX 8192

typedef struct SenderCreds {
        char *name;              /* the key */
        uid_t uid;
        pid_t pid;
} SenderCreds;

static Hashmap *cache = NULL;
static sd_bus_slot *cache_match = NULL;

static void sender_creds_free(SenderCreds *c) {
        if (!c)
                return;
        free(c->name);
        free(c);
}

static void bus_creds_cache_flush(void) {
        SenderCreds *c;
        size_t i = 0;

        if (!cache)
                return;
        /* hashmap_free() does not look at keys: the values (which own them) can go first. */
        while (hashmap_iterate(cache, &i, (void **) &c, NULL))
                sender_creds_free(c);
        hashmap_free(cache);
        cache = hashmap_new();
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name, *old_owner, *new_owner;
        SenderCreds *c;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (name[0] != ':' || new_owner[0])
                return 0;
        c = hashmap_remove(cache, name);
        sender_creds_free(c);
        return 0;
}

int bus_creds_cache_attach(sd_bus *bus) {
        int r;

        if (!cache) {
                cache = hashmap_new();
                if (!cache)
                        return -ENOMEM;
        }
        if (cache_match)
                return 0;
        r = sd_bus_match_signal_async(bus, &cache_match, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                      "org.freedesktop.DBus", "NameOwnerChanged", on_name_owner_changed, NULL, NULL);
        if (r < 0)
                return r;
        /* The slot belongs to the bus: it goes when the bus does. */
        return sd_bus_slot_set_floating(cache_match, true);
}

typedef struct DriverCreds {
        uint32_t uid, pid;
        bool have_uid, have_pid;
} DriverCreds;

static int read_driver_creds(sd_bus_message *m, const char *key, void *userdata) {
        DriverCreds *c = userdata;
        int r;

        if (streq(key, "UnixUserID")) {
                r = sd_bus_message_read(m, "v", "u", &c->uid);
                c->have_uid = r >= 0;
        } else if (streq(key, "ProcessID")) {
                r = sd_bus_message_read(m, "v", "u", &c->pid);
                c->have_pid = r >= 0;
        } else
                return 0;
        return r < 0 ? r : 1;
}

static int query_creds(sd_bus *bus, const char *sender, SenderCreds *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        DriverCreds c = {};
        int r;

        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetConnectionCredentials", NULL, &reply, "s", sender);
        if (r < 0)
                return r;
        r = bus_message_read_dict(reply, read_driver_creds, &c);
        if (r < 0)
                return r;
        if (!c.have_uid)
                return -ENODATA;
        *ret = (SenderCreds) { .uid = (uid_t) c.uid, .pid = c.have_pid ? (pid_t) c.pid : 0 };
        return 0;
}

/* A direct connection (no bus driver): the peer is whoever connected, as the socket says
 * (SO_PEERCRED, taken at connect time: still known after the peer hung up). */
static int peer_creds(sd_bus *bus, SenderCreds *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid;
        pid_t pid = 0;
        int r;

        r = sd_bus_get_owner_creds(bus, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID, &creds);
        if (r < 0)
                return r;
        r = sd_bus_creds_get_euid(creds, &uid);
        if (r < 0)
                return r;
        (void) sd_bus_creds_get_pid(creds, &pid);
        *ret = (SenderCreds) { .uid = uid, .pid = pid };
        return 0;
}

static int sender_creds(sd_bus_message *m, SenderCreds *ret) {
        const char *sender = sd_bus_message_get_sender(m);
        SenderCreds *c, q;
        int r;

        if (sd_bus_is_bus_client(sd_bus_message_get_bus(m)) == 0)
                return peer_creds(sd_bus_message_get_bus(m), ret);
        if (!sender)
                return -EBADMSG;
        c = cache ? hashmap_get(cache, sender) : NULL;
        if (c) {
                *ret = *c;
                return 0;
        }
        r = query_creds(sd_bus_message_get_bus(m), sender, &q);
        if (r < 0)
                return r;
        *ret = q;
        if (!cache || !cache_match)
                return 0;
        if (hashmap_size(cache) >= BUS_CREDS_CACHE_MAX)
                bus_creds_cache_flush();
        c = calloc(1, sizeof(SenderCreds));
        if (!c)
                return 0;
        *c = q;
        c->name = strdup(sender);
        if (!c->name || hashmap_put(cache, c->name, c) < 0)
                sender_creds_free(c);
        return 0;
}

int bus_message_get_sender_uid(sd_bus_message *m, uid_t *ret) {
        SenderCreds c;
        int r = sender_creds(m, &c);
        if (r < 0)
                return r;
        *ret = c.uid;
        return 0;
}

int bus_message_get_sender_pid(sd_bus_message *m, pid_t *ret) {
        SenderCreds c;
        int r = sender_creds(m, &c);
        if (r < 0)
                return r;
        if (c.pid <= 0)
                return -ENODATA;
        *ret = c.pid;
        return 0;
}
