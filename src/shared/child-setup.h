/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* The one-time setup every helper process of the daemon needs right after fork() (the view
 * builder, each killable child; docs/processes.md): the daemon's blocked signals unblocked,
 * SIGKILL when the daemon dies, logging that holds no fd of the daemon's, and every fd closed
 * but 'sock' and 'keep'. */
int child_setup(int sock, const int *keep, size_t n_keep);
