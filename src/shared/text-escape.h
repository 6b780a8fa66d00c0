/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Text that came from somebody else, made safe to show a person on a terminal.
 *
 * A mount point, a file system's source or a daemon's message may hold any bytes a user chose
 * (fusermount3 lets anyone pick a mount point name and -o fsname=). Printed raw, ESC and the
 * C1 controls are terminal commands: they set the window title, clear the screen, move the
 * cursor over earlier lines. So every control character — C0 (0x00–0x1f), DEL (0x7f), C1
 * (U+0080–U+009F) — and every byte that is not part of valid UTF-8 is shown as a C escape
 * (\n, \t, \x1b, \u009b, \xff), and '\' itself as "\\" so that the escapes stay unambiguous.
 * Everything else, other scripts and symbols included, is kept as it is. */

#include <stdbool.h>

/* True if 's' is valid UTF-8 without control characters: text_escape_control() would change
 * nothing but a '\\'. */
bool text_is_clean(const char *s);

/* A new string, NULL on out of memory. NULL in gives "". */
char *text_escape_control(const char *s);
