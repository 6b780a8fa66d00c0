/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>

#include "fd-store.h"
#include "log.h"
#include "macros.h"
#include "strv.h"

typedef struct StoredFd {
        char *name;
        int fd;
} StoredFd;

struct StoredFds {
        Hashmap *by_name;
        StoredFd *entries;
        size_t n;
};

bool fd_store_available(void) {
        return getenv("NOTIFY_SOCKET");
}

int fd_store_new_name(char ret[static FD_STORE_NAME_MAX]) {
        sd_id128_t id;
        int r;

        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        snprintf(ret, FD_STORE_NAME_MAX, "session-%016llx", (unsigned long long) (id.qwords[0] ^ id.qwords[1]));
        return 0;
}

int fd_store_add(int fd, const char *name) {
        _cleanup_free_ char *state = NULL;

        if (!fd_store_available())
                return 0;
        if (asprintf(&state, "FDSTORE=1\nFDNAME=%s", name) < 0)
                return -ENOMEM;
        return sd_pid_notify_with_fds(0, false, state, &fd, 1);
}

void fd_store_remove(const char *name) {
        _cleanup_free_ char *state = NULL;

        if (!name || !fd_store_available())
                return;
        if (asprintf(&state, "FDSTOREREMOVE=1\nFDNAME=%s", name) < 0)
                return;
        (void) sd_pid_notify(0, false, state);
}

int stored_fds_receive(StoredFds **ret) {
        _cleanup_strv_free_ char **names = NULL;
        StoredFds *s;
        int n;

        s = calloc(1, sizeof(StoredFds));
        if (!s)
                return -ENOMEM;
        s->by_name = hashmap_new();
        if (!s->by_name) {
                free(s);
                return -ENOMEM;
        }
        n = sd_listen_fds_with_names(/* unset_environment= */ true, &names);
        if (n < 0) {
                log_warning_errno(n, "Failed to receive the fds systemd kept for us, ignoring: %m");
                n = 0;
        }
        if (n > 0) {
                s->entries = calloc(n, sizeof(StoredFd));
                if (!s->entries) {
                        for (int i = 0; i < n; i++)
                                safe_close(SD_LISTEN_FDS_START + i);
                        n = 0;
                }
        }
        for (int i = 0; i < n; i++) {
                StoredFd *e = &s->entries[s->n];

                e->fd = SD_LISTEN_FDS_START + i;
                e->name = names && names[i] ? names[i] : NULL;
                if (!e->name || hashmap_put(s->by_name, e->name, e) < 0) {
                        /* Unnamed, or a name twice: nothing of ours. */
                        safe_close(e->fd);
                        continue;
                }
                if (names)
                        names[i] = NULL;
                s->n++;
        }
        if (s->n > 0)
                log_info("systemd kept %zu session fd(s) for us.", s->n);
        *ret = s;
        return 0;
}

int stored_fds_take(StoredFds *s, const char *name) {
        StoredFd *e;

        if (!s || !name)
                return -ENOENT;
        e = hashmap_remove(s->by_name, name);
        if (!e)
                return -ENOENT;
        return TAKE_FD(e->fd);
}

StoredFds *stored_fds_release(StoredFds *s, bool unstore) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++) {
                if (s->entries[i].fd >= 0) {
                        safe_close(s->entries[i].fd);
                        if (unstore) {
                                log_debug("Dropping the stored fd '%s': no session has it.", s->entries[i].name);
                                fd_store_remove(s->entries[i].name);
                        }
                }
                free(s->entries[i].name);
        }
        hashmap_free(s->by_name);
        free(s->entries);
        free(s);
        return NULL;
}
