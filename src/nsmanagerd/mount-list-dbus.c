/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "builder-message.h"
#include "builder.h"
#include "bus-errors.h"
#include "bus-polkit.h"
#include "bus-util.h"
#include "log.h"
#include "mount-list-dbus.h"
#include "mount-util.h"

/* One GetMountsEx: the host's table first (for a view: which peer groups are the host's), then
 * the view's, both read by the builder. */
typedef struct MountsExRead {
        BusRequest *req;
        Namespace *ns;           /* a reference; NULL: the host */
        uint64_t *host_groups;   /* the host's peer groups, sorted */
        size_t n_host_groups;
        uint64_t kept[6];        /* the devices of host_paths_kept, 0 for none */
        uint64_t can_id;         /* CanMount: the mount asked about (0: GetMountsEx) */
} MountsExRead;

/* The host's own file systems, whose devices Eject refuses (eject.c has the same list). */
static const char *const host_paths_kept[] = { "/", "/usr", "/boot", "/boot/efi", "/var", "/home" };

static void mounts_ex_read_free(MountsExRead *x) {
        if (!x)
                return;
        if (x->ns)
                namespace_unref(x->ns);
        free(x->host_groups);
        free(x);
}

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static int ids_cmp(const void *a, const void *b) {
        const BuilderMountIds *x = a, *y = b;
        return x->old < y->old ? -1 : x->old > y->old;
}

/* The unique id of the mount with mountinfo id 'old', 0 if the answer has none. */
static uint64_t unique_of(const BuilderMountIds *ids, size_t n, uint64_t old) {
        const BuilderMountIds key = { .old = old }, *f;

        f = n > 0 ? bsearch(&key, ids, n, sizeof key, ids_cmp) : NULL;
        return f ? f->unique : 0;
}

/* The device number of the block device the file system is on, as major << 32 | minor; 0 where
 * it is on none (an anonymous device: tmpfs, proc, FUSE, overlay, btrfs's subvolumes). Said by
 * the kernel (mountinfo's MAJ:MIN and sysfs), never by the source text, which its mounter
 * chose. */
static uint64_t block_device_of(uint64_t dev) {
        char sys[64];

        if (dev == 0 || major(dev) == 0)
                return 0;
        snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", major(dev), minor(dev));
        if (access(sys, F_OK) < 0)
                return 0;
        return (uint64_t) major(dev) << 32 | minor(dev);
}

/* FUSE mounts say whose they are (user_id=, the uid of who mounted it, fusermount3 included). */
static bool fuse_mounted_by(const MountEntry *e, uid_t uid) {
        char want[32];
        size_t n;

        if (strncmp(e->fstype, "fuse", 4) != 0)
                return false;
        n = (size_t) snprintf(want, sizeof want, "user_id=%u", (unsigned) uid);
        for (const char *o = e->options; o && *o;) {
                size_t k = strcspn(o, ",");
                if (k == n && strncmp(o, want, n) == 0)
                        return true;
                o += k + (o[k] == ',');
        }
        return false;
}

static void note_kept(MountsExRead *x, const MountEntry *e, size_t n) {
        for (size_t k = 0; k < ELEMENTSOF(host_paths_kept); k++)
                for (size_t i = n; i > 0; i--)
                        if (streq_ptr(e[i - 1].target, host_paths_kept[k])) {
                                x->kept[k] = block_device_of(e[i - 1].dev);
                                break;
                        }
}

static bool device_kept(const MountsExRead *x, uint64_t device) {
        for (size_t k = 0; k < ELEMENTSOF(x->kept); k++)
                if (device != 0 && x->kept[k] == device)
                        return true;
        return false;
}

static bool host_group(const MountsExRead *x, uint64_t group) {
        return group != 0 && x->n_host_groups > 0 &&
               bsearch(&group, x->host_groups, x->n_host_groups, sizeof group, u64_cmp);
}

/* Where the mount came from, as far as the kernel and the daemon's records tell: never a
 * guess. */
static const char *origin_of(const MountsExRead *x, const MountEntry *e, MountId id) {
        if (!x->ns)
                return MOUNT_ORIGIN_HOST;
        if (mount_id_in(id, x->ns->policy_mounts, x->ns->n_policy_mounts))
                return MOUNT_ORIGIN_POLICY;
        for (size_t i = 0; i < x->ns->n_binds; i++)
                if (mount_id_equal(id, x->ns->binds[i].id))
                        return MOUNT_ORIGIN_DAEMON;
        if (fuse_mounted_by(e, x->ns->uid))
                return MOUNT_ORIGIN_USER;
        /* A peer or a slave of one of the host's peer groups: a copy of a host mount, or a
         * mount the host propagated into the view. */
        if (host_group(x, e->peer_group) || host_group(x, e->master_group))
                return MOUNT_ORIGIN_HOST;
        return MOUNT_ORIGIN_UNKNOWN;
}

static int append_mount(sd_bus_message *m, const MountsExRead *x, const MountEntry *e, const BuilderMountIds *ids,
                        size_t n_ids) {
        uint64_t unique = unique_of(ids, n_ids, e->id), parent = unique_of(ids, n_ids, e->parent_id);
        MountId mid = { .unique = unique ?: e->fingerprint, .old = e->id };
        int r;

        r = sd_bus_message_open_container(m, 'r', "tttttsaysaysssts");
        if (r < 0)
                return r;
        /* With unique ids, a parent outside the namespace (the root's) has none: 0. */
        r = sd_bus_message_append(m, "ttttt", unique ?: e->id, unique ? 0 : e->fingerprint,
                                  n_ids > 0 ? parent : e->parent_id, e->peer_group, e->master_group);
        if (r >= 0)
                r = bus_message_append_text(m, e->target);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', e->target, strlen(e->target));
        if (r >= 0)
                r = bus_message_append_text(m, e->source);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', e->source, strlen(e->source));
        if (r >= 0)
                r = bus_message_append_text(m, e->fstype);
        if (r >= 0)
                r = bus_message_append_text(m, e->options);
        if (r >= 0)
                r = sd_bus_message_append(m, "sts", e->propagation, block_device_of(e->dev), origin_of(x, e, mid));
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

/* The table and, after a NUL, its ids (builder-message.h). */
static int parse_answer(const BuilderReply *reply, MountEntry **ret, size_t *ret_n, BuilderMountIds **ret_ids,
                        size_t *ret_n_ids) {
        _cleanup_fclose_ FILE *f = NULL;
        const char *data = reply->data ?: "", *nul = memchr(data, 0, reply->size);
        size_t table = nul ? (size_t) (nul - data) : reply->size, rest = nul ? reply->size - table - 1 : 0;
        BuilderMountIds *ids = NULL;
        int r;

        f = fmemopen((void *) data, table, "r");
        if (!f)
                return table == 0 ? -EBADMSG : -errno;
        r = mount_table_read(f, ret, ret_n);
        if (r < 0)
                return r;
        if (rest > 0) {
                ids = malloc(rest);
                if (!ids) {
                        mount_entries_free(*ret, *ret_n);
                        return -ENOMEM;
                }
                memcpy(ids, nul + 1, rest);
                qsort(ids, rest / sizeof *ids, sizeof *ids, ids_cmp);
        }
        *ret_ids = ids;
        *ret_n_ids = rest / sizeof *ids;
        return 0;
}

static void on_host_read(BuilderReply *reply, void *userdata);
static void on_view_read(BuilderReply *reply, void *userdata);

/* ---- CanMount ---- */

/* What CanMount learnt of the mount, kept with the request while polkit is asked. */
typedef struct CanMountFacts {
        bool found;
        bool root;               /* the namespace's root: never unmounted */
        bool policy;             /* the [View] policy's */
        bool own_bind;           /* a bind made for the view's user (theirs to unmount) */
        uint64_t device;         /* its block device, 0 for none or one of the host's own */
} CanMountFacts;

static void can_mount_facts_free(void *p) {
        free(p);
}

/* The facts about mount x->can_id, kept with the request, which is then dispatched again (the
 * step answers from them: can_mount_step()). */
static int can_mount_facts(MountsExRead *x, const MountEntry *e, size_t n, const BuilderMountIds *ids, size_t n_ids) {
        BusRequest *req = x->req;
        CanMountFacts *f = calloc(1, sizeof(CanMountFacts));

        if (!f)
                return -ENOMEM;
        for (size_t i = n; i > 0; i--) {
                const MountEntry *m = e + i - 1;
                uint64_t unique = unique_of(ids, n_ids, m->id);
                MountId mid = { .unique = unique ?: m->fingerprint, .old = m->id };

                if (x->can_id >= MOUNT_ID_UNIQUE_MIN ? unique != x->can_id : m->id != x->can_id)
                        continue;
                f->found = true;
                f->root = streq_ptr(m->target, "/");
                f->device = device_kept(x, block_device_of(m->dev)) ? 0 : block_device_of(m->dev);
                if (x->ns) {
                        f->policy = mount_id_in(mid, x->ns->policy_mounts, x->ns->n_policy_mounts);
                        for (size_t b = 0; b < x->ns->n_binds; b++)
                                if (x->ns->binds[b].for_user && mount_id_equal(mid, x->ns->binds[b].id))
                                        f->own_bind = true;
                }
                break;
        }
        if (req->free_data)
                req->free_data(req->data);
        req->data = f;
        req->free_data = can_mount_facts_free;
        /* Once more through the method, which answers from the facts now. */
        return sd_bus_enqueue_for_read(sd_bus_message_get_bus(req->message), req->message);
}

static const char *polkit_answer(PolkitResult r) {
        return r == POLKIT_RESULT_YES ? "yes" : r == POLKIT_RESULT_CHALLENGE ? "challenge" : "no";
}

int bus_request_reply_can_mount(BusRequest *req, Namespace *ns, uint64_t id, uid_t caller, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const CanMountFacts *f = req->data;
        const char *details[] = { "user", ns ? ns->name : "", NULL };
        struct {
                const char *method;
                const char *action;      /* NULL: no */
        } answers[] = {
                { "UnmountById", NULL },
                { "SetPropagationById", NULL },
                { "Eject", NULL },
        };
        bool own = ns && caller == ns->uid;
        int r;

        if (!f) {
                /* First: read the table (the builder), then come back here. */
                MountsExRead *x = calloc(1, sizeof(MountsExRead));

                if (!x)
                        return -ENOMEM;
                *x = (MountsExRead) { .req = req, .ns = ns ? namespace_ref(ns) : NULL, .can_id = id };
                bus_request_wait(req);
                r = builder_read_mounts(req->manager->builder, -EBADF, !ns, req->deadline,
                                        ns ? on_host_read : on_view_read, x);
                if (r < 0) {
                        bus_request_unwait(req);
                        mounts_ex_read_free(x);
                        return bus_error_set_errnof(error, r, "Failed to read the mount table: %m");
                }
                return 0;
        }
        if (!f->found)
                return bus_error_setf(error, NSM_ERROR_MOUNT_CHANGED, "%s has no mount %" PRIu64 " (any more).",
                                      ns ? "The view" : "The host", id);

        /* As the methods decide (docs/interface.md): what would certainly be refused is "no". */
        if (ns && !f->root)
                answers[0].action = own && f->own_bind ? ACTION_MANAGE_OWN : ACTION_MANAGE;
        answers[1].action = own && !f->policy ? ACTION_MANAGE_OWN : ACTION_MANAGE;
        if (f->device != 0)
                answers[2].action = ACTION_MANAGE;

        r = sd_bus_message_new_method_return(req->message, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{ss}");
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(answers); i++) {
                PolkitResult result = POLKIT_RESULT_NO;

                if (answers[i].action && caller == 0)
                        result = POLKIT_RESULT_YES;
                else if (answers[i].action) {
                        r = bus_test_polkit_async(req->message, answers[i].action, details,
                                                  &req->manager->polkit_registry, &result, error);
                        if (r < 0)
                                return r;
                        if (r == 0) {
                                bus_request_wait(req);   /* asked: dispatched again with the answer */
                                return 0;
                        }
                }
                r = sd_bus_message_append(reply, "{ss}", answers[i].method, polkit_answer(result));
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static void on_view_read(BuilderReply *reply, void *userdata) {
        MountsExRead *x = userdata;
        BusRequest *req = x->req;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ BuilderMountIds *ids = NULL;
        MountEntry *e = NULL;
        size_t n = 0, n_ids = 0;
        int r;

        if (reply->error) {
                bus_request_reply_error(req, reply->error);
                mounts_ex_read_free(x);
                return;
        }
        r = parse_answer(reply, &e, &n, &ids, &n_ids);
        if (r >= 0 && x->can_id != 0) {
                if (!x->ns)
                        note_kept(x, e, n);
                r = can_mount_facts(x, e, n, ids, n_ids);
                mount_entries_free(e, n);
                mounts_ex_read_free(x);
                if (r < 0)
                        bus_request_reply_errno(req, r, "Failed to read the mount table.");
                return;
        }
        if (r >= 0)
                r = sd_bus_message_new_method_return(req->message, &m);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', MOUNTS_EX_SIGNATURE);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = append_mount(m, x, e + i, ids, n_ids);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0 && x->ns)
                x->ns->n_mounts = (uint32_t) n;
        mount_entries_free(e, n);
        mounts_ex_read_free(x);
        if (r < 0) {
                bus_request_reply_errno(req, r, "Failed to read the mount table.");
                return;
        }
        bus_request_reply(req, m);
}

static void on_host_read(BuilderReply *reply, void *userdata) {
        MountsExRead *x = userdata;
        BusRequest *req = x->req;
        MountEntry *e = NULL;
        size_t n = 0;
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        if (reply->error) {
                bus_request_reply_error(req, reply->error);
                mounts_ex_read_free(x);
                return;
        }
        f = fmemopen((void *) (reply->data ?: ""), reply->size, "r");
        r = f ? mount_table_read(f, &e, &n) : -errno;
        if (r >= 0 && n > 0) {
                x->host_groups = calloc(n, sizeof(uint64_t));
                if (!x->host_groups)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < n; i++)
                        if (e[i].peer_group != 0)
                                x->host_groups[x->n_host_groups++] = e[i].peer_group;
                if (r >= 0)
                        qsort(x->host_groups, x->n_host_groups, sizeof(uint64_t), u64_cmp);
        }
        if (r >= 0)
                note_kept(x, e, n);
        mount_entries_free(e, n);
        if (r >= 0)
                r = builder_read_mounts(req->manager->builder, x->ns->mntns_fd, true, req->deadline, on_view_read, x);
        if (r < 0) {
                mounts_ex_read_free(x);
                bus_request_reply_errno(req, r, "Failed to read the mount table.");
        }
}

int bus_request_reply_mounts_ex(BusRequest *req, Namespace *ns, sd_bus_error *error) {
        MountsExRead *x = calloc(1, sizeof(MountsExRead));
        int r;

        if (!x)
                return -ENOMEM;
        *x = (MountsExRead) { .req = req, .ns = ns ? namespace_ref(ns) : NULL };
        /* The builder reads both: no fork per call, and no file system is asked anything. */
        bus_request_wait(req);
        if (ns)
                r = builder_read_mounts(req->manager->builder, -EBADF, false, req->deadline, on_host_read, x);
        else
                r = builder_read_mounts(req->manager->builder, -EBADF, true, req->deadline, on_view_read, x);
        if (r < 0) {
                bus_request_unwait(req);
                mounts_ex_read_free(x);
                return bus_error_set_errnof(error, r, "Failed to read the mount table: %m");
        }
        return 1;
}
