/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>

#include "bus-util.h"
#include "log.h"
#include "text-escape.h"
#include "user-lookup-child.h"
#include "user-lookup.h"

/* The request is the name as asked, the key too; the answer a UserRecord. */

static int append_name(sd_bus_message *m, const void *name) {
        return sd_bus_message_append(m, "s", name);
}

static int read_answer(sd_bus_message *reply, const void *name, void **ret, NsmError *error) {
        _cleanup_(user_record_done) UserRecord u = {};
        UserRecord *p;
        int r;

        r = bus_message_read_bytes(reply, &u.name);
        if (r >= 0)
                r = sd_bus_message_read(reply, "uu", &u.uid, &u.gid);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &u.home);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &u.shell);
        if (r >= 0 && (u.uid == (uid_t) -1 || u.gid == (gid_t) -1))
                r = -EBADMSG;
        if (r < 0)
                return nsm_error_set_errnof(error, r, "Malformed answer of the lookup of a user.");
        if (!valid_user_name(u.name)) {
                _cleanup_free_ char *shown = text_escape(u.name);
                /* Logged: the administrator's directory holds a name we cannot serve. */
                log_warning("NSS names UID %u '%s', which cannot name a view (a '/', '.' or '..', "
                            "control characters, invalid UTF-8, or longer than NAME_MAX).", (unsigned) u.uid,
                            shown ?: "?");
                return nsm_error_setf(error, NSM_ERROR_NO_SUCH_USER, "NSS names UID %u '%s', which cannot name a view.",
                                      (unsigned) u.uid, shown ?: "?");
        }
        p = memdup(&u, sizeof u);
        if (!p)
                return nsm_error_set_errnof(error, -ENOMEM, NULL);
        u = (UserRecord) {};
        *ret = p;
        return 0;
}

static void answer_free(void *answer) {
        user_record_done(answer);
        free(answer);
}

static const LookupType user_lookup_type = {
        .interface = &user_lookup_interface,
        .append = append_name,
        .read_answer = read_answer,
        .request_free = free,
        .answer_free = answer_free,
        .per_uid_max = USER_LOOKUPS_PER_UID_MAX,
        .users_max = USER_LOOKUPS_USERS_MAX,
        .what = "user lookups",
        .users_what = "user lookups of callers",
        .cache_usec = USER_LOOKUP_CACHE_USEC,
        .cache_max = USER_LOOKUP_CACHE_MAX,
};

int user_lookups_new(ChildSet *children, UserLookups **ret) {
        return lookup_cache_new(children, &user_lookup_type, ret);
}

static int copy_record(const UserRecord *u, UserRecord *ret) {
        *ret = (UserRecord) { .name = strdup(u->name), .uid = u->uid, .gid = u->gid, .home = strdup(u->home),
                              .shell = strdup(u->shell) };
        if (!ret->name || !ret->home || !ret->shell) {
                user_record_done(ret);
                return -ENOMEM;
        }
        return 1;
}

int user_lookup(UserLookups *l, const char *name, uid_t caller, uint64_t deadline, UserLookupDone done, void *userdata,
                UserRecord *ret, NsmError *error) {
        _cleanup_free_ char *description = NULL;
        char *request = strdup(name);
        const void *answer;
        int r;

        if (!request)
                return nsm_error_set_errnof(error, -ENOMEM, NULL);
        if (asprintf(&description, "Looking up a user for UID %u", (unsigned) caller) < 0)
                description = NULL;
        r = lookup_cache_ask(l, name, request, caller, deadline, description, "looking up a user", done, userdata,
                             &answer, error);
        if (r <= 0)
                return r;
        r = copy_record(answer, ret);
        return r < 0 ? nsm_error_set_errnof(error, r, NULL) : 1;
}

int user_lookup_cached(UserLookups *l, const char *name, UserRecord *ret) {
        const void *answer = NULL;

        return lookup_cache_peek(l, name, &answer) > 0 && answer && copy_record(answer, ret) > 0;
}

bool user_lookup_answered(UserLookups *l, const char *name) {
        return lookup_cache_peek(l, name, NULL) > 0;
}
