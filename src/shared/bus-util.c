/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus-util.h"
#include "macros.h"
#include "strv.h"
#include "text-escape.h"

int bus_message_read_dict(sd_bus_message *m, int (*read_entry)(sd_bus_message *m, const char *key, void *userdata),
                          void *userdata) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(m, "s", &key);
                if (r >= 0)
                        r = read_entry(m, key, userdata);
                if (r == 0)
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int bus_message_append_text(sd_bus_message *m, const char *s) {
        _cleanup_free_ char *e = text_escape(s);

        if (!e)
                return -ENOMEM;
        return sd_bus_message_append_basic(m, 's', e);
}

int bus_message_append_mount_ids(sd_bus_message *m, const MountId *ids, size_t n) {
        int r = sd_bus_message_open_container(m, 'a', "(tt)");

        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(m, "(tt)", ids[i].unique, ids[i].old);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

int bus_message_read_mount_ids(sd_bus_message *m, size_t max, MountId **ret, size_t *ret_n) {
        _cleanup_free_ MountId *ids = NULL;
        MountId id;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(tt)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(tt)", &id.unique, &id.old)) > 0) {
                MountId *a;

                if (n >= max)
                        return -EBADMSG;
                a = realloc(ids, (n + 1) * sizeof(MountId));
                if (!a)
                        return -ENOMEM;
                ids = a;
                ids[n++] = id;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

int bus_message_append_bytes(sd_bus_message *m, const char *s) {
        return sd_bus_message_append_array(m, 'y', s ?: "", s ? strlen(s) : 0);
}

int bus_message_read_bytes(sd_bus_message *m, char **ret) {
        const void *p;
        size_t n;
        int r;

        r = sd_bus_message_read_array(m, 'y', &p, &n);
        if (r < 0)
                return r;
        if (n > 0 && memchr(p, 0, n))
                return -EBADMSG;
        *ret = strndup(n > 0 ? p : "", n);
        return *ret ? 0 : -ENOMEM;
}

int bus_message_append_bytes_strv(sd_bus_message *m, char **l) {
        int r = sd_bus_message_open_container(m, 'a', "ay");

        for (char **i = l; r >= 0 && i && *i; i++)
                r = bus_message_append_bytes(m, *i);
        return r < 0 ? r : sd_bus_message_close_container(m);
}

int bus_message_read_bytes_strv(sd_bus_message *m, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "ay");
        while (r >= 0 && sd_bus_message_at_end(m, false) == 0) {
                char *s;

                r = bus_message_read_bytes(m, &s);
                if (r >= 0)
                        r = strv_consume(&l, s);
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}
