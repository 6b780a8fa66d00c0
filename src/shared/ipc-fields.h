/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macros.h"

/* The payload format of a request between the daemon and its helper processes (the builder's
 * requests, a mount child's request and answer; docs/processes.md): self-describing, so that a
 * decoder checks each field rather than trusting a struct's layout.
 *
 *   byte 0       IPC_FIELDS_VERSION
 *   byte 1       the kind of message (each boundary numbers its own kinds)
 *   then fields  tag (1 byte), length (4 bytes, little endian), that many bytes of value
 *
 * Numbers are 8 bytes, little endian (u64); flags are 1 byte, 0 or 1; strings are their bytes
 * without a terminating NUL and hold none; a pair of mount ids is 16 bytes (unique, old). A
 * list is its field repeated, in order. Which tags a kind has, which are required, and which
 * may repeat is the decoder's: each rejects an unknown tag, a repeated single field, a value of
 * the wrong length and a missing required field with -EBADMSG. */

#define IPC_FIELDS_VERSION 1U
#define IPC_FIELDS_HEADER 2U
#define IPC_FIELD_HEADER 5U
/* No message of ours comes near this: it bounds what a decoder allocates. */
#define IPC_FIELDS_MAX (1024U * 1024U)

typedef struct FieldWriter {
        uint8_t *buf;
        size_t size, allocated;
        int error;               /* the first failure; every call after it does nothing */
} FieldWriter;

void field_writer_init(FieldWriter *w, uint8_t kind);
void field_writer_done(FieldWriter *w);
void field_put(FieldWriter *w, uint8_t tag, const void *value, size_t size);
void field_put_u64(FieldWriter *w, uint8_t tag, uint64_t v);
void field_put_bool(FieldWriter *w, uint8_t tag, bool v);
/* NULL: nothing is written (the field is absent). */
void field_put_string(FieldWriter *w, uint8_t tag, const char *s);
void field_put_strv(FieldWriter *w, uint8_t tag, char *const *l);
/* The message, owned by the caller, or the first failure (-E2BIG past IPC_FIELDS_MAX). */
int field_writer_finish(FieldWriter *w, void **ret, size_t *ret_size);

typedef struct FieldReader {
        const uint8_t *p;
        size_t left;
} FieldReader;

/* Checks the version and returns the kind; -EBADMSG for anything else. */
int field_reader_init(FieldReader *r, const void *data, size_t size, uint8_t *ret_kind);
/* 1 and the next field, 0 at the end, -EBADMSG if the rest is not a whole field. */
int field_next(FieldReader *r, uint8_t *ret_tag, const void **ret_value, size_t *ret_size);

int field_get_u64(const void *value, size_t size, uint64_t *ret);
int field_get_u32(const void *value, size_t size, uint32_t *ret);   /* a u64 that fits */
int field_get_bool(const void *value, size_t size, bool *ret);
/* A copy, NUL-terminated; -EBADMSG if it holds a NUL. */
int field_get_string(const void *value, size_t size, char **ret);
int field_strv_push(const void *value, size_t size, char ***l);

#define FIELD_BIT(tag) (UINT64_C(1) << (tag))

/* Which fields a message may hold (tags below 64): a set bit per tag. */
typedef struct FieldSchema {
        uint64_t allowed;
        uint64_t repeated;       /* lists: the tags that may come more than once */
        uint64_t required;
} FieldSchema;

typedef int (*FieldFunc)(uint8_t tag, const void *value, size_t size, void *userdata);

/* A message's header: the reader on its first field, and its kind, one of kind_min…kind_max;
 * -EBADMSG for anything else. */
int field_message_open(FieldReader *r, const void *data, size_t size, uint8_t kind_min, uint8_t kind_max,
                       uint8_t *ret_kind);
/* The fields left, each handed to f: -EBADMSG for a tag the schema does not allow, a second
 * one of a tag that does not repeat, a required one missing at the end, or what is not a whole
 * field; f's own failure as it is. *seen: the tags read before (in), and all read (out). */
int field_message_read(FieldReader *r, const FieldSchema *schema, uint64_t *seen, FieldFunc f, void *userdata);
/* Both, for a message of one kind whose schema does not depend on its fields. */
int field_message_decode(const void *data, size_t size, uint8_t kind, const FieldSchema *schema, FieldFunc f,
                         void *userdata);
