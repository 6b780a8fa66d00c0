/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tests' FUSE servers. Two never answer, standing in for a hung network file system
 * (tests/test_hung_fs.py); one answers with lies:
 *
 *   fuse-hang never-read MOUNTPOINT UID     mounts, then never reads /dev/fuse: a process that
 *                                           touches the mount waits, killably (the request was
 *                                           never read)
 *   fuse-hang read-no-reply MOUNTPOINT UID  answers FUSE_INIT, then reads every request and
 *                                           never replies: a process waiting for one cannot be
 *                                           killed until this server dies (the connection is
 *                                           aborted)
 *   fuse-hang symlink MOUNTPOINT UID TARGET answers, and lies as any FUSE server may: its root
 *                                           directory and the one entry in it, 'link', a
 *                                           symlink to TARGET, are owned by root, it says
 *                                           (tests/test_view_policy.py: a user's FUSE mount
 *                                           steering a path the daemon resolves)
 *   fuse-hang file-read-no-reply MOUNTPOINT UID
 *                                           answers everything but reading: its root directory
 *                                           holds 'file', 4096 bytes, which opens but whose
 *                                           reads never get an answer; a process faulting on
 *                                           a mapping of it waits, holding what it holds
 *   fuse-hang flush-hang MOUNTPOINT UID PID [private]
 *                                           answers everything, 'file' (4096 zeros) included,
 *                                           except FLUSH from PID and its descendants (the
 *                                           request's header says who closes): it is read and
 *                                           never answered, so a process of the daemon's that
 *                                           closes an fd of 'file' waits beyond SIGKILL, while
 *                                           everyone else's closes are answered
 *
 * Mounted as the caller (root, with CAP_SYS_ADMIN in the current mount namespace) with
 * allow_other and user_id=UID, as `sshfs -o allow_other` of that user would be; with
 * 'private', without allow_other, as any user's fusermount3 mount is (nobody else, root
 * included, may look inside). Prints "ready" once mounted; runs until killed. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define BUFSIZE (1024 * 1024)

/* Whether 'pid' (a thread's id, as FUSE reports it) is 'ancestor' or below it. */
static bool descends_from(pid_t pid, pid_t ancestor) {
        while (pid > 1) {
                char path[64], line[256];
                FILE *f;
                pid_t ppid = 0;

                if (pid == ancestor)
                        return true;
                snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
                f = fopen(path, "re");
                if (!f)
                        return false;
                while (fgets(line, sizeof line, f))
                        if (sscanf(line, "PPid: %d", &ppid) == 1)
                                break;
                fclose(f);
                pid = ppid;
        }
        return false;
}

static int answer_init(int fd, char *buf) {
        ssize_t n = read(fd, buf, BUFSIZE);
        const struct fuse_in_header *in = (const struct fuse_in_header *) buf;
        const struct fuse_init_in *init = (const struct fuse_init_in *) (buf + sizeof *in);
        struct {
                struct fuse_out_header h;
                struct fuse_init_out o;
        } out = {};

        if (n < (ssize_t) (sizeof *in + sizeof *init) || in->opcode != FUSE_INIT)
                return -EPROTO;
        out.h.len = sizeof out;
        out.h.unique = in->unique;
        out.o.major = FUSE_KERNEL_VERSION;
        out.o.minor = init->minor < FUSE_KERNEL_MINOR_VERSION ? init->minor : FUSE_KERNEL_MINOR_VERSION;
        out.o.max_readahead = init->max_readahead;
        out.o.max_write = 4096;
        out.o.max_background = 16;
        out.o.congestion_threshold = 12;
        if (write(fd, &out, sizeof out) != (ssize_t) sizeof out)
                return -errno;
        return 0;
}

#define LINK_NODEID 2

/* target NULL: the entry is a regular file of 4096 bytes, readable by all. */
static void fill_attr(struct fuse_attr *a, uint64_t nodeid, const char *target) {
        *a = (struct fuse_attr) { .ino = nodeid, .nlink = 1, .blksize = 4096, .uid = 0, .gid = 0 };
        if (nodeid == FUSE_ROOT_ID) {
                a->mode = S_IFDIR | 0755;
                a->nlink = 2;
        } else if (!target) {
                a->mode = S_IFREG | 0644;
                a->size = 4096;
                a->blocks = 8;
        } else {
                a->mode = S_IFLNK | 0777;
                a->size = strlen(target);
        }
}

static int reply(int fd, uint64_t unique, int error, const void *data, size_t size) {
        struct fuse_out_header h = { .len = sizeof h + size, .error = error, .unique = unique };
        struct iovec iov[2] = { { &h, sizeof h }, { (void *) data, size } };
        return writev(fd, iov, data ? 2 : 1) < 0 ? -errno : 0;
}

/* The symlink mode: a root directory holding 'link', all of it root's, it says. With target
 * NULL, the file mode: 'file' instead, a regular file whose reads are never answered; with
 * flush_pid too, reads are answered and FLUSH from flush_pid's processes is not. */
static int serve(int fd, char *buf, const char *target, pid_t flush_pid) {
        const char *name = target ? "link" : "file";

        for (;;) {
                ssize_t n = read(fd, buf, BUFSIZE);
                const struct fuse_in_header *in = (const struct fuse_in_header *) buf;
                const char *arg = buf + sizeof *in;

                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN || errno == ENOENT)
                                continue;
                        return errno == ENODEV ? 0 : 1;
                }
                if (n < (ssize_t) sizeof *in)
                        return 1;
                switch (in->opcode) {
                case FUSE_GETATTR: {
                        struct fuse_attr_out out = { .attr_valid = 1 };
                        fill_attr(&out.attr, in->nodeid, target);
                        (void) reply(fd, in->unique, 0, &out, sizeof out);
                        break;
                }
                case FUSE_LOOKUP: {
                        struct fuse_entry_out out = { .nodeid = LINK_NODEID, .generation = 1, .entry_valid = 1,
                                                      .attr_valid = 1 };
                        if (in->nodeid != FUSE_ROOT_ID || strcmp(arg, name) != 0) {
                                (void) reply(fd, in->unique, -ENOENT, NULL, 0);
                                break;
                        }
                        fill_attr(&out.attr, LINK_NODEID, target);
                        (void) reply(fd, in->unique, 0, &out, sizeof out);
                        break;
                }
                case FUSE_READLINK:
                        (void) reply(fd, in->unique, 0, target, strlen(target));
                        break;
                case FUSE_OPENDIR:
                case FUSE_OPEN: {
                        struct fuse_open_out out = {};
                        (void) reply(fd, in->unique, 0, &out, sizeof out);
                        break;
                }
                case FUSE_READ: {
                        static const char zeros[4096];
                        const struct fuse_read_in *r = (const struct fuse_read_in *) arg;
                        size_t size = r->offset >= sizeof zeros ? 0 : sizeof zeros - r->offset;

                        if (flush_pid <= 0)
                                break;   /* read, never answered */
                        (void) reply(fd, in->unique, 0, zeros, size < r->size ? size : r->size);
                        break;
                }
                case FUSE_FLUSH:
                        if (flush_pid > 0 && descends_from((pid_t) in->pid, flush_pid)) {
                                fprintf(stderr, "fuse-hang: not answering FLUSH from %u\n", in->pid);
                                break;   /* read, never answered */
                        }
                        (void) reply(fd, in->unique, 0, NULL, 0);
                        break;
                case FUSE_READDIR:
                case FUSE_RELEASEDIR:
                case FUSE_RELEASE:
                case FUSE_ACCESS:
                case FUSE_DESTROY:
                        (void) reply(fd, in->unique, 0, in->opcode == FUSE_READDIR ? "" : NULL, 0);
                        break;
                case FUSE_STATFS: {
                        struct fuse_statfs_out out = { .st = { .bsize = 4096, .namelen = 255 } };
                        (void) reply(fd, in->unique, 0, &out, sizeof out);
                        break;
                }
                case FUSE_FORGET:
                case FUSE_BATCH_FORGET:
                case FUSE_INTERRUPT:
                        break;   /* no answer expected */
                default:
                        (void) reply(fd, in->unique, -ENOSYS, NULL, 0);
                }
        }
}

int main(int argc, char *argv[]) {
        char opts[256];
        char *buf;
        int fd;

        bool symlink_mode = argc == 5 && strcmp(argv[1], "symlink") == 0;
        bool file_mode = argc == 4 && strcmp(argv[1], "file-read-no-reply") == 0;
        bool flush_mode = (argc == 5 || argc == 6) && strcmp(argv[1], "flush-hang") == 0;
        bool private_mode = (argc == 5 && !flush_mode && strcmp(argv[4], "private") == 0) ||
                            (argc == 6 && flush_mode && strcmp(argv[5], "private") == 0);

        if (flush_mode)
                file_mode = true;
        else if (!symlink_mode && !file_mode && ((argc != 4 && !private_mode) ||
                              (strcmp(argv[1], "never-read") != 0 && strcmp(argv[1], "read-no-reply") != 0))) {
                fprintf(stderr, "usage: fuse-hang never-read|read-no-reply MOUNTPOINT UID [private]\n"
                                "       fuse-hang file-read-no-reply MOUNTPOINT UID\n"
                                "       fuse-hang flush-hang MOUNTPOINT UID PID [private]\n"
                                "       fuse-hang symlink MOUNTPOINT UID TARGET\n");
                return 2;
        }
        fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                perror("/dev/fuse");
                return 1;
        }
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40755,user_id=%s,group_id=%s%s", fd, argv[3], argv[3],
                 private_mode ? "" : ",allow_other");
        if (mount("fuse-hang", argv[2], "fuse.hang", MS_NOSUID | MS_NODEV, opts) < 0) {
                perror("mount");
                return 1;
        }
        buf = malloc(BUFSIZE);
        if (!buf)
                return 1;
        if (strcmp(argv[1], "never-read") != 0 && answer_init(fd, buf) < 0) {
                fprintf(stderr, "FUSE_INIT failed\n");
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        if (symlink_mode || file_mode)
                return serve(fd, buf, symlink_mode ? argv[4] : NULL, flush_mode ? (pid_t) atoi(argv[4]) : 0);
        if (strcmp(argv[1], "never-read") == 0)
                for (;;)
                        pause();
        /* Read everything, answer nothing. */
        for (;;)
                if (read(fd, buf, BUFSIZE) < 0 && errno != EINTR && errno != EAGAIN)
                        return errno == ENODEV ? 0 : 1;
}
