/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * systemd-standin: the part of systemd's bus API that nsmanagerd's Attach() uses where systemd
 * is PID 1 (src/nsmanagerd/attach-unit.c), for the sandbox, where systemd is not PID 1 and
 * cannot be: org.freedesktop.systemd1 on the system bus, with
 *   Manager.StartTransientUnit(ssa(sv)a(sa(sv))) → o: the unit "runs" at once (no process:
 *     its stdio fds are closed), JobRemoved(id, job, unit, "done") follows the reply;
 *   Manager.KillUnit(ssi): the unit ends, killed by that signal (PropertiesChanged of its
 *     Service interface); Manager.UnrefUnit(s): it is forgotten;
 *   each unit's org.freedesktop.systemd1.Service properties ExecMainPID (this process's pid),
 *     ExecMainCode, ExecMainStatus, Result, ControlGroup (""), through Properties.GetAll.
 * SIGUSR2 holds the answers to StartTransientUnit (printing "held N UNIT" for each one held) until
 * the next SIGUSR2, as a busy systemd would: the daemon's calls stay in flight.
 * SIGUSR1 ends every unit (ExecMainCode CLD_EXITED, status 0) with its PropertiesChanged. It
 * prints "ready" once the name is its own, and runs until SIGTERM. tests/test_attach.py.
 * The real thing is exercised by tests/test_nspawn_attach.py, in a container where it is PID 1.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define UNIT_PREFIX "/org/freedesktop/systemd1/unit"
#define UNITS_MAX 4096

typedef struct Unit {
        char *name;
        int32_t code, status;
} Unit;

static Unit units[UNITS_MAX];
static uint32_t next_job = 1;

static Unit *unit_find(const char *name) {
        for (size_t i = 0; i < UNITS_MAX; i++)
                if (units[i].name && strcmp(units[i].name, name) == 0)
                        return &units[i];
        return NULL;
}

typedef struct PendingJob {
        sd_bus *bus;
        uint32_t id;
        char job[64];
        char *unit;
} PendingJob;

static int on_job_done(sd_event_source *s, void *userdata) {
        PendingJob *j = userdata;

        (void) sd_bus_emit_signal(j->bus, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                  "JobRemoved", "uoss", j->id, j->job, j->unit, "done");
        free(j->unit);
        free(j);
        sd_event_source_disable_unref(s);
        return 0;
}

static bool holding = false;
static sd_bus_message *held[UNITS_MAX];
static size_t n_held = 0;

static int start_unit(sd_bus_message *m, sd_bus_error *error) {
        const char *name, *mode;
        PendingJob *j;
        Unit *u = NULL;
        int r;

        r = sd_bus_message_read(m, "ss", &name, &mode);
        if (r < 0)
                return r;
        /* The properties are read past: the fds in them close with the message. */
        for (size_t i = 0; i < UNITS_MAX && !u; i++)
                if (!units[i].name)
                        u = &units[i];
        if (!u || unit_find(name))
                return sd_bus_error_set(error, "org.freedesktop.systemd1.UnitExists", "No room, or exists.");
        u->name = strdup(name);
        u->code = u->status = 0;
        j = calloc(1, sizeof(PendingJob));
        if (!u->name || !j)
                return -ENOMEM;
        j->bus = sd_bus_message_get_bus(m);
        j->id = next_job++;
        snprintf(j->job, sizeof j->job, "/org/freedesktop/systemd1/job/%u", j->id);
        j->unit = strdup(name);
        r = sd_bus_reply_method_return(m, "o", j->job);
        if (r < 0)
                return r;
        /* After the reply, as systemd sends it once the job ran. */
        return sd_event_add_defer(sd_bus_get_event(j->bus), NULL, on_job_done, j);
}

static int method_start(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        if (holding && n_held < UNITS_MAX) {
                const char *name = "?";
                (void) sd_bus_message_read(m, "s", &name);   /* read again from the start when answered */
                held[n_held++] = sd_bus_message_ref(m);
                printf("held %zu %s\n", n_held, name);
                fflush(stdout);
                return 1;
        }
        return start_unit(m, error);
}

static int on_sigusr2(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        holding = !holding;
        if (holding)
                return 0;
        for (size_t i = 0; i < n_held; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                int r;

                (void) sd_bus_message_rewind(held[i], true);
                r = start_unit(held[i], &error);
                if (r < 0 || sd_bus_error_is_set(&error))
                        (void) sd_bus_reply_method_errno(held[i], r, &error);
                sd_bus_error_free(&error);
                sd_bus_message_unref(held[i]);
        }
        n_held = 0;
        return 0;
}

static int method_kill(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name, *whom;
        char *path = NULL;
        int32_t sig;
        Unit *u;
        int r;

        r = sd_bus_message_read(m, "ssi", &name, &whom, &sig);
        if (r < 0)
                return r;
        u = unit_find(name);
        if (!u)
                return sd_bus_error_set(error, "org.freedesktop.systemd1.NoSuchUnit", "No such unit.");
        u->code = CLD_KILLED;
        u->status = sig;
        r = sd_bus_path_encode(UNIT_PREFIX, name, &path);
        if (r < 0)
                return r;
        (void) sd_bus_emit_properties_changed(sd_bus_message_get_bus(m), path, "org.freedesktop.systemd1.Service",
                                              "ExecMainCode", "ExecMainStatus", NULL);
        free(path);
        return sd_bus_reply_method_return(m, NULL);
}

static int method_unref(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *name;
        Unit *u;
        int r;

        r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        u = unit_find(name);
        if (u) {
                free(u->name);
                u->name = NULL;
        }
        return sd_bus_reply_method_return(m, NULL);
}

static int on_sigusr1(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        sd_bus *bus = userdata;

        for (size_t i = 0; i < UNITS_MAX; i++) {
                char *path = NULL;

                if (!units[i].name || units[i].code != 0)
                        continue;
                units[i].code = CLD_EXITED;
                units[i].status = 0;
                if (sd_bus_path_encode(UNIT_PREFIX, units[i].name, &path) >= 0)
                        (void) sd_bus_emit_properties_changed(bus, path, "org.freedesktop.systemd1.Service",
                                                              "ExecMainCode", "ExecMainStatus", NULL);
                free(path);
        }
        return 0;
}

static int find_unit(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                     sd_bus_error *error) {
        char *name = NULL;
        Unit *u;

        if (sd_bus_path_decode(path, UNIT_PREFIX, &name) <= 0)
                return 0;
        u = unit_find(name);
        free(name);
        if (!u)
                return 0;
        *found = u;
        return 1;
}

static int property_pid(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "u", (uint32_t) getpid());
}

static int property_result(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Unit *u = userdata;
        return sd_bus_message_append(reply, "s", u->code == CLD_KILLED ? "signal" : "success");
}

static int property_cgroup(sd_bus *bus, const char *path, const char *interface, const char *property,
                           sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", "");
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("StartTransientUnit", "ssa(sv)a(sa(sv))", "o", method_start, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("KillUnit", "ssi", "", method_kill, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("UnrefUnit", "s", "", method_unref, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL("JobRemoved", "uoss", 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable service_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("ExecMainPID", "u", property_pid, 0, 0),
        SD_BUS_PROPERTY("ExecMainCode", "i", NULL, offsetof(Unit, code), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ExecMainStatus", "i", NULL, offsetof(Unit, status), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Result", "s", property_result, 0, 0),
        SD_BUS_PROPERTY("ControlGroup", "s", property_cgroup, 0, 0),
        SD_BUS_VTABLE_END,
};

int main(void) {
        sd_event *event = NULL;
        sd_bus *bus = NULL;
        sigset_t ss;
        int r;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGUSR1);
        sigaddset(&ss, SIGUSR2);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        if ((r = sd_event_default(&event)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL)) < 0 ||
            (r = sd_bus_open_system(&bus)) < 0 ||
            (r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                                          manager_vtable, NULL)) < 0 ||
            (r = sd_bus_add_fallback_vtable(bus, NULL, UNIT_PREFIX, "org.freedesktop.systemd1.Service", service_vtable,
                                            find_unit, NULL)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGUSR1, on_sigusr1, bus)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGUSR2, on_sigusr2, NULL)) < 0 ||
            (r = sd_bus_attach_event(bus, event, 0)) < 0 ||
            (r = sd_bus_request_name(bus, "org.freedesktop.systemd1", 0)) < 0) {
                fprintf(stderr, "systemd-standin: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        r = sd_event_loop(event);
        sd_bus_flush_close_unref(bus);
        sd_event_unref(event);
        return r < 0 ? 1 : 0;
}
