/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct UserRecord {
        char *name;
        uid_t uid;
        gid_t gid;
        char *home;
        char *shell;
        char *group;             /* the primary group's name where known already (NULL: NSS is asked for %g) */
} UserRecord;

/* A canonical name NSS gave that we serve: whatever the directory calls its users
 * (alice@corp.example, CORP\\alice, "John Smith") but one path component (no '/', not "." or
 * "..", at most NAME_MAX bytes) of valid UTF-8 without control characters, because it names the
 * view's directory, its state file and its pin, and appears on the bus and in the journal.
 * Never a test of what a caller typed: that goes to NSS as it is (docs/security.md). */
bool valid_user_name(const char *s);

/* NSS lookups (getpwnam_r/getpwuid_r): -ESRCH when there is no such user. The name is asked as
 * it is, whatever its shape (NSS decides who it is); the record carries the canonical name,
 * which may differ from it ("ALICE" → "alice"). */
int user_record_by_name(const char *name, UserRecord *ret);
int user_record_by_uid(uid_t uid, UserRecord *ret);
void user_record_done(UserRecord *u);

/* NSS getgrgid_r: -ESRCH when the gid has no name. */
int group_name_by_gid(gid_t gid, char **ret);

/* Who a user is to the kernel, from NSS: what the daemon acts as when it acts "as the
 * caller" (uid from the bus; gid and groups never from /proc, which the caller controls). */
typedef struct Credentials {
        uid_t uid;
        gid_t gid;
        gid_t *groups;           /* supplementary groups, the primary one included */
        size_t n_groups;
} Credentials;

int user_credentials_by_uid(uid_t uid, Credentials *ret);
/* The same for a record already looked up (its groups are still NSS's). */
int user_credentials_from_record(const UserRecord *u, Credentials *ret);
void credentials_done(Credentials *c);

/* Names of all groups of the user (primary first), NULL-terminated. */
int user_group_names(const char *name, gid_t gid, char ***ret);
