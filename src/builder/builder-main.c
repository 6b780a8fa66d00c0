/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#include "builder-message.h"
#include "child-setup.h"
#include "ipc-fields.h"
#include "ipc.h"
#include "mount-notify.h"
#include "mount-util.h"
#include "registry.h"
#include "strv.h"
#include "view-build.h"

/* What the builder keeps between requests: its own, never the daemon's. */
typedef struct BuilderProcess {
        int sock;
        int host_ns_fd;
        int host_uts_fd;
        int registry_fd;
        int cpu;
        char *pins_dir;
        MountTableCache host_mounts;     /* the host's, read again only after it changed */
} BuilderProcess;

/* Each handler sends its answer, or returns a negative errno with the failure in 'error', which
 * builder_dispatch() sends. */
static int handle_open_registry(BuilderProcess *p, const BuilderCall *c, NsmError *error) {
        int r;

        free(p->pins_dir);
        p->pins_dir = strdup(c->pins_dir);
        if (!p->pins_dir)
                return -ENOMEM;
        p->registry_fd = safe_close(p->registry_fd);
        r = registry_open(c->registry_pin, c->pins_dir, p->host_ns_fd, &p->cpu, &p->registry_fd);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to set up the namespace registry '%s': %m",
                                            c->registry_pin);
        return ipc_send(p->sock, r, 0, NULL, 0, NULL, 0);
}

static int handle_build(BuilderProcess *p, const BuilderCall *c, NsmError *error) {
        _cleanup_close_ int ns_fd = -EBADF;
        _cleanup_free_ char *where = NULL;
        ViewStage stage = VIEW_STAGE_NONE;
        size_t n_mounts = 0;
        int r = -EINVAL;

        if (p->registry_fd < 0)
                return nsm_error_set_errnof(error, -EBADFD, "The registry is not open.");
        /* Opened in the host namespace, where the builder is between requests. */
        r = mount_table_cache_refresh(&p->host_mounts);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the host's mount table: %m");
        ViewSpec spec = { .name = c->name, .subtree_root = c->subtree_root, .shared_subtrees = c->shared_subtrees,
                          .propagation = c->propagation, .host_mounts = &p->host_mounts };

        for (int tries = 0; tries < 3; tries++) {
                r = set_cpu(p->cpu);
                if (r >= 0)
                        r = view_build(&spec, p->host_ns_fd, &ns_fd, &n_mounts, &stage);
                if (r < 0)
                        break;
                stage = VIEW_STAGE_PIN;
                r = registry_pin_view(p->registry_fd, p->host_ns_fd, p->pins_dir, spec.name, ns_fd);
                if (r != -EINVAL)
                        break;
                /* Made on a CPU whose namespace ids are older than the registry's (registry.h):
                 * move that CPU's ids on and build it again there. */
                ns_fd = safe_close(ns_fd);
                r = namespace_ids_pass(mntns_get_id(p->registry_fd), p->host_uts_fd);
                if (r < 0)
                        break;
                r = -EINVAL;
        }
        if (r < 0) {
                /* The mount point directory is all a failed build leaves on the host. */
                if (asprintf(&where, "%s/%s", spec.subtree_root, spec.name) >= 0)
                        (void) rmdir(where);
                /* Each stage works on the paths of the configuration (SubtreeRoot=, SharedSubtrees=):
                 * what its errno says about them names it. */
                return nsm_error_set_path_errnof(error, r, "Failed to build the view of '%s' while %s: %m", spec.name,
                                                 view_stage_to_string(stage));
        }
        /* The result of a build is its number of mounts. */
        return ipc_send(p->sock, (int) MIN(n_mounts, (size_t) INT32_MAX), 0, NULL, 0, &ns_fd, 1);
}

static int handle_unpin(BuilderProcess *p, const BuilderCall *c, NsmError *error) {
        int r;

        r = registry_unpin(p->registry_fd, p->host_ns_fd, p->pins_dir, c->name);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to unpin the namespace of '%s': %m", c->name);
        return ipc_send(p->sock, 0, 0, NULL, 0, NULL, 0);
}

static int send_pin(const char *name, int fd, void *userdata) {
        BuilderProcess *p = userdata;
        int r = ipc_send(p->sock, 0, IPC_MORE, name, strlen(name) + 1, &fd, fd >= 0 ? 1 : 0);
        safe_close(fd);
        return r;
}

static int handle_list(BuilderProcess *p, NsmError *error) {
        int r = registry_list(p->registry_fd, p->host_ns_fd, p->pins_dir, send_pin, p);
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to list the pinned namespaces: %m");
        return ipc_send(p->sock, 0, 0, NULL, 0, NULL, 0);
}

static int read_mountinfo(char **ret, size_t *ret_size) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0;

        if (!f)
                return -errno;
        for (;;) {
                if (allocated - size < 4096) {
                        allocated = MAX(allocated * 2, (size_t) 65536);
                        char *b = realloc(buf, allocated);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                size_t k = fread(buf + size, 1, allocated - size, f);
                size += k;
                if (k == 0)
                        break;
        }
        if (ferror(f))
                return -EIO;
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/* After the table in buf: a NUL and each mount's ids (builder-message.h), where the kernel has
 * unique ids; nothing more where it does not. statmount(2) of the basic fields asks no file
 * system anything either. */
static int append_mount_ids(char **buf, size_t *size) {
        uint64_t ids[256], after = 0;
        char *b;

        b = realloc(*buf, *size + 1);
        if (!b)
                return -ENOMEM;
        b[(*size)++] = '\0';
        *buf = b;
        for (;;) {
                ssize_t k = mount_list_ids(after, ids, ELEMENTSOF(ids));

                if (k == -EOPNOTSUPP)
                        return 0;
                if (k < 0)
                        return (int) k;
                for (ssize_t i = 0; i < k; i++) {
                        MountStat st = {};
                        BuilderMountIds m;

                        if (mount_stat(ids[i], false, &st) < 0)
                                continue;   /* gone meanwhile */
                        m = (BuilderMountIds) { .old = st.old_id, .unique = st.id };
                        mount_stat_done(&st);
                        b = realloc(*buf, *size + sizeof m);
                        if (!b)
                                return -ENOMEM;
                        memcpy(b + *size, &m, sizeof m);
                        *buf = b;
                        *size += sizeof m;
                }
                if ((size_t) k < ELEMENTSOF(ids))
                        return 0;
                after = ids[k - 1];
        }
}

static int handle_read_mounts(BuilderProcess *p, const BuilderCall *c, int ns_fd, NsmError *error) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r;

        /* Reading mountinfo asks no file system anything (d_path and show_options only): safe
         * for the builder even where a view holds a hung FUSE or NFS mount. */
        if (ns_fd >= 0 && setns(ns_fd, CLONE_NEWNS) < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to enter the namespace: %m");
        r = read_mountinfo(&buf, &size);
        if (r >= 0 && c->with_ids)
                r = append_mount_ids(&buf, &size);
        if (ns_fd >= 0 && setns(p->host_ns_fd, CLONE_NEWNS) < 0)
                _exit(EXIT_FAILURE);   /* stranded outside the host: the daemon starts another */
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to read the mount table: %m");
        return ipc_send_data(p->sock, buf, size);
}

/* An open mountinfo of a namespace flags every change in it (POLLPRI), whoever holds it and
 * wherever: for mount-events-view.c, which holds it without reading it. */
static int handle_open_mountinfo(BuilderProcess *p, int ns_fd, NsmError *error) {
        _cleanup_close_ int fd = -EBADF;

        if (setns(ns_fd, CLONE_NEWNS) < 0)
                return nsm_error_set_errnof(error, -errno, "Failed to enter the namespace: %m");
        fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        int r = fd < 0 ? -errno : 0;
        if (setns(p->host_ns_fd, CLONE_NEWNS) < 0)
                _exit(EXIT_FAILURE);   /* stranded outside the host: the daemon starts another */
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Failed to open the namespace's mount table: %m");
        return ipc_send(p->sock, 0, 0, NULL, 0, &fd, 1);
}

static int builder_handle(BuilderProcess *p, const BuilderCall *c, int ns_fd, NsmError *error) {
        switch (c->kind) {
        case BUILDER_OPEN_REGISTRY:
                return handle_open_registry(p, c, error);
        case BUILDER_BUILD:
                return handle_build(p, c, error);
        case BUILDER_UNPIN:
                return handle_unpin(p, c, error);
        case BUILDER_LIST:
                return handle_list(p, error);
        case BUILDER_READ_MOUNTS:
                return handle_read_mounts(p, c, ns_fd, error);
        case BUILDER_OPEN_MOUNTINFO:
                return handle_open_mountinfo(p, ns_fd, error);
        default:
                return nsm_error_set_errnof(error, -EOPNOTSUPP, "Unknown request %d.", (int) c->kind);
        }
}

/* Answers one request (its bytes and the fds that came with it); the result of sending the
 * answer. A malformed request is answered as one, and the builder goes on. */
static int builder_dispatch(BuilderProcess *p, const void *data, size_t size, IpcMessage *m) {
        _cleanup_(builder_call_done) BuilderCall c = {};
        _cleanup_(nsm_error_done) NsmError error = {};
        int r;

        r = builder_call_decode(data, size, &c);
        if (r == -EBADMSG || (r >= 0 && builder_call_n_fds(&c) != m->n_fds))
                r = nsm_error_set_errnof(&error, -EBADMSG, "Malformed request.");
        if (r >= 0)
                r = builder_handle(p, &c, m->n_fds == 1 ? m->fds[0] : -EBADF, &error);
        if (r >= 0 || r == -EPIPE || r == -ECONNRESET)
                return r;
        if (!nsm_error_is_set(&error))
                (void) nsm_error_set_errnof(&error, r, NULL);
        return ipc_send_error(p->sock, &error);
}

_noreturn_ void builder_main(int sock) {
        _cleanup_free_ IpcMessage *m = NULL;
        BuilderProcess p = { .sock = sock, .registry_fd = -EBADF, .cpu = sched_getcpu(),
                             .host_mounts = MOUNT_TABLE_CACHE_INIT };

        if (child_setup(sock, NULL, 0) < 0)
                _exit(EXIT_FAILURE);
        m = malloc(sizeof(IpcMessage));
        p.host_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        p.host_uts_fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
        if (!m || p.host_ns_fd < 0 || p.host_uts_fd < 0)
                _exit(EXIT_FAILURE);
        for (;;) {
                _cleanup_free_ void *data = NULL;
                size_t size = 0;

                int r = ipc_recv_request(sock, IPC_FIELDS_MAX, m, &data, &size);
                if (r == -EBADMSG) {
                        /* Not a request at all: say so, and wait for the next. */
                        _cleanup_(nsm_error_done) NsmError e = {};
                        (void) nsm_error_set_errnof(&e, -EBADMSG, "Malformed request.");
                        r = ipc_send_error(sock, &e);
                        if (r == -EPIPE || r == -ECONNRESET)
                                _exit(EXIT_FAILURE);
                        continue;
                }
                if (r <= 0)
                        _exit(r == 0 ? EXIT_SUCCESS : EXIT_FAILURE);   /* the daemon is gone */
                r = builder_dispatch(&p, data, size, m);
                ipc_message_close_fds(m);
                /* A reply that cannot be sent means the daemon gave up on us. */
                if (r == -EPIPE || r == -ECONNRESET)
                        _exit(EXIT_FAILURE);
        }
}
