/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ipc-fields.h"
#include "strv.h"

static void put_raw(FieldWriter *w, const void *p, size_t n) {
        if (w->error < 0 || n == 0)
                return;
        if (n > IPC_FIELDS_MAX || w->size + n > IPC_FIELDS_MAX) {
                w->error = -E2BIG;
                return;
        }
        if (w->size + n > w->allocated) {
                size_t a = MAX(MAX(w->allocated * 2, w->size + n), (size_t) 256);
                uint8_t *b = realloc(w->buf, a);
                if (!b) {
                        w->error = -ENOMEM;
                        return;
                }
                w->buf = b;
                w->allocated = a;
        }
        memcpy(w->buf + w->size, p, n);
        w->size += n;
}

void field_writer_init(FieldWriter *w, uint8_t kind) {
        *w = (FieldWriter) {};
        put_raw(w, (const uint8_t[]) { IPC_FIELDS_VERSION, kind }, IPC_FIELDS_HEADER);
}

void field_writer_done(FieldWriter *w) {
        free(w->buf);
        *w = (FieldWriter) {};
}

void field_put(FieldWriter *w, uint8_t tag, const void *value, size_t size) {
        uint8_t h[IPC_FIELD_HEADER] = { tag };

        if (size > IPC_FIELDS_MAX) {
                w->error = w->error < 0 ? w->error : -E2BIG;
                return;
        }
        for (unsigned i = 0; i < 4; i++)
                h[1 + i] = (uint8_t) (size >> (8 * i));
        put_raw(w, h, sizeof h);
        put_raw(w, value, size);
}

void field_put_u64(FieldWriter *w, uint8_t tag, uint64_t v) {
        uint8_t b[8];

        for (unsigned i = 0; i < 8; i++)
                b[i] = (uint8_t) (v >> (8 * i));
        field_put(w, tag, b, sizeof b);
}

void field_put_bool(FieldWriter *w, uint8_t tag, bool v) {
        field_put(w, tag, &(uint8_t) { v ? 1 : 0 }, 1);
}

void field_put_string(FieldWriter *w, uint8_t tag, const char *s) {
        if (s)
                field_put(w, tag, s, strlen(s));
}

void field_put_strv(FieldWriter *w, uint8_t tag, char *const *l) {
        for (char *const *i = l; i && *i; i++)
                field_put_string(w, tag, *i);
}

int field_writer_finish(FieldWriter *w, void **ret, size_t *ret_size) {
        if (w->error < 0) {
                int r = w->error;
                field_writer_done(w);
                return r;
        }
        *ret = TAKE_PTR(w->buf);
        *ret_size = w->size;
        *w = (FieldWriter) {};
        return 0;
}

int field_reader_init(FieldReader *r, const void *data, size_t size, uint8_t *ret_kind) {
        const uint8_t *p = data;

        if (!data || size < IPC_FIELDS_HEADER || size > IPC_FIELDS_MAX || p[0] != IPC_FIELDS_VERSION)
                return -EBADMSG;
        *ret_kind = p[1];
        *r = (FieldReader) { .p = p + IPC_FIELDS_HEADER, .left = size - IPC_FIELDS_HEADER };
        return 0;
}

int field_message_open(FieldReader *r, const void *data, size_t size, uint8_t kind_min, uint8_t kind_max,
                       uint8_t *ret_kind) {
        uint8_t kind;

        if (field_reader_init(r, data, size, &kind) < 0 || kind < kind_min || kind > kind_max)
                return -EBADMSG;
        *ret_kind = kind;
        return 0;
}

int field_message_read(FieldReader *r, const FieldSchema *schema, uint64_t *seen, FieldFunc f, void *userdata) {
        const void *value;
        uint8_t tag;
        size_t size;
        int k;

        while ((k = field_next(r, &tag, &value, &size)) > 0) {
                if (tag >= 64 || !(schema->allowed & FIELD_BIT(tag)) ||
                    ((*seen & FIELD_BIT(tag)) && !(schema->repeated & FIELD_BIT(tag))))
                        return -EBADMSG;
                *seen |= FIELD_BIT(tag);
                k = f(tag, value, size, userdata);
                if (k < 0)
                        return k;
        }
        if (k < 0)
                return k;
        return (*seen & schema->required) == schema->required ? 0 : -EBADMSG;
}

int field_message_decode(const void *data, size_t size, uint8_t kind, const FieldSchema *schema, FieldFunc f,
                         void *userdata) {
        FieldReader r;
        uint64_t seen = 0;
        uint8_t got;
        int k;

        k = field_message_open(&r, data, size, kind, kind, &got);
        if (k < 0)
                return k;
        return field_message_read(&r, schema, &seen, f, userdata);
}

int field_next(FieldReader *r, uint8_t *ret_tag, const void **ret_value, size_t *ret_size) {
        size_t n = 0;

        if (r->left == 0)
                return 0;
        if (r->left < IPC_FIELD_HEADER)
                return -EBADMSG;
        for (unsigned i = 0; i < 4; i++)
                n |= (size_t) r->p[1 + i] << (8 * i);
        if (n > r->left - IPC_FIELD_HEADER)
                return -EBADMSG;
        *ret_tag = r->p[0];
        *ret_value = r->p + IPC_FIELD_HEADER;
        *ret_size = n;
        r->p += IPC_FIELD_HEADER + n;
        r->left -= IPC_FIELD_HEADER + n;
        return 1;
}

int field_get_u64(const void *value, size_t size, uint64_t *ret) {
        const uint8_t *p = value;
        uint64_t v = 0;

        if (size != 8)
                return -EBADMSG;
        for (unsigned i = 0; i < 8; i++)
                v |= (uint64_t) p[i] << (8 * i);
        *ret = v;
        return 0;
}

int field_get_u32(const void *value, size_t size, uint32_t *ret) {
        uint64_t v;

        if (field_get_u64(value, size, &v) < 0 || v > UINT32_MAX)
                return -EBADMSG;
        *ret = (uint32_t) v;
        return 0;
}

int field_get_bool(const void *value, size_t size, bool *ret) {
        if (size != 1 || *(const uint8_t *) value > 1)
                return -EBADMSG;
        *ret = *(const uint8_t *) value;
        return 0;
}

int field_get_string(const void *value, size_t size, char **ret) {
        char *s;

        if (memchr(value, 0, size))
                return -EBADMSG;
        s = malloc(size + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, value, size);
        s[size] = 0;
        *ret = s;
        return 0;
}

int field_strv_push(const void *value, size_t size, char ***l) {
        char *s = NULL;
        int r;

        r = field_get_string(value, size, &s);
        if (r < 0)
                return r;
        return strv_consume(l, s);
}
