/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A subscriber that mounts: how long from the host's mount(2) to the signals, and what the
 * mount and its unmount cost the host while views are watched (bench/bench_mount_events.py).
 *
 *   nsm-events TARGET ITERATIONS all|views|counts|none|PATH...
 *   nsm-events TARGET ITERATIONS page USER PATH
 *
 * subscribes to every view and the host (all: Manager.Subscribe; views: the aggregated
 * Manager.SubscribeViews, each view named in a ViewsMountsChanged counting as heard; counts:
 * Manager.SubscribeMountCounts alone, each view named in a MountCountsChanged with its count
 * changed the right way counting as heard: the mount raises every view's count, the unmount
 * lowers it), to nothing (none), or to the Namespace objects PATH... (Namespace.Subscribe);
 * page does what the Cockpit page does (SubscribeMountCounts for the list of views, and
 * Namespace.Subscribe of the view it shows, whose MountsChanged makes it read GetMountsEx of
 * that view and of the host; the browser's and cockpit-bridge's own work is not there). all,
 * views, counts and page expect NSM_EVENTS_VIEWS views (page: their counts and the shown
 * view's MountsChanged). Then ITERATIONS times: mounts a small
 * tmpfs on TARGET (an empty directory of the host whose mounts every view receives), waits
 * for the signals of every watched view that name it (none: for nothing), unmounts it,
 * waits for the signals of the unmount, and waits out the daemon's coalescing interval.
 * Prints one line per iteration: "MOUNT_US UMOUNT_US FIRST_US ALL_US" (the two system calls,
 * the first signal and the last one after the mount; 0 for none). Run as root, in the
 * project's sandbox (DBUS_SYSTEM_BUS_ADDRESS), on the host's namespace; or on a throwaway
 * machine's own system bus (bench_mount_events.py --system). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "bench-util.h"

#define BUS_NAME "org.example.NSManager"
#define INTERVAL_US 150000.0   /* above the daemon's 100 ms: every iteration starts afresh */

typedef struct State {
        const char *mount_point;   /* as a view sees it: the host's path */
        size_t want;               /* views to hear from */
        size_t heard;
        bool attach;               /* waiting for the mount (else for the unmount) */
        unsigned phase;            /* one per mount and per unmount, from 1: a view is heard once in each */
        double first, last;
} State;

/* A view's number of mounts as MountCountsChanged last gave it (a tsearch() tree by path). */
typedef struct Count {
        char *path;
        uint32_t count;
        unsigned heard_in;         /* the phase it was last heard in (0: none, or before the first mount) */
} Count;

static void *counts;

static int compare_count(const void *a, const void *b) {
        return strcmp(((const Count *) a)->path, ((const Count *) b)->path);
}

static void heard_one(State *s, size_t n) {
        double t = now_us();
        if (s->heard == 0)
                s->first = t;
        s->last = t;
        s->heard += n;
}

/* ViewsMountsChanged: each view named in an entry of our mount point (attached), or in any
 * entry (detached: only ours come and go meanwhile). */
static int on_views_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        State *s = userdata;
        size_t n = 0;
        int r;

        for (int list = 0; list < 2; list++) {
                r = sd_bus_message_enter_container(m, 'a', "(sao)");
                while (r > 0 && (r = sd_bus_message_enter_container(m, 'r', "sao")) > 0) {
                        const char *point, *view;
                        bool ours;
                        r = sd_bus_message_read(m, "s", &point);
                        if (r < 0)
                                return 0;
                        ours = list == 0 ? s->attach && strcmp(point, s->mount_point) == 0 : !s->attach;
                        r = sd_bus_message_enter_container(m, 'a', "o");
                        while (r > 0 && (r = sd_bus_message_read(m, "o", &view)) > 0)
                                if (ours)
                                        n++;
                        if (r < 0)
                                return 0;
                        (void) sd_bus_message_exit_container(m);
                        (void) sd_bus_message_exit_container(m);
                }
                if (r < 0)
                        return 0;
                (void) sd_bus_message_exit_container(m);
        }
        if (n > 0)
                heard_one(s, n);
        return 0;
}

/* MountCountsChanged: a view is heard once per phase, when its count rose (the mount) or fell
 * (the unmount) from what the last signal gave; a view not seen before counts at once (its
 * first count carries no direction). */
static int on_counts_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        State *s = userdata;
        const char *view;
        uint32_t count;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(ou)");
        while (r > 0 && (r = sd_bus_message_read(m, "(ou)", &view, &count)) > 0) {
                Count key = { .path = (char *) view }, **found = tfind(&key, &counts, compare_count);
                Count *c;
                bool ours;

                if (found) {
                        c = *found;
                        ours = s->attach ? count > c->count : count < c->count;
                } else {
                        c = calloc(1, sizeof(Count));
                        if (!c || !(c->path = strdup(view)) || !tsearch(c, &counts, compare_count)) {
                                fprintf(stderr, "out of memory\n");
                                exit(1);
                        }
                        ours = true;
                }
                if (ours && c->heard_in != s->phase) {
                        c->heard_in = s->phase;
                        n++;
                }
                c->count = count;
        }
        if (r < 0)
                return 0;
        if (n > 0)
                heard_one(s, n);
        return 0;
}

static int on_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        State *s = userdata;
        uint64_t id, parent;
        const char *point;
        bool ours = false;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(tts)");
        while (r > 0 && (r = sd_bus_message_read(m, "(tts)", &id, &parent, &point)) > 0)
                if (s->attach && strcmp(point, s->mount_point) == 0)
                        ours = true;
        if (r < 0)
                return 0;
        (void) sd_bus_message_exit_container(m);
        /* An unmount: any detached id (only ours come and go meanwhile). */
        if (!s->attach) {
                const void *ids;
                size_t size = 0;
                if (sd_bus_message_read_array(m, 't', &ids, &size) >= 0 && size > 0)
                        ours = true;
        }
        if (!ours)
                return 0;
        heard_one(s, 1);
        return 0;
}

static int call_simple(sd_bus *bus, const char *path, const char *iface, const char *method, const char *arg,
                       sd_bus_error *error) {
        sd_bus_message *reply = NULL, *call = NULL;
        int r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, path, iface, method);
        if (r >= 0 && arg)
                r = sd_bus_message_append(call, "s", arg);
        /* Answered once every view was read: give it time. */
        if (r >= 0)
                r = sd_bus_call(bus, call, 600 * 1000000ULL, error, &reply);
        sd_bus_message_unref(call);
        sd_bus_message_unref(reply);
        return r;
}

static int wait_heard(sd_bus *bus, State *s) {
        double deadline = now_us() + 600e6;

        while (s->heard < s->want) {
                int r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                if (now_us() > deadline)
                        return -ETIMEDOUT;
                r = sd_bus_wait(bus, 1000000);
                if (r < 0 && r != -EINTR)
                        return r;
        }
        return 0;
}

static void drain(sd_bus *bus, double us) {
        double until = now_us() + us;
        while (now_us() < until) {
                if (sd_bus_process(bus, NULL) > 0)
                        continue;
                (void) sd_bus_wait(bus, (uint64_t) (until - now_us() > 0 ? until - now_us() : 1));
        }
}

/* What the page reads when the view it shows changed: that view's table and the host's. */
static int page_reads(sd_bus *bus, const char *user, sd_bus_error *error) {
        int r = call_simple(bus, "/org/example/NSManager", "org.example.NSManager.Manager", "GetMountsEx", user, error);
        if (r >= 0)
                r = call_simple(bus, "/org/example/NSManager", "org.example.NSManager.Manager", "GetMountsEx", "", error);
        if (r < 0)
                fprintf(stderr, "GetMountsEx: %s\n", error->message ?: strerror(-r));
        return r;
}

int main(int argc, char *argv[]) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus *bus = NULL;
        State s = {};
        const char *page_user = NULL;
        int n, r;

        if (argc < 4) {
                fprintf(stderr, "usage: nsm-events TARGET ITERATIONS all|views|counts|none|PATH...\n"
                                "       nsm-events TARGET ITERATIONS page USER PATH\n");
                return 2;
        }
        s.mount_point = argv[1];
        n = atoi(argv[2]);
        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "bus: %s\n", strerror(-r));
                return 1;
        }
        r = sd_bus_match_signal(bus, NULL, BUS_NAME, NULL, "org.example.NSManager.Namespace", "MountsChanged", on_changed, &s);
        if (r < 0) {
                fprintf(stderr, "match: %s\n", strerror(-r));
                return 1;
        }
        r = sd_bus_match_signal(bus, NULL, BUS_NAME, "/org/example/NSManager", "org.example.NSManager.Manager",
                                "ViewsMountsChanged", on_views_changed, &s);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, BUS_NAME, "/org/example/NSManager", "org.example.NSManager.Manager",
                                        "MountCountsChanged", on_counts_changed, &s);
        if (r < 0) {
                fprintf(stderr, "match: %s\n", strerror(-r));
                return 1;
        }
        if (strcmp(argv[3], "all") == 0 || strcmp(argv[3], "views") == 0 || strcmp(argv[3], "counts") == 0) {
                r = call_simple(bus, "/org/example/NSManager", "org.example.NSManager.Manager",
                                strcmp(argv[3], "all") == 0 ? "Subscribe" :
                                strcmp(argv[3], "views") == 0 ? "SubscribeViews" : "SubscribeMountCounts", NULL, &error);
                s.want = (size_t) atoi(getenv("NSM_EVENTS_VIEWS") ?: "0");
        } else if (strcmp(argv[3], "page") == 0) {
                if (argc != 6) {
                        fprintf(stderr, "usage: nsm-events TARGET ITERATIONS page USER PATH\n");
                        return 2;
                }
                page_user = argv[4];
                r = call_simple(bus, "/org/example/NSManager", "org.example.NSManager.Manager", "SubscribeMountCounts",
                                NULL, &error);
                if (r >= 0)
                        r = call_simple(bus, argv[5], "org.example.NSManager.Namespace", "Subscribe", NULL, &error);
                /* Every view in MountCountsChanged, and the shown one's MountsChanged. */
                s.want = (size_t) atoi(getenv("NSM_EVENTS_VIEWS") ?: "0") + 1;
        } else if (strcmp(argv[3], "none") != 0) {
                for (int i = 3; i < argc && r >= 0; i++)
                        r = call_simple(bus, argv[i], "org.example.NSManager.Namespace", "Subscribe", NULL, &error);
                s.want = (size_t) (argc - 3);
        }
        if (r < 0) {
                fprintf(stderr, "Subscribe: %s\n", error.message ?: strerror(-r));
                return 1;
        }
        drain(bus, INTERVAL_US);
        for (int i = 0; i < n; i++) {
                double t0, t1, t2, t3, first = 0, last = 0;

                s = (State) { .mount_point = s.mount_point, .want = s.want, .attach = true, .phase = 2 * i + 1 };
                t0 = now_us();
                if (mount("nsm-events", argv[1], "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") < 0) {
                        perror("mount");
                        return 1;
                }
                t1 = now_us();
                r = wait_heard(bus, &s);
                if (r < 0) {
                        fprintf(stderr, "waiting for the mount's signals: %s (%zu of %zu)\n", strerror(-r), s.heard, s.want);
                        return 1;
                }
                if (s.want > 0) {
                        first = s.first - t0;
                        last = s.last - t0;
                }
                if (page_user && page_reads(bus, page_user, &error) < 0)
                        return 1;
                drain(bus, INTERVAL_US);
                s = (State) { .mount_point = s.mount_point, .want = s.want, .attach = false, .phase = 2 * i + 2 };
                t2 = now_us();
                if (umount2(argv[1], 0) < 0) {
                        perror("umount");
                        return 1;
                }
                t3 = now_us();
                r = wait_heard(bus, &s);
                if (r < 0) {
                        fprintf(stderr, "waiting for the unmount's signals: %s\n", strerror(-r));
                        return 1;
                }
                if (page_user && page_reads(bus, page_user, &error) < 0)
                        return 1;
                drain(bus, INTERVAL_US);
                printf("%.1f %.1f %.1f %.1f\n", t1 - t0, t3 - t2, first, last);
                fflush(stdout);
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}
