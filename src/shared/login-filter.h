/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* What pam_nsmanager needs to know of the daemon's configuration, published by nsmanagerd for
 * the module, which parses no configuration of its own:
 *
 *  - which users get a namespace (MinUID=, ExcludeUsers=): every cron job of every system user
 *    loads the module (common-session-noninteractive), and must skip the users the daemon
 *    would refuse without a bus call;
 *  - LoginWithoutView=, compiled: whether a login may go on in the host namespace when its
 *    view cannot be entered. For `restricted`, what each file of the [View] policy does to
 *    each setting, so that the module can tell whether a user's effective policy is empty
 *    from her name and groups alone.
 *
 * The file is state, not configuration: the daemon rewrites it at start and at ReloadConfig,
 * under /run (this boot's) and under /var/lib (so that the rule holds after a reboot, before
 * the daemon's first start):
 *
 *   # … comment …
 *   MIN_UID=1000
 *   EXCLUDE_USERS=dave 1234
 *   LOGIN_WITHOUT_VIEW=restricted
 *   VIEW_MAIN=y-----
 *   VIEW_GROUP=students --y---
 *   VIEW_USER=bob n-----
 *   LOGIN_REFUSED_MESSAGE=Your login is refused: call the help desk.
 *   VIEW_GROUP=domain\x20users@corp.example --y---
 *
 * Names, of users and groups, are the canonical ones NSS gives, written as text_escape_word()
 * (text-escape.h) does, so that one with a blank (AD's "domain users") stays one word; the module
 * matches them with the canonical name of the user who logs in, never with what was typed.
 *
 * A VIEW_* effect has one character per setting, in the order of VIEW_SETTINGS below: 'y' the
 * file leaves that setting set (non-empty), 'n' it leaves it unset (it resets it, or says no),
 * '-' it does not touch it. VIEW_MAIN is the main file with its drop-ins; the group.d and
 * user.d files that touch nothing are not listed. A user's effective policy is the main file's,
 * then her groups' in the order user_group_names() gives them (as the daemon reads them when it
 * builds her view), then her own: empty where no setting is left 'y'.
 *
 * LOGIN_REFUSED_MESSAGE (LoginRefusedMessage=) is the line the module shows a login it refuses;
 * without it, LOGIN_REFUSED_MESSAGE_DEFAULT. One line of text with no control character (the
 * daemon's parser refuses any, and so does login_filter_parse()). */

#define NSM_LOGIN_FILTER_FILE "/run/nsmanager/login-filter"
/* The copy that survives a reboot. */
#define NSM_LOGIN_FILTER_PERSISTENT_FILE "/var/lib/nsmanager/login-filter"

/* What a refused login is told: neutral, nothing of the reason (that goes to the journal). Not
 * "refused": under `optional` (which the module cannot see) the login goes on regardless. */
#define LOGIN_REFUSED_MESSAGE_DEFAULT \
        "Your view of this machine could not be set up. Please contact your administrator."
/* LoginRefusedMessage= in bytes */
#define LOGIN_REFUSED_MESSAGE_MAX 512

typedef enum LoginWithoutView {
        LOGIN_WITHOUT_VIEW_RESTRICTED,   /* deny users whose effective [View] policy is not empty */
        LOGIN_WITHOUT_VIEW_ALLOW,
        LOGIN_WITHOUT_VIEW_DENY,
        _LOGIN_WITHOUT_VIEW_MAX,
        _LOGIN_WITHOUT_VIEW_INVALID = -EINVAL,
} LoginWithoutView;

const char *login_without_view_to_string(LoginWithoutView v);
LoginWithoutView login_without_view_from_string(const char *s);

/* The [View] settings whose emptiness the effects record, in this order: PrivateTmp,
 * HideOtherHomes, BindPaths, BindReadOnlyPaths, TemporaryFileSystem, InaccessiblePaths. */
#define VIEW_SETTINGS 6

typedef struct ViewEffect {
        char *name;                       /* the group or user */
        char effect[VIEW_SETTINGS + 1];
} ViewEffect;

typedef struct LoginFilter {
        uid_t min_uid;
        char **exclude_users;             /* names or uids */
        LoginWithoutView login_without_view; /* _INVALID: the file does not say (allow) */
        char view_main[VIEW_SETTINGS + 1];
        ViewEffect *view_groups;
        size_t n_view_groups;
        ViewEffect *view_users;
        size_t n_view_users;
        char *refused_message;            /* LOGIN_REFUSED_MESSAGE, NULL: the default */
} LoginFilter;

void login_filter_done(LoginFilter *f);
/* -EINVAL on a malformed file (unknown keys are ignored, for newer daemons). */
int login_filter_parse(FILE *f, LoginFilter *ret);
/* -ENOENT if the daemon has not published one. */
int login_filter_read(const char *path, LoginFilter *ret);
/* True if the daemon would refuse a namespace to this user (root always). */
/* Whether 'text' may be LoginRefusedMessage=: not empty, at most LOGIN_REFUSED_MESSAGE_MAX
 * bytes, valid UTF-8 without a control character (it is written to the user's terminal). */
bool login_refused_message_valid(const char *text);
bool login_filter_excludes(const LoginFilter *f, const char *user, uid_t uid);

/* Whether deciding about a login without its view needs the user's groups. */
bool login_filter_needs_groups(const LoginFilter *f);
/* Whether 'user' may log in without her view, by LoginWithoutView= as published. 'groups' are
 * her groups' names (user_group_names()) with groups_known, else unknown (the lookup failed:
 * under `restricted` that counts as a policy, where any group has one). A filter that does not
 * say, or no filter at all (NULL: none was ever published), allows. */
bool login_filter_allows_without_view(const LoginFilter *f, const char *user, char *const *groups, bool groups_known);
