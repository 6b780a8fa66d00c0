/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The entries of a [View] policy, parsed, expanded and validated as view_policy_apply() does
 * before it mounts anything (view_policy_check()). One line an entry, as the settings hold
 * them after the configuration was read:
 *
 *   BindPaths=[-]SOURCE[:DEST[:rbind|norbind]]
 *   BindReadOnlyPaths=…
 *   TemporaryFileSystem=PATH[:OPTIONS]
 *   InaccessiblePaths=[-]PATH
 *   HideOtherHomes=yes   PrivateTmp=yes
 *   Home=PATH            the user's home (from NSS: the administrator's, but HideOtherHomes=
 *                        derives the homes directory from it)
 *
 * Unlike the configuration's lists, an entry here may hold blanks: the check must cope with
 * any string. Every refusal must come with a sentence naming the entry. */
#include "fuzz.h"
#include "strv.h"
#include "view-policy.h"

static int add_line(ViewPolicy *p, UserRecord *u, char *line) {
        static const struct {
                const char *key;
                size_t offset;
        } lists[] = {
                { "BindPaths=", offsetof(ViewPolicy, bind_paths) },
                { "BindReadOnlyPaths=", offsetof(ViewPolicy, bind_read_only_paths) },
                { "TemporaryFileSystem=", offsetof(ViewPolicy, temporary_file_system) },
                { "InaccessiblePaths=", offsetof(ViewPolicy, inaccessible_paths) },
        };

        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                size_t n = strlen(lists[i].key);
                if (strncmp(line, lists[i].key, n) == 0)
                        return strv_extend((char ***) ((uint8_t *) p + lists[i].offset), line + n);
        }
        if (streq(line, "HideOtherHomes=yes"))
                p->hide_other_homes = true;
        else if (streq(line, "PrivateTmp=yes"))
                p->private_tmp = true;
        else if (strncmp(line, "Home=", 5) == 0) {
                char *h = strdup(line + 5);
                if (!h)
                        return -ENOMEM;
                free(u->home);
                u->home = h;
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_string(data, size);
        _cleanup_(nsm_error_done) NsmError error = {};
        _cleanup_(view_policy_done) ViewPolicy p = {};
        _cleanup_(user_record_done) UserRecord u = {
                .uid = 2001,
                .gid = 0,
                .name = strdup("alice"),
                .home = strdup("/home/alice"),
                .shell = strdup("/bin/sh"),
        };
        int r;

        if (!s || !u.name || !u.home || !u.shell)
                return 0;
        for (char *line = s, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (add_line(&p, &u, line) < 0)
                        return 0;
        }

        r = view_policy_check(&p, &u, &error);
        const char *message = error.message;
        if (r < 0 && r != -ENOMEM)
                FUZZ_CHECK(message && (strstr(message, "Paths=") || strstr(message, "TemporaryFileSystem=") ||
                                       strstr(message, "HideOtherHomes=")));
        FUZZ_CHECK(r <= 0);
        return 0;
}
