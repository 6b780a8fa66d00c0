/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-creds.h"
#include "bus-path.h"
#include "bus-errors.h"
#include "bus-request.h"
#include "bus-util.h"
#include "eject.h"
#include "list.h"
#include "log.h"
#include "mount-events-dbus.h"
#include "mount-events-view.h"
#include "namespace-dbus.h"
#include "path-util.h"
#include "time-util.h"

/* One bus name and what it watches: everything, and views one by one. The name is watched
 * through the daemon's one NameOwnerChanged match (bus-creds.h), not a match rule per name:
 * subscribers never add to the daemon's match rules on the bus. */
typedef struct Subscriber Subscriber;
struct Subscriber {
        Manager *manager;
        char *name;
        uid_t uid;
        bool all;                /* Manager.Subscribe() */
        bool aggregate;          /* Manager.SubscribeViews() */
        bool counts;             /* Manager.SubscribeMountCounts() */
        Namespace **views;       /* references: Namespace.Subscribe() of each */
        size_t n_views;
        BusNameWatch *watch;     /* the name: when it leaves the bus, its watches end */
        Subscriber *prev, *next;
};

static Subscriber **subscribers(Manager *m) {
        return (Subscriber **) &m->mount_events->subscriptions;
}

/* What a subscription is of: one view, every view one signal each (Subscribe()), every view in
 * one signal (SubscribeViews()), every view's number of mounts (SubscribeMountCounts()). */
typedef enum SubscriptionKind {
        SUBSCRIPTION_VIEW,
        SUBSCRIPTION_ALL,
        SUBSCRIPTION_AGGREGATE,
        SUBSCRIPTION_COUNTS,
} SubscriptionKind;

static unsigned subscriber_count(const Subscriber *s) {
        return (unsigned) s->n_views + s->all + s->aggregate + s->counts;
}

static void aggregate_free(Manager *m);

/* unwatch: the watches end (false: the mount events go themselves, at exit). */
static Subscriber *subscriber_free(Subscriber *s, bool unwatch) {
        Manager *m = s->manager;

        if (m->mount_events)
                LIST_REMOVE(*subscribers(m), s);
        for (size_t i = 0; i < s->n_views; i++) {
                if (unwatch && m->mount_events)
                        mount_events_unwatch(m->mount_events, s->views[i]);
                namespace_unref(s->views[i]);
        }
        if (m->mount_events && s->all)
                m->mount_events->n_signal_all--;
        if (m->mount_events && s->aggregate)
                m->mount_events->n_aggregate--;
        if (unwatch && m->mount_events && s->all)
                mount_events_unwatch(m->mount_events, NULL);
        if (unwatch && m->mount_events && s->aggregate)
                mount_events_unwatch(m->mount_events, NULL);
        if (unwatch && m->mount_events && s->counts)
                mount_events_unwatch_counts(m->mount_events);
        free(s->views);
        s->watch = bus_name_watch_free(s->watch);
        free(s->name);
        free(s);
        return NULL;
}

static Subscriber *subscriber_find(Manager *m, const char *name) {
        for (Subscriber *s = *subscribers(m); s; s = s->next)
                if (streq(s->name, name))
                        return s;
        return NULL;
}

static bool subscriber_has(const Subscriber *s, SubscriptionKind kind, Namespace *ns) {
        if (kind == SUBSCRIPTION_ALL)
                return s->all;
        if (kind == SUBSCRIPTION_AGGREGATE)
                return s->aggregate;
        if (kind == SUBSCRIPTION_COUNTS)
                return s->counts;
        for (size_t i = 0; i < s->n_views; i++)
                if (s->views[i] == ns)
                        return true;
        return false;
}

static void subscriber_forget(Subscriber *s, SubscriptionKind kind, Namespace *ns) {
        MountEvents *e = s->manager->mount_events;

        if (kind == SUBSCRIPTION_ALL) {
                if (s->all && e)
                        e->n_signal_all--;
                s->all = false;
                return;
        }
        if (kind == SUBSCRIPTION_AGGREGATE) {
                if (s->aggregate && e)
                        e->n_aggregate--;
                s->aggregate = false;
                return;
        }
        if (kind == SUBSCRIPTION_COUNTS) {
                s->counts = false;
                return;
        }
        for (size_t i = 0; i < s->n_views; i++)
                if (s->views[i] == ns) {
                        namespace_unref(ns);
                        s->views[i] = s->views[--s->n_views];
                        return;
                }
}

static unsigned subscriptions_of(Manager *m, uid_t uid) {
        unsigned n = 0;
        for (Subscriber *s = *subscribers(m); s; s = s->next)
                if (s->uid == uid)
                        n += subscriber_count(s);
        return n;
}

static unsigned subscriptions_of_users(Manager *m) {
        unsigned n = 0;
        for (Subscriber *s = *subscribers(m); s; s = s->next)
                if (s->uid != 0)
                        n += subscriber_count(s);
        return n;
}

static void on_name_gone(void *userdata) {
        Subscriber *s = userdata;

        log_debug("Subscriber '%s' left the bus; its %u watches end.", s->name, subscriber_count(s));
        subscriber_free(s, true);
}

static void mount_events_dbus_namespace_gone(Namespace *ns, void *userdata) {
        Manager *m = userdata;

        if (!m->mount_events)
                return;
        /* The view's watch goes with the view: nothing to unwatch. */
        for (Subscriber *s = *subscribers(m), *next; s; s = next) {
                next = s->next;
                subscriber_forget(s, SUBSCRIPTION_VIEW, ns);
                if (subscriber_count(s) == 0)
                        subscriber_free(s, false);
        }
}

static void mount_events_dbus_free(void *userdata) {
        Manager *m = userdata;

        if (!m->mount_events)
                return;
        while (*subscribers(m))
                subscriber_free(*subscribers(m), false);
        aggregate_free(m);
}

/* ---- Subscribe(), Unsubscribe() ---- */

static void on_watch_ready(void *userdata) {
        bus_request_reply_result(userdata, NULL);
}

static int subscriber_new(Manager *m, sd_bus *bus, const char *name, uid_t uid, Subscriber **ret) {
        Subscriber *s = calloc(1, sizeof(Subscriber));
        int r;

        if (!s)
                return -ENOMEM;
        *s = (Subscriber) { .manager = m, .uid = uid, .name = strdup(name) };
        LIST_PREPEND(*subscribers(m), s);
        if (!s->name) {
                subscriber_free(s, false);
                return -ENOMEM;
        }
        r = bus_creds_watch_name(m->creds, bus, name, on_name_gone, s, &s->watch);
        if (r < 0) {
                subscriber_free(s, false);
                return r;
        }
        *ret = s;
        return 0;
}

static int subscribe(BusRequest *req, SubscriptionKind kind, Namespace *ns, sd_bus_error *error) {
        Manager *m = req->manager;
        sd_bus *bus = sd_bus_message_get_bus(req->message);
        const char *sender = sd_bus_message_get_sender(req->message);
        Subscriber *s;
        uid_t uid;
        int r;

        /* Signals go to bus names: the system bus's. (The private socket does not offer
         * Subscribe; this keeps it so if it ever serves more.) */
        if (!sender || bus != m->bus)
                return bus_error_setf(error, NSM_ERROR_NOT_SUPPORTED,
                                      "Subscribe() works on the system bus only: its signals go to bus names.");
        if (mount_events_mode(m->mount_events) == MOUNT_EVENTS_NONE)
                return bus_error_setf(error, NSM_ERROR_NOT_SUPPORTED,
                                      "This daemon sees no mount changes (MountEvents is \"none\").");
        r = bus_message_caller_uid(m, req->message, &uid, error);
        if (r < 0)
                return r;
        s = subscriber_find(m, sender);
        if (s && subscriber_has(s, kind, ns))
                return sd_bus_reply_method_return(req->message, NULL);
        r = bus_request_rate_limit(req, error);
        if (r < 0)
                return r;
        if (uid != 0 && subscriptions_of(m, uid) >= SUBSCRIPTIONS_PER_UID_MAX)
                return bus_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED,
                                      "uid %u has %u subscriptions already (SubscriptionsPerUID=%u); end one "
                                      "(Unsubscribe(), or close its bus connection).",
                                      (unsigned) uid, SUBSCRIPTIONS_PER_UID_MAX, SUBSCRIPTIONS_PER_UID_MAX);
        if (uid != 0 && subscriptions_of_users(m) >= SUBSCRIPTIONS_OF_USERS_MAX)
                return bus_error_setf(error, NSM_ERROR_LIMIT_EXCEEDED,
                                      "Users have %u subscriptions (SubscriptionsOfUsers=%u); try again once some "
                                      "have ended.", SUBSCRIPTIONS_OF_USERS_MAX, SUBSCRIPTIONS_OF_USERS_MAX);
        if (!s) {
                r = subscriber_new(m, bus, sender, uid, &s);
                if (r < 0)
                        return bus_error_set_errnof(error, r, "Failed to track the subscriber: %m");
        }
        if (kind == SUBSCRIPTION_VIEW) {
                Namespace **v = realloc(s->views, (s->n_views + 1) * sizeof(Namespace *));
                if (!v) {
                        if (subscriber_count(s) == 0)
                                subscriber_free(s, false);
                        return -ENOMEM;
                }
                s->views = v;
                v[s->n_views++] = namespace_ref(ns);
        } else if (kind == SUBSCRIPTION_ALL) {
                s->all = true;
                m->mount_events->n_signal_all++;
        } else if (kind == SUBSCRIPTION_AGGREGATE) {
                s->aggregate = true;
                m->mount_events->n_aggregate++;
        } else
                s->counts = true;

        /* Answered once the watched tables were read (or counted): whatever changes after the
         * answer is signalled. */
        r = kind == SUBSCRIPTION_COUNTS ? mount_events_watch_counts(m->mount_events, on_watch_ready, req)
                                        : mount_events_watch(m->mount_events, ns, on_watch_ready, req);
        if (r < 0) {
                subscriber_forget(s, kind, ns);
                if (subscriber_count(s) == 0)
                        subscriber_free(s, false);
                return bus_error_set_errnof(error, r, "Failed to watch the mounts of %s: %m",
                                            ns ? ns->name : "every view");
        }
        if (r > 0)
                return sd_bus_reply_method_return(req->message, NULL);
        bus_request_wait(req);
        return 1;
}

static int unsubscribe(sd_bus_message *message, Manager *m, SubscriptionKind kind, Namespace *ns) {
        const char *sender = sd_bus_message_get_sender(message);
        Subscriber *s = sender && m->mount_events ? subscriber_find(m, sender) : NULL;

        if (s && subscriber_has(s, kind, ns)) {
                subscriber_forget(s, kind, ns);
                if (kind == SUBSCRIPTION_COUNTS)
                        mount_events_unwatch_counts(m->mount_events);
                else
                        mount_events_unwatch(m->mount_events, ns);
                if (subscriber_count(s) == 0)
                        subscriber_free(s, false);
        }
        return sd_bus_reply_method_return(message, NULL);
}

static int manager_subscribe_step(BusRequest *req, sd_bus_error *error) {
        return subscribe(req, SUBSCRIPTION_ALL, NULL, error);
}

static int manager_subscribe_views_step(BusRequest *req, sd_bus_error *error) {
        return subscribe(req, SUBSCRIPTION_AGGREGATE, NULL, error);
}

static int method_manager_subscribe_views(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, manager_subscribe_views_step);
}

static int method_manager_unsubscribe_views(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return unsubscribe(message, userdata, SUBSCRIPTION_AGGREGATE, NULL);
}

static int manager_subscribe_counts_step(BusRequest *req, sd_bus_error *error) {
        return subscribe(req, SUBSCRIPTION_COUNTS, NULL, error);
}

static int method_manager_subscribe_counts(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, manager_subscribe_counts_step);
}

static int method_manager_unsubscribe_counts(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return unsubscribe(message, userdata, SUBSCRIPTION_COUNTS, NULL);
}

static int method_manager_subscribe(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, manager_subscribe_step);
}

static int method_manager_unsubscribe(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return unsubscribe(message, userdata, SUBSCRIPTION_ALL, NULL);
}

static int namespace_subscribe_step(BusRequest *req, sd_bus_error *error) {
        return subscribe(req, SUBSCRIPTION_VIEW, req->data, error);
}

static void unref_namespace(void *p) {
        namespace_unref(p);
}

static int method_namespace_subscribe(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        Manager *m = manager_of_namespace(ns);

        if (!m || !ns->ready)
                return bus_error_setf(error, NSM_ERROR_NO_SUCH_NAMESPACE, "The namespace of '%s' is gone.", ns->name);
        return bus_request_run_with(message, m, error, namespace_subscribe_step, namespace_ref(ns), unref_namespace);
}

static int method_namespace_unsubscribe(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        Namespace *ns = userdata;
        Manager *m = manager_of_namespace(ns);

        if (!m)
                return sd_bus_reply_method_return(message, NULL);
        return unsubscribe(message, m, SUBSCRIPTION_VIEW, ns);
}

/* ---- the signals ---- */

static void send_mounts_changed(Manager *m, Namespace *ns, const MountChange *attached, size_t n_attached,
                                const MountChange *detached, size_t n_detached) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (ns) {
                path = namespace_bus_path(ns);
                if (!path) {
                        log_oom();
                        return;
                }
        }
        r = sd_bus_message_new_signal(m->bus, &msg, ns ? path : NSM_MANAGER_PATH,
                                      ns ? NSM_NAMESPACE_INTERFACE : NSM_MANAGER_INTERFACE,
                                      ns ? "MountsChanged" : "HostMountsChanged");
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'a', "(tts)");
        for (size_t i = 0; r >= 0 && i < n_attached; i++) {
                r = sd_bus_message_open_container(msg, 'r', "tts");
                if (r >= 0)
                        r = sd_bus_message_append(msg, "tt", attached[i].id, attached[i].parent_id);
                if (r >= 0)
                        r = bus_message_append_text(msg, attached[i].path);
                if (r >= 0)
                        r = sd_bus_message_close_container(msg);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'a', "t");
        for (size_t i = 0; r >= 0 && i < n_detached; i++)
                r = sd_bus_message_append(msg, "t", detached[i].id);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_send(m->bus, msg, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to send %s, ignoring: %m", ns ? "MountsChanged" : "HostMountsChanged");
}

/* ViewsMountsChanged: the changes of every view in one signal per interval, a mount point
 * attached (or detached) in many views listed once with the views. */
typedef struct AggregateEntry {
        char *key;               /* '+' or '-', then the mount point: the Hashmap's key */
        char **views;            /* object paths, one per mount */
        size_t n_views;
} AggregateEntry;

/* MountCountsChanged: a view's number of mounts, the last one told by its reader. By uid, which
 * makes its object path: nothing allocated or hashed per view (a host mount names them all). */
typedef struct CountEntry {
        uid_t uid;
        uint32_t count;
} CountEntry;

typedef struct Aggregate {
        Manager *manager;
        Hashmap *by_key;
        AggregateEntry **entries;        /* in the order they came */
        size_t n_entries;
        size_t n_pairs;                  /* views named, over all entries */
        CountEntry *counts;
        size_t n_counts, cap_counts;
        uint64_t generation;             /* of 'counts': a view's slot there is valid in its generation */
        uint64_t first;                  /* CLOCK_MONOTONIC µs of the oldest change not sent */
        uint64_t last_sent;
        sd_event_source *timer;
} Aggregate;

/* A signal's size is bounded: past this many (mount point, view) pairs it goes at once. */
#define AGGREGATE_PAIRS_MAX 65536U
/* While readers run, their views' changes are waited for this long at most. */
#define AGGREGATE_RECHECK_USEC (5 * USEC_PER_MSEC)

static void aggregate_clear(Aggregate *a) {
        for (size_t i = 0; i < a->n_entries; i++) {
                AggregateEntry *x = a->entries[i];
                hashmap_remove(a->by_key, x->key);
                for (size_t k = 0; k < x->n_views; k++)
                        free(x->views[k]);
                free(x->views);
                free(x->key);
                free(x);
        }
        a->entries = mfree(a->entries);
        a->n_entries = 0;
        a->n_pairs = 0;
        a->n_counts = 0;         /* (the array kept for the next signal) */
        a->generation++;
}

static void aggregate_free(Manager *m) {
        Aggregate *a = m->mount_events ? m->mount_events->aggregate : NULL;

        if (!a)
                return;
        aggregate_clear(a);
        hashmap_free(a->by_key);
        free(a->counts);
        sd_event_source_disable_unref(a->timer);
        free(a);
        m->mount_events->aggregate = NULL;
}

static int append_entries(sd_bus_message *msg, Aggregate *a, char sign) {
        int r = sd_bus_message_open_container(msg, 'a', "(sao)");

        for (size_t i = 0; r >= 0 && i < a->n_entries; i++) {
                AggregateEntry *x = a->entries[i];
                if (x->key[0] != sign)
                        continue;
                r = sd_bus_message_open_container(msg, 'r', "sao");
                if (r >= 0)
                        r = bus_message_append_text(msg, x->key + 1);
                if (r >= 0)
                        r = sd_bus_message_open_container(msg, 'a', "o");
                for (size_t k = 0; r >= 0 && k < x->n_views; k++)
                        r = sd_bus_message_append(msg, "o", x->views[k]);
                if (r >= 0)
                        r = sd_bus_message_close_container(msg);
                if (r >= 0)
                        r = sd_bus_message_close_container(msg);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        return r;
}

static void counts_send(Aggregate *a) {
        Manager *m = a->manager;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        int r;

        r = sd_bus_message_new_signal(m->bus, &msg, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "MountCountsChanged");
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'a', "(ou)");
        for (size_t i = 0; r >= 0 && i < a->n_counts; i++) {
                char path[sizeof NSM_NAMESPACE_PATH_PREFIX + sizeof "/_" + 10];
                if (a->counts[i].uid == (uid_t) -1)
                        continue;   /* its view went meanwhile */
                (void) snprintf(path, sizeof path, "%s/_%u", NSM_NAMESPACE_PATH_PREFIX, (unsigned) a->counts[i].uid);
                r = sd_bus_message_append(msg, "(ou)", path, a->counts[i].count);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        if (r >= 0)
                r = sd_bus_send(m->bus, msg, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to send MountCountsChanged, ignoring: %m");
}

static void aggregate_send(Aggregate *a) {
        Manager *m = a->manager;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        int r;

        if (a->n_entries == 0 && a->n_counts == 0)
                return;
        if (a->n_counts > 0 && m->mount_events && m->mount_events->n_counts > 0)
                counts_send(a);
        r = a->n_entries == 0 ? 0 : sd_bus_message_new_signal(m->bus, &msg, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE,
                                                               "ViewsMountsChanged");
        if (msg && r >= 0)
                r = append_entries(msg, a, '+');
        if (msg && r >= 0)
                r = append_entries(msg, a, '-');
        if (msg && r >= 0)
                r = sd_bus_send(m->bus, msg, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to send ViewsMountsChanged, ignoring: %m");
        aggregate_clear(a);
        a->last_sent = now_usec(CLOCK_MONOTONIC);
}

static int on_aggregate_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        Aggregate *a = userdata;
        MountEvents *e = a->manager->mount_events;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        /* Readers still at work: what they find joins this signal, up to an interval late. (A
         * host mount reaching thousands of views is read by several children.) */
        if (e && mount_events_readers_busy(e) && now < a->first + MOUNT_EVENTS_INTERVAL_USEC) {
                if (sd_event_source_set_time(source, MIN(now + AGGREGATE_RECHECK_USEC, a->first + MOUNT_EVENTS_INTERVAL_USEC)) >= 0 &&
                    sd_event_source_set_enabled(source, SD_EVENT_ONESHOT) >= 0)
                        return 0;
        }
        aggregate_send(a);
        return 0;
}

static Aggregate *aggregate_get(Manager *m) {
        MountEvents *e = m->mount_events;
        Aggregate *a;

        if (e->aggregate)
                return e->aggregate;
        a = calloc(1, sizeof(Aggregate));
        if (!a)
                return NULL;
        a->manager = m;
        a->by_key = hashmap_new();
        a->generation = 1;
        if (!a->by_key) {
                free(a);
                return NULL;
        }
        e->aggregate = a;
        return a;
}

static int aggregate_add_one(Aggregate *a, char sign, const char *path, const char *view) {
        _cleanup_free_ char *key = NULL;
        AggregateEntry *x;
        char **v;
        int r;

        key = malloc(strlen(path ?: "") + 2);
        if (!key)
                return -ENOMEM;
        key[0] = sign;
        strcpy(key + 1, path ?: "");
        x = hashmap_get(a->by_key, key);
        if (!x) {
                AggregateEntry **n = realloc(a->entries, (a->n_entries + 1) * sizeof(AggregateEntry *));
                if (!n)
                        return -ENOMEM;
                a->entries = n;
                x = calloc(1, sizeof(AggregateEntry));
                if (!x)
                        return -ENOMEM;
                x->key = TAKE_PTR(key);
                r = hashmap_put(a->by_key, x->key, x);
                if (r < 0) {
                        free(x->key);
                        free(x);
                        return r;
                }
                a->entries[a->n_entries++] = x;
        }
        v = realloc(x->views, (x->n_views + 1) * sizeof(char *));
        if (!v)
                return -ENOMEM;
        x->views = v;
        v[x->n_views] = strdup(view);
        if (!v[x->n_views])
                return -ENOMEM;
        x->n_views++;
        a->n_pairs++;
        return 0;
}

static void aggregate_arm(Aggregate *a, uint64_t now);

/* A mount point attached or detached alike in several views: one entry naming them. */
static void mount_events_dbus_aggregate(char sign, const char *path, WatchedView *const *views, size_t n_views,
                                        void *userdata) {
        Manager *m = userdata;
        Aggregate *a = m->mount_events ? aggregate_get(m) : NULL;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int r = 0;

        if (!m->bus)
                return;
        if (!a) {
                log_oom();
                return;
        }
        if (a->n_entries == 0 && a->n_counts == 0)
                a->first = now;
        for (size_t i = 0; r >= 0 && i < n_views; i++) {
                WatchedView *v = views[i];
                if (!v->bus_path && !(v->bus_path = namespace_bus_path(v->ns)))
                        r = -ENOMEM;
                if (r >= 0)
                        r = aggregate_add_one(a, sign, path, v->bus_path);
        }
        if (r < 0)
                log_warning_errno(r, "Failed to collect ViewsMountsChanged, ignoring: %m");
        aggregate_arm(a, now);
}

/* A view's number of mounts changed: in the next MountCountsChanged, the last one. */
static void mount_events_dbus_count(WatchedView *v, void *userdata) {
        Manager *m = userdata;
        Aggregate *a = m->mount_events ? aggregate_get(m) : NULL;
        uint64_t now;

        if (!m->bus)
                return;
        if (!a) {
                log_oom();
                return;
        }
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        if (a->n_entries == 0 && a->n_counts == 0)
                a->first = now;
        /* Named once per signal: its slot of this generation holds its last number. */
        if (v->count_generation == a->generation && v->count_slot < a->n_counts &&
            a->counts[v->count_slot].uid == v->ns->uid) {
                a->counts[v->count_slot].count = v->count;
                return;
        }
        if (a->n_counts == a->cap_counts) {
                size_t cap = MAX(a->cap_counts * 2, (size_t) 64);
                CountEntry *c = reallocarray(a->counts, cap, sizeof(CountEntry));
                if (!c) {
                        log_oom();
                        return;
                }
                a->counts = c;
                a->cap_counts = cap;
        }
        v->count_generation = a->generation;
        v->count_slot = a->n_counts;
        a->counts[a->n_counts++] = (CountEntry) { .uid = v->ns->uid, .count = v->count };
        aggregate_arm(a, now);
}

static void mount_events_dbus_count_gone(WatchedView *v, void *userdata) {
        Manager *m = userdata;
        Aggregate *a = m->mount_events ? m->mount_events->aggregate : NULL;

        if (a && v->count_generation == a->generation && v->count_slot < a->n_counts &&
            a->counts[v->count_slot].uid == v->ns->uid)
                a->counts[v->count_slot].uid = (uid_t) -1;   /* skipped when sent */
}

/* The next signal: as soon as the readers are done, at most one per interval. */
static void aggregate_arm(Aggregate *a, uint64_t now) {
        Manager *m = a->manager;
        int r;

        if (a->n_pairs >= AGGREGATE_PAIRS_MAX) {
                aggregate_send(a);
                return;
        }
        uint64_t when = MAX(now, a->last_sent + MOUNT_EVENTS_INTERVAL_USEC);
        int enabled = SD_EVENT_OFF;
        if (a->timer && sd_event_source_get_enabled(a->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        if (!a->timer)
                r = sd_event_add_time(m->event, &a->timer, CLOCK_MONOTONIC, when, 1, on_aggregate_timer, a);
        else {
                r = sd_event_source_set_time(a->timer, when);
                if (r >= 0)
                        r = sd_event_source_set_enabled(a->timer, SD_EVENT_ONESHOT);
        }
        if (r < 0) {
                log_warning_errno(r, "Failed to arm the ViewsMountsChanged timer, sending now: %m");
                aggregate_send(a);
        }
}

static void mount_events_dbus_emit(Namespace *ns, const MountChange *attached, size_t n_attached,
                                   const MountChange *detached, size_t n_detached, void *userdata) {
        Manager *m = userdata;
        MountEvents *e = m->mount_events;
        WatchedView *v;

        if (!m->bus || !e)
                return;
        /* The host's changes are few: its signal goes to every kind of subscriber of everything. */
        if (!ns) {
                send_mounts_changed(m, NULL, attached, n_attached, detached, n_detached);
                return;
        }
        /* A view's own signal only where someone asked for it: an aggregated subscriber alone
         * costs one signal per interval, not one per view (mount_events_dbus_aggregate()). */
        v = view_find(e, ns);
        if (e->n_signal_all > 0 || (v && v->n_watchers > 0))
                send_mounts_changed(m, ns, attached, n_attached, detached, n_detached);
}

/* ---- Eject() ---- */

static void on_ejected(const EjectResult *res, void *userdata) {
        BusRequest *req = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        if (nsm_error_is_set(&res->error)) {
                bus_request_reply_error(req, &res->error);
                return;
        }
        r = sd_bus_message_new_method_return(req->message, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ss)");
        for (size_t i = 0; r >= 0 && i < res->n_detached; i++) {
                r = sd_bus_message_open_container(reply, 'r', "ss");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", res->detached[i].user ?: "");
                if (r >= 0)
                        r = bus_message_append_text(reply, res->detached[i].path);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0) {
                bus_request_reply_errno(req, r, "Failed to build the reply.");
                return;
        }
        bus_request_reply(req, reply);
}

static int eject_step(BusRequest *req, sd_bus_error *error) {
        const char *what;
        uint64_t flags;
        int r;

        r = sd_bus_message_read(req->message, "st", &what, &flags);
        if (r < 0)
                return r;
        if (flags & ~NSM_EJECT_LAZY)
                return bus_error_setf(error, NSM_ERROR_INVALID_ARGS, "Unknown flags 0x%" PRIx64 ".",
                                      flags & ~NSM_EJECT_LAZY);
        if (!path_is_absolute_normalized(what) || streq(what, "/"))
                return bus_error_setf(error, NSM_ERROR_INVALID_PATH,
                                      "'%s' is not an absolute, normalized path of a block device or of a mount point "
                                      "other than '/'.", what);
        r = bus_request_authorize(req, ACTION_MANAGE, (const char *[]) { "user", "", "path", what, NULL }, error);
        if (r <= 0)
                return r;
        bus_request_wait(req);
        r = eject_start(req->manager->ejector, what, flags & NSM_EJECT_LAZY, req->deadline, on_ejected, req);
        if (r < 0) {
                bus_request_unwait(req);
                return bus_error_set_errnof(error, r, "Failed to start ejecting '%s': %m", what);
        }
        return 1;
}

static int method_eject(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, eject_step);
}

static int property_get_mount_events(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", mount_events_mode_to_string(mount_events_mode(m->mount_events)));
}

/* The Manager's and each Namespace's members for mount events, beside their main vtables. */
static const sd_bus_vtable manager_events_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("MountEvents", "s", property_get_mount_events, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_METHOD_WITH_ARGS("Eject", SD_BUS_ARGS("s", what, "t", flags), SD_BUS_RESULT("a(ss)", detached),
                                method_eject, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Subscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_manager_subscribe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Unsubscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_manager_unsubscribe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SubscribeViews", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_manager_subscribe_views,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("UnsubscribeViews", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_manager_unsubscribe_views,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SubscribeMountCounts", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_manager_subscribe_counts,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("UnsubscribeMountCounts", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT,
                                method_manager_unsubscribe_counts, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("HostMountsChanged", SD_BUS_ARGS("a(tts)", attached, "at", detached), 0),
        SD_BUS_SIGNAL_WITH_ARGS("ViewsMountsChanged", SD_BUS_ARGS("a(sao)", attached, "a(sao)", detached), 0),
        SD_BUS_SIGNAL_WITH_ARGS("MountCountsChanged", SD_BUS_ARGS("a(ou)", counts), 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable namespace_events_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Subscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_namespace_subscribe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Unsubscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_namespace_unsubscribe,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("MountsChanged", SD_BUS_ARGS("a(tts)", attached, "at", detached), 0),
        SD_BUS_VTABLE_END,
};

static const MountEventsBus mount_events_bus = {
        .emit = mount_events_dbus_emit,
        .aggregate = mount_events_dbus_aggregate,
        .count = mount_events_dbus_count,
        .count_gone = mount_events_dbus_count_gone,
        .namespace_gone = mount_events_dbus_namespace_gone,
        .done = mount_events_dbus_free,
};

int mount_events_bus_register(Manager *m, sd_bus *bus) {
        int r;

        m->mount_events_bus = &mount_events_bus;
        r = sd_bus_add_object_vtable(bus, NULL, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, manager_events_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Manager's mount events: %m");
        r = sd_bus_add_fallback_vtable(bus, NULL, NSM_NAMESPACE_PATH_PREFIX, NSM_NAMESPACE_INTERFACE,
                                       namespace_events_vtable, namespace_object_find, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the Namespaces' mount events: %m");
        return 0;
}
