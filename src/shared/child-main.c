/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "child-main.h"
#include "child-setup.h"
#include "ipc-fields.h"

_noreturn_ void child_main(int sock, ChildRequestFunc run_request, ChildFunc run, void *userdata, const int *keep,
                           size_t n_keep) {
        _cleanup_(nsm_error_done) NsmError error = {};
        int r;

        if (child_setup(sock, keep, n_keep) < 0)
                _exit(EXIT_FAILURE);
        if (run_request) {
                _cleanup_free_ IpcMessage *m = malloc(sizeof(IpcMessage));
                _cleanup_free_ void *data = NULL;
                size_t size = 0;

                r = m ? ipc_recv_request(sock, IPC_FIELDS_MAX, m, &data, &size) : -ENOMEM;
                if (r == 0)
                        _exit(EXIT_FAILURE);   /* nothing asked: the daemon is gone */
                if (r > 0)
                        r = run_request(sock, data, size, m->fds, m->n_fds, &error);
                if (r == -EBADMSG && !nsm_error_is_set(&error))
                        (void) nsm_error_set_errnof(&error, r, "Malformed request.");
        } else
                r = run(sock, userdata, &error);
        if (r < 0) {
                if (!nsm_error_is_set(&error))
                        (void) nsm_error_set_errnof(&error, r, NULL);
                (void) ipc_send_error(sock, &error);
        }
        _exit(EXIT_SUCCESS);
}
