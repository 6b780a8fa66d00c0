/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "child.h"
#include "log.h"
#include "path-util.h"
#include "propagation.h"
#include "view-policy.h"
#include "view.h"
#include "strv.h"

/* <linux/nsfs.h> of Debian 12 predates these (Linux 6.8 and 6.18). */
#define NSM_NS_GET_MNTNS_ID _IOR(0xb7, 0x5, uint64_t)
#define NSM_NS_GET_ID _IOR(0xb7, 13, uint64_t)

static const char *const view_stage_table[_VIEW_STAGE_MAX] = {
        [VIEW_STAGE_NONE] = "none",
        [VIEW_STAGE_CLONE] = "cloning the host's tree",
        [VIEW_STAGE_PEERS] = "joining the shared subtrees' peer groups",
        [VIEW_STAGE_UNSHARE] = "creating the mount namespace",
        [VIEW_STAGE_ATTACH] = "attaching the view under SubtreeRoot",
        [VIEW_STAGE_PIVOT] = "pivoting into the view",
        [VIEW_STAGE_POLICY] = "applying the [View] policy",
        [VIEW_STAGE_PIN] = "pinning the namespace",
};

const char *view_stage_to_string(int stage) {
        if (stage < 0 || stage >= _VIEW_STAGE_MAX)
                return "unknown";
        return view_stage_table[stage];
}

static int set_cpu(int cpu) {
        cpu_set_t set;
        if (cpu < 0)
                return 0;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return sched_setaffinity(0, sizeof set, &set) < 0 ? -errno : 0;
}

/* The namespace id of an nsfs fd (Linux ≥ 6.8), 0 if the kernel cannot tell. */
static uint64_t mntns_get_id(int fd) {
        uint64_t id = 0;
        if (ioctl(fd, NSM_NS_GET_MNTNS_ID, &id) < 0)
                return 0;
        return id;
}

/* Linux 6.18 hands out namespace ids (all types share one counter) in per-CPU batches of 4096,
 * while the nsfs bind-mount loop check wants the pinned namespace newer (a larger id) than the
 * one the pin is made in. A namespace created on a CPU whose batch is older than the pinning
 * namespace's looks older, and pinning fails with EINVAL — every time, however often it is
 * recreated on that CPU (measured: 60 of 60). Ids on one CPU only grow, and a used-up batch is
 * replaced by one above every id handed out so far. So: create and drop UTS namespaces (the
 * cheapest kind, a few µs) on that CPU until its ids pass the pinning namespace's, or for one
 * whole batch when the kernel cannot tell ids; then create the namespace again there. */
#define NS_ID_BATCH 4096

typedef struct BurnArgs {
        int cpu;
        uint64_t floor_id;
} BurnArgs;

static int burn_child(int sock, void *userdata) {
        BurnArgs *b = userdata;
        int r = set_cpu(b->cpu);
        if (r < 0)
                return child_send(sock, r, 0, NULL, 0, NULL, 0);
        for (unsigned i = 0; i <= NS_ID_BATCH; i++) {
                if (unshare(CLONE_NEWUTS) < 0)
                        return child_send(sock, -errno, 0, NULL, 0, NULL, 0);
                if (b->floor_id == 0)
                        continue;
                _cleanup_close_ int fd = open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC);
                uint64_t id = 0;
                if (fd < 0 || ioctl(fd, NSM_NS_GET_ID, &id) < 0)
                        b->floor_id = 0;        /* cannot tell: burn the whole batch */
                else if (id > b->floor_id)
                        break;
        }
        return child_send(sock, 0, 0, NULL, 0, NULL, 0);
}

static int pin_retry(int *cpu, int pinning_ns_fd, int (*attempt)(int cpu, void *userdata, int *ret_stage),
                     void *userdata, int *ret_stage) {
        int c = *cpu >= 0 ? *cpu : sched_getcpu(), r = -EINVAL;

        for (int tries = 0; tries < 3; tries++) {
                r = attempt(c, userdata, ret_stage);
                if (r != -EINVAL || *ret_stage != VIEW_STAGE_PIN) {
                        if (r >= 0)
                                *cpu = c;
                        return r;
                }
                BurnArgs b = { .cpu = c, .floor_id = pinning_ns_fd >= 0 ? mntns_get_id(pinning_ns_fd) : 0 };
                log_debug("Pinning a namespace made on CPU %d failed with EINVAL (an older id batch); "
                          "moving that CPU's namespace ids past %" PRIu64 ".", c, b.floor_id);
                ChildReply reply;
                int k = child_run(burn_child, &b, NULL, NULL, &reply);
                if (k < 0 || reply.result < 0)
                        return r;
        }
        return r;
}

/* ---- the view, built in a child ---- */

typedef struct FdArray {
        int *fds;
        size_t n;
} FdArray;

static void fd_array_done(FdArray *a) {
        for (size_t i = 0; i < a->n; i++)
                safe_close(a->fds[i]);
        free(a->fds);
}

typedef struct ViewChild {
        const ViewSpec *spec;
        int cpu;
} ViewChild;

#define CHILD_FAIL(stage, r) return child_send(sock, (r), (stage), NULL, 0, NULL, 0), (r)

static int view_child(int sock, void *userdata) {
        ViewChild *vc = userdata;
        const ViewSpec *spec = vc->spec;
        size_t n_shared = strv_length(spec->shared_subtrees);
        /* Children share the daemon's fd table (child.c): everything opened here is closed here. */
        _cleanup_(fd_array_done) FdArray host_shared = { .fds = calloc(n_shared + 1, sizeof(int)) };
        int *host_shared_fd = host_shared.fds;
        _cleanup_close_ int tree_fd = -EBADF, host_root_fd = -EBADF, old_root_fd = -EBADF, ns_fd = -EBADF;
        _cleanup_free_ char *where = NULL, *pin = NULL;
        struct mount_attr attr = {};
        int r;

        r = set_cpu(vc->cpu);
        if (r < 0)
                CHILD_FAIL(VIEW_STAGE_CLONE, r);

        /* 1. Clone the host's tree while we are still in the host namespace: a clone made
         *    after setns/unshare would be of the wrong tree, and cloning prunes unbindable
         *    mounts (SubtreeRoot, the state directory) — unshare would not. */
        host_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (host_root_fd < 0)
                CHILD_FAIL(VIEW_STAGE_CLONE, -errno);
        if (!host_shared_fd)
                CHILD_FAIL(VIEW_STAGE_CLONE, -ENOMEM);
        for (size_t i = 0; i < n_shared; i++) {
                host_shared_fd[i] = open_path_fd(AT_FDCWD, spec->shared_subtrees[i]);
                if (host_shared_fd[i] < 0)
                        CHILD_FAIL(VIEW_STAGE_CLONE, host_shared_fd[i]);
                host_shared.n++;
        }
        tree_fd = open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree_fd < 0)
                CHILD_FAIL(VIEW_STAGE_CLONE, -errno);

        /* 2. Propagation of the copy: a clone of a shared mount is a peer of its source. */
        if (spec->propagation != VIEW_PROPAGATION_SHARED) {
                attr.propagation = spec->propagation == VIEW_PROPAGATION_SLAVE ? MS_SLAVE : MS_PRIVATE;
                if (mount_setattr(tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0)
                        CHILD_FAIL(VIEW_STAGE_PEERS, -errno);
        } else {
                /* pivot_root() refuses a shared new root: private now, back into the group later. */
                attr.propagation = MS_PRIVATE;
                if (mount_setattr(tree_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
                        CHILD_FAIL(VIEW_STAGE_PEERS, -errno);
        }

        /* 3. The namespace. Its copy of the host's mounts is thrown away below; making it
         *    private first means nothing we do to it can propagate back to the host. */
        if (unshare(CLONE_NEWNS) < 0)
                CHILD_FAIL(VIEW_STAGE_UNSHARE, -errno);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                CHILD_FAIL(VIEW_STAGE_UNSHARE, -errno);

        /* 4. Assemble at SubtreeRoot/NAME (this mkdir shows on the host: same filesystem). */
        if (asprintf(&where, "%s/%s", spec->subtree_root, spec->user->name) < 0)
                CHILD_FAIL(VIEW_STAGE_ATTACH, -ENOMEM);
        if (mkdir(where, 0755) < 0 && errno != EEXIST)
                CHILD_FAIL(VIEW_STAGE_ATTACH, -errno);
        if (move_mount(tree_fd, "", AT_FDCWD, where, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                CHILD_FAIL(VIEW_STAGE_ATTACH, -errno);

        /* …but the shared subtrees go back into the host's peer groups, two-way. (Only once
         * attached: the kernel does not set groups on a detached tree.) */
        if (spec->propagation != VIEW_PROPAGATION_SHARED)
                for (size_t i = 0; i < n_shared; i++) {
                        _cleanup_free_ char *sub = NULL;
                        _cleanup_close_ int sub_fd = -EBADF;
                        uint64_t top_id, sub_id;

                        if (asprintf(&sub, "%s%s", where, spec->shared_subtrees[i]) < 0)
                                CHILD_FAIL(VIEW_STAGE_PEERS, -ENOMEM);
                        sub_fd = open_path_fd(AT_FDCWD, sub);
                        if (sub_fd < 0)
                                CHILD_FAIL(VIEW_STAGE_PEERS, sub_fd);
                        /* A path that is no mount of its own in the copy was pruned or is
                         * covered: joining there would put the view's root into the group. */
                        if (fd_get_mount_id(AT_FDCWD, where, &top_id) < 0 || fd_get_mount_id(sub_fd, "", &sub_id) < 0 ||
                            path_is_mount_point(sub_fd, "") <= 0 || top_id == sub_id)
                                continue;
                        r = mount_join_peer_group(host_shared_fd[i], sub_fd);
                        if (r < 0)
                                CHILD_FAIL(VIEW_STAGE_PEERS, r);
                }

        /* 5. Pivot. The old root is all private (step 3), so detaching it propagates nowhere. */
        if (chdir(where) < 0)
                CHILD_FAIL(VIEW_STAGE_PIVOT, -errno);
        old_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (old_root_fd < 0)
                CHILD_FAIL(VIEW_STAGE_PIVOT, -errno);
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                CHILD_FAIL(VIEW_STAGE_PIVOT, -errno);
        {
                char p[64];
                snprintf(p, sizeof p, "/proc/self/fd/%d", old_root_fd);
                if (umount2(p, MNT_DETACH) < 0)
                        CHILD_FAIL(VIEW_STAGE_PIVOT, -errno);
        }
        old_root_fd = safe_close(old_root_fd);
        if (chdir("/") < 0)
                CHILD_FAIL(VIEW_STAGE_PIVOT, -errno);
        if (spec->propagation == VIEW_PROPAGATION_SHARED) {
                _cleanup_close_ int new_root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (new_root_fd < 0)
                        CHILD_FAIL(VIEW_STAGE_PIVOT, -errno);
                r = mount_join_peer_group(host_root_fd, new_root_fd);
                if (r < 0)
                        CHILD_FAIL(VIEW_STAGE_PIVOT, r);
        }

        /* 6. Per-user policy: PrivateTmp=, BindPaths=, … */
        if (spec->policy) {
                r = view_policy_apply(spec->policy, spec->user);
                if (r < 0) {
                        /* The policy names the entry that failed: pass that on to the caller. */
                        const char *why = log_last_error();
                        (void) child_send(sock, r, VIEW_STAGE_POLICY, why, strlen(why) + 1, NULL, 0);
                        return r;
                }
        }

        /* 7. Pin it in the registry, then hand it to the daemon. */
        ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (ns_fd < 0)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        if (setns(spec->registry_fd, CLONE_NEWNS) < 0)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        if (asprintf(&pin, "%s/%s", spec->pin_dir, spec->user->name) < 0)
                CHILD_FAIL(VIEW_STAGE_PIN, -ENOMEM);
        r = mntns_pin(ns_fd, pin);
        if (r < 0) {
                (void) unlink(pin);
                CHILD_FAIL(VIEW_STAGE_PIN, r);
        }
        return child_send(sock, 0, VIEW_STAGE_NONE, NULL, 0, &ns_fd, 1);
}

typedef struct ViewAttempt {
        const ViewSpec *spec;
        int ns_fd;
        char message[sizeof(((ChildReply *) NULL)->data)];
} ViewAttempt;

static int view_attempt(int cpu, void *userdata, int *ret_stage) {
        ViewAttempt *a = userdata;
        ViewChild vc = { .spec = a->spec, .cpu = cpu };
        ChildReply reply;
        int r;

        r = child_run(view_child, &vc, NULL, NULL, &reply);
        if (r < 0) {
                *ret_stage = VIEW_STAGE_NONE;
                return r;
        }
        *ret_stage = reply.stage;
        if (reply.result < 0) {
                if (reply.data_size > 0 && reply.data[reply.data_size - 1] == 0)
                        memcpy(a->message, reply.data, reply.data_size);
                child_reply_close_fds(&reply);
                return reply.result;
        }
        if (reply.n_fds != 1) {
                child_reply_close_fds(&reply);
                return -EPROTO;
        }
        a->ns_fd = reply.fds[0];
        return 0;
}

int view_create(const ViewSpec *spec, int *cpu, int *ret_ns_fd, int *ret_stage, char **ret_message) {
        ViewAttempt a = { .spec = spec, .ns_fd = -EBADF };
        int stage = VIEW_STAGE_NONE, r;

        r = pin_retry(cpu, spec->registry_fd, view_attempt, &a, &stage);
        if (ret_stage)
                *ret_stage = stage;
        if (r < 0) {
                if (ret_message && a.message[0])
                        *ret_message = strdup(a.message);
                return r;
        }
        *ret_ns_fd = a.ns_fd;
        return 0;
}

/* ---- the registry ---- */

static int fd_is_mntns(int fd) {
        struct statfs sfs;
        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        if (sfs.f_type != NSFS_MAGIC)
                return 0;
        int t = ioctl(fd, NS_GET_NSTYPE);
        return t == CLONE_NEWNS;
}

typedef struct RegistryChild {
        const char *state_dir;
        int cpu;
} RegistryChild;

static int registry_child(int sock, void *userdata) {
        RegistryChild *rc = userdata;
        _cleanup_free_ char *pins = NULL;
        _cleanup_close_ int ns_fd = -EBADF;
        int r;

        r = set_cpu(rc->cpu);
        if (r < 0)
                CHILD_FAIL(VIEW_STAGE_UNSHARE, r);
        if (unshare(CLONE_NEWNS) < 0)
                CHILD_FAIL(VIEW_STAGE_UNSHARE, -errno);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                CHILD_FAIL(VIEW_STAGE_UNSHARE, -errno);
        /* Pins need a mount that propagates nowhere: a tmpfs of the registry's own. */
        if (asprintf(&pins, "%s/pins", rc->state_dir) < 0)
                CHILD_FAIL(VIEW_STAGE_ATTACH, -ENOMEM);
        if (mkdir(pins, 0700) < 0 && errno != EEXIST)
                CHILD_FAIL(VIEW_STAGE_ATTACH, -errno);
        if (mount("nsmanager-pins", pins, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
                CHILD_FAIL(VIEW_STAGE_ATTACH, -errno);
        ns_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        if (ns_fd < 0)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        return child_send(sock, 0, VIEW_STAGE_NONE, NULL, 0, &ns_fd, 1);
}

typedef struct RegistryAttempt {
        const char *state_dir;
        const char *pin;
        int fd;
} RegistryAttempt;

static int registry_attempt(int cpu, void *userdata, int *ret_stage) {
        RegistryAttempt *a = userdata;
        RegistryChild rc = { .state_dir = a->state_dir, .cpu = cpu };
        ChildReply reply;
        int r;

        *ret_stage = VIEW_STAGE_NONE;
        r = child_run(registry_child, &rc, NULL, NULL, &reply);
        if (r < 0)
                return r;
        if (reply.result < 0 || reply.n_fds != 1) {
                *ret_stage = reply.stage;
                child_reply_close_fds(&reply);
                return reply.result < 0 ? reply.result : -EPROTO;
        }
        /* The pin of the registry is the one mount we keep in the host namespace. */
        r = mntns_pin(reply.fds[0], a->pin);
        if (r < 0) {
                *ret_stage = VIEW_STAGE_PIN;
                child_reply_close_fds(&reply);
                return r;
        }
        a->fd = reply.fds[0];
        return 0;
}

int registry_open(const char *state_dir, int *cpu, int *ret_fd) {
        _cleanup_free_ char *pin = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r, stage;

        if (asprintf(&pin, "%s/registry", state_dir) < 0)
                return -ENOMEM;
        fd = open(pin, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                r = fd_is_mntns(fd);
                if (r < 0)
                        return r;
                if (r > 0) {
                        *ret_fd = TAKE_FD(fd);
                        return 0;
                }
                fd = safe_close(fd);
        } else if (errno != ENOENT)
                return -errno;

        RegistryAttempt a = { .state_dir = state_dir, .pin = pin, .fd = -EBADF };
        _cleanup_close_ int host_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        r = pin_retry(cpu, host_fd, registry_attempt, &a, &stage);
        if (r < 0)
                return r;
        *ret_fd = a.fd;
        return 1;
}

typedef struct PinOp {
        int registry_fd;
        const char *pin_dir;
        const char *name;
} PinOp;

static int unpin_child(int sock, void *userdata) {
        PinOp *op = userdata;
        _cleanup_free_ char *pin = NULL;

        if (setns(op->registry_fd, CLONE_NEWNS) < 0)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        if (asprintf(&pin, "%s/%s", op->pin_dir, op->name) < 0)
                CHILD_FAIL(VIEW_STAGE_PIN, -ENOMEM);
        if (umount2(pin, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        if (unlink(pin) < 0 && errno != ENOENT)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        return child_send(sock, 0, VIEW_STAGE_NONE, NULL, 0, NULL, 0);
}

int registry_unpin(int registry_fd, const char *pin_dir, const char *name) {
        PinOp op = { .registry_fd = registry_fd, .pin_dir = pin_dir, .name = name };
        ChildReply reply;
        int r = child_run(unpin_child, &op, NULL, NULL, &reply);
        return r < 0 ? r : reply.result;
}

static int list_child(int sock, void *userdata) {
        PinOp *op = userdata;
        DIR *d;
        struct dirent *de;

        if (setns(op->registry_fd, CLONE_NEWNS) < 0)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        d = opendir(op->pin_dir);
        if (!d)
                CHILD_FAIL(VIEW_STAGE_PIN, -errno);
        while ((de = readdir(d))) {
                _cleanup_close_ int fd = -EBADF;
                if (!filename_is_valid(de->d_name))
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                /* An empty file is a pin that was never completed (crash): report it as -ENOENT. */
                int ok = fd >= 0 ? fd_is_mntns(fd) : -errno;
                if (ok <= 0) {
                        (void) child_send(sock, ok == 0 ? -ENOENT : ok, VIEW_STAGE_PIN, de->d_name, strlen(de->d_name) + 1, NULL, 0);
                        continue;
                }
                (void) child_send(sock, 0, VIEW_STAGE_NONE, de->d_name, strlen(de->d_name) + 1, &fd, 1);
        }
        closedir(d);
        return 0;
}

typedef struct ListCallback {
        int (*cb)(const char *name, int fd, void *userdata);
        void *userdata;
} ListCallback;

static int list_on_reply(const ChildReply *reply, void *userdata) {
        ListCallback *lc = userdata;
        if (reply->result < 0 && reply->data_size == 0)
                return reply->result;   /* the child failed before listing anything */
        if (reply->data_size == 0 || reply->data[reply->data_size - 1] != 0)
                return 0;
        int fd = -EBADF;
        if (reply->result >= 0 && reply->n_fds == 1) {
                fd = fcntl(reply->fds[0], F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return -errno;
        }
        return lc->cb(reply->data, fd, lc->userdata);
}

int registry_list(int registry_fd, const char *pin_dir, int (*cb)(const char *name, int fd, void *userdata), void *userdata) {
        PinOp op = { .registry_fd = registry_fd, .pin_dir = pin_dir };
        ListCallback lc = { .cb = cb, .userdata = userdata };
        return child_run(list_child, &op, list_on_reply, &lc, NULL);
}

/* ---- reading a namespace's mount table ---- */

static int mountinfo_child(int sock, void *userdata) {
        int ns_fd = *(int *) userdata;
        _cleanup_fclose_ FILE *f = NULL;
        char buf[4096];
        size_t n;

        if (ns_fd >= 0 && mntns_enter(ns_fd) < 0)
                CHILD_FAIL(VIEW_STAGE_NONE, -errno);
        f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                CHILD_FAIL(VIEW_STAGE_NONE, -errno);
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
                if (child_send(sock, 1, VIEW_STAGE_NONE, buf, n, NULL, 0) < 0)
                        return -EIO;
        return child_send(sock, 0, VIEW_STAGE_NONE, NULL, 0, NULL, 0);
}

static int mountinfo_on_reply(const ChildReply *reply, void *userdata) {
        FILE *f = userdata;
        if (reply->result == 1 && fwrite(reply->data, 1, reply->data_size, f) != reply->data_size)
                return -ENOMEM;
        return 0;
}

static int mntns_read_mountinfo(int ns_fd, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        ChildReply last;
        FILE *f;
        int r;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        r = child_run(mountinfo_child, &ns_fd, mountinfo_on_reply, f, &last);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        if (last.result < 0)
                return last.result;
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

int mntns_read_mounts(int ns_fd, MountEntry **ret, size_t *ret_n) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t size;
        int r;

        if (ns_fd < 0)
                return mount_table_read_self(ret, ret_n);
        r = mntns_read_mountinfo(ns_fd, &buf, &size);
        if (r < 0)
                return r;
        f = fmemopen(buf, size, "r");
        if (!f)
                return -errno;
        return mount_table_read(f, ret, ret_n);
}

int mntns_count_mounts(int ns_fd, size_t *ret_n) {
        _cleanup_free_ char *buf = NULL;
        size_t size, n = 0;
        int r;

        r = mntns_read_mountinfo(ns_fd, &buf, &size);
        if (r < 0)
                return r;
        for (size_t i = 0; i < size; i++)
                if (buf[i] == '\n')
                        n++;
        *ret_n = n;
        return 0;
}

/* ---- host start-up ---- */

static int make_unbindable(const char *path, mode_t mode) {
        int r;

        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return -errno;
        r = mount_ensure_mount_point(path);
        if (r < 0)
                return r;
        r = mount_set_propagation(path, PROPAGATION_PRIVATE, false);
        if (r < 0)
                return r;
        return mount_set_propagation(path, PROPAGATION_UNBINDABLE, false);
}

int host_prepare(const char *subtree_root, const char *state_dir, char *const *shared_subtrees) {
        unsigned long fl = 0;
        int r;

        /* The views follow the host through peer groups, which needs a shared '/'. systemd makes
         * it so at boot; elsewhere we do, before marking SubtreeRoot unbindable. */
        r = mount_get_propagation("/", &fl);
        if (r < 0)
                return log_error_errno(r, "Failed to read the propagation of /: %m");
        if (!(fl & MS_SHARED)) {
                log_info("/ is not shared; making the host's mounts shared (as systemd does at boot).");
                r = mount_set_propagation("/", PROPAGATION_SHARED, true);
                if (r < 0)
                        return log_error_errno(r, "Failed to make / shared: %m");
        }

        r = make_unbindable(subtree_root, 0755);
        if (r < 0)
                return log_error_errno(r, "Failed to make SubtreeRoot '%s' an unbindable mount: %m", subtree_root);
        r = make_unbindable(state_dir, 0700);
        if (r < 0)
                return log_error_errno(r, "Failed to make StateDirectory '%s' an unbindable mount: %m", state_dir);

        for (char *const *p = shared_subtrees; p && *p; p++) {
                r = host_prepare_shared(*p);
                if (r < 0)
                        return log_error_errno(r, "Failed to make '%s' a shared mount: %m", *p);
        }
        return 0;
}

int host_prepare_shared(const char *path) {
        _cleanup_free_ char *message = NULL;
        /* The same as ShareSubtree("", path): bound onto itself if needed, shared in a peer
         * group of its own (a bind under a shared parent would sit in the parent's group). */
        int r = host_share_subtree(path, &message);
        if (r < 0 && message)
                log_error("%s", message);
        return r;
}
