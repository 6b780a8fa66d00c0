/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The watched views (mount-events-view.c): their changes collected and signalled, their tables
 * read inside their namespace when the kernel flags a change (poll mode), their first reads
 * waited for; the host's block devices tracked. mount-events.c (watching, the host's fanotify
 * events, ReleaseWithHost=) builds on it, and its header (mount-events.h) includes this one for
 * the vocabulary at its top; the bus glue (mount-events-dbus.c) keeps its subscribers in
 * MountEvents. */

#include <systemd/sd-event.h>

#include "child.h"
#include "eject.h"
#include "hashmap.h"
#include "id-map.h"
#include "macros.h"
#include "namespace.h"
#include "mount-reader-client.h"
#include "time-util.h"

/* ---- what mount events speak: mount-events.h, its owner and its bus glue use it too ---- */

#define MOUNT_EVENTS_INTERVAL_USEC MOUNT_READER_INTERVAL_USEC

typedef enum MountEventsMode {
        MOUNT_EVENTS_FANOTIFY,
        MOUNT_EVENTS_POLL,
        MOUNT_EVENTS_NONE,
        _MOUNT_EVENTS_MODE_MAX,
        _MOUNT_EVENTS_MODE_INVALID = -EINVAL,
} MountEventsMode;

/* One mount attached or detached: ids as the signals carry them (unique where the kernel has
 * them). A detached one's path is the last table's (NULL where unknown: the host's fanotify
 * events name only the id). */
typedef struct MountChange {
        uint64_t id;
        uint64_t parent_id;
        char *path;              /* relative to the namespace's root */
} MountChange;

typedef struct MountEvents MountEvents;

/* What the bus glue does for mount events (mount-events-dbus.c): sends the signals (ns NULL:
 * the host's), ends the subscriptions of a view that is gone, and every subscription when
 * mount events end. */
typedef struct WatchedView WatchedView;
typedef struct MountEventsBus {
        void (*emit)(Namespace *ns, const MountChange *attached, size_t n_attached, const MountChange *detached,
                     size_t n_detached, void *userdata);
        /* ViewsMountsChanged: 'path' attached ('+') or detached ('-') alike in the views. */
        void (*aggregate)(char sign, const char *path, WatchedView *const *views, size_t n_views, void *userdata);
        /* MountCountsChanged: the view's number of mounts is now v->count; or v goes, and with it
         * what was told. */
        void (*count)(WatchedView *v, void *userdata);
        void (*count_gone)(WatchedView *v, void *userdata);
        void (*namespace_gone)(Namespace *ns, void *userdata);
        void (*done)(void *userdata);
} MountEventsBus;

/* A watch's first read is done (mount_events_watch()). */
typedef void (*MountEventsReadyFunc)(void *userdata);

/* ---- the views ---- */

/* One mount of a table read in poll mode. */
typedef struct MountSnapshotEntry {
        uint64_t id;
        uint64_t parent_id;
        uint32_t dev_major, dev_minor;
        char *path;
} MountSnapshotEntry;

struct Subscriber;               /* mount-events-dbus.c */
typedef struct WatchWaiter WatchWaiter;

/* A mount_events_watch() call waiting for the first read of what it watches. */
struct WatchWaiter {
        Namespace *ns;           /* a reference; NULL: everything */
        MountEventsReadyFunc ready;
        void *userdata;
        WatchWaiter *prev, *next;
};

/* A view (or the host) whose changes are being collected or whose mounts are tracked. */
struct WatchedView {
        MountEvents *events;
        Namespace *ns;           /* a reference; NULL for the host */
        unsigned n_watchers;     /* watches of this view alone (Namespace.Subscribe) */
        bool settled;            /* its first table was read (or could not be): changes are told from then on */
        bool new_view;           /* created while everything is watched: its first table is all attached */

        /* Changes not yet signalled. */
        MountChange *attached;
        size_t n_attached;
        MountChange *detached;
        size_t n_detached;
        uint64_t last_emit;      /* CLOCK_MONOTONIC µs of the last signal */
        sd_event_source *timer;  /* the next signal (fanotify) or the next read (poll) */

        /* Read in its namespace (views always, the host in poll mode) by a mount reader. */
        struct MountReader *reader;
        uint32_t key;            /* the reader's name for it: MountEvents.keys */
        sd_bus_slot *watch_slot; /* its Watch() call, until answered */
        bool detail;             /* its table is read and its changes told (else its number of mounts only) */
        sd_bus_slot *detail_slot; /* SetDetail(true), until answered: the first table */
        uint32_t count;          /* its number of mounts, as its reader last told */
        bool count_known;
        uint64_t count_generation; /* its slot in the next MountCountsChanged (mount-events-dbus.c) */
        size_t count_slot;
        char *bus_path;          /* its object path, for ViewsMountsChanged (made when first needed) */
        uint64_t held_since;     /* its signal waits for an operation on the view to end, since */
        bool baseline;           /* the host's first table is on its way: not told */
        bool touched;            /* has changes in the reader's message being read */
        bool orphaned;           /* its reader died: to be given to another */

        WatchedView *prev, *next; /* MountEvents.views_list, the most recently active first */
};

struct MountEvents {
        NamespaceSet *namespaces;        /* the Manager's: the views, the event loop, the builder */
        ChildSet *children;
        Ejector *ejector;                /* ReleaseWithHost= detaches through it */
        const MountEventsBus *bus;       /* the signals and the subscriptions: the bus glue's */
        void *bus_userdata;
        bool exiting;                    /* mount_events_shutdown() ran: no new read starts */
        MountEventsMode mode;
        unsigned n_all;          /* watches of everything (Manager.Subscribe, SubscribeViews) */
        unsigned n_counts;       /* watches of every view's number of mounts (SubscribeMountCounts) */
        bool release;            /* ReleaseWithHost=yes is in effect */
        Hashmap *views;          /* user name → WatchedView */
        WatchedView *views_list;
        WatchedView *host;       /* while n_all > 0 or release */
        int host_ns_fd;          /* our own mount namespace */

        /* fanotify: the host's mount events */
        int host_fd;
        sd_event_source *host_source;
        IdMap *host_mounts;      /* while the host's changes are told: id → HostMount, to reread after an overflow */

        /* ReleaseWithHost= */
        IdMap *host_blocks;      /* host mount id → its block device (dev_t) */
        IdMap *dev_counts;       /* block device → its mounts on the host */
        IdMap *release_candidates; /* block devices whose last host mount went in this read */

        /* Poll mode: the readers (mount-reader.h), and the views by their keys. */
        struct MountReader *readers[2];
        bool readers_gone[2];
        uint64_t readers_last_changed;   /* CLOCK_MONOTONIC µs of a reader's last Changed */
        sd_event_source *readers_defer;
        IdMap *keys;
        uint32_t next_key;

        struct Subscriber *subscriptions;   /* mount-events-dbus.c's */
        unsigned n_signal_all;              /* … of them, Manager.Subscribe(): every view's MountsChanged */
        unsigned n_aggregate;               /* … SubscribeViews(): ViewsMountsChanged */
        struct Aggregate *aggregate;        /* ViewsMountsChanged not sent yet (mount-events-dbus.c) */
        WatchWaiter *waiters;               /* mount_events_watch() calls waiting for a first read */
        sd_event_source *waiters_defer;
};

/* Collecting and signalling. */
void watched_view_note_attach(WatchedView *v, uint64_t id, uint64_t parent_id, const char *path);
void watched_view_note_detach(WatchedView *v, uint64_t id, const char *path);
/* Signals what was collected now, or as soon as the interval allows. */
void watched_view_schedule_emit(WatchedView *v);
void watched_view_emit(WatchedView *v);
bool watched_view_collects(const WatchedView *v);
/* Drops what was collected and not signalled yet. */
void watched_view_clear(WatchedView *v);
WatchedView *view_find(MountEvents *e, Namespace *ns);
/* The host's block devices (tracking for ReleaseWithHost=). */
void host_blocks_add(MountEvents *e, uint64_t id, dev_t dev);
void host_blocks_remove(MountEvents *e, uint64_t id);
void host_blocks_release_candidates(MountEvents *e);

/* Waiting for first reads: a view (or the host) was read for the first time, and watchers
 * waiting for it go on, from the event loop (waiters_check()). */
bool watch_settled(MountEvents *e, Namespace *ns);
WatchWaiter *watch_waiter_free(MountEvents *e, WatchWaiter *w);
void waiters_check(MountEvents *e);

/* Poll mode: reading tables inside their namespaces. */
int poll_view_start(WatchedView *v);
void poll_view_stop(WatchedView *v);
/* The view's table is read while someone wants its changes (the host's always), else only its
 * number of mounts is: its reader told when that changes. */
bool watched_view_wants_detail(const WatchedView *v);
void watched_view_sync_detail(WatchedView *v);
void mount_readers_free(MountEvents *e);
/* A reader is reading its changed tables, or sent some a moment ago: their changes (more of
 * them) are on their way. */
bool mount_events_readers_busy(const MountEvents *e);
