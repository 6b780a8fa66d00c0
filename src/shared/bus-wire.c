/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "bus-wire.h"
#include "macros.h"

/* The specification's byte order marks. */
#if __BYTE_ORDER == __LITTLE_ENDIAN
#define NATIVE_ENDIAN 'l'
#else
#define NATIVE_ENDIAN 'B'
#endif

#define PROTOCOL_VERSION 1
/* A peer-to-peer call: nothing to activate. */
#define FLAG_NO_AUTO_START 0x2

/* Header field codes. */
enum {
        FIELD_PATH = 1,
        FIELD_INTERFACE = 2,
        FIELD_MEMBER = 3,
        FIELD_ERROR_NAME = 4,
        FIELD_REPLY_SERIAL = 5,
        FIELD_DESTINATION = 6,
        FIELD_SENDER = 7,
        FIELD_SIGNATURE = 8,
        FIELD_UNIX_FDS = 9,
};

/* The fixed part of the header: byte order, type, flags, version, body length, serial, and
 * the length of the header fields' array, whose elements start right after it (at 16, a
 * multiple of 8 as a struct's alignment asks). */
#define FIXED_HEADER_SIZE 16U

static size_t align_to(size_t n, size_t a) {
        return (n + a - 1) & ~(a - 1);
}

/* ---- writing ---- */

/* Writes into buf, or with buf == NULL only counts: the first pass sizes the buffer. */
typedef struct Writer {
        uint8_t *buf;
        size_t size;
} Writer;

static void put(Writer *w, const void *p, size_t n) {
        if (w->buf)
                memcpy(w->buf + w->size, p, n);
        w->size += n;
}

static void put_byte(Writer *w, uint8_t b) {
        put(w, &b, 1);
}

static void put_align(Writer *w, size_t a) {
        while (w->size % a)
                put_byte(w, 0);
}

static void put_u32(Writer *w, uint32_t v) {
        put_align(w, 4);
        put(w, &v, sizeof v);
}

static void put_string(Writer *w, const char *s) {
        size_t n = strlen(s);

        put_u32(w, (uint32_t) n);
        put(w, s, n + 1);
}

static void put_signature(Writer *w, const char *s) {
        size_t n = strlen(s);

        put_byte(w, (uint8_t) n);
        put(w, s, n + 1);
}

static void put_field(Writer *w, uint8_t code, char type, const char *value) {
        put_align(w, 8);
        put_byte(w, code);
        put_signature(w, (const char[]) { type, 0 });
        if (type == 'g')
                put_signature(w, value);
        else
                put_string(w, value);
}

static void put_method_call(Writer *w, uint32_t serial, bool expect_reply, const char *path, const char *interface,
                            const char *member, const char *a, const char *b) {
        size_t fields_start, fields_end, body_start;
        uint32_t fields_size, body_size;

        put_byte(w, NATIVE_ENDIAN);
        put_byte(w, BUS_WIRE_METHOD_CALL);
        put_byte(w, FLAG_NO_AUTO_START | (expect_reply ? 0 : BUS_WIRE_FLAG_NO_REPLY_EXPECTED));
        put_byte(w, PROTOCOL_VERSION);
        put_u32(w, 0); /* the body's size, filled in below */
        put_u32(w, serial);
        put_u32(w, 0); /* the fields' size, filled in below */

        fields_start = w->size;
        put_field(w, FIELD_PATH, 'o', path);
        put_field(w, FIELD_INTERFACE, 's', interface);
        put_field(w, FIELD_MEMBER, 's', member);
        put_field(w, FIELD_SIGNATURE, 'g', "ss");
        fields_end = w->size;
        put_align(w, 8);

        body_start = w->size;
        put_string(w, a);
        put_string(w, b);

        if (w->buf) {
                body_size = (uint32_t) (w->size - body_start);
                fields_size = (uint32_t) (fields_end - fields_start);
                memcpy(w->buf + 4, &body_size, sizeof body_size);
                memcpy(w->buf + 12, &fields_size, sizeof fields_size);
        }
}

static void put_field_u32(Writer *w, uint8_t code, uint32_t value) {
        put_align(w, 8);
        put_byte(w, code);
        put_signature(w, "u");
        put_u32(w, value);
}

static void put_return_oh(Writer *w, uint32_t serial, uint32_t reply_serial, const char *path) {
        size_t fields_start, fields_end, body_start;
        uint32_t fields_size, body_size;

        put_byte(w, NATIVE_ENDIAN);
        put_byte(w, BUS_WIRE_METHOD_RETURN);
        put_byte(w, BUS_WIRE_FLAG_NO_REPLY_EXPECTED); /* as sd-bus marks its returns: nothing answers one */
        put_byte(w, PROTOCOL_VERSION);
        put_u32(w, 0); /* the body's size, filled in below */
        put_u32(w, serial);
        put_u32(w, 0); /* the fields' size, filled in below */

        fields_start = w->size;
        put_field_u32(w, FIELD_REPLY_SERIAL, reply_serial);
        put_field(w, FIELD_SIGNATURE, 'g', "oh");
        put_field_u32(w, FIELD_UNIX_FDS, 1);
        fields_end = w->size;
        put_align(w, 8);

        body_start = w->size;
        put_string(w, path);
        put_u32(w, 0); /* the index of the one fd sent with the message */

        if (w->buf) {
                body_size = (uint32_t) (w->size - body_start);
                fields_size = (uint32_t) (fields_end - fields_start);
                memcpy(w->buf + 4, &body_size, sizeof body_size);
                memcpy(w->buf + 12, &fields_size, sizeof fields_size);
        }
}

int bus_wire_return_oh(uint32_t serial, uint32_t reply_serial, const char *path, uint8_t *buf, size_t size) {
        Writer w = {};

        if (serial == 0 || reply_serial == 0 || path[0] != '/' || strlen(path) > BUS_WIRE_MESSAGE_MAX / 4)
                return -EINVAL;
        put_return_oh(&w, serial, reply_serial, path);
        if (w.size > size)
                return -ENOBUFS;
        w = (Writer) { .buf = buf };
        put_return_oh(&w, serial, reply_serial, path);
        return (int) w.size;
}

int bus_wire_method_call_ss(uint32_t serial, bool expect_reply, const char *path, const char *interface,
                            const char *member, const char *a, const char *b, uint8_t **ret, size_t *ret_size) {
        Writer w = {};

        if (serial == 0)
                return -EINVAL;
        /* Every string counted against the limit before anything is added up or written. */
        if (strlen(path) > 255 || strlen(interface) > 255 || strlen(member) > 255 ||
            strlen(a) > BUS_WIRE_MESSAGE_MAX / 4 || strlen(b) > BUS_WIRE_MESSAGE_MAX / 4)
                return -EINVAL;

        put_method_call(&w, serial, expect_reply, path, interface, member, a, b);
        w.buf = malloc(w.size);
        if (!w.buf)
                return -ENOMEM;
        *ret_size = w.size;
        w.size = 0;
        put_method_call(&w, serial, expect_reply, path, interface, member, a, b);
        *ret = w.buf;
        return 0;
}

/* ---- the authentication's answer ---- */

/* The line at the start of buf without its CRLF: its length, 0 if not all there, -EPROTO if
 * longer than any line of ours. */
static int auth_line(const char *buf, size_t size, size_t *ret_len) {
        const char *e = memmem(buf, MIN(size, (size_t) 512), "\r\n", 2);

        if (!e)
                return size >= 512 ? -EPROTO : 0;
        *ret_len = (size_t) (e - buf);
        return 1;
}

static bool is_hex_guid(const char *s, size_t n) {
        if (n != 32)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

int bus_wire_parse_auth_reply(const char *buf, size_t size) {
        size_t n1, n2;
        int r;

        r = auth_line(buf, size, &n1);
        if (r <= 0)
                return r;
        if (n1 >= 8 && memcmp(buf, "REJECTED", 8) == 0)
                return -EACCES;
        if (n1 < 3 || memcmp(buf, "OK ", 3) != 0 || !is_hex_guid(buf + 3, n1 - 3))
                return -EPROTO;

        r = auth_line(buf + n1 + 2, size - n1 - 2, &n2);
        if (r <= 0)
                return r;
        if (n2 != strlen("AGREE_UNIX_FD") || memcmp(buf + n1 + 2, "AGREE_UNIX_FD", n2) != 0)
                return -EPROTO;
        return (int) (n1 + 2 + n2 + 2);
}

/* ---- reading ---- */

typedef struct Reader {
        const uint8_t *buf;
        size_t size;
        size_t pos;
} Reader;

/* Padding must be there and be zeros. */
static int get_align(Reader *r, size_t a) {
        size_t p = align_to(r->pos, a);

        if (p > r->size)
                return -EBADMSG;
        for (; r->pos < p; r->pos++)
                if (r->buf[r->pos] != 0)
                        return -EBADMSG;
        return 0;
}

static int get_fixed(Reader *r, size_t n, void *ret) {
        if (get_align(r, n) < 0 || r->size - r->pos < n)
                return -EBADMSG;
        if (ret)
                memcpy(ret, r->buf + r->pos, n);
        r->pos += n;
        return 0;
}

/* A string of 'n' bytes at pos, NUL-terminated and without a NUL inside. Compared as n >=
 * what is left, not n + 1 > it: n comes from the message, and where size_t is 32 bits wide
 * (i386, armhf) a length of 0xffffffff plus one is 0. */
static int get_chars(Reader *r, size_t n, const char **ret) {
        const char *s = (const char *) r->buf + r->pos;

        if (n >= r->size - r->pos || s[n] != 0 || memchr(s, 0, n))
                return -EBADMSG;
        r->pos += n + 1;
        if (ret)
                *ret = s;
        return 0;
}

static int get_string(Reader *r, const char **ret) {
        uint32_t n;

        if (get_fixed(r, 4, &n) < 0)
                return -EBADMSG;
        return get_chars(r, n, ret);
}

static int get_signature(Reader *r, const char **ret) {
        uint8_t n;

        if (get_fixed(r, 1, &n) < 0)
                return -EBADMSG;
        return get_chars(r, n, ret);
}

/* A header field's value of basic type 'type', stored where it is one of the two we keep
 * (strings and uint32s), skipped otherwise. */
static int get_basic(Reader *r, char type, const char **ret_string, uint32_t *ret_u32) {
        switch (type) {
        case 'y':
                return get_fixed(r, 1, NULL);
        case 'n':
        case 'q':
                return get_fixed(r, 2, NULL);
        case 'b':
        case 'i':
        case 'h':
                return get_fixed(r, 4, NULL);
        case 'u':
                return get_fixed(r, 4, ret_u32);
        case 'x':
        case 't':
        case 'd':
                return get_fixed(r, 8, NULL);
        case 's':
        case 'o':
                return get_string(r, ret_string);
        case 'g':
                return get_signature(r, ret_string);
        default:
                return -EBADMSG;
        }
}

/* The type a known header field must have; 0 for a field we do not know (skipped). */
static char field_type(uint8_t code) {
        switch (code) {
        case FIELD_PATH:
                return 'o';
        case FIELD_INTERFACE:
        case FIELD_MEMBER:
        case FIELD_ERROR_NAME:
        case FIELD_DESTINATION:
        case FIELD_SENDER:
                return 's';
        case FIELD_REPLY_SERIAL:
        case FIELD_UNIX_FDS:
                return 'u';
        case FIELD_SIGNATURE:
                return 'g';
        default:
                return 0;
        }
}

static int parse_fields(Reader *r, BusWireMessage *m) {
        while (r->pos < r->size) {
                const char *sig, *s = NULL;
                uint32_t u = 0;
                uint8_t code;
                char want;

                if (get_align(r, 8) < 0 || get_fixed(r, 1, &code) < 0 || get_signature(r, &sig) < 0)
                        return -EBADMSG;
                /* A variant of one basic type: containers are not in any header of ours. */
                if (strlen(sig) != 1)
                        return -EBADMSG;
                want = field_type(code);
                if (want && sig[0] != want)
                        return -EBADMSG;
                if (get_basic(r, sig[0], &s, &u) < 0)
                        return -EBADMSG;

                switch (code) {
                case FIELD_PATH:
                        m->path = s;
                        break;
                case FIELD_INTERFACE:
                        m->interface = s;
                        break;
                case FIELD_MEMBER:
                        m->member = s;
                        break;
                case FIELD_ERROR_NAME:
                        m->error_name = s;
                        break;
                case FIELD_REPLY_SERIAL:
                        if (u == 0)
                                return -EBADMSG;
                        m->reply_serial = u;
                        break;
                case FIELD_SIGNATURE:
                        m->signature = s;
                        break;
                case FIELD_UNIX_FDS:
                        m->n_unix_fds = u;
                        break;
                }
        }
        return 0;
}

int bus_wire_parse_message(const uint8_t *buf, size_t size, BusWireMessage *ret) {
        BusWireMessage m = { .signature = "" };
        uint32_t body_size, fields_size;
        size_t body_start, total;
        Reader r;

        if (size < FIXED_HEADER_SIZE)
                return 0;
        if (buf[0] != NATIVE_ENDIAN || buf[3] != PROTOCOL_VERSION || buf[1] < BUS_WIRE_METHOD_CALL ||
            buf[1] > BUS_WIRE_SIGNAL)
                return -EBADMSG;
        memcpy(&body_size, buf + 4, 4);
        memcpy(&m.serial, buf + 8, 4);
        memcpy(&fields_size, buf + 12, 4);
        if (m.serial == 0 || body_size > BUS_WIRE_MESSAGE_MAX || fields_size > BUS_WIRE_MESSAGE_MAX)
                return -EBADMSG;
        body_start = align_to(FIXED_HEADER_SIZE + fields_size, 8);
        total = body_start + body_size;
        if (total > BUS_WIRE_MESSAGE_MAX)
                return -EBADMSG;
        if (size < total)
                return 0;
        m.type = buf[1];
        m.flags = buf[2];

        r = (Reader) { .buf = buf, .size = FIXED_HEADER_SIZE + fields_size, .pos = FIXED_HEADER_SIZE };
        if (parse_fields(&r, &m) < 0)
                return -EBADMSG;
        /* The padding between the fields and the body. */
        r.size = body_start;
        if (get_align(&r, 8) < 0)
                return -EBADMSG;

        if ((m.type == BUS_WIRE_METHOD_RETURN || m.type == BUS_WIRE_ERROR) && m.reply_serial == 0)
                return -EBADMSG;
        if (m.type == BUS_WIRE_ERROR && !m.error_name)
                return -EBADMSG;
        if ((m.type == BUS_WIRE_METHOD_CALL || m.type == BUS_WIRE_SIGNAL) && (!m.path || !m.member))
                return -EBADMSG;
        /* A body without a signature, or a signature without a body. */
        if ((body_size > 0) != (m.signature[0] != 0))
                return -EBADMSG;

        m.body = buf + body_start;
        m.body_size = body_size;
        *ret = m;
        return (int) total;
}

int bus_wire_read_object_and_fd(const BusWireMessage *m, const char **ret_path, uint32_t *ret_fd_index) {
        /* The body starts on a multiple of 8 of the message, so offsets in it align alike. */
        Reader r = { .buf = m->body, .size = m->body_size };
        const char *path;
        uint32_t index;

        if (!streq(m->signature, "oh"))
                return -EBADMSG;
        if (get_string(&r, &path) < 0 || path[0] != '/' || get_fixed(&r, 4, &index) < 0 || r.pos != r.size ||
            index >= m->n_unix_fds)
                return -EBADMSG;
        *ret_path = path;
        *ret_fd_index = index;
        return 0;
}

int bus_wire_read_string_pair(const BusWireMessage *m, const char **ret_a, const char **ret_b) {
        Reader r = { .buf = m->body, .size = m->body_size };
        const char *a, *b;

        if (!streq(m->signature, "ss"))
                return -EBADMSG;
        if (get_string(&r, &a) < 0 || get_string(&r, &b) < 0 || r.pos != r.size)
                return -EBADMSG;
        *ret_a = a;
        *ret_b = b;
        return 0;
}

const char *bus_wire_error_message(const BusWireMessage *m) {
        Reader r = { .buf = m->body, .size = m->body_size };
        const char *s;

        if (m->signature[0] != 's' || get_string(&r, &s) < 0)
                return NULL;
        return s;
}
