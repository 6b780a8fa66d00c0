/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/syscall.h>

#include "fd-store.h"
#include "log.h"
#include "namespace-session.h"
#include "namespace-state.h"
#include "process-util.h"

/* A namespace's sessions and their leader processes (namespace-session.h). */

static int session_leader_exited(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int session_fd_closed(sd_event_source *s, int fd, uint32_t revents, void *userdata);

/* Edge-triggered, both: a pidfd stays readable once its process is gone, a pipe without
 * writers stays hung up, and sd-event dispatches one source per turn of its loop; level-
 * triggered, every turn's epoll_wait would return every ended session not handled yet. When a
 * thousand logins end at once (bench/bench_burst.py) that made the turns, and the logins
 * arriving meanwhile, slower by the thousand: the first 200 logins of the next burst took
 * 0.4 s, the rest 0.03 s. */

/* Watches the pipe's read end: no events asked for, EPOLLHUP comes anyway once the last
 * writer is gone; what a writer might write is never read (as logind's session FIFO). */
static int session_watch_fd(Namespace *ns, Session *s) {
        return sd_event_add_io(ns->set->event, &s->fd_source, s->fd, EPOLLET, session_fd_closed, ns);
}

/* Watches the leader with a pidfd, where the session has no fd. With 'verify', only if the
 * pid still names the process that opened the session (same start time): after a restart a
 * pid may have been reused. -ESRCH: it is gone. */
static int session_watch_leader(Namespace *ns, Session *s, bool verify) {
        if (s->leader <= 0)
                return 0;
        s->pidfd = (int) syscall(SYS_pidfd_open, s->leader, 0);
        if (s->pidfd < 0)
                return -errno;
        /* Checked after the pidfd is taken: from here on the pid cannot be reused under us. */
        if (verify && s->leader_start != 0 && process_start_time(s->leader) != s->leader_start) {
                s->pidfd = safe_close(s->pidfd);
                return -ESRCH;
        }
        return sd_event_add_io(ns->set->event, &s->pidfd_source, s->pidfd, EPOLLIN | EPOLLET, session_leader_exited,
                               ns);
}

static int namespace_stop_timer_fired(sd_event_source *s, uint64_t usec, void *userdata) {
        Namespace *ns = userdata;

        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
        if (ns->sessions || ns->linger || !ns->set)
                return 0;
        return namespace_remove(ns, namespace_set_deadline(ns->set), NULL, NULL);
}

/* The caller tells the listeners (State is "closing" now), once with whatever else it changed. */
void namespace_maybe_schedule_stop(Namespace *ns) {
        NamespaceSet *s = ns->set;
        int r;

        if (!s || ns->sessions || ns->linger || ns->stop_timer)
                return;
        r = sd_event_add_time_relative(s->event, &ns->stop_timer, CLOCK_MONOTONIC, s->config->stop_delay_usec,
                                       10 * USEC_PER_MSEC, namespace_stop_timer_fired, ns);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the stop timer of '%s', keeping it: %m", ns->name);
}

static void namespace_cancel_stop(Namespace *ns) {
        ns->stop_timer = sd_event_source_disable_unref(ns->stop_timer);
}

bool namespace_session_id_seen(Namespace *ns, const Session *before) {
        for (Session *s = ns->sessions; s && s != before; s = s->next)
                if (streq(s->id, before->id))
                        return true;
        return false;
}

static bool namespace_has_session(Namespace *ns, const char *id) {
        for (Session *s = ns->sessions; s; s = s->next)
                if (streq(s->id, id))
                        return true;
        return false;
}

int namespace_add_session(Namespace *ns, const char *id, pid_t leader, int *ret_fd) {
        _cleanup_close_ int write_fd = -EBADF;
        char fdname[FD_STORE_NAME_MAX];
        int pipefd[2], r;
        bool known;
        Session *s;

        s = session_new(id);
        if (!s)
                return -ENOMEM;
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                r = -errno;
                session_free(s);
                return r;
        }
        s->fd = pipefd[0];
        write_fd = pipefd[1];
        r = session_watch_fd(ns, s);
        if (r < 0) {
                session_free(s);
                return r;
        }
        /* The leader is waiting for our reply: its pid names it now. Only the fallback of a
         * restart without the fd store looks at it. */
        s->leader = leader;
        s->leader_start = leader > 0 ? process_start_time(leader) : 0;
        if (fd_store_available() && fd_store_new_name(fdname) >= 0) {
                r = fd_store_add(s->fd, fdname);
                if (r > 0)
                        s->fdname = strdup(fdname);
                else if (r < 0)
                        log_warning_errno(r, "Failed to hand session '%s' of '%s' to systemd's fd store, ignoring "
                                          "(a restart falls back to its leader): %m", id, ns->name);
        }

        namespace_cancel_stop(ns);
        known = namespace_has_session(ns, id);
        s->next = ns->sessions;
        ns->sessions = s;
        namespace_save_or_warn(ns);
        if (!known)
                namespace_notify_changed(ns);
        *ret_fd = TAKE_FD(write_fd);
        return 0;
}

/* The last session of an id gone: tell the listeners, maybe start the stop delay. */
static void namespace_session_removed(Namespace *ns, const char *id) {
        namespace_save_or_warn(ns);
        namespace_maybe_schedule_stop(ns);
        if (!namespace_has_session(ns, id))
                namespace_notify_changed(ns);
}

static void namespace_end_session(Namespace *ns, Session *s) {
        _cleanup_free_ char *id = NULL;

        for (Session **p = &ns->sessions; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        break;
                }
        id = TAKE_PTR(s->id);
        session_free(s);
        if (id)
                namespace_session_removed(ns, id);
}

int namespace_remove_session(Namespace *ns, const char *id, NsmError *error) {
        bool found = false;

        for (Session **p = &ns->sessions; *p;) {
                Session *s = *p;

                if (!streq(s->id, id)) {
                        p = &s->next;
                        continue;
                }
                /* The login may still hold its end: systemd's copy of ours would stay. */
                fd_store_remove(s->fdname);
                *p = s->next;
                session_free(s);
                found = true;
        }
        if (!found)
                return nsm_error_setf(error, NSM_ERROR_NO_SUCH_SESSION, "User '%s' has no session '%s'.", ns->name, id);
        namespace_session_removed(ns, id);
        return 0;
}

static Session *namespace_find_source(Namespace *ns, sd_event_source *source) {
        for (Session *s = ns->sessions; s; s = s->next)
                if (s->fd_source == source || s->pidfd_source == source)
                        return s;
        return NULL;
}

static int session_fd_closed(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Namespace *ns = userdata;
        Session *s = namespace_find_source(ns, source);

        if (!s || !(revents & (EPOLLHUP | EPOLLERR)))
                return 0;
        log_info("Session '%s' of '%s' closed.", s->id, ns->name);
        /* systemd drops its copy by itself: it saw the same hang-up. */
        namespace_end_session(ns, s);
        return 0;
}

static int session_leader_exited(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Namespace *ns = userdata;
        Session *s = namespace_find_source(ns, source);

        if (!s)
                return 0;
        log_info("Login process %d of session '%s' of '%s' exited; closing the session.", (int) s->leader, s->id,
                 ns->name);
        namespace_end_session(ns, s);
        return 0;
}

int namespace_set_linger(Namespace *ns, bool b) {
        if (ns->linger == b)
                return 0;
        ns->linger = b;
        if (b)
                namespace_cancel_stop(ns);
        namespace_save_or_warn(ns);
        if (!b)
                namespace_maybe_schedule_stop(ns);
        namespace_notify_changed(ns);
        return 0;
}

void namespace_watch_loaded_sessions(Namespace *ns, StoredFds *stored_fds) {
        for (Session **p = &ns->sessions; *p;) {
                Session *s = *p;
                int r;

                s->fd = stored_fds_take(stored_fds, s->fdname);
                if (s->fd >= 0) {
                        r = session_watch_fd(ns, s);
                        if (r >= 0) {
                                p = &s->next;
                                continue;
                        }
                        log_warning_errno(r, "Failed to watch the fd of session '%s' of '%s', watching its leader: %m",
                                          s->id, ns->name);
                        s->fd = safe_close(s->fd);
                }
                /* Not in the store (any more): a later restart will not find it there either. */
                s->fdname = mfree(s->fdname);
                if (session_watch_leader(ns, s, /* verify= */ true) >= 0) {
                        p = &s->next;
                        continue;
                }
                log_info("Session '%s' of '%s' ended while the daemon was not running.", s->id, ns->name);
                *p = s->next;
                session_free(s);
        }
}
