/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <endian.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include "macros.h"
#include "user-util.h"
#include "write-access.h"

/* The xattr is small (4 bytes and 8 an entry) and fixed in format (linux/posix_acl_xattr.h):
 * read here rather than through libacl, which would add a library for one getxattr. */
int fd_acl_read(int fd, AclEntry **ret, size_t *ret_n) {
        _cleanup_free_ void *buf = NULL;
        char path[sizeof "/proc/self/fd/" + 12];
        ssize_t size = 4 + 8 * 16;
        AclEntry *e;
        size_t n;

        *ret = NULL;
        *ret_n = 0;
        /* fgetxattr() refuses an O_PATH fd; the magic link names exactly the fd's inode. */
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        for (;;) {
                free(buf);
                buf = malloc(size);
                if (!buf)
                        return -ENOMEM;
                ssize_t k = getxattr(path, "system.posix_acl_access", buf, size);
                if (k >= 0) {
                        size = k;
                        break;
                }
                if (errno == ENODATA || errno == EOPNOTSUPP)
                        return 0;       /* the mode says it all */
                if (errno != ERANGE)
                        return -errno;
                k = getxattr(path, "system.posix_acl_access", NULL, 0);
                if (k < 0)
                        return -errno;
                size = k + 64;  /* grown meanwhile: once more */
        }

        if ((size_t) size < sizeof(struct posix_acl_xattr_header) ||
            (size - sizeof(struct posix_acl_xattr_header)) % sizeof(struct posix_acl_xattr_entry) != 0 ||
            le32toh(((const struct posix_acl_xattr_header *) buf)->a_version) != POSIX_ACL_XATTR_VERSION)
                return -EBADMSG;
        n = (size - sizeof(struct posix_acl_xattr_header)) / sizeof(struct posix_acl_xattr_entry);
        e = calloc(n + 1, sizeof(AclEntry));
        if (!e)
                return -ENOMEM;
        const struct posix_acl_xattr_entry *x = (const void *) ((const char *) buf + sizeof(struct posix_acl_xattr_header));
        for (size_t i = 0; i < n; i++)
                e[i] = (AclEntry) { .tag = le16toh(x[i].e_tag), .perm = le16toh(x[i].e_perm), .id = le32toh(x[i].e_id) };
        *ret = e;
        *ret_n = n;
        return 0;
}

uint16_t acl_entry_effective(const AclEntry *acl, size_t n, const AclEntry *e) {
        if (e->tag != ACL_USER && e->tag != ACL_GROUP && e->tag != ACL_GROUP_OBJ)
                return e->perm;
        for (size_t i = 0; i < n; i++)
                if (acl[i].tag == ACL_MASK)
                        return e->perm & acl[i].perm;
        return e->perm;
}

int acl_entry_format(const AclEntry *e, bool names, char **ret) {
        _cleanup_free_ char *name = NULL;
        UserRecord u = {};
        bool user = e->tag == ACL_USER;

        if (names) {
                if (user && user_record_by_uid(e->id, &u) >= 0) {
                        name = TAKE_PTR(u.name);
                        user_record_done(&u);
                } else if (!user)
                        (void) group_name_by_gid(e->id, &name);
        }
        char id[16];
        snprintf(id, sizeof id, "%" PRIu32, e->id);
        return asprintf(ret, "%s:%s:%c%c%c", user ? "user" : "group", name ?: id, e->perm & ACL_READ ? 'r' : '-',
                        e->perm & ACL_WRITE ? 'w' : '-', e->perm & ACL_EXECUTE ? 'x' : '-') < 0 ? -ENOMEM : 0;
}

/* Whether group 0 has members other than root, from /etc/group: never NSS, which may ask a
 * directory server for seconds on the daemon's loop; group 0 is local (files come first on
 * every sane nsswitch.conf). Asked only where a directory group root may write is met, which
 * root made so. */
int root_group_has_others(void) {
        _cleanup_fclose_ FILE *f = NULL;
        size_t size = 4096;

        f = fopen("/etc/group", "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        for (;;) {
                _cleanup_free_ char *buf = malloc(size);
                struct group gr, *result = NULL;
                int r;

                if (!buf)
                        return -ENOMEM;
                r = fgetgrent_r(f, &gr, buf, size, &result);
                if (r == ERANGE && size < 1024 * 1024) {
                        /* The entry did not fit: read it again, with more room. */
                        size *= 2;
                        continue;
                }
                if (r == ENOENT)
                        return 0;
                if (r != 0)
                        return -r;
                if (gr.gr_gid != 0)
                        continue;
                for (char **m = gr.gr_mem; m && *m; m++)
                        if (!streq(*m, "root"))
                                return 1;
                return 0;
        }
}

/* Whether a gid other than 'gid' is someone else: root's group only where it has members. */
static int other_group(gid_t g, gid_t gid, int *root_others) {
        if (g == gid)
                return 0;
        if (g != 0)
                return 1;
        if (*root_others < 0)
                *root_others = root_group_has_others();
        return *root_others;
}

int fd_find_other_writer(int fd, const struct statx *st, uid_t uid, gid_t gid, bool names, char **ret_who) {
        _cleanup_free_ AclEntry *acl = NULL;
        int root_others = -1, r;
        size_t n = 0;
        bool group_writes;

        if (st->stx_mode & S_IWOTH) {
                if (ret_who && !(*ret_who = strdup("anybody")))
                        return -ENOMEM;
                return 1;
        }
        r = fd_acl_read(fd, &acl, &n);
        if (r < 0)
                return r;

        /* With an ACL the mode's group bits are the mask; the owning group has its own entry. */
        group_writes = st->stx_mode & S_IWGRP;
        for (size_t i = 0; i < n; i++)
                if (acl[i].tag == ACL_GROUP_OBJ)
                        group_writes = acl_entry_effective(acl, n, &acl[i]) & ACL_WRITE;
        if (group_writes) {
                r = other_group(st->stx_gid, gid, &root_others);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (ret_who && asprintf(ret_who, "the members of group %" PRIu32, (uint32_t) st->stx_gid) < 0)
                                return -ENOMEM;
                        return 1;
                }
        }

        for (size_t i = 0; i < n; i++) {
                const AclEntry *e = &acl[i];
                _cleanup_free_ char *entry = NULL;

                if (!(acl_entry_effective(acl, n, e) & ACL_WRITE))
                        continue;
                if (e->tag == ACL_USER) {
                        if (e->id == 0 || e->id == uid || e->id == st->stx_uid)
                                continue;
                } else if (e->tag == ACL_GROUP) {
                        r = other_group(e->id, gid, &root_others);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                continue;
                } else
                        continue;
                if (!ret_who)
                        return 1;
                r = acl_entry_format(e, names, &entry);
                if (r < 0)
                        return r;
                if (asprintf(ret_who, "the ACL entry %s", entry) < 0)
                        return -ENOMEM;
                return 1;
        }
        return 0;
}
