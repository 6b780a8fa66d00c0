/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/shared/fs-util.c: creating a path without following a symlink, in directories of one owner,
 * and undoing it. TAP output. */
#include <fcntl.h>
#include <sys/stat.h>

#include "fs-util.h"
#include "macros.h"
#include "tap.h"

static void test_open_path_creating(void) {
        char dir[256], p[400];
        CreatedPaths created = {};
        int root, fd = -1, r;
        struct stat st;

        if (!test_mkdtemp(dir, sizeof dir, "walk"))
                return;
        root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        snprintf(p, sizeof p, "%s/target", dir);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/home", dir);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/home/link", dir);
        (void) symlink("../target", p);

        r = open_path_creating(root, "/home/link/x", PATH_DIRECTORY, &created, &fd);
        snprintf(p, sizeof p, "%s/target/x", dir);
        check(r == -ELOOP && created.n == 0 && lstat(p, &st) < 0, "a symlink on the way is -ELOOP, nothing made behind it");
        r = open_path_creating(root, "/home/missing/x", PATH_EXISTING, &created, &fd);
        snprintf(p, sizeof p, "%s/home/missing", dir);
        check(r == -ENOENT && created.n == 0 && lstat(p, &st) < 0, "PATH_EXISTING creates nothing");
        r = open_path_creating(root, "/home/a/b/file", PATH_FILE, &created, &fd);
        snprintf(p, sizeof p, "%s/home/a/b/file", dir);
        check(r == 0 && created.n == 3 && lstat(p, &st) == 0 && S_ISREG(st.st_mode), "PATH_FILE creates dirs and the file");
        if (fd >= 0)
                close(fd);
        created_paths_undo(&created);
        snprintf(p, sizeof p, "%s/home/a", dir);
        check(lstat(p, &st) < 0, "undo removes what was created");
        created_paths_done(&created);

        /* Creating only in directories of one owner: ours here, as the caller's in the daemon. */
        char *refused_dir = NULL;
        uid_t me = geteuid();
        r = open_path_creating_owned(root, "/home/a/b", PATH_DIRECTORY, me + 1, &created, &refused_dir, &fd);
        snprintf(p, sizeof p, "%s/home/a", dir);
        check(r == -EPERM && refused_dir && streq(refused_dir, "/home") && created.n == 0 && lstat(p, &st) < 0,
              "open_path_creating_owned: nothing created in a directory of another owner, which is named");
        free(refused_dir);
        refused_dir = NULL;
        r = open_path_creating_owned(root, "/top", PATH_FILE, me + 1, &created, &refused_dir, &fd);
        check(r == -EPERM && refused_dir && streq(refused_dir, "/"), "open_path_creating_owned: the root is named '/'");
        free(refused_dir);
        refused_dir = NULL;
        r = open_path_creating_owned(root, "/home", PATH_DIRECTORY, me + 1, &created, &refused_dir, &fd);
        check(r == 0 && created.n == 0 && !refused_dir, "open_path_creating_owned: what exists is opened, whoever owns it");
        if (r == 0)
                close(fd);
        r = open_path_creating_owned(root, "/home/a/b", PATH_DIRECTORY, me, &created, &refused_dir, &fd);
        check(r == 0 && created.n == 2, "open_path_creating_owned: created in a directory of the owner, and on in its own");
        if (r == 0)
                close(fd);
        created_paths_undo(&created);
        created_paths_done(&created);
        close(root);
        test_rm_rf(dir);
}

int main(void) {
        test_open_path_creating();
        return tap_finish();
}
