/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* /proc/PID/stat as proc_stat_start_time() reads it to tell a session's leader from a process
 * that reuses its pid. The command name in it is the process's own choice (prctl(PR_SET_NAME):
 * any 15 bytes but NUL), so besides any text as a whole, the first 15 bytes of the input are
 * used as a command name inside a real line: the start time read must be the line's. */
#include "fuzz.h"
#include "process-util.h"

#define COMM_MAX 15

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *comm = fuzz_string(data, MIN(size, (size_t) COMM_MAX)), *line = NULL;
        uint64_t start;
        int r;

        r = proc_stat_start_time((const char *) data, size, &start);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);

        if (!comm)
                return 0;
        if (asprintf(&line, "4242 (%s) S 1 4242 4242 0 -1 4194560 1234 0 0 0 3 1 0 0 20 0 1 0 987654321 "
                     "9027584 1093 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n", comm) < 0)
                return 0;
        FUZZ_CHECK(proc_stat_start_time(line, strlen(line), &start) == 0 && start == 987654321);
        return 0;
}
