/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Which users get a namespace, as the daemon decides from MinUID= and ExcludeUsers=, published
 * by nsmanagerd in a file under /run for pam_nsmanager. Every cron job of every system user
 * loads the module (common-session-noninteractive): it must skip the users the daemon would
 * refuse without a bus call, and without parsing the daemon's configuration itself. The file
 * is state, not configuration: the daemon rewrites it at start and at ReloadConfig.
 *
 *   # … comment …
 *   MIN_UID=1000
 *   EXCLUDE_USERS=dave 1234
 */

#define NSM_LOGIN_FILTER_FILE "/run/nsmanager/login-filter"

typedef struct LoginFilter {
        uid_t min_uid;
        char **exclude_users;    /* names or uids */
} LoginFilter;

void login_filter_done(LoginFilter *f);
/* -EINVAL on a malformed file (unknown keys are ignored, for newer daemons). */
int login_filter_parse(FILE *f, LoginFilter *ret);
/* -ENOENT if the daemon has not published one. */
int login_filter_read(const char *path, LoginFilter *ret);
/* Atomically (temporary file, then rename), creating the directory if needed. */
int login_filter_write(const char *path, uid_t min_uid, char *const *exclude_users);
/* True if the daemon would refuse a namespace to this user (root always). */
bool login_filter_excludes(const LoginFilter *f, const char *user, uid_t uid);
