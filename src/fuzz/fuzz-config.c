/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The configuration as the daemon reads it: nsmanagerd.conf, a drop-in, a group's and a user's
 * [View] file (conf-parser.c through manager_config_load()), then the [View] policy they add up
 * to (view_policy_load()), checked as a view would apply it (view_policy_check()): a
 * configuration the parser accepts holds no [View] entry that applying would find malformed.
 *
 * The input is up to four files separated by form feeds ('\f', a page break):
 *
 *   nsmanagerd.conf \f nsmanagerd.conf.d/50-fuzz.conf \f group.d/fuzzgroup.conf \f user.d/fuzzuser.conf
 *
 * written into a directory of their own (made once per process in $NSM_FUZZ_TMPDIR, else
 * $TMPDIR, else /tmp, and removed at exit); a file the input does not reach is absent. */
#include <limits.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "log.h"
#include "manager-config.h"
#include "path-util.h"
#include "strv.h"
#include "view-policy.h"

static const char *const files[] = {
        "nsmanagerd.conf",
        "nsmanagerd.conf.d/50-fuzz.conf",
        "group.d/fuzzgroup.conf",
        "user.d/fuzzuser.conf",
};
static const char *const dirs[] = { "nsmanagerd.conf.d", "group.d", "user.d" };

static char *top;

static void remove_top(void) {
        char p[PATH_MAX];

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                snprintf(p, sizeof p, "%s/%s", top, files[i]);
                (void) unlink(p);
        }
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(p, sizeof p, "%s/%s", top, dirs[i]);
                (void) rmdir(p);
        }
        (void) rmdir(top);
        top = mfree(top);
}

static int make_top(void) {
        const char *base = getenv("NSM_FUZZ_TMPDIR") ?: getenv("TMPDIR") ?: "/tmp";
        char p[PATH_MAX];

        if (asprintf(&top, "%s/nsm-fuzz-config.XXXXXX", base) < 0)
                return -ENOMEM;
        if (!mkdtemp(top)) {
                fprintf(stderr, "mkdtemp %s: %m\n", top);
                abort();
        }
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(p, sizeof p, "%s/%s", top, dirs[i]);
                FUZZ_CHECK(mkdir(p, 0755) >= 0);
        }
        (void) atexit(remove_top);
        log_set_max_level(LOG_ERR);
        return 0;
}

static void write_part(size_t i, const char *content, size_t size) {
        _cleanup_fclose_ FILE *f = NULL;
        char p[PATH_MAX];

        snprintf(p, sizeof p, "%s/%s", top, files[i]);
        if (!content) {
                FUZZ_CHECK(unlink(p) >= 0 || errno == ENOENT);
                return;
        }
        f = fopen(p, "we");
        FUZZ_CHECK(f);
        FUZZ_CHECK(fwrite(content, 1, size, f) == size);
        FUZZ_CHECK(fflush(f) == 0);
}

static void check_manager_config(const ManagerConfig *c) {
        FUZZ_CHECK(path_is_absolute_normalized(c->subtree_root) && !streq(c->subtree_root, "/"));
        FUZZ_CHECK(path_is_absolute_normalized(c->state_directory) && !streq(c->state_directory, "/"));
        for (char **s = c->shared_subtrees; s && *s; s++)
                FUZZ_CHECK(path_is_absolute_normalized(*s) && !streq(*s, "/"));
        for (char **s = c->exclude_users; s && *s; s++)
                FUZZ_CHECK(**s && !strpbrk(*s, "/: \t\n"));
        FUZZ_CHECK(view_propagation_to_string(c->view_propagation));
        FUZZ_CHECK(c->operation_timeout_usec > 0 && c->operation_timeout_usec != UINT64_MAX);
        FUZZ_CHECK(c->rate_limit_interval_usec > 0 && c->rate_limit_interval_usec != UINT64_MAX);
        FUZZ_CHECK(c->polkit_timeout_usec > 0 && c->polkit_timeout_usec != UINT64_MAX);
        FUZZ_CHECK(c->audit_interval_usec > 0 && c->audit_interval_usec != UINT64_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const UserRecord u = { .name = (char *) "fuzzuser", .uid = 2001, .gid = 0, .home = (char *) "/home/fuzzuser",
                               .shell = (char *) "/bin/sh" };
        _cleanup_free_ char *main_file = NULL;
        _cleanup_(nsm_error_done) NsmError error = {};
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_(view_policy_done) ViewPolicy p = {};
        char *const groups[] = { (char *) "fuzzgroup", NULL };
        const char *s = (const char *) data, *end = s + size;
        ManagerConfig c;
        int r;

        if (!top && make_top() < 0)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                const char *ff = s && s < end ? memchr(s, '\f', end - s) : NULL;
                write_part(i, s, ff ? (size_t) (ff - s) : s ? (size_t) (end - s) : 0);
                s = ff ? ff + 1 : NULL;
        }
        if (asprintf(&main_file, "%s/%s", top, files[0]) < 0)
                return 0;

        manager_config_init(&c);
        if (!c.subtree_root || !c.state_directory || !c.shared_subtrees) {
                manager_config_done(&c);
                return 0;
        }
        r = manager_config_load(main_file, &c, &errors);
        /* A refusal names the file and line of each error; an accepted configuration holds only
         * valid values. */
        if (r < 0 && r != -ENOMEM) {
                FUZZ_CHECK(errors);
                for (char **e = errors; *e; e++)
                        FUZZ_CHECK(strstr(*e, top));
        }
        if (r < 0) {
                manager_config_done(&c);
                return 0;
        }
        check_manager_config(&c);

        r = view_policy_load(&c, u.name, groups, &p);
        manager_config_done(&c);
        if (r < 0)
                return 0;
        /* What the parser let through, applying parses the same way (a group name that NSS
         * cannot find for %g is the only other refusal). */
        r = view_policy_check(&p, &u, &error);
        FUZZ_CHECK(r == 0 || r == -ENOMEM || (r != -EINVAL && error.message));
        return 0;
}
