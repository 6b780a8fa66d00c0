/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-creds.h"
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

/* One bus name and what it watches: everything, and views one by one. The name is watched
 * through the daemon's one NameOwnerChanged match (bus-creds.h), not a match rule per name:
 * subscribers never add to the daemon's match rules on the bus. */
typedef struct Subscriber Subscriber;
struct Subscriber {
        Manager *manager;
        char *name;
        uid_t uid;
        bool all;                /* Manager.Subscribe() */
        Namespace **views;       /* references: Namespace.Subscribe() of each */
        size_t n_views;
        BusNameWatch *watch;     /* the name: when it leaves the bus, its watches end */
        Subscriber *prev, *next;
};

static Subscriber **subscribers(Manager *m) {
        return (Subscriber **) &m->mount_events->subscriptions;
}

static unsigned subscriber_count(const Subscriber *s) {
        return (unsigned) s->n_views + s->all;
}

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
        if (unwatch && m->mount_events && s->all)
                mount_events_unwatch(m->mount_events, NULL);
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

static bool subscriber_has(const Subscriber *s, Namespace *ns) {
        if (!ns)
                return s->all;
        for (size_t i = 0; i < s->n_views; i++)
                if (s->views[i] == ns)
                        return true;
        return false;
}

static void subscriber_forget(Subscriber *s, Namespace *ns) {
        if (!ns) {
                s->all = false;
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
                subscriber_forget(s, ns);
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

static int subscribe(BusRequest *req, Namespace *ns, sd_bus_error *error) {
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
        if (s && subscriber_has(s, ns))
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
        if (ns) {
                Namespace **v = realloc(s->views, (s->n_views + 1) * sizeof(Namespace *));
                if (!v) {
                        if (subscriber_count(s) == 0)
                                subscriber_free(s, false);
                        return -ENOMEM;
                }
                s->views = v;
                v[s->n_views++] = namespace_ref(ns);
        } else
                s->all = true;

        /* Answered once the watched tables were read: whatever changes after the answer is
         * signalled. */
        r = mount_events_watch(m->mount_events, ns, on_watch_ready, req);
        if (r < 0) {
                subscriber_forget(s, ns);
                if (subscriber_count(s) == 0)
                        subscriber_free(s, false);
                return bus_error_set_errnof(error, r, "Failed to watch the mounts of %s: %m",
                                            ns ? ns->name : "every view");
        }
        if (r > 0)
                return sd_bus_reply_method_return(req->message, NULL);
        req->pending = true;
        return 1;
}

static int unsubscribe(sd_bus_message *message, Manager *m, Namespace *ns) {
        const char *sender = sd_bus_message_get_sender(message);
        Subscriber *s = sender && m->mount_events ? subscriber_find(m, sender) : NULL;

        if (s && subscriber_has(s, ns)) {
                subscriber_forget(s, ns);
                mount_events_unwatch(m->mount_events, ns);
                if (subscriber_count(s) == 0)
                        subscriber_free(s, false);
        }
        return sd_bus_reply_method_return(message, NULL);
}

static int manager_subscribe_step(BusRequest *req, sd_bus_error *error) {
        return subscribe(req, NULL, error);
}

static int method_manager_subscribe(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_request_run(message, userdata, error, manager_subscribe_step);
}

static int method_manager_unsubscribe(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return unsubscribe(message, userdata, NULL);
}

static int namespace_subscribe_step(BusRequest *req, sd_bus_error *error) {
        return subscribe(req, req->data, error);
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
        return unsubscribe(message, m, ns);
}

/* ---- the signals ---- */

static void mount_events_dbus_emit(Namespace *ns, const MountChange *attached, size_t n_attached,
                                   const uint64_t *detached, size_t n_detached, void *userdata) {
        Manager *m = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (!m->bus)
                return;
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
                r = sd_bus_message_append_array(msg, 't', detached, n_detached * sizeof(uint64_t));
        if (r >= 0)
                r = sd_bus_send(m->bus, msg, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to send %s, ignoring: %m", ns ? "MountsChanged" : "HostMountsChanged");
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
        req->pending = true;
        r = eject_start(req->manager->ejector, what, flags & NSM_EJECT_LAZY, req->deadline, on_ejected, req);
        if (r < 0) {
                req->pending = false;
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
        SD_BUS_SIGNAL_WITH_ARGS("HostMountsChanged", SD_BUS_ARGS("a(tts)", attached, "at", detached), 0),
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
