/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/sysmacros.h>

#include "eject.h"
#include "list.h"
#include "log.h"
#include "mount-events-dbus.h"
#include "mount-events-internal.h"
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
/* Changes in one signal at most: a storm of mounts gives several signals, not one huge message. */
#define SIGNAL_ENTRIES_MAX 8192
/* listmount(2) pages. */
#define SCAN_PAGE 256

MountEventsMode mount_events_mode(const MountEvents *e) {
        return e ? e->mode : MOUNT_EVENTS_NONE;
}

/* ---- collecting and signalling ---- */

bool watched_view_collects(const WatchedView *v) {
        if (!v->ns)
                return v->events->n_all > 0;
        return v->n_watchers > 0 || v->events->n_all > 0;
}

/* Views, and the host in poll mode, are read when their timer fires; the host's fanotify
 * events are signalled then. */
static bool watched_view_polled(const WatchedView *v) {
        return v->ns || v->events->mode == MOUNT_EVENTS_POLL;
}

static void watched_view_clear(WatchedView *v) {
        for (size_t i = 0; i < v->n_attached; i++)
                free(v->attached[i].path);
        v->attached = mfree(v->attached);
        v->n_attached = 0;
        v->detached = mfree(v->detached);
        v->n_detached = 0;
}

void watched_view_note_attach(WatchedView *v, uint64_t id, uint64_t parent_id, const char *path) {
        MountChange *a;
        char *p;

        if (!watched_view_collects(v))
                return;
        p = strdup(path ?: "");
        a = p ? realloc(v->attached, (v->n_attached + 1) * sizeof(MountChange)) : NULL;
        if (!a) {
                free(p);
                log_oom();
                return;
        }
        v->attached = a;
        a[v->n_attached++] = (MountChange) { .id = id, .parent_id = parent_id, .path = p };
}

void watched_view_note_detach(WatchedView *v, uint64_t id) {
        uint64_t *d;

        if (!watched_view_collects(v))
                return;
        /* Attached since the last signal and gone again: in neither list (had it been there
         * before, its move away was listed as detached already). */
        for (size_t i = 0; i < v->n_attached; i++)
                if (v->attached[i].id == id) {
                        free(v->attached[i].path);
                        v->attached[i] = v->attached[--v->n_attached];
                        return;
                }
        d = realloc(v->detached, (v->n_detached + 1) * sizeof(uint64_t));
        if (!d) {
                log_oom();
                return;
        }
        v->detached = d;
        d[v->n_detached++] = id;
}

void watched_view_emit(WatchedView *v) {
        MountEvents *e = v->events;
        size_t nd, na;

        if (v->n_attached == 0 && v->n_detached == 0)
                return;
        /* A signal of bounded size: the rest follows in the next one, detached ones first (a
         * client applies a signal's detached ids before its attached mounts). */
        nd = MIN(v->n_detached, (size_t) SIGNAL_ENTRIES_MAX);
        na = nd < v->n_detached ? 0 : MIN(v->n_attached, (size_t) SIGNAL_ENTRIES_MAX - nd);
        mount_events_dbus_emit(e->manager, v->ns, v->attached, na, v->detached, nd);
        v->last_emit = now_usec(CLOCK_MONOTONIC);
        for (size_t i = 0; i < na; i++)
                free(v->attached[i].path);
        /* (Only what is left: a list never allocated is NULL, and memmove() wants pointers.) */
        if (v->n_attached > na)
                memmove(v->attached, v->attached + na, (v->n_attached - na) * sizeof(MountChange));
        v->n_attached -= na;
        if (v->n_detached > nd)
                memmove(v->detached, v->detached + nd, (v->n_detached - nd) * sizeof(uint64_t));
        v->n_detached -= nd;
        if (v->n_attached == 0 && v->n_detached == 0)
                watched_view_clear(v);
        else if (!watched_view_polled(v))
                watched_view_schedule_emit(v);
}

static int on_view_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        WatchedView *v = userdata;

        if (watched_view_polled(v))
                poll_view_due(v);
        else
                watched_view_emit(v);
        return 0;
}

/* The timer at 'when' unless it is armed already (then it fires as armed). */
static void watched_view_arm(WatchedView *v, uint64_t when) {
        int enabled = SD_EVENT_OFF, r;

        if (v->timer && sd_event_source_get_enabled(v->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        /* Accuracy 1 µs: sd-event's default would let it slip by a quarter of a second. */
        if (!v->timer)
                r = sd_event_add_time(v->events->manager->event, &v->timer, CLOCK_MONOTONIC, when, 1, on_view_timer, v);
        else {
                r = sd_event_source_set_time(v->timer, when);
                if (r >= 0)
                        r = sd_event_source_set_enabled(v->timer, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_warning_errno(r, "Failed to arm a mount events timer, ignoring (the changes wait for the next): %m");
}

void watched_view_schedule_emit(WatchedView *v) {
        if (v->n_attached == 0 && v->n_detached == 0)
                return;
        /* At once after a quiet interval (the changes of this read go together), else when the
         * interval since the last signal has passed. */
        watched_view_arm(v, MAX(now_usec(CLOCK_MONOTONIC), v->last_emit + MOUNT_EVENTS_INTERVAL_USEC));
}

void poll_view_schedule_read(WatchedView *v) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        int enabled = SD_EVENT_OFF;

        /* Quiet for an interval (the usual case: a host mount reaching every view): into the
         * next batch at once, without a timer per view. */
        if (now >= v->last_emit + MOUNT_EVENTS_INTERVAL_USEC &&
            !(v->timer && sd_event_source_get_enabled(v->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)) {
                poll_view_due(v);
                return;
        }
        watched_view_arm(v, MAX(now, v->last_emit + MOUNT_EVENTS_INTERVAL_USEC));
}

/* ---- ReleaseWithHost=: the host's block devices ---- */

void host_blocks_add(MountEvents *e, uint64_t id, dev_t dev) {
        uintptr_t n = (uintptr_t) id_map_get(e->dev_counts, dev);

        if (id_map_get(e->host_blocks, id))
                return;
        if (id_map_put(e->host_blocks, id, (void *) (uintptr_t) dev) < 0 ||
            id_map_put(e->dev_counts, dev, (void *) (n + 1)) < 0) {
                log_oom();
                return;
        }
        /* Mounted again: whatever an earlier Eject did no longer tells about its next unmount. */
        (void) id_map_remove(e->ejected, dev);
}

void host_blocks_remove(MountEvents *e, uint64_t id) {
        dev_t dev = (dev_t) (uintptr_t) id_map_remove(e->host_blocks, id);
        uintptr_t n;

        if (dev == 0)
                return;
        n = (uintptr_t) id_map_get(e->dev_counts, dev);
        if (n > 1) {
                (void) id_map_put(e->dev_counts, dev, (void *) (n - 1));
                return;
        }
        (void) id_map_remove(e->dev_counts, dev);
        if (id_map_put(e->release_candidates, dev, (void *) 1) < 0)
                log_oom();
}

/* After a read: the devices whose last host mount went, unless it came back (a move). */
void host_blocks_release_candidates(MountEvents *e) {
        uint64_t dev;

        for (size_t i = 0; id_map_iterate(e->release_candidates, &i, &dev, NULL);) {
                int r;

                if (id_map_get(e->dev_counts, dev))
                        continue;
                log_info("The host unmounted the last mount of block device %u:%u; detaching the copies views hold.",
                         major((dev_t) dev), minor((dev_t) dev));
                r = eject_release(e->manager, (dev_t) dev);
                if (r < 0)
                        log_warning_errno(r, "Failed to release the copies of block device %u:%u, ignoring: %m",
                                          major((dev_t) dev), minor((dev_t) dev));
        }
        id_map_free(e->release_candidates);
        e->release_candidates = id_map_new();
        if (!e->release_candidates)
                log_oom();
}

void mount_events_ejected(MountEvents *e, dev_t dev) {
        if (e && dev != 0 && id_map_put(e->ejected, dev, (void *) 1) < 0)
                log_oom();
}

bool mount_events_consume_ejected(MountEvents *e, dev_t dev) {
        return e && id_map_remove(e->ejected, dev) != NULL;
}

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
                if (collects) {
                        watched_view_note_attach(h, st.id, st.parent_id, st.path);
                        watched_view_schedule_emit(h);
                }
                mount_stat_done(&st);
                return;
        case MOUNT_EVENT_DETACH:
                if (e->release)
                        host_blocks_remove(e, ev->mnt_id);
                if (collects) {
                        watched_view_note_detach(h, ev->mnt_id);
                        watched_view_schedule_emit(h);
                }
                return;
        case MOUNT_EVENT_OVERFLOW:
                log_warning("The kernel dropped mount events of the host; rereading its block devices.");
                if (e->release)
                        (void) host_blocks_scan(e);
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
        if (!v)
                return NULL;
        watched_view_clear(v);
        poll_view_stop(v);
        poll_view_free_snapshot(v);
        v->timer = sd_event_source_disable_unref(v->timer);
        namespace_unref(v->ns);
        free(v);
        return NULL;
}

static WatchedView *watched_view_new(MountEvents *e, Namespace *ns) {
        WatchedView *v = calloc(1, sizeof(WatchedView));

        if (!v)
                return NULL;
        *v = (WatchedView) { .events = e, .ns = ns ? namespace_ref(ns) : NULL, .mountinfo_fd = -EBADF };
        return v;
}

/* Starts seeing v's changes; the caller unlinks and frees v on failure. A view is always
 * read inside its namespace (mount-events-poll.c explains why, fanotify or not). */
static int view_start(WatchedView *v) {
        return poll_view_start(v);
}

static void view_stop(WatchedView *v) {
        poll_view_stop(v);
}

static WatchedView *view_find(MountEvents *e, Namespace *ns) {
        return hashmap_get(e->views, ns->name);
}

/* Watched while someone watches it alone or everything; started if it is not yet. */
static int view_ensure(MountEvents *e, Namespace *ns) {
        WatchedView *v = view_find(e, ns);
        int r;

        if (v)
                return 0;
        v = watched_view_new(e, ns);
        if (!v)
                return -ENOMEM;
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

static void waiters_check(MountEvents *e);

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
                if (v->n_watchers == 0 && (e->n_all == 0 || !v->ns->manager))
                        view_drop(v);
        }
}

static void host_stop(MountEvents *e) {
        if (!e->host)
                return;
        e->host_source = sd_event_source_disable_unref(e->host_source);
        e->host_fd = safe_close(e->host_fd);
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
        r = mount_notify_open(&e->host_fd);
        if (r < 0)
                return r;
        r = mount_notify_mark(e->host_fd, e->host_ns_fd, true);
        if (r < 0)
                return r;
        r = sd_event_add_io(e->manager->event, &e->host_source, e->host_fd, EPOLLIN, on_host_io, e);
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
        if (e->host)
                return 0;
        r = host_start(e);
        if (r < 0)
                host_stop(e);
        return r;
}

/* ---- waiting for the first read ---- */

typedef struct WatchWaiter WatchWaiter;
struct WatchWaiter {
        Namespace *ns;           /* a reference; NULL: everything */
        MountEventsReadyFunc ready;
        void *userdata;
        WatchWaiter *prev, *next;
};

static bool watch_settled(MountEvents *e, Namespace *ns) {
        WatchedView *v;

        if (ns) {
                v = view_find(e, ns);
                return !v || v->settled;
        }
        if (e->host && !e->host->settled)
                return false;
        for (v = e->views_list; v; v = v->next)
                if (!v->settled)
                        return false;
        return true;
}

static WatchWaiter *watch_waiter_free(MountEvents *e, WatchWaiter *w) {
        LIST_REMOVE(e->waiters, w);
        namespace_unref(w->ns);
        free(w);
        return NULL;
}

static int on_waiters_defer(sd_event_source *s, void *userdata) {
        MountEvents *e = userdata;

        e->waiters_defer = sd_event_source_disable_unref(e->waiters_defer);
        for (WatchWaiter *w = e->waiters, *next; w; w = next) {
                next = w->next;
                if (!watch_settled(e, w->ns))
                        continue;
                MountEventsReadyFunc ready = w->ready;
                void *userdata_ = w->userdata;
                watch_waiter_free(e, w);
                ready(userdata_);
                /* The callback may have changed the list: start over. */
                next = e->waiters;
        }
        return 0;
}

/* Checked from the loop, never from within a caller's own call. */
static void waiters_check(MountEvents *e) {
        if (!e->waiters || e->waiters_defer)
                return;
        if (sd_event_add_defer(e->manager->event, &e->waiters_defer, on_waiters_defer, e) < 0)
                log_warning("Failed to schedule answering subscribers, they wait for the next change.");
}

void watched_view_settled(WatchedView *v) {
        if (v->settled)
                return;
        v->settled = true;
        waiters_check(v->events);
}

int mount_events_watch(MountEvents *e, Namespace *ns, MountEventsReadyFunc ready, void *userdata) {
        WatchWaiter *w;
        Namespace *n;
        int r;

        if (e->mode == MOUNT_EVENTS_NONE)
                return -EOPNOTSUPP;
        if (ns) {
                r = view_ensure(e, ns);
                if (r < 0)
                        return r;
                view_find(e, ns)->n_watchers++;
        } else if (e->n_all++ == 0) {
                r = host_update(e);
                for (HashmapIterator i = {}; r >= 0 && hashmap_iterate(e->manager->namespaces, &i, (void **) &n, NULL);)
                        if (n->ready)
                                r = view_ensure(e, n);
                if (r < 0) {
                        e->n_all--;
                        views_drop_unwatched(e);
                        (void) host_update(e);
                        return r;
                }
                log_debug("Watching the mounts of every view (%zu) and of the host.", hashmap_size(e->views));
        }
        if (watch_settled(e, ns) || !ready)
                return 1;
        w = calloc(1, sizeof(WatchWaiter));
        if (!w) {
                mount_events_unwatch(e, ns);
                return -ENOMEM;
        }
        *w = (WatchWaiter) { .ns = ns ? namespace_ref(ns) : NULL, .ready = ready, .userdata = userdata };
        LIST_PREPEND(e->waiters, w);
        return 0;
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
        (void) host_update(e);
}

void mount_events_namespace_ready(MountEvents *e, Namespace *ns) {
        WatchedView *v;
        int r;

        if (!e || e->n_all == 0)
                return;
        r = view_ensure(e, ns);
        if (r < 0) {
                log_warning_errno(r, "Failed to watch the mounts of the new view of '%s', ignoring: %m", ns->name);
                return;
        }
        /* A subscriber learns of it from NamespaceNew, sent before its first table is read: what
         * it starts with is signalled as attached, so that nothing mounted in between is lost. */
        v = view_find(e, ns);
        if (v && !v->settled)
                v->new_view = true;
}

void mount_events_namespace_gone(MountEvents *e, Namespace *ns) {
        WatchedView *v;

        if (!e)
                return;
        mount_events_dbus_namespace_gone(e->manager, ns);
        v = view_find(e, ns);
        if (v)
                view_drop(v);
}

void mount_events_config_changed(MountEvents *e) {
        bool release = e->manager->config.release_with_host && e->mode != MOUNT_EVENTS_NONE;
        int r;

        if (release == e->release)
                return;
        e->release = release;
        if (!release)
                host_blocks_reset(e);
        else if (e->host && e->mode == MOUNT_EVENTS_FANOTIFY)
                (void) host_blocks_scan(e);
        r = host_update(e);
        if (r < 0)
                log_warning_errno(r, "Failed to watch the host's unmounts for ReleaseWithHost=, ignoring: %m");
}

/* ---- life ---- */

static MountEventsMode choose_mode(void) {
        const char *knob = getenv("NSM_MOUNT_EVENTS");
        MountEventsMode mode;
        int fd = -EBADF, r;

        /* A test knob: the fallback, or nothing, on a kernel that has fanotify mount events. */
        if (knob && *knob) {
                /* poll-mountinfo: poll, reading tables as before Linux 6.8 (mount-events-poll.c). */
                mode = streq(knob, "poll-mountinfo") ? MOUNT_EVENTS_POLL : mount_events_mode_from_string(knob);
                if (mode >= 0 && mode != MOUNT_EVENTS_FANOTIFY)
                        return mode;
                if (mode < 0)
                        log_warning("NSM_MOUNT_EVENTS='%s' is not one of poll, poll-mountinfo, none; ignoring it.", knob);
        }
        r = mount_notify_open(&fd);
        safe_close(fd);
        if (r >= 0)
                return MOUNT_EVENTS_FANOTIFY;
        if (r != -EOPNOTSUPP)
                log_warning_errno(r, "fanotify mount events fail (%m); reading the watched mount tables instead.");
        return MOUNT_EVENTS_POLL;
}

int mount_events_new(Manager *m, MountEvents **ret) {
        MountEvents *e = calloc(1, sizeof(MountEvents));
        int r;

        if (!e)
                return -ENOMEM;
        *e = (MountEvents) { .manager = m, .host_fd = -EBADF };
        e->views = hashmap_new();
        e->host_blocks = id_map_new();
        e->dev_counts = id_map_new();
        e->release_candidates = id_map_new();
        e->ejected = id_map_new();
        e->host_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (!e->views || !e->host_blocks || !e->dev_counts ||
            !e->release_candidates || !e->ejected || e->host_ns_fd < 0) {
                r = e->host_ns_fd < 0 ? -errno : -ENOMEM;
                mount_events_free(e);
                return r;
        }
        e->mode = choose_mode();
        log_info("Mount changes are seen with %s.",
                 e->mode == MOUNT_EVENTS_FANOTIFY ? "fanotify mount events" :
                 e->mode == MOUNT_EVENTS_POLL ? "mount tables read again after the kernel flags a change (poll)" :
                 "nothing (NSM_MOUNT_EVENTS=none): no MountsChanged signals, no ReleaseWithHost=");
        *ret = e;
        mount_events_config_changed(e);
        return 0;
}

MountEvents *mount_events_free(MountEvents *e) {
        WatchedView *v;

        if (!e)
                return NULL;
        mount_events_dbus_free(e->manager);
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
        e->batch_defer = sd_event_source_disable_unref(e->batch_defer);
        id_map_free(e->host_blocks);
        id_map_free(e->dev_counts);
        id_map_free(e->release_candidates);
        id_map_free(e->ejected);
        safe_close(e->host_ns_fd);
        free(e);
        return NULL;
}
