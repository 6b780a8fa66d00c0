/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "macros.h"

/* The view builder process (docs/processes.md): called right after the fork with its end of
 * the socket, it closes every other fd, then serves the requests of builder-message.h one at
 * a time until the daemon closes the socket. It reads nothing of the daemon's memory: what it
 * works on comes in each request. */
_noreturn_ void builder_main(int sock);
