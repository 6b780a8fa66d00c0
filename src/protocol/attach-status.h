/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "child-main.h"

/* The status writer of an attached command (attach-process.c, docs/attach.md): a killable child
 * that writes the command's status line ("EXITED 0\n") into the caller's status fd. Writing to
 * a pipe or a socket takes its lock, which a user can hold as long as she likes: the daemon
 * never writes it itself.
 *
 * Its interface (docs/processes.md), served in src/children/attach-status-writer.c:
 *   WriteStatus(s line, h fd): the line, 1 to ATTACH_STATUS_LINE_MAX bytes, written into fd. */

#define ATTACH_STATUS_INTERFACE "org.example.NSManager.StatusWriter"
#define ATTACH_STATUS_LINE_MAX 64U

extern const ChildInterface attach_status_interface;
