/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The checks of strings a caller hands the daemon over the bus: paths (BindMount, Unmount,
 * SetPropagation, …), user names, session ids, and the object paths of namespaces (any caller
 * may address any path). Each must refuse what would escape its role (a "..", a second
 * component, a space in a state file, a second name for one object), so besides not crashing
 * each acceptance is checked against what it promises. */
#include <limits.h>

#include "fuzz.h"
#include "bus-errors.h"
#include "bus-path.h"
#include "namespace-dbus.h"
#include "namespace-session.h"
#include "namespace.h"
#include "path-util.h"
#include "text-escape.h"
#include "user-util.h"

static void check_path(const char *s) {
        size_t n = strlen(s);

        if (!path_is_absolute_normalized(s))
                return;
        FUZZ_CHECK(s[0] == '/' && n < PATH_MAX);
        if (n == 1)
                return;
        FUZZ_CHECK(s[n - 1] != '/');
        FUZZ_CHECK(!strstr(s, "//") && !strstr(s, "/./") && !strstr(s, "/../"));
        FUZZ_CHECK(!(n >= 2 && streq(s + n - 2, "/.")) && !(n >= 3 && streq(s + n - 3, "/..")));
        /* The *at() form: what remains is relative and itself free of empty components. */
        FUZZ_CHECK(streq(path_skip_root(s), s + 1));
}

static void check_filename(const char *s) {
        _cleanup_free_ char *p = NULL;

        if (!filename_is_valid(s))
                return;
        FUZZ_CHECK(*s && !strchr(s, '/') && !streq(s, ".") && !streq(s, "..") && strlen(s) <= NAME_MAX);
        /* One component below a directory is always a normalized path. */
        FUZZ_CHECK(asprintf(&p, "/%s", s) >= 0);
        FUZZ_CHECK(path_is_absolute_normalized(p));
}

static void check_user_name(const char *s) {
        if (!valid_user_name(s))
                return;
        /* Names become file names (user.d/NAME.conf, the state file, the view's directory) and
         * lines of the state file, and go on the bus and into the journal as they are. */
        FUZZ_CHECK(filename_is_valid(s));
        FUZZ_CHECK(text_is_clean(s) && !strpbrk(s, "\n\r\t"));
}

static void check_session_id(const char *s) {
        if (!valid_session_id(s))
                return;
        /* One word of the state file ("SESSION=ID PID START"). */
        FUZZ_CHECK(strlen(s) <= SESSION_ID_MAX);
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                FUZZ_CHECK(*c > ' ' && *c < 127 && *c != ':');
}

static void check_object_path(const char *s) {
        _cleanup_free_ char *canonical = NULL;
        uid_t uid;

        if (namespace_bus_path_to_uid(s, &uid) < 0)
                return;
        /* The path namespace_bus_path() gives that uid, and no other. */
        FUZZ_CHECK(uid != (uid_t) -1);
        FUZZ_CHECK(asprintf(&canonical, NSM_NAMESPACE_PATH_PREFIX "/_%u", (unsigned) uid) >= 0);
        FUZZ_CHECK(streq(canonical, s));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size);

        if (!s)
                return 0;
        check_path(s);
        check_filename(s);
        check_user_name(s);
        check_session_id(s);
        check_object_path(s);
        return 0;
}
