/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The status writer's decoder of its request (src/children/attach-status.c): what it accepts
 * is a line it may write into a caller's status fd, no longer than an answer can be, and it
 * encodes to a request that decodes the same. */
#include "attach-status.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *line = NULL, *again = NULL;
        _cleanup_free_ void *msg = NULL;
        size_t n = 0;
        int r;

        r = attach_status_request_decode(data, size, &line);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r < 0) {
                FUZZ_CHECK(!line);
                return 0;
        }
        FUZZ_CHECK(*line && strlen(line) <= ATTACH_STATUS_LINE_MAX);
        r = attach_status_request_encode(line, &msg, &n);
        if (r == -ENOMEM)
                return 0;
        FUZZ_CHECK(r == 0);
        r = attach_status_request_decode(msg, n, &again);
        FUZZ_CHECK(r == -ENOMEM || (r == 0 && streq(line, again)));
        return 0;
}
