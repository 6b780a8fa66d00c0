/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-util.h"
#include "group-lookup-child.h"
#include "group-lookup.h"
#include "strv.h"

/* Far above any site's: an answer longer than this is no answer (NGROUPS_MAX is 65536). */
#define GROUPS_MAX 65536U

/* Keyed by the uid in decimal: one lookup per user in flight, joined by the other calls for her. */
typedef struct Request {
        char *name;              /* the name and primary gid the groups are asked for */
        uid_t uid;
        gid_t gid;
        bool with_names;
} Request;

typedef struct Answer {
        gid_t *groups;
        size_t n_groups;
        char **names;            /* when names were asked for */
        char *primary_name;      /* the same, the primary group's (NULL: it has none) */
} Answer;

static void request_free(void *p) {
        Request *q = p;

        if (!q)
                return;
        free(q->name);
        free(q);
}

static void answer_free(void *p) {
        Answer *a = p;

        if (!a)
                return;
        free(a->groups);
        strv_free(a->names);
        free(a->primary_name);
        free(a);
}

static int append_request(sd_bus_message *m, const void *p) {
        const Request *q = p;

        return sd_bus_message_append(m, "uub", (uint32_t) q->uid, (uint32_t) q->gid, (int) q->with_names);
}

static int read_groups(sd_bus_message *reply, const Request *q, Answer *a) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *primary = NULL, *name = NULL;
        const void *gids;
        size_t size;
        int r;

        r = sd_bus_message_read_array(reply, 'u', &gids, &size);
        if (r < 0)
                return r;
        /* The primary gid first, as the child was asked: what she acts as must be hers. */
        if (size == 0 || size / sizeof(gid_t) > GROUPS_MAX || ((const gid_t *) gids)[0] != q->gid)
                return -EBADMSG;
        for (size_t i = 0; i < size / sizeof(gid_t); i++)
                if (((const gid_t *) gids)[i] == (gid_t) -1)
                        return -EBADMSG;
        r = bus_message_read_bytes_strv(reply, &names);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &primary);
        if (r >= 0)
                r = bus_message_read_bytes(reply, &name);
        if (r < 0)
                return r;
        /* The name the child asked by: NSS's for the uid now, which after a rename in the
         * directory is not the one her view keeps; the groups are her uid's either way. */
        if (!*name)
                return -EBADMSG;
        if (strv_length(names) > GROUPS_MAX || (!q->with_names && (strv_length(names) > 0 || *primary)))
                return -EBADMSG;
        a->groups = memdup(gids, size);
        if (!a->groups)
                return -ENOMEM;
        a->n_groups = size / sizeof(gid_t);
        if (q->with_names) {
                a->names = names ? TAKE_PTR(names) : calloc(1, sizeof(char *));
                if (!a->names)
                        return -ENOMEM;
                if (*primary)
                        a->primary_name = TAKE_PTR(primary);
        }
        return 0;
}

static int read_answer(sd_bus_message *reply, const void *p, void **ret, NsmError *error) {
        const Request *q = p;
        Answer *a = calloc(1, sizeof(Answer));
        int r = a ? read_groups(reply, q, a) : -ENOMEM;

        if (r < 0) {
                answer_free(a);
                return nsm_error_set_errnof(error, r, "Malformed answer of the lookup of the groups of UID %u.",
                                            (unsigned) q->uid);
        }
        *ret = a;
        return 0;
}

/* Her name and primary gid as asked, and the names if this call wants them (a failure is one). */
static bool serves(const void *cached, const void *answer, const void *request) {
        const Request *c = cached, *q = request;
        const Answer *a = answer;

        return c->gid == q->gid && streq(c->name, q->name) && (!a || c->with_names || !q->with_names);
}

static const LookupType group_lookup_type = {
        .interface = &group_lookup_interface,
        .append = append_request,
        .read_answer = read_answer,
        .serves = serves,
        .request_free = request_free,
        .answer_free = answer_free,
        .users_max = GROUP_LOOKUPS_USERS_MAX,
        .users_what = "lookups of callers' groups",
        .cache_usec = GROUP_LOOKUP_CACHE_USEC,
        .cache_max = GROUP_LOOKUP_CACHE_MAX,
};

int group_lookups_new(ChildSet *children, GroupLookups **ret) {
        return lookup_cache_new(children, &group_lookup_type, ret);
}

static int copy_answer(const Answer *a, const UserRecord *u, Credentials *ret, char ***ret_names, char **ret_primary,
                       NsmError *error) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *primary = NULL;

        if (ret_names) {
                names = calloc(1, sizeof(char *));
                for (char **n = a->names; names && n && *n; n++)
                        if (strv_extend(&names, *n) < 0)
                                names = strv_free(names);
                if (!names || (a->primary_name && !(primary = strdup(a->primary_name))))
                        return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        if (ret) {
                *ret = (Credentials) { .uid = u->uid, .gid = u->gid, .groups = memdup(a->groups, a->n_groups * sizeof(gid_t)),
                                       .n_groups = a->n_groups };
                if (!ret->groups)
                        return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        if (ret_names) {
                *ret_names = TAKE_PTR(names);
                if (ret_primary)
                        *ret_primary = TAKE_PTR(primary);
        }
        return 1;
}

int group_lookup(GroupLookups *l, const UserRecord *u, uid_t caller, uint64_t deadline, GroupLookupDone done,
                 void *userdata, Credentials *ret, char ***ret_names, char **ret_primary, NsmError *error) {
        _cleanup_free_ char *description = NULL;
        Request *q = calloc(1, sizeof(Request));
        const void *answer;
        char key[16], what[64];
        int r;

        if (!q || !(q->name = strdup(u->name))) {
                request_free(q);
                return nsm_error_set_errnof(error, -ENOMEM, NULL);
        }
        *q = (Request) { .name = q->name, .uid = u->uid, .gid = u->gid, .with_names = ret_names };
        snprintf(key, sizeof key, "%" PRIu32, (uint32_t) u->uid);
        if (asprintf(&description, "Looking up the groups of UID %u", (unsigned) u->uid) < 0)
                description = NULL;
        snprintf(what, sizeof what, "looking up the groups of UID %u", (unsigned) u->uid);
        r = lookup_cache_ask(l, key, q, caller, deadline, description, what, done, userdata, &answer, error);
        return r <= 0 ? r : copy_answer(answer, u, ret, ret_names, ret_primary, error);
}
