/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "login-filter.h"
#include "macros.h"
#include "parse-util.h"
#include "string-table.h"
#include "strv.h"
#include "text-escape.h"

static const char *const login_without_view_table[_LOGIN_WITHOUT_VIEW_MAX] = {
        [LOGIN_WITHOUT_VIEW_RESTRICTED] = "restricted",
        [LOGIN_WITHOUT_VIEW_ALLOW] = "allow",
        [LOGIN_WITHOUT_VIEW_DENY] = "deny",
};

DEFINE_STRING_TABLE_LOOKUP(login_without_view, LoginWithoutView);

static void view_effects_free(ViewEffect *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(e[i].name);
        free(e);
}

void login_filter_done(LoginFilter *f) {
        f->exclude_users = strv_free(f->exclude_users);
        view_effects_free(f->view_groups, f->n_view_groups);
        view_effects_free(f->view_users, f->n_view_users);
        f->view_groups = f->view_users = NULL;
        f->n_view_groups = f->n_view_users = 0;
        f->refused_message = mfree(f->refused_message);
}

bool login_refused_message_valid(const char *text) {
        _cleanup_free_ char *escaped = NULL;

        if (!text || !text[0] || strlen(text) > LOGIN_REFUSED_MESSAGE_MAX)
                return false;
        /* Escaping changes nothing only in text without controls or invalid UTF-8 (and '\'). */
        escaped = text_escape(text);
        return escaped && streq(escaped, text);
}

static bool valid_effect(const char *s) {
        if (strlen(s) != VIEW_SETTINGS)
                return false;
        for (; *s; s++)
                if (*s != 'y' && *s != 'n' && *s != '-')
                        return false;
        return true;
}

/* "NAME EFFECT", appended to *list; NAME escaped (text_escape_word()). */
static int parse_view_entry(const char *value, ViewEffect **list, size_t *n) {
        const char *space = strchr(value, ' ');
        _cleanup_free_ char *word = NULL;
        ViewEffect *l;
        int r;

        if (!space || space == value || strchr(space + 1, ' ') || !valid_effect(space + 1))
                return -EINVAL;
        word = strndup(value, space - value);
        if (!word)
                return -ENOMEM;
        l = realloc(*list, (*n + 1) * sizeof(ViewEffect));
        if (!l)
                return -ENOMEM;
        *list = l;
        r = text_unescape(word, &l[*n].name);
        if (r < 0)
                return r;
        strcpy(l[*n].effect, space + 1);
        (*n)++;
        return 0;
}

int login_filter_parse(FILE *f, LoginFilter *ret) {
        _cleanup_free_ char *line = NULL;
        LoginFilter lf = { .min_uid = (uid_t) -1, .login_without_view = _LOGIN_WITHOUT_VIEW_INVALID };
        size_t n = 0;
        int r = 0;

        memset(lf.view_main, '-', VIEW_SETTINGS);
        while (r >= 0 && getline(&line, &n, f) >= 0) {
                line[strcspn(line, "\n")] = 0;
                if (!line[0] || line[0] == '#')
                        continue;
                if (strncmp(line, "MIN_UID=", 8) == 0) {
                        if (parse_uid(line + 8, &lf.min_uid) < 0)
                                r = -EINVAL;
                } else if (strncmp(line, "EXCLUDE_USERS=", 14) == 0) {
                        strv_free(lf.exclude_users);
                        lf.exclude_users = strv_split_whitespace(line + 14);
                        if (!lf.exclude_users)
                                r = -ENOMEM;
                        for (char **u = lf.exclude_users; r >= 0 && u && *u; u++) {
                                char *plain = NULL;
                                r = text_unescape(*u, &plain);
                                /* A name is one word, escaped or not: what unescapes to nothing or
                                 * to blanks is no user name the daemon writes (a fuzzer's find). */
                                if (r >= 0 && (!*plain || strpbrk(plain, " \t\n"))) {
                                        free(plain);
                                        r = -EINVAL;
                                } else if (r >= 0) {
                                        free(*u);
                                        *u = plain;
                                }
                        }
                } else if (strncmp(line, "LOGIN_WITHOUT_VIEW=", 19) == 0) {
                        lf.login_without_view = login_without_view_from_string(line + 19);
                        if (lf.login_without_view < 0)
                                r = -EINVAL;
                } else if (strncmp(line, "VIEW_MAIN=", 10) == 0) {
                        if (valid_effect(line + 10))
                                strcpy(lf.view_main, line + 10);
                        else
                                r = -EINVAL;
                } else if (strncmp(line, "VIEW_GROUP=", 11) == 0)
                        r = parse_view_entry(line + 11, &lf.view_groups, &lf.n_view_groups);
                else if (strncmp(line, "VIEW_USER=", 10) == 0)
                        r = parse_view_entry(line + 10, &lf.view_users, &lf.n_view_users);
                else if (strncmp(line, "LOGIN_REFUSED_MESSAGE=", 22) == 0) {
                        free(lf.refused_message);
                        lf.refused_message = NULL;
                        if (!login_refused_message_valid(line + 22))
                                r = -EINVAL;
                        else if (!(lf.refused_message = strdup(line + 22)))
                                r = -ENOMEM;
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

bool login_filter_excludes(const LoginFilter *f, const char *user, uid_t uid) {
        char number[32];

        if (uid == 0 || uid < f->min_uid)
                return true;
        snprintf(number, sizeof number, "%u", (unsigned) uid);
        return strv_contains((const char *const *) f->exclude_users, user) ||
               strv_contains((const char *const *) f->exclude_users, number);
}

bool login_filter_needs_groups(const LoginFilter *f) {
        return f && f->login_without_view == LOGIN_WITHOUT_VIEW_RESTRICTED && f->n_view_groups > 0;
}

static const ViewEffect *find_effect(const ViewEffect *list, size_t n, const char *name) {
        for (size_t i = 0; name && i < n; i++)
                if (streq(list[i].name, name))
                        return &list[i];
        return NULL;
}

static void apply_effect(bool set[static VIEW_SETTINGS], const char *effect) {
        for (size_t i = 0; i < VIEW_SETTINGS; i++)
                if (effect[i] != '-')
                        set[i] = effect[i] == 'y';
}

bool login_filter_allows_without_view(const LoginFilter *f, const char *user, char *const *groups, bool groups_known) {
        bool set[VIEW_SETTINGS] = {};
        const ViewEffect *e;

        if (!f || f->login_without_view < 0 || f->login_without_view == LOGIN_WITHOUT_VIEW_ALLOW)
                return true;
        if (f->login_without_view == LOGIN_WITHOUT_VIEW_DENY)
                return false;

        /* restricted: the user's effective policy, file by file, as the daemon merges it. */
        if (f->n_view_groups > 0 && !groups_known)
                return false;
        apply_effect(set, f->view_main);
        for (char *const *g = groups; groups_known && g && *g; g++)
                if ((e = find_effect(f->view_groups, f->n_view_groups, *g)))
                        apply_effect(set, e->effect);
        if (!user) {
                /* Who it is is unknown: so is whether a file of hers resets the policy. */
                if (f->n_view_users > 0)
                        return false;
        } else if ((e = find_effect(f->view_users, f->n_view_users, user)))
                apply_effect(set, e->effect);
        for (size_t i = 0; i < VIEW_SETTINGS; i++)
                if (set[i])
                        return false;
        return true;
}
