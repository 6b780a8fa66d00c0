/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/host.c: the record of what a start changed on the host, and undoing it newest
 * first. Directories only (the binds and propagation changes need root and a namespace of
 * their own: tests/test_restart.py and tests/test_namespace.py). TAP output. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "tap.h"

static bool exists(const char *path) {
        struct stat st;
        return stat(path, &st) == 0;
}

static void test_undo_newest_first(void) {
        char dir[512], a[600], b[700], kept[600], filled[600], file[700];
        HostChanges c = {};

        if (!test_mkdtemp(dir, sizeof dir, "host"))
                return;
        snprintf(a, sizeof a, "%s/a", dir);
        snprintf(b, sizeof b, "%s/a/b", dir);
        snprintf(kept, sizeof kept, "%s/kept", dir);
        snprintf(filled, sizeof filled, "%s/filled", dir);
        snprintf(file, sizeof file, "%s/filled/f", dir);

        check(mkdir(kept, 0755) == 0, "a directory made by somebody else");
        check(mkdir(a, 0755) == 0 && host_changes_add_mkdir(&c, a) == 0, "a/ made and recorded");
        check(mkdir(b, 0755) == 0 && host_changes_add_mkdir(&c, b) == 0, "a/b/ made and recorded");
        check(mkdir(filled, 0755) == 0 && host_changes_add_mkdir(&c, filled) == 0, "filled/ made and recorded");
        check(test_write_file(file, "x") == 0, "something came into filled/ since");
        check(c.n == 3 && c.items[0].type == HOST_CHANGE_MKDIR, "three changes, oldest first");

        host_changes_undo(&c);
        check(!exists(b) && !exists(a), "a/b/ then a/ removed (newest first, or a/ would not be empty)");
        check(exists(kept), "what was not ours stays");
        check(exists(file), "a directory that is not empty stays, with what came into it");
        check(c.n == 0 && !c.items, "the record is empty afterwards");
        test_rm_rf(dir);
}

static void test_take_and_done(void) {
        HostChanges c = {};
        HostChange ch = { .type = HOST_CHANGE_BIND, .path = strdup("/x"), .fd = open("/", O_PATH | O_CLOEXEC) };
        HostChange gone = { .type = HOST_CHANGE_BIND, .path = strdup("/y"), .fd = open("/", O_PATH | O_CLOEXEC) };

        check(ch.path && ch.fd >= 0, "a change with a path and an fd");
        check(host_changes_take(&c, &ch) == 0, "taken");
        check(c.n == 1 && c.items[0].path && c.items[0].fd >= 0, "the record holds it");
        check(!ch.path && ch.fd < 0, "the change is left empty (nothing freed twice)");
        check(host_changes_take(NULL, &gone) == 0 && !gone.path && gone.fd < 0, "taken by no record: forgotten");
        host_changes_done(&c);
        check(c.n == 0 && !c.items, "done forgets, undoing nothing");
}

int main(void) {
        test_undo_newest_first();
        test_take_and_done();
        return tap_finish();
}
