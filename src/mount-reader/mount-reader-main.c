/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The mount reader process (src/protocol/mount-reader.h): it watches the mount tables it is sent, keeps
 * each one's last table, and tells the daemon only what changed. */
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/sysmacros.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "child-setup.h"
#include "hashmap.h"
#include "id-map.h"
#include "log.h"
#include "macros.h"
#include "mount-notify.h"
#include "mount-reader.h"
#include "mount-util.h"
#include "time-util.h"

typedef struct RMount {
        uint64_t id, parent_id, dev;
        char *path;
} RMount;

typedef struct Reader Reader;

typedef struct RView {
        Reader *reader;
        uint32_t key;
        int ns_fd;
        int mountinfo_fd;        /* opened inside the view: POLLPRI after each change */
        bool mountinfo;          /* its table comes from mountinfo_fd (ids the kernel reuses) */
        bool dirty;
        bool no_count;           /* the kernel does not tell its number of mounts (before 6.12) */
        bool detail;             /* its table is kept and its changes told; else only its number of mounts */
        uint32_t count;          /* its number of mounts, as last read */
        uint32_t sent_count;     /* … as last told the daemon */
        uint64_t last_read;      /* CLOCK_MONOTONIC µs */
        RMount *mounts;          /* sorted by id */
        size_t n_mounts;
        struct RView *next_dirty;
} RView;

typedef struct GroupItem {
        uint32_t key;
        uint64_t id, parent_id;
} GroupItem;

/* One change alike in several views: '+' or '-', the device, the mount point. */
typedef struct Group {
        char *hkey;
        char sign;
        uint64_t dev;
        const char *path;        /* in hkey */
        GroupItem *items;
        size_t n_items;
} Group;

struct Reader {
        sd_event *event;
        sd_bus *bus;
        int epoll_fd;            /* the views' mountinfo files, and the loop's own fd (reader_loop()) */
        int host_ns_fd;
        bool force_mountinfo;
        IdMap *views;            /* key → RView */
        RView *dirty;
        sd_event_source *timer;
        Hashmap *groups;
        Group **group_list;
        size_t n_groups;
        uint32_t *count_keys;    /* the views whose number of mounts changed in this pass … */
        uint32_t *counts;        /* … and their numbers */
        size_t n_counts;
};

static void mounts_free(RMount *m, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(m[i].path);
        free(m);
}

static int rmount_cmp(const void *a, const void *b) {
        const RMount *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* ---- the changes of a pass, grouped ---- */

static int group_add(Reader *rd, char sign, uint64_t dev, const char *path, uint32_t key, uint64_t id,
                     uint64_t parent_id) {
        _cleanup_free_ char *hkey = NULL;
        Group *g;
        GroupItem *items;

        if (asprintf(&hkey, "%c%" PRIx64 ":%s", sign, dev, path ?: "") < 0)
                return -ENOMEM;
        g = hashmap_get(rd->groups, hkey);
        if (!g) {
                Group **l = realloc(rd->group_list, (rd->n_groups + 1) * sizeof(Group *));
                if (!l)
                        return -ENOMEM;
                rd->group_list = l;
                g = calloc(1, sizeof(Group));
                if (!g)
                        return -ENOMEM;
                g->sign = sign;
                g->dev = dev;
                g->hkey = TAKE_PTR(hkey);
                g->path = strchr(g->hkey, ':') + 1;
                if (hashmap_put(rd->groups, g->hkey, g) < 0) {
                        free(g->hkey);
                        free(g);
                        return -ENOMEM;
                }
                l[rd->n_groups++] = g;
        }
        items = realloc(g->items, (g->n_items + 1) * sizeof(GroupItem));
        if (!items)
                return -ENOMEM;
        g->items = items;
        items[g->n_items++] = (GroupItem) { .key = key, .id = id, .parent_id = parent_id };
        return 0;
}

static void groups_clear(Reader *rd) {
        for (size_t i = 0; i < rd->n_groups; i++) {
                Group *g = rd->group_list[i];
                hashmap_remove(rd->groups, g->hkey);
                free(g->hkey);
                free(g->items);
                free(g);
        }
        rd->group_list = mfree(rd->group_list);
        rd->n_groups = 0;
        rd->count_keys = mfree(rd->count_keys);
        rd->counts = mfree(rd->counts);
        rd->n_counts = 0;
}

/* Tells v's number of mounts in this pass's Changed if the daemon has not heard it yet. */
static int count_note(Reader *rd, RView *v) {
        uint32_t *k, *c;

        if (v->count == v->sent_count)
                return 0;
        k = reallocarray(rd->count_keys, rd->n_counts + 1, sizeof(uint32_t));
        if (!k)
                return -ENOMEM;
        rd->count_keys = k;
        c = reallocarray(rd->counts, rd->n_counts + 1, sizeof(uint32_t));
        if (!c)
                return -ENOMEM;
        rd->counts = c;
        k[rd->n_counts] = v->key;
        c[rd->n_counts++] = v->count;
        v->sent_count = v->count;
        return 0;
}

static int append_groups(sd_bus_message *m, Reader *rd, char sign) {
        int r = sd_bus_message_open_container(m, 'a', sign == '+' ? "(ayta(utt))" : "(ayta(ut))");

        for (size_t i = 0; r >= 0 && i < rd->n_groups; i++) {
                Group *g = rd->group_list[i];
                if (g->sign != sign)
                        continue;
                r = sd_bus_message_open_container(m, 'r', sign == '+' ? "ayta(utt)" : "ayta(ut)");
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', g->path, strlen(g->path));
                if (r >= 0)
                        r = sd_bus_message_append(m, "t", g->dev);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'a', sign == '+' ? "(utt)" : "(ut)");
                for (size_t k = 0; r >= 0 && k < g->n_items; k++)
                        r = sign == '+' ? sd_bus_message_append(m, "(utt)", g->items[k].key, g->items[k].id,
                                                                g->items[k].parent_id)
                                        : sd_bus_message_append(m, "(ut)", g->items[k].key, g->items[k].id);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int send_changed(Reader *rd) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_signal(rd->bus, &m, MOUNT_READER_PATH, MOUNT_READER_INTERFACE, "Changed");
        if (r >= 0)
                r = append_groups(m, rd, '-');
        if (r >= 0)
                r = append_groups(m, rd, '+');
        /* (Arrays of a fixed-size type: copied whole, not element by element.) */
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'u', rd->count_keys, rd->n_counts * sizeof(uint32_t));
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'u', rd->counts, rd->n_counts * sizeof(uint32_t));
        if (r >= 0)
                r = sd_bus_send(rd->bus, m, NULL);
        groups_clear(rd);
        return r;
}

/* ---- reading a table ---- */

/* NS_MNT_GET_INFO of linux/nsfs.h (Linux 6.12; Debian 12's headers lack it): the number of
 * mounts of a namespace, without entering it. */
struct nsm_mnt_ns_info {
        uint32_t size;
        uint32_t nr_mounts;
        uint64_t mnt_ns_id;
};
#define NSM_NS_MNT_GET_INFO _IOR(0xb7, 10, struct nsm_mnt_ns_info)

/* The common changes without listing the whole table: mounts attached (the ids above the last
 * table's highest: unique ids only grow) and a few of the newest detached (statmount(2) of the
 * known ones, newest first, says which are gone), checked against the namespace's number of
 * mounts: nothing else can have changed. Returns 1 if that was all, 0 if the whole table must be
 * listed (the count does not add up, or is not to be had: before 6.12). A change racing with
 * this is flagged again, and its read finds a count that does not add up. */
#define GONE_MAX 4
#define GONE_CHECKS 8

static int read_new_only(Reader *rd, RView *v, bool report, RMount **ret, size_t *ret_n) {
        struct nsm_mnt_ns_info info = { .size = sizeof info };
        size_t gone_at[GONE_MAX], n_gone = 0, k = 0;
        uint64_t ids[64];
        long gone;
        RMount *s;
        ssize_t got;

        if (v->n_mounts == 0 || v->no_count)
                return 0;
        if (ioctl(v->ns_fd, NSM_NS_MNT_GET_INFO, &info) < 0) {
                v->no_count = true;
                return 0;
        }
        got = mount_list_ids(v->mounts[v->n_mounts - 1].id, ids, ELEMENTSOF(ids));
        if (got < 0 || got == (ssize_t) ELEMENTSOF(ids))
                return 0;
        gone = (long) v->n_mounts + (long) got - (long) info.nr_mounts;
        if (gone < 0 || gone > GONE_MAX)
                return 0;
        for (size_t c = 0; c < MIN(v->n_mounts, (size_t) GONE_CHECKS) && n_gone < (size_t) gone; c++) {
                size_t i = v->n_mounts - 1 - c;
                MountStat st = {};
                int r = mount_stat(v->mounts[i].id, false, &st);
                if (r == -ENOENT)
                        gone_at[n_gone++] = i;
                else if (r < 0)
                        return 0;
                else
                        mount_stat_done(&st);
        }
        if (n_gone != (size_t) gone)
                return 0;
        s = reallocarray(NULL, v->n_mounts + (size_t) got + 1, sizeof(RMount));
        if (!s)
                return -ENOMEM;
        for (size_t i = 0, g = 0; i < v->n_mounts; i++) {
                /* (gone_at is in descending order) */
                if (g < n_gone && gone_at[n_gone - 1 - g] == i) {
                        if (report)
                                (void) group_add(rd, '-', v->mounts[i].dev, v->mounts[i].path, v->key, v->mounts[i].id, 0);
                        g++;
                        continue;
                }
                s[k] = v->mounts[i];
                v->mounts[i].path = NULL;
                k++;
        }
        for (ssize_t j = 0; j < got; j++) {
                MountStat st = {};
                if (mount_stat(ids[j], true, &st) < 0)
                        continue;   /* gone meanwhile: flagged again */
                s[k] = (RMount) { .id = st.id, .parent_id = st.parent_id, .dev = makedev(st.dev_major, st.dev_minor),
                                  .path = TAKE_PTR(st.path) };
                mount_stat_done(&st);
                if (!s[k].path && !(s[k].path = strdup(""))) {
                        mounts_free(s, k);
                        return -ENOMEM;
                }
                if (report)
                        (void) group_add(rd, '+', s[k].dev, s[k].path, v->key, s[k].id, s[k].parent_id);
                k++;
        }
        *ret = s;
        *ret_n = k;
        return 1;
}

/* Our namespace's mounts by listmount(2), a known one kept, a new one asked its mount point. */
static int read_by_statmount(Reader *rd, RView *v, bool report, RMount **ret, size_t *ret_n) {
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0, cap = 0, i = 0, j = 0, k = 0;
        uint64_t after = 0;
        RMount *s;
        int r;

        for (;;) {
                if (cap - n < 256) {
                        uint64_t *p = realloc(ids, (cap + 256) * sizeof(uint64_t));
                        if (!p)
                                return -ENOMEM;
                        ids = p;
                        cap += 256;
                }
                ssize_t got = mount_list_ids(after, ids + n, 256);
                if (got < 0)
                        return (int) got;
                n += (size_t) got;
                if (got < 256)
                        break;
                after = ids[n - 1];
        }
        for (size_t x = 1; x < n; x++)
                if (ids[x - 1] > ids[x]) {
                        qsort(ids, n, sizeof *ids, u64_cmp);
                        break;
                }
        s = calloc(n + 1, sizeof(RMount));
        if (!s)
                return -ENOMEM;
        while (i < v->n_mounts || j < n) {
                RMount *o = i < v->n_mounts ? v->mounts + i : NULL;
                if (o && (j >= n || o->id < ids[j])) {
                        if (report)
                                (void) group_add(rd, '-', o->dev, o->path, v->key, o->id, 0);
                        i++;
                } else if (o && o->id == ids[j]) {
                        s[k++] = *o;
                        o->path = NULL;
                        i++, j++;
                } else {
                        MountStat st = {};
                        r = mount_stat(ids[j++], true, &st);
                        if (r < 0)
                                continue;   /* gone meanwhile */
                        s[k] = (RMount) { .id = st.id, .parent_id = st.parent_id,
                                          .dev = makedev(st.dev_major, st.dev_minor), .path = TAKE_PTR(st.path) };
                        mount_stat_done(&st);
                        if (!s[k].path && !(s[k].path = strdup(""))) {
                                mounts_free(s, k);
                                return -ENOMEM;
                        }
                        if (report)
                                (void) group_add(rd, '+', s[k].dev, s[k].path, v->key, s[k].id, s[k].parent_id);
                        k++;
                }
        }
        *ret = s;
        *ret_n = k;
        return 0;
}

/* The table as mountinfo_fd shows it now: ids the kernel reuses, so a known id is the same
 * mount only with the same parent, device and mount point. */
static int read_by_mountinfo(Reader *rd, RView *v, bool report, RMount **ret, size_t *ret_n) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, cap = 0, i = 0, j = 0;
        MountEntry *e = NULL;
        size_t n = 0;
        RMount *s;
        FILE *f;
        int r;

        for (;;) {
                if (cap - size < 65536) {
                        char *p = realloc(buf, cap + 65536);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        cap += 65536;
                }
                /* (A seq_file: read from its start, no pread()) */
                if (size == 0 && lseek(v->mountinfo_fd, 0, SEEK_SET) < 0)
                        return -errno;
                ssize_t k = read(v->mountinfo_fd, buf + size, cap - size);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                size += (size_t) k;
        }
        f = fmemopen(buf, size ?: 1, "r");
        if (!f)
                return -errno;
        r = size > 0 ? mount_table_read(f, &e, &n) : 0;
        fclose(f);
        if (r < 0)
                return r;
        s = calloc(n + 1, sizeof(RMount));
        if (!s) {
                mount_entries_free(e, n);
                return -ENOMEM;
        }
        for (size_t x = 0; x < n; x++) {
                s[x] = (RMount) { .id = e[x].id, .parent_id = e[x].parent_id, .dev = e[x].dev,
                                  .path = TAKE_PTR(e[x].target) };
                if (!s[x].path && !(s[x].path = strdup(""))) {
                        mount_entries_free(e, n);
                        mounts_free(s, x);
                        return -ENOMEM;
                }
        }
        mount_entries_free(e, n);
        qsort(s, n, sizeof *s, rmount_cmp);
        while (report && (i < v->n_mounts || j < n)) {
                RMount *o = i < v->n_mounts ? v->mounts + i : NULL, *c = j < n ? s + j : NULL;
                if (o && (!c || o->id < c->id)) {
                        (void) group_add(rd, '-', o->dev, o->path, v->key, o->id, 0);
                        i++;
                } else if (c && (!o || c->id < o->id)) {
                        (void) group_add(rd, '+', c->dev, c->path, v->key, c->id, c->parent_id);
                        j++;
                } else {
                        if (o->parent_id != c->parent_id || o->dev != c->dev || !streq(o->path, c->path)) {
                                (void) group_add(rd, '-', o->dev, o->path, v->key, o->id, 0);
                                (void) group_add(rd, '+', c->dev, c->path, v->key, c->id, c->parent_id);
                        }
                        i++, j++;
                }
        }
        *ret = s;
        *ret_n = n;
        return 0;
}

/* Reads v's table, in v's namespace, and reports the differences with the last one (report). */
static int view_read(Reader *rd, RView *v, bool report) {
        RMount *s = NULL;
        size_t n = 0;
        int r = -EOPNOTSUPP;

        if (!v->mountinfo) {
                if (setns(v->ns_fd, CLONE_NEWNS) < 0)
                        return -errno;
                r = read_new_only(rd, v, report, &s, &n);
                if (r == 0)
                        r = read_by_statmount(rd, v, report, &s, &n);
                if (r == -EOPNOTSUPP)
                        v->mountinfo = true;
        }
        if (v->mountinfo)
                r = read_by_mountinfo(rd, v, report, &s, &n);
        if (r < 0)
                return r;
        mounts_free(v->mounts, v->n_mounts);
        v->mounts = s;
        v->n_mounts = n;
        v->count = (uint32_t) n;
        return 0;
}

/* The number of a mountinfo's lines, read from outside the view (before 6.12). */
static int count_mountinfo(int fd, uint32_t *ret) {
        char buf[16384];
        uint32_t n = 0;
        ssize_t k;

        /* (A seq_file: read from its start, no pread()) */
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        while ((k = read(fd, buf, sizeof buf)) > 0)
                for (char *p = buf; (p = memchr(p, '\n', (size_t) (buf + k - p))); p++)
                        n++;
        if (k < 0)
                return -errno;
        *ret = n;
        return 0;
}

/* v's number of mounts without its table: the namespace's count (one ioctl, from outside the
 * view: the same number as its table's, nothing outside the view's root is in the namespace),
 * else its mountinfo's lines. */
static int view_count(RView *v) {
        struct nsm_mnt_ns_info info = { .size = sizeof info };

        if (!v->no_count) {
                if (ioctl(v->ns_fd, NSM_NS_MNT_GET_INFO, &info) >= 0) {
                        v->count = info.nr_mounts;
                        return 0;
                }
                v->no_count = true;
        }
        return count_mountinfo(v->mountinfo_fd, &v->count);
}

/* Back in the host's namespace after reading views: a view deleted must not stay alive for us. */
static void back_home(Reader *rd) {
        if (setns(rd->host_ns_fd, CLONE_NEWNS) < 0)
                _exit(EXIT_FAILURE);   /* stranded: the daemon starts another */
}

/* ---- passes ---- */

/* Reads the flagged tables whose last read is an interval ago (the others wait for theirs: at
 * most one read, and so one signal, per view per interval), and sends what changed. Returns
 * when the next of those waiting is due, 0 if none. */
static uint64_t pass(Reader *rd) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), next = 0;
        bool entered = false, announced = false;
        RView *waiting = NULL;
        int r;

        while (rd->dirty) {
                RView *v = rd->dirty;
                rd->dirty = v->next_dirty;
                if (v->last_read + MOUNT_READER_INTERVAL_USEC > now) {
                        uint64_t due = v->last_read + MOUNT_READER_INTERVAL_USEC;
                        next = next == 0 ? due : MIN(next, due);
                        v->next_dirty = waiting;
                        waiting = v;
                        continue;
                }
                if (!announced) {
                        r = sd_bus_emit_signal(rd->bus, MOUNT_READER_PATH, MOUNT_READER_INTERFACE, "Reading", NULL);
                        if (r < 0)
                                log_debug_errno(r, "Failed to send Reading: %m");
                        announced = true;
                }
                v->next_dirty = NULL;
                v->dirty = false;
                v->last_read = now;
                if (v->detail) {
                        entered = entered || !v->mountinfo;
                        r = view_read(rd, v, true);
                } else
                        r = view_count(v);
                if (r >= 0)
                        r = count_note(rd, v);
                if (r < 0)
                        log_debug_errno(r, "Failed to read the mount table of view %" PRIu32 ": %m", v->key);
        }
        rd->dirty = waiting;
        if (entered)
                back_home(rd);
        if (announced) {
                r = send_changed(rd);
                if (r < 0)
                        log_warning_errno(r, "Failed to send the changes: %m");
        }
        return next;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void pass_and_arm(Reader *rd) {
        uint64_t next = pass(rd);
        int r;

        if (next == 0)
                return;
        if (!rd->timer)
                r = sd_event_add_time(rd->event, &rd->timer, CLOCK_MONOTONIC, next, 1, on_timer, rd);
        else {
                r = sd_event_source_set_time(rd->timer, next);
                if (r >= 0)
                        r = sd_event_source_set_enabled(rd->timer, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_warning_errno(r, "Failed to arm the next read, the changes wait for the next: %m");
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        pass_and_arm(userdata);
        return 0;
}

static void view_flagged(Reader *rd, RView *v) {
        if (v->dirty)
                return;
        v->dirty = true;
        v->next_dirty = rd->dirty;
        rd->dirty = v;
}

/* The loop: the views' mountinfo files are not sources of sd-event's loop but of an epoll set of
 * our own, which also holds the loop's fd. A host mount flags every view at once, and sd-event
 * dispatches one source per iteration, each after an epoll_wait() of its own: thousands of
 * system calls for one mount. Here one epoll_wait() returns them all, and one pass reads them.
 * (The kernel flags a change once, to the first poll(): a mountinfo cannot sit in an epoll set
 * that is itself polled, which is why the loop's fd is in ours and not the other way round.) */
static int reader_loop(Reader *rd) {
        struct epoll_event ev[512];
        int r, code = EXIT_FAILURE;

        for (;;) {
                bool flagged = false;
                int n, wait = -1;

                /* The loop's own work (the bus, the timer), until none is left, or a turn's worth:
                 * a flood of requests does not keep the tables from being read. */
                for (int k = 0; k < 64; k++) {
                        r = sd_event_run(rd->event, 0);
                        if (r <= 0 || sd_event_get_state(rd->event) == SD_EVENT_FINISHED)
                                break;
                        if (k == 63)
                                wait = 0;   /* more to do: only a look at the tables */
                }
                if (sd_event_get_state(rd->event) == SD_EVENT_FINISHED) {
                        (void) sd_event_get_exit_code(rd->event, &code);
                        return code;
                }
                if (r < 0)
                        return r;
                /* Every table flagged now, then one pass. */
                do {
                        n = epoll_wait(rd->epoll_fd, ev, ELEMENTSOF(ev), wait);
                        if (n < 0) {
                                if (errno != EINTR)
                                        return -errno;
                                n = 0;
                        }
                        for (int i = 0; i < n; i++)
                                if (ev[i].data.ptr) {
                                        view_flagged(rd, ev[i].data.ptr);
                                        flagged = true;
                                }
                        wait = 0;
                } while (n == (int) ELEMENTSOF(ev));
                if (flagged)
                        pass_and_arm(rd);
        }
}

/* ---- the methods ---- */

static RView *rview_free(Reader *rd, RView *v) {
        if (!v)
                return NULL;
        if (v->dirty) {
                for (RView **p = &rd->dirty; *p; p = &(*p)->next_dirty)
                        if (*p == v) {
                                *p = v->next_dirty;
                                break;
                        }
        }
        if (v->mountinfo_fd >= 0)
                (void) epoll_ctl(rd->epoll_fd, EPOLL_CTL_DEL, v->mountinfo_fd, NULL);
        safe_close(v->mountinfo_fd);
        safe_close(v->ns_fd);
        mounts_free(v->mounts, v->n_mounts);
        free(v);
        return NULL;
}

static int method_watch(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Reader *rd = userdata;
        RView *v;
        uint32_t key;
        int fd, initial, detail, r;

        r = sd_bus_message_read(m, "uhbb", &key, &fd, &initial, &detail);
        if (r < 0)
                return r;
        if (key == 0 || id_map_get(rd->views, key))
                return sd_bus_error_set_errnof(error, EEXIST, "View %" PRIu32 " is watched already.", key);
        v = calloc(1, sizeof(RView));
        if (!v)
                return -ENOMEM;
        /* (The test knob for 6.1 takes the 6.1 way of counting too.) */
        *v = (RView) { .reader = rd, .key = key, .mountinfo_fd = -EBADF, .mountinfo = rd->force_mountinfo,
                       .no_count = rd->force_mountinfo, .detail = detail };
        v->ns_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (v->ns_fd < 0) {
                r = -errno;
                goto fail;
        }
        /* The view's mountinfo, opened inside it (reading it asks no file system anything). */
        if (setns(v->ns_fd, CLONE_NEWNS) < 0) {
                r = -errno;
                goto fail;
        }
        v->mountinfo_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        r = v->mountinfo_fd < 0 ? -errno : 0;
        /* Polled before the first read, so that a change during it is flagged (edge-triggered:
         * the kernel's flag is read once, by the poll that reports it). */
        if (r >= 0 && epoll_ctl(rd->epoll_fd, EPOLL_CTL_ADD, v->mountinfo_fd,
                                &(struct epoll_event) { .events = EPOLLPRI | EPOLLET, .data.ptr = v }) < 0)
                r = -errno;
        if (r >= 0)
                r = detail ? view_read(rd, v, initial) : view_count(v);
        back_home(rd);
        if (r < 0)
                goto fail;
        v->sent_count = v->count;   /* in the answer */
        r = id_map_put(rd->views, key, v);
        if (r < 0)
                goto fail;
        if (initial && rd->n_groups > 0) {
                r = send_changed(rd);
                if (r < 0)
                        log_warning_errno(r, "Failed to send a first table: %m");
        }
        groups_clear(rd);
        return sd_bus_reply_method_return(m, "u", v->count);
fail:
        groups_clear(rd);
        rview_free(rd, v);
        return sd_bus_error_set_errnof(error, -r, "Failed to watch the mount table: %m");
}

/* A view's table kept (its changes told from now on: the answer waits for the first table) or
 * dropped (only its number of mounts from now on). */
static int method_set_detail(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Reader *rd = userdata;
        uint32_t key;
        int detail, r = 0;
        RView *v;

        r = sd_bus_message_read(m, "ub", &key, &detail);
        if (r < 0)
                return r;
        v = id_map_get(rd->views, key);
        if (!v)
                return sd_bus_error_set_errnof(error, ENOENT, "View %" PRIu32 " is not watched.", key);
        if (detail && !v->detail) {
                bool entered = !v->mountinfo;
                r = view_read(rd, v, false);
                if (entered)
                        back_home(rd);
                if (r < 0)
                        return sd_bus_error_set_errnof(error, -r, "Failed to read the mount table: %m");
        } else if (!detail && v->detail) {
                mounts_free(v->mounts, v->n_mounts);
                v->mounts = NULL;
                v->n_mounts = 0;
        }
        v->detail = detail;
        return sd_bus_reply_method_return(m, NULL);
}

static int method_unwatch(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Reader *rd = userdata;
        uint32_t key;
        int r;

        r = sd_bus_message_read(m, "u", &key);
        if (r < 0)
                return r;
        rview_free(rd, id_map_remove(rd->views, key));
        return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable reader_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Watch", SD_BUS_ARGS("u", key, "h", namespace, "b", initial, "b", detail),
                                SD_BUS_RESULT("u", count), method_watch, 0),
        SD_BUS_METHOD_WITH_ARGS("SetDetail", SD_BUS_ARGS("u", key, "b", detail), SD_BUS_NO_RESULT, method_set_detail, 0),
        SD_BUS_METHOD_WITH_ARGS("Unwatch", SD_BUS_ARGS("u", key), SD_BUS_NO_RESULT, method_unwatch, 0),
        SD_BUS_SIGNAL("Reading", "", 0),
        SD_BUS_SIGNAL_WITH_ARGS("Changed", SD_BUS_ARGS(MOUNT_READER_DETACHED_SIGNATURE, detached, MOUNT_READER_ATTACHED_SIGNATURE, attached,
                                                       MOUNT_READER_COUNTS_SIGNATURE, keys, MOUNT_READER_COUNTS_SIGNATURE, counts), 0),
        SD_BUS_VTABLE_END,
};

_Noreturn void mount_reader_main(int sock) {
        Reader rd = {};
        sd_id128_t id;
        int r;

        if (child_setup(sock, NULL, 0) < 0)
                _exit(EXIT_FAILURE);
        /* Named, for ps and for the tests that look for the watches it holds. */
        (void) prctl(PR_SET_NAME, "nsm-reader");
        rd.force_mountinfo = streq_ptr(getenv("NSM_MOUNT_EVENTS"), "poll-mountinfo");
        rd.host_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        rd.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        rd.views = id_map_new();
        rd.groups = hashmap_new();
        if (rd.host_ns_fd < 0 || rd.epoll_fd < 0 || !rd.views || !rd.groups)
                _exit(EXIT_FAILURE);
        /* Fresh objects only: nothing of the daemon's loop or bus is used here. */
        r = sd_event_new(&rd.event);
        if (r >= 0)
                r = sd_bus_new(&rd.bus);
        if (r >= 0)
                r = sd_bus_set_fd(rd.bus, sock, sock);
        if (r >= 0)
                r = sd_id128_randomize(&id);
        if (r >= 0)
                r = sd_bus_set_server(rd.bus, true, id);
        if (r >= 0)
                r = sd_bus_negotiate_fds(rd.bus, true);
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(rd.bus, true);
        if (r >= 0)
                r = sd_bus_add_object_vtable(rd.bus, NULL, MOUNT_READER_PATH, MOUNT_READER_INTERFACE, reader_vtable, &rd);
        if (r >= 0)
                r = sd_bus_start(rd.bus);
        if (r >= 0)
                r = sd_bus_attach_event(rd.bus, rd.event, 0);
        if (r >= 0 && epoll_ctl(rd.epoll_fd, EPOLL_CTL_ADD, sd_event_get_fd(rd.event),
                                &(struct epoll_event) { .events = EPOLLIN, .data.ptr = NULL }) < 0)
                r = -errno;
        if (r < 0) {
                log_error_errno(r, "Failed to start the mount reader: %m");
                _exit(EXIT_FAILURE);
        }
        r = reader_loop(&rd);
        _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}
