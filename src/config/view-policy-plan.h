/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the two halves of the [View] policy share: the plan (every entry parsed, its specifiers
 * expanded, its paths checked) and the walk that tells who decides what a path names. Both are
 * view-policy.c's, which neither mounts nor logs (nsctl links it); view-policy-apply.c mounts
 * what a plan says, and walks a path again when an entry fails there. Not for anybody else:
 * view-policy.h is the interface. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "manager-config.h"
#include "mount-entry.h"
#include "nsm-error.h"
#include "user-util.h"

typedef struct BindEntry {
        const char *setting;     /* "BindPaths" or "BindReadOnlyPaths", for messages */
        const char *entry;       /* the raw entry, for messages */
        char *source;
        char *dest;
        bool read_only;
        bool recursive;
        bool ignore_missing;
        bool user_specific;      /* SOURCE names the user (%u, %U, %h): it must be root's or theirs */
        size_t index;            /* order of appearance: ties in the sort keep it */
        int tree_fd;             /* the cloned source; -EBADF when missing and ignored */
} BindEntry;

typedef struct TmpfsEntry {
        const char *entry;
        char *path;
        char *options;           /* NULL: defaults only */
} TmpfsEntry;

typedef struct InaccessibleEntry {
        const char *entry;
        char *path;
        bool ignore_missing;
} InaccessibleEntry;

typedef struct PolicyPlan {
        TmpfsEntry *tmpfs;
        size_t n_tmpfs;
        BindEntry *binds;
        size_t n_binds;
        InaccessibleEntry *inaccessible;
        size_t n_inaccessible;
} PolicyPlan;

/* Step 1 of applying: parses every entry of 'p' for 'u', expands its specifiers and checks its
 * paths; the binds sorted by destination, so a parent is bound before what goes below it.
 * Touches nothing. 0, or a negative errno and in 'error' (may be NULL) the entry at fault. */
int policy_plan_build(const ViewPolicy *p, const UserRecord *u, PolicyPlan *plan, NsmError *error);
void policy_plan_done(PolicyPlan *plan);

/* A walk of a policy path, and whose changes it accepts besides root's. */
typedef struct PathWalk {
        int root_fd;
        uid_t uid;               /* whose directories and links are safe too; (uid_t) -1: nobody's */
        gid_t gid;               /* which group (not root's) may write a directory; (gid_t) -1: none */
        const UserRecord *user;  /* whose view: named in messages */
        bool follow_root_links;  /* as open_path_safe() (bind sources); else none (destinations) */
        const MountEntry *table; /* the mounts, for telling FUSE ones */
        size_t n_table;
        bool names;              /* ACL entries in messages named through NSS (else by id) */
} PathWalk;

/* Walks 'path' from w->root_fd as the policy's own lookups go, and stops at the first place
 * where someone other than root (and w->uid, w->gid) decides what the path names. 1 and a
 * sentence saying where and who; 0 if the walk ends before any such place; negative errno if
 * the walk fails. Changes nothing, logs nothing. */
int path_find_other_writer(const PathWalk *w, const char *path, char **ret_why);

/* What went wrong at a path, for a note ("… '/home/alice/x' %s"). */
const char *policy_spoiled_reason(int r, char buf[static 128]);

/* "alice (uid 2001)" for the user whose view it is, "uid 2002" for others. */
const char *policy_format_who(const PathWalk *w, uid_t uid, char buf[static 64]);

/* Type, mode and owners as the inode has them now, without asking its file system. */
int policy_stat_cached(int fd, struct statx *ret);
