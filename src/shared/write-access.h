/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Who may write a file, as the kernel decides it: the mode's bits, the POSIX access ACL under
 * its mask, and group root, whose members NSS may list. */

/* One entry of a POSIX access ACL as the kernel hands it out (the system.posix_acl_access
 * xattr): tag and permissions of linux/posix_acl.h, the uid or gid of a named entry. */
typedef struct AclEntry {
        uint16_t tag;
        uint16_t perm;
        uint32_t id;
} AclEntry;

/* The access ACL of 'fd' (an O_PATH fd will do: read through /proc/self/fd), its entries in
 * the kernel's order; none (0 entries) where the file has no ACL beyond its mode or its file
 * system has none. Asks the file system: never call it on a FUSE mount. */
int fd_acl_read(int fd, AclEntry **ret, size_t *ret_n);

/* The bits the entry 'e' of the ACL grants: a named entry and the owning group's only under
 * the mask. */
uint16_t acl_entry_effective(const AclEntry *acl, size_t n, const AclEntry *e);

/* "user:alice:rwx", as getfacl prints it (a uid where 'names' is false or NSS has no name). */
int acl_entry_format(const AclEntry *e, bool names, char **ret);

/* 1 if /etc/group lists a member of group root other than root, 0 if not, negative errno (no
 * NSS: see write-access.c). */
int root_group_has_others(void);

/* Whether someone other than the owner of 'fd', root, 'uid' and group 'gid' ((uid_t) -1 and
 * (gid_t) -1: nobody) may write it: everybody by the mode; the owning group; a named user or
 * group of the ACL, each under the mask. Group root counts where NSS lists members other
 * than root in it. 'st' is the fd's statx (mode, uid, gid). 1 and in ret_who (if not NULL)
 * who: "anybody", "the members of group 2100", "the ACL entry user:alice:rwx"; 0 if nobody
 * else; negative errno. 'names': ACL entries named through NSS. Asks the file system for the
 * ACL: never call it on a FUSE mount. */
int fd_find_other_writer(int fd, const struct statx *st, uid_t uid, gid_t gid, bool names, char **ret_who);
