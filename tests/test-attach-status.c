/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/children/attach-status.c: the request of an attached command's status writer, encoded
 * and decoded, what the decoder refuses, and a real child (child.c, child-main.c) writing the
 * line its request names into the fd that came with it. TAP output. */
#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "attach-status.h"
#include "child-answer.h"
#include "child.h"
#include "ipc-fields.h"
#include "tap.h"

static void test_round_trip(void) {
        _cleanup_free_ void *msg = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        check(attach_status_request_encode("EXITED 0\n", &msg, &size) == 0 &&
              attach_status_request_decode(msg, size, &line) == 0 && streq(line, "EXITED 0\n"), "a status line round-trips");
}

static int decode(const char *const *lines, uint8_t kind) {
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;
        FieldWriter w;

        field_writer_init(&w, kind);
        for (const char *const *l = lines; *l; l++)
                field_put_string(&w, 1, *l);
        if (field_writer_finish(&w, &msg, &size) < 0)
                return -ENOMEM;
        return attach_status_request_decode(msg, size, &line);
}

static void test_refusals(void) {
        char long_line[ATTACH_STATUS_LINE_MAX + 2];
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;
        char *line = NULL;

        memset(long_line, 'x', sizeof long_line - 1);
        long_line[sizeof long_line - 1] = 0;
        check(decode((const char *const[]) { "KILLED 9\n", NULL }, ATTACH_STATUS_REQUEST) == 0,
              "the decoder reads what the refusals below change");
        check(decode((const char *const[]) { NULL }, ATTACH_STATUS_REQUEST) == -EBADMSG, "a request without a line is refused");
        check(decode((const char *const[]) { "", NULL }, ATTACH_STATUS_REQUEST) == -EBADMSG, "an empty line is refused");
        check(decode((const char *const[]) { "EXITED 0\n", "EXITED 1\n", NULL }, ATTACH_STATUS_REQUEST) == -EBADMSG,
              "two lines are refused");
        check(decode((const char *const[]) { long_line, NULL }, ATTACH_STATUS_REQUEST) == -EBADMSG,
              "a line past ATTACH_STATUS_LINE_MAX is refused");
        check(decode((const char *const[]) { "EXITED 0\n", NULL }, ATTACH_STATUS_REQUEST + 1) == -EBADMSG,
              "another kind is refused");
        check(attach_status_request_decode("\1\1\1\4\0\0\0a\0bc", 11, &line) == -EBADMSG && !line,
              "a line holding a NUL is refused");
        check(attach_status_request_encode(long_line, &msg, &size) == -EINVAL && !msg,
              "the daemon does not send what the child would refuse");
}

/* The line goes through a real child into a pipe; the daemon's copy of the write end is
 * closed as soon as the child is started, as attach-process.c does. */
static void test_child(void) {
        _cleanup_free_ void *msg = NULL;
        Answer written = {}, no_fd = {};
        sd_event *e = NULL;
        ChildSet *s = NULL;
        char buf[64] = {};
        size_t size = 0;
        int p[2], r;

        if (!child_test_setup(&e, &s))
                return;
        if (pipe2(p, O_CLOEXEC) < 0) {
                check(false, "a pipe");
                child_set_free(s);
                sd_event_unref(e);
                return;
        }
        r = attach_status_request_encode("EXITED 3\n", &msg, &size);
        if (r >= 0)
                r = run_child(e, s, attach_status_child_run, msg, size, p[1], &written);
        safe_close(p[1]);
        ssize_t n = r >= 0 ? read(p[0], buf, sizeof buf - 1) : -1;
        check(r >= 0 && written.done && !nsm_error_is_set(&written.error) && n == 9 && streq(buf, "EXITED 3\n"),
              "the child writes the line of its request into the fd beside it (%.*s)", n > 0 ? (int) strcspn(buf, "\n") : 7,
              n > 0 ? buf : "nothing");
        r = run_child(e, s, attach_status_child_run, msg, size, -EBADF, &no_fd);
        check(r >= 0 && no_fd.done && no_fd.error.code == NSM_ERROR_SYSTEM && no_fd.error.errno_value == EBADMSG,
              "a request without its fd is answered as malformed");
        safe_close(p[0]);
        nsm_error_done(&written.error);
        nsm_error_done(&no_fd.error);
        child_set_free(s);
        sd_event_unref(e);
}

int main(void) {
        test_round_trip();
        test_refusals();
        test_child();
        return tap_finish();
}
