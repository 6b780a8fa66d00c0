/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "fs-util.h"
#include "macros.h"
#include "state-dir.h"

int state_dir_init(StateDir *d, const char *root) {
        *d = (StateDir) {};
        if (!(d->root = strdup(root)) ||
            asprintf(&d->namespaces, "%s/namespaces", root) < 0 ||
            asprintf(&d->registry, "%s/registry", root) < 0 ||
            asprintf(&d->pins, "%s/pins", root) < 0 ||
            asprintf(&d->shared_subtrees, "%s/shared-subtrees", root) < 0 ||
            asprintf(&d->attach, "%s/attach", root) < 0) {
                state_dir_done(d);
                return -ENOMEM;
        }
        return 0;
}

void state_dir_done(StateDir *d) {
        free(d->root);
        free(d->namespaces);
        free(d->registry);
        free(d->pins);
        free(d->shared_subtrees);
        free(d->attach);
        *d = (StateDir) {};
}

int state_dir_create(StateDir *d) {
        struct statfs sfs;
        int r;

        r = mkdir_parents(d->root, 0755);
        if (r < 0)
                return r;
        if (mkdir(d->root, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(d->namespaces, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (statfs(d->root, &sfs) < 0)
                return -errno;
        d->is_volatile = sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC;
        return 0;
}

char *state_dir_namespace_file(const StateDir *d, const char *name) {
        char *p;
        return asprintf(&p, "%s/%s", d->namespaces, name) < 0 ? NULL : p;
}

int state_dir_write_file(const StateDir *d, const char *path, const char *contents, size_t size) {
        return write_file_atomic(path, contents, size, d->is_volatile ? 0 : WRITE_FILE_SYNC);
}
