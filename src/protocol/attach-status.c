/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "attach-status.h"
#include "ipc-fields.h"
#include "ipc.h"

enum {
        TAG_LINE = 1,            /* string: the status line */
};

static bool line_ok(const char *line) {
        return line && *line && strlen(line) <= ATTACH_STATUS_LINE_MAX;
}

int attach_status_request_encode(const char *line, void **ret, size_t *ret_size) {
        FieldWriter w;

        if (!line_ok(line))
                return -EINVAL;
        field_writer_init(&w, ATTACH_STATUS_REQUEST);
        field_put_string(&w, TAG_LINE, line);
        return field_writer_finish(&w, ret, ret_size);
}

static int decode_line(uint8_t tag, const void *v, size_t n, void *userdata) {
        char **line = userdata;

        if (n > ATTACH_STATUS_LINE_MAX)
                return -EBADMSG;
        return field_get_string(v, n, line);
}

int attach_status_request_decode(const void *data, size_t size, char **ret_line) {
        static const FieldSchema schema = { .allowed = FIELD_BIT(TAG_LINE), .required = FIELD_BIT(TAG_LINE) };
        _cleanup_free_ char *line = NULL;
        int r;

        r = field_message_decode(data, size, ATTACH_STATUS_REQUEST, &schema, decode_line, &line);
        if (r < 0)
                return r;
        if (!line_ok(line))
                return -EBADMSG;
        *ret_line = TAKE_PTR(line);
        return 0;
}
