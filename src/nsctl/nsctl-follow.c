/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nsctl mounts [USER] --follow: the changes of a view's (or the host's) mount table as they come,
 * one line each, like findmnt --poll, with where each mount came from as far as the daemon and
 * the kernel say (origin_of()).
 *
 * Subscribe() makes the daemon send MountsChanged (HostMountsChanged for the host) while we are
 * on the bus; each signal says that the table changed, and a new GetMounts() is compared with
 * the last one, so that each line carries the mount's source, type and groups (which the signal
 * does not) and its mount point as the table had it. GetMountsEx's: its ids are the
 * signal's, and it says which mounts the daemon made. */
#include <signal.h>

#include "bus-errors.h"
#include "nsctl.h"

typedef struct Follow {
        sd_bus *bus;
        const char *user;        /* "" for the host */
        MountEntry *mounts;      /* the table as last printed */
        size_t n_mounts;
        MountEntry *host;        /* the host's, to tell where a mount came from */
        size_t n_host;
        bool changed;            /* a signal came: read the table again */
        bool daemon_gone;
} Follow;

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig _unused_) {
        stop_requested = 1;
}

static void follow_done(Follow *f) {
        mount_entries_free(f->mounts, f->n_mounts);
        mount_entries_free(f->host, f->n_host);
}

/* The host's mount of peer group 'group' at 'target' (the mount a view's is a copy of), or NULL;
 * *ret_any: whether the host has any mount in that group. */
static const MountEntry *find_host_copy(const MountEntry *m, size_t n, uint64_t group, const char *target,
                                        bool *ret_any) {
        *ret_any = false;
        for (size_t i = 0; group != 0 && i < n; i++)
                if (m[i].peer_group == group) {
                        *ret_any = true;
                        if (streq_ptr(m[i].target, target))
                                return m + i;
                }
        return NULL;
}

static bool same_entry(const MountEntry *a, const MountEntry *b) {
        return a->id == b->id && a->parent_id == b->parent_id && streq_ptr(a->target, b->target) &&
               streq_ptr(a->source, b->source) && streq_ptr(a->fstype, b->fstype);
}

static bool table_has(const MountEntry *t, size_t n, const MountEntry *e) {
        for (size_t i = 0; i < n; i++)
                if (same_entry(t + i, e))
                        return true;
        return false;
}

/* Where a mount came from, as far as the daemon's records and the kernel tell, never a guess:
 * the daemon's binds and the [View] policy's mounts say so; a mount in a peer group of the
 * host's is "from the host's TARGET" only where the host's member of that group has the same
 * mount point (a copy of it: any other member would be a guess); a group the host does not
 * have was "made in this view"; anything else is "unknown". The host's table is read again once
 * if it does not know the group (a mount the host just made). */
static int origin_of(Follow *f, const MountEntry *m, char **ret) {
        uint64_t group = m->master_group ?: m->peer_group;
        const MountEntry *h;
        bool any;

        *ret = NULL;
        if (!*f->user) {
                /* The host: a group it shares with views, or one of its own. */
                if (m->peer_group != 0 && asprintf(ret, "shared (peer group %" PRIu64 ")", m->peer_group) < 0)
                        return -ENOMEM;
                if (m->peer_group == 0 && m->master_group != 0 &&
                    asprintf(ret, "received from peer group %" PRIu64, m->master_group) < 0)
                        return -ENOMEM;
                if (!*ret && !(*ret = strdup("made on the host")))
                        return -ENOMEM;
                return 0;
        }
        if (streq_ptr(m->origin, "daemon"))
                return (*ret = strdup("bound by nsmanagerd (BindMount)")) ? 0 : -ENOMEM;
        if (streq_ptr(m->origin, "policy"))
                return (*ret = strdup("made by the [View] policy")) ? 0 : -ENOMEM;
        if (streq_ptr(m->origin, "user"))
                return (*ret = strdup("the user's FUSE mount")) ? 0 : -ENOMEM;
        if (group == 0)
                /* In no peer group: made here, or a private copy of one of the host's. */
                return (*ret = strdup("unknown (in no peer group)")) ? 0 : -ENOMEM;
        h = find_host_copy(f->host, f->n_host, group, m->target, &any);
        if (!any) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                MountEntry *t = NULL;
                size_t n = 0;

                if (get_mounts_ex(f->bus, "", &error, &t, &n) >= 0) {
                        mount_entries_free(f->host, f->n_host);
                        f->host = t;
                        f->n_host = n;
                        h = find_host_copy(f->host, f->n_host, group, m->target, &any);
                }
        }
        if (h && asprintf(ret, "from the host's %s (peer group %" PRIu64 "%s)", h->target, group,
                          m->master_group ? ", one way" : "") < 0)
                return -ENOMEM;
        if (!h && !any && asprintf(ret, "made in this view (peer group %" PRIu64 "%s)", group,
                                   m->master_group ? ", received" : "") < 0)
                return -ENOMEM;
        if (!h && any && asprintf(ret, "unknown (%s peer group %" PRIu64 " of the host's)",
                                  m->master_group ? "receives from" : "in", group) < 0)
                return -ENOMEM;
        return 0;
}

static void print_line(const char *action, const MountEntry *m, const char *origin) {
        _cleanup_free_ char *target = text_show(m->target), *source = text_show(m->source),
                            *fstype = text_show(m->fstype), *o = text_show(origin);

        if (arg_json != JSON_OFF) {
                JsonWriter w;

                /* One object per line, whatever --json said: a stream is read line by line. */
                json_begin(&w, stdout, JSON_SHORT);
                json_object_begin(&w);
                json_key(&w, "action");
                json_string(&w, action);
                json_mount_entry(&w, m);
                json_key(&w, "origin");
                json_string(&w, origin);
                json_object_end(&w);
                json_end(&w);
        } else
                printf("%-7s %-24s %-16s %-8s %s\n", action, target ?: "", source ?: "", fstype ?: "", o ?: "");
        fflush(stdout);
}

/* The table again: what went (as it was), then what came. */
static int follow_refresh(Follow *f) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        MountEntry *t = NULL;
        size_t n = 0;
        int r;

        r = get_mounts_ex(f->bus, f->user, &error, &t, &n);
        if (r < 0 && stop_requested)
                return 0;   /* interrupted: we are done anyway */
        if (r < 0)
                return bus_log_error(&error, r, "Failed to read the mounts of %s%s%s", *f->user ? "the view of '" : "the host",
                                     f->user, *f->user ? "'" : "");
        for (size_t i = 0; i < f->n_mounts; i++)
                if (!table_has(t, n, f->mounts + i))
                        print_line("umount", f->mounts + i, "");
        for (size_t i = 0; i < n; i++)
                if (!table_has(f->mounts, f->n_mounts, t + i)) {
                        _cleanup_free_ char *origin = NULL;
                        r = origin_of(f, t + i, &origin);
                        if (r < 0) {
                                mount_entries_free(t, n);
                                return log_oom();
                        }
                        print_line("mount", t + i, origin);
                }
        mount_entries_free(f->mounts, f->n_mounts);
        f->mounts = t;
        f->n_mounts = n;
        return 0;
}

static int on_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Follow *f = userdata;
        f->changed = true;
        return 0;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Follow *f = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) >= 0 && streq(name, NSM_BUS_NAME) && !*new_owner)
                f->daemon_gone = true;
        return 0;
}

/* The object to subscribe at: the Manager for the host, else the user's namespace. */
static int follow_object(sd_bus *bus, const char *user, char **ret_path, char **ret_name) {
        NamespaceInfo i = {};
        int r;

        if (!*user) {
                *ret_path = strdup(NSM_MANAGER_PATH);
                *ret_name = strdup("");
                return *ret_path && *ret_name ? 0 : log_oom();
        }
        r = get_namespace(bus, user, &i);
        if (r < 0)
                return r;
        *ret_path = TAKE_PTR(i.object);
        *ret_name = TAKE_PTR(i.user);
        namespace_info_done(&i);
        return *ret_name ? 0 : log_oom();
}

int verb_mounts_follow(sd_bus *bus, const char *user) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL, *owner_slot = NULL;
        _cleanup_free_ char *path = NULL, *name = NULL;
        _cleanup_(follow_done) Follow f = { .bus = bus };
        struct sigaction sa = { .sa_handler = on_stop };
        bool host = !user || !*user;
        int r;

        r = follow_object(bus, host ? "" : user, &path, &name);
        if (r < 0)
                return r;
        f.user = name;
        /* The match before the subscription: no change between the two is missed. */
        r = sd_bus_match_signal(bus, &slot, NSM_BUS_NAME, path, host ? NSM_MANAGER_INTERFACE : NSM_NAMESPACE_INTERFACE,
                                host ? "HostMountsChanged" : "MountsChanged", on_changed, &f);
        if (r >= 0)
                r = sd_bus_match_signal(bus, &owner_slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus", "NameOwnerChanged", on_owner_changed, &f);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the daemon's signals: %m");
        /* The table before the subscription, and again after it: the daemon answers Subscribe()
         * once it has read the table itself, so whatever changes from then on is signalled, and
         * whatever changed before is in the second table. */
        r = get_mounts_ex(bus, f.user, &error, &f.mounts, &f.n_mounts);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to read the mounts of %s", host ? "the host" : user);
        if (!host)
                (void) get_mounts_ex(bus, "", NULL, &f.host, &f.n_host);
        r = sd_bus_call_method(bus, NSM_BUS_NAME, path, host ? NSM_MANAGER_INTERFACE : NSM_NAMESPACE_INTERFACE,
                               "Subscribe", &error, NULL, NULL);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to subscribe to the mount changes of %s", host ? "the host" : user);
        if (arg_json == JSON_OFF && !arg_no_legend) {
                printf("%-7s %-24s %-16s %-8s %s\n", "ACTION", "TARGET", "SOURCE", "FSTYPE", "ORIGIN");
                fflush(stdout);
        }
        f.changed = true;

        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGPIPE, &sa, NULL);
        while (!stop_requested) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return log_error_errno(r, "Lost the connection to the bus: %m");
                if (f.daemon_gone) {
                        log_error("nsmanagerd left the bus; its subscriptions ended with it.");
                        return -ESHUTDOWN;
                }
                if (r > 0)
                        continue;
                if (f.changed) {
                        f.changed = false;
                        r = follow_refresh(&f);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        return log_error_errno(r, "Failed to wait for the bus: %m");
        }
        return 0;
}
