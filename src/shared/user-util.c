/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <grp.h>
#include <limits.h>
#include <pwd.h>

#include "strv.h"
#include "macros.h"
#include "text-escape.h"
#include "user-util.h"

/* More groups than this is a broken NSS module, not a user. */
#define NGROUPS_MAX_SANE 65536

bool valid_user_name(const char *s) {
        return s && *s && strlen(s) <= NAME_MAX && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..") &&
               text_is_clean(s);
}

static int user_record_from_passwd(const struct passwd *pw, UserRecord *ret) {
        UserRecord u = {
                .uid = pw->pw_uid,
                .gid = pw->pw_gid,
                .name = strdup(pw->pw_name),
                .home = strdup(pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/"),
                .shell = strdup(pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh"),
        };
        if (!u.name || !u.home || !u.shell) {
                user_record_done(&u);
                return -ENOMEM;
        }
        *ret = u;
        return 0;
}

/* The *_r NSS calls want a buffer large enough for the entry: start with what sysconf()
 * suggests, double on ERANGE, give up at 1 MiB (no sane passwd or group entry is that big). */
#define NSS_BUFFER_MAX (1024 * 1024)

static size_t nss_buffer_initial(int sysconf_name) {
        long size = sysconf(sysconf_name);
        return size > 0 ? (size_t) size : 4096;
}

static bool nss_buffer_retry(int r, size_t *bufsize) {
        if (r != ERANGE || *bufsize >= NSS_BUFFER_MAX)
                return false;
        *bufsize *= 2;
        return true;
}

static int user_record_lookup(const char *name, uid_t uid, UserRecord *ret) {
        struct passwd pw, *result = NULL;
        size_t bufsize = nss_buffer_initial(_SC_GETPW_R_SIZE_MAX);

        for (;;) {
                _cleanup_free_ char *buf = malloc(bufsize);
                int r;

                if (!buf)
                        return -ENOMEM;
                r = name ? getpwnam_r(name, &pw, buf, bufsize, &result) : getpwuid_r(uid, &pw, buf, bufsize, &result);
                if (nss_buffer_retry(r, &bufsize))
                        continue;
                if (r != 0)
                        return -r;
                if (!result)
                        return -ESRCH;
                return user_record_from_passwd(result, ret);
        }
}

int user_record_by_name(const char *name, UserRecord *ret) {
        /* Only what getpwnam_r cannot take: nothing NSS could answer for. */
        if (!name || !*name)
                return -ESRCH;
        return user_record_lookup(name, 0, ret);
}

int user_record_by_uid(uid_t uid, UserRecord *ret) {
        return user_record_lookup(NULL, uid, ret);
}

void user_record_done(UserRecord *u) {
        free(u->name);
        free(u->home);
        free(u->shell);
        free(u->group);
        *u = (UserRecord) {};
}

int group_name_by_gid(gid_t gid, char **ret) {
        size_t bufsize = nss_buffer_initial(_SC_GETGR_R_SIZE_MAX);

        for (;;) {
                _cleanup_free_ char *buf = malloc(bufsize);
                struct group gr, *result = NULL;
                int r;

                if (!buf)
                        return -ENOMEM;
                r = getgrgid_r(gid, &gr, buf, bufsize, &result);
                if (nss_buffer_retry(r, &bufsize))
                        continue;
                if (r != 0)
                        return -r;
                if (!result)
                        return -ESRCH;
                *ret = strdup(result->gr_name);
                return *ret ? 0 : -ENOMEM;
        }
}

/* All gids of the user, primary first (getgrouplist, which grows its answer as needed). */
static int user_gids(const char *name, gid_t gid, gid_t **ret, size_t *ret_n) {
        _cleanup_free_ gid_t *gids = NULL;
        int n = 32;

        for (;;) {
                int want = n;
                free(gids);
                gids = malloc(sizeof(gid_t) * want);
                if (!gids)
                        return -ENOMEM;
                if (getgrouplist(name, gid, gids, &n) >= 0)
                        break;
                if (n <= want || n > NGROUPS_MAX_SANE)
                        return -EIO;
        }
        *ret = TAKE_PTR(gids);
        *ret_n = (size_t) n;
        return 0;
}

int user_credentials_from_record(const UserRecord *u, Credentials *ret) {
        Credentials c = { .uid = u->uid, .gid = u->gid };
        int r;

        r = user_gids(u->name, u->gid, &c.groups, &c.n_groups);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

int user_credentials_by_uid(uid_t uid, Credentials *ret) {
        _cleanup_(user_record_done) UserRecord u = {};
        int r;

        r = user_record_by_uid(uid, &u);
        if (r < 0)
                return r;
        return user_credentials_from_record(&u, ret);
}

void credentials_done(Credentials *c) {
        c->groups = mfree(c->groups);
        c->n_groups = 0;
}

int user_group_names(const char *name, gid_t gid, char ***ret) {
        _cleanup_free_ gid_t *gids = NULL;
        _cleanup_strv_free_ char **names = calloc(1, sizeof(char *));
        size_t n;
        int r;

        if (!names)
                return -ENOMEM;
        r = user_gids(name, gid, &gids, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *g = NULL;
                if (group_name_by_gid(gids[i], &g) < 0)
                        continue;       /* a gid without a name has no group.d file either */
                if (strv_contains((const char *const *) names, g))
                        continue;
                if (strv_extend(&names, g) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(names);
        return 0;
}
