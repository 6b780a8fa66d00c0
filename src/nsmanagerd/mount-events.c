/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/sysmacros.h>

#include "eject.h"
#include "list.h"
#include "log.h"
#include "mount-events-view.h"
#include "mount-events.h"
#include "mount-notify.h"
#include "string-table.h"
#include "time-util.h"

static const char *const mount_events_mode_table[_MOUNT_EVENTS_MODE_MAX] = {
        [MOUNT_EVENTS_FANOTIFY] = "fanotify",
        [MOUNT_EVENTS_POLL] = "poll",
        [MOUNT_EVENTS_NONE] = "none",
};

DEFINE_STRING_TABLE_LOOKUP(mount_events_mode, MountEventsMode);

/* A read() of a group takes what is queued, up to this much at a time. */
#define EVENTS_BUFFER_SIZE (64U * 1024U)
/* listmount(2) pages. */
#define SCAN_PAGE 256

int mount_events_count(MountEvents *e, Namespace *ns, uint32_t *ret) {
        WatchedView *v = e ? view_find(e, ns) : NULL;

        if (!v || !v->count_known)
                return 0;
        *ret = v->count;
        return 1;
}

MountEventsMode mount_events_mode(const MountEvents *e) {
        return e ? e->mode : MOUNT_EVENTS_NONE;
}

/* ---- ReleaseWithHost=: the host's block devices ---- */

static void host_blocks_reset(MountEvents *e) {
        id_map_free(e->host_blocks);
        id_map_free(e->dev_counts);
        e->host_blocks = id_map_new();
        e->dev_counts = id_map_new();
        if (!e->host_blocks || !e->dev_counts)
                log_oom();
}

/* The block devices mounted on the host now (fanotify mode: its later changes come as events). */
static int host_blocks_scan(MountEvents *e) {
        uint64_t ids[SCAN_PAGE], after = 0;

        host_blocks_reset(e);
        for (;;) {
                ssize_t k = mount_list_ids(after, ids, ELEMENTSOF(ids));
                if (k < 0)
                        return (int) k;
                for (ssize_t i = 0; i < k; i++) {
                        MountStat st;
                        if (mount_stat(ids[i], false, &st) < 0)
                                continue;   /* gone meanwhile: its event follows */
                        if (st.dev_major != 0)
                                host_blocks_add(e, st.id, makedev(st.dev_major, st.dev_minor));
                }
                if ((size_t) k < ELEMENTSOF(ids))
                        return 0;
                after = ids[k - 1];
        }
}

/* ---- fanotify: the host's mounts as last told ---- */

/* While the host's changes are told (someone watches everything), its mounts as the events
 * left them: after the kernel dropped events (FAN_Q_OVERFLOW) the table read again is compared
 * with it, and a detached mount's path comes from it. */
typedef struct HostMount {
        uint64_t parent_id;
        char *path;
} HostMount;

static IdMap *host_mounts_free(IdMap *m) {
        HostMount *h;

        for (size_t i = 0; id_map_iterate(m, &i, NULL, (void **) &h);) {
                free(h->path);
                free(h);
        }
        return id_map_free(m);
}

static int host_mounts_put(IdMap *m, uint64_t id, uint64_t parent_id, const char *path) {
        HostMount *h = malloc(sizeof(HostMount));
        int r;

        if (!h)
                return -ENOMEM;
        *h = (HostMount) { .parent_id = parent_id, .path = strdup(path ?: "") };
        r = h->path ? id_map_put(m, id, h) : -ENOMEM;
        if (r < 0) {
                free(h->path);
                free(h);
        }
        return r;
}

/* The host's mounts now, with their mount points. */
static int host_mounts_read(IdMap **ret) {
        uint64_t ids[SCAN_PAGE], after = 0;
        IdMap *m = id_map_new();

        if (!m)
                return -ENOMEM;
        for (;;) {
                ssize_t k = mount_list_ids(after, ids, ELEMENTSOF(ids));
                if (k < 0) {
                        host_mounts_free(m);
                        return (int) k;
                }
                for (ssize_t i = 0; i < k; i++) {
                        MountStat st = {};
                        if (mount_stat(ids[i], true, &st) < 0)
                                continue;   /* gone meanwhile */
                        int r = host_mounts_put(m, st.id, st.parent_id, st.path);
                        mount_stat_done(&st);
                        if (r < 0) {
                                host_mounts_free(m);
                                return r;
                        }
                }
                if ((size_t) k < ELEMENTSOF(ids))
                        break;
                after = ids[k - 1];
        }
        *ret = m;
        return 0;
}

/* Kept while the host's changes are told in fanotify mode, dropped otherwise. */
static void host_mounts_update(MountEvents *e) {
        bool want = e->mode == MOUNT_EVENTS_FANOTIFY && e->host && e->n_all > 0;
        int r;

        if (!want) {
                e->host_mounts = host_mounts_free(e->host_mounts);
                return;
        }
        if (e->host_mounts)
                return;
        r = host_mounts_read(&e->host_mounts);
        if (r < 0)
                log_warning_errno(r, "Failed to read the host's mounts, ignoring (an overflow of the kernel's "
                                  "queue would go unnoticed): %m");
}

/* The kernel dropped events: the table read again against the last one, each difference told. */
static void host_mounts_reread(MountEvents *e) {
        WatchedView *h = e->host;
        IdMap *now = NULL;
        HostMount *x;
        uint64_t id;
        int r;

        if (!e->host_mounts)
                return;
        r = host_mounts_read(&now);
        if (r < 0) {
                log_warning_errno(r, "Failed to read the host's mounts again after lost events: %m");
                return;
        }
        for (size_t i = 0; id_map_iterate(e->host_mounts, &i, &id, (void **) &x);)
                if (!id_map_get(now, id))
                        watched_view_note_detach(h, id, x->path);
        for (size_t i = 0; id_map_iterate(now, &i, &id, (void **) &x);)
                if (!id_map_get(e->host_mounts, id))
                        watched_view_note_attach(h, id, x->parent_id, x->path);
        host_mounts_free(e->host_mounts);
        e->host_mounts = now;
        watched_view_schedule_emit(h);
}

/* ---- fanotify: the host ---- */

static void on_host_event(const MountEvent *ev, void *userdata) {
        MountEvents *e = userdata;
        WatchedView *h = e->host;
        bool collects = watched_view_collects(h);
        MountStat st = {};

        switch (ev->kind) {
        case MOUNT_EVENT_ATTACH:
                if (mount_stat(ev->mnt_id, collects, &st) < 0)
                        return;   /* gone already: its detach follows */
                if (e->release && st.dev_major != 0)
                        host_blocks_add(e, st.id, makedev(st.dev_major, st.dev_minor));
                /* (Known already: told by the reading after an overflow.) */
                if (collects && !(e->host_mounts && id_map_get(e->host_mounts, st.id))) {
                        if (e->host_mounts && host_mounts_put(e->host_mounts, st.id, st.parent_id, st.path) < 0)
                                log_oom();
                        watched_view_note_attach(h, st.id, st.parent_id, st.path);
                        watched_view_schedule_emit(h);
                }
                mount_stat_done(&st);
                return;
        case MOUNT_EVENT_DETACH:
                if (e->release)
                        host_blocks_remove(e, ev->mnt_id);
                if (collects) {
                        HostMount *x = e->host_mounts ? id_map_remove(e->host_mounts, ev->mnt_id) : NULL;
                        /* (Unknown: gone before the reading after an overflow, and told then.) */
                        if (e->host_mounts && !x)
                                return;
                        watched_view_note_detach(h, ev->mnt_id, x ? x->path : NULL);
                        watched_view_schedule_emit(h);
                        if (x) {
                                free(x->path);
                                free(x);
                        }
                }
                return;
        case MOUNT_EVENT_OVERFLOW:
                log_warning("The kernel dropped mount events of the host; reading its mounts again.");
                if (e->release)
                        (void) host_blocks_scan(e);
                if (collects)
                        host_mounts_reread(e);
                return;
        }
}

static int read_events(int fd, void (*cb)(const MountEvent *ev, void *userdata), void *userdata) {
        _cleanup_free_ uint8_t *buf = malloc(EVENTS_BUFFER_SIZE);

        if (!buf)
                return log_oom();
        for (;;) {
                ssize_t n = read(fd, buf, EVENTS_BUFFER_SIZE);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        return log_error_errno(errno, "Failed to read mount events: %m");
                }
                if (n == 0)
                        return 0;
                if (mount_notify_parse(buf, (size_t) n, cb, userdata) < 0)
                        log_warning("The kernel sent a mount event we cannot parse, ignoring the rest of it.");
        }
}

static int on_host_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        MountEvents *e = userdata;

        (void) read_events(fd, on_host_event, e);
        host_blocks_release_candidates(e);
        return 0;
}

/* ---- watching ---- */

static WatchedView *watched_view_free(WatchedView *v) {
        MountEvents *e;

        if (!v)
                return NULL;
        /* A number told for the next MountCountsChanged goes with it: the view is gone, or its
         * next subscriber reads NMounts afresh. */
        e = v->events;
        if (v->ns && v->count_generation != 0 && e->bus && e->bus->count_gone)
                e->bus->count_gone(v, e->bus_userdata);
        watched_view_clear(v);
        poll_view_stop(v);
        v->timer = sd_event_source_disable_unref(v->timer);
        namespace_unref(v->ns);
        free(v->bus_path);
        free(v);
        return NULL;
}

static WatchedView *watched_view_new(MountEvents *e, Namespace *ns) {
        WatchedView *v = calloc(1, sizeof(WatchedView));

        if (!v)
                return NULL;
        *v = (WatchedView) { .events = e, .ns = ns ? namespace_ref(ns) : NULL };
        return v;
}

/* Starts seeing v's changes; the caller unlinks and frees v on failure. A view is always
 * read inside its namespace (mount-events-view.c explains why, fanotify or not). */
static int view_start(WatchedView *v) {
        return poll_view_start(v);
}

static void view_stop(WatchedView *v) {
        poll_view_stop(v);
}

/* Watched while someone watches it alone or everything; started if it is not yet. */
static int view_ensure(MountEvents *e, Namespace *ns, bool new_view, unsigned watchers) {
        WatchedView *v = view_find(e, ns);
        int r;

        if (v) {
                v->n_watchers += watchers;
                return 0;
        }
        v = watched_view_new(e, ns);
        if (!v)
                return -ENOMEM;
        v->new_view = new_view;
        /* (Counted before its reader is told whether to read its table.) */
        v->n_watchers = watchers;
        r = hashmap_put(e->views, v->ns->name, v);
        if (r < 0) {
                watched_view_free(v);
                return r;
        }
        LIST_PREPEND(e->views_list, v);
        r = view_start(v);
        if (r < 0) {
                view_stop(v);
                hashmap_remove(e->views, v->ns->name);
                LIST_REMOVE(e->views_list, v);
                watched_view_free(v);
                return r;
        }
        return 0;
}


static void view_drop(WatchedView *v) {
        MountEvents *e = v->events;

        view_stop(v);
        hashmap_remove(e->views, v->ns->name);
        LIST_REMOVE(e->views_list, v);
        watched_view_free(v);
        /* Who waited for it waits no more. */
        waiters_check(e);
}

/* The views nobody watches any more. */
static void views_drop_unwatched(MountEvents *e) {
        for (WatchedView *v = e->views_list, *next; v; v = next) {
                next = v->next;
                if (v->n_watchers == 0 && ((e->n_all == 0 && e->n_counts == 0) || !v->ns->set))
                        view_drop(v);
        }
}

/* Watching every view began (or ended): their readers read their tables (or count only). */
static void views_sync_detail(MountEvents *e) {
        for (WatchedView *v = e->views_list; v; v = v->next)
                watched_view_sync_detail(v);
}

/* Every view the Manager has, watched. */
static int views_ensure_all(MountEvents *e) {
        Namespace *n;
        int r = 0;

        for (HashmapIterator i = {}; r >= 0 && hashmap_iterate(e->namespaces->by_name, &i, (void **) &n, NULL);)
                if (n->ready)
                        r = view_ensure(e, n, false, 0);
        return r;
}

static int watch_wait(MountEvents *e, Namespace *ns, MountEventsReadyFunc ready, void *userdata) {
        WatchWaiter *w;

        if (watch_settled(e, ns) || !ready)
                return 1;
        w = calloc(1, sizeof(WatchWaiter));
        if (!w)
                return -ENOMEM;
        *w = (WatchWaiter) { .ns = ns ? namespace_ref(ns) : NULL, .ready = ready, .userdata = userdata };
        LIST_PREPEND(e->waiters, w);
        return 0;
}

static void host_stop(MountEvents *e) {
        if (!e->host)
                return;
        e->host_source = sd_event_source_disable_unref(e->host_source);
        e->host_fd = safe_close(e->host_fd);
        e->host_mounts = host_mounts_free(e->host_mounts);
        e->host = watched_view_free(e->host);
        host_blocks_reset(e);
}

static int host_start(MountEvents *e) {
        int r;

        e->host = watched_view_new(e, NULL);
        if (!e->host)
                return -ENOMEM;
        if (e->mode == MOUNT_EVENTS_POLL)
                return poll_view_start(e->host);
        /* NSM_FANOTIFY_QUEUE=bounded: a test knob, the kernel's default queue, which overflows. */
        r = mount_notify_open(streq_ptr(getenv("NSM_FANOTIFY_QUEUE"), "bounded"), &e->host_fd);
        if (r < 0)
                return r;
        r = mount_notify_mark(e->host_fd, e->host_ns_fd, true);
        if (r < 0)
                return r;
        r = sd_event_add_io(e->namespaces->event, &e->host_source, e->host_fd, EPOLLIN, on_host_io, e);
        if (r < 0)
                return r;
        /* Marked: from now on every change is an event. */
        e->host->settled = true;
        return e->release ? host_blocks_scan(e) : 0;
}

/* The host is watched while someone watches everything, or for ReleaseWithHost=. */
static int host_update(MountEvents *e) {
        bool needed = e->mode != MOUNT_EVENTS_NONE && (e->n_all > 0 || e->release);
        int r;

        if (!needed) {
                host_stop(e);
                return 0;
        }
        if (!e->host) {
                r = host_start(e);
                if (r < 0) {
                        host_stop(e);
                        return r;
                }
        }
        host_mounts_update(e);
        return 0;
}

int mount_events_watch(MountEvents *e, Namespace *ns, MountEventsReadyFunc ready, void *userdata) {
        int r;

        if (e->mode == MOUNT_EVENTS_NONE)
                return -EOPNOTSUPP;
        if (ns) {
                r = view_ensure(e, ns, false, 1);
                if (r < 0)
                        return r;
                watched_view_sync_detail(view_find(e, ns));
        } else if (e->n_all++ == 0) {
                r = host_update(e);
                if (r >= 0)
                        r = views_ensure_all(e);
                if (r < 0) {
                        e->n_all--;
                        views_drop_unwatched(e);
                        views_sync_detail(e);
                        (void) host_update(e);
                        return r;
                }
                views_sync_detail(e);
                log_debug("Watching the mounts of every view (%zu) and of the host.", hashmap_size(e->views));
        }
        r = watch_wait(e, ns, ready, userdata);
        if (r < 0)
                mount_events_unwatch(e, ns);
        return r;
}

void mount_events_unwatch(MountEvents *e, Namespace *ns) {
        WatchedView *v;

        if (!e)
                return;
        if (ns) {
                v = view_find(e, ns);
                if (!v || v->n_watchers == 0)
                        return;
                v->n_watchers--;
        } else {
                if (e->n_all == 0)
                        return;
                e->n_all--;
                if (e->n_all == 0 && e->host)
                        watched_view_clear(e->host);
        }
        views_drop_unwatched(e);
        if (!ns)
                views_sync_detail(e);
        else if ((v = view_find(e, ns)))
                watched_view_sync_detail(v);
        (void) host_update(e);
}

int mount_events_watch_counts(MountEvents *e, MountEventsReadyFunc ready, void *userdata) {
        int r;

        if (e->mode == MOUNT_EVENTS_NONE)
                return -EOPNOTSUPP;
        if (e->n_counts++ == 0) {
                r = views_ensure_all(e);
                if (r < 0) {
                        e->n_counts--;
                        views_drop_unwatched(e);
                        return r;
                }
                log_debug("Counting the mounts of every view (%zu).", hashmap_size(e->views));
        }
        r = watch_wait(e, NULL, ready, userdata);
        if (r < 0)
                mount_events_unwatch_counts(e);
        return r;
}

void mount_events_unwatch_counts(MountEvents *e) {
        if (!e || e->n_counts == 0)
                return;
        e->n_counts--;
        views_drop_unwatched(e);
}

static void on_namespace_ready(Namespace *ns, void *userdata) {
        MountEvents *e = userdata;
        int r;

        if (!e || (e->n_all == 0 && e->n_counts == 0))
                return;
        /* A subscriber learns of it from NamespaceNew, sent before its first table is read: what
         * it starts with is signalled as attached, so that nothing mounted in between is lost. */
        r = view_ensure(e, ns, !view_find(e, ns), 0);
        if (r < 0)
                log_warning_errno(r, "Failed to watch the mounts of the new view of '%s', ignoring: %m", ns->name);
}

static void on_namespace_gone(Namespace *ns, void *userdata) {
        MountEvents *e = userdata;
        WatchedView *v;

        if (e->bus && e->bus->namespace_gone)
                e->bus->namespace_gone(ns, e->bus_userdata);
        v = view_find(e, ns);
        if (v)
                view_drop(v);
}

void mount_events_config_changed(MountEvents *e) {
        bool release = e->namespaces->config->release_with_host && e->mode != MOUNT_EVENTS_NONE;
        int r;

        if (release == e->release)
                return;
        e->release = release;
        if (!release)
                host_blocks_reset(e);
        else if (e->host && e->mode == MOUNT_EVENTS_FANOTIFY)
                (void) host_blocks_scan(e);
        else if (e->host) {
                /* Its mounts' devices come with a first table: read one again. */
                poll_view_stop(e->host);
                r = poll_view_start(e->host);
                if (r < 0)
                        log_warning_errno(r, "Failed to read the host's mounts for ReleaseWithHost=, ignoring: %m");
        }
        r = host_update(e);
        if (r < 0)
                log_warning_errno(r, "Failed to watch the host's unmounts for ReleaseWithHost=, ignoring: %m");
}

/* ---- life ---- */

static MountEventsMode choose_mode(void) {
        const char *knob = getenv("NSM_MOUNT_EVENTS");
        MountEventsMode mode;
        int r;

        /* A test knob: the fallback, or nothing, on a kernel that has fanotify mount events. */
        if (knob && *knob) {
                /* poll-mountinfo: poll, reading tables as before Linux 6.8 (mount-events-view.c). */
                mode = streq(knob, "poll-mountinfo") ? MOUNT_EVENTS_POLL : mount_events_mode_from_string(knob);
                if (mode >= 0 && mode != MOUNT_EVENTS_FANOTIFY)
                        return mode;
                if (mode < 0)
                        log_warning("NSM_MOUNT_EVENTS='%s' is not one of poll, poll-mountinfo, none; ignoring it.", knob);
        }
        r = mount_notify_probe();
        if (r >= 0)
                return MOUNT_EVENTS_FANOTIFY;
        /* Said once, at the start: why this machine polls where another has events. */
        if (mount_notify_unsupported_reason(r))
                log_info("No fanotify mount events: %s. Reading the watched mount tables when the kernel flags a "
                         "change instead.", mount_notify_unsupported_reason(r));
        else
                log_warning_errno(r, "fanotify mount events fail (%m); reading the watched mount tables instead.");
        return MOUNT_EVENTS_POLL;
}

static const NamespaceListener namespace_listener = {
        .ready = on_namespace_ready,
        .gone = on_namespace_gone,
};

int mount_events_new(NamespaceSet *namespaces, ChildSet *children, Ejector *ejector, const MountEventsBus *bus,
                     void *bus_userdata, MountEvents **ret) {
        MountEvents *e = calloc(1, sizeof(MountEvents));
        int r;

        if (!e)
                return -ENOMEM;
        *e = (MountEvents) { .namespaces = namespaces, .children = children, .ejector = ejector, .bus = bus,
                             .bus_userdata = bus_userdata, .host_fd = -EBADF };
        e->views = hashmap_new();
        e->host_blocks = id_map_new();
        e->dev_counts = id_map_new();
        e->release_candidates = id_map_new();
        e->keys = id_map_new();
        e->host_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (!e->views || !e->host_blocks || !e->dev_counts || !e->release_candidates || !e->keys || e->host_ns_fd < 0) {
                r = e->host_ns_fd < 0 ? -errno : -ENOMEM;
                mount_events_free(e);
                return r;
        }
        /* The new views, and those that go: after the bus glue, which tells of a new view first. */
        r = namespace_set_listen(namespaces, &namespace_listener, e);
        if (r < 0) {
                mount_events_free(e);
                return r;
        }
        e->mode = choose_mode();
        log_info("Mount changes are seen with %s.",
                 e->mode == MOUNT_EVENTS_FANOTIFY ? "fanotify mount events" :
                 e->mode == MOUNT_EVENTS_POLL ? "mount tables read again after the kernel flags a change (poll)" :
                 "nothing (NSM_MOUNT_EVENTS=none): no MountsChanged signals, no ReleaseWithHost=");
        /* How tables are read, said once: the kernel (6.8), or a seccomp filter that does not
         * know the syscalls (ENOSYS), decides; the booted tests check what the shipped unit gets. */
        if (e->mode != MOUNT_EVENTS_NONE) {
                uint64_t id;
                ssize_t k = mount_list_ids(0, &id, 1);
                if (k >= 0)
                        log_info("Mount tables are read with listmount(2) and statmount(2) (unique mount ids).");
                else if (k == -EOPNOTSUPP)
                        log_info("Mount tables are read from /proc/self/mountinfo: listmount(2) is missing (before "
                                 "Linux 6.8) or filtered (a seccomp filter that does not know it).");
                else
                        (void) log_full_errno(LOG_INFO, (int) k, "Mount tables are read from /proc/self/mountinfo "
                                              "where listmount(2) fails (%m).");
        }
        *ret = e;
        mount_events_config_changed(e);
        return 0;
}

void mount_events_shutdown(MountEvents *e) {
        if (e)
                e->exiting = true;
}

MountEvents *mount_events_free(MountEvents *e) {
        WatchedView *v;

        if (!e)
                return NULL;
        namespace_set_unlisten(e->namespaces, &namespace_listener, e);
        if (e->bus && e->bus->done)
                e->bus->done(e->bus_userdata);
        /* At exit the calls that wait are dropped with every other (bus_requests_free()). */
        while (e->waiters)
                watch_waiter_free(e, e->waiters);
        e->waiters_defer = sd_event_source_disable_unref(e->waiters_defer);
        while ((v = e->views_list)) {
                LIST_REMOVE(e->views_list, v);
                watched_view_free(v);
        }
        hashmap_free(e->views);
        host_stop(e);
        mount_readers_free(e);
        id_map_free(e->keys);
        id_map_free(e->host_blocks);
        id_map_free(e->dev_counts);
        id_map_free(e->release_candidates);
        safe_close(e->host_ns_fd);
        free(e);
        return NULL;
}
