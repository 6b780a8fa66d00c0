/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A FUSE server that never answers, standing in for a hung network file system in the tests
 * (tests/test_hung_fs.py):
 *
 *   fuse-hang never-read MOUNTPOINT UID     mounts, then never reads /dev/fuse: a process that
 *                                           touches the mount waits, killably (the request was
 *                                           never read)
 *   fuse-hang read-no-reply MOUNTPOINT UID  answers FUSE_INIT, then reads every request and
 *                                           never replies: a process waiting for one cannot be
 *                                           killed until this server dies (the connection is
 *                                           aborted)
 *
 * Mounted as the caller (root, with CAP_SYS_ADMIN in the current mount namespace) with
 * allow_other and user_id=UID, as `sshfs -o allow_other` of that user would be. Prints
 * "ready" once mounted; runs until killed. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#define BUFSIZE (1024 * 1024)

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

int main(int argc, char *argv[]) {
        char opts[256];
        char *buf;
        int fd;

        if (argc != 4 || (strcmp(argv[1], "never-read") != 0 && strcmp(argv[1], "read-no-reply") != 0)) {
                fprintf(stderr, "usage: fuse-hang never-read|read-no-reply MOUNTPOINT UID\n");
                return 2;
        }
        fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                perror("/dev/fuse");
                return 1;
        }
        snprintf(opts, sizeof opts, "fd=%d,rootmode=40755,user_id=%s,group_id=%s,allow_other", fd, argv[3], argv[3]);
        if (mount("fuse-hang", argv[2], "fuse.hang", MS_NOSUID | MS_NODEV, opts) < 0) {
                perror("mount");
                return 1;
        }
        buf = malloc(BUFSIZE);
        if (!buf)
                return 1;
        if (strcmp(argv[1], "read-no-reply") == 0 && answer_init(fd, buf) < 0) {
                fprintf(stderr, "FUSE_INIT failed\n");
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        if (strcmp(argv[1], "never-read") == 0)
                for (;;)
                        pause();
        /* Read everything, answer nothing. */
        for (;;)
                if (read(fd, buf, BUFSIZE) < 0 && errno != EINTR && errno != EAGAIN)
                        return errno == ENODEV ? 0 : 1;
}
