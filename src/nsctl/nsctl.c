/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsctl: the command line client of nsmanagerd. It only talks D-Bus (and setns() for
 * "attach" as root, and reads the configuration files for "verify"); it never mounts
 * anything itself.
 *
 * Two tables say what nsctl accepts: options[] (every option, its help line and what it
 * sets) and verbs[] (every command, its arguments and the options it takes besides the
 * common ones). getopt's tables, --help and the usage checks are made from them: adding an
 * option touches options[], its parser and the verbs that take it.
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
#include "user-util.h"

JsonMode arg_json = JSON_OFF;
bool arg_no_pager = false;
bool arg_no_legend = false;
bool arg_graph = false;
static bool arg_recursive = false;
static bool arg_read_only = false;
static bool arg_mkdir = false;
static bool arg_detach = false;
static uint64_t arg_id = 0;     /* --id: act by the mount's id (UnmountById, SetPropagationById) */
bool arg_follow = false;
bool arg_lazy = false;
static bool arg_help = false;
static bool arg_version = false;

typedef struct Verb Verb;
static const Verb *find_verb(const char *name);
static void print_verb_synopsis(FILE *f, const Verb *v);

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
                        program_invocation_short_name, verb);
        } else {
                fprintf(stderr, "Usage:\n %s [OPTIONS...] COMMAND ...\n", program_invocation_short_name);
                fprintf(stderr, "Try '%s --help' for more information.\n", program_invocation_short_name);
        }

        return -EINVAL;
}

/* ---- verify ---- */

static int check_verify(int argc, char **argv _unused_) {
        if (argc > 1 && arg_config)
                return verb_usage_error("verify", "--config and FILE arguments cannot be combined");
        if (argc > 1 && arg_verify_user)
                return verb_usage_error("verify", "--user and FILE arguments cannot be combined");
        return 0;
}

/* Timeout of calls that may wait for an interactive polkit authorization: only with our agent
 * on this machine's terminal (polkit_agent_open_if_enabled()). */
static uint64_t call_timeout(void) {
        return arg_bus.ask_password ? UINT64_MAX : 0;
}

/* ---- list / status ---- */

const char *state_color(const char *state) {
        if (streq_ptr(state, "active"))
                return ansi_green();
        if (streq_ptr(state, "closing"))
                return ansi_yellow();
        return NULL;
}

void json_namespace(JsonWriter *w, const NamespaceInfo *i) {
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

/* ---- verbs that change something ---- */

static int simple_call(sd_bus *bus, const char *member, const char *what, const char *types, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        va_list ap;
        int r;

        polkit_agent_open_if_enabled();
        va_start(ap, types);
        r = manager_callv(bus, member, call_timeout(), &error, NULL, types, ap);
        va_end(ap);
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

/* UnmountById and SetPropagationById (mode NULL: the former): the mount with id arg_id at
 * 'shown', a path as nsctl shows it (escaped by the daemon's rule: text-escape.h), whose bytes
 * go as the kernel has them. */
static int call_by_id(sd_bus *bus, const char *member, const char *what, const char *user, const char *shown,
                      const char *mode, uint64_t flags) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        r = text_unescape(shown, &path);
        if (r < 0)
                return log_error_errno(r, "'%s' is not a path as nsctl shows it (a '\\' starts \\xNN).", shown);
        r = sd_bus_message_new_method_call(bus, &m, NSM_BUS_NAME, NSM_MANAGER_PATH, NSM_MANAGER_INTERFACE, member);
        if (r >= 0)
                r = sd_bus_message_append(m, "st", user, arg_id);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', path, strlen(path));
        if (r >= 0 && mode)
                r = sd_bus_message_append(m, "s", mode);
        if (r >= 0)
                r = sd_bus_message_append(m, "t", flags);
        if (r >= 0)
                r = sd_bus_message_set_allow_interactive_authorization(m, arg_bus.ask_password);
        if (r < 0)
                return log_error_errno(r, "Failed to build the call: %m");
        polkit_agent_open_if_enabled();
        r = sd_bus_call(bus, m, call_timeout(), &error, NULL);
        polkit_agent_close();
        if (r < 0)
                return bus_log_error(&error, r, "Failed to %s", what);
        return 0;
}

static int parse_id(const char *arg) {
        char *end;

        errno = 0;
        unsigned long long v = strtoull(arg, &end, 10);
        if (errno != 0 || end == arg || *end || v == 0 || arg[0] == '-')
                return -EINVAL;
        arg_id = v;
        return 0;
}

static int verb_propagation(sd_bus *bus, int argc, char **argv) {
        const char *user = argc == 4 ? argv[1] : "";
        const char *path = argv[argc - 2], *mode = argv[argc - 1];

        if (arg_id != 0)
                return call_by_id(bus, "SetPropagationById", "change the propagation", user, path, mode,
                                  arg_recursive ? NSM_PROPAGATION_RECURSIVE : UINT64_C(0));
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

static int verb_unmount(sd_bus *bus, int argc _unused_, char **argv) {
        if (arg_id != 0)
                return call_by_id(bus, "UnmountById", "unmount", argv[1], argv[2], NULL,
                                  arg_detach ? NSM_UNMOUNT_DETACH : UINT64_C(0));
        return simple_call(bus, "Unmount", "unmount", "sst", argv[1], argv[2],
                           arg_detach ? NSM_UNMOUNT_DETACH : UINT64_C(0));
}

static int verb_reload(sd_bus *bus, int argc _unused_, char **argv _unused_) {
        int r = simple_call(bus, "ReloadConfig", "reload the configuration", NULL);
        if (r >= 0)
                printf("Configuration reloaded: it applies to namespaces created from now on.\n");
        return r;
}


/* ---- options ---- */

typedef struct Option {
        const char *name;       /* the long option, without "--" */
        char short_name;        /* 0: none */
        int has_arg;            /* no_argument, required_argument or optional_argument */
        const char *value;      /* how --help shows the argument: "pretty|short", "[USER@]HOST" */
        bool common;            /* every verb takes it; the others only the verbs that list them */
        const char *help;       /* one line for --help */
        bool *flag;             /* a switch: set to true; or else */
        int (*parse)(const char *arg); /* sets what the option sets; -EINVAL for a bad value */
} Option;

static int parse_json(const char *arg) {
        if (!arg)
                arg_json = isatty(STDOUT_FILENO) ? JSON_PRETTY : JSON_SHORT;
        else if (streq(arg, "pretty"))
                arg_json = JSON_PRETTY;
        else if (streq(arg, "short"))
                arg_json = JSON_SHORT;
        else
                return -EINVAL;
        return 0;
}

static int parse_no_ask_password(const char *arg _unused_) {
        arg_bus.ask_password_mode = 0;
        return 0;
}

static int parse_ask_password(const char *arg _unused_) {
        arg_bus.ask_password_mode = 1;
        return 0;
}

/* As in systemd's tools, the last of -H and -M wins. */
static int parse_transport(BusTransport transport, const char *arg) {
        if (!arg[0])
                return -EINVAL;
        arg_bus.transport = transport;
        arg_bus.host = arg;
        return 0;
}

static int parse_host(const char *arg) {
        return parse_transport(BUS_TRANSPORT_REMOTE, arg);
}

static int parse_machine(const char *arg) {
        return parse_transport(BUS_TRANSPORT_MACHINE, arg);
}

static int parse_config(const char *arg) {
        if (!arg[0])
                return -EINVAL;
        arg_config = arg;
        return 0;
}

static int parse_output(const char *arg) {
        if (!arg[0])
                return -EINVAL;
        arg_output = (char *) arg;
        return 0;
}

static int parse_types(const char *arg) {
        if (!arg[0])
                return -EINVAL;
        arg_types = (char *) arg;
        return 0;
}

static int parse_verify_user(const char *arg) {
        if (!arg[0])
                return -EINVAL;
        arg_verify_user = arg;
        return 0;
}

static const Option options[] = {
        { "host", 'H', required_argument, "[USER@]HOST", true,
          "operate on the daemon of HOST, over ssh", .parse = parse_host },
        { "machine", 'M', required_argument, "CONTAINER", true,
          "operate on the daemon of a local container", .parse = parse_machine },
        { "no-pager", 0, no_argument, NULL, true,
          "do not pipe the output into a pager", .flag = &arg_no_pager },
        { "no-ask-password", 0, no_argument, NULL, true,
          "do not ask for a password (polkit)", .parse = parse_no_ask_password },
        { "ask-password", 0, no_argument, NULL, true,
          "let polkit ask even without a terminal (a session's own agent)", .parse = parse_ask_password },
        { "help", 'h', no_argument, NULL, true,
          "display this help (nsctl COMMAND --help: of COMMAND)", .flag = &arg_help },
        { "version", 'V', no_argument, NULL, true,
          "display the version", .flag = &arg_version },
        { "json", 0, optional_argument, "pretty|short", false,
          "print a JSON document (see nsctl(1))", .parse = parse_json },
        { "graph", 0, no_argument, NULL, false,
          "print the peer groups as a Graphviz dot graph", .flag = &arg_graph },
        { "no-legend", 0, no_argument, NULL, false,
          "do not print the column headers and the footer", .flag = &arg_no_legend },
        { "recursive", 'r', no_argument, NULL, false,
          "apply to every mount below PATH too", .flag = &arg_recursive },
        { "read-only", 0, no_argument, NULL, false,
          "make the bind mount read-only", .flag = &arg_read_only },
        { "mkdir", 0, no_argument, NULL, false,
          "create the destination if it is missing", .flag = &arg_mkdir },
        { "detach", 0, no_argument, NULL, false,
          "detach the mount even if busy, with everything below it", .flag = &arg_detach },
        { "config", 0, required_argument, "FILE", false,
          "the configuration nsmanagerd --config=FILE reads", .parse = parse_config },
        { "output", 'o', required_argument, "COLUMNS", false,
          "the columns to show, comma-separated (as findmnt -o)", .parse = parse_output },
        { "real", 0, no_argument, NULL, false,
          "hide pseudo file systems (proc, sysfs, cgroup2, tmpfs, ...), as findmnt --real", .flag = &arg_real },
        { "types", 't', required_argument, "TYPES", false,
          "only file systems of these types (e.g. ext4,vfat or noproc), as findmnt -t", .parse = parse_types },
        { "user", 0, required_argument, "NAME", false,
          "only what the next login of user NAME will do", .parse = parse_verify_user },
        { "follow", 'f', no_argument, NULL, false,
          "print the changes as they come, until interrupted", .flag = &arg_follow },
        { "lazy", 0, no_argument, NULL, false,
          "detach what is in use too (it goes once its processes let go)", .flag = &arg_lazy },
        { "id", 0, required_argument, "ID", false,
          "only the mount with this id (as mounts --json and --follow show it), PATH as shown",
          .parse = parse_id },
};

static const Option *find_option(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                if (streq(options[i].name, name))
                        return options + i;
        return NULL;
}

/* " -r, --recursive", "     --json[=pretty|short]", " -H, --host=[USER@]HOST" */
static void print_option(FILE *f, const Option *o, const char *help) {
        char shown[64];

        snprintf(shown, sizeof(shown), " %c%c%c --%s%s%s%s%s", o->short_name ? '-' : ' ', o->short_name ?: ' ',
                 o->short_name ? ',' : ' ', o->name, o->has_arg == optional_argument ? "[=" : "",
                 o->has_arg == required_argument ? "=" : "", o->value ?: "",
                 o->has_arg == optional_argument ? "]" : "");
        fprintf(f, "%-27s %s\n", shown, help);
}

/* ---- verbs ---- */

typedef enum VerbFlags {
        VERB_EMPTY_USER_IS_HOST = 1 << 0, /* USER "" names the host, as on the bus */
        VERB_NO_BUS             = 1 << 1, /* does not talk to the daemon: no connection */
} VerbFlags;

struct Verb {
        const char *name;
        const char *args;            /* for the usage line, after the name */
        unsigned min_args, max_args; /* not counting the verb; UINT_MAX = unlimited */
        VerbFlags flags;
        const char *const *options;  /* long names of the options it takes besides the common ones */
        const char *local_only;      /* why it cannot work over --host/--machine; NULL: it can */
        int (*check)(int argc, char **argv); /* optional: more usage checks, before connecting */
        int (*run)(sd_bus *bus, int argc, char **argv);
        const char *summary;         /* one line, for nsctl --help */
        const char *description;     /* for nsctl VERB --help */
};

#define OPTIONS(...) ((const char *const[]) { __VA_ARGS__, NULL })

static const Verb verbs[] = {
        { "list", "", 0, 0, .options = OPTIONS("json", "no-legend"), .run = verb_list,
          .summary = "list the namespaces",
          .description =
          "List the user namespace views: user, UID, state, number of sessions, lingering,\n"
          "number of mounts and creation time." },
        { "status", "USER", 1, 1, .options = OPTIONS("json"), .run = verb_status,
          .summary = "show the state of USER's namespace",
          .description =
          "Show the state of USER's namespace: sessions, lingering, mount namespace id,\n"
          "creation time, number of mounts." },
        { "mounts", "[USER] [TARGET]", 0, 2, .options = OPTIONS("json", "graph", "no-legend", "follow", "output", "real", "types"),
          .check = verb_mounts_check, .run = verb_mounts,
          .summary = "show a view's mounts and where they propagate",
          .description =
          "Show the mounts of USER's view (without USER: of the host namespace) as a tree,\n"
          "with each mount's propagation, peer group and master group, and the other\n"
          "namespaces that receive what is mounted there: peers (two-way) and slaves\n"
          "(marked \"(slave)\", receive only). With --graph, print the peer groups of all\n"
          "namespaces as a Graphviz dot graph (with USER: only the groups USER takes part in).\n"
          "With --follow, print each mount and unmount as it happens instead (like\n"
          "findmnt --poll), with where the mount came from: \"from the host's /mnt/cd (peer\n"
          "group 57)\" for a copy of a host mount, \"made in this view\"; --json: one object\n"
          "per line. Runs until interrupted. As findmnt: -o/--output picks the columns (TARGET,\n"
          "SOURCE, FSTYPE, PROPAGATION, PEER, MASTER, PROPAGATES-TO, ID, PARENT), --real hides\n"
          "pseudo file systems, -t/--types keeps only the types listed, and TARGET (a path)\n"
          "keeps the mount there and those below it; --json keeps the same mounts." },
        { "create", "USER", 1, 1, .run = verb_create,
          .summary = "create USER's namespace",
          .description = "Create USER's namespace (nothing happens if it exists)." },
        { "remove", "USER", 1, 1, .run = verb_remove,
          .summary = "remove USER's namespace",
          .description = "Unmount USER's tree and drop the namespace." },
        { "attach", "USER [-- COMMAND [ARG...]]", 1, UINT_MAX, .run = verb_attach,
          .local_only = "it hands nsmanagerd this machine's terminal and file descriptors, and as root "
                        "enters the namespace with setns()",
          .summary = "run a command inside USER's namespace",
          .description =
          "Run COMMAND (default: USER's login shell) inside USER's mount namespace.\n"
          "As root, nsctl enters the namespace itself and runs COMMAND as root, like\n"
          "nsenter(1). Otherwise nsmanagerd starts COMMAND inside the namespace with the\n"
          "caller's user, groups, environment and working directory (where it exists in the\n"
          "view, else the home directory). When standard input is a terminal, COMMAND gets\n"
          "a pseudo terminal of its own; otherwise it uses nsctl's standard input, output and\n"
          "error. nsctl exits with COMMAND's exit status, or 128+N if signal N killed it.\n"
          "Not over --host or --machine." },
        { "share", "[USER] PATH", 1, 2, VERB_EMPTY_USER_IS_HOST, .run = verb_share,
          .summary = "share PATH (host), or rejoin the host's peer group (USER)",
          .description =
          "Without USER: make the host's PATH a shared mount (binding it onto itself first\n"
          "if needed) and make PATH in every existing namespace a peer of it. With USER:\n"
          "make USER's PATH a peer of the host's mount at PATH again." },
        { "enslave", "USER PATH", 2, 2, .run = verb_enslave,
          .summary = "make USER's PATH receive-only",
          .description =
          "Make USER's PATH a slave: it still receives the mounts of the host and of other\n"
          "users, and its own mounts propagate nowhere." },
        { "propagation", "[USER] PATH shared|slave|private|unbindable", 2, 3, VERB_EMPTY_USER_IS_HOST,
          .options = OPTIONS("recursive", "id"), .check = check_propagation, .run = verb_propagation,
          .summary = "change the propagation of a mount",
          .description =
          "Change the propagation type of the mount at PATH in USER's view (without USER:\n"
          "on the host). With --id, only the mount with that id, PATH as nsctl shows it." },
        { "bind", "USER SOURCE DEST", 3, 3, .options = OPTIONS("read-only", "mkdir"), .run = verb_bind,
          .summary = "bind a host path into a running view",
          .description =
          "Bind the host's SOURCE onto DEST inside USER's running view. The bound tree\n"
          "follows its source one way." },
        { "unmount", "USER PATH", 2, 2, .options = OPTIONS("detach", "id"), .run = verb_unmount,
          .summary = "unmount PATH in a running view",
          .description =
          "Unmount the mount at PATH inside USER's running view (a bind mount, or what was\n"
          "mounted there). A mount that is in use or has mounts below it is refused as busy,\n"
          "unless --detach is given: then it is detached with everything below it and goes\n"
          "away once no longer in use. A user may unmount only what was bound for them.\n"
          "With --id, only the mount with that id, PATH as nsctl shows it: if another is\n"
          "there now, nothing is done." },
        { "linger", "USER yes|no", 2, 2, .check = check_linger, .run = verb_linger,
          .summary = "keep USER's namespace without sessions",
          .description = "Enable or disable lingering: a lingering namespace survives its last session." },
        { "eject", "WHAT", 1, 1, .options = OPTIONS("lazy", "json", "no-legend"), .run = verb_eject,
          .summary = "detach a device's file system everywhere",
          .description =
          "Detach every mount of the file system of WHAT (a block device, or a mount point on\n"
          "the host) in the host and in every view: copies a user made private, binds of its\n"
          "subdirectories, mounts stacked on it. Then the device can be powered off. If a\n"
          "process uses it, nothing is detached and the processes are named (pid, user,\n"
          "command, view); with --lazy it is detached anyway and goes once they let go." },
        { "reload", "", 0, 0, .run = verb_reload,
          .summary = "reload the daemon's configuration",
          .description =
          "Make nsmanagerd read its configuration files again (as SIGHUP does). The new\n"
          "settings apply to namespaces created afterwards; existing ones stay as they are.\n"
          "A file with an error is refused and the old configuration stays: every file is\n"
          "read first (nsmanagerd.conf, its drop-ins, group.d/, user.d/), and any error or\n"
          "unknown setting fails the reload with FILE:LINE. 'nsctl verify' checks first." },
        { "verify", "[FILE...]", 0, UINT_MAX, VERB_NO_BUS, .options = OPTIONS("config", "user"),
          .local_only = "it reads this machine's files", .check = check_verify, .run = verb_verify,
          .summary = "check the configuration files",
          .description =
          "Check nsmanagerd's configuration with the daemon's own parser, without asking the\n"
          "daemon: each FILE alone (one in a group.d/ or user.d/ directory holds [View] only),\n"
          "or without FILE the set nsmanagerd reads: /etc/nsmanager/nsmanagerd.conf, its\n"
          "drop-ins nsmanagerd.conf.d/*.conf, group.d/*.conf and user.d/*.conf (with --config,\n"
          "FILE, FILE.d/ and FILE's directory, as nsmanagerd --config=FILE). Prints each error\n"
          "as FILE:LINE: reason, an unknown section or setting included, and exits with 1 if\n"
          "there is any. Warns (exit status 0) of user.d/ and group.d/ files for names the\n"
          "system does not know. Without FILE, also says what the next login of each user of\n"
          "user.d/ and each member of a group.d/ group will do (--user=NAME: of NAME alone):\n"
          "'lands in a view with ...', 'lands with entries skipped: ...' or 'will be refused:\n"
          "...', from the files and the host's tree as they are now." },
};

static const Verb *find_verb(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return verbs + i;
        return NULL;
}

static bool verb_takes_option(const Verb *v, const Option *o) {
        if (o->common)
                return true;
        for (const char *const *i = v->options; i && *i; i++)
                if (streq(*i, o->name))
                        return true;
        return false;
}

/* "bind USER SOURCE DEST [--read-only] [--mkdir]" */
static void print_verb_synopsis(FILE *f, const Verb *v) {
        fprintf(f, " %s %s%s%s", program_invocation_short_name, v->name, v->args[0] ? " " : "", v->args);
        for (const char *const *i = v->options; i && *i; i++) {
                const Option *o = find_option(*i);

                fprintf(f, " [--%s%s%s%s]", o->name, o->has_arg == optional_argument ? "[=" : "",
                        o->has_arg == required_argument ? "=" : "",
                        o->has_arg == no_argument ? "" : o->value);
                if (o->has_arg == optional_argument)
                        fputc(']', f);
        }
        fputc('\n', f);
}

static void help_verb(const Verb *v) {
        fputs("\nUsage:\n", stdout);
        print_verb_synopsis(stdout, v);
        printf("\n%s\n", v->description);
        fputs("\nOptions:\n", stdout);
        for (const char *const *i = v->options; i && *i; i++) {
                const Option *o = find_option(*i);
                print_option(stdout, o, o->help);
        }
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                if (options[i].common)
                        print_option(stdout, options + i, options[i].help);
        fputs("\nFor more details see nsctl(1).\n", stdout);
}

static void help(void) {
        fputs("\nUsage:\n", stdout);
        printf(" %s [OPTIONS...] COMMAND ...\n", program_invocation_short_name);
        fputs("\nInspect and manage the per-user mount namespaces of nsmanagerd.\n", stdout);
        fputs("\nCommands:\n", stdout);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
                char shown[80];

                snprintf(shown, sizeof(shown), "%s%s%s", verbs[i].name, verbs[i].args[0] ? " " : "", verbs[i].args);
                if (strlen(shown) > 34)
                        printf(" %s\n %-34s %s\n", shown, "", verbs[i].summary);
                else
                        printf(" %-34s %s\n", shown, verbs[i].summary);
        }

        fputs("\nOptions:\n", stdout);
        for (size_t i = 0; i < ELEMENTSOF(options); i++) {
                _cleanup_free_ char *text = NULL, *takers = NULL;
                char **names = NULL;
                size_t n = 0;

                if (options[i].common) {
                        print_option(stdout, options + i, options[i].help);
                        continue;
                }
                /* Name the verbs that take it, from the verb table. */
                for (size_t j = 0; j < ELEMENTSOF(verbs); j++)
                        if (verb_takes_option(verbs + j, options + i))
                                (void) strv_push(&names, &n, strdup(verbs[j].name));
                takers = strv_join(names, ", ");
                strv_free(names);
                if (!takers || asprintf(&text, "%s: %s", takers, options[i].help) < 0)
                        text = NULL;
                print_option(stdout, options + i, text ?: options[i].help);
        }
        fputs("\nExit status: 0 on success, 1 if the operation was refused or failed,\n"
              "2 on bad usage (also: a command that cannot work over --host/--machine);\n"
              "attach: the command's exit status.\n", stdout);
        fputs("\nFor more details see nsctl(1).\n", stdout);
}

/* ---- main ---- */

#define OPTION_BASE 0x100 /* getopt's 'val' of options[i] is OPTION_BASE + i, beyond any char */

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

/* Sets what the options say; records in 'seen' (one per options[] entry) which were given. */
static int parse_argv(int argc, char *argv[], bool *seen) {
        struct option longopts[ELEMENTSOF(options) + 1] = {};
        char shortopts[1 + 3 * ELEMENTSOF(options) + 1] = ":"; /* ':': report a missing argument as such */
        size_t k = 1;
        int c;

        for (size_t i = 0; i < ELEMENTSOF(options); i++) {
                const Option *o = options + i;

                longopts[i] = (struct option) { o->name, o->has_arg, NULL, OPTION_BASE + (int) i };
                if (o->short_name) {
                        shortopts[k++] = o->short_name;
                        if (o->has_arg != no_argument)
                                shortopts[k++] = ':';
                        if (o->has_arg == optional_argument)
                                shortopts[k++] = ':';
                }
        }
        shortopts[k] = '\0';

        opterr = 0;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                const Option *o = NULL;

                if (c == '?' || c == ':') {
                        /* optopt: the short option, or the 'val' of a long one that had an
                         * argument too many or too few; 0 for an unknown long option */
                        const char *what = argv[optind - 1];
                        char shown[3] = { '-', (char) optopt, 0 };

                        if (optopt > 0 && optopt < OPTION_BASE)
                                what = shown;
                        if (c == ':')
                                return verb_usage_error(guess_verb(argc, argv), "option '%s' requires an argument", what);
                        if (optopt >= OPTION_BASE)
                                return verb_usage_error(guess_verb(argc, argv), "option '%s' takes no argument", what);
                        return verb_usage_error(guess_verb(argc, argv), "unrecognized option '%s'", what);
                }

                if (c >= OPTION_BASE)
                        o = options + (c - OPTION_BASE);
                else
                        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                                if (options[i].short_name == c)
                                        o = options + i;
                if (!o)
                        abort();

                seen[o - options] = true;
                if (o->flag)
                        *o->flag = true;
                else if (o->parse(optarg) < 0)
                        return verb_usage_error(guess_verb(argc, argv), "invalid value '%s' for --%s%s%s",
                                                optarg ?: "", o->name, o->value ? ": expected " : "", o->value ?: "");
        }

        return 0;
}

/* Where v's command line has a USER: 1, or 0 for none (an optional "[USER]" is given when
 * all the verb's arguments are; before optional paths, "[USER] [TARGET]", when the first
 * argument is not a path: no user name begins with '/'). */
static unsigned verb_user_index(const Verb *v, unsigned n_args, char **args) {
        if (strncmp(v->args, "USER", 4) == 0)
                return 1;
        if (strncmp(v->args, "[USER]", 6) == 0 && n_args - 1 == v->max_args)
                return 1;
        if (strncmp(v->args, "[USER] [", 8) == 0 && n_args > 1 && args[1][0] != '/')
                return 1;
        return 0;
}

/* USER may be a name or a UID, wherever a verb takes one (as loginctl). On this machine NSS
 * answers both ways, and a name NSS does not know is reported as unknown rather than as a
 * user without a namespace (a typo reads differently). On another machine (-H, -M) its own
 * daemon knows: a UID is looked up among its namespaces. The name replaces args[i]. */
static int resolve_user_argument(sd_bus *bus, const Verb *v, unsigned n_args, char **args, char **ret) {
        unsigned i = verb_user_index(v, n_args, args);
        _cleanup_free_ char *name = NULL;
        const char *arg;
        uid_t uid;
        int r;

        if (i == 0 || args[i][0] == '\0')
                return 0;
        arg = args[i];

        if (arg_bus.transport == BUS_TRANSPORT_LOCAL) {
                _cleanup_(user_record_done) UserRecord u = {};
                bool numeric = parse_uid(arg, &uid) >= 0;

                r = numeric ? user_record_by_uid(uid, &u) : user_record_by_name(arg, &u);
                if (r == -ESRCH && numeric)
                        return log_error_errno(r, "No user has UID %s.", arg);
                if (r == -ESRCH)
                        return log_error_errno(r, "Unknown user '%s'.", arg);
                if (r < 0)
                        return 0;   /* NSS failed: the daemon will tell */
                name = TAKE_PTR(u.name);
        } else if (parse_uid(arg, &uid) >= 0) {
                r = namespace_name_by_uid(bus, uid, &name);
                if (r < 0)
                        return r;
        } else
                return 0;

        *ret = TAKE_PTR(name);
        args[i] = *ret;
        return 0;
}

/* Whether the command line makes sense for v; reports what does not. */
static int check_verb_usage(const Verb *v, const bool *seen, unsigned n_args, char **args) {
        for (size_t i = 0; i < ELEMENTSOF(options); i++)
                if (seen[i] && !verb_takes_option(v, options + i))
                        return verb_usage_error(v->name, "option --%s does not apply to '%s'", options[i].name, v->name);

        if (n_args - 1 < v->min_args)
                return verb_usage_error(v->name, "missing argument");
        if (n_args - 1 > v->max_args)
                return verb_usage_error(v->name, "too many arguments");

        /* The host is "" only where the contract allows it (share, propagation); verify takes
         * no USER. */
        if (n_args > 1 && args[1][0] == '\0' && !(v->flags & (VERB_EMPTY_USER_IS_HOST | VERB_NO_BUS)))
                return verb_usage_error(v->name, "empty user name");

        if (v->local_only && arg_bus.transport == BUS_TRANSPORT_REMOTE)
                return verb_usage_error(v->name, "'%s' cannot work over --host: %s. Run nsctl on that machine "
                                        "instead: ssh -t %s nsctl %s ...", v->name, v->local_only, arg_bus.host, v->name);
        if (v->local_only && arg_bus.transport == BUS_TRANSPORT_MACHINE)
                return verb_usage_error(v->name, "'%s' cannot work over --machine: %s. Run nsctl in the container "
                                        "instead: machinectl shell %s /usr/bin/nsctl %s ...", v->name, v->local_only,
                                        arg_bus.host, v->name);

        if (v->check)
                return v->check((int) n_args, args);
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *resolved_user = NULL;
        bool seen[ELEMENTSOF(options)] = {};
        const Verb *v;
        unsigned n_args;
        char **args;
        int r;

        /* Our messages are for the person at the terminal, not for the journal. */
        log_set_target(LOG_TARGET_CONSOLE);

        r = parse_argv(argc, argv, seen);
        if (r < 0)
                return NSCTL_EXIT_USAGE;
        if (arg_version) {
                printf("nsctl %s\n", PACKAGE_VERSION);
                return NSCTL_EXIT_SUCCESS;
        }

        /* polkit may ask only where somebody can answer: the agent nsctl starts on this
         * machine's terminal, or one the session runs (--ask-password). Without one, a call
         * that needs a password is refused as such, and error_advice() says what to do. */
        arg_bus.ask_password = arg_bus.ask_password_mode >= 0 ? arg_bus.ask_password_mode :
                arg_bus.transport == BUS_TRANSPORT_LOCAL && isatty(STDIN_FILENO);

        args = argv + optind;
        n_args = (unsigned) (argc - optind);
        v = n_args > 0 ? find_verb(args[0]) : NULL;

        if (arg_help) {
                if (v)
                        help_verb(v);
                else
                        help();
                return NSCTL_EXIT_SUCCESS;
        }
        if (n_args == 0) {
                /* As loginctl: no command lists. */
                static char *list_args[] = { (char *) "list", NULL };

                args = list_args;
                n_args = 1;
                v = find_verb("list");
        }
        if (!v) {
                verb_usage_error(NULL, "unknown command '%s'", args[0]);
                return NSCTL_EXIT_USAGE;
        }

        r = check_verb_usage(v, seen, n_args, args);
        if (r < 0)
                return NSCTL_EXIT_USAGE;

        if (!(v->flags & VERB_NO_BUS)) {
                r = bus_connect(&bus);
                if (r < 0)
                        return NSCTL_EXIT_FAILURE;
        }

        r = resolve_user_argument(bus, v, n_args, args, &resolved_user);
        if (r < 0)
                return NSCTL_EXIT_FAILURE;

        r = v->run(bus, (int) n_args, args);
        pager_close();

        if (r < 0)
                return NSCTL_EXIT_FAILURE;
        /* verbs may return a positive exit status of their own (attach) */
        return r;
}
