/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput() once on each file named, or
 * on each file of each directory named (in name order, not recursively). meson test runs every
 * target on its corpus this way, so the corpus and its regression inputs are replayed by every
 * build, the sanitized one included, with or without clang. A crash or a failed check aborts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "fuzz.h"

/* The whole file in a buffer of exactly its size, as libFuzzer hands an input: a read past
 * the end is a read past the buffer, which the sanitizers see. */
static int read_file(int dirfd, const char *name, uint8_t **ret, size_t *ret_size) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ uint8_t *buf = NULL;
        struct stat st;
        size_t done = 0;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EISDIR;
        buf = malloc(st.st_size > 0 ? (size_t) st.st_size : 1);
        if (!buf)
                return -ENOMEM;
        while (done < (size_t) st.st_size) {
                ssize_t k = read(fd, buf + done, (size_t) st.st_size - done);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = done;
        return 0;
}

static int run_one(int dirfd, const char *name, unsigned *n) {
        _cleanup_free_ uint8_t *data = NULL;
        size_t size = 0;
        int r;

        r = read_file(dirfd, name, &data, &size);
        if (r < 0) {
                errno = -r;
                fprintf(stderr, "%s: %m\n", name);
                return r;
        }
        printf("%s (%zu bytes)\n", name, size);
        fflush(stdout);          /* so the log names the input that crashed */
        (void) LLVMFuzzerTestOneInput(data, size);
        (*n)++;
        return 0;
}

static int run_dir(const char *path, unsigned *n) {
        _cleanup_close_ int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent **entries = NULL;
        int k, r = 0;

        if (dirfd < 0)
                return -errno;
        k = scandir(path, &entries, NULL, alphasort);
        if (k < 0)
                return -errno;
        for (int i = 0; i < k; i++) {
                struct stat st;
                if (r >= 0 && entries[i]->d_name[0] != '.' &&
                    fstatat(dirfd, entries[i]->d_name, &st, 0) >= 0 && S_ISREG(st.st_mode)) {
                        printf("%s/", path);
                        r = run_one(dirfd, entries[i]->d_name, n);
                }
                free(entries[i]);
        }
        free(entries);
        return r;
}

int main(int argc, char *argv[]) {
        unsigned n = 0;

        if (argc < 2) {
                fprintf(stderr, "Usage: %s FILE|DIRECTORY...\n", argv[0]);
                return EXIT_FAILURE;
        }
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return EXIT_FAILURE;
                }
                r = S_ISDIR(st.st_mode) ? run_dir(argv[i], &n) : run_one(AT_FDCWD, argv[i], &n);
                if (r < 0) {
                        errno = -r;
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return EXIT_FAILURE;
                }
        }
        /* An empty corpus proves nothing: a target is committed with its seeds. */
        if (n == 0) {
                fprintf(stderr, "%s: no inputs\n", argv[0]);
                return EXIT_FAILURE;
        }
        printf("%u inputs, no crash\n", n);
        return EXIT_SUCCESS;
}
