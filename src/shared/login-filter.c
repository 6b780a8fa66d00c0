/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>

#include "login-filter.h"
#include "macros.h"
#include "parse-util.h"
#include "strv.h"

void login_filter_done(LoginFilter *f) {
        f->exclude_users = strv_free(f->exclude_users);
}

int login_filter_parse(FILE *f, LoginFilter *ret) {
        _cleanup_free_ char *line = NULL;
        LoginFilter lf = { .min_uid = (uid_t) -1 };
        size_t n = 0;
        int r = 0;

        while (getline(&line, &n, f) >= 0) {
                line[strcspn(line, "\n")] = 0;
                if (!line[0] || line[0] == '#')
                        continue;
                if (strncmp(line, "MIN_UID=", 8) == 0) {
                        if (parse_uid(line + 8, &lf.min_uid) < 0) {
                                r = -EINVAL;
                                break;
                        }
                } else if (strncmp(line, "EXCLUDE_USERS=", 14) == 0) {
                        strv_free(lf.exclude_users);
                        lf.exclude_users = strv_split_whitespace(line + 14);
                        if (!lf.exclude_users) {
                                r = -ENOMEM;
                                break;
                        }
                }
        }
        /* Without MIN_UID the file says nothing we can rely on. */
        if (r >= 0 && lf.min_uid == (uid_t) -1)
                r = -EINVAL;
        if (r < 0) {
                login_filter_done(&lf);
                return r;
        }
        *ret = lf;
        return 0;
}

int login_filter_read(const char *path, LoginFilter *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        return login_filter_parse(f, ret);
}

int login_filter_write(const char *path, uid_t min_uid, char *const *exclude_users) {
        _cleanup_free_ char *tmp = NULL, *dir = NULL, *list = strv_join(exclude_users, " ");
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        if (!list || asprintf(&tmp, "%s.tmp", path) < 0 || !(dir = strdup(path)))
                return -ENOMEM;
        *strrchr(dir, '/') = 0;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                safe_close(fd);
                (void) unlink(tmp);
                return r;
        }
        fprintf(f, "# Written by nsmanagerd for pam_nsmanager (MinUID=, ExcludeUsers=). Do not edit.\n"
                   "MIN_UID=%u\nEXCLUDE_USERS=%s\n", (unsigned) min_uid, list);
        if (fflush(f) != 0 || rename(tmp, path) < 0) {
                r = -errno;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

bool login_filter_excludes(const LoginFilter *f, const char *user, uid_t uid) {
        char number[32];

        if (uid == 0 || uid < f->min_uid)
                return true;
        snprintf(number, sizeof number, "%u", (unsigned) uid);
        return strv_contains((const char *const *) f->exclude_users, user) ||
               strv_contains((const char *const *) f->exclude_users, number);
}
