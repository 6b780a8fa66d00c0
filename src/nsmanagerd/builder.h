/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#include "child.h"
#include "builder-message.h"

/* The daemon's client of the view builder (src/builder/: its loop in builder-main.c, its
 * requests in builder-message.h): one long-lived helper process, forked at start-up, that holds
 * no daemon state. It builds views in-process (view-build.c: clone, unshare, pivot, then setns() back
 * to the host), pins and unpins them in the registry (registry.c) and reads mount tables,
 * so a login does not pay for a fork. It never looks up a path a user controls; work that
 * does runs in killable children (child.c).
 *
 * The daemon sends it one request at a time and never waits for it: each request has a
 * deadline, and a builder that misses one is killed and replaced by a new one (what it was
 * doing is answered TimedOut; the requests behind it go to the new builder). */

typedef struct Builder Builder;

typedef struct BuilderItem {
        char *name;
        int fd;                  /* -ENOENT: a pin file without a namespace */
} BuilderItem;

typedef struct BuilderReply {
        int result;              /* what succeeded (a build: the view's number of mounts) */
        const NsmError *error;   /* what failed, named by the builder (or NULL) */
        int fd;                  /* the namespace of a build; take it (set to -EBADF) to keep it */
        const char *data;        /* a mount table (NUL-terminated), or NULL */
        size_t size;
        BuilderItem *items;      /* the pins of a list; take fds (set to -EBADF) to keep them */
        size_t n_items;
} BuilderReply;

typedef void (*BuilderDoneFunc)(BuilderReply *reply, void *userdata);

/* Starts the builder process. 'children' adopts builders that had to be given up. */
int builder_new(sd_event *event, ChildSet *children, const char *registry_pin, const char *pins_dir, Builder **ret);
Builder *builder_free(Builder *b);
static inline void builder_freep(Builder **b) {
        builder_free(*b);
}

/* Builds the view and pins it as pins_dir/NAME; the reply's fd is the namespace, its result
 * the number of mounts in it. */
int builder_build(Builder *b, const ViewSpec *spec, uint64_t deadline, BuilderDoneFunc done, void *userdata);
int builder_unpin(Builder *b, const char *name, uint64_t deadline, BuilderDoneFunc done, void *userdata);
/* Every pin in the registry: reply->items. */
int builder_list(Builder *b, uint64_t deadline, BuilderDoneFunc done, void *userdata);
/* /proc/self/mountinfo of the namespace ns_fd (< 0: the host): reply->data; with_ids: followed
 * by a NUL and the mounts' ids (BuilderMountIds, builder-message.h), reply->size counting them. */
int builder_read_mounts(Builder *b, int ns_fd, bool with_ids, uint64_t deadline, BuilderDoneFunc done,
                        void *userdata);

/* Runs the event loop until the request just made with done = builder_sync_done and
 * userdata = &sync has answered (for start-up, before the bus is connected). */
typedef struct BuilderSync {
        bool finished;
        int result;              /* the reply's, or the failure's negative errno */
        NsmError error;
        int fd;
        BuilderItem *items;
        size_t n_items;
} BuilderSync;
void builder_sync_done(BuilderReply *reply, void *userdata);
int builder_sync_wait(sd_event *event, BuilderSync *s);
void builder_sync_done_free(BuilderSync *s);
