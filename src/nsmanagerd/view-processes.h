/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* ListProcesses: the processes in one view, for nsctl status (docs/interface.md). */

/* Never more in one reply: the lowest pids first. */
#define VIEW_PROCESSES_MAX 4096U

typedef struct ViewProcess {
        pid_t pid;
        uid_t uid;               /* the real uid, from /proc/PID/status */
        char *comm;              /* /proc/PID/comm, escaped (text-escape.h): the process chose it */
        char *session;           /* the logind session of its cgroup, "" for none */
} ViewProcess;

void view_processes_free(ViewProcess *p, size_t n);

/* The processes whose mount namespace is the nsfs file of 'mntns_fd' (compared by device and
 * inode, as stat() shows /proc/PID/ns/mnt), sorted by pid, at most VIEW_PROCESSES_MAX. Reads
 * only procfs files (ns/mnt, status, comm, cgroup): no user's file system is asked anything.
 * Processes that exit meanwhile are skipped. */
int view_processes_list(int mntns_fd, ViewProcess **ret, size_t *ret_n);
/* The same for the nsfs file of device 'dev' and inode 'ino' (MNTNS_ID of a state file). */
int view_processes_list_by_id(dev_t dev, ino_t ino, ViewProcess **ret, size_t *ret_n);
