/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "fd-store.h"
#include "log.h"
#include "namespace-state.h"
#include "path-util.h"
#include "strv.h"
#include "text-escape.h"

static int write_records(FILE *f, Namespace *ns) {
        for (Session *s = ns->sessions; s; s = s->next)
                fprintf(f, "SESSION=%s %d %" PRIu64 " %s\n", s->id, (int) s->leader, s->leader_start,
                        s->fdname ?: "-");
        for (size_t i = 0; i < ns->n_binds; i++) {
                _cleanup_free_ char *d = text_escape_word(ns->binds[i].destination);
                if (!d)
                        return -ENOMEM;
                fprintf(f, "BIND=%" PRIu64 " %" PRIu64 " %s %s\n", ns->binds[i].id.unique, ns->binds[i].id.old,
                        ns->binds[i].for_user ? "user" : "admin", d);
        }
        for (size_t i = 0; i < ns->n_policy_mounts; i++)
                fprintf(f, "POLICY_MOUNT=%" PRIu64 " %" PRIu64 "\n", ns->policy_mounts[i].unique, ns->policy_mounts[i].old);
        for (size_t i = 0; i < ns->n_choices; i++) {
                _cleanup_free_ char *p = text_escape_word(ns->choices[i].path);
                if (!p)
                        return -ENOMEM;
                fprintf(f, "CHOICE=%s %s %s\n", ns->choices[i].mode, ns->choices[i].recursive ? "recursive" : "-", p);
        }
        for (char **j = ns->pending_joins; j && *j; j++) {
                _cleanup_free_ char *p = text_escape_word(*j);
                if (!p)
                        return -ENOMEM;
                fprintf(f, "PENDING_JOIN=%s\n", p);
        }
        for (char **j = ns->mount_points; j && *j; j++) {
                _cleanup_free_ char *p = text_escape_word(*j);
                if (!p)
                        return -ENOMEM;
                fprintf(f, "MOUNT_POINT=%s\n", p);
        }
        return 0;
}

int namespace_save(Namespace *ns) {
        NamespaceSet *s = ns->set;
        _cleanup_free_ char *path = NULL, *buf = NULL, *home = NULL, *shell = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        if (!s)
                return 0;
        path = state_dir_namespace_file(s->state, ns->name);
        f = open_memstream(&buf, &size);
        if (!path || !f) {
                if (f)
                        fclose(f);
                return -ENOMEM;
        }
        home = text_escape_word(ns->home);
        shell = text_escape_word(ns->shell);
        if (!home || !shell) {
                fclose(f);
                return -ENOMEM;
        }
        /* HOME= and SHELL=: with UID= and GID=, the user as NSS gave her when the namespace was
         * made, so that a start restores her namespace without asking NSS (namespace_load()). */
        fprintf(f,
                "# This is private data. Do not parse.\n"
                "NAME=%s\nUID=%u\nGID=%u\nHOME=%s\nSHELL=%s\nMNTNS_ID=%" PRIu64 "\nTIMESTAMP=%" PRIu64 "\nLINGER=%s\n",
                ns->name, (unsigned) ns->uid, (unsigned) ns->gid, home, shell, ns->mntns_inode, ns->timestamp,
                ns->linger ? "yes" : "no");
        /* The namespace's 64-bit id (NS_GET_MNTNS_ID, never reused while the machine runs): its
         * inode number is, once it is gone, and --orphans must not take a stranger's namespace
         * for a view a removal left behind. */
        if (ns->mntns_id != 0)
                fprintf(f, "MNTNS_UNIQUE_ID=%" PRIu64 "\n", ns->mntns_id);
        r = write_records(f, ns);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        return state_dir_write_file(s->state, path, buf, size);
}

void namespace_save_or_warn(Namespace *ns) {
        int r = namespace_save(ns);
        if (r < 0)
                log_warning_errno(r, "Failed to save the state of '%s', ignoring: %m", ns->name);
}

void namespace_note_view_op(Namespace *ns, const ViewOp *op, const ViewOpResult *res, const char *what) {
        int r = 0;

        if (res->n_mounts > 0)
                ns->n_mounts = res->n_mounts;
        for (uint32_t i = 0; i < MIN(res->n_gone, (uint32_t) VIEW_OP_MOUNTS_MAX); i++)
                namespace_forget_mount(ns, res->gone[i]);
        switch (op->type) {
        case VIEW_OP_BIND:
                r = namespace_record_bind(ns, res->mounted, op->path, op->caller != NULL, res->replaced);
                break;
        case VIEW_OP_UNMOUNT:
                namespace_forget_mount(ns, res->replaced);
                break;
        case VIEW_OP_SET_PROPAGATION:
                r = namespace_record_choice(ns, op->path, propagation_mode_to_string(op->mode), op->recursive);
                break;
        case VIEW_OP_JOIN:
                if (op->join == JOIN_SLAVE)
                        r = namespace_record_choice(ns, op->path, "slave", false);
                else {
                        namespace_clear_choice(ns, op->path);
                        r = namespace_set_pending_join(ns, op->path, false);
                }
                break;
        default:
                return;
        }
        if (r < 0)
                log_warning_errno(r, "%s: failed to record it in the state of '%s', ignoring: %m", what, ns->name);
        namespace_save_or_warn(ns);
}

/* Reading it back: a restart, or the fuzzer. */

static int parse_mount_id(const char *s, MountId *ret, const char **ret_rest) {
        unsigned long long unique, old;
        int n = 0;

        if (sscanf(s, "%llu %llu %n", &unique, &old, &n) != 2 || n == 0)
                return -EINVAL;
        *ret = (MountId) { .unique = unique, .old = old };
        *ret_rest = s + n;
        return 0;
}

static int load_bind(Namespace *ns, const char *value) {
        _cleanup_free_ char *dest = NULL;
        const char *rest;
        char who[8];
        MountId id;
        int n = 0;

        if (parse_mount_id(value, &id, &rest) < 0 || sscanf(rest, "%7s %n", who, &n) != 1 || n == 0 ||
            text_unescape(rest + n, &dest) < 0)
                return -EINVAL;
        return namespace_record_bind(ns, id, dest, streq(who, "user"), (MountId) {});
}

static int load_policy_mount(Namespace *ns, const char *value) {
        const char *rest;
        MountId id, *p;

        if (parse_mount_id(value, &id, &rest) < 0)
                return -EINVAL;
        p = realloc(ns->policy_mounts, (ns->n_policy_mounts + 1) * sizeof(MountId));
        if (!p)
                return -ENOMEM;
        ns->policy_mounts = p;
        p[ns->n_policy_mounts++] = id;
        return 0;
}

static int load_choice(Namespace *ns, const char *value) {
        _cleanup_free_ char *path = NULL;
        char mode[16], rec[16];
        int n = 0;

        if (sscanf(value, "%15s %15s %n", mode, rec, &n) != 2 || n == 0 || text_unescape(value + n, &path) < 0)
                return -EINVAL;
        return namespace_record_choice(ns, path, mode, streq(rec, "recursive"));
}

/* "MOUNT_POINT=PATH": where the [View] policy may have made a mount point as the user. */
static int load_mount_point(Namespace *ns, const char *value) {
        _cleanup_free_ char *path = NULL;
        if (text_unescape(value, &path) < 0 || !path_is_absolute_normalized(path))
                return -EINVAL;
        return strv_consume(&ns->mount_points, TAKE_PTR(path));
}

static int load_pending(Namespace *ns, const char *value) {
        _cleanup_free_ char *path = NULL;
        if (text_unescape(value, &path) < 0)
                return -EINVAL;
        return namespace_set_pending_join(ns, path, true);
}

/* Only recorded here: namespace_watch_loaded_sessions() finds the fd, or looks at the leader.
 * "SESSION=ID LEADER START FDNAME"; a state file from before the fd store has no FDNAME. */
static int load_session(Namespace *ns, const char *value) {
        char id[SESSION_ID_MAX + 1], fdname[FD_STORE_NAME_MAX] = "-";
        int pid = 0;
        unsigned long long start = 0;
        Session *s;

        _Static_assert(SESSION_ID_MAX == 255 && FD_STORE_NAME_MAX == 64, "the widths in the format below");
        if (sscanf(value, "%255s %d %llu %63s", id, &pid, &start, fdname) < 2 || !valid_session_id(id))
                return -EINVAL;
        s = session_new(id);
        if (!s)
                return -ENOMEM;
        s->leader = pid;
        s->leader_start = start;
        if (!streq(fdname, "-") && !(s->fdname = strdup(fdname))) {
                session_free(s);
                return -ENOMEM;
        }
        s->next = ns->sessions;
        ns->sessions = s;
        return 0;
}

int namespace_parse_state(Namespace *ns, FILE *f, bool *ret_had_sessions) {
        _cleanup_free_ char *line = NULL;
        size_t n = 0;

        while (getline(&line, &n, f) >= 0) {
                char *eq;
                int r = 0;

                line[strcspn(line, "\n")] = 0;
                eq = strchr(line, '=');
                if (line[0] == '#' || !eq)
                        continue;
                *eq = 0;
                const char *key = line, *value = eq + 1;
                if (streq(key, "LINGER"))
                        ns->linger = streq(value, "yes");
                else if (streq(key, "TIMESTAMP"))
                        ns->timestamp = strtoull(value, NULL, 10);
                else if (streq(key, "SESSION")) {
                        *ret_had_sessions = true;
                        r = load_session(ns, value);
                } else if (streq(key, "BIND"))
                        r = load_bind(ns, value);
                else if (streq(key, "POLICY_MOUNT"))
                        r = load_policy_mount(ns, value);
                else if (streq(key, "CHOICE"))
                        r = load_choice(ns, value);
                else if (streq(key, "PENDING_JOIN"))
                        r = load_pending(ns, value);
                else if (streq(key, "MOUNT_POINT"))
                        r = load_mount_point(ns, value);
                /* A malformed record is dropped, the rest is kept. */
                if (r == -ENOMEM)
                        return r;
        }
        return 0;
}
