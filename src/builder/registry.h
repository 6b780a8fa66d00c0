/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* The registry: one small mount namespace, pinned at StateDirectory/registry in the host,
 * that holds a pin per user namespace under StateDirectory/pins (a tmpfs of the registry's
 * own, which propagates nowhere). The host's mount table does not grow with the number of
 * users: it has the registry's one pin, whatever that number.
 *
 * These functions run in the view builder (builder.c), a single-threaded process that may
 * setns() freely and always returns to the host namespace (host_ns_fd) before it returns. */

/* Opens the registry pinned at 'registry_pin', or creates and pins it. Returns 1 if it was
 * created, 0 if it existed. */
int registry_open(const char *registry_pin, const char *pins_dir, int host_ns_fd, int *cpu, int *ret_fd);

/* Pins the mount namespace ns_fd as pins_dir/name inside the registry. -EINVAL can mean that
 * the namespace looks older than the registry (see namespace_ids_pass() below). */
int registry_pin_view(int registry_fd, int host_ns_fd, const char *pins_dir, const char *name, int ns_fd);
int registry_unpin(int registry_fd, int host_ns_fd, const char *pins_dir, const char *name);

/* Calls cb(name, fd) for every pin; fd is an nsfs fd owned by the callee, or -ENOENT for a
 * pin file that holds no namespace (a crash between creating the file and pinning). */
int registry_list(int registry_fd, int host_ns_fd, const char *pins_dir,
                  int (*cb)(const char *name, int fd, void *userdata), void *userdata);

/* Linux 6.18 hands out namespace ids (one counter for all types) in per-CPU batches, and the
 * kernel lets a namespace pin only namespaces newer (larger id) than itself. On a CPU whose
 * batch is older, every namespace created there looks older than the registry, however often
 * it is made again. This moves the ids of the CPU we run on past 'floor_id' by creating and
 * dropping UTS namespaces (a few µs each), or through one whole batch when the kernel cannot
 * tell ids (floor_id 0). host_uts_fd: our UTS namespace, to return to. */
int namespace_ids_pass(uint64_t floor_id, int host_uts_fd);
int set_cpu(int cpu);
