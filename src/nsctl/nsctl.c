/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsctl: the command line client of nsmanagerd. It only talks D-Bus (and setns() for
 * "attach" as root); it never mounts anything itself.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bus-errors.h"
#include "config.h"
#include "nsctl.h"
#include "parse-util.h"


JsonMode arg_json = JSON_OFF;
bool arg_no_pager = false;
bool arg_no_legend = false;
bool arg_ask_password = true;
bool arg_graph = false;
bool arg_recursive = false;
bool arg_read_only = false;
bool arg_mkdir = false;

/* Which of the verb-specific options a verb accepts */
enum {
        OPT_JSON = 1 << 0,
        OPT_GRAPH = 1 << 1,
        OPT_RECURSIVE = 1 << 2,
        OPT_BIND = 1 << 3,
        OPT_LEGEND = 1 << 4,
};

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args; /* not counting the verb; UINT_MAX = unlimited */
        int (*run)(sd_bus *bus, int argc, char **argv);
        unsigned options;
        const char *synopsis;
        const char *summary;     /* one line, for nsctl --help */
        const char *description; /* for nsctl VERB --help */
        int (*check)(int argc, char **argv); /* optional: more usage checks, before connecting */
} Verb;

static const Verb *find_verb(const char *name);

/* ---- error reporting ---- */

/* The daemon's message is meant for people: print it, never the D-Bus error name. */
int bus_log_error(const sd_bus_error *error, int r, const char *fmt, ...) {
        _cleanup_free_ char *context = NULL;
        va_list ap;
        int k;

        if (error && error->message && error->message[0]) {
                _cleanup_free_ char *message = strdup(error->message);

                if (!message)
                        return log_oom();
                /* one line, whatever the daemon wrote */
                for (char *p = message; *p; p++)
                        if (*p == '\n')
                                *p = ' ';
                return log_error_errno(r, "%s", message);
        }

        va_start(ap, fmt);
        k = vasprintf(&context, fmt, ap);
        va_end(ap);
        if (k < 0)
                return log_oom();
        return log_error_errno(r, "%s: %m", context);
}

static void print_verb_synopsis(FILE *f, const Verb *v) {
        fprintf(f, " %s %s\n", program_invocation_short_name, v->synopsis);
}

int verb_usage_error(const char *verb, const char *fmt, ...) {
        const Verb *v = verb ? find_verb(verb) : NULL;
        va_list ap;

        fprintf(stderr, "%s%s%s: ", program_invocation_short_name, verb ? " " : "", verb ?: "");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);

        if (v) {
                fputs("Usage:\n", stderr);
                print_verb_synopsis(stderr, v);
                fprintf(stderr, "Try '%s %s --help' for more information.\n",
                        program_invocation_short_name, v->name);
        } else {
                fprintf(stderr, "Usage:\n %s [options] COMMAND ...\n", program_invocation_short_name);
                fprintf(stderr, "Try '%s --help' for more information.\n", program_invocation_short_name);
        }

        return -EINVAL;
}

/* Timeout of calls that may wait for an interactive polkit authorization */
static uint64_t call_timeout(void) {
        return arg_ask_password && isatty(STDIN_FILENO) ? UINT64_MAX : 0;
}

/* ---- list / status ---- */

static const char *state_color(const char *state) {
        if (streq_ptr(state, "active"))
                return ansi_green();
        if (streq_ptr(state, "closing"))
                return ansi_yellow();
        return NULL;
}

static void json_namespace(JsonWriter *w, const NamespaceInfo *i) {
        json_object_begin(w);
        json_key(w, "user");
        json_string(w, i->user);
        json_key(w, "uid");
        json_unsigned(w, i->uid);
        json_key(w, "gid");
        json_unsigned(w, i->gid);
        json_key(w, "state");
        json_string(w, i->state);
        json_key(w, "object");
        json_string(w, i->object);
        json_key(w, "root");
        json_string(w, i->root);
        json_key(w, "sessions");
        json_strv(w, i->sessions);
        json_key(w, "linger");
        json_boolean(w, i->linger);
        json_key(w, "mount_namespace_id");
        json_unsigned(w, i->mntns_id);
        json_key(w, "timestamp");
        json_unsigned(w, i->timestamp);
        json_key(w, "n_mounts");
        json_unsigned(w, i->n_mounts);
        json_object_end(w);
}

static int verb_list(sd_bus *bus, int argc _unused_, char **argv _unused_) {
        static const char *const headers[] = { "USER", "UID", "STATE", "SESSIONS", "LINGER", "MOUNTS", "CREATED" };
        _cleanup_(table_freep) Table *t = NULL;
        NamespaceInfo *a = NULL;
        size_t n = 0;
        int r;

        r = list_namespaces(bus, /* properties= */ true, &a, &n);
        if (r < 0)
                return r;

        if (arg_json != JSON_OFF) {
                JsonWriter w;

                json_begin(&w, stdout, arg_json);
                json_object_begin(&w);
                json_key(&w, "namespaces");
                json_array_begin(&w);
                for (size_t i = 0; i < n; i++)
                        json_namespace(&w, a + i);
                json_array_end(&w);
                json_object_end(&w);
                json_end(&w);
                namespace_info_array_free(a, n);
                return 0;
        }

        t = table_new(ELEMENTSOF(headers), headers);
        if (!t) {
                namespace_info_array_free(a, n);
                return log_oom();
        }
        table_set_align_right(t, 1, true);
        table_set_align_right(t, 3, true);
        table_set_align_right(t, 5, true);

        r = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *created = format_timestamp(a[i].timestamp);

                r = table_add_cell(t, a[i].user, ansi_highlight());
                if (r >= 0)
                        r = table_add_cellf(t, NULL, "%" PRIu32, a[i].uid);
                if (r >= 0)
                        r = table_add_cell(t, a[i].state, state_color(a[i].state));
                if (r >= 0)
                        r = table_add_cellf(t, NULL, "%zu", strv_length(a[i].sessions));
                if (r >= 0)
                        r = table_add_cell(t, a[i].linger ? "yes" : "no", NULL);
                if (r >= 0)
                        r = table_add_cellf(t, NULL, "%" PRIu32, a[i].n_mounts);
                if (r >= 0)
                        r = table_add_cell(t, created ?: "n/a", NULL);
        }
        namespace_info_array_free(a, n);
        if (r < 0)
                return log_oom();

        pager_open();
        (void) table_print(t, stdout);
        if (!arg_no_legend)
                printf("\n%zu namespace%s listed.\n", n, n == 1 ? "" : "s");
        return 0;
}

static int verb_status(sd_bus *bus, int argc _unused_, char **argv) {
        _cleanup_free_ char *created = NULL, *ago = NULL, *sessions = NULL;
        NamespaceInfo i = {};
        const char *dot_color;
        int r;

        r = get_namespace(bus, argv[1], &i);
        if (r < 0)
                return r;

        if (arg_json != JSON_OFF) {
                JsonWriter w;

                json_begin(&w, stdout, arg_json);
                json_namespace(&w, &i);
                json_end(&w);
                namespace_info_done(&i);
                return 0;
        }

        created = format_timestamp(i.timestamp);
        ago = format_timestamp_relative(i.timestamp);
        sessions = i.sessions && i.sessions[0] ? strv_join(i.sessions, " ") : strdup("none");
        if (!created || !ago || !sessions) {
                namespace_info_done(&i);
                return log_oom();
        }

        dot_color = state_color(i.state) ?: "";
        pager_open();
        printf("%s\u25CF%s %s%s%s (%" PRIu32 ")\n", dot_color, ansi_normal(),
               ansi_highlight(), i.user, ansi_normal(), i.uid);
        printf("      State: %s%s%s\n", dot_color, i.state, ansi_normal());
        printf("        UID: %" PRIu32 "\n", i.uid);
        printf("        GID: %" PRIu32 "\n", i.gid);
        printf("       Root: %s\n", i.root ?: "n/a");
        printf("   Sessions: %s\n", sessions);
        printf("     Linger: %s\n", i.linger ? "yes" : "no");
        printf("    Created: %s; %s\n", created, ago);
        printf("  Namespace: mnt:[%" PRIu64 "]\n", i.mntns_id);
        printf("     Mounts: %" PRIu32 "\n", i.n_mounts);
        printf("     Object: %s\n", i.object);

        namespace_info_done(&i);
        return 0;
}

/* ---- verbs that change something ---- */

static int simple_call(sd_bus *bus, const char *member, const char *what, const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH,
                                           NSM_MANAGER_INTERFACE, member);
        if (r >= 0) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_message_set_allow_interactive_authorization(m, arg_ask_password);
        if (r < 0)
                return log_error_errno(r, "Failed to build the %s call: %m", member);

        polkit_agent_open_if_enabled();
        r = sd_bus_call(bus, m, call_timeout(), &error, &reply);
        polkit_agent_close();
        if (r < 0)
                return bus_log_error(&error, r, "Failed to %s", what);
        return 0;
}

static int verb_create(sd_bus *bus, int argc _unused_, char **argv) {
        return simple_call(bus, "CreateNamespace", "create the namespace", "s", argv[1]);
}

static int verb_remove(sd_bus *bus, int argc _unused_, char **argv) {
        return simple_call(bus, "RemoveNamespace", "remove the namespace", "s", argv[1]);
}

static int verb_share(sd_bus *bus, int argc, char **argv) {
        const char *user = argc == 3 ? argv[1] : "";
        const char *path = argv[argc - 1];

        return simple_call(bus, "ShareSubtree", "share the subtree", "ss", user, path);
}

static int verb_enslave(sd_bus *bus, int argc _unused_, char **argv) {
        return simple_call(bus, "EnslaveSubtree", "enslave the subtree", "ss", argv[1], argv[2]);
}

static int check_propagation(int argc, char **argv) {
        const char *mode = argv[argc - 1];

        if (!STR_IN_SET(mode, "shared", "slave", "private", "unbindable"))
                return verb_usage_error("propagation", "invalid mode '%s': expected shared, slave, private or unbindable", mode);
        return 0;
}

static int verb_propagation(sd_bus *bus, int argc, char **argv) {
        const char *user = argc == 4 ? argv[1] : "";
        const char *path = argv[argc - 2], *mode = argv[argc - 1];

        return simple_call(bus, "SetPropagation", "change the propagation", "ssst", user, path, mode,
                           arg_recursive ? NSM_PROPAGATION_RECURSIVE : UINT64_C(0));
}

static int verb_bind(sd_bus *bus, int argc _unused_, char **argv) {
        uint64_t flags = (arg_read_only ? NSM_BIND_READ_ONLY : 0) | (arg_mkdir ? NSM_BIND_MKDIR : 0);

        return simple_call(bus, "BindMount", "bind mount", "ssst", argv[1], argv[2], argv[3], flags);
}

static int check_linger(int argc _unused_, char **argv) {
        if (parse_boolean(argv[2]) < 0)
                return verb_usage_error("linger", "invalid value '%s': expected yes or no", argv[2]);
        return 0;
}

static int verb_linger(sd_bus *bus, int argc _unused_, char **argv) {
        int b = parse_boolean(argv[2]);

        return simple_call(bus, "SetLinger", "change lingering", "sb", argv[1], b);
}

/* ---- verb table and help ---- */

static const Verb verbs[] = {
        { "list", 0, 0, verb_list, OPT_JSON | OPT_LEGEND,
          "list [--json]",
          "list the namespaces",
          "List the user namespace views: user, UID, state, number of sessions, lingering,\n"
          "number of mounts and creation time.",
          NULL },
        { "status", 1, 1, verb_status, OPT_JSON,
          "status [--json] USER",
          "show the state of USER's namespace",
          "Show the state of USER's namespace: sessions, lingering, mount namespace id,\n"
          "creation time, number of mounts.",
          NULL },
        { "mounts", 0, 1, verb_mounts, OPT_JSON | OPT_GRAPH | OPT_LEGEND,
          "mounts [--json|--graph] [USER]",
          "show a view's mounts and where they propagate",
          "Show the mounts of USER's view (without USER: of the host namespace) as a tree,\n"
          "with each mount's propagation, peer group and master group, and the other\n"
          "namespaces that receive what is mounted there: peers (two-way) and slaves\n"
          "(marked \"(slave)\", receive only). With --graph, print the peer groups of all\n"
          "namespaces as a Graphviz dot graph (with USER: only the groups USER takes part in).",
          NULL },
        { "create", 1, 1, verb_create, 0,
          "create USER",
          "create USER's namespace",
          "Create USER's namespace (nothing happens if it exists).",
          NULL },
        { "remove", 1, 1, verb_remove, 0,
          "remove USER",
          "remove USER's namespace",
          "Unmount USER's tree and drop the namespace.",
          NULL },
        { "attach", 1, UINT_MAX, verb_attach, 0,
          "attach USER [-- COMMAND [ARG...]]",
          "run a command inside USER's namespace",
          "Run COMMAND (default: USER's login shell) inside USER's mount namespace.\n"
          "As root, nsctl enters the namespace itself and runs COMMAND as root, like\n"
          "nsenter(1). Otherwise nsmanagerd starts COMMAND inside the namespace with the\n"
          "caller's user, groups, environment and working directory (where it exists in the\n"
          "view, else the home directory). When standard input is a terminal, COMMAND gets\n"
          "a pseudo terminal of its own; otherwise it uses nsctl's standard input, output and\n"
          "error. nsctl exits with COMMAND's exit status, or 128+N if signal N killed it.",
          NULL },
        { "share", 1, 2, verb_share, 0,
          "share [USER] PATH",
          "share PATH (host), or rejoin the host's peer group (USER)",
          "Without USER: make the host's PATH a shared mount (binding it onto itself first\n"
          "if needed) and make PATH in every existing namespace a peer of it. With USER:\n"
          "make USER's PATH a peer of the host's mount at PATH again.",
          NULL },
        { "enslave", 2, 2, verb_enslave, 0,
          "enslave USER PATH",
          "make USER's PATH receive-only",
          "Make USER's PATH a slave: it still receives the mounts of the host and of other\n"
          "users, and its own mounts propagate nowhere.",
          NULL },
        { "propagation", 2, 3, verb_propagation, OPT_RECURSIVE,
          "propagation [USER] PATH shared|slave|private|unbindable [--recursive]",
          "change the propagation of a mount",
          "Change the propagation type of the mount at PATH in USER's view (without USER:\n"
          "on the host).",
          check_propagation },
        { "bind", 3, 3, verb_bind, OPT_BIND,
          "bind USER SOURCE DEST [--read-only] [--mkdir]",
          "bind a host path into a running view",
          "Bind the host's SOURCE onto DEST inside USER's running view. The bound tree\n"
          "follows its source one way.",
          NULL },
        { "linger", 2, 2, verb_linger, 0,
          "linger USER yes|no",
          "keep USER's namespace without sessions",
          "Enable or disable lingering: a lingering namespace survives its last session.",
          check_linger },
};

static const Verb *find_verb(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return verbs + i;
        return NULL;
}

static void print_verb_options(const Verb *v) {
        fputs("\nOptions:\n", stdout);
        if (v->options & OPT_JSON)
                fputs("     --json[=pretty|short]  print a JSON document (see nsctl(1))\n", stdout);
        if (v->options & OPT_GRAPH)
                fputs("     --graph                print the peer groups as a Graphviz dot graph\n", stdout);
        if (v->options & OPT_RECURSIVE)
                fputs(" -r, --recursive            apply to every mount below PATH too\n", stdout);
        if (v->options & OPT_BIND) {
                fputs("     --read-only            make the bind mount read-only\n", stdout);
                fputs("     --mkdir                create the destination if it is missing\n", stdout);
        }
        if (v->options & OPT_LEGEND)
                fputs("     --no-legend            do not print the column headers and the footer\n", stdout);
        if (v->options & (OPT_JSON | OPT_GRAPH))
                fputs("     --no-pager             do not pipe the output into a pager\n", stdout);
        else
                fputs("     --no-ask-password      do not ask for a password\n", stdout);
        fputs(" -h, --help                 display this help\n", stdout);
}

static void help_verb(const Verb *v) {
        fputs("\nUsage:\n", stdout);
        print_verb_synopsis(stdout, v);
        printf("\n%s\n", v->description);
        print_verb_options(v);
        fputs("\nFor more details see nsctl(1).\n", stdout);
}

static void help(void) {
        fputs("\nUsage:\n", stdout);
        printf(" %s [options] COMMAND ...\n", program_invocation_short_name);
        fputs("\nInspect and manage the per-user mount namespaces of nsmanagerd.\n", stdout);
        fputs("\nCommands:\n", stdout);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                const char *space = strchr(verbs[i].synopsis, ' ');
                /* Show the synopsis without the options in brackets at the front */
                char shown[80];

                snprintf(shown, sizeof(shown), "%s", verbs[i].synopsis);
                if (space && strncmp(space + 1, "[--", 3) == 0) {
                        const char *end = strchr(space + 1, ']');
                        snprintf(shown, sizeof(shown), "%.*s%s", (int) (space - verbs[i].synopsis),
                                 verbs[i].synopsis, end ? end + 1 : "");
                }
                if (strlen(shown) > 34)
                        printf(" %s\n %-34s %s\n", shown, "", verbs[i].summary);
                else
                        printf(" %-34s %s\n", shown, verbs[i].summary);
        }
        fputs("\nOptions:\n"
              "     --json[=pretty|short]  print JSON (list, status, mounts)\n"
              "     --graph                mounts: print the peer-group graph in dot\n"
              " -r, --recursive            propagation: apply to the whole subtree\n"
              "     --read-only            bind: make the bind mount read-only\n"
              "     --mkdir                bind: create the destination\n"
              "     --no-pager             do not pipe output into a pager\n"
              "     --no-legend            do not print table headers and footers\n"
              "     --no-ask-password      do not ask for a password (polkit)\n"
              " -h, --help                 display this help (nsctl COMMAND --help: of COMMAND)\n"
              " -V, --version              display version\n", stdout);
        fputs("\nExit status: 0 on success, 1 if the operation was refused or failed,\n"
              "2 on bad usage; attach: the command's exit status.\n", stdout);
        fputs("\nFor more details see nsctl(1).\n", stdout);
}

/* ---- main ---- */

enum {
        ARG_JSON = 0x100,
        ARG_GRAPH,
        ARG_NO_PAGER,
        ARG_NO_LEGEND,
        ARG_NO_ASK_PASSWORD,
        ARG_READ_ONLY,
        ARG_MKDIR,
};

/* For the usage shown after an option error: the first argument that names a verb. */
static const char *guess_verb(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--"))
                        break;
                if (argv[i][0] != '-' && find_verb(argv[i]))
                        return argv[i];
        }
        return NULL;
}

static int parse_argv(int argc, char *argv[], unsigned *ret_seen, bool *ret_help) {
        static const struct option options[] = {
                { "help",            no_argument,       NULL, 'h'                 },
                { "version",         no_argument,       NULL, 'V'                 },
                { "json",            optional_argument, NULL, ARG_JSON            },
                { "graph",           no_argument,       NULL, ARG_GRAPH           },
                { "recursive",       no_argument,       NULL, 'r'                 },
                { "read-only",       no_argument,       NULL, ARG_READ_ONLY       },
                { "mkdir",           no_argument,       NULL, ARG_MKDIR           },
                { "no-pager",        no_argument,       NULL, ARG_NO_PAGER        },
                { "no-legend",       no_argument,       NULL, ARG_NO_LEGEND       },
                { "no-ask-password", no_argument,       NULL, ARG_NO_ASK_PASSWORD },
                {}
        };
        unsigned seen = 0;
        bool help_requested = false;
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "hVr", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help_requested = true;
                        break;
                case 'V':
                        printf("nsctl %s\n", PACKAGE_VERSION);
                        exit(NSCTL_EXIT_SUCCESS);
                case ARG_JSON:
                        if (!optarg || streq(optarg, "pretty"))
                                arg_json = optarg || isatty(STDOUT_FILENO) ? JSON_PRETTY : JSON_SHORT;
                        else if (streq(optarg, "short"))
                                arg_json = JSON_SHORT;
                        else {
                                return verb_usage_error(guess_verb(argc, argv), "invalid --json= mode '%s': expected pretty or short", optarg);
                        }
                        seen |= OPT_JSON;
                        break;
                case ARG_GRAPH:
                        arg_graph = true;
                        seen |= OPT_GRAPH;
                        break;
                case 'r':
                        arg_recursive = true;
                        seen |= OPT_RECURSIVE;
                        break;
                case ARG_READ_ONLY:
                        arg_read_only = true;
                        seen |= OPT_BIND;
                        break;
                case ARG_MKDIR:
                        arg_mkdir = true;
                        seen |= OPT_BIND;
                        break;
                case ARG_NO_PAGER:
                        arg_no_pager = true;
                        break;
                case ARG_NO_LEGEND:
                        arg_no_legend = true;
                        seen |= OPT_LEGEND;
                        break;
                case ARG_NO_ASK_PASSWORD:
                        arg_ask_password = false;
                        break;
                case '?':
                        if (optopt)
                                return verb_usage_error(guess_verb(argc, argv), "invalid option -- '%c'", optopt);
                        return verb_usage_error(guess_verb(argc, argv), "unrecognized option '%s'", argv[optind - 1]);
                default:
                        abort();
                }

        *ret_seen = seen;
        *ret_help = help_requested;
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        const Verb *v;
        unsigned seen = 0, n_args;
        bool help_requested = false;
        char **args;
        int r;

        /* Our messages are for the person at the terminal, not for the journal. */
        log_set_target(LOG_TARGET_CONSOLE);

        r = parse_argv(argc, argv, &seen, &help_requested);
        if (r < 0)
                return NSCTL_EXIT_USAGE;

        args = argv + optind;
        n_args = (unsigned) (argc - optind);

        if (n_args == 0) {
                if (help_requested) {
                        help();
                        return NSCTL_EXIT_SUCCESS;
                }
                verb_usage_error(NULL, "no command given");
                return NSCTL_EXIT_USAGE;
        }

        v = find_verb(args[0]);
        if (!v) {
                if (help_requested) {
                        help();
                        return NSCTL_EXIT_SUCCESS;
                }
                verb_usage_error(NULL, "unknown command '%s'", args[0]);
                return NSCTL_EXIT_USAGE;
        }

        if (help_requested) {
                help_verb(v);
                return NSCTL_EXIT_SUCCESS;
        }

        if (seen & ~v->options) {
                static const struct {
                        unsigned flag;
                        const char *name;
                } names[] = {
                        { OPT_JSON, "--json" },
                        { OPT_GRAPH, "--graph" },
                        { OPT_RECURSIVE, "--recursive" },
                        { OPT_BIND, "--read-only/--mkdir" },
                        { OPT_LEGEND, "--no-legend" },
                };
                for (size_t i = 0; i < ELEMENTSOF(names); i++)
                        if (seen & ~v->options & names[i].flag) {
                                verb_usage_error(v->name, "option %s does not apply to '%s'", names[i].name, v->name);
                                return NSCTL_EXIT_USAGE;
                        }
        }
        if ((seen & OPT_JSON) && (seen & OPT_GRAPH)) {
                verb_usage_error(v->name, "--json and --graph cannot be combined");
                return NSCTL_EXIT_USAGE;
        }

        if (n_args - 1 < v->min_args) {
                verb_usage_error(v->name, "missing argument");
                return NSCTL_EXIT_USAGE;
        }
        if (n_args - 1 > v->max_args) {
                verb_usage_error(v->name, "too many arguments");
                return NSCTL_EXIT_USAGE;
        }
        /* The host is "" only where the contract allows it (share, propagation). */
        if (n_args > 1 && args[1][0] == '\0' && !streq(v->name, "share") && !streq(v->name, "propagation")) {
                verb_usage_error(v->name, "empty user name");
                return NSCTL_EXIT_USAGE;
        }
        if (v->check && v->check((int) n_args, args) < 0)
                return NSCTL_EXIT_USAGE;

        r = bus_connect(&bus);
        if (r < 0)
                return NSCTL_EXIT_FAILURE;

        r = v->run(bus, (int) n_args, args);
        pager_close();

        if (r < 0)
                return NSCTL_EXIT_FAILURE;
        /* verbs may return a positive exit status of their own (attach) */
        return r;
}
