/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The watched views' changes, collected and signalled (at most one signal per view per
 * MOUNT_EVENTS_INTERVAL_USEC), their first reads waited for, and the host's block devices
 * tracked for ReleaseWithHost=: what mount-events.c's watching and its host's fanotify events
 * feed.
 *
 * Poll mode: mount tables read inside their namespace: every watched view, and the host where
 * the kernel has no fanotify mount events (before Linux 6.15) or NSM_MOUNT_EVENTS=poll. The
 * watching is the mount readers' (mount-reader.h): long-lived processes that hold each watched
 * namespace's /proc/self/mountinfo, read a table again when the kernel flags a change there
 * (POLLPRI; at most once per MOUNT_EVENTS_INTERVAL_USEC), keep the last one, and send only the
 * differences, a change alike in many views once with the views. The daemon holds no table
 * and compares nothing: it routes what the readers send to the signals. */
#include <sys/sysmacros.h>

#include "child.h"
#include "log.h"
#include "list.h"
#include "mount-events-view.h"
#include "mount-notify.h"
#include "op-queue.h"
#include "time-util.h"

/* Changes in one signal at most: a storm of mounts gives several signals, not one huge message. */
#define SIGNAL_ENTRIES_MAX 8192

/* ---- collecting and signalling ---- */

bool watched_view_collects(const WatchedView *v) {
        if (!v->ns)
                return v->events->n_all > 0;
        return v->n_watchers > 0 || v->events->n_all > 0;
}

void watched_view_clear(WatchedView *v) {
        for (size_t i = 0; i < v->n_attached; i++)
                free(v->attached[i].path);
        v->attached = mfree(v->attached);
        v->n_attached = 0;
        for (size_t i = 0; i < v->n_detached; i++)
                free(v->detached[i].path);
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

void watched_view_note_detach(WatchedView *v, uint64_t id, const char *path) {
        MountChange *d;
        char *p = NULL;

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
        if (path && !(p = strdup(path))) {
                log_oom();
                return;
        }
        d = realloc(v->detached, (v->n_detached + 1) * sizeof(MountChange));
        if (!d) {
                free(p);
                log_oom();
                return;
        }
        v->detached = d;
        d[v->n_detached++] = (MountChange) { .id = id, .path = p };
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
        if (e->bus && e->bus->emit)
                e->bus->emit(v->ns, v->attached, na, v->detached, nd, e->bus_userdata);
        v->last_emit = now_usec(CLOCK_MONOTONIC);
        for (size_t i = 0; i < na; i++)
                free(v->attached[i].path);
        for (size_t i = 0; i < nd; i++)
                free(v->detached[i].path);
        /* (Only what is left: a list never allocated is NULL, and memmove() wants pointers.) */
        if (v->n_attached > na)
                memmove(v->attached, v->attached + na, (v->n_attached - na) * sizeof(MountChange));
        v->n_attached -= na;
        if (v->n_detached > nd)
                memmove(v->detached, v->detached + nd, (v->n_detached - nd) * sizeof(MountChange));
        v->n_detached -= nd;
        if (v->n_attached == 0 && v->n_detached == 0)
                watched_view_clear(v);
        else
                watched_view_schedule_emit(v);
}

/* While an operation on the view runs (a BindMount...), its signal waits, up to HOLD_MAX_USEC: a
 * client reads GetMountsEx on a MountsChanged, and the daemon records what it mounted when the
 * operation ends, so that the origin of the mount is known by then. */
#define HOLD_RECHECK_USEC (2 * USEC_PER_MSEC)
#define HOLD_MAX_USEC (USEC_PER_SEC)

static void watched_view_arm(WatchedView *v, uint64_t when);

static bool view_held(WatchedView *v) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        if (!v->ns || !op_queue_running(v->ns->ops)) {
                v->held_since = 0;
                return false;
        }
        if (v->held_since == 0)
                v->held_since = now;
        if (now >= v->held_since + HOLD_MAX_USEC)
                return false;
        watched_view_arm(v, now + HOLD_RECHECK_USEC);
        return true;
}

static void watched_view_emit_unless_held(WatchedView *v) {
        if (!view_held(v)) {
                v->held_since = 0;
                watched_view_emit(v);
        }
}

static int on_view_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        watched_view_emit_unless_held(userdata);
        return 0;
}

/* The timer at 'when' unless it is armed already (then it fires as armed). */
static void watched_view_arm(WatchedView *v, uint64_t when) {
        int enabled = SD_EVENT_OFF, r;

        if (v->timer && sd_event_source_get_enabled(v->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                return;
        /* Accuracy 1 µs: sd-event's default would let it slip by a quarter of a second. */
        if (!v->timer)
                r = sd_event_add_time(v->events->namespaces->event, &v->timer, CLOCK_MONOTONIC, when, 1, on_view_timer, v);
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
        ejector_forget(e->ejector, dev);
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
                r = eject_release(e->ejector, (dev_t) dev);
                if (r < 0)
                        log_warning_errno(r, "Failed to release the copies of block device %u:%u, ignoring: %m",
                                          major((dev_t) dev), minor((dev_t) dev));
        }
        id_map_free(e->release_candidates);
        e->release_candidates = id_map_new();
        if (!e->release_candidates)
                log_oom();
}

WatchedView *view_find(MountEvents *e, Namespace *ns) {
        return hashmap_get(e->views, ns->name);
}

/* ---- waiting for the first read ---- */

bool watch_settled(MountEvents *e, Namespace *ns) {
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

WatchWaiter *watch_waiter_free(MountEvents *e, WatchWaiter *w) {
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
void waiters_check(MountEvents *e) {
        if (!e->waiters || e->waiters_defer)
                return;
        if (sd_event_add_defer(e->namespaces->event, &e->waiters_defer, on_waiters_defer, e) < 0)
                log_warning("Failed to schedule answering subscribers, they wait for the next change.");
}

/* A view (or the host) was read for the first time: watchers waiting for it go on, from the
 * event loop (waiters_check()). */
static void watched_view_settled(WatchedView *v) {
        if (v->settled)
                return;
        v->settled = true;
        waiters_check(v->events);
}

/* ---- reading tables inside their namespaces: the mount readers ---- */

/* Readers, each holding two fds per view it watches (the namespace and its mountinfo): a second
 * one starts once the first has READER_SPLIT views, and spreads the reading over two CPUs. */
#define READERS_MAX 2
#define READER_SPLIT 256

static void reader_on_reading(MountReader *r, void *userdata) {
}

static void reader_on_changed(MountReader *r, sd_bus_message *m, void *userdata);
static void reader_on_gone(MountReader *r, void *userdata);
static void readers_check(MountEvents *e);

static const MountReaderOps reader_ops = {
        .reading = reader_on_reading,
        .changed = reader_on_changed,
        .gone = reader_on_gone,
};

/* A host mount that reaches thousands of views flags them as it propagates, over some ms: a
 * reader reads what is flagged in a pass, then the rest in the next. Until the readers have
 * been quiet for this long, more of the same change may come. */
#define READERS_SETTLE_USEC (3 * USEC_PER_MSEC)

bool mount_events_readers_busy(const MountEvents *e) {
        if (e->readers_last_changed + READERS_SETTLE_USEC > now_usec(CLOCK_MONOTONIC))
                return true;
        for (size_t i = 0; i < READERS_MAX; i++)
                if (e->readers[i] && mount_reader_busy(e->readers[i]))
                        return true;
        return false;
}

static int reader_pick(MountEvents *e, MountReader **ret) {
        MountReader *best = NULL;
        size_t slot = READERS_MAX;
        int r;

        for (size_t i = 0; i < READERS_MAX; i++) {
                if (!e->readers[i]) {
                        if (slot == READERS_MAX)
                                slot = i;
                        continue;
                }
                if (mount_reader_gone(e->readers[i]))
                        continue;
                if (!best || *mount_reader_load(e->readers[i]) < *mount_reader_load(best))
                        best = e->readers[i];
        }
        if (slot < READERS_MAX && (!best || *mount_reader_load(best) >= READER_SPLIT)) {
                r = mount_reader_new(e->namespaces->event, &reader_ops, e, &e->readers[slot]);
                if (r >= 0) {
                        *ret = e->readers[slot];
                        return 0;
                }
                if (!best)
                        return log_warning_errno(r, "Failed to start a mount reader: %m");
        }
        if (!best)
                return -EAGAIN;   /* both gone: replaced from the loop, and their views watched again */
        *ret = best;
        return 0;
}

/* Its reader told v's number of mounts: NMounts stays current, and MountCountsChanged tells it. */
static void view_count_update(WatchedView *v, uint32_t count) {
        MountEvents *e = v->events;

        if (!v->ns)
                return;
        v->ns->n_mounts = count;
        if (v->count_known && v->count == count)
                return;
        bool first = !v->count_known;
        v->count = count;
        v->count_known = true;
        /* A first count is news only for a view made while subscribed: of the others, the
         * subscriber reads NMounts once answered. */
        if (first && !v->new_view)
                return;
        if (e->n_counts > 0 && e->bus && e->bus->count)
                e->bus->count(v, e->bus_userdata);
}

static int on_watched(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        WatchedView *v = userdata;
        const sd_bus_error *error = sd_bus_message_get_error(m);
        uint32_t count;

        v->watch_slot = sd_bus_slot_unref(v->watch_slot);
        v->baseline = false;
        if (error)
                log_warning("Cannot watch the mounts of %s%s: %s", v->ns ? "the view of " : "the host",
                            v->ns ? v->ns->name : "", error->message ?: error->name);
        else if (sd_bus_message_read(m, "u", &count) > 0)
                view_count_update(v, count);
        /* (A first table asked for meanwhile settles it once read.) */
        if (!v->detail_slot)
                watched_view_settled(v);
        return 1;
}

bool watched_view_wants_detail(const WatchedView *v) {
        return !v->ns || watched_view_collects(v);
}

static int on_detail(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        WatchedView *v = userdata;
        const sd_bus_error *error = sd_bus_message_get_error(m);

        v->detail_slot = sd_bus_slot_unref(v->detail_slot);
        if (error) {
                /* The reader counts on: so do we. A reader that died (no reply) is replaced and
                 * its views watched again as they are wanted then (on_readers_defer()). */
                v->detail = false;
                if (sd_bus_error_has_name(error, SD_BUS_ERROR_NO_REPLY))
                        return 1;
                log_warning("Cannot read the mounts of the view of %s: %s", v->ns->name, error->message ?: error->name);
        } else if (watched_view_wants_detail(v) != v->detail) {
                /* Wanted otherwise meanwhile: told now (one request at a time). */
                watched_view_sync_detail(v);
                return 1;
        }
        if (!v->watch_slot)
                watched_view_settled(v);
        return 1;
}

/* Someone began or ceased wanting v's changes: its reader keeps its table, or drops it. A
 * watcher of its changes waits for the first table (v is not settled until then). One request
 * at a time: while a table is being read, what is wanted next waits for its answer, so that a
 * client subscribing and unsubscribing in a loop costs at most one read of each view at a time. */
void watched_view_sync_detail(WatchedView *v) {
        bool want = watched_view_wants_detail(v);
        int r;

        /* (Not being watched yet: poll_view_start() tells its reader what is wanted.) */
        if (!v->reader || v->detail_slot || v->detail == want)
                return;
        v->detail = want;
        if (want) {
                v->settled = false;
                r = mount_reader_set_detail(v->reader, v->key, true, on_detail, v, &v->detail_slot);
        } else {
                watched_view_clear(v);
                r = mount_reader_set_detail(v->reader, v->key, false, NULL, NULL, NULL);
        }
        if (r < 0) {
                /* Not sent: the reader goes on as it did. */
                v->detail = !want;
                log_warning_errno(r, "Failed to tell a mount reader what to read of the view of %s: %m", v->ns->name);
        }
        if (!v->detail_slot && !v->watch_slot)
                watched_view_settled(v);
}

int poll_view_start(WatchedView *v) {
        MountEvents *e = v->events;
        MountReader *reader = NULL;
        int r;

        r = reader_pick(e, &reader);
        if (r < 0)
                return r;
        do
                v->key = ++e->next_key;
        while (v->key == 0 || id_map_get(e->keys, v->key));
        r = id_map_put(e->keys, v->key, v);
        if (r < 0)
                return r;
        /* The host's first table is its block devices' (ReleaseWithHost=); a new view's is what it
         * starts with, signalled as attached. */
        v->detail = watched_view_wants_detail(v);
        r = mount_reader_watch(reader, v->key, v->ns ? v->ns->mntns_fd : e->host_ns_fd, !v->ns || v->new_view,
                               v->detail, on_watched, v, &v->watch_slot);
        if (r < 0) {
                id_map_remove(e->keys, v->key);
                v->key = 0;
                return r;
        }
        v->reader = reader;
        v->baseline = !v->ns;
        (*mount_reader_load(reader))++;
        return 0;
}

void poll_view_stop(WatchedView *v) {
        MountEvents *e = v->events;

        v->watch_slot = sd_bus_slot_unref(v->watch_slot);
        v->detail_slot = sd_bus_slot_unref(v->detail_slot);
        if (v->reader) {
                mount_reader_unwatch(v->reader, v->key);
                /* A reader with nothing to watch ends (from the loop). */
                if (--(*mount_reader_load(v->reader)) == 0)
                        readers_check(e);
                v->reader = NULL;
        }
        if (v->key != 0)
                id_map_remove(e->keys, v->key);
        v->key = 0;
}

/* A view's own signals only where someone asked for them: an aggregated subscriber alone costs
 * the daemon no work per view beyond naming it. */
static bool view_signals(const WatchedView *v) {
        if (!v->ns)
                return v->events->n_all > 0;
        return v->n_watchers > 0 || v->events->n_signal_all > 0;
}

typedef struct Touched {
        WatchedView **views;
        size_t n, cap;
} Touched;

static void touch(Touched *t, WatchedView *v) {
        if (v->touched)
                return;
        if (t->n == t->cap) {
                size_t cap = MAX(t->cap * 2, (size_t) 64);
                WatchedView **p = realloc(t->views, cap * sizeof(WatchedView *));
                if (!p) {
                        log_oom();
                        return;
                }
                t->views = p;
                t->cap = cap;
        }
        v->touched = true;
        t->views[t->n++] = v;
}

/* One entry of Changed: a mount point and device, and the views where it changed. */
static int changed_entry(MountEvents *e, sd_bus_message *m, char sign, Touched *t, WatchedView ***agg,
                         size_t *agg_cap) {
        _cleanup_free_ char *path = NULL;
        const void *p;
        size_t size, n_agg = 0;
        uint64_t dev;
        int r;

        r = sd_bus_message_read_array(m, 'y', &p, &size);
        if (r < 0)
                return r;
        path = strndup(p, size);
        if (!path)
                return -ENOMEM;
        r = sd_bus_message_read(m, "t", &dev);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', sign == '+' ? "(utt)" : "(ut)");
        if (r < 0)
                return r;
        for (;;) {
                uint64_t id, parent_id = 0;
                uint32_t key;
                WatchedView *v;

                r = sign == '+' ? sd_bus_message_read(m, "(utt)", &key, &id, &parent_id)
                                : sd_bus_message_read(m, "(ut)", &key, &id);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                v = id_map_get(e->keys, key);
                if (!v)
                        continue;   /* no longer watched */
                if (!v->ns && e->release) {
                        if (sign == '+' && major((dev_t) dev) != 0)
                                host_blocks_add(e, id, (dev_t) dev);
                        else if (sign == '-')
                                host_blocks_remove(e, id);
                }
                /* The host's first table is its baseline, not told. */
                if (v->baseline)
                        continue;
                if (view_signals(v)) {
                        if (sign == '+')
                                watched_view_note_attach(v, id, parent_id, path);
                        else
                                watched_view_note_detach(v, id, path);
                        touch(t, v);
                }
                if (v->ns && e->n_aggregate > 0) {
                        if (n_agg == *agg_cap) {
                                size_t cap = MAX(*agg_cap * 2, (size_t) 64);
                                WatchedView **a = realloc(*agg, cap * sizeof(WatchedView *));
                                if (!a)
                                        return -ENOMEM;
                                *agg = a;
                                *agg_cap = cap;
                        }
                        (*agg)[n_agg++] = v;
                }
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        if (n_agg > 0 && e->bus && e->bus->aggregate)
                e->bus->aggregate(sign, path, *agg, n_agg, e->bus_userdata);
        return 0;
}

static void reader_on_changed(MountReader *reader, sd_bus_message *m, void *userdata) {
        MountEvents *e = userdata;
        _cleanup_free_ WatchedView **agg = NULL;
        Touched t = {};
        size_t agg_cap = 0;
        int r = 0;

        e->readers_last_changed = now_usec(CLOCK_MONOTONIC);

        /* Detached first: an id the kernel reused is detached, then attached again. */
        for (const char *sign = "-+"; r >= 0 && *sign; sign++) {
                r = sd_bus_message_enter_container(m, 'a', *sign == '+' ? "(ayta(utt))" : "(ayta(ut))");
                while (r >= 0) {
                        r = sd_bus_message_enter_container(m, 'r', *sign == '+' ? "ayta(utt)" : "ayta(ut)");
                        if (r <= 0)
                                break;
                        r = changed_entry(e, m, *sign, &t, &agg, &agg_cap);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(m);
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        /* The views whose number of mounts changed. */
        if (r >= 0) {
                const uint32_t *keys = NULL, *counts = NULL;
                size_t n_keys = 0, n_counts = 0;
                r = sd_bus_message_read_array(m, 'u', (const void **) &keys, &n_keys);
                if (r >= 0)
                        r = sd_bus_message_read_array(m, 'u', (const void **) &counts, &n_counts);
                if (r >= 0 && n_keys != n_counts)
                        r = -EBADMSG;
                for (size_t i = 0; r >= 0 && i < n_keys / sizeof(uint32_t); i++) {
                        WatchedView *v = id_map_get(e->keys, keys[i]);
                        if (v)
                                view_count_update(v, counts[i]);
                }
        }
        if (r < 0)
                log_warning_errno(r, "A mount reader sent changes we cannot read, ignoring the rest: %m");
        for (size_t i = 0; i < t.n; i++) {
                WatchedView *v = t.views[i];
                int enabled = SD_EVENT_OFF;

                v->touched = false;
                /* (A signal held already goes when its timer says.) */
                if (v->timer && sd_event_source_get_enabled(v->timer, &enabled) >= 0 && enabled != SD_EVENT_OFF)
                        continue;
                watched_view_emit_unless_held(v);
        }
        free(t.views);
        if (e->host && e->host->reader == reader)
                host_blocks_release_candidates(e);
}

/* A reader that died: its views go to another (what changed meanwhile is not told). A reader
 * that watches nothing ends. */
static int on_readers_defer(sd_event_source *s, void *userdata) {
        MountEvents *e = userdata;
        bool orphans = false;

        e->readers_defer = sd_event_source_disable_unref(e->readers_defer);
        for (size_t i = 0; i < READERS_MAX; i++) {
                MountReader *dead = e->readers[i];

                if (dead && !e->readers_gone[i] && *mount_reader_load(dead) == 0) {
                        e->readers[i] = mount_reader_free(dead);
                        continue;
                }
                if (!dead || !e->readers_gone[i])
                        continue;
                if (e->host && e->host->reader == dead) {
                        e->host->reader = NULL;
                        e->host->orphaned = orphans = true;
                }
                for (WatchedView *v = e->views_list; v; v = v->next)
                        if (v->reader == dead) {
                                v->reader = NULL;
                                v->orphaned = orphans = true;
                        }
                e->readers[i] = mount_reader_free(dead);
                e->readers_gone[i] = false;
        }
        for (WatchedView *v = e->host ?: e->views_list; orphans && v; v = v == e->host ? e->views_list : v->next) {
                if (!v->orphaned)
                        continue;
                v->orphaned = false;
                poll_view_stop(v);
                v->new_view = false;
                /* Who subscribes now waits for the new reader's first read. */
                v->settled = false;
                if (e->exiting || poll_view_start(v) < 0)
                        watched_view_settled(v);
        }
        return 0;
}

static void readers_check(MountEvents *e) {
        if (!e->readers_defer && sd_event_add_defer(e->namespaces->event, &e->readers_defer, on_readers_defer, e) < 0)
                log_warning("Failed to schedule replacing or ending a mount reader.");
}

static void reader_on_gone(MountReader *r, void *userdata) {
        MountEvents *e = userdata;

        for (size_t i = 0; i < READERS_MAX; i++)
                if (e->readers[i] == r)
                        e->readers_gone[i] = true;
        readers_check(e);
}

void mount_readers_free(MountEvents *e) {
        e->readers_defer = sd_event_source_disable_unref(e->readers_defer);
        for (size_t i = 0; i < READERS_MAX; i++)
                e->readers[i] = mount_reader_free(e->readers[i]);
}
