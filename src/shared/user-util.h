/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

typedef struct UserRecord {
        char *name;
        uid_t uid;
        gid_t gid;
        char *home;
        char *shell;
} UserRecord;

/* A POSIX-ish user name as useradd accepts it: [a-zA-Z_][a-zA-Z0-9_.-]*[$]?, at most 32
 * characters. Anything else can never name a user we serve (and never a path component). */
bool valid_user_name(const char *s);

/* NSS lookups (getpwnam_r/getpwuid_r): -ESRCH when there is no such user. */
int user_record_by_name(const char *name, UserRecord *ret);
int user_record_by_uid(uid_t uid, UserRecord *ret);
void user_record_done(UserRecord *u);

/* NSS getgrgid_r: -ESRCH when the gid has no name. */
int group_name_by_gid(gid_t gid, char **ret);

/* The ids of all groups of the user, 'gid' (the primary group) first: getgrouplist(), i.e. NSS,
 * never /proc. */
int user_group_ids(const char *name, gid_t gid, gid_t **ret, int *ret_n);

/* Names of all groups of the user (primary first), NULL-terminated. */
int user_group_names(const char *name, gid_t gid, char ***ret);
