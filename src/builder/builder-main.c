/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#include "builder-message.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "child-main.h"
#include "child-setup.h"
#include "path-util.h"
#include "user-util.h"
#include "mount-notify.h"
#include "mount-util.h"
#include "registry.h"
#include "strv.h"
#include "view-build.h"

/* What the builder keeps between requests: its own, never the daemon's. */
typedef struct BuilderProcess {
        int host_ns_fd;
        int host_uts_fd;
        int registry_fd;
        int cpu;
        char *pins_dir;
        MountTableCache host_mounts;     /* the host's, read again only after it changed */
} BuilderProcess;

/* Each method checks what it was sent (the daemon is trusted no more than its message: a
 * name becomes a path component), answers, or fails with the error table's name and the
 * sentence the daemon passes on. */
static int malformed(sd_bus_error *error) {
        return bus_error_set_errnof(error, -EBADMSG, "Malformed request.");
}

static int failed(sd_bus_error *error, NsmError *e) {
        _cleanup_(nsm_error_done) NsmError done = TAKE_STRUCT(*e);
        return bus_error_set_nsm(error, &done);
}

static int method_open_registry(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        _cleanup_free_ char *registry_pin = NULL, *pins_dir = NULL;
        BuilderProcess *p = userdata;
        int r;

        r = bus_message_read_bytes(m, &registry_pin);
        if (r >= 0)
                r = bus_message_read_bytes(m, &pins_dir);
        if (r < 0 || !path_is_absolute_normalized(registry_pin) || !path_is_absolute_normalized(pins_dir))
                return malformed(error);
        free(p->pins_dir);
        p->pins_dir = TAKE_PTR(pins_dir);
        p->registry_fd = safe_close(p->registry_fd);
        r = registry_open(registry_pin, p->pins_dir, p->host_ns_fd, &p->cpu, &p->registry_fd);
        if (r < 0) {
                (void) nsm_error_set_errnof(&e, r, "Failed to set up the namespace registry '%s': %m", registry_pin);
                return failed(error, &e);
        }
        return sd_bus_reply_method_return(m, "b", r > 0);
}

static int handle_build(BuilderProcess *p, const BuilderCall *c, sd_bus_message *m, NsmError *error) {
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
        return sd_bus_reply_method_return(m, "uh", (uint32_t) MIN(n_mounts, (size_t) UINT32_MAX), ns_fd);
}

static int method_build(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        _cleanup_strv_free_ char **shared = NULL;
        _cleanup_free_ char *subtree_root = NULL;
        BuilderCall c = {};
        uint32_t propagation;
        int r;

        r = sd_bus_message_read(m, "s", &c.name);
        if (r >= 0)
                r = bus_message_read_bytes(m, &subtree_root);
        if (r >= 0)
                r = sd_bus_message_read(m, "u", &propagation);
        if (r >= 0)
                r = bus_message_read_bytes_strv(m, &shared);
        if (r < 0 || !valid_user_name(c.name) || !path_is_absolute_normalized(subtree_root) ||
            propagation >= _VIEW_PROPAGATION_MAX)
                return malformed(error);
        for (char **i = shared; i && *i; i++)
                if (!path_is_absolute_normalized(*i))
                        return malformed(error);
        c.subtree_root = subtree_root;
        c.propagation = (ViewPropagation) propagation;
        c.shared_subtrees = shared;
        r = handle_build(userdata, &c, m, &e);
        return r < 0 ? failed(error, &e) : r;
}

static int method_unpin(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(nsm_error_done) NsmError e = {};
        BuilderProcess *p = userdata;
        _cleanup_free_ char *name = NULL;
        int r;

        /* Any name List gives ("ay": a pin that is no user's can be removed too). */
        r = bus_message_read_bytes(m, &name);
        if (r < 0 || !filename_is_valid(name))
                return malformed(error);
        r = registry_unpin(p->registry_fd, p->host_ns_fd, p->pins_dir, name);
        if (r < 0) {
                (void) nsm_error_set_errnof(&e, r, "Failed to unpin the namespace of '%s': %m", name);
                return failed(error, &e);
        }
        return sd_bus_reply_method_return(m, NULL);
}

static int append_pin(const char *name, int fd, void *userdata) {
        sd_bus_message *reply = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'r', "ayah");
        if (r >= 0)
                r = bus_message_append_bytes(reply, name);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "h");
        if (r >= 0 && fd >= 0)
                r = sd_bus_message_append(reply, "h", fd);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        safe_close(fd);
        return r;
}

static int method_list(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(nsm_error_done) NsmError e = {};
        BuilderProcess *p = userdata;
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ayah)");
        if (r < 0)
                return r;
        r = registry_list(p->registry_fd, p->host_ns_fd, p->pins_dir, append_pin, reply);
        if (r < 0) {
                (void) nsm_error_set_errnof(&e, r, "Failed to list the pinned namespaces: %m");
                return failed(error, &e);
        }
        r = sd_bus_message_close_container(reply);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
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

/* Each mount's ids, where the kernel has unique ids; none where it does not. statmount(2) of
 * the basic fields asks no file system anything either. */
static int append_mount_ids(sd_bus_message *reply) {
        uint64_t ids[256], after = 0;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(tt)");
        for (; r >= 0;) {
                ssize_t k = mount_list_ids(after, ids, ELEMENTSOF(ids));

                if (k == -EOPNOTSUPP)
                        break;
                if (k < 0)
                        return (int) k;
                for (ssize_t i = 0; r >= 0 && i < k; i++) {
                        MountStat st = {};

                        if (mount_stat(ids[i], false, &st) < 0)
                                continue;   /* gone meanwhile */
                        r = sd_bus_message_append(reply, "(tt)", st.old_id, st.id);
                        mount_stat_done(&st);
                }
                if ((size_t) k < ELEMENTSOF(ids))
                        break;
                after = ids[k - 1];
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int method_read_mounts(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(nsm_error_done) NsmError e = {};
        _cleanup_free_ char *buf = NULL;
        BuilderProcess *p = userdata;
        int r, ns_fd = -EBADF, with_ids;
        size_t size = 0;

        r = sd_bus_message_enter_container(m, 'a', "h");
        if (r >= 0 && sd_bus_message_read(m, "h", &ns_fd) > 0 && sd_bus_message_read(m, "h", &ns_fd) > 0)
                r = -EBADMSG;
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_read(m, "b", &with_ids);
        if (r < 0)
                return malformed(error);

        /* Reading mountinfo asks no file system anything (d_path and show_options only): safe
         * for the builder even where a view holds a hung FUSE or NFS mount. */
        if (ns_fd >= 0 && setns(ns_fd, CLONE_NEWNS) < 0) {
                (void) nsm_error_set_errnof(&e, -errno, "Failed to enter the namespace: %m");
                return failed(error, &e);
        }
        r = read_mountinfo(&buf, &size);
        if (r >= 0)
                r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_append_array(reply, 'y', buf ?: "", size);
        if (r >= 0)
                r = with_ids ? append_mount_ids(reply) : sd_bus_message_append(reply, "a(tt)", 0);
        if (ns_fd >= 0 && setns(p->host_ns_fd, CLONE_NEWNS) < 0)
                _exit(EXIT_FAILURE);   /* stranded outside the host: the daemon starts another */
        if (r < 0) {
                (void) nsm_error_set_errnof(&e, r, "Failed to read the mount table: %m");
                return failed(error, &e);
        }
        return sd_bus_send(NULL, reply, NULL);
}

static const sd_bus_vtable builder_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("OpenRegistry", "ayay", "b", method_open_registry, 0),
        SD_BUS_METHOD("Build", "sayuaay", "uh", method_build, 0),
        SD_BUS_METHOD("Unpin", "ay", "", method_unpin, 0),
        SD_BUS_METHOD("List", "", "a(ayah)", method_list, 0),
        SD_BUS_METHOD("ReadMounts", "ahb", "aya(tt)", method_read_mounts, 0),
        SD_BUS_VTABLE_END,
};

static const ChildInterface builder_interface = { BUILDER_INTERFACE, builder_vtable };

_noreturn_ void builder_main(int sock) {
        BuilderProcess p = { .registry_fd = -EBADF, .cpu = sched_getcpu(), .host_mounts = MOUNT_TABLE_CACHE_INIT };

        if (child_setup(sock, NULL, 0) < 0)
                _exit(EXIT_FAILURE);
        p.host_ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        p.host_uts_fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
        if (p.host_ns_fd < 0 || p.host_uts_fd < 0)
                _exit(EXIT_FAILURE);
        /* Until the daemon hangs up (its exit, or it gave up on us). */
        _exit(child_serve(sock, &builder_interface, false, &p) < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}
