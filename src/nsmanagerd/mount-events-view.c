/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The watched views' changes, collected and signalled (at most one signal per view per
 * MOUNT_EVENTS_INTERVAL_USEC), their first reads waited for, and the host's block devices
 * tracked for ReleaseWithHost=: what mount-events.c's watching and its host's fanotify events
 * feed.
 *
 * Poll mode: mount tables read inside their namespace: every watched view, and the host where the kernel
 * has no fanotify mount events (before Linux 6.15) or NSM_MOUNT_EVENTS=poll. Each time the
 * kernel flags a change on a /proc/self/mountinfo opened in the namespace (POLLPRI), the table
 * is read again and compared with the last one.
 *
 * The daemon only holds those files, opened by the builder inside each view: it never reads
 * one (a table can be large, and reading takes the kernel's namespace lock). Reading is done by
 * a killable child, one per batch of namespaces that changed, which enters each namespace and
 * reads it with listmount(2) and statmount(2) where the kernel has them (unique ids), else from
 * /proc/self/mountinfo (the ids the kernel reuses). A namespace is read at most once per
 * MOUNT_EVENTS_INTERVAL_USEC. */
#include <fcntl.h>
#include <sched.h>
#include <sys/sysmacros.h>

#include "builder.h"
#include "child.h"
#include "log.h"
#include "list.h"
#include "mount-events-view.h"
#include "mount-notify.h"
#include "mount-util.h"
#include "time-util.h"

/* Changes in one signal at most: a storm of mounts gives several signals, not one huge message. */
#define SIGNAL_ENTRIES_MAX 8192

/* ---- collecting and signalling ---- */

bool watched_view_collects(const WatchedView *v) {
        if (!v->ns)
                return v->events->n_all > 0;
        return v->n_watchers > 0 || v->events->n_all > 0;
}

static void poll_view_due(WatchedView *v);

/* Views, and the host in poll mode, are read when their timer fires; the host's fanotify
 * events are signalled then. */
static bool watched_view_polled(const WatchedView *v) {
        return v->ns || v->events->mode == MOUNT_EVENTS_POLL;
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

/* A view whose table changed is read again: now, or once the interval since its last read has
 * passed. */
static void poll_view_schedule_read(WatchedView *v) {
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

/* ---- reading tables inside their namespaces (poll mode) ---- */


/* At most this many namespaces per child (each is an fd it keeps), and as many children at
 * once as there are CPUs, at most BATCHES_MAX. */
#define BATCH_MAX 512
#define BATCHES_MAX 4

/* The test knob NSM_MOUNT_EVENTS=poll-mountinfo: the tables as kernels before 6.8 give them. */
static bool force_mountinfo(void) {
        const char *knob = getenv("NSM_MOUNT_EVENTS");
        return knob && streq(knob, "poll-mountinfo");
}

/* ---- the reader child ---- */

typedef struct BatchItem {
        WatchedView *v;          /* NULL once v went while it was read */
        int ns_fd;               /* < 0: the host */
} BatchItem;

typedef struct Batch {
        MountEvents *events;
        BatchItem *items;
        size_t n_items;
        int host_ns_fd;
        bool mountinfo_only;
} Batch;

/* Record layout (native byte order, the child is ours): per table a header, then its mounts. */
typedef struct TableHeader {
        uint32_t index;
        int32_t result;          /* < 0: this table could not be read */
        uint32_t n_mounts;
        uint32_t unique_ids;     /* 1: unique ids (statmount), 0: mountinfo's */
} TableHeader;

typedef struct MountRecord {
        uint64_t id, parent_id;
        uint32_t dev_major, dev_minor;
        uint32_t path_len;       /* bytes of the path that follow, without a NUL; RECORD_KNOWN: as before */
} MountRecord;

/* A mount of the last table: only its id is sent, the rest is what the daemon has. */
#define RECORD_KNOWN UINT32_MAX

static int write_mount(FILE *f, uint64_t id, uint64_t parent, uint32_t major_, uint32_t minor_, const char *path) {
        MountRecord rec = { .id = id, .parent_id = parent, .dev_major = major_, .dev_minor = minor_,
                            .path_len = (uint32_t) strlen(path) };
        if (fwrite(&rec, sizeof rec, 1, f) != 1 || fwrite(path, 1, rec.path_len, f) != rec.path_len)
                return -EIO;
        return 0;
}

static int snapshot_cmp(const void *a, const void *b);

/* The table of the namespace we are in, with unique ids. The child sees the daemon's memory as
 * it was at the fork: of the mounts the last table (old, sorted by id) had, only the ids are
 * sent, and only a new one is asked its parent and mount point. A unique id is never reused. */
static int read_by_statmount(FILE *f, const MountSnapshotEntry *old, size_t n_old, uint32_t *ret_n) {
        uint64_t ids[256], after = 0;
        uint32_t n = 0;

        for (;;) {
                ssize_t k = mount_list_ids(after, ids, ELEMENTSOF(ids));
                if (k < 0)
                        return (int) k;
                for (ssize_t i = 0; i < k; i++) {
                        MountSnapshotEntry key = { .id = ids[i] };
                        MountStat st = {};
                        if (old && bsearch(&key, old, n_old, sizeof key, snapshot_cmp)) {
                                MountRecord rec = { .id = ids[i], .path_len = RECORD_KNOWN };
                                if (fwrite(&rec, sizeof rec, 1, f) != 1)
                                        return -EIO;
                                n++;
                                continue;
                        }
                        if (mount_stat(ids[i], true, &st) < 0)
                                continue;   /* gone meanwhile */
                        int r = write_mount(f, st.id, st.parent_id, st.dev_major, st.dev_minor, st.path);
                        mount_stat_done(&st);
                        if (r < 0)
                                return r;
                        n++;
                }
                if ((size_t) k < ELEMENTSOF(ids))
                        break;
                after = ids[k - 1];
        }
        *ret_n = n;
        return 0;
}

static int read_by_mountinfo(FILE *f, uint32_t *ret_n) {
        MountEntry *e = NULL;
        size_t n = 0;
        int r;

        r = mount_table_read_self(&e, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = write_mount(f, e[i].id, e[i].parent_id, major(e[i].dev), minor(e[i].dev), e[i].target ?: "");
        mount_entries_free(e, n);
        *ret_n = (uint32_t) n;
        return r;
}

static int batch_run(int sock, void *userdata, NsmError *error) {
        const Batch *b = userdata;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_items; i++) {
                TableHeader h = { .index = (uint32_t) i };
                long start, end;
                int r = 0;

                /* Reserve the header, write the mounts, then fill the header in. */
                start = ftell(f);
                if (fwrite(&h, sizeof h, 1, f) != 1)
                        break;
                if (setns(b->items[i].ns_fd >= 0 ? b->items[i].ns_fd : b->host_ns_fd, CLONE_NEWNS) < 0)
                        r = -errno;
                if (r >= 0 && !b->mountinfo_only) {
                        const WatchedView *v = b->items[i].v;
                        bool known = v && v->have_snapshot && v->unique_ids;
                        r = read_by_statmount(f, known ? v->snapshot : NULL, known ? v->n_snapshot : 0, &h.n_mounts);
                        h.unique_ids = r >= 0;
                }
                if (b->mountinfo_only || r == -EOPNOTSUPP) {
                        h.n_mounts = 0;
                        (void) fseek(f, start + (long) sizeof h, SEEK_SET);
                        r = read_by_mountinfo(f, &h.n_mounts);
                }
                if (r < 0) {
                        h.n_mounts = 0;
                        (void) fseek(f, start + (long) sizeof h, SEEK_SET);
                }
                h.result = r;
                end = ftell(f);
                (void) fseek(f, start, SEEK_SET);
                (void) fwrite(&h, sizeof h, 1, f);
                (void) fseek(f, end, SEEK_SET);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        return ipc_send_data(sock, buf, size);
}

/* ---- reading a batch's answer ---- */

static int snapshot_cmp(const void *a, const void *b) {
        const MountSnapshotEntry *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

static void snapshot_free(MountSnapshotEntry *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(s[i].path);
        free(s);
}

void poll_view_free_snapshot(WatchedView *v) {
        snapshot_free(v->snapshot, v->n_snapshot);
        v->snapshot = NULL;
        v->n_snapshot = 0;
        v->have_snapshot = false;
}

static bool same_mount(const MountSnapshotEntry *a, const MountSnapshotEntry *b) {
        /* A known mount handed over as it was (parse_table() took its path). */
        if (!a->path)
                return true;
        /* The same id for another mount: mountinfo ids are reused. */
        return a->parent_id == b->parent_id && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
               streq(a->path, b->path);
}

/* Compares the new table with the last one: each change once, detached before attached. */
static void view_diff(WatchedView *v, MountSnapshotEntry *s, size_t n) {
        size_t i = 0, j = 0;

        /* listmount(2) answers in id order: sorted already, as a rule. */
        for (size_t k = 1; k < n; k++)
                if (s[k - 1].id > s[k].id) {
                        qsort(s, n, sizeof *s, snapshot_cmp);
                        break;
                }
        if (v->have_snapshot || v->new_view)
                while (i < v->n_snapshot || j < n) {
                        const MountSnapshotEntry *o = i < v->n_snapshot ? v->snapshot + i : NULL, *c = j < n ? s + j : NULL;
                        if (o && (!c || o->id < c->id)) {
                                watched_view_note_detach(v, o->id, o->path);
                                i++;
                        } else if (c && (!o || c->id < o->id)) {
                                watched_view_note_attach(v, c->id, c->parent_id, c->path);
                                j++;
                        } else {
                                if (!same_mount(o, c)) {
                                        watched_view_note_detach(v, o->id, o->path);
                                        watched_view_note_attach(v, c->id, c->parent_id, c->path);
                                }
                                i++, j++;
                        }
                }
        /* The host's block devices, for ReleaseWithHost=: by the same comparison. */
        log_debug("Read the mount table of %s%s: %zu mounts.", v->ns ? "the view of " : "the host", v->ns ? v->ns->name : "", n);
        if (!v->ns && v->events->release) {
                MountEvents *e = v->events;
                for (i = 0; i < v->n_snapshot; i++)
                        if (v->snapshot[i].dev_major != 0 && !bsearch(v->snapshot + i, s, n, sizeof *s, snapshot_cmp))
                                host_blocks_remove(e, v->snapshot[i].id);
                for (j = 0; j < n; j++)
                        if (s[j].dev_major != 0)
                                host_blocks_add(e, s[j].id, makedev(s[j].dev_major, s[j].dev_minor));
                host_blocks_release_candidates(e);
        }
        snapshot_free(v->snapshot, v->n_snapshot);
        v->snapshot = s;
        v->n_snapshot = n;
        v->have_snapshot = true;
}

/* One table of the answer: its mounts into a new snapshot (a known one copied from v's last).
 * Returns the bytes used, < 0 if malformed. */
/* The paths parse_table() took from v's last table, given back (the new one is not used). */
static void snapshot_give_back(WatchedView *v, MountSnapshotEntry *s, size_t n) {
        for (size_t k = 0; v && v->have_snapshot && k < n; k++) {
                MountSnapshotEntry *o = bsearch(s + k, v->snapshot, v->n_snapshot, sizeof *o, snapshot_cmp);
                if (o && !o->path)
                        o->path = TAKE_PTR(s[k].path);
        }
}

/* Each known mount's path is taken from v's last table rather than copied (a table is read
 * whole after every change: copies were most of the daemon's own work per view). */
static ssize_t parse_table(WatchedView *v, const char *p, size_t size, const TableHeader *h,
                           MountSnapshotEntry **ret) {
        MountSnapshotEntry *s;
        size_t off = 0;

        /* Each mount takes a record's bytes at least: a count past them is no table (and
         * n_mounts + 1 must not wrap). */
        if (h->n_mounts > size / sizeof(MountRecord))
                return -EBADMSG;
        s = calloc((size_t) h->n_mounts + 1, sizeof(MountSnapshotEntry));
        if (!s)
                return -ENOMEM;
        for (uint32_t k = 0; k < h->n_mounts; k++) {
                MountRecord rec;
                if (size - off < sizeof rec)
                        goto bad;
                memcpy(&rec, p + off, sizeof rec);
                off += sizeof rec;
                if (rec.path_len == RECORD_KNOWN) {
                        MountSnapshotEntry key = { .id = rec.id }, *o = NULL;
                        if (v && v->have_snapshot)
                                o = bsearch(&key, v->snapshot, v->n_snapshot, sizeof key, snapshot_cmp);
                        if (!o && v)
                                goto bad;
                        /* (A view gone meanwhile: its table is dropped anyway.) */
                        s[k] = o ? *o : key;
                        if (o && o->path)
                                s[k].path = TAKE_PTR(o->path);
                        else {
                                /* No last table (the view went), or the same id twice in one
                                 * answer (taken by the first): a copy. */
                                const char *from = "";
                                for (uint32_t j = 0; o && j < k; j++)
                                        if (s[j].id == rec.id) {
                                                from = s[j].path;
                                                break;
                                        }
                                s[k].path = strdup(from);
                        }
                        if (!s[k].path) {
                                snapshot_give_back(v, s, k);
                                snapshot_free(s, k);
                                return -ENOMEM;
                        }
                        continue;
                }
                if (rec.path_len > size - off)
                        goto bad;
                s[k] = (MountSnapshotEntry) { .id = rec.id, .parent_id = rec.parent_id, .dev_major = rec.dev_major,
                                              .dev_minor = rec.dev_minor, .path = strndup(p + off, rec.path_len) };
                off += rec.path_len;
                if (!s[k].path) {
                        snapshot_give_back(v, s, k);
                        snapshot_free(s, k);
                        return -ENOMEM;
                }
        }
        *ret = s;
        return (ssize_t) off;
bad:
        snapshot_give_back(v, s, h->n_mounts);
        snapshot_free(s, h->n_mounts);
        return -EBADMSG;
}

static void batch_start(MountEvents *e);

static unsigned batches_max(void) {
        static unsigned n = 0;
        if (n == 0) {
                long k = sysconf(_SC_NPROCESSORS_ONLN);
                n = k < 1 ? 1 : MIN((unsigned) k, (unsigned) BATCHES_MAX);
        }
        return n;
}

static void batch_free(Batch *b) {
        for (size_t i = 0; i < b->n_items; i++)
                if (b->items[i].v) {
                        b->items[i].v->reading = false;
                        b->items[i].v->batch_item = NULL;
                }
        free(b->items);
        free(b);
}

/* A view read (or not): the next read when it changed meanwhile. */
static void view_read_done(WatchedView *v) {
        v->reading = false;
        v->batch_item = NULL;
        watched_view_settled(v);
        if (v->dirty) {
                v->dirty = false;
                poll_view_schedule_read(v);
        }
}

/* The views a batch did not read (its child failed, or never started): each is read again. */
static void batch_requeue(Batch *b) {
        for (size_t i = 0; i < b->n_items; i++) {
                WatchedView *v = b->items[i].v;

                if (!v)
                        continue;
                b->items[i].v = NULL;
                v->dirty = true;
                v->last_emit = now_usec(CLOCK_MONOTONIC);
                view_read_done(v);
        }
}

static void on_batch_done(const NsmError *error, IpcMessage *final, const char *data, size_t size, void *userdata) {
        Batch *b = userdata;
        MountEvents *e = b->events;
        size_t off = 0;

        e->batches_running--;
        if (error)
                log_warning("Failed to read the mount tables of %zu watched namespaces, trying again later: %s",
                            b->n_items, nsm_error_message(error));
        while (!error && size - off >= sizeof(TableHeader)) {
                MountSnapshotEntry *s = NULL;
                TableHeader h;
                ssize_t used;

                memcpy(&h, data + off, sizeof h);
                off += sizeof h;
                if (h.index >= b->n_items)
                        break;
                WatchedView *v = b->items[h.index].v;
                used = parse_table(v, data + off, size - off, &h, &s);
                if (used < 0)
                        break;
                off += (size_t) used;
                if (!v) {
                        snapshot_free(s, h.n_mounts);
                        continue;
                }
                if (h.result < 0) {
                        log_debug_errno(h.result, "Failed to read a watched mount table, trying again later: %m");
                        snapshot_give_back(v, s, h.n_mounts);
                        snapshot_free(s, h.n_mounts);
                        v->dirty = true;
                } else {
                        v->unique_ids = h.unique_ids;
                        view_diff(v, s, h.n_mounts);
                        watched_view_emit(v);
                }
                v->last_emit = now_usec(CLOCK_MONOTONIC);
                b->items[h.index].v = NULL;
                view_read_done(v);
        }
        /* What the answer did not cover is read again later. */
        batch_requeue(b);
        batch_free(b);
        batch_start(e);
}

static void batch_start(MountEvents *e) {
        _cleanup_free_ int *fds = NULL;
        Batch *b;
        size_t n = 0;
        int r;

        if (e->batches_running >= batches_max() || e->exiting)
                return;
        b = calloc(1, sizeof(Batch));
        if (!b || !(b->items = calloc(BATCH_MAX, sizeof(BatchItem))) || !(fds = calloc(BATCH_MAX + 1, sizeof(int)))) {
                if (b)
                        free(b->items);
                free(b);
                log_oom();
                return;
        }
        *b = (Batch) { .events = e, .items = b->items, .host_ns_fd = e->host_ns_fd, .mountinfo_only = force_mountinfo() };
        fds[n++] = e->host_ns_fd;
        if (e->host && e->host->due) {
                e->host->due = false;
                e->host->reading = true;
                e->host->batch_item = &b->items[b->n_items].v;
                b->items[b->n_items++] = (BatchItem) { .v = e->host, .ns_fd = -EBADF };
        }
        for (WatchedView *v = e->views_list; v && b->n_items < BATCH_MAX; v = v->next)
                if (v->due) {
                        v->due = false;
                        v->reading = true;
                        v->batch_item = &b->items[b->n_items].v;
                        b->items[b->n_items++] = (BatchItem) { .v = v, .ns_fd = v->ns->mntns_fd };
                        fds[n++] = v->ns->mntns_fd;
                }
        if (b->n_items == 0) {
                batch_free(b);
                return;
        }
        ChildSpec spec = {
                .description = "Reading the mount tables of watched namespaces",
                .run = batch_run,
                .run_userdata = b,
                .keep_fds = fds,
                .n_keep_fds = n,
                .deadline = namespace_set_deadline(e->namespaces),
                .done = on_batch_done,
                .userdata = b,
        };
        r = child_start(e->children, &spec);
        if (r < 0) {
                log_warning_errno(r, "Failed to start reading mount tables, trying again later: %m");
                batch_requeue(b);
                batch_free(b);
                return;
        }
        e->batches_running++;
        /* More due than one batch holds: another child, on another CPU. */
        batch_start(e);
}

static int on_batch_defer(sd_event_source *s, void *userdata) {
        MountEvents *e = userdata;

        e->batch_defer = sd_event_source_disable_unref(e->batch_defer);
        batch_start(e);
        return 0;
}

/* Every view that is due by the end of this turn of the loop goes in one batch. */
static void poll_view_due(WatchedView *v) {
        MountEvents *e = v->events;
        int r;

        if (v->reading) {
                v->dirty = true;
                return;
        }
        v->due = true;
        if (e->batches_running >= batches_max() || e->batch_defer)
                return;
        r = sd_event_add_defer(e->namespaces->event, &e->batch_defer, on_batch_defer, e);
        if (r < 0) {
                log_warning_errno(r, "Failed to schedule reading mount tables, reading now: %m");
                batch_start(e);
        }
}

/* ---- watching a namespace's mountinfo ---- */

static int on_mountinfo(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WatchedView *v = userdata;

        /* The kernel reports a change once per poll: nothing to read here. */
        if (v->reading || !v->have_snapshot)
                v->dirty = true;
        else
                poll_view_schedule_read(v);
        return 0;
}

static int poll_view_watch_fd(WatchedView *v, int fd) {
        int r;

        v->mountinfo_fd = fd;
        r = sd_event_add_io(v->events->namespaces->event, &v->mountinfo_source, fd, EPOLLPRI, on_mountinfo, v);
        if (r < 0)
                return r;
        /* The first table: what later ones are compared with. */
        poll_view_due(v);
        return 0;
}

typedef struct OpenRequest {
        WatchedView *v;          /* NULL once v went */
} OpenRequest;

static void on_mountinfo_opened(BuilderReply *reply, void *userdata) {
        OpenRequest *q = userdata;
        WatchedView *v = q->v;
        int r;

        free(q);
        if (!v)
                return;
        v->opening = false;
        v->mountinfo_fd = -EBADF;   /* was the request */
        if (reply->error || reply->fd < 0) {
                log_warning("Cannot watch the mounts of the view of '%s': %s", v->ns->name,
                            reply->error ? nsm_error_message(reply->error) : "the view builder sent no file.");
                watched_view_settled(v);
                return;
        }
        r = poll_view_watch_fd(v, TAKE_FD(reply->fd));
        if (r < 0) {
                log_warning_errno(r, "Cannot watch the mounts of the view of '%s': %m", v->ns->name);
                watched_view_settled(v);
        }
}

int poll_view_start(WatchedView *v) {
        MountEvents *e = v->events;
        OpenRequest *q;
        int fd, r;

        if (!v->ns) {
                /* The host is our own namespace: its mountinfo is ours to open (not to read). */
                fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                return poll_view_watch_fd(v, fd);
        }
        q = calloc(1, sizeof(OpenRequest));
        if (!q)
                return -ENOMEM;
        q->v = v;
        r = builder_open_mountinfo(e->namespaces->builder, v->ns->mntns_fd, namespace_set_deadline(e->namespaces),
                                   on_mountinfo_opened, q);
        if (r < 0) {
                free(q);
                return r;
        }
        v->opening = true;
        /* While the builder works, the request is the view's to cancel. */
        v->mountinfo_fd = -EBADF;
        v->open_request = q;
        return 0;
}

void poll_view_stop(WatchedView *v) {
        if (v->opening && v->open_request)
                ((OpenRequest *) v->open_request)->v = NULL;
        v->opening = false;
        v->open_request = NULL;
        v->mountinfo_source = sd_event_source_disable_unref(v->mountinfo_source);
        v->mountinfo_fd = safe_close(v->mountinfo_fd);
        v->due = false;
        /* A batch reading it forgets it. */
        if (v->batch_item)
                *v->batch_item = NULL;
        v->batch_item = NULL;
        v->reading = false;
}
