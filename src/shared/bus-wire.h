/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Just enough of the D-Bus wire format for pam_nsmanager to make its two calls on
 * nsmanagerd's private socket without a round trip of its own for the authentication, and for
 * nsmanagerd to read them and answer the first.
 *
 * sd-bus, as every client should, waits for the server's "OK" before it writes the first
 * message: one round trip for the authentication, one for the call. The specification allows
 * a client to send its first message right behind BEGIN, and sd-bus as a server (what
 * nsmanagerd runs on that socket) keeps what follows BEGIN for after the authentication. A
 * login then costs one round trip instead of two, and a session's end none (the call goes on
 * the connection open_session kept). The messages are built and parsed here; the login's side
 * of the socket is in src/pam/direct-call.c, the daemon's in src/nsmanagerd/private-bus.c,
 * which answers most logins' OpenSession itself (pipelined-open.c: a method return with
 * one fd, built here) and reads their CloseSession (kept-connection.c).
 *
 * Only the native byte order, only method calls with two strings and returns of an object
 * and an fd, only messages with basic types in their header fields: what the two sides send
 * each other. Anything else is
 * -EBADMSG. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The authentication, as root (EXTERNAL with uid "0", hex-encoded), asking for fd passing,
 * and BEGIN, all at once. sizeof - 1: it starts with the protocol's NUL byte. */
#define BUS_WIRE_AUTH_ROOT "\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n"
#define BUS_WIRE_AUTH_ROOT_SIZE (sizeof(BUS_WIRE_AUTH_ROOT) - 1)

/* Larger messages are not ours: nsmanagerd's replies to OpenSession and CloseSession are a
 * few hundred bytes. */
#define BUS_WIRE_MESSAGE_MAX (64U * 1024U)

/* A call's flag: the caller wants no reply. */
#define BUS_WIRE_FLAG_NO_REPLY_EXPECTED 0x1

enum {
        BUS_WIRE_METHOD_CALL = 1,
        BUS_WIRE_METHOD_RETURN = 2,
        BUS_WIRE_ERROR = 3,
        BUS_WIRE_SIGNAL = 4,
};

/* A method call PATH INTERFACE.MEMBER(s a, s b) with 'serial' (> 0); without expect_reply the
 * server sends none. The bytes in *ret (malloc'd), their number in *ret_size. -EINVAL for a
 * string with a NUL-free length over what a message may hold. */
int bus_wire_method_call_ss(uint32_t serial, bool expect_reply, const char *path, const char *interface,
                            const char *member, const char *a, const char *b, uint8_t **ret, size_t *ret_size);

/* A method return of signature "oh" to the call 'reply_serial': the object 'path' and the
 * fd sent with it (index 0; UNIX_FDS 1), written into buf: its size, or -ENOBUFS if it does
 * not fit, -EINVAL for a serial of 0 or a path that is not absolute. */
int bus_wire_return_oh(uint32_t serial, uint32_t reply_serial, const char *path, uint8_t *buf, size_t size);

/* The server's answer to BUS_WIRE_AUTH_ROOT, with the server's guid (32 hex digits). */
#define BUS_WIRE_AUTH_OK_FMT "OK %s\r\nAGREE_UNIX_FD\r\n"

/* The server's answer to BUS_WIRE_AUTH_ROOT at the start of 'buf': "OK <guid>" and
 * "AGREE_UNIX_FD". > 0: the number of bytes it took (the first message follows); 0: not
 * all there yet; -EACCES: refused (REJECTED); -EPROTO: anything else, or no fd passing. */
int bus_wire_parse_auth_reply(const char *buf, size_t size);

/* One message, its strings pointing into the buffer it was parsed from. */
typedef struct BusWireMessage {
        uint8_t type;
        uint8_t flags;
        uint32_t serial;
        uint32_t reply_serial;      /* 0: none */
        const char *path;           /* NULL: none (for these four) */
        const char *interface;
        const char *member;
        const char *error_name;
        const char *signature;      /* "" when the message has none */
        uint32_t n_unix_fds;
        const uint8_t *body;
        size_t body_size;
} BusWireMessage;

/* The message at the start of 'buf': > 0 its size (*ret filled), 0 if it is not all there
 * yet, -EBADMSG if it is not one this parser understands (or none at all). */
int bus_wire_parse_message(const uint8_t *buf, size_t size, BusWireMessage *ret);

/* The body of a message with signature "oh": the object path and the fd's index into the
 * fds that came with the message (checked against n_unix_fds). -EBADMSG otherwise. */
int bus_wire_read_object_and_fd(const BusWireMessage *m, const char **ret_path, uint32_t *ret_fd_index);

/* The body of a message with signature "ss". -EBADMSG otherwise. */
int bus_wire_read_string_pair(const BusWireMessage *m, const char **ret_a, const char **ret_b);

/* An error's message: its first argument if that is a string, else NULL. */
const char *bus_wire_error_message(const BusWireMessage *m);
