/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libnss_nsmtest.so.2: an NSS source of the tests' own (tests/test_identity.py), standing in for
 * sssd and winbind, which answer a user by other spellings than her canonical name:
 *
 *   - case: "ALICE" (sssd with case_sensitive = false, the AD provider's default);
 *   - a domain: "alice@CORP.EXAMPLE", and longer ones, "Alice@CORP.EXAMPLE.…" (sssd);
 *   - a NetBIOS prefix: "CORP\alice" (winbind).
 *
 * Each resolves to the record whose name, compared the same way, is the same: its canonical
 * name comes back in pw_name ("alice", or "gina@corp.example" for a site with fully-qualified
 * names). The records are the lines of /run/nsm-test-nss/passwd and group (the sandbox's /run),
 * in the files' format, which the test writes. With /run/nsm-test-nss/slow present (it holds
 * a number of seconds) a name it does not know is answered only after that long, as an
 * unreachable directory server would: known names stay quick.
 *
 * Test code only: loaded in the sandbox through a copy of /etc/nsswitch.conf and of
 * /etc/ld.so.cache bound over the machine's.
 */

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <nss.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define DATA_DIR "/run/nsm-test-nss"
#define DOMAIN "corp.example"
#define NETBIOS "corp\\"

enum nss_status _nss_nsmtest_getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t len, int *errnop);
enum nss_status _nss_nsmtest_getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, int *errnop);
enum nss_status _nss_nsmtest_getgrnam_r(const char *name, struct group *gr, char *buf, size_t len, int *errnop);
enum nss_status _nss_nsmtest_getgrgid_r(gid_t gid, struct group *gr, char *buf, size_t len, int *errnop);
enum nss_status _nss_nsmtest_initgroups_dyn(const char *user, gid_t group, long *start, long *size, gid_t **groups,
                                            long limit, int *errnop);

/* The name as the directory compares it: without the NetBIOS prefix or the domain, in lower
 * case. A domain other than ours stays: "alice@elsewhere" is nobody. */
static void fold(const char *s, char *out, size_t n) {
        size_t i = 0;
        char *at;

        if (strncasecmp(s, NETBIOS, strlen(NETBIOS)) == 0)
                s += strlen(NETBIOS);
        for (; *s && i + 1 < n; s++)
                out[i++] = (char) tolower((unsigned char) *s);
        out[i] = 0;
        at = strchr(out, '@');
        if (at && strncmp(at + 1, DOMAIN, strlen(DOMAIN)) == 0)
                *at = 0;
}

static bool same_user(const char *canonical, const char *asked) {
        char a[512], b[512];

        fold(canonical, a, sizeof a);
        fold(asked, b, sizeof b);
        return strcmp(a, b) == 0;
}

/* Splits a line of the files' format in place into at most 'max' fields; how many. */
static size_t split(char *line, char **fields, size_t max) {
        size_t n = 0;

        line[strcspn(line, "\n")] = 0;
        while (n < max) {
                fields[n++] = line;
                line = strchr(line, ':');
                if (!line)
                        break;
                *line++ = 0;
        }
        return n;
}

static char *put(char **p, size_t *left, const char *s) {
        size_t n = strlen(s) + 1;
        char *r = *p;

        if (n > *left)
                return NULL;
        memcpy(r, s, n);
        *p += n;
        *left -= n;
        return r;
}

static enum nss_status find_user(const char *name, uid_t uid, struct passwd *pw, char *buf, size_t len, int *errnop) {
        FILE *f = fopen(DATA_DIR "/passwd", "re");
        char line[1024];

        if (!f)
                return NSS_STATUS_NOTFOUND;
        while (fgets(line, sizeof line, f)) {
                char *v[7], *p = buf;
                size_t left = len;

                if (split(line, v, 7) != 7)
                        continue;
                if (name ? !same_user(v[0], name) : (uid_t) strtoul(v[2], NULL, 10) != uid)
                        continue;
                fclose(f);
                pw->pw_uid = (uid_t) strtoul(v[2], NULL, 10);
                pw->pw_gid = (gid_t) strtoul(v[3], NULL, 10);
                if (!(pw->pw_name = put(&p, &left, v[0])) || !(pw->pw_passwd = put(&p, &left, v[1])) ||
                    !(pw->pw_gecos = put(&p, &left, v[4])) || !(pw->pw_dir = put(&p, &left, v[5])) ||
                    !(pw->pw_shell = put(&p, &left, v[6]))) {
                        *errnop = ERANGE;
                        return NSS_STATUS_TRYAGAIN;
                }
                return NSS_STATUS_SUCCESS;
        }
        fclose(f);
        return NSS_STATUS_NOTFOUND;
}

/* A directory that does not answer: only for names it does not know. */
static void maybe_slow(void) {
        FILE *f = fopen(DATA_DIR "/slow", "re");
        unsigned seconds = 0;

        if (!f)
                return;
        if (fscanf(f, "%u", &seconds) != 1)
                seconds = 1;
        fclose(f);
        sleep(seconds);
}

enum nss_status _nss_nsmtest_getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t len, int *errnop) {
        enum nss_status s = find_user(name, 0, pw, buf, len, errnop);

        if (s == NSS_STATUS_NOTFOUND)
                maybe_slow();
        return s;
}

/* A directory slow for one uid (/run/nsm-test-nss/slow-uid: "UID SECONDS"), as asked by
 * nsmanagerd alone (its user record and her groups): the bus daemon asks for a connecting uid
 * too, and its stall would hold up everybody whatever nsmanagerd does. Once asked, the
 * directory says so in /run/nsm-test-nss/slow-uid-asked, for a test to wait for. */
static void maybe_slow_uid(uid_t uid) {
        FILE *f = fopen(DATA_DIR "/slow-uid", "re");
        unsigned long slow = 0;
        unsigned seconds = 0;

        if (!f)
                return;
        if (fscanf(f, "%lu %u", &slow, &seconds) != 2)
                slow = (unsigned long) -1;
        fclose(f);
        if (slow != (unsigned long) uid || strcmp(program_invocation_short_name, "nsmanagerd") != 0)
                return;
        f = fopen(DATA_DIR "/slow-uid-asked", "we");
        if (f)
                fclose(f);
        sleep(seconds);
}

enum nss_status _nss_nsmtest_getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, int *errnop) {
        maybe_slow_uid(uid);
        return find_user(NULL, uid, pw, buf, len, errnop);
}

static enum nss_status find_group(const char *name, gid_t gid, struct group *gr, char *buf, size_t len, int *errnop) {
        FILE *f = fopen(DATA_DIR "/group", "re");
        char line[1024];

        if (!f)
                return NSS_STATUS_NOTFOUND;
        while (fgets(line, sizeof line, f)) {
                char *v[4], *p, *m, *save = NULL;
                size_t left, n = 0, members = 1;

                if (split(line, v, 4) != 4)
                        continue;
                if (name ? strcmp(v[0], name) != 0 : (gid_t) strtoul(v[2], NULL, 10) != gid)
                        continue;
                fclose(f);
                for (const char *c = v[3]; *c; c++)
                        members += *c == ',';
                /* The member array first, aligned, then the strings. */
                p = buf + (-(uintptr_t) buf & (sizeof(char *) - 1));
                if ((size_t) (p - buf) + (members + 1) * sizeof(char *) > len) {
                        *errnop = ERANGE;
                        return NSS_STATUS_TRYAGAIN;
                }
                gr->gr_mem = (char **) p;
                p += (members + 1) * sizeof(char *);
                left = len - (size_t) (p - buf);
                gr->gr_gid = (gid_t) strtoul(v[2], NULL, 10);
                if (!(gr->gr_name = put(&p, &left, v[0])) || !(gr->gr_passwd = put(&p, &left, v[1]))) {
                        *errnop = ERANGE;
                        return NSS_STATUS_TRYAGAIN;
                }
                for (m = strtok_r(v[3], ",", &save); m; m = strtok_r(NULL, ",", &save))
                        if (!(gr->gr_mem[n++] = put(&p, &left, m))) {
                                *errnop = ERANGE;
                                return NSS_STATUS_TRYAGAIN;
                        }
                gr->gr_mem[n] = NULL;
                return NSS_STATUS_SUCCESS;
        }
        fclose(f);
        return NSS_STATUS_NOTFOUND;
}

enum nss_status _nss_nsmtest_getgrnam_r(const char *name, struct group *gr, char *buf, size_t len, int *errnop) {
        return find_group(name, 0, gr, buf, len, errnop);
}

/* A directory slow for one gid (/run/nsm-test-nss/slow-gid-main: "GID SECONDS") as asked by
 * nsmanagerd's own process alone, the one that runs the event loop (its children, whose parent
 * is nsmanagerd, are answered at once); says so in slow-gid-main-asked. */
static void maybe_slow_gid_main(gid_t gid) {
        FILE *f = fopen(DATA_DIR "/slow-gid-main", "re");
        unsigned long slow = 0;
        unsigned seconds = 0;
        char parent[64] = "";

        if (!f)
                return;
        if (fscanf(f, "%lu %u", &slow, &seconds) != 2)
                slow = (unsigned long) -1;
        fclose(f);
        if (slow != (unsigned long) gid || strcmp(program_invocation_short_name, "nsmanagerd") != 0)
                return;
        snprintf(parent, sizeof parent, "/proc/%d/comm", (int) getppid());
        f = fopen(parent, "re");
        if (f) {
                if (!fgets(parent, sizeof parent, f))
                        parent[0] = 0;
                fclose(f);
                if (strncmp(parent, "nsmanagerd", 10) == 0)
                        return;
        }
        f = fopen(DATA_DIR "/slow-gid-main-asked", "we");
        if (f)
                fclose(f);
        sleep(seconds);
}

enum nss_status _nss_nsmtest_getgrgid_r(gid_t gid, struct group *gr, char *buf, size_t len, int *errnop) {
        maybe_slow_gid_main(gid);
        return find_group(NULL, gid, gr, buf, len, errnop);
}

/* The groups whose member list names 'user' (the canonical name, as getgrouplist() gets it). */
enum nss_status _nss_nsmtest_initgroups_dyn(const char *user, gid_t group, long *start, long *size, gid_t **groups,
                                            long limit, int *errnop) {
        FILE *f;
        struct passwd pw;
        char line[1024];
        int e;

        if (find_user(user, 0, &pw, line, sizeof line, &e) == NSS_STATUS_SUCCESS)
                maybe_slow_uid(pw.pw_uid);
        f = fopen(DATA_DIR "/group", "re");
        if (!f)
                return NSS_STATUS_NOTFOUND;
        while (fgets(line, sizeof line, f)) {
                char *v[4], *m, *save = NULL;
                gid_t gid;

                if (split(line, v, 4) != 4)
                        continue;
                gid = (gid_t) strtoul(v[2], NULL, 10);
                if (gid == group)
                        continue;
                for (m = strtok_r(v[3], ",", &save); m; m = strtok_r(NULL, ",", &save)) {
                        if (strcmp(m, user) != 0)
                                continue;
                        if (*start == *size) {
                                long n = *size * 2;
                                gid_t *g;

                                if (limit > 0 && n > limit)
                                        n = limit;
                                if (n <= *size)
                                        break;
                                g = realloc(*groups, (size_t) n * sizeof(gid_t));
                                if (!g) {
                                        fclose(f);
                                        *errnop = ENOMEM;
                                        return NSS_STATUS_TRYAGAIN;
                                }
                                *groups = g;
                                *size = n;
                        }
                        (*groups)[(*start)++] = gid;
                        break;
                }
        }
        fclose(f);
        return NSS_STATUS_SUCCESS;
}
