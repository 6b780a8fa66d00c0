/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/* The same, a few /proc entries at a time (ListProcesses runs it from the event loop between
 * other callers' calls): _new() opens /proc and holds a copy of 'mntns_fd' until _free(), so
 * that the namespace's inode is not another's while the walk lasts, each _step() reads at most 'max_entries' entries
 * (1 when /proc is read to its end, 0 when there is more, < 0 on failure), _result() hands
 * over what was found, sorted and bounded as above. */
typedef struct ViewProcessScan ViewProcessScan;
int view_process_scan_new(int mntns_fd, ViewProcessScan **ret);
int view_process_scan_step(ViewProcessScan *s, unsigned max_entries);
void view_process_scan_result(ViewProcessScan *s, ViewProcess **ret, size_t *ret_n);
ViewProcessScan *view_process_scan_free(ViewProcessScan *s);

/* How many processes are in each of the views of nsfs device 'dev' and inodes ids[0..n_ids)
 * (MNTNS_ID of the state files), into counts[]: one walk of /proc for all of them. A view that
 * ended may have left its inode number to another namespace: where unique_ids[i] (its
 * NS_GET_MNTNS_ID, MNTNS_UNIQUE_ID of the state file) is not 0, a process with that inode counts
 * only if its namespace has that id too. */
int view_processes_count(dev_t dev, const uint64_t *ids, const uint64_t *unique_ids, size_t n_ids, size_t *counts);
