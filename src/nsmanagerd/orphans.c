/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * After `apt-get remove` with users logged in, their shells and systemd --user stay in their
 * views; a reinstalled daemon knows nothing of those (the registry's pin went with --release),
 * so each such user's next login gets a second view. Nobody would notice: say it, once at the
 * removal and once at the reinstall, with who and how to end them. The state files name each
 * view's user and namespace inode (MNTNS_ID); /proc says who is still in it. A view nothing was
 * in ended with the removal, and the kernel gives its inode number to the next namespace made
 * anywhere: its 64-bit id (MNTNS_UNIQUE_ID, never reused) tells them apart.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "macros.h"
#include "mount-util.h"
#include "orphans.h"
#include "state-dir.h"
#include "strv.h"
#include "text-escape.h"
#include "view-processes.h"

/* NAME=, MNTNS_ID= and MNTNS_UNIQUE_ID= (0 where the file has none) of one state file
 * (namespace-state.c writes them). */
static int read_state_file(int dir_fd, const char *file, char **ret_name, uint64_t *ret_id, uint64_t *ret_unique) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL, *name = NULL;
        uint64_t id = 0, unique = 0;
        size_t size = 0;
        ssize_t n;
        int fd;

        fd = openat(dir_fd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -errno;
        }
        while ((n = getline(&line, &size, f)) > 0) {
                if (line[n - 1] == '\n')
                        line[n - 1] = '\0';
                if (strncmp(line, "NAME=", 5) == 0) {
                        free(name);
                        name = strdup(line + 5);
                        if (!name)
                                return -ENOMEM;
                } else if (strncmp(line, "MNTNS_ID=", 9) == 0)
                        id = strtoull(line + 9, NULL, 10);
                else if (strncmp(line, "MNTNS_UNIQUE_ID=", 16) == 0)
                        unique = strtoull(line + 16, NULL, 10);
        }
        if (!name || id == 0)
                return -EBADMSG;
        *ret_name = TAKE_PTR(name);
        *ret_id = id;
        *ret_unique = unique;
        return 0;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
/* The name as a shell word, to be pasted: AD names hold blanks, and a directory may hold ';' or
 * '$(': quoted unless it is made of characters no shell treats specially. */
static char *shell_quote(const char *s) {
        if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._@%+=:,-") == strlen(s))
                return strdup(s);
        char *q = malloc(strlen(s) * 4 + 3), *o = q;
        if (!q)
                return NULL;
        *o++ = '\'';
        for (; *s; s++)
                if (*s == '\'') {
                        memcpy(o, "'\\''", 4);
                        o += 4;
                } else
                        *o++ = *s;
        *o++ = '\'';
        *o = 0;
        return q;
}

int orphans_report(const char *state_directory, bool removing) {
        _cleanup_(state_dir_done) StateDir d = {};
        _cleanup_(closedirp) DIR *dir = NULL;
        _cleanup_strv_free_ char **who = NULL, **kill = NULL, **names = NULL;
        _cleanup_free_ char *who_text = NULL, *kill_text = NULL;
        _cleanup_free_ uint64_t *ids = NULL, *uniques = NULL;
        _cleanup_free_ size_t *counts = NULL;
        size_t n_views = 0;
        struct dirent *de;
        struct stat self;
        int r;

        r = state_dir_init(&d, state_directory);
        if (r < 0)
                return log_oom();
        /* An upgrade keeps the registry: the next daemon finds every view again. */
        if (!removing && path_is_mount_point(AT_FDCWD, d.registry) > 0)
                return 0;
        dir = opendir(d.namespaces);
        if (!dir)
                return errno == ENOENT ? 0 : log_warning_errno(errno, "Failed to open '%s': %m", d.namespaces);
        /* nsfs inodes are of nsfs's one device: ours tells which. */
        if (stat("/proc/self/ns/mnt", &self) < 0)
                return log_warning_errno(errno, "Failed to stat /proc/self/ns/mnt: %m");

        /* The views first, then one walk of /proc for all of them. */
        while ((de = readdir(dir))) {
                _cleanup_free_ char *name = NULL;
                uint64_t id = 0, unique = 0;

                if (de->d_name[0] == '.')
                        continue;
                if (read_state_file(dirfd(dir), de->d_name, &name, &id, &unique) < 0)
                        continue;
                if (n_views % 16 == 0) {
                        uint64_t *b = realloc(ids, (n_views + 16) * sizeof(uint64_t));
                        if (!b)
                                return log_oom();
                        ids = b;
                        b = realloc(uniques, (n_views + 16) * sizeof(uint64_t));
                        if (!b)
                                return log_oom();
                        uniques = b;
                }
                if (strv_consume(&names, TAKE_PTR(name)) < 0)
                        return log_oom();
                uniques[n_views] = unique;
                ids[n_views++] = id;
        }
        if (n_views == 0)
                return 0;
        counts = calloc(n_views, sizeof(size_t));
        if (!counts)
                return log_oom();
        r = view_processes_count(self.st_dev, ids, uniques, n_views, counts);
        if (r < 0)
                return log_warning_errno(r, "Failed to read /proc: %m");

        for (size_t i = 0; i < n_views; i++) {
                _cleanup_free_ char *shown = NULL, *s = NULL;
                size_t n = counts[i];

                if (n == 0)
                        continue;
                shown = text_escape(names[i]);
                if (!shown || asprintf(&s, "%s (%zu process%s)", shown, n, n == 1 ? "" : "es") < 0 ||
                    strv_consume(&who, TAKE_PTR(s)) < 0)
                        return log_oom();
                s = NULL;
                _cleanup_free_ char *quoted = shell_quote(shown);
                if (!quoted || asprintf(&s, "loginctl kill-user %s", quoted) < 0 ||
                    strv_consume(&kill, TAKE_PTR(s)) < 0)
                        return log_oom();
        }
        if (!who)
                return 0;
        who_text = strv_join(who, ", ");
        kill_text = strv_join(kill, "; ");
        if (!who_text || !kill_text)
                return log_oom();
        if (removing)
                log_warning("Users still have processes in their views: %s. Those processes keep their views, "
                            "which no daemon manages any more: after a reinstall they are orphaned, and each of "
                            "these users' next login gets a second, new view. End them with: %s",
                            who_text, kill_text);
        else
                log_warning("Orphaned views, left from before nsmanager was removed: %s. nsmanagerd does not "
                            "know them: these users' next logins get new views, so the old ones live on beside "
                            "them until these processes end. End them with: %s",
                            who_text, kill_text);
        return (int) strv_length(who);
}
