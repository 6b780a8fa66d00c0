/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/process-util.c: the start time of a process, from /proc/PID/stat. TAP output. */
#include "macros.h"
#include "process-util.h"
#include "tap.h"

/* The start time of /proc/PID/stat, whatever the command name holds. */
static void test_proc_stat(void) {
        static const char stat[] = "4242 (a) b\n(c) S 1 4242 4242 0 -1 4194560 1234 0 0 0 3 1 0 0 20 0 1 0 987654321 9027584\n";
        uint64_t start = 0;

        check(proc_stat_start_time(stat, sizeof stat - 1, &start) == 0 && start == 987654321,
              "proc_stat_start_time: blanks, ')' and a newline in the command name");
        check(proc_stat_start_time("1 (bash) S 1", 12, &start) == -EBADMSG, "proc_stat_start_time: a short line is -EBADMSG");
        check(process_start_time(getpid()) != 0, "process_start_time of this process");
}

int main(void) {
        test_proc_stat();
        return tap_finish();
}
