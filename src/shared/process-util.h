/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of a process (field 22 of /proc/PID/stat, clock ticks since boot): with the
 * pid it names one process, where the pid alone may by now name another. 0 if unknown. */
uint64_t process_start_time(pid_t pid);

/* The start time from the text of a /proc/PID/stat (size bytes, no NUL needed). The command
 * name in it is the process's own choice: any 16 bytes, blanks, ')' and newlines included.
 * -EBADMSG if the text is not such a line. Pure: fuzzed (src/fuzz/fuzz-proc-stat.c). */
int proc_stat_start_time(const char *stat, size_t size, uint64_t *ret);

/* A process's real uid (/proc/PID/status): -ESRCH if it is gone. */
int process_real_uid(pid_t pid, uid_t *ret);
