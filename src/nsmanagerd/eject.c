/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/sysmacros.h>

#include "bus-util.h"
#include "child.h"
#include "eject-scan.h"
#include "eject.h"
#include "log.h"
#include "namespace.h"
#include "op-queue.h"
#include "strv.h"
#include "time-util.h"

/* How long a release may take, at least: it is no caller's call, and it looks at every view. */
#define RELEASE_TIMEOUT_MIN_USEC (30 * USEC_PER_SEC)

/* What the child is asked (eject-scan.h). */
typedef struct EjectOp {
        const char *what;        /* Eject(): the device or mount point; NULL for a release */
        dev_t dev;               /* a release: the device */
        bool lazy;
        bool release;
        size_t n_views;
        char **names;            /* view i's user */
        int *fds;                /* view i's namespace */
} EjectOp;

/* ======== in the daemon ======== */

struct Ejector {
        NamespaceSet *namespaces;       /* the owner's: the views, and the configuration */
        ChildSet *children;
        OpQueue *host_ops;
        IdMap *ejected;                 /* block devices Eject() detached everywhere */
};

typedef struct EjectJob {
        Ejector *ejector;
        EjectOp op;
        char *what;
        Namespace **refs;        /* what the child's view fds belong to, held until it ends */
        uint64_t deadline;
        EjectDoneFunc done;
        void *userdata;
        QueuedOp *queued;
        char *description;
} EjectJob;

static void eject_job_free(EjectJob *j) {
        if (!j)
                return;
        for (size_t i = 0; i < j->op.n_views; i++) {
                namespace_unref(j->refs[i]);
                free(j->op.names[i]);
        }
        free(j->refs);
        free(j->op.names);
        free(j->op.fds);
        free(j->what);
        free(j->description);
        free(j);
}

static void eject_result_done(EjectResult *r) {
        nsm_error_done(&r->error);
        for (size_t i = 0; i < r->n_detached; i++) {
                free(r->detached[i].user);
                free(r->detached[i].path);
        }
        free(r->detached);
}

/* "alice's /home/alice/usb, bob's /mnt/usb" */
static char *detached_text(const EjectResult *res) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return NULL;
        for (size_t i = 0; i < res->n_detached; i++)
                fprintf(f, "%s%s%s'%s'", i > 0 ? ", " : "", *res->detached[i].user ? res->detached[i].user : "the host",
                        *res->detached[i].user ? "'s " : "'s ", res->detached[i].path);
        if (fclose(f) != 0)
                return NULL;
        return TAKE_PTR(buf);
}

/* The child's answer (eject-scan.h): the device, what it detached, what is left, who holds it. */
static int read_records(sd_bus_message *reply, EjectResult *res, char ***ret_left, char **ret_holders) {
        const char *user, *holders;
        uint64_t dev;
        int r;

        r = sd_bus_message_read(reply, "t", &dev);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(say)");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'r', "say")) > 0) {
                EjectMount *m = realloc(res->detached, (res->n_detached + 1) * sizeof(EjectMount));

                if (!m)
                        return -ENOMEM;
                res->detached = m;
                m += res->n_detached++;
                *m = (EjectMount) {};
                r = sd_bus_message_read(reply, "s", &user);
                if (r >= 0)
                        r = bus_message_read_bytes(reply, &m->path);
                if (r >= 0 && !(m->user = strdup(user)))
                        r = -ENOMEM;
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_read_strv(reply, ret_left);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &holders);
        if (r < 0)
                return r;
        res->dev = (dev_t) dev;
        if (*ret_left && !**ret_left)
                *ret_left = strv_free(*ret_left);
        *ret_holders = *holders ? strdup(holders) : NULL;
        return 0;
}

static void on_eject_child_done(const NsmError *error, sd_bus_message *reply, void *userdata) {
        EjectJob *j = userdata;
        _cleanup_strv_free_ char **lazy = NULL;
        _cleanup_free_ char *holders = NULL;
        EjectResult res = {};

        if (error)
                (void) nsm_error_copy(&res.error, error);
        else if (read_records(reply, &res, &lazy, &holders) < 0)
                (void) nsm_error_set(&res.error, NSM_ERROR_SYSTEM, -EPROTO,
                                     "The helper process answered with a malformed result.");
        if (j->op.release) {
                _cleanup_free_ char *list = strv_join(lazy, "; "), *done = detached_text(&res);
                if (nsm_error_is_set(&res.error))
                        log_warning("Failed to release the copies of block device %u:%u the views hold: %s",
                                    major(j->op.dev), minor(j->op.dev), nsm_error_message(&res.error));
                else if (res.n_detached > 0 && !(list && *list))
                        log_info("Released block device %u:%u: detached %s.", major(j->op.dev), minor(j->op.dev),
                                 done ?: "its copies in views");
                else if (res.n_detached > 0 || (list && *list))
                        log_warning("Released block device %u:%u: detached %s; %s%s%s.", major(j->op.dev),
                                    minor(j->op.dev), done ?: "its copies in views", list ?: "",
                                    holders ? "; held by: " : "", holders ?: "");
        } else if (!nsm_error_is_set(&res.error) && res.dev != 0 && !lazy) {
                /* Everything is gone: the host's unmount just seen needs no release. */
                if (id_map_put(j->ejector->ejected, res.dev, (void *) 1) < 0)
                        log_oom();
        }
        if (j->done)
                j->done(&res, j->userdata);
        eject_result_done(&res);
        if (j->queued)
                op_queue_complete(j->queued);
        eject_job_free(j);
}

/* The views go ahead of the call, in calls of their own (a message carries at most 253 fds),
 * which expect no reply. */
static int send_views(sd_bus *bus, void *userdata) {
        const EjectJob *j = userdata;

        for (size_t i = 0; i < j->op.n_views; i += EJECT_SCAN_VIEWS_PER_CALL) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
                int r;

                r = sd_bus_message_new_method_call(bus, &m, NULL, CHILD_OBJECT_PATH, EJECT_SCAN_INTERFACE, "AddViews");
                if (r >= 0)
                        r = sd_bus_message_set_expect_reply(m, false);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'a', "(sh)");
                for (size_t k = i; r >= 0 && k < MIN(j->op.n_views, i + EJECT_SCAN_VIEWS_PER_CALL); k++)
                        r = sd_bus_message_append(m, "(sh)", j->op.names[k], j->op.fds[k]);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_send(bus, m, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int append_request(sd_bus_message *m, void *userdata) {
        const EjectJob *j = userdata;

        if (j->op.release)
                return sd_bus_message_append(m, "t", (uint64_t) j->op.dev);
        return sd_bus_message_append(m, "sb", j->op.what, j->op.lazy);
}

/* The views as they are when the job starts: their names and fds for the child. */
static int eject_job_snapshot(EjectJob *j) {
        Ejector *x = j->ejector;
        size_t n = hashmap_size(x->namespaces->by_name), k = 0;
        Namespace *ns;

        j->op.names = calloc(n + 1, sizeof(char *));
        j->op.fds = calloc(n + 1, sizeof(int));
        j->refs = calloc(n + 1, sizeof(Namespace *));
        if (!j->op.names || !j->op.fds || !j->refs)
                return -ENOMEM;
        for (HashmapIterator i = {}; hashmap_iterate(x->namespaces->by_name, &i, (void **) &ns, NULL);) {
                if (!ns->ready || ns->mntns_fd < 0)
                        continue;
                j->op.names[k] = strdup(ns->name);
                if (!j->op.names[k])
                        return -ENOMEM;
                j->op.fds[k] = ns->mntns_fd;
                j->refs[k] = namespace_ref(ns);
                j->op.n_views = ++k;
        }
        return 0;
}

static int eject_job_start(QueuedOp *q, void *userdata) {
        EjectJob *j = userdata;
        Ejector *x = j->ejector;
        int r;

        j->queued = q;
        if (j->op.release && id_map_remove(x->ejected, j->op.dev)) {
                log_debug("Block device %u:%u was ejected everywhere: nothing to release.", major(j->op.dev), minor(j->op.dev));
                op_queue_complete(q);
                eject_job_free(j);
                return 0;
        }
        r = eject_job_snapshot(j);
        if (r < 0) {
                j->queued = NULL;
                return r;
        }
        ChildSpec spec = {
                .description = j->description,
                .interface = &eject_scan_interface,
                .prepare = send_views,
                .method = j->op.release ? "Release" : "Eject",
                .append = append_request,
                .reply = on_eject_child_done,
                .deadline = j->deadline,
                .userdata = j,
        };
        r = child_start(x->children, &spec);
        if (r < 0)
                j->queued = NULL;   /* the queue fails us itself */
        return r;
}

static void eject_job_not_started(const NsmError *error, void *userdata) {
        EjectJob *j = userdata;
        EjectResult res = {};

        if (j->op.release)
                log_warning("Failed to release the copies of block device %u:%u the views hold: %s", major(j->op.dev),
                            minor(j->op.dev), nsm_error_message(error));
        else if (j->done) {
                (void) nsm_error_copy(&res.error, error);   /* without memory, its sentence is the table's */
                j->done(&res, j->userdata);
        }
        eject_result_done(&res);
        eject_job_free(j);
}

static int eject_queue(Ejector *x, EjectJob *j) {
        int r = op_queue_add(x->host_ops, j->deadline, eject_job_start, eject_job_not_started, j);
        if (r < 0)
                eject_job_free(j);
        return r;
}

int eject_start(Ejector *x, const char *what, bool lazy, uint64_t deadline, EjectDoneFunc done, void *userdata) {
        EjectJob *j = calloc(1, sizeof(EjectJob));

        if (!j)
                return -ENOMEM;
        *j = (EjectJob) { .ejector = x, .deadline = deadline, .done = done, .userdata = userdata,
                          .op = { .lazy = lazy } };
        j->what = strdup(what);
        j->op.what = j->what;
        if (!j->what || asprintf(&j->description, "Eject of '%s'", what) < 0) {
                j->description = NULL;
                eject_job_free(j);
                return -ENOMEM;
        }
        return eject_queue(x, j);
}

int eject_release(Ejector *x, dev_t dev) {
        EjectJob *j = calloc(1, sizeof(EjectJob));

        if (!j)
                return -ENOMEM;
        *j = (EjectJob) { .ejector = x, .op = { .dev = dev, .release = true, .lazy = false },
                          .deadline = now_usec(CLOCK_MONOTONIC) + MAX(x->namespaces->config->operation_timeout_usec,
                                                                      RELEASE_TIMEOUT_MIN_USEC) };
        if (asprintf(&j->description, "Releasing block device %u:%u", major(dev), minor(dev)) < 0) {
                j->description = NULL;
                eject_job_free(j);
                return -ENOMEM;
        }
        return eject_queue(x, j);
}

void ejector_forget(Ejector *x, dev_t dev) {
        if (x)
                (void) id_map_remove(x->ejected, dev);
}

int ejector_new(NamespaceSet *namespaces, ChildSet *children, OpQueue *host_ops, Ejector **ret) {
        Ejector *x = calloc(1, sizeof(Ejector));

        if (!x)
                return -ENOMEM;
        *x = (Ejector) { .namespaces = namespaces, .children = children, .host_ops = host_ops, .ejected = id_map_new() };
        if (!x->ejected) {
                free(x);
                return -ENOMEM;
        }
        *ret = x;
        return 0;
}

Ejector *ejector_free(Ejector *x) {
        if (!x)
                return NULL;
        id_map_free(x->ejected);
        free(x);
        return NULL;
}
