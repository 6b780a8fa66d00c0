/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure parsers of src/shared/mount-notify.c (fanotify mount events, statmount records). TAP
 * output. */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount-notify.h"
#include "tap.h"

/* An event as the kernel writes it: metadata, then the mount info record. */
static size_t put_event(uint8_t *p, uint64_t mask, uint64_t id) {
        uint32_t len = 24 + 16;
        uint8_t vers = 3, type = 7;
        uint16_t mdlen = 24, infolen = 16;
        int32_t fd = -1, pid = 1;

        memset(p, 0, len);
        memcpy(p, &len, 4);
        memcpy(p + 4, &vers, 1);
        memcpy(p + 6, &mdlen, 2);
        memcpy(p + 8, &mask, 8);
        memcpy(p + 16, &fd, 4);
        memcpy(p + 20, &pid, 4);
        memcpy(p + 24, &type, 1);
        memcpy(p + 26, &infolen, 2);
        memcpy(p + 32, &id, 8);
        return len;
}

typedef struct Seen {
        MountEvent e[8];
        size_t n;
} Seen;

static void record(const MountEvent *e, void *userdata) {
        Seen *s = userdata;
        if (s->n < 8)
                s->e[s->n++] = *e;
}

static void test_parse_events(void) {
        uint8_t buf[256];
        size_t n = 0;
        Seen s = {};

        n += put_event(buf + n, NSM_FAN_MNT_ATTACH, 0x80001234);
        n += put_event(buf + n, NSM_FAN_MNT_DETACH, 0x80001235);
        check(mount_notify_parse(buf, n, record, &s) == 0 && s.n == 2 && s.e[0].kind == MOUNT_EVENT_ATTACH &&
              s.e[0].mnt_id == 0x80001234 && s.e[1].kind == MOUNT_EVENT_DETACH && s.e[1].mnt_id == 0x80001235,
              "an attach and a detach, in order, with their ids");
        s = (Seen) {};
        check(mount_notify_parse(buf, n - 1, record, &s) == -EBADMSG && s.n == 1,
              "a truncated second event: the first is reported, then -EBADMSG");
        buf[4] = 2;
        s = (Seen) {};
        check(mount_notify_parse(buf, n, record, &s) == -EBADMSG && s.n == 0, "another metadata version is refused");
        buf[4] = 3;
        uint16_t shortlen = 8;
        memcpy(buf + 26, &shortlen, 2);
        s = (Seen) {};
        check(mount_notify_parse(buf, n, record, &s) == -EBADMSG, "a mount record shorter than its id is refused");
}

static void test_statmount_buffer(void) {
        uint8_t buf[1024] = {};
        uint32_t size = 512 + 10, major_ = 7, minor_ = 3, point = 1, old = 42;
        uint64_t mask = 0x1 | 0x2 | 0x10, id = 0x80000010, parent = 0x80000001;
        MountStat st = {};

        memcpy(buf, &size, 4);
        memcpy(buf + 8, &mask, 8);
        memcpy(buf + 16, &major_, 4);
        memcpy(buf + 20, &minor_, 4);
        memcpy(buf + 40, &id, 8);
        memcpy(buf + 48, &parent, 8);
        memcpy(buf + 56, &old, 4);
        memcpy(buf + 108, &point, 4);
        memcpy(buf + 512 + 1, "/mnt/usb", 9);
        check(mount_stat_from_buffer(buf, sizeof buf, true, &st) == 0 && st.id == id && st.parent_id == parent &&
              st.old_id == 42 && st.dev_major == 7 && st.dev_minor == 3 && st.path && strcmp(st.path, "/mnt/usb") == 0,
              "a record: ids, device, mount point");
        mount_stat_done(&st);
        point = 10;
        memcpy(buf + 108, &point, 4);
        check(mount_stat_from_buffer(buf, sizeof buf, true, &st) == -EBADMSG,
              "a mount point offset past what the kernel says it wrote is refused");
        size = 2048;
        memcpy(buf, &size, 4);
        check(mount_stat_from_buffer(buf, sizeof buf, false, &st) == -EBADMSG, "a size beyond the buffer is refused");
        check(mount_stat_from_buffer(buf, 100, false, &st) == -EBADMSG, "a short buffer is refused");
}

/* Why a machine polls, as the daemon logs it: the real fanotify_init(), by root with and without
 * CAP_SYS_ADMIN (a container's root may lack it in the initial user namespace). */
static void test_probe_reason(void) {
        int r, status;
        pid_t pid;

        if (geteuid() != 0) {
                tap_skip("mount_notify_probe(): needs root");
                return;
        }
        r = mount_notify_probe();
        check(r == 0 || mount_notify_unsupported_reason(r), "the probe succeeds, or says why not (%d)", r);
        check(mount_notify_unsupported_reason(-ENOMEM) == NULL, "a failure is no reason");

        pid = fork();
        if (pid == 0) {
                struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                struct __user_cap_data_struct d[2] = {};
                const char *why;

                if (syscall(SYS_capget, &h, d) < 0)
                        _exit(2);
                d[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
                if (syscall(SYS_capset, &h, d) < 0)
                        _exit(2);
                r = mount_notify_probe();
                why = mount_notify_unsupported_reason(r);
                _exit(r == -EPERM && why && strstr(why, "CAP_SYS_ADMIN") ? 0 : r == -EINVAL ? 3 : 1);
        }
        check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status), "the child ran");
        if (WEXITSTATUS(status) == 3)
                tap_skip("this kernel has no fanotify mount events at all");
        else
                check(WEXITSTATUS(status) == 0, "without CAP_SYS_ADMIN: EPERM, and the reason names it (%d)",
                      WEXITSTATUS(status));
}

int main(void) {
        test_parse_events();
        test_statmount_buffer();
        test_probe_reason();
        return tap_finish();
}
