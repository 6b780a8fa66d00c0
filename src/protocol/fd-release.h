/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "child-main.h"

/* The last close of the pipes an attached command was given (attach-process.c, docs/attach.md)
 * happens in a killable child: that close takes a lock a user can hold. The child inherits
 * those fds on purpose (ChildSpec.keep_fds: an fd sent in a message would be released by
 * whoever closes the socket last, the daemon were the fork to fail). Its interface, served in
 * src/children/fd-release.c:
 *
 *   Release(): closes every fd it holds but its socket. */

#define FD_RELEASE_INTERFACE "org.example.NSManager.FdRelease"

extern const ChildInterface fd_release_interface;
