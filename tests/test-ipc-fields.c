/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/ipc-fields.c and ipc.c's requests: the framing every message between the daemon
 * and its helper processes is written in (docs/processes.md), both ways, and what a reader
 * refuses. TAP output. */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "ipc-fields.h"
#include "ipc.h"
#include "strv.h"
#include "tap.h"

static void test_round_trip(void) {
        _cleanup_free_ void *msg = NULL;
        char *const list[] = { (char *) "/a", (char *) "", (char *) "/b c", NULL };
        _cleanup_strv_free_ char **back = NULL;
        _cleanup_free_ char *s = NULL;
        size_t size = 0, n;
        FieldWriter w;
        FieldReader rd;
        uint8_t kind = 0, tag;
        const void *v;
        uint64_t u = 0;
        bool b = false;
        int r, fields = 0;

        field_writer_init(&w, 42);
        field_put_u64(&w, 1, UINT64_C(0x0102030405060708));
        field_put_bool(&w, 2, true);
        field_put_string(&w, 3, "héllo");
        field_put_string(&w, 9, NULL);
        field_put_strv(&w, 4, list);
        check(field_writer_finish(&w, &msg, &size) == 0, "a message is written");
        check(size == IPC_FIELDS_HEADER + 5 * 6 + 8 + 1 + strlen("héllo") + 2 + 0 + 4,
              "its size is the header, five bytes per field and the values (%zu)", size);
        check(((uint8_t *) msg)[0] == IPC_FIELDS_VERSION && ((uint8_t *) msg)[1] == 42, "version, then kind");
        check(((uint8_t *) msg)[2] == 1 && ((uint8_t *) msg)[3] == 8 && ((uint8_t *) msg)[4] == 0 &&
              ((uint8_t *) msg)[6] == 0, "a field: tag, then its length, little endian");
        check(((uint8_t *) msg)[7] == 0x08 && ((uint8_t *) msg)[14] == 0x01, "a number, little endian");

        check(field_reader_init(&rd, msg, size, &kind) == 0 && kind == 42, "read back: the kind");
        while ((r = field_next(&rd, &tag, &v, &n)) > 0) {
                fields++;
                if (tag == 1)
                        check(field_get_u64(v, n, &u) == 0 && u == UINT64_C(0x0102030405060708), "the number");
                else if (tag == 2)
                        check(field_get_bool(v, n, &b) == 0 && b, "the flag");
                else if (tag == 3)
                        check(field_get_string(v, n, &s) == 0 && streq(s, "héllo"), "the string");
                else if (tag == 4)
                        check(field_strv_push(v, n, &back) == 0, "a list's item");
                else
                        check(false, "no field %u was written", tag);
        }
        check(r == 0 && fields == 6, "six fields, then the end (%d)", fields);
        check(strv_length(back) == 3 && streq(back[0], "/a") && streq(back[1], "") && streq(back[2], "/b c"),
              "the list, in order, its empty item too");
}

static void test_refused(void) {
        const uint8_t good[] = { IPC_FIELDS_VERSION, 1, 7, 1, 0, 0, 0, 'x' };
        uint8_t buf[sizeof good];
        FieldReader rd;
        uint8_t kind, tag;
        const void *v;
        size_t n;
        uint64_t u;
        uint32_t u32;
        bool b;
        char *s = NULL;

        check(field_reader_init(&rd, good, sizeof good, &kind) == 0 && field_next(&rd, &tag, &v, &n) == 1 &&
              field_next(&rd, &tag, &v, &n) == 0, "a well-formed message reads");
        check(field_reader_init(&rd, good, 1, &kind) == -EBADMSG && field_reader_init(&rd, NULL, 0, &kind) == -EBADMSG,
              "a message without its header is refused");
        memcpy(buf, good, sizeof buf);
        buf[0] = IPC_FIELDS_VERSION + 1;
        check(field_reader_init(&rd, buf, sizeof buf, &kind) == -EBADMSG, "another version is refused");
        for (size_t cut = IPC_FIELDS_HEADER + 1; cut < sizeof good; cut++) {
                check(field_reader_init(&rd, good, cut, &kind) == 0 && field_next(&rd, &tag, &v, &n) == -EBADMSG,
                      "a field cut after %zu bytes is refused", cut);
        }
        memcpy(buf, good, sizeof buf);
        buf[6] = 0x80;   /* a length of 2^31 + 1 */
        check(field_reader_init(&rd, buf, sizeof buf, &kind) == 0 && field_next(&rd, &tag, &v, &n) == -EBADMSG,
              "a length past the message is refused");
        check(field_get_u64("1234567", 7, &u) == -EBADMSG && field_get_u64("123456789", 9, &u) == -EBADMSG,
              "a number of another length is refused");
        check(field_get_u32("\0\0\0\0\1\0\0\0", 8, &u32) == -EBADMSG, "a number past 32 bits is refused where 32 are read");
        check(field_get_bool("\2", 1, &b) == -EBADMSG && field_get_bool("", 0, &b) == -EBADMSG,
              "a flag is 0 or 1, one byte");
        check(field_get_string("a\0b", 3, &s) == -EBADMSG && !s, "a string holding a NUL is refused");
}

static int count_field(uint8_t tag, const void *v, size_t n, void *userdata) {
        unsigned *count = userdata;

        if (tag == 5)
                return -ENOMEM;     /* a failure of the caller's own, passed on as it is */
        (*count)++;
        return 0;
}

/* field_message_open() and field_message_read(): the kinds, tags, lists and required fields a
 * schema names, and nothing else. */
static int read_with_schema(uint8_t kind, const uint8_t *tags, size_t n_tags, uint64_t *seen, unsigned *count) {
        static const FieldSchema schema = {
                .allowed = FIELD_BIT(1) | FIELD_BIT(2) | FIELD_BIT(5),
                .repeated = FIELD_BIT(2),
                .required = FIELD_BIT(1),
        };
        _cleanup_free_ void *msg = NULL;
        size_t size = 0;
        FieldWriter w;
        FieldReader rd;
        uint8_t got;
        int r;

        field_writer_init(&w, kind);
        for (size_t i = 0; i < n_tags; i++)
                field_put_bool(&w, tags[i], true);
        if (field_writer_finish(&w, &msg, &size) < 0)
                return -ENOMEM;
        *seen = 0;
        *count = 0;
        r = field_message_open(&rd, msg, size, 3, 4, &got);
        if (r < 0)
                return r;
        return field_message_read(&rd, &schema, seen, count_field, count);
}

static void test_schema(void) {
        uint64_t seen;
        unsigned count;

        check(read_with_schema(3, (const uint8_t[]) { 1, 2, 2, 2 }, 4, &seen, &count) == 0 && count == 4 &&
              seen == (FIELD_BIT(1) | FIELD_BIT(2)), "a required field and a list of three: each handed over");
        check(read_with_schema(4, (const uint8_t[]) { 1 }, 1, &seen, &count) == 0, "the last kind of the range");
        check(read_with_schema(2, (const uint8_t[]) { 1 }, 1, &seen, &count) == -EBADMSG &&
              read_with_schema(5, (const uint8_t[]) { 1 }, 1, &seen, &count) == -EBADMSG, "a kind outside the range is refused");
        check(read_with_schema(3, (const uint8_t[]) { 1, 1 }, 2, &seen, &count) == -EBADMSG && count == 1,
              "a single field that comes twice is refused, before it is handed over again");
        check(read_with_schema(3, (const uint8_t[]) { 1, 3 }, 2, &seen, &count) == -EBADMSG && count == 1,
              "a tag the schema does not name is refused");
        check(read_with_schema(3, (const uint8_t[]) { 1, 63 }, 2, &seen, &count) == -EBADMSG &&
              read_with_schema(3, (const uint8_t[]) { 1, 64 }, 2, &seen, &count) == -EBADMSG &&
              read_with_schema(3, (const uint8_t[]) { 1, 200 }, 2, &seen, &count) == -EBADMSG, "tags past the schema's 64 too");
        check(read_with_schema(3, (const uint8_t[]) { 2 }, 1, &seen, &count) == -EBADMSG && count == 1,
              "a required field missing at the end is refused");
        check(read_with_schema(3, (const uint8_t[]) { 1, 5 }, 2, &seen, &count) == -ENOMEM,
              "the handler's own failure comes back as it is");
}

static void test_limits(void) {
        _cleanup_free_ void *msg = NULL;
        _cleanup_free_ char *big = malloc(IPC_FIELDS_MAX);
        size_t size = 0;
        FieldWriter w;

        if (!big) {
                check(false, "memory");
                return;
        }
        memset(big, 'x', IPC_FIELDS_MAX - 1);
        big[IPC_FIELDS_MAX - 1] = 0;
        field_writer_init(&w, 1);
        field_put_string(&w, 1, big);
        check(field_writer_finish(&w, &msg, &size) == -E2BIG && !msg, "a message past IPC_FIELDS_MAX is not written");
}

/* A request through a socket pair, larger than one message, with fds: as the daemon queues a
 * child's request before the fork and the child reads it. */
static void test_request_over_socket(void) {
        _cleanup_free_ IpcMessage *m = malloc(sizeof(IpcMessage));
        _cleanup_free_ char *data = malloc(3 * IPC_PAYLOAD_MAX + 5);
        _cleanup_free_ void *back = NULL;
        int pair[2] = { -EBADF, -EBADF }, fds[2] = { -EBADF, -EBADF }, big = 1 << 20;
        size_t size = 0;
        struct stat a, b;

        if (!m || !data || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
                check(false, "a socket pair");
                return;
        }
        (void) setsockopt(pair[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
        for (size_t i = 0; i < 3 * IPC_PAYLOAD_MAX + 5; i++)
                data[i] = (char) (i * 7);
        fds[0] = open("/", O_PATH | O_CLOEXEC);
        fds[1] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        check(ipc_send_request(pair[0], data, 3 * IPC_PAYLOAD_MAX + 5, fds, 2) == 0, "a request of four messages is sent");
        check(ipc_recv_request(pair[1], IPC_FIELDS_MAX, m, &back, &size) == 1 && size == 3 * IPC_PAYLOAD_MAX + 5 &&
              memcmp(back, data, size) == 0, "it is received whole");
        check(m->n_fds == 2 && fstat(m->fds[0], &a) == 0 && stat("/", &b) == 0 && a.st_ino == b.st_ino &&
              fstat(m->fds[1], &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0 && a.st_ino == b.st_ino,
              "with its fds, in order");
        ipc_message_close_fds(m);
        back = mfree(back);

        check(ipc_send_request(pair[0], data, 100, NULL, 0) == 0 &&
              ipc_recv_request(pair[1], 99, m, &back, &size) == -EBADMSG && !back,
              "a request past the reader's limit is refused");
        check(ipc_send(pair[0], 7, 0, "x", 1, NULL, 0) == 0 && ipc_recv_request(pair[1], 100, m, &back, &size) == -EBADMSG,
              "a message with a result is no request");
        check(ipc_send(pair[0], 0, IPC_MORE, "x", 1, fds, 1) == 0 && ipc_send(pair[0], 0, IPC_MORE, "y", 1, NULL, 0) == 0 &&
              ipc_send(pair[0], 0, 0, "z", 1, NULL, 0) == 0 && ipc_recv_request(pair[1], 100, m, &back, &size) == -EBADMSG,
              "fds before the last message of a request are refused");
        check(ipc_send_request(pair[0], "next", 4, NULL, 0) == 0 && ipc_recv_request(pair[1], 100, m, &back, &size) == 1 &&
              size == 4 && memcmp(back, "next", 4) == 0,
              "a refused request is read to its end: the next request is read as one");
        back = mfree(back);
        check(ipc_send(pair[0], 0, IPC_MORE, "0123456789", 10, NULL, 0) == 0 && ipc_send(pair[0], 0, 0, "x", 1, NULL, 0) == 0 &&
              ipc_recv_request(pair[1], 5, m, &back, &size) == -EBADMSG && !back &&
              ipc_send_request(pair[0], "next", 4, NULL, 0) == 0 && ipc_recv_request(pair[1], 100, m, &back, &size) == 1 &&
              size == 4, "so is one past the limit");
        back = mfree(back);
        check(ipc_send(pair[0], 0, IPC_MORE, "x", 1, NULL, 0) == 0 && close(pair[0]) == 0 &&
              ipc_recv_request(pair[1], 100, m, &back, &size) == -EBADMSG, "a request cut short is refused");
        check(ipc_recv_request(pair[1], 100, m, &back, &size) == 0, "EOF before a request is the end");
        safe_close(pair[1]);
        safe_close(fds[0]);
        safe_close(fds[1]);
}

int main(void) {
        test_round_trip();
        test_refused();
        test_schema();
        test_limits();
        test_request_over_socket();
        return tap_finish();
}
