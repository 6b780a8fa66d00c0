/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsctl mounts [USER] [TARGET] [--json|--graph]: a view's mounts as a tree, with where each
 * mount propagates to, computed from GetMounts() of every namespace and of the host: a mount
 * in peer group P sends what is mounted on it to every mount of peer group P (the peers,
 * which send back) and to every mount whose master group is P (the slaves, receive only).
 * As findmnt: -o/--output picks the columns, --real hides pseudo file systems, -t/--types
 * keeps some types, TARGET keeps that mount and what is below it; libmount says which types
 * are pseudo file systems and matches -t's list, as it does for findmnt. OPTIONS and FROM
 * (where a mount came from: host, policy, daemon, user, unknown) come from GetMountsEx.
 */
#include <errno.h>
#include <libmount.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bus-errors.h"
#include "nsctl.h"

/* Show at most this many namespaces in the PROPAGATES TO column; JSON has them all. */
#define PROPAGATES_TO_MAX 5

char *arg_output = NULL;
bool arg_real = false;
char *arg_types = NULL;

typedef enum Column {
        COL_TARGET,
        COL_SOURCE,
        COL_FSTYPE,
        COL_PROPAGATION,
        COL_PEER,
        COL_MASTER,
        COL_PROPAGATES_TO,
        COL_ID,
        COL_PARENT,
        COL_OPTIONS,
        COL_FROM,
        _COL_MAX,
} Column;

/* -o's names (findmnt's where it has the column), the headers, and what is shown without -o. */
static const struct {
        const char *name, *header;
        bool right;
} columns[_COL_MAX] = {
        [COL_TARGET] = { "TARGET", "TARGET" },
        [COL_SOURCE] = { "SOURCE", "SOURCE" },
        [COL_FSTYPE] = { "FSTYPE", "FSTYPE" },
        [COL_PROPAGATION] = { "PROPAGATION", "PROPAGATION" },
        [COL_PEER] = { "PEER", "PEER", true },
        [COL_MASTER] = { "MASTER", "MASTER", true },
        [COL_PROPAGATES_TO] = { "PROPAGATES-TO", "PROPAGATES TO" },
        [COL_ID] = { "ID", "ID", true },
        [COL_PARENT] = { "PARENT", "PARENT", true },
        [COL_OPTIONS] = { "OPTIONS", "OPTIONS" },
        [COL_FROM] = { "FROM", "FROM" },
};
static const Column default_columns[] = {
        COL_TARGET, COL_SOURCE, COL_FSTYPE, COL_PROPAGATION, COL_PEER, COL_MASTER, COL_PROPAGATES_TO,
};

/* "TARGET,OPTIONS" into the columns, in that order; -EINVAL names the first unknown one in
 * *ret_bad (may be NULL). */
static int parse_columns(const char *spec, Column *ret, size_t *ret_n, char **ret_bad) {
        size_t n = 0;

        for (const char *p = spec; *p; p += *p == ',') {
                size_t len = strcspn(p, ","), i;

                for (i = 0; i < _COL_MAX; i++)
                        if (strlen(columns[i].name) == len && strncasecmp(p, columns[i].name, len) == 0)
                                break;
                if (i == _COL_MAX || n >= _COL_MAX) {
                        if (ret_bad)
                                *ret_bad = strndup(p, len);
                        return -EINVAL;
                }
                if (ret)
                        ret[n] = (Column) i;
                n++;
                p += len;
        }
        if (n == 0)
                return -EINVAL;
        if (ret_n)
                *ret_n = n;
        return 0;
}

static int check_arguments(int argc, char **argv, char **ret_message) {
        _cleanup_free_ char *bad = NULL;
        int r;

        if (arg_output) {
                r = parse_columns(arg_output, NULL, NULL, &bad);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        _cleanup_strv_free_ char **names = NULL;
                        _cleanup_free_ char *list = NULL, *shown = text_escape(bad ?: arg_output);
                        for (size_t i = 0; i < _COL_MAX; i++)
                                if (strv_extend(&names, columns[i].name) < 0)
                                        return -ENOMEM;
                        list = strv_join(names, ", ");
                        if (!shown || !list ||
                            asprintf(ret_message, "unknown column '%s' in --output (columns: %s)", shown, list) < 0)
                                return -ENOMEM;
                        return -EINVAL;
                }
        }
        /* TARGET is a path: USER never begins with '/'. */
        if (argc == 3 && argv[2][0] != '/')
                r = asprintf(ret_message, "TARGET '%s' is not an absolute path", argv[2]);
        else if ((arg_graph || arg_follow) && (arg_output || arg_real || arg_types || (argc > 1 && argv[argc - 1][0] == '/')))
                r = asprintf(ret_message, "--output, --real, --types and TARGET show a table: not with %s",
                             arg_graph ? "--graph" : "--follow");
        else
                return 0;
        return r < 0 ? -ENOMEM : -EINVAL;
}

int verb_mounts_check(int argc, char **argv) {
        _cleanup_free_ char *message = NULL;
        int r = check_arguments(argc, argv, &message);

        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return verb_usage_error("mounts", "%s", message);
        if (arg_json != JSON_OFF && arg_graph)
                return verb_usage_error("mounts", "--json and --graph cannot be combined");
        if (arg_follow && arg_graph)
                return verb_usage_error("mounts", "--follow and --graph cannot be combined");
        /* A stream of changes goes straight to its reader. */
        if (arg_follow)
                arg_no_pager = true;
        return 0;
}

/* Whether TARGET (the argument, trailing slashes ignored) is the mount point 'path' or above it. */
static bool path_at_or_below(const char *path, const char *target) {
        size_t n = strlen(target);

        while (n > 1 && target[n - 1] == '/')
                n--;
        if (n == 1 && target[0] == '/')
                return true;
        return strncmp(path, target, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The mounts the filters keep: --real, --types, TARGET. */
static bool mount_wanted(const MountEntry *m, const char *target) {
        if (arg_real && mnt_fstype_is_pseudofs(m->fstype))
                return false;
        if (arg_types && !mnt_match_fstype(m->fstype, arg_types))
                return false;
        return !target || path_at_or_below(m->target, target);
}

typedef struct View {
        char *name;      /* "" = host */
        MountEntry *mounts;
        size_t n_mounts;
} View;

typedef enum LinkKind {
        LINK_PEER,
        LINK_SLAVE,
} LinkKind;

/* One membership of a mount in a group: as a peer (peer_group) or as a slave (master_group) */
typedef struct GroupEntry {
        uint64_t group;
        size_t view;
        LinkKind kind;
} GroupEntry;

typedef struct Views {
        View *views;
        size_t n_views;
        size_t self;       /* index of the view that is shown */
        GroupEntry *entries;
        size_t n_entries;
} Views;

static void views_done(Views *v) {
        for (size_t i = 0; i < v->n_views; i++) {
                free(v->views[i].name);
                mount_entries_free(v->views[i].mounts, v->views[i].n_mounts);
        }
        free(v->views);
        free(v->entries);
        *v = (Views) {};
}

static const char *view_display_name(const View *v) {
        return v->name[0] ? v->name : "(host)";
}

static int group_entry_cmp(const void *a, const void *b) {
        const GroupEntry *x = a, *y = b;

        if (x->group != y->group)
                return x->group < y->group ? -1 : 1;
        if (x->view != y->view)
                return x->view < y->view ? -1 : 1;
        return (int) x->kind - (int) y->kind;
}

static void view_done(View *v) {
        free(v->name);
        mount_entries_free(v->mounts, v->n_mounts);
        *v = (View) {};
}

/* One view's mounts. 1 if loaded, 0 if the namespace is gone (and 'optional'), else < 0
 * (logged). */
static int view_load(sd_bus *bus, const char *name, bool optional, View *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        View w = { .name = strdup(name) };
        int r;

        if (!w.name)
                return log_oom();
        r = get_mounts(bus, name, &error, &w.mounts, &w.n_mounts);
        if (r < 0) {
                bool gone = optional && bus_error_code(&error) == NSM_ERROR_NO_SUCH_NAMESPACE;
                r = gone ? 0 : bus_log_error(&error, r, "Failed to get the mounts of %s", view_display_name(&w));
                view_done(&w);
                return r;
        }
        *ret = w;
        return 1;
}

/* Each mount's memberships (as a peer, as a slave), sorted by group, for views_find_group(). */
static int views_index_groups(Views *v) {
        size_t n = 0;

        for (size_t i = 0; i < v->n_views; i++)
                n += 2 * v->views[i].n_mounts;
        v->entries = malloc((n ?: 1) * sizeof(GroupEntry));
        if (!v->entries)
                return log_oom();
        for (size_t i = 0; i < v->n_views; i++)
                for (size_t j = 0; j < v->views[i].n_mounts; j++) {
                        const MountEntry *m = v->views[i].mounts + j;

                        if (m->peer_group != 0)
                                v->entries[v->n_entries++] = (GroupEntry) { m->peer_group, i, LINK_PEER };
                        if (m->master_group != 0)
                                v->entries[v->n_entries++] = (GroupEntry) { m->master_group, i, LINK_SLAVE };
                }
        qsort(v->entries, v->n_entries, sizeof(GroupEntry), group_entry_cmp);
        return 0;
}

static void namespace_infos_done(NamespaceInfo **ns, size_t *n) {
        namespace_info_array_free(*ns, *n);
        *ns = NULL;
        *n = 0;
}

/* Loads the host and every namespace, in that order (the users sorted by name). 'user' (NULL =
 * host) is the one shown, loaded first so that "no such namespace" is reported as such: its
 * GetMounts() failing is an error, another namespace vanishing meanwhile is not. */
static int views_load(sd_bus *bus, const char *user, Views *ret) {
        _cleanup_(views_done) Views v = {};
        _cleanup_(view_done) View shown = {};
        NamespaceInfo *ns = NULL;
        size_t n_ns = 0;
        int r;

        r = view_load(bus, user ?: "", /* optional= */ false, &shown);
        if (r < 0)
                return r;
        r = list_namespaces(bus, /* properties= */ false, &ns, &n_ns);
        if (r < 0)
                return r;
        v.views = calloc(n_ns + 2, sizeof(View));
        if (!v.views) {
                namespace_infos_done(&ns, &n_ns);
                return log_oom();
        }
        for (size_t i = 0; i <= n_ns; i++) {
                const char *name = i == 0 ? "" : ns[i - 1].user;

                if (shown.name && streq(name, shown.name)) {
                        v.self = v.n_views;
                        v.views[v.n_views++] = shown;
                        shown = (View) {};
                        continue;
                }
                r = view_load(bus, name, /* optional= */ true, &v.views[v.n_views]);
                if (r < 0) {
                        namespace_infos_done(&ns, &n_ns);
                        return r;
                }
                v.n_views += r;
        }
        namespace_infos_done(&ns, &n_ns);
        if (shown.name) {
                /* It vanished from the list meanwhile: keep it anyway, at the end. */
                v.self = v.n_views;
                v.views[v.n_views++] = shown;
                shown = (View) {};
        }
        r = views_index_groups(&v);
        if (r < 0)
                return r;
        *ret = v;
        v = (Views) {};
        return 0;
}

/* The entries of group 'g': [*ret_first, *ret_first + return value) */
static size_t views_find_group(const Views *v, uint64_t g, size_t *ret_first) {
        size_t lo = 0, hi = v->n_entries, n = 0;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (v->entries[mid].group < g)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_first = lo;
        while (lo + n < v->n_entries && v->entries[lo + n].group == g)
                n++;
        return n;
}

/* Calls 'cb' once per other view that receives from a mount in peer group 'g', in view order,
 * with LINK_PEER if it holds a peer (then it also sends back), else LINK_SLAVE. */
static void views_foreach_receiver(const Views *v, size_t self, uint64_t g,
                                   void (*cb)(const Views *v, size_t view, LinkKind kind, void *userdata),
                                   void *userdata) {
        size_t first, n;

        if (g == 0)
                return;
        n = views_find_group(v, g, &first);
        for (size_t i = 0; i < n; ) {
                size_t view = v->entries[first + i].view;
                LinkKind kind = LINK_SLAVE;

                /* entries of one view are adjacent, peer before slave */
                for (; i < n && v->entries[first + i].view == view; i++)
                        if (v->entries[first + i].kind == LINK_PEER)
                                kind = LINK_PEER;
                if (view != self)
                        cb(v, view, kind, userdata);
        }
}

/* Views that send into a slave of master group 'g': those holding peers of g */
static void views_foreach_sender(const Views *v, size_t self, uint64_t g,
                                 void (*cb)(const Views *v, size_t view, LinkKind kind, void *userdata),
                                 void *userdata) {
        size_t first, n, last = SIZE_MAX;

        if (g == 0)
                return;
        n = views_find_group(v, g, &first);
        for (size_t i = 0; i < n; i++) {
                const GroupEntry *e = v->entries + first + i;

                if (e->kind != LINK_PEER || e->view == self || e->view == last)
                        continue;
                last = e->view;
                cb(v, e->view, LINK_PEER, userdata);
        }
}

/* ---- text ---- */

typedef struct ColumnText {
        char **names;
        size_t n, total;
} ColumnText;

static void collect_name(const Views *v, size_t view, LinkKind kind, void *userdata) {
        ColumnText *c = userdata;
        char *s;

        c->total++;
        if (c->n >= PROPAGATES_TO_MAX)
                return;
        if (asprintf(&s, "%s%s", view_display_name(v->views + view), kind == LINK_SLAVE ? " (slave)" : "") < 0)
                return;
        (void) strv_push(&c->names, &c->n, s);
}

static char *propagates_to_text(const Views *v, const MountEntry *m) {
        ColumnText c = {};
        char *joined, *s = NULL;

        views_foreach_receiver(v, v->self, m->peer_group, collect_name, &c);
        if (c.total == 0) {
                strv_free(c.names);
                return strdup("-");
        }

        joined = strv_join(c.names, ", ");
        strv_free(c.names);
        if (!joined)
                return NULL;
        if (c.total <= c.n)
                return joined;

        if (asprintf(&s, "%s, +%zu more", joined, c.total - c.n) < 0)
                s = NULL;
        free(joined);
        return s;
}

typedef struct TreeNode {
        size_t first_child, next_sibling; /* SIZE_MAX = none */
        bool visited;
} TreeNode;

static int mount_id_index_cmp(const void *a, const void *b, void *userdata) {
        const MountEntry *m = userdata;
        uint64_t x = m[*(const size_t *) a].id, y = m[*(const size_t *) b].id;

        return x < y ? -1 : x > y ? 1 : 0;
}

static size_t find_mount(const MountEntry *m, const size_t *by_id, size_t n, uint64_t id) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (m[by_id[mid]].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && m[by_id[lo]].id == id ? by_id[lo] : SIZE_MAX;
}

typedef struct Shown {
        Column columns[_COL_MAX];
        size_t n_columns;
        const char *target;      /* TARGET, or NULL */
        bool *wanted;            /* per mount of the view: kept by the filters */
} Shown;

static int add_cell(Table *t, const Views *v, const MountEntry *m, Column c, const char *prefix) {
        _cleanup_free_ char *to = NULL;

        switch (c) {
        case COL_TARGET:
                return table_add_cellf(t, NULL, "%s%s", prefix, m->target);
        case COL_SOURCE:
                return table_add_cell(t, m->source, NULL);
        case COL_FSTYPE:
                return table_add_cell(t, m->fstype, NULL);
        case COL_PROPAGATION:
                return table_add_cell(t, m->propagation, strstr(m->propagation, "shared") ? ansi_green() : NULL);
        case COL_PEER:
                return m->peer_group ? table_add_cellf(t, NULL, "%" PRIu64, m->peer_group) : table_add_cell(t, "-", NULL);
        case COL_MASTER:
                return m->master_group ? table_add_cellf(t, NULL, "%" PRIu64, m->master_group) : table_add_cell(t, "-", NULL);
        case COL_PROPAGATES_TO:
                to = propagates_to_text(v, m);
                if (!to)
                        return -ENOMEM;
                return table_add_cell(t, to, m->peer_group && !streq(to, "-") ? ansi_highlight() : NULL);
        case COL_ID:
                return table_add_cellf(t, NULL, "%" PRIu64, m->id);
        case COL_PARENT:
                return table_add_cellf(t, NULL, "%" PRIu64, m->parent_id);
        case COL_OPTIONS:
                return table_add_cell(t, m->options ?: "-", NULL);
        case COL_FROM:
                return table_add_cell(t, m->origin ?: "-", m->origin && !streq(m->origin, "host") ? ansi_highlight() : NULL);
        default:
                return -EINVAL;
        }
}

static int add_row(Table *t, const Shown *s, const Views *v, const MountEntry *m, const char *prefix) {
        int r = 0;

        /* The tree is drawn in TARGET's column, wherever -o puts it. */
        for (size_t i = 0; r >= 0 && i < s->n_columns; i++)
                r = add_cell(t, v, m, s->columns[i], prefix);
        return r;
}

/* 'indent' holds "│ " / "  " for every ancestor level below the root. */
static int add_subtree(Table *t, const Shown *s, const Views *v, const MountEntry *m, TreeNode *nodes, size_t i,
                       char **indent, size_t *indent_len) {
        for (size_t c = nodes[i].first_child; c != SIZE_MAX; c = nodes[c].next_sibling) {
                bool last = nodes[c].next_sibling == SIZE_MAX;
                _cleanup_free_ char *prefix = NULL;
                size_t saved = *indent_len;
                char *grown;
                int r;

                if (nodes[c].visited) /* a loop: cannot happen, but never recurse forever */
                        continue;
                nodes[c].visited = true;

                if (asprintf(&prefix, "%s%s", *indent, last ? "\u2514\u2500" : "\u251C\u2500") < 0)
                        return -ENOMEM;
                r = add_row(t, s, v, m + c, prefix);
                if (r < 0)
                        return r;

                if (nodes[c].first_child == SIZE_MAX)
                        continue;

                grown = realloc(*indent, saved + 8);
                if (!grown)
                        return -ENOMEM;
                *indent = grown;
                strcpy(*indent + saved, last ? "  " : "\u2502 ");
                *indent_len = strlen(*indent);

                r = add_subtree(t, s, v, m, nodes, c, indent, indent_len);
                if (r < 0)
                        return r;
                (*indent)[saved] = '\0';
                *indent_len = saved;
        }
        return 0;
}

static int print_tree(const Views *v, const Shown *s) {
        const char *headers[_COL_MAX];
        const View *self = v->views + v->self;
        const MountEntry *m = self->mounts;
        size_t n = self->n_mounts;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_free_ TreeNode *nodes = NULL;
        _cleanup_free_ size_t *by_id = NULL, *last_child = NULL;
        _cleanup_free_ char *indent = NULL;
        size_t indent_len = 0;
        int r;

        for (size_t i = 0; i < s->n_columns; i++)
                headers[i] = columns[s->columns[i]].header;
        t = table_new(s->n_columns, headers);
        nodes = calloc(n ?: 1, sizeof(TreeNode));
        by_id = calloc(n ?: 1, sizeof(size_t));
        last_child = calloc(n ?: 1, sizeof(size_t));
        indent = strdup("");
        if (!t || !nodes || !by_id || !last_child || !indent)
                return log_oom();
        for (size_t i = 0; i < s->n_columns; i++)
                table_set_align_right(t, i, columns[s->columns[i]].right);

        for (size_t i = 0; i < n; i++) {
                by_id[i] = i;
                nodes[i] = (TreeNode) { SIZE_MAX, SIZE_MAX, false };
                last_child[i] = SIZE_MAX;
        }
        qsort_r(by_id, n, sizeof(size_t), mount_id_index_cmp, (void *) m);

        /* Link children in the daemon's order (mountinfo order, as findmnt shows them); what the
         * filters leave out is left out with its links, and a mount whose parent they left out
         * is a root of its own. */
        for (size_t i = 0; i < n; i++) {
                size_t p = m[i].parent_id == m[i].id ? SIZE_MAX : find_mount(m, by_id, n, m[i].parent_id);

                if (p == SIZE_MAX || !s->wanted[i] || !s->wanted[p])
                        continue;
                if (last_child[p] == SIZE_MAX)
                        nodes[p].first_child = i;
                else
                        nodes[last_child[p]].next_sibling = i;
                last_child[p] = i;
        }

        /* Roots: mounts whose parent is not in the view (the view's "/"), or not shown. */
        for (size_t i = 0; i < n; i++) {
                size_t p = m[i].parent_id == m[i].id ? SIZE_MAX : find_mount(m, by_id, n, m[i].parent_id);

                if (!s->wanted[i] || (p != SIZE_MAX && s->wanted[p]))
                        continue;
                nodes[i].visited = true;
                r = add_row(t, s, v, m + i, "");
                if (r >= 0)
                        r = add_subtree(t, s, v, m, nodes, i, &indent, &indent_len);
                if (r < 0)
                        return log_oom();
        }

        pager_open();
        (void) table_print(t, stdout);
        return 0;
}

/* ---- JSON ---- */

static void json_receiver(const Views *v, size_t view, LinkKind kind, void *userdata) {
        JsonWriter *w = userdata;

        json_object_begin(w);
        json_key(w, "namespace");
        json_string(w, v->views[view].name);
        json_key(w, "kind");
        json_string(w, kind == LINK_PEER ? "peer" : "slave");
        json_object_end(w);
}

static void json_sender(const Views *v, size_t view, LinkKind kind _unused_, void *userdata) {
        json_string(userdata, v->views[view].name);
}

static int print_json(const Views *v, const Shown *s) {
        const View *self = v->views + v->self;
        JsonWriter w;

        json_begin(&w, stdout, arg_json);
        json_object_begin(&w);
        json_key(&w, "namespace");
        json_string(&w, self->name);
        json_key(&w, "mounts");
        json_array_begin(&w);
        for (size_t i = 0; i < self->n_mounts; i++) {
                const MountEntry *m = self->mounts + i;

                if (!s->wanted[i])
                        continue;
                json_object_begin(&w);
                json_mount_entry(&w, m);
                json_key(&w, "options");
                if (m->options)
                        json_string(&w, m->options);
                else
                        json_null(&w);
                json_key(&w, "from");
                if (m->origin)
                        json_string(&w, m->origin);
                else
                        json_null(&w);
                json_key(&w, "propagates_to");
                json_array_begin(&w);
                views_foreach_receiver(v, v->self, m->peer_group, json_receiver, &w);
                json_array_end(&w);
                json_key(&w, "receives_from");
                json_array_begin(&w);
                views_foreach_sender(v, v->self, m->master_group, json_sender, &w);
                json_array_end(&w);
                json_object_end(&w);
        }
        json_array_end(&w);
        json_object_end(&w);
        json_end(&w);
        return 0;
}

/* ---- Graphviz ---- */

/* A DOT string of lines, each escaped as on a terminal (text-escape.h: a mount point may hold
 * any bytes a user chose), then quoted for DOT, lines joined with DOT's "\n". Escaping first
 * also keeps the backslashes of the escapes from being read as DOT's own (\N, \G, \l). */
static int dot_quote_lines(FILE *f, const char *const *lines) {
        fputc('"', f);
        for (size_t i = 0; lines[i]; i++) {
                _cleanup_free_ char *e = text_show(lines[i]);

                if (!e)
                        return log_oom();
                if (i > 0)
                        fputs("\\n", f);
                for (const char *s = e; *s; s++) {
                        if (*s == '"' || *s == '\\')
                                fputc('\\', f);
                        fputc(*s, f);
                }
        }
        fputc('"', f);
        return 0;
}

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y ? 1 : 0;
}

static bool group_wanted(const uint64_t *groups, size_t n, uint64_t g) {
        if (g == 0)
                return false;
        if (!groups) /* no filter */
                return true;
        return bsearch(&g, groups, n, sizeof(uint64_t), u64_cmp);
}

/* One cluster per namespace with its mounts that take part in propagation (shared or slave),
 * one node per peer group; peers are joined to their group both ways, slaves receive from
 * their master group (dashed). With USER, only the groups USER's mounts take part in. */
/* The groups the shown view's mounts are in, as a peer or as a slave, sorted. */
static int groups_of_view(const View *self, uint64_t **ret, size_t *ret_n) {
        uint64_t *groups = malloc((2 * self->n_mounts + 1) * sizeof(uint64_t));
        size_t n = 0;

        if (!groups)
                return log_oom();
        for (size_t i = 0; i < self->n_mounts; i++) {
                if (self->mounts[i].peer_group)
                        groups[n++] = self->mounts[i].peer_group;
                if (self->mounts[i].master_group)
                        groups[n++] = self->mounts[i].master_group;
        }
        qsort(groups, n, sizeof(uint64_t), u64_cmp);
        *ret = groups;
        *ret_n = n;
        return 0;
}

/* A cluster per view with a box per mount in one of 'groups'; the groups met go to 'met'. */
static int print_graph_mounts(FILE *f, const Views *v, bool filter, const uint64_t *groups, size_t n_groups,
                              uint64_t *met, size_t *n_met) {
        for (size_t i = 0; i < v->n_views; i++) {
                const View *w = v->views + i;
                bool any = false;

                for (size_t j = 0; j < w->n_mounts; j++) {
                        const MountEntry *m = w->mounts + j;
                        bool peer = group_wanted(groups, n_groups, m->peer_group);
                        bool slave = group_wanted(groups, n_groups, m->master_group);
                        int r;

                        if (!peer && !slave)
                                continue;
                        if (!any) {
                                fprintf(f, "  subgraph \"cluster_%zu\" {\n    label=", i);
                                r = dot_quote_lines(f, (const char *const[]) { view_display_name(w), NULL });
                                if (r < 0)
                                        return r;
                                fprintf(f, ";\n    style=rounded;%s\n", i == v->self && filter ? " color=blue;" : "");
                                any = true;
                        }
                        fprintf(f, "    \"m%" PRIu64 "\" [shape=box, label=", m->id);
                        r = dot_quote_lines(f, (const char *const[]) { m->target, m->propagation, NULL });
                        if (r < 0)
                                return r;
                        fputs("];\n", f);
                        if (peer)
                                met[(*n_met)++] = m->peer_group;
                        if (slave)
                                met[(*n_met)++] = m->master_group;
                }
                if (any)
                        fputs("  }\n", f);
        }
        return 0;
}

static void print_graph_edges(FILE *f, const Views *v, const uint64_t *groups, size_t n_groups) {
        for (size_t i = 0; i < v->n_views; i++)
                for (size_t j = 0; j < v->views[i].n_mounts; j++) {
                        const MountEntry *m = v->views[i].mounts + j;

                        if (group_wanted(groups, n_groups, m->peer_group))
                                fprintf(f, "  \"m%" PRIu64 "\" -> \"g%" PRIu64 "\" [dir=both];\n", m->id, m->peer_group);
                        if (group_wanted(groups, n_groups, m->master_group))
                                fprintf(f, "  \"g%" PRIu64 "\" -> \"m%" PRIu64 "\" [style=dashed];\n", m->master_group, m->id);
                }
}

static int print_graph(const Views *v, bool filter) {
        _cleanup_free_ uint64_t *groups = NULL, *met = NULL;
        size_t n_groups = 0, n_met = 0;
        FILE *f = stdout;
        int r;

        if (filter) {
                r = groups_of_view(v->views + v->self, &groups, &n_groups);
                if (r < 0)
                        return r;
        }
        met = malloc((v->n_entries + 1) * sizeof(uint64_t));
        if (!met)
                return log_oom();

        fputs("digraph nsmanager {\n"
              "  graph [rankdir=LR, fontname=\"sans-serif\", label=\"mount propagation: peers (two-way) and slaves (dashed, receive only)\", labelloc=t];\n"
              "  node [fontname=\"monospace\", fontsize=10];\n"
              "  edge [color=\"#555555\"];\n", f);
        r = print_graph_mounts(f, v, filter, groups, n_groups, met, &n_met);
        if (r < 0)
                return r;
        qsort(met, n_met, sizeof(uint64_t), u64_cmp);
        for (size_t i = 0; i < n_met; i++)
                if (i == 0 || met[i] != met[i - 1])
                        fprintf(f, "  \"g%" PRIu64 "\" [shape=ellipse, style=filled, fillcolor=\"#fff3c4\", label=\"peer group %" PRIu64 "\"];\n",
                                met[i], met[i]);
        print_graph_edges(f, v, groups, n_groups);
        fputs("}\n", f);
        return 0;
}

/* Whether two lines of one table, one from GetMounts and one from GetMountsEx, are the same
 * mount: their ids are of two spaces, so compare what both carry. */
static bool mount_entry_same(const MountEntry *a, const MountEntry *b) {
        return a->peer_group == b->peer_group && a->master_group == b->master_group &&
                streq(a->target, b->target) && streq(a->source, b->source) &&
                streq(a->fstype, b->fstype) && streq(a->propagation, b->propagation);
}

/* OPTIONS and FROM come from GetMountsEx, whose ids are not GetMounts's (the ones shown, as
 * findmnt's): both list the kernel's table in its order, so walk them side by side. A mount
 * that came or went between the two calls keeps no options or origin (shown as "-", null). */
static int view_add_options(sd_bus *bus, View *w) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        MountEntry *ex = NULL;
        size_t n_ex = 0, j = 0;
        int r;

        r = get_mounts_ex(bus, w->name, &error, &ex, &n_ex);
        if (r < 0)
                return bus_log_error(&error, r, "Failed to get the mount options of %s", view_display_name(w));
        for (size_t i = 0; i < w->n_mounts; i++) {
                MountEntry *m = w->mounts + i;

                for (size_t k = j; k < n_ex; k++)
                        if (mount_entry_same(m, ex + k)) {
                                m->options = ex[k].options;
                                m->origin = ex[k].origin;
                                ex[k].options = ex[k].origin = NULL;
                                j = k + 1;
                                break;
                        }
        }
        mount_entries_free(ex, n_ex);
        return 0;
}

static bool columns_need_options(const Shown *s) {
        for (size_t i = 0; i < s->n_columns; i++)
                if (s->columns[i] == COL_OPTIONS || s->columns[i] == COL_FROM)
                        return true;
        return false;
}

int verb_mounts(sd_bus *bus, int argc, char **argv) {
        /* [USER] [TARGET]: a lone argument that begins with '/' is the host's TARGET. */
        const char *target = argc > 1 && argv[argc - 1][0] == '/' ? argv[argc - 1] : NULL;
        const char *user = argc > (target ? 2 : 1) ? argv[1] : NULL;
        _cleanup_free_ bool *wanted = NULL;
        Shown s = { .target = target };
        Views v = {};
        int r;

        if (arg_follow)
                return verb_mounts_follow(bus, user);
        if (arg_output) {
                r = parse_columns(arg_output, s.columns, &s.n_columns, NULL);
                if (r < 0)
                        return r == -ENOMEM ? log_oom() : r;
        } else {
                memcpy(s.columns, default_columns, sizeof default_columns);
                s.n_columns = ELEMENTSOF(default_columns);
        }
        r = views_load(bus, user, &v);
        if (r < 0)
                return r;

        if (!arg_graph && (arg_json != JSON_OFF || columns_need_options(&s))) {
                r = view_add_options(bus, v.views + v.self);
                if (r < 0) {
                        views_done(&v);
                        return r;
                }
        }

        wanted = calloc(v.views[v.self].n_mounts ?: 1, sizeof(bool));
        if (!wanted) {
                views_done(&v);
                return log_oom();
        }
        for (size_t i = 0; i < v.views[v.self].n_mounts; i++)
                wanted[i] = mount_wanted(v.views[v.self].mounts + i, target);
        s.wanted = wanted;

        if (arg_graph)
                r = print_graph(&v, user != NULL);
        else if (arg_json != JSON_OFF)
                r = print_json(&v, &s);
        else
                r = print_tree(&v, &s);

        views_done(&v);
        return r;
}
