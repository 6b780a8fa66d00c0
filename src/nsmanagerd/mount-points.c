/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-util.h"
#include "log.h"
#include "mount-points-remove.h"
#include "mount-points.h"

typedef struct RemoveCall {
        char *description;
        uid_t uid;
        uint64_t mntns_id;
        bool inode;
        char *const *paths;      /* the caller's, read within child_start() */
} RemoveCall;

static int append_remove(sd_bus_message *call, void *userdata) {
        const RemoveCall *c = userdata;
        int r;

        r = sd_bus_message_append(call, "utb", (uint32_t) c->uid, c->mntns_id, (int) c->inode);
        if (r < 0)
                return r;
        return bus_message_append_bytes_strv(call, (char **) c->paths);
}

static void on_removed(const NsmError *error, sd_bus_message *reply, void *userdata) {
        RemoveCall *c = userdata;
        uint32_t removed = 0;

        if (error)
                log_debug("%s failed, ignoring: %s", c->description, nsm_error_message(error));
        else if (sd_bus_message_read(reply, "u", &removed) < 0)
                log_debug("%s: the helper process answered with a malformed result, ignoring.", c->description);
        else if (removed > 0)
                log_debug("%s: removed %u.", c->description, (unsigned) removed);
        free(c->description);
        free(c);
}

void mount_points_remove(ChildSet *children, const char *name, uid_t uid, uint64_t mntns_id, uint64_t mntns_inode,
                         char *const *paths, uint64_t deadline) {
        bool inode = mntns_id == 0;   /* a kernel before 6.8: the tag names the inode */
        RemoveCall *c;
        int r;

        if (inode)
                mntns_id = mntns_inode;
        if (!children || !paths || !*paths || mntns_id == 0)
                return;
        c = calloc(1, sizeof(RemoveCall));
        if (!c)
                return;
        *c = (RemoveCall) { .uid = uid, .mntns_id = mntns_id, .inode = inode, .paths = paths };
        if (asprintf(&c->description, "Removing the empty mount points the [View] policy made for '%s'", name) < 0) {
                free(c);
                return;
        }
        ChildSpec spec = {
                .description = c->description,
                .interface = &mount_points_remove_interface,
                .method = "Remove",
                .append = append_remove,
                .reply = on_removed,
                .deadline = deadline,
                .owner = uid,
                .userdata = c,
        };
        r = child_start(children, &spec);
        c->paths = NULL;
        if (r < 0) {
                log_debug_errno(r, "%s: failed to start: %m", c->description);
                free(c->description);
                free(c);
        }
}
