/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bus-creds.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "hashmap.h"
#include "log.h"
#include "macros.h"

/* A storm of short connections (1,000 logins) must not grow it without bound: past this it is
 * emptied, which costs one lookup each for the connections still around. */
#define BUS_CREDS_CACHE_MAX 8192

typedef struct SenderCreds {
        char *name;              /* the key */
        uid_t uid;
        pid_t pid;
} SenderCreds;


/* Calls of a sender the cache does not know yet wait here, in order of arrival, while the bus
 * driver is asked who the sender is, asynchronously: a synchronous question would stop the
 * event loop, and with it every login on the private socket, for as long as dbus-daemon takes
 * to answer (sd-bus waits 25 s). Once answered they go back into the read queue
 * (sd_bus_enqueue_for_read, as a polkit check does) and meet the cache. A call of the same
 * sender that arrives meanwhile goes behind them, so that each sender's calls keep their order. */
typedef struct HeldSender {
        BusCreds *owner;
        char *name;                     /* the key */
        sd_bus_slot *query;             /* GetConnectionCredentials in flight; NULL once answered */
        sd_bus_message **calls;         /* held, in order; once answered, calls[next..n) are queued again */
        size_t n, next;
} HeldSender;

/* A unique name watched until it leaves the bus (bus_creds_watch_name()). */
struct BusNameWatch {
        BusCreds *owner;                /* NULL once fired, or once the BusCreds is gone */
        char *name;                     /* the key */
        BusNameGoneFunc on_gone;
        void *userdata;
        sd_bus_slot *check;             /* GetNameOwner: the name had not left already */
};

struct BusCreds {
        Hashmap *cache;                 /* unique name → SenderCreds */
        Hashmap *held;                  /* unique name → HeldSender */
        Hashmap *watches;               /* unique name → BusNameWatch */
        sd_bus_slot *match;             /* NameOwnerChanged: a connection gone */
        sd_bus_slot *filter;            /* every incoming message */
        char *followed;                 /* the well-known name whose owner is kept */
        char *followed_owner;           /* its unique name, NULL while unowned or not known yet */
        sd_bus_slot *followed_query;    /* GetNameOwner, once */
};

static void sender_creds_free(SenderCreds *c) {
        if (!c)
                return;
        free(c->name);
        free(c);
}

/* Every entry dropped; the map stays (NULL only if it could not be made again). */
static void bus_creds_drop_cache(BusCreds *b) {
        HashmapIterator i = {};
        SenderCreds *c;

        if (!b->cache)
                return;
        /* hashmap_free() does not look at keys: the values (which own them) can go first. */
        while (hashmap_iterate(b->cache, &i, (void **) &c, NULL))
                sender_creds_free(c);
        b->cache = hashmap_free(b->cache);
}

static void bus_creds_flush(BusCreds *b) {
        bus_creds_drop_cache(b);
        b->cache = hashmap_new();
}

/* The watch leaves the map and its owner, then its owner's callback runs (which may free it). */
static void name_watch_fire(BusNameWatch *w) {
        (void) hashmap_remove(w->owner->watches, w->name);
        w->owner = NULL;
        w->check = sd_bus_slot_unref(w->check);
        w->on_gone(w->userdata);
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusCreds *b = userdata;
        const char *name, *old_owner, *new_owner;
        BusNameWatch *w;
        SenderCreds *c;

        /* The bus driver's alone: sd-bus cannot check a match's sender='NAME' for a well-known
         * name, and lets through what any peer sends straight to us. */
        if (!streq_ptr(sd_bus_message_get_sender(m), "org.freedesktop.DBus"))
                return 0;
        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (b->followed && streq(name, b->followed)) {
                free(b->followed_owner);
                /* (An answer of GetNameOwner still to come is newer, and overrides this.) */
                b->followed_owner = new_owner[0] ? strdup(new_owner) : NULL;
        }
        if (name[0] != ':' || new_owner[0])
                return 0;
        c = hashmap_remove(b->cache, name);
        sender_creds_free(c);
        w = hashmap_get(b->watches, name);
        if (w)
                name_watch_fire(w);
        return 0;
}

/* The match is the daemon's one view of names leaving: refused, it is logged, never the end
 * of the connection (sd-bus closes it when an AddMatch without install callback fails). The
 * cache then only misses the chance to forget; watches fire at their GetNameOwner check. */
static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (e)
                log_error("The bus refused to tell us of connections that leave (%s: %s); subscribers that leave "
                          "are noticed no more.", e->name, e->message ?: "");
        return 0;
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

static int creds_from_reply(sd_bus_message *reply, SenderCreds *ret) {
        DriverCreds c = {};
        int r;

        r = bus_message_read_dict(reply, read_driver_creds, &c);
        if (r < 0)
                return r;
        if (!c.have_uid)
                return -ENODATA;
        *ret = (SenderCreds) { .uid = (uid_t) c.uid, .pid = c.have_pid ? (pid_t) c.pid : 0 };
        return 0;
}

static int query_creds(sd_bus *bus, const char *sender, SenderCreds *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetConnectionCredentials", NULL, &reply, "s", sender);
        if (r < 0)
                return r;
        return creds_from_reply(reply, ret);
}

/* Best effort: without an entry the next call asks again. */
static void cache_put(BusCreds *b, const char *sender, const SenderCreds *q) {
        SenderCreds *c;

        if (!b || !b->cache)
                return;
        if (hashmap_size(b->cache) >= BUS_CREDS_CACHE_MAX)
                bus_creds_flush(b);
        c = calloc(1, sizeof(SenderCreds));
        if (!c)
                return;
        *c = *q;
        c->name = strdup(sender);
        if (!c->name || !b->cache || hashmap_put(b->cache, c->name, c) < 0)
                sender_creds_free(c);
}

static void held_sender_free(HeldSender *h) {
        if (!h)
                return;
        (void) hashmap_remove(h->owner->held, h->name);
        sd_bus_slot_unref(h->query);
        for (size_t i = h->next; i < h->n; i++)
                sd_bus_message_unref(h->calls[i]);
        free(h->calls);
        free(h->name);
        free(h);
}

static int held_sender_add(HeldSender *h, sd_bus_message *m) {
        sd_bus_message **calls;

        calls = reallocarray(h->calls, h->n + 1, sizeof(sd_bus_message *));
        if (!calls)
                return -ENOMEM;
        h->calls = calls;
        h->calls[h->n++] = sd_bus_message_ref(m);
        return 0;
}

/* Back into the read queue; one that cannot go is answered here rather than left hanging. */
static int held_sender_requeue(HeldSender *h, sd_bus_message *m) {
        int r;

        /* Held first, queued then: a call queued but not held would be answered here and again
         * when it is dispatched. */
        r = held_sender_add(h, m);
        if (r >= 0) {
                r = sd_bus_enqueue_for_read(sd_bus_message_get_bus(m), m);
                if (r < 0)
                        sd_bus_message_unref(h->calls[--h->n]);
        }
        if (r < 0)
                (void) bus_reply_method_errorf(m, NSM_ERROR_ACCESS_DENIED, "Cannot determine the caller: %s",
                                               strerror(-r));
        return r;
}

static int on_creds_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        HeldSender *h = userdata;
        _cleanup_free_ sd_bus_message **calls = TAKE_PTR(h->calls);
        size_t n = h->n;
        SenderCreds q;
        int r;

        h->query = sd_bus_slot_unref(h->query);
        h->n = h->next = 0;
        r = sd_bus_message_is_method_error(reply, NULL) ? -sd_bus_message_get_errno(reply) : creds_from_reply(reply, &q);
        if (r == 0)
                cache_put(h->owner, h->name, &q);
        for (size_t i = 0; i < n; i++) {
                if (r < 0)
                        (void) bus_reply_method_errorf(calls[i], NSM_ERROR_ACCESS_DENIED,
                                                       "Cannot determine the caller: %s", strerror(-r ?: EIO));
                else
                        (void) held_sender_requeue(h, calls[i]);
                sd_bus_message_unref(calls[i]);
        }
        if (h->next == h->n)
                held_sender_free(h);
        return 0;
}

static int held_sender_new(BusCreds *b, sd_bus *bus, const char *sender, HeldSender **ret) {
        HeldSender *h;
        int r;

        h = calloc(1, sizeof(HeldSender));
        if (!h)
                return -ENOMEM;
        h->owner = b;
        h->name = strdup(sender);
        if (!h->name || hashmap_put(b->held, h->name, h) < 0) {
                free(h->name);
                free(h);
                return -ENOMEM;
        }
        r = sd_bus_call_method_async(bus, &h->query, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetConnectionCredentials", on_creds_reply, h, "s", sender);
        if (r < 0) {
                held_sender_free(h);
                return r;
        }
        *ret = h;
        return 0;
}

/* Every incoming message, before its handler. The bus's standard interfaces (Peer,
 * Introspectable, Properties) never ask who called, so they are not held. */
static int on_incoming(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BusCreds *b = userdata;
        const char *sender = sd_bus_message_get_sender(m), *interface = sd_bus_message_get_interface(m);
        HeldSender *h;
        int r;

        if (!sd_bus_message_is_method_call(m, NULL, NULL) || !sender || sender[0] != ':' ||
            (interface && strncmp(interface, "org.freedesktop.DBus.", strlen("org.freedesktop.DBus.")) == 0))
                return 0;
        h = hashmap_get(b->held, sender);
        if (!h) {
                if (hashmap_get(b->cache, sender))
                        return 0;
                /* If the question cannot even be sent, the handler asks synchronously, as it
                 * does for whatever is not in the cache. */
                if (held_sender_new(b, sd_bus_message_get_bus(m), sender, &h) < 0)
                        return 0;
        } else if (!h->query && h->next < h->n && h->calls[h->next] == m) {
                /* Its turn: the sender is known now. */
                sd_bus_message_unref(h->calls[h->next++]);
                if (h->next == h->n)
                        held_sender_free(h);
                return 0;
        }
        if (h->query)
                r = held_sender_add(h, m);
        else
                r = held_sender_requeue(h, m);
        if (r < 0 && h->query)
                (void) bus_reply_method_errorf(m, NSM_ERROR_ACCESS_DENIED, "Cannot determine the caller: %s",
                                               strerror(-r));
        return 1;
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

static int sender_creds(BusCreds *b, sd_bus_message *m, SenderCreds *ret) {
        const char *sender = sd_bus_message_get_sender(m);
        SenderCreds *c, q;
        int r;

        if (sd_bus_is_bus_client(sd_bus_message_get_bus(m)) == 0)
                return peer_creds(sd_bus_message_get_bus(m), ret);
        if (!sender)
                return -EBADMSG;
        c = b && b->cache ? hashmap_get(b->cache, sender) : NULL;
        if (c) {
                *ret = *c;
                return 0;
        }
        r = query_creds(sd_bus_message_get_bus(m), sender, &q);
        if (r < 0)
                return r;
        *ret = q;
        cache_put(b, sender, &q);
        return 0;
}

int bus_creds_sender_uid(BusCreds *b, sd_bus_message *m, uid_t *ret) {
        SenderCreds c;
        int r = sender_creds(b, m, &c);
        if (r < 0)
                return r;
        *ret = c.uid;
        return 0;
}

int bus_creds_sender_pid(BusCreds *b, sd_bus_message *m, pid_t *ret) {
        SenderCreds c;
        int r = sender_creds(b, m, &c);
        if (r < 0)
                return r;
        if (c.pid <= 0)
                return -ENODATA;
        *ret = c.pid;
        return 0;
}

int bus_creds_new(sd_bus *bus, BusCreds **ret) {
        BusCreds *b;
        int r;

        b = calloc(1, sizeof(BusCreds));
        if (!b)
                return -ENOMEM;
        b->cache = hashmap_new();
        b->held = hashmap_new();
        b->watches = hashmap_new();
        if (!b->cache || !b->held || !b->watches) {
                bus_creds_free(b);
                return -ENOMEM;
        }
        r = sd_bus_match_signal_async(bus, &b->match, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                      "org.freedesktop.DBus", "NameOwnerChanged", on_name_owner_changed, on_match_installed, b);
        if (r >= 0)
                r = sd_bus_add_filter(bus, &b->filter, on_incoming, b);
        if (r < 0) {
                bus_creds_free(b);
                return r;
        }
        *ret = b;
        return 0;
}

BusCreds *bus_creds_free(BusCreds *b) {
        HashmapIterator i = {};
        BusNameWatch *w;
        HeldSender *h;

        if (!b)
                return NULL;
        while (b->held && hashmap_iterate(b->held, &i, (void **) &h, NULL)) {
                held_sender_free(h);
                i = (HashmapIterator) {};
        }
        hashmap_free(b->held);
        /* The watches are their owners' to free: they only forget us. */
        i = (HashmapIterator) {};
        while (b->watches && hashmap_iterate(b->watches, &i, (void **) &w, NULL)) {
                w->owner = NULL;
                w->check = sd_bus_slot_unref(w->check);
        }
        hashmap_free(b->watches);
        b->filter = sd_bus_slot_unref(b->filter);
        b->match = sd_bus_slot_unref(b->match);
        b->followed_query = sd_bus_slot_unref(b->followed_query);
        free(b->followed);
        free(b->followed_owner);
        bus_creds_drop_cache(b);
        free(b);
        return NULL;
}

static int on_followed_owner(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusCreds *b = userdata;
        const char *owner = NULL;

        b->followed_query = sd_bus_slot_unref(b->followed_query);
        free(b->followed_owner);
        b->followed_owner = NULL;
        /* An error is NameHasNoOwner: nobody owns it yet; NameOwnerChanged says when one does. */
        if (!sd_bus_message_is_method_error(reply, NULL) && sd_bus_message_read(reply, "s", &owner) >= 0 &&
            !(b->followed_owner = strdup(owner)))
                return log_oom();
        return 0;
}

int bus_creds_follow_owner(BusCreds *b, sd_bus *bus, const char *name) {
        if (!b)
                return -EINVAL;
        if (b->followed)
                return streq(b->followed, name) ? 0 : -EBUSY;
        b->followed = strdup(name);
        if (!b->followed)
                return -ENOMEM;
        /* Asked after the NameOwnerChanged match was added: the answer and the signals come in
         * the bus's order, each newer than the one before. */
        return sd_bus_call_method_async(bus, &b->followed_query, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus", "GetNameOwner", on_followed_owner, b, "s", name);
}

bool bus_creds_sent_by(BusCreds *b, sd_bus_message *m, const char *name) {
        const char *sender = sd_bus_message_get_sender(m);

        return b && b->followed && streq(b->followed, name) && b->followed_owner && sender &&
               streq(sender, b->followed_owner);
}

static int on_name_owner(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BusNameWatch *w = userdata;

        w->check = sd_bus_slot_unref(w->check);
        if (sd_bus_message_is_method_error(reply, NULL))
                name_watch_fire(w);          /* NameHasNoOwner: it left before we watched */
        return 0;
}

int bus_creds_watch_name(BusCreds *b, sd_bus *bus, const char *name, BusNameGoneFunc on_gone, void *userdata,
                         BusNameWatch **ret) {
        BusNameWatch *w;
        int r;

        if (!b || name[0] != ':')
                return -EINVAL;
        w = calloc(1, sizeof(BusNameWatch));
        if (!w)
                return -ENOMEM;
        *w = (BusNameWatch) { .owner = b, .on_gone = on_gone, .userdata = userdata, .name = strdup(name) };
        if (!w->name) {
                free(w);
                return -ENOMEM;
        }
        r = hashmap_put(b->watches, w->name, w);
        if (r < 0) {
                w->owner = NULL;
                bus_name_watch_free(w);
                return r;
        }
        /* In the cache, the name's NameOwnerChanged has not been dispatched yet (it empties the
         * entry, and a unique name never comes back): it will be. Otherwise (a full cache was
         * emptied) the bus says whether it is still there; its answer and the signal come in
         * the bus's order. */
        if (!hashmap_get(b->cache, name)) {
                r = sd_bus_call_method_async(bus, &w->check, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                             "org.freedesktop.DBus", "GetNameOwner", on_name_owner, w, "s", name);
                if (r < 0) {
                        bus_name_watch_free(w);
                        return r;
                }
        }
        *ret = w;
        return 0;
}

BusNameWatch *bus_name_watch_free(BusNameWatch *w) {
        if (!w)
                return NULL;
        if (w->owner)
                (void) hashmap_remove(w->owner->watches, w->name);
        sd_bus_slot_unref(w->check);
        free(w->name);
        free(w);
        return NULL;
}
