/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* pam_nsmanager's calls on nsmanagerd's private socket (NSM_PRIVATE_SOCKET, root only),
 * made with bus-wire.h rather than sd-bus: the authentication goes out with the call in one
 * write, so OpenSession costs one round trip; and the connection is kept for the session,
 * so CloseSession costs none: it is written on it and not waited for (the daemon knows the
 * caller from the socket, and keeps such a connection for that one call only:
 * src/nsmanagerd/private-bus.c). */

#include <stdbool.h>
#include <stdint.h>

typedef struct DirectReply {
        char *error_name;       /* NULL: the call succeeded */
        char *error_message;    /* the error's sentence, if it had one */
        char *object;           /* OpenSession's namespace object */
        int fd;                 /* OpenSession's namespace fd */
} DirectReply;

void direct_reply_done(DirectReply *reply);

/* A connection to the private socket, not waiting for anything: < 0 where nobody listens
 * there (the daemon is not running: ask the bus, which starts it). */
int direct_connect(int *ret_fd);

typedef enum DirectAuth {
        DIRECT_AUTH_NONE,       /* the connection is authenticated already */
        DIRECT_AUTH_PIPELINED,  /* the authentication and the call in one write */
        DIRECT_AUTH_WAIT,       /* the authentication, its answer, then the call: a daemon that
                                 * does not say PIPELINED_CALLS=1 (login-filter.h) */
} DirectAuth;

/* Writes Manager.METHOD(user, id) on 'fd' as message 'serial' (1 on a new connection, which
 * is authenticated first as 'auth' says), and with 'reply' waits for the answer until
 * 'deadline' (CLOCK_MONOTONIC µs): 0 with *reply filled (an error reply included),
 * -ETIMEDOUT, or another -errno (-EPIPE: the daemon closed the connection). Without 'reply'
 * the call is only written, whole or not at all (0, or -errno). */
int direct_call(int fd, DirectAuth auth, uint32_t serial, const char *method, const char *user, const char *id,
                uint64_t deadline, DirectReply *reply);
