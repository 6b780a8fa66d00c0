/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/nsmanagerd/child.c: a request reaches a real child whole, however large the ipc-fields
 * limit lets it be, and one past the limit is refused before any child starts. TAP output. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child-answer.h"
#include "ipc-fields.h"
#include "ipc.h"
#include "macros.h"
#include "tap.h"

/* What the request must be: 'expected' bytes, byte i being (i * 7) & 0xff. The child is a fork:
 * it sees the value set before it started. */
static size_t expected;

static int check_request(int sock, const void *request, size_t size, int *fds, size_t n_fds, NsmError *error) {
        const unsigned char *p = request;

        if (size != expected)
                return nsm_error_setf(error, NSM_ERROR_FAILED, "%zu bytes, not %zu", size, expected);
        for (size_t i = 0; i < size; i++)
                if (p[i] != (unsigned char) (i * 7))
                        return nsm_error_setf(error, NSM_ERROR_FAILED, "byte %zu differs", i);
        return ipc_send(sock, 0, 0, NULL, 0, NULL, 0);      /* the final answer: all there */
}

static int run_request_of(sd_event *e, ChildSet *s, size_t size, Answer *a) {
        _cleanup_free_ unsigned char *request = malloc(size);

        if (!request)
                return -ENOMEM;
        for (size_t i = 0; i < size; i++)
                request[i] = (unsigned char) (i * 7);
        expected = size;
        return run_child(e, s, check_request, request, size, -EBADF, a);
}

int main(void) {
        sd_event *e;
        ChildSet *s;

        if (!child_test_setup(&e, &s))
                return tap_finish();

        /* Past the default socket buffer (32 KiB and more: the daemon raises the buffer), up to
         * the limit: a caller with many groups, a view with many recorded binds. */
        const size_t sizes[] = { 100, 40 * 1024, IPC_FIELDS_MAX };
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                Answer a = {};
                int r = run_request_of(e, s, sizes[i], &a);
                if (sizes[i] > 32768 && geteuid() != 0 && r == -E2BIG) {
                        /* Without root the buffer cannot pass net.core.wmem_max. */
                        tap_skip("a request past the socket's default buffer: needs root (SO_SNDBUFFORCE)");
                        continue;
                }
                check(r >= 0 && a.done && !nsm_error_is_set(&a.error), "a request of %zu bytes reaches the child whole (%s)",
                      sizes[i], a.error.message ?: (r < 0 ? strerror(-r) : "ok"));
                nsm_error_done(&a.error);
        }

        Answer none = {};
        check(run_request_of(e, s, IPC_FIELDS_MAX + 1, &none) == -E2BIG && !none.done,
              "a request past IPC_FIELDS_MAX is refused (E2BIG), and no child answers");

        child_set_free(s);
        sd_event_unref(e);
        return tap_finish();
}
