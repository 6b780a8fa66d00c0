/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The project's one escaping rule (docs/interface.md, "Text from the kernel or a user").
 *
 * A mount point, a file system's source or type, a command name may hold any bytes a user
 * chose (the kernel allows any byte but '/' and NUL in a name, any bytes in a FUSE fsname=,
 * and a process sets its own comm). D-Bus strings must be valid UTF-8, journal messages are
 * read on terminals, where ESC and the C1 controls are commands. So every string the daemon
 * puts on the bus or in the journal that came from the kernel or a user, and everything nsctl
 * prints, is escaped by this rule first:
 *
 *   - each byte that is not part of valid UTF-8 (overlong forms, surrogates and code points
 *     above U+10FFFF are not valid),
 *   - each byte of a control character: C0 (0x00–0x1f), DEL (0x7f), C1 (U+0080–U+009F, the
 *     two bytes 0xc2 0x80–0x9f),
 *   - and '\' itself
 *
 * becomes "\xNN" (two lower-case hex digits), systemd's style. Everything else, other scripts
 * and symbols included, is kept. The result is valid UTF-8 without control characters, and
 * text_unescape() gives the original bytes back: a string that needs no escaping (most do not)
 * is its own escape, except for '\'. */

/* A new string, NULL on out of memory. NULL in gives "". */
char *text_escape(const char *s);
/* The same for 'n' bytes that may hold NUL (an "ay" from the kernel): NUL becomes "\x00". */
char *text_escape_bytes(const void *p, size_t n);

/* The stricter form for the daemon's line-based state files, where a path must be one word:
 * also blanks (space) and every byte outside printable ASCII become "\xNN". Same reverse. */
char *text_escape_word(const char *s);

/* The reverse of both: "\xNN" (either case) becomes the byte. -EINVAL for a '\' not followed by
 * 'x' and two hex digits, or for "\x00" (a C string cannot hold it); -ENOMEM. */
int text_unescape(const char *s, char **ret);

/* Whether 's' is text the rule leaves alone but for '\': valid UTF-8 without control
 * characters. */
bool text_is_clean(const char *s);

/* For text another process escaped already (the daemon's replies, signals and errors): shown
 * as it came when it is clean (escaping it again would only double its backslashes), escaped
 * by the rule if not (a peer that did not escape). NULL on out of memory; NULL in gives "". */
char *text_show(const char *s);
