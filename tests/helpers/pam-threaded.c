/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam-threaded SERVICE USER
 *
 * Opens a PAM session from a second thread while the main thread keeps running, as a
 * display manager's session worker does, and prints which mount namespace each thread is
 * in afterwards:
 *
 *   session-ns=mnt:[…]      the worker thread's, after pam_open_session()
 *   main-ns=mnt:[…]         the main thread's, at the same moment
 *   cwd=…                   the worker thread's working directory
 *
 * then closes the session. With the environment variable PAM_THREADED_HOLD set, waits for a
 * line on stdin between open and close. With PAM_THREADED_CHILD set, forks a child right after
 * the open that never execs (as sshd's internal-sftp) and only waits to be killed, printing
 * child=PID: it holds whatever the session left open in the process. Exit status: 0 if the
 * session opened, 1 if not (the PAM error on stderr), 2 on bad usage.
 */

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_appl.h>

typedef struct Worker {
        const char *service;
        const char *user;
        pid_t main_tid;
        int result;
        bool done;
        pthread_mutex_t lock;
        pthread_cond_t cond;
} Worker;

static int null_conv(int n, const struct pam_message **msg, struct pam_response **resp, void *data) {
        /* No prompts are answered: session modules have nothing to ask. Messages are shown. */
        for (int i = 0; i < n; i++)
                if (msg[i]->msg_style == PAM_ERROR_MSG || msg[i]->msg_style == PAM_TEXT_INFO)
                        fprintf(stderr, "%s\n", msg[i]->msg);
                else
                        return PAM_CONV_ERR;
        *resp = NULL;
        return PAM_SUCCESS;
}

static void print_ns(const char *label, const char *path) {
        char buf[PATH_MAX];
        ssize_t n = readlink(path, buf, sizeof(buf) - 1);

        if (n < 0) {
                printf("%s=error:%m\n", label);
                return;
        }
        buf[n] = 0;
        printf("%s=%s\n", label, buf);
}

static void *worker_run(void *userdata) {
        Worker *w = userdata;
        struct pam_conv conv = { .conv = null_conv };
        pam_handle_t *pamh = NULL;
        char path[64], *cwd;
        int r;

        r = pam_start(w->service, w->user, &conv, &pamh);
        if (r != PAM_SUCCESS) {
                fprintf(stderr, "pam_start: %s\n", pam_strerror(pamh, r));
                goto finish;
        }

        r = pam_open_session(pamh, 0);
        if (r != PAM_SUCCESS) {
                fprintf(stderr, "pam_open_session: %s\n", pam_strerror(pamh, r));
                (void) pam_end(pamh, r);
                goto finish;
        }

        print_ns("session-ns", "/proc/thread-self/ns/mnt");
        (void) snprintf(path, sizeof(path), "/proc/self/task/%i/ns/mnt", (int) w->main_tid);
        print_ns("main-ns", path);
        cwd = getcwd(NULL, 0);
        printf("cwd=%s\n", cwd ?: "(unknown)");
        free(cwd);
        fflush(stdout);

        if (getenv("PAM_THREADED_CHILD")) {
                pid_t pid = fork();

                if (pid == 0) {
                        for (;;)
                                pause();
                }
                printf("child=%i\n", (int) pid);
                fflush(stdout);
        }

        if (getenv("PAM_THREADED_HOLD")) {
                char line[16];

                printf("holding\n");
                fflush(stdout);
                (void) fgets(line, sizeof(line), stdin);
        }

        r = pam_close_session(pamh, 0);
        if (r != PAM_SUCCESS)
                fprintf(stderr, "pam_close_session: %s\n", pam_strerror(pamh, r));
        (void) pam_end(pamh, r);
        r = PAM_SUCCESS;

finish:
        pthread_mutex_lock(&w->lock);
        w->result = r;
        w->done = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int main(int argc, char *argv[]) {
        Worker w = {
                .lock = PTHREAD_MUTEX_INITIALIZER,
                .cond = PTHREAD_COND_INITIALIZER,
        };
        pthread_t thread;
        int r;

        if (argc != 3) {
                fprintf(stderr, "Usage: %s SERVICE USER\n", argv[0]);
                return 2;
        }

        w.service = argv[1];
        w.user = argv[2];
        w.main_tid = (pid_t) syscall(SYS_gettid);

        r = pthread_create(&thread, NULL, worker_run, &w);
        if (r != 0) {
                fprintf(stderr, "pthread_create: %s\n", strerror(r));
                return 1;
        }

        /* The main thread stays alive and busy (waking up every few ms) for as long as the
         * worker runs, so the process is multi-threaded during pam_open_session(). */
        pthread_mutex_lock(&w.lock);
        while (!w.done) {
                struct timespec ts;

                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 5 * 1000 * 1000;
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                (void) pthread_cond_timedwait(&w.cond, &w.lock, &ts);
        }
        pthread_mutex_unlock(&w.lock);

        (void) pthread_join(thread, NULL);
        return w.result == PAM_SUCCESS ? 0 : 1;
}
