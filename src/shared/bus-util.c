/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "bus-util.h"
#include "macros.h"
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
