/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * nsmanager-attach-exec: the main program of every transient unit Attach() has systemd start
 * (attach-unit.c). Its command line is fixed, so that no text a caller chose is ever written
 * into a unit file: systemd 252 escapes only '%' when it writes a transient unit to
 * /run/systemd/transient, and a newline in a working directory or a Description= became a line
 * of root's unit at the next daemon-reload.
 *
 * What the caller chose comes in the environment instead, from the EnvironmentFile= that only
 * root can read, under names of our own, so that none of it reaches the PAM stack (which runs
 * as root, before us, with the unit's environment) under a name a module would read:
 *
 *   NSMANAGER_ATTACH_ARGC=N, NSMANAGER_ATTACH_ARGV_0 … _N-1   the command
 *   NSMANAGER_ATTACH_ENVC=M, NSMANAGER_ATTACH_ENV_0 … _M-1    its environment, NAME=VALUE each
 *   NSMANAGER_ATTACH_DIRECTORY                                 where to start, if given
 *
 * each value escaped by the daemon: '\' as "\\" and every byte below 0x20 or 0x7f as "\xHH",
 * so that no value holds a control character on its way through systemd. Here, as the caller
 * and inside the view (systemd and PAM have done their part): drop every NSMANAGER_ATTACH_*
 * variable, change to the directory (if the view lacks it, stay where systemd put us: the
 * caller's home), put the caller's environment over what systemd and PAM set, and execute the
 * command, looked up in the caller's $PATH. If it cannot be executed, say so on stderr, which
 * is the caller's, and exit as a shell does: 127 if it was not found, else 126.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFIX "NSMANAGER_ATTACH_"
#define PROGRAM "nsmanager-attach"

static int hex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The value of PREFIX<name>, unescaped (malloc'd), or NULL if it is missing or malformed. */
static char *take(const char *name) {
        char key[64], *out, *o;
        const char *v;

        (void) snprintf(key, sizeof key, PREFIX "%s", name);
        v = getenv(key);
        if (!v)
                return NULL;
        out = o = malloc(strlen(v) + 1);
        if (!out)
                return NULL;
        while (*v) {
                if (*v != '\\') {
                        *o++ = *v++;
                        continue;
                }
                if (v[1] == '\\') {
                        *o++ = '\\';
                        v += 2;
                } else if (v[1] == 'x' && hex(v[2]) >= 0 && hex(v[3]) >= 0 && (hex(v[2]) << 4 | hex(v[3])) != 0) {
                        *o++ = (char) (hex(v[2]) << 4 | hex(v[3]));
                        v += 4;
                } else {
                        free(out);
                        return NULL;
                }
        }
        *o = '\0';
        return out;
}

static long take_count(const char *name) {
        char *v = take(name), *end;
        long n;

        if (!v)
                return -1;
        errno = 0;
        n = strtol(v, &end, 10);
        if (errno != 0 || end == v || *end || n < 0 || n > 1000000)
                n = -1;
        free(v);
        return n;
}

_Noreturn static void fail(const char *what) {
        fprintf(stderr, PROGRAM ": %s (this program is started by nsmanagerd for `nsctl attach`).\n", what);
        exit(EXIT_FAILURE);
}

/* Every NSMANAGER_ATTACH_* variable, NSMANAGER_ATTACH_NAMESPACE (pam_nsmanager's) included. */
static void drop_ours(void) {
        extern char **environ;

        for (size_t i = 0; environ[i];) {
                const char *eq = strchr(environ[i], '=');
                char name[256];

                if (strncmp(environ[i], PREFIX, strlen(PREFIX)) != 0 || !eq || (size_t) (eq - environ[i]) >= sizeof name) {
                        i++;
                        continue;
                }
                memcpy(name, environ[i], (size_t) (eq - environ[i]));
                name[eq - environ[i]] = '\0';
                if (unsetenv(name) < 0)
                        fail("Failed to clean the environment");
        }
}

int main(int argc_unused, char *argv_unused[]) {
        long argc = take_count("ARGC"), envc = take_count("ENVC");
        char **argv, **env, *dir;

        if (argc < 1 || envc < 0)
                fail("No command given");
        argv = calloc((size_t) argc + 1, sizeof(char *));
        env = calloc((size_t) envc + 1, sizeof(char *));
        if (!argv || !env)
                fail("Out of memory");
        for (long i = 0; i < argc; i++) {
                char name[32];

                (void) snprintf(name, sizeof name, "ARGV_%ld", i);
                argv[i] = take(name);
                if (!argv[i])
                        fail("The command is incomplete");
        }
        for (long i = 0; i < envc; i++) {
                char name[32];

                (void) snprintf(name, sizeof name, "ENV_%ld", i);
                env[i] = take(name);
                if (!env[i] || !strchr(env[i], '=') || env[i][0] == '=')
                        fail("The environment is incomplete");
        }
        dir = take("DIRECTORY");
        drop_ours();

        /* As the caller: a directory she may not enter stays closed to her. */
        if (dir && dir[0])
                (void) chdir(dir);
        for (long i = 0; i < envc; i++)
                if (putenv(env[i]) < 0)
                        fail("Failed to set the environment");

        execvp(argv[0], argv);
        int r = errno;
        fprintf(stderr, PROGRAM ": Failed to execute '%s': %s\n", argv[0], strerror(r));
        /* What is ours to free (env[]'s strings are the environment's now, putenv()): a leak
         * checker would fail the exit status a caller reads as the shell's. */
        for (long i = 0; i < argc; i++)
                free(argv[i]);
        free(argv);
        free(env);
        free(dir);
        return r == ENOENT ? 127 : 126;
}
