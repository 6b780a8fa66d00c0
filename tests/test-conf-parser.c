/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/conf-parser.c on a table of its own (test-manager-config.c tests nsmanagerd.conf's):
 * the files and drop-ins it reads, every error it reports with file and line, the assignments it
 * keeps, and its value parsers. TAP output. */
#include <stddef.h>
#include <sys/stat.h>

#include "conf-parser.h"
#include "strv.h"
#include "tap.h"
#include "time-util.h"

typedef struct Alpha {
        bool flag;
        uint64_t delay;
        uint64_t size;
        char *root;
        char **paths;
        char **names;
} Alpha;

typedef struct Beta {
        unsigned count;
} Beta;

static const ConfigItem items[] = {
        { "Alpha", "Flag", config_parse_bool, offsetof(Alpha, flag) },
        { "Alpha", "DelaySec", config_parse_sec, offsetof(Alpha, delay) },
        { "Alpha", "Size", config_parse_size, offsetof(Alpha, size) },
        { "Alpha", "Root", config_parse_absolute_path, offsetof(Alpha, root) },
        { "Alpha", "Paths", config_parse_absolute_path_list, offsetof(Alpha, paths) },
        { "Alpha", "Names", config_parse_name_list, offsetof(Alpha, names) },
        { "Beta", "Count", config_parse_unsigned, offsetof(Beta, count) },
};

static void alpha_done(Alpha *a) {
        free(a->root);
        strv_free(a->paths);
        strv_free(a->names);
        *a = (Alpha) {};
}

/* A file that may hold [Alpha] only ([Beta] is in the table: "does not belong"), or both. */
static ConfigContext context(Alpha *a, Beta *b, ConfigSection sections[2], ConfigAssignments *record) {
        sections[0] = (ConfigSection) { "Alpha", a };
        sections[1] = (ConfigSection) { "Beta", b };
        return (ConfigContext) { .items = items, .n_items = ELEMENTSOF(items), .sections = sections,
                                 .n_sections = b ? 2 : 1, .record_section = record ? "Alpha" : NULL, .record = record };
}

static void test_values(const char *dir) {
        char path[300];
        ConfigSection sections[2];
        Alpha a = {};
        Beta b = {};
        ConfigContext c = context(&a, &b, sections, NULL);
        char **errors = NULL;

        snprintf(path, sizeof path, "%s/values.conf", dir);
        test_write_file(path, "# a comment\n; another\n\n[Alpha]\n  Flag =  yes  \nDelaySec=1min 30s\nSize=64M\n"
                              "Root=/srv/x\nRoot=/srv/y\nPaths=/a /b\nPaths=/b /c\nNames=alice 2001\n[Beta]\nCount=7\n");
        check(config_parse_file(&c, path, true, &errors) == 0 && !errors, "a valid file parses, without errors");
        check(a.flag && a.delay == 90 * USEC_PER_SEC && a.size == 64 << 20 && b.count == 7,
              "values of each type, blanks around key and value stripped");
        check(streq(a.root, "/srv/y"), "a later assignment of a value replaces it");
        check(strv_length(a.paths) == 3 && streq(a.paths[2], "/c") && strv_length(a.names) == 2,
              "lists accumulate, a duplicate once");

        test_write_file(path, "[Alpha]\nPaths=\nSize=\n");
        check(config_parse_file(&c, path, true, &errors) == 0 && !a.paths && a.size == 0,
              "an empty assignment resets a list, and a size to its default");
        alpha_done(&a);
}

/* Every line's error, in order, with file and line; the first one's code. */
static void test_errors(const char *dir) {
        static const char *const want[] = {
                "errors.conf:1: assignment outside of a section",
                "errors.conf:2: invalid section header '[Alpha'",
                "errors.conf:4: unknown section [alpha] (names are case-sensitive: [Alpha])",
                "errors.conf:6: section [Beta] does not belong in this file, which holds only [Alpha]",
                "errors.conf:8: 'Flag yes' is not an assignment (KEY=VALUE)",
                "errors.conf:9: Count= belongs in [Beta], not in [Alpha]",
                "errors.conf:10: unknown setting Flg= in [Alpha] (did you mean Flag=?)",
                "errors.conf:11: unknown setting Delay= in [Alpha] (did you mean DelaySec=?)",
                "errors.conf:12: unknown setting Xyzzy= in [Alpha]",
                "errors.conf:13: 'maybe' is not a boolean (yes/no)",
                "errors.conf:14: '/' is not an absolute, normalized path other than /",
                "errors.conf:15: 'a/b' is not a valid user name",
                "errors.conf:16: 'soon' is not a time span (e.g. 10s, 500ms, 1min)",
        };
        char path[300];
        ConfigSection sections[2];
        Alpha a = {};
        ConfigContext c = context(&a, NULL, sections, NULL);
        char **errors = NULL;
        bool all = true;
        int r;

        snprintf(path, sizeof path, "%s/errors.conf", dir);
        test_write_file(path, "Flag=yes\n[Alpha\nFlag=yes\n[alpha]\nFlag=yes\n[Beta]\n[Alpha]\nFlag yes\nCount=1\nFlg=1\n"
                              "Delay=1s\nXyzzy=1\nFlag=maybe\nRoot=/\nNames=bob a/b\nDelaySec=soon\nSize=1K\n");
        r = config_parse_file(&c, path, true, &errors);
        check(r == -EINVAL, "a file with errors: -EINVAL (%d)", r);
        check(strv_length(errors) == ELEMENTSOF(want), "one error a bad line, none for the assignments of a refused "
              "section: %zu errors", strv_length(errors));
        for (size_t i = 0; i < ELEMENTSOF(want) && i < strv_length(errors); i++) {
                size_t n = strlen(errors[i]), m = strlen(want[i]);
                bool same = n >= m && streq(errors[i] + n - m, want[i]) && strncmp(errors[i], path, strlen(path)) == 0;
                if (!same)
                        check(false, "error %zu: '%s', not '%s'", i, errors[i], want[i]);
                all = all && same;
        }
        check(all, "each error names the file and the line, and says what is wrong");
        check(a.size == 1024 && !a.names, "the file is read to its end; a refused list is not half taken");
        alpha_done(&a);
        errors = strv_free(errors);

        snprintf(path, sizeof path, "%s/missing.conf", dir);
        check(config_parse_file(&c, path, false, &errors) == 0 && !errors, "a missing file that need not exist: nothing");
        r = config_parse_file(&c, path, true, &errors);
        check(r == -ENOENT && strv_length(errors) == 1 && strstr(errors[0], "missing.conf: No such file or directory"),
              "a missing file that must exist: -ENOENT, named (%s)", errors ? errors[0] : "(none)");
        strv_free(errors);
}

static void test_dropins(const char *dir) {
        char path[300], sub[400];
        ConfigSection sections[2];
        Alpha a = {};
        ConfigContext c = context(&a, NULL, sections, NULL);
        char **errors = NULL, **names = NULL;
        int r;

        snprintf(path, sizeof path, "%s/main.conf", dir);
        test_write_file(path, "[Alpha]\nRoot=/main\nPaths=/main\n");
        check(config_parse_file_with_dropins(&c, path, true, &errors) == 0 && streq(a.root, "/main"),
              "no drop-in directory: the main file alone");
        snprintf(sub, sizeof sub, "%s.d", path);
        mkdir(sub, 0755);
        snprintf(sub, sizeof sub, "%s.d/20-second.conf", path);
        test_write_file(sub, "[Alpha]\nRoot=/second\nPaths=\nPaths=/second\n");
        snprintf(sub, sizeof sub, "%s.d/10-first.conf", path);
        test_write_file(sub, "[Alpha]\nRoot=/first\nPaths=/first\n");
        snprintf(sub, sizeof sub, "%s.d/30-notes.txt", path);
        test_write_file(sub, "[Alpha]\nRoot=/txt\n");
        snprintf(sub, sizeof sub, "%s.d/.hidden.conf", path);
        test_write_file(sub, "[Alpha]\nFlag=yes\n");

        snprintf(sub, sizeof sub, "%s.d", path);
        check(config_dir_conf_names(sub, &names) == 0 && strv_length(names) == 2 && streq(names[0], "10-first") &&
              streq(names[1], "20-second"), "config_dir_conf_names: NAME of each NAME.conf, in lexical order");
        names = strv_free(names);
        snprintf(sub, sizeof sub, "%s/none.d", dir);
        check(config_dir_conf_names(sub, &names) == 0 && !names, "config_dir_conf_names: a missing directory has none");

        alpha_done(&a);
        check(config_parse_file_with_dropins(&c, path, true, &errors) == 0 && !errors, "main file and drop-ins parse");
        check(streq(a.root, "/second") && strv_length(a.paths) == 1 && streq(a.paths[0], "/second") && !a.flag,
              "drop-ins after the main file, in lexical order; others and hidden ones are not read");
        alpha_done(&a);

        snprintf(sub, sizeof sub, "%s.d/10-first.conf", path);
        test_write_file(sub, "[Alpha]\nFlag=perhaps\n");
        r = config_parse_file_with_dropins(&c, path, true, &errors);
        check(r == -EINVAL && strv_length(errors) == 1 && strstr(errors[0], "main.conf.d/10-first.conf:2: "),
              "an error of a drop-in names it (%s)", errors ? errors[0] : "(none)");
        alpha_done(&a);
        strv_free(errors);
}

/* What is kept of [Alpha] applies again, in order, to another struct. */
static void test_record(const char *dir) {
        char path[300];
        ConfigSection sections[2];
        ConfigAssignments record = {};
        Alpha a = {}, again = {};
        Beta b = {};
        ConfigContext c = context(&a, &b, sections, &record);
        char **errors = NULL;

        snprintf(path, sizeof path, "%s/record.conf", dir);
        test_write_file(path, "[Alpha]\nPaths=/a\nFlag=maybe\nPaths=\nPaths=/b\nFlag=yes\n[Beta]\nCount=3\n");
        check(config_parse_file(&c, path, true, &errors) == -EINVAL && strv_length(errors) == 1, "one refused value");
        check(record.n == 4 && record.items[0].item == &items[4] && streq(record.items[0].value, "/a") &&
              streq(record.items[1].value, "") && record.items[3].item == &items[0],
              "the assignments of the recorded section that parsed, in order, and none of [Beta]");
        check(config_assignments_apply(&record, &again) == 0 && again.flag && strv_length(again.paths) == 1 &&
              streq(again.paths[0], "/b"), "applied again: the same values");
        config_assignments_done(&record);
        check(record.n == 0 && !record.items, "config_assignments_done empties it");
        alpha_done(&a);
        alpha_done(&again);
        strv_free(errors);
}

static void test_errors_join(void) {
        char *three[] = { (char *) "a:1: x", (char *) "b:2: y", (char *) "c:3: z", NULL };
        char *s;

        s = config_errors_join(three, 10);
        check(s && streq(s, "a:1: x; b:2: y; c:3: z"), "config_errors_join: all of them (%s)", s ?: "(null)");
        free(s);
        s = config_errors_join(three, 2);
        check(s && streq(s, "a:1: x; b:2: y; and 1 more (nsctl verify lists them all)"),
              "config_errors_join: at most max, then how many more (%s)", s ?: "(null)");
        free(s);
        s = config_errors_join(NULL, 2);
        check(s && streq(s, ""), "config_errors_join: none is empty");
        free(s);
}

int main(void) {
        char dir[256];

        if (test_mkdtemp(dir, sizeof dir, "conf-parser")) {
                test_values(dir);
                test_errors(dir);
                test_dropins(dir);
                test_record(dir);
                test_rm_rf(dir);
        }
        test_errors_join();
        return tap_finish();
}
