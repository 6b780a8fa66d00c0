/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The commands Attach() started and has not seen end yet, whichever way they were started:
 * by systemd as a transient service (attach-unit.c), or forked by the daemon where systemd is
 * not PID 1 (attach-fork.c). The list belongs to the Manager (Manager.attach_processes).
 * What happens later (a start systemd finished or refused, the client hanging up) comes back
 * through the callbacks the callers set here: this file calls none of them. */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "manager.h"
#include "nsm-error.h"
#include "user-util.h"

/* What the command is to be, as the bus handler checked it. The strings and fds belong to the
 * call's message (or the handler) and live as long as the handler runs. */
typedef struct AttachRequest {
        const char *user;              /* the namespace's owner */
        int mntns_fd;                  /* the namespace */
        uid_t uid;                     /* the caller, as the bus authenticated it */
        const Credentials *caller;     /* its gid and groups from NSS (never /proc) */
        const char *home;              /* its home, from NSS */
        char **command;
        char **environment;
        const char *working_directory; /* NULL or absolute */
        int fds[3];                    /* the command's stdin, stdout, stderr */
} AttachRequest;

/* The fds OpenAttach() made for a command: what the command gets, what the caller gets. */
#define ATTACH_MADE_FDS_MAX 8

/* How a start that finishes later (attach_unit_start()) hands its outcome back to the bus glue
 * that holds the call: 'error' is NULL once the command runs (p->pid is set), else it says why
 * it never ran. Called at most once, while p->call is unanswered; it answers p->call and lets
 * go of it. 'p' stays the caller's: freed by it afterwards when the start failed. */
typedef void (*AttachStartedFunc)(AttachProcess *p, const NsmError *error);

struct AttachProcess {
        Manager *manager;
        AttachProcess *next;

        uid_t uid;                     /* the caller's */
        char *user;                    /* the namespace's owner */
        char *command;                 /* argv[0], for the logs */
        pid_t pid;                     /* 0 until it runs */
        int status_fd;                 /* where "EXITED n" / "KILLED n" goes */
        /* OpenAttach(): the caller's ends, for the reply (stdin, stdout, stderr, status), and
         * every copy of the fds the daemon made that it still holds, both ends; let go of in a
         * child right after the hand-over (attach_process_release_fds()). -EBADF where none. */
        bool open_attach;
        int reply_fds[4];
        int made_fds[ATTACH_MADE_FDS_MAX];
        size_t n_made_fds;
        sd_event_source *hangup_source; /* the client closed its end of the status pipe */
        void (*on_client_gone)(AttachProcess *p);

        /* Forked by the daemon (attach-fork.c). */
        sd_event_source *child_source;

        /* Started by systemd (attach-unit.c). */
        sd_bus_message *call;          /* the Attach() call, until it is answered */
        AttachStartedFunc on_started;  /* answers it */
        char *unit;                    /* nsmanager-attach-UID-RANDOM.service */
        char *job;                     /* the start job's object path */
        char *job_result;              /* from JobRemoved: "done", "failed", … */
        char *cgroup;                  /* the unit's control group, once it runs */
        char *env_file;                /* the environment, until systemd has read it */
        sd_bus_slot *start_slot, *call_slot;
        bool refresh_again;            /* something changed while properties were read */
        sd_bus_message *start_message; /* StartTransientUnit, until the matches are in place */
        unsigned n_calls;              /* calls to systemd in flight that expect a reply */
        bool refresh_deferred;         /* properties to read once a call to systemd may go */
        void (*forget)(AttachProcess *p); /* attach-unit.c lets go of it, when it is freed */
};

/* Allocates the process record of a command about to start and links it into the Manager's
 * list. Takes 'status_fd': freeing the record closes it. */
int attach_process_new(Manager *m, uid_t uid, const char *user, const char *command, int status_fd,
                       AttachProcess **ret);
/* Unlinks and frees: closes the status fd without a status line, drops event sources, bus
 * slots and the unanswered call, removes the environment file. The command itself goes on. */
AttachProcess *attach_process_free(AttachProcess *p);
static inline void attach_process_freep(AttachProcess **p) {
        attach_process_free(*p);
}

/* OpenAttach(): keeps 'fd' until the hand-over; attach_process_release_fds() lets go of it. */
int attach_process_keep_fd(AttachProcess *p, int fd);
/* Lets go of the daemon's copies of the fds it made, in a child of its own: closing the last
 * copy of a pipe or pty end takes a lock that the holder of the other end can keep for as long
 * as her FUSE server does not answer (a read into or write from a mapping of a file there).
 * The child waits there, if anyone, charged to the command's owner. */
void attach_process_release_fds(AttachProcess *p);
/* Writes "EXITED <status>" (code CLD_EXITED) or "KILLED <signo>" to the status fd, without
 * blocking and without dying of SIGPIPE when the client is gone. */
void attach_process_report(AttachProcess *p, int code, int status);

/* Calls on_gone(p) once when the client closes its end of the status fd. */
int attach_process_watch_client(AttachProcess *p, void (*on_gone)(AttachProcess *p));

/* Forgets the commands started by Attach(): their status fds are closed without a status line
 * (the commands themselves go on). Called when the daemon exits. */
void attach_done(Manager *m);
