/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "bus-creds.h"
#include "bus-errors.h"
#include "log.h"
#include "bus-path.h"
#include "id-map.h"
#include "time-util.h"
#include "namespace.h"
#include "strv.h"
#include "text-escape.h"
#include "user-util.h"

/* One argument of a method: how to read it, and the field it goes to (NULL: read, not
 * recorded). Types: 's' string, 't' flags (the field in hex, as the catalog explains it; the
 * message names the bits of 'bits'), 'd' a 't' shown in decimal (a mount id), 'y' an "ay" path
 * (its bytes), 'b' boolean, 'a' array of strings (joined by spaces), 'h' an fd. */
typedef struct AuditArg {
        char type;
        const char *field;
        const char *const *bits;    /* 't': the name of bit 0, 1, … (NULL-terminated) */
} AuditArg;

#define BITS(...) ((const char *const[]) { __VA_ARGS__, NULL })

#define AUDIT_ARGS_MAX 8

typedef struct AuditMethod {
        const char *interface;
        const char *member;
        const char *message_id;     /* catalog/nsmanager.catalog */
        const char *what;           /* for MESSAGE= */
        AuditArg args[AUDIT_ARGS_MAX];
} AuditMethod;

static const AuditMethod audit_methods[] = {
        { NSM_MANAGER_INTERFACE, "CreateNamespace", "b064cde38c59441c9b83ad891b2d6284", "create the namespace",
          { { 's', "NSM_USER" } } },
        { NSM_MANAGER_INTERFACE, "RemoveNamespace", "73d2b3853694401c8f64b9dabd57a931", "remove the namespace",
          { { 's', "NSM_USER" } } },
        { NSM_NAMESPACE_INTERFACE, "Remove", "73d2b3853694401c8f64b9dabd57a931", "remove the namespace", {} },
        { NSM_MANAGER_INTERFACE, "OpenSession", "cfa8a652a6e54d6680421973c246d67a", "open a session",
          { { 's', "NSM_USER" }, { 's', "NSM_SESSION" } } },
        { NSM_MANAGER_INTERFACE, "CloseSession", "bc918c7ba5da4f2689b3a711bfc8c0e9", "close a session",
          { { 's', "NSM_USER" }, { 's', "NSM_SESSION" } } },
        { NSM_MANAGER_INTERFACE, "ShareSubtree", "b2c9bb3546434ef2b105c1965cf7ab80", "share a subtree",
          { { 's', "NSM_USER" }, { 's', "NSM_PATH" } } },
        { NSM_MANAGER_INTERFACE, "EnslaveSubtree", "920b36f2f1c848db89dd3e516475c1b2", "enslave a subtree",
          { { 's', "NSM_USER" }, { 's', "NSM_PATH" } } },
        { NSM_MANAGER_INTERFACE, "SetPropagation", "5ccd9834eee744c582841972b55a1679", "change the propagation",
          { { 's', "NSM_USER" }, { 's', "NSM_PATH" }, { 's', "NSM_MODE" }, { 't', "NSM_FLAGS", BITS("recursive") } } },
        { NSM_MANAGER_INTERFACE, "BindMount", "234f4ef9fa8841c8ba2eaf1e05ba42f3", "bind mount",
          { { 's', "NSM_USER" }, { 's', "NSM_SOURCE" }, { 's', "NSM_PATH" }, { 't', "NSM_FLAGS", BITS("read-only", "mkdir") } } },
        { NSM_MANAGER_INTERFACE, "Unmount", "1de3f1e86c974d7fb61292f482e82788", "unmount",
          { { 's', "NSM_USER" }, { 's', "NSM_PATH" }, { 't', "NSM_FLAGS", BITS("detach") } } },
        { NSM_MANAGER_INTERFACE, "UnmountById", "1de3f1e86c974d7fb61292f482e82788", "unmount",
          { { 's', "NSM_USER" }, { 'd', "NSM_MOUNT_ID" }, { 'y', "NSM_PATH" }, { 't', "NSM_FLAGS", BITS("detach") } } },
        { NSM_MANAGER_INTERFACE, "SetPropagationById", "5ccd9834eee744c582841972b55a1679", "change the propagation",
          { { 's', "NSM_USER" }, { 'd', "NSM_MOUNT_ID" }, { 'y', "NSM_PATH" }, { 's', "NSM_MODE" },
            { 't', "NSM_FLAGS", BITS("recursive") } } },
        { NSM_MANAGER_INTERFACE, "SetLinger", "ff08291e0f46411881298f54ed9326c7", "change lingering",
          { { 's', "NSM_USER" }, { 'b', "NSM_LINGER" } } },
        { NSM_MANAGER_INTERFACE, "Attach", "c612a1464d94450fb7eba4600478c07c", "attach a command",
          { { 's', "NSM_USER" }, { 'a', "NSM_COMMAND" }, { 'a', NULL }, { 's', "NSM_PATH" } } },
        { NSM_MANAGER_INTERFACE, "OpenAttach", "c612a1464d94450fb7eba4600478c07c", "attach a command",
          { { 's', "NSM_USER" }, { 'a', "NSM_COMMAND" }, { 'a', NULL }, { 's', "NSM_PATH" }, { 't', "NSM_FLAGS" } } },
        { NSM_MANAGER_INTERFACE, "ReloadConfig", "c93ed6426ca140b096e87616af594b4d", "reload the configuration", {} },
        { NSM_MANAGER_INTERFACE, "Eject", "df5bb3aabbe340f6b69157feedc9f45a", "eject",
          { { 's', "NSM_WHAT" }, { 't', "NSM_FLAGS", BITS("lazy") } } },
};

static const AuditMethod *audit_method_find(sd_bus_message *call) {
        const char *interface = sd_bus_message_get_interface(call), *member = sd_bus_message_get_member(call);

        for (size_t i = 0; interface && member && i < ELEMENTSOF(audit_methods); i++)
                if (streq(audit_methods[i].interface, interface) && streq(audit_methods[i].member, member))
                        return audit_methods + i;
        return NULL;
}

/* "FIELD=value" onto 'fields' and " field=value" onto 'summary' (shown: the field's name
 * without NSM_, in lower case). A value may be any bytes a caller or the kernel chose: the
 * field holds it escaped (text-escape.h); the summary goes into the message, which the log
 * escapes as a whole. */
static int add_field_shown(char ***fields, char **summary, const char *field, const char *value, const char *shown_value) {
        _cleanup_free_ char *f = NULL, *shown = NULL, *escaped = text_escape(value);
        char *s;

        if (!escaped || asprintf(&f, "%s=%s", field, escaped) < 0 || strv_extend(fields, f) < 0)
                return -ENOMEM;
        if (!summary)
                return 0;
        shown = strdup(field + strlen("NSM_"));
        if (!shown)
                return -ENOMEM;
        for (char *c = shown; *c; c++)
                *c = (char) (*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        if (asprintf(&s, "%s %s=%s", *summary, shown, shown_value) < 0)
                return -ENOMEM;
        free(*summary);
        *summary = s;
        return 0;
}

static int add_field(char ***fields, char **summary, const char *field, const char *value) {
        return add_field_shown(fields, summary, field, value, value);
}

/* "read-only,mkdir", "none", an unnamed bit in hex. */
static char *flags_to_string(uint64_t t, const char *const *bits) {
        _cleanup_strv_free_ char **l = NULL;
        size_t i = 0;

        for (; bits[i] && i < 64; i++)
                if ((t & (UINT64_C(1) << i)) && strv_extend(&l, bits[i]) < 0)
                        return NULL;
        t &= i >= 64 ? 0 : ~((UINT64_C(1) << i) - 1);
        if (t) {
                char hex[32];
                snprintf(hex, sizeof hex, "0x%" PRIx64, t);
                if (strv_extend(&l, hex) < 0)
                        return NULL;
        }
        return l ? strv_join(l, ",") : strdup("none");
}

/* The recorded arguments, read again from the start of the call. */
static int read_arguments(const AuditMethod *a, sd_bus_message *call, char ***fields, char **summary, char **ret_user) {
        int r;

        r = sd_bus_message_rewind(call, true);
        if (r < 0)
                return r;
        for (size_t i = 0; i < AUDIT_ARGS_MAX && a->args[i].type; i++) {
                const AuditArg *arg = a->args + i;
                _cleanup_strv_free_ char **l = NULL;
                _cleanup_free_ char *v = NULL, *shown = NULL;
                const char *s;
                uint64_t t;
                int b;

                switch (arg->type) {
                case 's':
                        r = sd_bus_message_read(call, "s", &s);
                        if (r >= 0)
                                v = strdup(s);
                        break;
                case 't':
                        r = sd_bus_message_read(call, "t", &t);
                        if (r >= 0 && asprintf(&v, "0x%" PRIx64, t) < 0)
                                v = NULL;
                        if (r >= 0 && v && arg->bits && !(shown = flags_to_string(t, arg->bits)))
                                v = mfree(v);
                        break;
                case 'd':
                        r = sd_bus_message_read(call, "t", &t);
                        if (r >= 0 && asprintf(&v, "%" PRIu64, t) < 0)
                                v = NULL;
                        break;
                case 'y': {
                        const void *p;
                        size_t n;

                        r = sd_bus_message_read_array(call, 'y', &p, &n);
                        if (r >= 0)
                                v = strndup(n > 0 ? p : "", n);
                        break;
                }
                case 'b':
                        r = sd_bus_message_read(call, "b", &b);
                        if (r >= 0)
                                v = strdup(b ? "yes" : "no");
                        break;
                case 'a':
                        r = sd_bus_message_read_strv(call, &l);
                        if (r >= 0)
                                v = strv_join(l, " ");
                        break;
                default:
                        return -EINVAL;
                }
                if (r < 0)
                        return r;
                if (!v)
                        return -ENOMEM;
                if (!arg->field)
                        continue;
                if (streq(arg->field, "NSM_USER")) {
                        /* The namespace's user is the record's subject, not an argument. */
                        *ret_user = TAKE_PTR(v);
                        continue;
                }
                r = add_field_shown(fields, summary, arg->field, v, shown ?: v);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* For Namespace.Remove(): the user of the object the call went to. */
static char *user_of_object(Manager *m, sd_bus_message *call) {
        Namespace *ns;
        uid_t uid;

        if (namespace_bus_path_to_uid(sd_bus_message_get_path(call), &uid) < 0)
                return NULL;
        ns = manager_get_namespace_by_uid(m, uid);
        return ns ? strdup(ns->name) : NULL;
}

/* The caller's name for a record, never by NSS on the loop (a directory server may take seconds
 * for a uid, and everybody's calls would wait): root; the name of the uid's view or the lookup
 * cache's answer (manager_canonical_user()); the local files (/etc/passwd, no NSS module: what
 * NSS's first source says on every sane nsswitch.conf). NULL otherwise: the record names the uid,
 * which is who the caller is. */
static char *caller_name(const Manager *m, uid_t uid) {
        _cleanup_fclose_ FILE *f = NULL;
        char buf[4096], number[16];
        struct passwd pw, *p;
        char *name;

        if (uid == 0)
                return strdup("root");
        snprintf(number, sizeof number, "%" PRIu32, (uint32_t) uid);
        name = manager_canonical_user((Manager *) m, number);
        if (name)
                return name;
        f = fopen("/etc/passwd", "re");
        if (!f)
                return NULL;
        while (fgetpwent_r(f, &pw, buf, sizeof buf, &p) == 0)
                if (p->pw_uid == uid)
                        return strdup(p->pw_name);
        return NULL;
}

/* ---- budgets ---- */

/* One uid's window: records kept, and what was held back. The all-callers window is the one of
 * key UINT64_MAX (no uid's: uid_key() is at most 2^32). */
typedef struct AuditLimit {
        uid_t uid;
        uint64_t begin;
        unsigned count;
        unsigned suppressed, refused;     /* held back, of which refusals */
} AuditLimit;

#define AUDIT_ALL_KEY UINT64_MAX

static void audit_summary(AuditLimit *l, const Manager *m) {
        _cleanup_free_ char *name = NULL;
        char buf[3][64];

        if (l->suppressed == 0)
                return;
        name = caller_name(m, l->uid);
        snprintf(buf[0], sizeof buf[0], "NSM_CALLER_UID=%" PRIu32, (uint32_t) l->uid);
        snprintf(buf[1], sizeof buf[1], "NSM_NOT_RECORDED=%u", l->suppressed);
        snprintf(buf[2], sizeof buf[2], "NSM_NOT_RECORDED_REFUSED=%u", l->refused);
        (void) log_struct_internal(LOG_NOTICE, 0, (char *[]) { buf[0], buf[1], buf[2], NULL },
                                   "%u calls of uid %" PRIu32 " (%s) not recorded, %u of them refused (AuditRateLimitBurst=%u "
                                   "per AuditRateLimitIntervalSec=%" PRIu64 "s, AuditRateLimitBurstAll=%u for all "
                                   "callers but root).", l->suppressed, (uint32_t) l->uid, name ?: "unknown user",
                                   l->refused, m->config.audit_burst,
                                   (uint64_t) (m->config.audit_interval_usec / USEC_PER_SEC), m->config.audit_burst_all);
        l->suppressed = l->refused = 0;
}

static AuditLimit *audit_limit_get(Manager *m, uint64_t key, uid_t uid, uint64_t now) {
        AuditLimit *l;

        if (!m->audit_limits) {
                m->audit_limits = id_map_new();
                if (!m->audit_limits)
                        return NULL;
        }
        l = id_map_get(m->audit_limits, key);
        if (!l) {
                /* One per uid that called: bounded by the users of the machine. */
                l = calloc(1, sizeof(AuditLimit));
                if (!l)
                        return NULL;
                *l = (AuditLimit) { .uid = uid, .begin = now };
                if (id_map_put(m->audit_limits, key, l) < 0) {
                        free(l);
                        return NULL;
                }
        }
        if (now - l->begin >= m->config.audit_interval_usec) {
                audit_summary(l, m);
                l->begin = now;
                l->count = 0;
        }
        return l;
}

/* Whether the record of a call of 'uid' is kept (else it is counted for the summary). */
static bool audit_allow(Manager *m, uid_t uid, bool refused) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        AuditLimit *l, *all;

        if (uid == 0)
                return true;
        l = audit_limit_get(m, uid_key(uid), uid, now);
        all = audit_limit_get(m, AUDIT_ALL_KEY, (uid_t) -1, now);
        if (!l || !all)
                return true;   /* out of memory: rather record than lose it */
        if ((m->config.audit_burst > 0 && l->count >= m->config.audit_burst) ||
            (m->config.audit_burst_all > 0 && all->count >= m->config.audit_burst_all)) {
                l->suppressed++;
                if (refused)
                        l->refused++;
                return false;
        }
        l->count++;
        all->count++;
        return true;
}

/* Called for every record: the windows that ended get their summary now, not only at the uid's
 * next call (a flood that stopped is summed up once its interval passed). */
static void audit_limits_expire(Manager *m) {
        uint64_t now = now_usec(CLOCK_MONOTONIC), key;
        AuditLimit *l;

        for (size_t i = 0; m->audit_limits && id_map_iterate(m->audit_limits, &i, &key, (void **) &l);)
                if (l->suppressed > 0 && now - l->begin >= m->config.audit_interval_usec) {
                        audit_summary(l, m);
                        l->begin = now;
                        l->count = 0;
                }
}

void audit_limits_free(Manager *m) {
        AuditLimit *l;

        for (size_t i = 0; m->audit_limits && id_map_iterate(m->audit_limits, &i, NULL, (void **) &l);) {
                audit_summary(l, m);
                free(l);
        }
        m->audit_limits = id_map_free(m->audit_limits);
}

/* What a caller chose, cut to 'max' bytes (at a character's start) so that the record's result
 * still fits into its message. */
static void cut_text(char *s, size_t max) {
        size_t n;

        if (!s || strlen(s) <= max)
                return;
        n = max - strlen("…");
        while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
                n--;
        strcpy(s + n, "…");
}

static void audit_record(Manager *m, sd_bus_message *call, const sd_bus_error *error, pid_t started) {
        _cleanup_strv_free_ char **fields = NULL;
        _cleanup_free_ char *summary = strdup(""), *user = NULL, *caller = NULL, *where = NULL, *message = NULL;
        const AuditMethod *a = audit_method_find(call);
        uid_t uid = (uid_t) -1;
        pid_t pid = 0;
        char buf[64];
        int r;

        if (!a)
                return;
        if (!summary) {
                log_oom();
                return;
        }

        r = read_arguments(a, call, &fields, &summary, &user);
        if (r < 0) {
                /* Malformed calls are refused before anything changes: nothing to record. */
                log_debug_errno(r, "Not recording %s(): its arguments cannot be read: %m", a->member);
                return;
        }
        if (!user && streq(a->interface, NSM_NAMESPACE_INTERFACE))
                user = user_of_object(m, call);
        if (user && user[0]) {
                /* The user as the call resolved her (any spelling, a UID): her canonical name. */
                char *canonical = manager_canonical_user(m, user);
                if (canonical) {
                        free(user);
                        user = canonical;
                }
        }

        (void) bus_creds_sender_uid(m->creds, call, &uid);
        (void) bus_creds_sender_pid(m->creds, call, &pid);
        audit_limits_expire(m);
        if (!audit_allow(m, uid, error))
                return;
        if (uid != (uid_t) -1)
                caller = caller_name(m, uid);

        snprintf(buf, sizeof buf, "MESSAGE_ID=%s", a->message_id);
        r = strv_extend(&fields, buf);
        if (r >= 0)
                r = add_field(&fields, NULL, "NSM_ACTION", a->member);
        if (r >= 0 && user)
                r = add_field(&fields, NULL, user[0] ? "NSM_USER" : "NSM_HOST", user[0] ? user : "1");
        if (r >= 0 && uid != (uid_t) -1) {
                snprintf(buf, sizeof buf, "%u", (unsigned) uid);
                r = add_field(&fields, NULL, "NSM_CALLER_UID", buf);
        }
        if (r >= 0 && caller)
                r = add_field(&fields, NULL, "NSM_CALLER_USER", caller);
        if (r >= 0 && pid > 0) {
                snprintf(buf, sizeof buf, "%d", (int) pid);
                r = add_field(&fields, NULL, "NSM_CALLER_PID", buf);
        }
        if (r >= 0 && started > 0) {
                snprintf(buf, sizeof buf, "%d", (int) started);
                r = add_field(&fields, &summary, "NSM_PID", buf);
        }
        if (r >= 0)
                r = add_field(&fields, NULL, "NSM_RESULT", error ? error->name : "done");
        if (r >= 0) {
                /* The message is cut at 2,048 bytes: what the caller chose is cut first, so that the
                 * result stays in it (the fields keep all of it). */
                cut_text(user, 256);
                cut_text(summary, 768);
                /* The reply's sentence was escaped for the bus; the log escapes the message once
                 * more as a whole, so it is taken back to its bytes first (the rule reverses). */
                if (error && error->message && text_unescape(error->message, &message) < 0) {
                        message = strdup(error->message);
                        if (!message)
                                r = -ENOMEM;
                }
                if (message)
                        cut_text(message, 512);
        }
        if (r >= 0) {
                if (!user)
                        where = strdup("");
                else if (user[0])
                        r = asprintf(&where, " in the view of '%s'", user) < 0 ? -ENOMEM : 0;
                else
                        where = strdup(" on the host");
        }
        if (r < 0 || !where) {
                log_oom();
                return;
        }

        /* "BindMount by carol (uid 2003, pid 812) in the view of 'bob': source=/srv/x
         * path=/home/bob/x flags=mkdir: done." The error's sentence ends the line with its own
         * full stop. */
        const char *said = error ? (message ?: error->name) : "";
        size_t len = strlen(said);
        if (len > 0 && said[len - 1] == '.')
                len--;
        if (uid != (uid_t) -1)  /* unsigned: sssd hands out uids above 2^31 */
                snprintf(buf, sizeof buf, "%" PRIu32, (uint32_t) uid);
        else
                snprintf(buf, sizeof buf, "unknown");
        (void) log_struct_internal(error ? LOG_NOTICE : LOG_INFO, 0, fields, "%s by %s (uid %s, pid %d)%s%s%s: %s%.*s.",
                                   a->member, caller ?: "an unknown user", buf, (int) pid, where,
                                   summary[0] ? ":" : "", summary, error ? "refused: " : "done", (int) len, said);
}

void audit_call(Manager *m, sd_bus_message *call, const sd_bus_error *error) {
        audit_record(m, call, error, 0);
}

void audit_call_result(Manager *m, sd_bus_message *call, const sd_bus_error *error, int r) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;

        if (r >= 0)
                error = NULL;
        else if (!sd_bus_error_is_set(error)) {
                (void) bus_error_set_errnof(&e, r, NULL);
                error = &e;
        }
        audit_record(m, call, error, 0);
}

void audit_call_pid(Manager *m, sd_bus_message *call, const sd_bus_error *error, pid_t pid) {
        audit_record(m, call, error, pid);
}
