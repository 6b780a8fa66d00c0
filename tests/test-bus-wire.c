/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/bus-wire.c against the real thing: sd-bus as the server pam_nsmanager talks to
 * (the authentication and the call in one write, the reply with its fd parsed), sd-bus as a
 * client whose call the parser reads, and the refusals of malformed input. TAP output. */
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <systemd/sd-bus.h>

#include "bus-errors.h"
#include "bus-wire.h"
#include "macros.h"
#include "tap.h"

static int method_open(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_close_ int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        const char *user, *id;
        int r;

        r = sd_bus_message_read(m, "ss", &user, &id);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "oh", "/org/example/NSManager/user/_2001", fd);
}

static int method_close(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_error_setf(error, NSM_ERROR_NO_SUCH_SESSION, "User '%s' has no session '%s'.", "alice", "nope");
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("OpenSession", "ss", "oh", method_open, 0),
        SD_BUS_METHOD("CloseSession", "ss", "", method_close, 0),
        SD_BUS_VTABLE_END,
};

/* Reads what the server sent on 'fd' into buf (at *size), with any fds, driving the server
 * (sd-bus, on the same thread) until the parser has a message or nothing moves. */
static int exchange(sd_bus *server, int fd, uint8_t *buf, size_t max, size_t *size, int *ret_fd) {
        for (int round = 0; round < 1000; round++) {
                union {
                        struct cmsghdr h;
                        uint8_t b[CMSG_SPACE(sizeof(int))];
                } control;
                struct iovec iov = { .iov_base = buf + *size, .iov_len = max - *size };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = sizeof control };
                ssize_t n;

                while (sd_bus_process(server, NULL) > 0)
                        ;
                n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n > 0) {
                        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                                if (c->cmsg_type == SCM_RIGHTS)
                                        memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
                        *size += (size_t) n;
                        return 0;
                }
                if (n == 0)
                        return -ECONNRESET;
                (void) poll(&(struct pollfd) { .fd = fd, .events = POLLIN }, 1, 1);
        }
        return -ETIMEDOUT;
}

static void test_sd_bus_server(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *server = NULL;
        _cleanup_free_ uint8_t *call = NULL, *close_call = NULL;
        _cleanup_close_ int received = -EBADF;
        uint8_t buf[4096];
        size_t call_size, close_size, size = 0, used;
        sd_id128_t id;
        int pair[2], r, auth;
        BusWireMessage m;
        const char *path;
        uint32_t index;
        struct stat st;

        check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) >= 0, "socketpair");
        check(sd_bus_new(&server) >= 0 && sd_bus_set_fd(server, pair[0], pair[0]) >= 0 &&
              sd_id128_randomize(&id) >= 0 && sd_bus_set_server(server, true, id) >= 0 &&
              sd_bus_negotiate_fds(server, true) >= 0 &&
              sd_bus_add_object_vtable(server, NULL, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, vtable, NULL) >= 0 &&
              sd_bus_start(server) >= 0,
              "an sd-bus server on one end of a socketpair");

        /* As a login: the authentication and the call in one write. */
        check(bus_wire_method_call_ss(1, true, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "OpenSession", "alice",
                                      "pam-login-1", &call, &call_size) == 0,
              "OpenSession built");
        uint8_t request[4096];
        memcpy(request, BUS_WIRE_AUTH_ROOT, BUS_WIRE_AUTH_ROOT_SIZE);
        memcpy(request + BUS_WIRE_AUTH_ROOT_SIZE, call, call_size);
        check(write(pair[1], request, BUS_WIRE_AUTH_ROOT_SIZE + call_size) == (ssize_t) (BUS_WIRE_AUTH_ROOT_SIZE + call_size),
              "authentication and call written at once");

        auth = 0;
        for (int i = 0; i < 10 && auth == 0; i++) {
                r = exchange(server, pair[1], buf, sizeof buf, &size, &received);
                auth = r < 0 ? r : bus_wire_parse_auth_reply((const char *) buf, size);
        }
        if (geteuid() != 0) {
                /* EXTERNAL as uid 0 from another uid: sd-bus refuses, and the parser says so. */
                check(auth == -EACCES, "not root: the authentication as root is REJECTED (%d)", auth);
                safe_close(pair[1]);
                return;
        }
        check(auth > 0, "sd-bus accepted the authentication (%d)", auth);
        used = auth > 0 ? (size_t) auth : 0;

        r = 0;
        for (int i = 0; i < 10 && (r = bus_wire_parse_message(buf + used, size - used, &m)) == 0; i++)
                if (exchange(server, pair[1], buf, sizeof buf, &size, &received) < 0)
                        break;
        check(r > 0, "sd-bus answered the call that came behind BEGIN (%d)", r);
        if (r <= 0) {
                safe_close(pair[1]);
                return;
        }
        check(m.type == BUS_WIRE_METHOD_RETURN && m.reply_serial == 1 && streq(m.signature, "oh") && m.n_unix_fds == 1,
              "a method return to serial 1 with signature oh and one fd");
        check(bus_wire_read_object_and_fd(&m, &path, &index) == 0 && streq(path, "/org/example/NSManager/user/_2001") &&
              index == 0,
              "its object path and fd index read");
        check(received >= 0 && fstat(received, &st) >= 0 && S_ISCHR(st.st_mode), "the fd came with it: /dev/null");
        used += (size_t) r;

        /* A second call on the same connection, no authentication: an error reply. */
        check(bus_wire_method_call_ss(2, true, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "CloseSession", "alice", "nope",
                                      &close_call, &close_size) == 0 &&
              write(pair[1], close_call, close_size) == (ssize_t) close_size,
              "CloseSession written");
        r = 0;
        for (int i = 0; i < 10 && (r = bus_wire_parse_message(buf + used, size - used, &m)) == 0; i++)
                if (exchange(server, pair[1], buf, sizeof buf, &size, &received) < 0)
                        break;
        check(r > 0 && m.type == BUS_WIRE_ERROR && m.reply_serial == 2 && streq(m.error_name, NSM_ERROR_NO_SUCH_SESSION) &&
              streq_ptr(bus_wire_error_message(&m), "User 'alice' has no session 'nope'."),
              "the error reply: its name and sentence");
        safe_close(pair[1]);
}

/* The first call an sd-bus client on the other end of 'fd' writes: its authentication
 * answered by hand (whichever way this sd-bus asks), then read until the call is all there,
 * into buf. > 0: the call's size (*ret filled); else what went wrong. */
static int read_client_call(sd_bus *client, int fd, uint8_t *buf, size_t max, BusWireMessage *ret) {
        bool answered = false;
        size_t size = 0;
        int r = 0;

        for (int i = 0; i < 1000; i++) {
                const char *begin;
                ssize_t n;

                (void) sd_bus_process(client, NULL);
                n = read(fd, buf + size, max - size);
                if (n > 0)
                        size += (size_t) n;
                begin = memmem(buf, size, "BEGIN\r\n", 7);
                if (begin && !answered) {
                        char answer[128] = "";
                        if (memmem(buf, size, "AUTH EXTERNAL\r\n", 15))
                                strcat(answer, "DATA\r\n");
                        if (memmem(buf, size, "NEGOTIATE_UNIX_FD\r\n", 19))
                                snprintf(answer + strlen(answer), sizeof answer - strlen(answer), BUS_WIRE_AUTH_OK_FMT,
                                         "0123456789abcdef0123456789abcdef");
                        else
                                strcat(answer, "OK 0123456789abcdef0123456789abcdef\r\n");
                        answered = write(fd, answer, strlen(answer)) == (ssize_t) strlen(answer);
                }
                if (begin && (r = bus_wire_parse_message((const uint8_t *) begin + 7,
                                                         size - (size_t) (begin + 7 - (const char *) buf), ret)) != 0)
                        return r;
                (void) poll(&(struct pollfd) { .fd = fd, .events = POLLIN }, 1, 1);
        }
        return -ETIMEDOUT;
}

/* sd-bus as the client: the parser reads its call as the daemon reads a kept connection's. */
static void test_sd_bus_client(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *client = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        const char *user, *id;
        uint8_t buf[4096];
        BusWireMessage m;
        int pair[2], r;

        check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) >= 0, "socketpair");
        check(sd_bus_new(&client) >= 0 && sd_bus_set_fd(client, pair[0], pair[0]) >= 0 && sd_bus_start(client) >= 0,
              "an sd-bus client on one end");
        check(sd_bus_message_new_method_call(client, &call, NULL, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE,
                                             "CloseSession") >= 0 &&
              sd_bus_message_append(call, "ss", "alice", "pam-login-1") >= 0 && sd_bus_send(client, call, NULL) >= 0,
              "CloseSession queued");

        r = read_client_call(client, pair[1], buf, sizeof buf, &m);
        check(r > 0, "sd-bus's call parsed (%d)", r);
        if (r <= 0) {
                safe_close(pair[1]);
                return;
        }
        check(m.type == BUS_WIRE_METHOD_CALL && streq(m.path, NSM_MANAGER_PATH) &&
              streq_ptr(m.interface, NSM_MANAGER_INTERFACE) && streq(m.member, "CloseSession") && streq(m.signature, "ss"),
              "its path, interface, member and signature");
        check(bus_wire_read_string_pair(&m, &user, &id) == 0 && streq(user, "alice") && streq(id, "pam-login-1"),
              "its two strings");
        safe_close(pair[1]);
}

static int on_open_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        sd_bus_message **ret = userdata;

        *ret = sd_bus_message_ref(m);
        return 1;
}

/* sd-bus as the client of the method return the daemon builds for a login
 * (src/nsmanagerd/pipelined-open.c), sent with its fd. (sd-bus waits for the authentication's
 * answer before it calls, so the two come in two writes here, not one as to a login.) */
static void test_return_read_by_sd_bus(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *client = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_close_ int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        uint8_t buf[4096], ret[512];
        const char *path = NULL;
        BusWireMessage m;
        int pair[2], r, fd = -EBADF;
        struct stat st;

        check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) >= 0, "socketpair");
        check(sd_bus_new(&client) >= 0 && sd_bus_set_fd(client, pair[0], pair[0]) >= 0 &&
              sd_bus_negotiate_fds(client, true) >= 0 && sd_bus_start(client) >= 0,
              "an sd-bus client on one end, asking for fd passing");
        check(sd_bus_call_method_async(client, NULL, NULL, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, "OpenSession",
                                       on_open_reply, &reply, "ss", "alice", "pam-login-1") >= 0,
              "OpenSession called");

        r = read_client_call(client, pair[1], buf, sizeof buf, &m);
        check(r > 0 && m.type == BUS_WIRE_METHOD_CALL && streq(m.member, "OpenSession"), "sd-bus's call read (%d)", r);
        if (r <= 0) {
                safe_close(pair[1]);
                return;
        }

        r = bus_wire_return_oh(1, m.serial, "/org/example/NSManager/user/_2001", ret, sizeof ret);
        check(r > 0, "the return built (%d)", r);
        if (r > 0) {
                union {
                        struct cmsghdr h;
                        uint8_t b[CMSG_SPACE(sizeof(int))];
                } control = {};
                struct iovec iov = { .iov_base = ret, .iov_len = (size_t) r };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = sizeof control };
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &null, sizeof(int));
                check(sendmsg(pair[1], &mh, 0) == r, "sent with /dev/null's fd");
        }
        for (int i = 0; i < 1000 && !reply; i++)
                if (sd_bus_process(client, NULL) == 0)
                        (void) sd_bus_wait(client, 1000);
        check(reply && !sd_bus_message_is_method_error(reply, NULL), "sd-bus took it as the method's return");
        check(reply && sd_bus_message_read(reply, "oh", &path, &fd) >= 0 &&
              streq_ptr(path, "/org/example/NSManager/user/_2001") && fstat(fd, &st) >= 0 && S_ISCHR(st.st_mode),
              "its object path, and its fd: /dev/null");
        safe_close(pair[1]);
}

static void test_refusals(void) {
        _cleanup_free_ uint8_t *call = NULL;
        uint8_t copy[1024];
        size_t size;
        BusWireMessage m;
        const char *a, *b;
        uint32_t index;

        check(bus_wire_method_call_ss(7, false, "/p", "i.f", "M", "a", "bc", &call, &size) == 0, "a call built");
        check(bus_wire_parse_message(call, size, &m) == (int) size && m.type == BUS_WIRE_METHOD_CALL &&
              m.serial == 7 && (m.flags & 0x1) && streq(m.path, "/p") && streq(m.member, "M") &&
              bus_wire_read_string_pair(&m, &a, &b) == 0 && streq(a, "a") && streq(b, "bc"),
              "and parsed back as it was built");
        for (size_t n = 0; n < size; n++)
                if (bus_wire_parse_message(call, n, &m) != 0) {
                        check(false, "a prefix of %zu bytes is 'more to come'", n);
                        break;
                }
        check(bus_wire_read_object_and_fd(&m, &a, &index) == -EBADMSG, "ss is not oh");

        memcpy(copy, call, size);
        copy[0] = copy[0] == 'l' ? 'B' : 'l';
        check(bus_wire_parse_message(copy, size, &m) == -EBADMSG, "the other byte order is refused");
        memcpy(copy, call, size);
        copy[size - 1] = 'x';  /* the last string's NUL */
        check(bus_wire_parse_message(copy, size, &m) > 0 && bus_wire_read_string_pair(&m, &a, &b) == -EBADMSG,
              "a string without its NUL is refused");
        memcpy(copy, call, size);
        /* The first string's length, where the body starts: "a" and "bc" are 4 + 2, 2 of
         * padding, and 4 + 3 bytes. */
        memcpy(copy + size - 15, &(uint32_t) { UINT32_MAX }, 4);
        check(bus_wire_parse_message(copy, size, &m) > 0 && bus_wire_read_string_pair(&m, &a, &b) == -EBADMSG,
              "a string of length 0xffffffff is refused, where size_t is 32 bits wide too");
        memcpy(copy, call, size);
        copy[16 + 1] = 2;      /* the first field's signature: two types */
        check(bus_wire_parse_message(copy, size, &m) == -EBADMSG, "a field of a container type is refused");
        memcpy(copy, call, size);
        copy[16 + 2] = 's';    /* PATH as a string */
        check(bus_wire_parse_message(copy, size, &m) == -EBADMSG, "a known field of the wrong type is refused");
        memcpy(copy, call, size);
        copy[8] = copy[9] = copy[10] = copy[11] = 0;
        check(bus_wire_parse_message(copy, size, &m) == -EBADMSG, "serial 0 is refused");
        memcpy(copy, call, size);
        copy[4] = 0xff; copy[5] = 0xff; copy[6] = 0xff; copy[7] = 0x7f;
        check(bus_wire_parse_message(copy, size, &m) == -EBADMSG, "a body over the limit is refused, not waited for");

        check(bus_wire_parse_auth_reply("OK 0123456789abcdef0123456789abcdef\r\nAGREE_UNIX_FD\r\nl", 53) == 52,
              "OK and AGREE_UNIX_FD: the message follows");
        check(bus_wire_parse_auth_reply("OK 0123456789abcdef0123456789abcdef\r\nAGR", 40) == 0, "half of it: more to come");
        check(bus_wire_parse_auth_reply("REJECTED EXTERNAL\r\n", 19) == -EACCES, "REJECTED");
        check(bus_wire_parse_auth_reply("OK 0123\r\nAGREE_UNIX_FD\r\n", 24) == -EPROTO, "a short guid");
        check(bus_wire_parse_auth_reply("OK 0123456789abcdef0123456789abcdef\r\nERROR\r\n", 44) == -EPROTO,
              "no fd passing");
        check(bus_wire_method_call_ss(0, true, "/p", "i.f", "M", "a", "b", &call, &size) == -EINVAL, "serial 0 is not built");

        uint8_t ret[256];
        int k = bus_wire_return_oh(1, 9, "/o/p", ret, sizeof ret);
        check(k > 0 && bus_wire_parse_message(ret, (size_t) k, &m) == k && m.type == BUS_WIRE_METHOD_RETURN &&
              m.reply_serial == 9 && m.n_unix_fds == 1 && bus_wire_read_object_and_fd(&m, &a, &index) == 0 &&
              streq(a, "/o/p") && index == 0,
              "a return built and parsed back");
        check(bus_wire_return_oh(1, 9, "/o/p", ret, (size_t) k - 1) == -ENOBUFS, "one byte short: -ENOBUFS");
        check(bus_wire_return_oh(1, 0, "/o/p", ret, sizeof ret) == -EINVAL, "no return to serial 0");
        check(bus_wire_return_oh(1, 9, "o/p", ret, sizeof ret) == -EINVAL, "no relative object path");
}

int main(void) {
        test_refusals();
        test_sd_bus_client();
        test_sd_bus_server();
        test_return_read_by_sd_bus();
        return tap_finish();
}
