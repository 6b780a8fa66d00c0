/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <sys/stat.h>

#include "fs-util.h"
#include "log.h"
#include "login-rule.h"
#include "strv.h"
#include "text-escape.h"

/* The lists of ViewPolicy, in the order of the effect's characters 2 to 5 (login-filter.h);
 * characters 0 and 1 are PrivateTmp= and HideOtherHomes=. A setting that can make a policy
 * not empty (view_policy_is_empty()) belongs here too. */
static void policy_lists(ViewPolicy *p, char ***ret[static VIEW_SETTINGS - 2]) {
        ret[0] = &p->bind_paths;
        ret[1] = &p->bind_read_only_paths;
        ret[2] = &p->temporary_file_system;
        ret[3] = &p->inaccessible_paths;
}

static void policy_set(ViewPolicy *p, bool ret[static VIEW_SETTINGS]) {
        char ***lists[VIEW_SETTINGS - 2];

        policy_lists(p, lists);
        ret[0] = p->private_tmp;
        ret[1] = p->hide_other_homes;
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                ret[2 + i] = strv_length(*lists[i]) > 0;
}

/* One file's effect: its assignments (checked when the configuration was loaded) applied on
 * top of a policy with nothing set and on top of one with every setting set. Both set: it sets
 * it; neither: it unsets (resets) it; only the second: it does not touch it. */
static int file_effect(const ConfigAssignments *a, char ret[static VIEW_SETTINGS + 1]) {
        ViewPolicy none = {}, all = { .private_tmp = true, .hide_other_homes = true };
        char ***lists[VIEW_SETTINGS - 2];
        bool from_none[VIEW_SETTINGS], from_all[VIEW_SETTINGS];
        int r = 0;

        policy_lists(&all, lists);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(lists); i++)
                r = strv_extend(lists[i], "(set before)");
        if (r >= 0)
                r = config_assignments_apply(a, &none);
        if (r >= 0)
                r = config_assignments_apply(a, &all);
        if (r >= 0) {
                policy_set(&none, from_none);
                policy_set(&all, from_all);
                for (size_t i = 0; i < VIEW_SETTINGS; i++)
                        ret[i] = from_none[i] ? 'y' : from_all[i] ? '-' : 'n';
                ret[VIEW_SETTINGS] = 0;
        }
        view_policy_done(&none);
        view_policy_done(&all);
        return r;
}

static bool effect_touches(const char *effect) {
        return strspn(effect, "-") < VIEW_SETTINGS;
}

/* The effects of the group.d (or user.d) files that touch anything. */
static int files_effects(const PolicyFile *files, size_t n_files, ViewEffect **ret, size_t *ret_n) {
        ViewEffect *list = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; i < n_files; i++) {
                char effect[VIEW_SETTINGS + 1];
                ViewEffect *l;

                r = file_effect(&files[i].view, effect);
                if (r < 0)
                        break;
                if (!effect_touches(effect))
                        continue;
                l = realloc(list, (n + 1) * sizeof(ViewEffect));
                if (!l) {
                        r = -ENOMEM;
                        break;
                }
                list = l;
                list[n] = (ViewEffect) { .name = strdup(files[i].name) };
                if (!list[n].name) {
                        r = -ENOMEM;
                        break;
                }
                strcpy(list[n].effect, effect);
                n++;
        }
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(list[i].name);
                free(list);
                return r;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

int login_rule_compile(const ManagerConfig *c, LoginFilter *ret) {
        LoginFilter f = {
                .min_uid = c->min_uid,
                .login_without_view = c->login_without_view,
        };
        int r = 0;

        memset(f.view_main, '-', VIEW_SETTINGS);
        if (c->exclude_users && !(f.exclude_users = strv_split_whitespace("")))
                r = -ENOMEM;
        for (char **u = c->exclude_users; r >= 0 && u && *u; u++)
                r = strv_extend(&f.exclude_users, *u);
        if (c->login_refused_message && !(f.refused_message = strdup(c->login_refused_message)))
                r = -ENOMEM;
        if (r >= 0 && f.login_without_view == LOGIN_WITHOUT_VIEW_RESTRICTED) {
                r = file_effect(&c->view, f.view_main);
                if (r >= 0)
                        r = files_effects(c->group_policies, c->n_group_policies, &f.view_groups, &f.n_view_groups);
                if (r >= 0)
                        r = files_effects(c->user_policies, c->n_user_policies, &f.view_users, &f.n_view_users);
        }
        if (r < 0) {
                login_filter_done(&f);
                return r;
        }
        *ret = f;
        return 0;
}

/* One word per name (text_escape_word()): a group's name may hold blanks. */
static int fprint_effects(FILE *s, const char *key, const ViewEffect *list, size_t n) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *word = text_escape_word(list[i].name);
                if (!word)
                        return -ENOMEM;
                fprintf(s, "%s=%s %s\n", key, word, list[i].effect);
        }
        return 0;
}

int login_filter_format(const LoginFilter *f, char **ret) {
        _cleanup_strv_free_ char **words = NULL;
        _cleanup_free_ char *list = NULL, *buf = NULL;
        size_t size = 0;
        FILE *s;
        int r = 0;

        words = strv_split_whitespace("");
        for (char **u = f->exclude_users; words && u && *u; u++) {
                char *w = text_escape_word(*u);
                if (!w || strv_consume(&words, w) < 0)
                        return -ENOMEM;
        }
        list = words ? strv_join(words, " ") : NULL;
        if (!list)
                return -ENOMEM;
        s = open_memstream(&buf, &size);
        if (!s)
                return -ENOMEM;
        fprintf(s, "# Written by nsmanagerd for pam_nsmanager (MinUID=, ExcludeUsers=, LoginWithoutView=). Do not edit.\n"
                   "MIN_UID=%u\nEXCLUDE_USERS=%s\n", (unsigned) f->min_uid, list);
        if (f->login_without_view >= 0)
                fprintf(s, "LOGIN_WITHOUT_VIEW=%s\n", login_without_view_to_string(f->login_without_view));
        if (f->login_without_view == LOGIN_WITHOUT_VIEW_RESTRICTED) {
                fprintf(s, "VIEW_MAIN=%s\n", f->view_main);
                r = fprint_effects(s, "VIEW_GROUP", f->view_groups, f->n_view_groups);
                if (r >= 0)
                        r = fprint_effects(s, "VIEW_USER", f->view_users, f->n_view_users);
        }
        if (f->refused_message)
                fprintf(s, "LOGIN_REFUSED_MESSAGE=%s\n", f->refused_message);
        if (fclose(s) != 0 || r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* Atomically, readable by all: a PAM stack run by a user's own program reads it too. */
static int write_filter(const char *path, const char *text, int flags) {
        int r;

        r = mkdir_parents(path, 0755);
        if (r >= 0)
                r = write_file_atomic(path, text, strlen(text), flags);
        if (r >= 0 && chmod(path, 0644) < 0)
                r = -errno;
        return r;
}

int login_rule_publish(const LoginFilter *f) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = login_filter_format(f, &text);
        if (r < 0)
                return log_oom();
        r = write_filter(NSM_LOGIN_FILTER_PERSISTENT_FILE, text, WRITE_FILE_SYNC);
        if (r < 0)
                log_warning_errno(r, "Failed to write %s, ignoring (until the daemon's first start after a reboot, "
                                  "pam_nsmanager follows an older one, or allows): %m", NSM_LOGIN_FILTER_PERSISTENT_FILE);
        r = write_filter(NSM_LOGIN_FILTER_FILE, text, 0);
        if (r < 0)
                return log_warning_errno(r, "Failed to publish %s for pam_nsmanager, ignoring (logins of users we refuse "
                                         "then ask over the bus): %m", NSM_LOGIN_FILTER_FILE);
        return 0;
}
