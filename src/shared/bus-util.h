/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "mount-util.h"

/* Reads a dictionary a{sv} (the reply of Properties.GetAll, of GetConnectionCredentials):
 * read_entry(m, key, userdata) is called for each entry with the message at its variant; it
 * reads the variant and returns 1, or returns 0 to have it skipped, or a negative errno,
 * which ends the reading. */
int bus_message_read_dict(sd_bus_message *m, int (*read_entry)(sd_bus_message *m, const char *key, void *userdata),
                          void *userdata);

/* Appends 's' (text from the kernel or a user: any bytes) as an "s", escaped by the project's
 * one rule (text-escape.h), so that one odd name never fails a reply or a signal. */
int bus_message_append_text(sd_bus_message *m, const char *s);

/* Mount ids (MountId) as "a(tt)", the unique id then the old one: between the daemon and its
 * processes. Reading, more than 'max' is -EBADMSG; *ret is malloc'ed (NULL: none). */
int bus_message_append_mount_ids(sd_bus_message *m, const MountId *ids, size_t n);
int bus_message_read_mount_ids(sd_bus_message *m, size_t max, MountId **ret, size_t *ret_n);

/* A string of bytes the kernel or a user chose (a path, a name NSS gives) as "ay", between the
 * daemon and its processes: D-Bus strings must be UTF-8, these need not be. Reading, one that
 * holds a NUL is -EBADMSG; *ret is malloc'ed. */
int bus_message_append_bytes(sd_bus_message *m, const char *s);
int bus_message_read_bytes(sd_bus_message *m, char **ret);
/* The same for a list, as "aay". */
int bus_message_append_bytes_strv(sd_bus_message *m, char **l);
int bus_message_read_bytes_strv(sd_bus_message *m, char ***ret);
