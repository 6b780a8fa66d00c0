# SPDX-License-Identifier: LGPL-2.1-or-later
"""nsmanager on a Debian 12 that boots with systemd as PID 1 (systemd-nspawn).

The rest of the suite runs nsmanagerd by hand in the sandbox of conftest.py; this module
checks what only a real service manager shows: D-Bus activation through the installed
unit and its hardening (capability bounding set, seccomp, the machine's own mount
namespace), logind sessions (su -l) and user@.service entering the user's namespace
through pam_nsmanager, SharedSubtrees=/mnt reaching a login, the namespace and its
sessions surviving `systemctl stop/start`, `systemctl reload` and a SIGKILL
(Restart=on-failure), `nsctl attach` by the user against the real polkitd, logout, and
a clean poweroff; and what touches the kernel, /proc or other users' processes under the
unit as the package installs it: Eject naming its holders (a user's and root's, through
CAP_SYS_PTRACE), ReleaseWithHost='s log of them, how mount changes are seen and why, and
`nsctl verify`'s forecast against the login that follows (a stick is a loop device the
pytest process attaches, its node made in the container: machine.Stick).

The container, how it is built, booted and cleaned up: tests/machine.py. The tests share
the module's booted container (the fixture `machine`: the build installed as an
administrator would) and alice's login (`alice_session`), yet each one stands alone: it
may run by itself (-k) or in any order. test_poweroff_leaves_nothing boots a container of
its own.
"""

from __future__ import annotations

import select
import subprocess

import pytest

from helpers import wait_until
from machine import ALICE, IMAGE_TOOL, UNIT, Login, Stick, _fmt, booted, install_as_admin, mount_table, ns_id_of, \
    require_plain_build
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, timeout

# <linux/capability.h>, as systemctl show prints them.
CAPABILITIES = [
    "cap_chown", "cap_dac_override", "cap_dac_read_search", "cap_fowner", "cap_fsetid",
    "cap_kill", "cap_setgid", "cap_setuid", "cap_setpcap", "cap_linux_immutable",
    "cap_net_bind_service", "cap_net_broadcast", "cap_net_admin", "cap_net_raw",
    "cap_ipc_lock", "cap_ipc_owner", "cap_sys_module", "cap_sys_rawio", "cap_sys_chroot",
    "cap_sys_ptrace", "cap_sys_pacct", "cap_sys_admin", "cap_sys_boot", "cap_sys_nice",
    "cap_sys_resource", "cap_sys_time", "cap_sys_tty_config", "cap_mknod", "cap_lease",
    "cap_audit_write", "cap_audit_control", "cap_setfcap", "cap_mac_override",
    "cap_mac_admin", "cap_syslog", "cap_wake_alarm", "cap_block_suspend", "cap_audit_read",
    "cap_perfmon", "cap_bpf", "cap_checkpoint_restore",
]

# ---------------------------------------------------------------------------------------

def test_unit_verifies(machine):
    """The installed unit passes systemd-analyze verify under the container's systemd."""
    # --man=no: the minimal image has no man-db; test_install.py checks Documentation=man:…
    # against the installed pages.
    p = machine.exec(["systemd-analyze", "verify", "--man=no", UNIT], check=False)
    ours = [line for line in (p.stdout + p.stderr).splitlines() if "nsmanagerd" in line]
    assert p.returncode == 0 and not ours, f"systemd-analyze verify {UNIT}:\n{p.stdout}{p.stderr}"
    assert machine.systemctl_value("UnitFileState") == "disabled", "nothing should have enabled the unit"


def test_dbus_activation_and_hardening(machine):
    """The first call D-Bus-activates nsmanagerd.service, which runs with the unit's
    capability bounding set and seccomp filter, in the machine's own mount namespace."""
    assert machine.is_active() in ("inactive", "active"), machine.is_active()
    was_active = machine.is_active() == "active"
    reply = machine.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces",
                           what="busctl call ListNamespaces")
    assert isinstance(reply, list) and len(reply) == 1 and isinstance(reply[0], list), reply
    assert machine.is_active() == "active", f"{UNIT} is {machine.is_active()} after the call\n{machine.diag()}"
    if not was_active:
        log = machine.journal("-u", "dbus.service", "--grep", "org.example.NSManager")
        assert f"unit='{UNIT}'" in log, f"no D-Bus activation of {UNIT} in dbus.service's journal:\n{log}"

    pid = int(machine.systemctl_value("MainPID"))
    assert pid > 0
    status = machine.proc_status(pid)
    pid1_bnd = int(machine.proc_status(1)["CapBnd"], 16)
    unit_caps = machine.systemctl_value("CapabilityBoundingSet").split()
    unknown = [c for c in unit_caps if c not in CAPABILITIES]
    assert not unknown, f"unknown capability names {unknown}"
    unit_mask = sum(1 << CAPABILITIES.index(c) for c in unit_caps)
    bnd = int(status["CapBnd"], 16)
    names = [c for i, c in enumerate(CAPABILITIES) if bnd & (1 << i)]
    assert bnd == unit_mask & pid1_bnd, \
        f"CapBnd of nsmanagerd is {bnd:#x} ({' '.join(names)}), the unit says {unit_mask:#x} ({' '.join(unit_caps)})"
    assert bnd != pid1_bnd, "the daemon's bounding set is not limited"
    if machine.systemctl_value("SystemCallFilter"):
        assert status["Seccomp"] == "2", f"no seccomp filter on nsmanagerd: Seccomp {status['Seccomp']}"
    nnp = machine.systemctl_value("NoNewPrivileges") == "yes"
    assert status["NoNewPrivs"] == ("1" if nnp else "0")
    # The unit must not give the daemon a mount namespace of its own.
    assert machine.mntns(pid) == machine.mntns(1), "nsmanagerd does not run in the machine's mount namespace"



def test_mount_events_path_under_the_unit(machine):
    """Which way the installed daemon sees mount changes (MountEvents) and reads mount tables
    (listmount(2)/statmount(2) or mountinfo) under the shipped unit, printed (pytest -s). The
    unit's SystemCallFilter= is a deny-list: listmount, statmount and fanotify_init, unknown
    to Debian 12's libseccomp, are allowed by it (an allow-list gave them ENOSYS); what is
    left is the kernel's, and the container's own filter (systemd-nspawn's allow-list)."""
    machine.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces", what="busctl call ListNamespaces")
    mode = machine.busctl("get-property", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "MountEvents",
                          what="busctl get-property MountEvents")
    log = machine.journal("-u", UNIT, "--grep", "Mount changes are seen|Mount tables are read|No fanotify mount events")
    seen = [line for line in log.splitlines() if "Mount changes are seen" in line]
    tables = [line for line in log.splitlines() if "Mount tables are read" in line]
    why = [line for line in log.splitlines() if "No fanotify mount events" in line]
    release = subprocess.run(["uname", "-r"], capture_output=True, text=True, check=True).stdout.strip()
    print(f"\nbooted (systemd-nspawn), kernel {release}: MountEvents={mode}\n  {seen[-1] if seen else '?'}\n  "
          f"{tables[-1] if tables else '?'}" + (f"\n  {why[-1]}" if why else ""))
    assert mode in ("fanotify", "poll"), mode
    assert seen and tables, f"the daemon did not say how it sees mount changes:\n{log}"
    assert ("fanotify" in seen[-1]) == (mode == "fanotify"), seen[-1]
    syscall_filter = machine.systemctl_value("SystemCallFilter")
    assert syscall_filter.startswith("~"), f"the unit's SystemCallFilter= is an allow-list: {syscall_filter[:200]}"
    denied = set(syscall_filter[1:].split())
    assert not denied & {"listmount", "statmount", "fanotify_init", "fanotify_mark"}, denied


def test_su_login_enters_namespace(machine, alice_session):
    """su -l alice (pam_systemd, then pam_nsmanager) lands in alice's namespace: the
    MountNamespaceId of her namespace object."""
    link = alice_session.link
    ns_id = machine.ns_property("MountNamespaceId")
    assert ns_id_of(link) == ns_id, f"alice's login is in {link}, her namespace object says mnt:[{ns_id}]"
    assert link != machine.mntns(1), "alice's login stayed in the machine's namespace"
    once = machine.su_alice("readlink /proc/self/ns/mnt").stdout.strip()
    assert once == link, f"a second su -l alice is in {once}, the first in {link}"
    sessions = machine.ns_property("Sessions")
    # su's logind session (XDG_SESSION_ID, "c1"...) is recorded under its logind id.
    logind = machine.exec(["loginctl", "list-sessions", "--no-legend"]).stdout
    alice_ids = [line.split()[0] for line in logind.splitlines() if ALICE.name in line.split()]
    assert alice_ids and set(alice_ids) & set(sessions), \
        f"alice's logind sessions {alice_ids} are not among the namespace's Sessions {sessions}"
    listing = machine.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces")[0]
    assert [ALICE.name, ALICE.uid] in [row[:2] for row in listing], listing


def test_host_mount_under_mnt_reaches_view(machine, alice_session):
    """A tmpfs mounted on the machine's /mnt appears in alice's view (SharedSubtrees=/mnt),
    and its unmount too."""
    probe = "/mnt/nsm-probe"
    machine.exec(["mkdir", "-p", probe])
    machine.exec(["mount", "-t", "tmpfs", "-o", "size=1m", "nsm-probe", probe])
    try:
        machine.exec(["sh", "-c", f"echo from-the-host > {probe}/hello"])
        seen = machine.su_alice(f"cat {probe}/hello; findmnt -n -o FSTYPE,SOURCE {probe}", check=False)
        assert seen.stdout.split() == ["from-the-host", "tmpfs", "nsm-probe"], \
            f"alice's view does not show the host's tmpfs on {probe}: {seen.stdout!r} {seen.stderr!r}"
        mountinfo = machine.exec(["cat", f"/proc/{alice_session.pid}/mountinfo"]).stdout
        assert f" {probe} " in mountinfo, f"{probe} is not in the mount table of alice's session"
    finally:
        machine.exec(["umount", probe])
    gone = machine.su_alice(f"findmnt -n {probe} || echo none", check=False).stdout.strip()
    assert gone == "none", f"the unmount did not reach alice's view: {gone}"


def test_restart_keeps_namespace(machine, alice_session):
    """systemctl stop, then start: the pinned namespace survives, with the same id and
    sessions, and a new login still lands in it."""
    pid, link = alice_session.pid, alice_session.link
    ns_id = machine.ns_property("MountNamespaceId")
    sessions = sorted(machine.ns_property("Sessions"))
    machine.exec(["systemctl", "stop", UNIT], what=f"systemctl stop {UNIT}")
    assert machine.is_active() == "inactive", f"{UNIT} failed on stop\n{machine.diag()}"
    assert machine.mntns(pid) == link, "alice's session lost its namespace when the daemon stopped"
    machine.exec(["systemctl", "start", UNIT], what=f"systemctl start {UNIT}")
    assert machine.is_active() == "active", machine.diag()
    assert machine.ns_property("MountNamespaceId") == ns_id, "the namespace changed across the restart"
    assert sorted(machine.ns_property("Sessions")) == sessions, "the sessions were lost across the restart"
    again = machine.su_alice("readlink /proc/self/ns/mnt").stdout.strip()
    assert again == link, f"after the restart su -l alice lands in {again}, not {link}"
    errors = machine.journal("-u", UNIT, "-p", "warning", lines=50)
    print(f"warnings of {UNIT} in the journal:\n{errors}")


def test_reload(machine, alice_session):
    """systemctl reload (ExecReload=busctl call … ReloadConfig) succeeds and keeps the
    service and the namespace."""
    ns_id = machine.ns_property("MountNamespaceId")
    pid = machine.systemctl_value("MainPID")
    machine.exec(["systemctl", "reload", UNIT], what=f"systemctl reload {UNIT}")
    assert machine.is_active() == "active" and machine.systemctl_value("MainPID") == pid, machine.diag()
    assert machine.ns_property("MountNamespaceId") == ns_id


def kill_and_wait_for_restart(machine) -> None:
    old = int(machine.systemctl_value("MainPID"))
    machine.exec(["sh", "-c", f"kill -KILL {old}"])   # (minbase has no procps: the shell's kill)

    def restarted():
        pid = machine.systemctl_value("MainPID")
        return machine.is_active() == "active" and pid not in ("0", str(old)) and pid
    wait_until(restarted, f"systemd to restart {UNIT} after SIGKILL", 30, interval=0.1, diag=machine.diag)


def test_crash_is_restarted(machine, alice_session):
    """SIGKILL to the daemon: systemd restarts it (Restart=on-failure) and the new one
    takes up the pinned namespace and its sessions."""
    link = alice_session.link
    ns_id = machine.ns_property("MountNamespaceId")
    sessions = sorted(machine.ns_property("Sessions"))
    kill_and_wait_for_restart(machine)
    assert int(machine.systemctl_value("NRestarts")) >= 1
    assert machine.ns_property("MountNamespaceId") == ns_id, "the namespace changed across the crash"
    assert sorted(machine.ns_property("Sessions")) == sessions, "the sessions were lost across the crash"
    assert machine.su_alice("readlink /proc/self/ns/mnt").stdout.strip() == link


def test_a_crash_keeps_sessions_in_the_fd_store(machine, alice_session):
    """The daemon's end of each session's pipe is in systemd's fd store (one fd per session):
    after SIGKILL the restarted daemon gets them back, and a login that ends afterwards ends
    its session by its fd (as before the crash), not by the fallback that watches the login
    process."""
    login = Login(machine)
    try:
        assert login.session in machine.ns_property("Sessions")
        stored = int(machine.systemctl_value("NFileDescriptorStore"))
        assert stored >= 1, f"no fd in the store with a login of alice's open\n{machine.diag()}"
        kill_and_wait_for_restart(machine)
        assert login.session in machine.ns_property("Sessions"), "the session was lost across the crash"
        log = machine.journal("-u", UNIT, "--grep", "kept", lines=5)
        assert "session fd(s) for us" in log, log
    finally:
        login.logout()
    wait_until(lambda: login.session not in machine.ns_property("Sessions"), "the session to close", 10,
               interval=0.1, diag=machine.diag)
    log = machine.journal("-u", UNIT, "--grep", login.session, lines=20)
    assert f"Session '{login.session}' of 'alice' closed." in log, log
    assert "Login process" not in log, log


def test_attach_as_user(machine, alice_session):
    """nsctl attach by alice herself, unprivileged, from the machine's namespace: the real
    polkitd allows attach-own, and systemd runs the command in her namespace as her, not as
    the daemon's child: none of the service's bounding set (tests/test_nspawn_attach.py has
    the rest)."""
    link = alice_session.link
    p = machine.exec(["setpriv", f"--reuid={ALICE.uid}", f"--regid={ALICE.gid}", "--init-groups", "--",
                      machine.installed_path("nsctl"), "attach", ALICE.name, "--",
                      "sh", "-c", "id -u; readlink /proc/self/ns/mnt; sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status"],
                     what="nsctl attach alice as alice")
    uid, attached, bnd = p.stdout.split()
    assert uid == str(ALICE.uid)
    assert attached == link, f"the attached command is in {attached}, alice's namespace is {link}"
    daemon_bnd = machine.proc_status(int(machine.systemctl_value("MainPID")))["CapBnd"]
    assert bnd != daemon_bnd, f"the attached command has the daemon's CapBnd {bnd}"


def test_user_manager_in_namespace(machine, alice_session):
    """pam_systemd of alice's login started user@2001.service; Debian's systemd-user stack
    includes common-session-noninteractive, which has the module: systemd --user runs in
    alice's namespace."""
    unit = f"user@{ALICE.uid}.service"
    wait_until(lambda: machine.is_active(unit) == "active", f"{unit} to be active", 30, interval=0.1,
               diag=machine.diag)
    pid = int(machine.systemctl_value("MainPID", unit))
    link = alice_session.link
    assert machine.mntns(pid) == link, f"{unit} (pid {pid}) is in {machine.mntns(pid)}, alice's namespace is {link}"
    sessions = machine.ns_property("Sessions")
    assert any(s.startswith("pam-systemd-user-") for s in sessions), \
        f"no systemd-user session among {sessions}"
    assert not machine.root_path("/etc/pam.d/systemd-user").exists(), \
        "/etc/pam.d/systemd-user would override systemd's own stack"


def test_logout_closes_session(machine, alice_session):
    """alice logs out of a second login: su's close_session (pam_nsmanager closes the session
    fd) takes its logind session off the namespace, which stays for her other sessions (the
    first login, the user manager's)."""
    login = Login(machine)
    try:
        assert login.session, "su -l alice got no logind session (no XDG_SESSION_ID)"
        before = machine.ns_property("Sessions")
        assert login.session in before, f"the login's logind session {login.session} is not among {before}"
    finally:
        status = login.logout()
    assert status is not None

    def closed():
        now = machine.ns_property("Sessions")
        return now if login.session not in now and any(s.startswith("pam-systemd-user-") for s in now) else None
    after = wait_until(closed, f"alice's su session {login.session} to leave Sessions ({before}) while the user "
                       "manager's stays", 10, interval=0.1, diag=machine.diag)
    assert alice_session.session in after, f"alice's first login {alice_session.session} left too: {after}"
    log = machine.journal("-u", UNIT, "--grep", "closed", lines=20)
    assert f"Session '{login.session}' of 'alice' closed" in log, log


def test_poweroff_leaves_nothing(sandbox, tmp_path_factory):
    """A container with the build installed and alice logged in (so nsmanagerd active,
    holding her namespace) powers off cleanly; the holder's namespace goes with the copy,
    the cached image is untouched. (A container of its own: the module's serves the other
    tests.) A root `nsctl attach alice -- … sleep` started without a terminal is still running:
    it does not hold the poweroff up until systemd-shutdown's 90 s timeout (its nsenter,
    stopped by the shutdown's SIGSTOP to every process, is continued: machine.py)."""
    require_plain_build()
    with booted(tmp_path_factory.mktemp("nspawn-poweroff"), prepare=install_as_admin) as m:
        login = Login(m)
        attached = None
        try:
            assert m.is_active() == "active", f"{UNIT} is not active with alice logged in\n{m.diag()}"
            attached = m.popen([m.installed_path("nsctl"), "attach", ALICE.name, "--", "setpriv",
                                f"--reuid={ALICE.uid}", f"--regid={ALICE.gid}", "--clear-groups", "sleep", "300"])
            wait_until(lambda: "sleep" in m.exec(["sh", "-c", "cat /proc/[0-9]*/comm"]).stdout.split(),
                       "the attached sleep to run", 10, interval=0.1, diag=m.diag)
            # Below systemd-shutdown's 90 s (scaled: at most NSM_TIMEOUT_SCALE=2 discriminates).
            status = m.poweroff(wait=30)
            assert status == 0, f"systemd-nspawn exited with {status}\n{m.console_text(40)}"
        finally:
            login.logout()
            if attached is not None:
                attached.kill()
                attached.wait()
        leftovers = m.release()
        assert not leftovers, "\n".join(leftovers)
        passwd = (m.image / "etc" / "passwd").read_text()
        assert f"\n{ALICE.name}:" not in passwd, "alice was added to the cached image"
        assert not (m.image / m.installed_path("nsmanagerd").lstrip("/")).exists(), \
            "the project was installed into the cached image"
        check = subprocess.run([str(IMAGE_TOOL), "--check"], capture_output=True)
        assert check.returncode == 0, "the cached image is no longer current after the run"
        now = mount_table()
        assert now == m.baseline, f"mount table changed: {[x for x in now if x not in m.baseline]}"


BIND_MESSAGE_ID = "234f4ef9fa8841c8ba2eaf1e05ba42f3"   # src/nsmanagerd/audit.c


def test_log_level_at_run_time_and_audit_in_journal(machine, alice_session):
    """`systemctl service-log-level` changes the daemon's level through LogControl1 (the unit's
    BusName=), and a bind alice makes in her own view is in the journal as an audit record:
    journalctl MESSAGE_ID=… NSM_USER=alice finds it with her uid, and the catalog explains it."""
    m = machine
    nsctl = m.installed_path("nsctl")
    m.exec(["systemctl", "service-log-level", UNIT, "debug"], what="systemctl service-log-level debug")
    try:
        level = m.exec(["systemctl", "service-log-level", UNIT], what="systemctl service-log-level").stdout.strip()
        assert level == "debug", level
        assert m.busctl("get-property", BUS_NAME, "/org/freedesktop/LogControl1", "org.freedesktop.LogControl1",
                        "LogLevel").split() == ["debug"]
    finally:
        m.exec(["systemctl", "service-log-level", UNIT, "info"], what="systemctl service-log-level info")

    rule = m.root_path("/etc/polkit-1/rules.d/50-nsmtest-audit.rules")
    rule.write_text('polkit.addRule(function(action, subject) {\n'
                    '    if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice")\n'
                    '        return polkit.Result.YES;\n'
                    '});\n')
    try:
        def bound():
            p = m.exec(["setpriv", f"--reuid={ALICE.uid}", f"--regid={ALICE.gid}", "--init-groups", "--", nsctl,
                        "bind", ALICE.name, "/home/alice", "/home/alice/audit-bind", "--mkdir"], check=False)
            return p if p.returncode == 0 else None
        wait_until(bound, "polkitd to load the rule (it watches rules.d)", 20, interval=0.5, diag=m.diag)
    finally:
        rule.unlink()

    def record():
        p = m.exec(["journalctl", "--no-pager", "-o", "export", f"MESSAGE_ID={BIND_MESSAGE_ID}",
                    f"NSM_USER={ALICE.name}"], check=False)
        return p.stdout if f"NSM_CALLER_UID={ALICE.uid}" in p.stdout else None
    export = wait_until(record, "the bind's audit record in the journal", 10, interval=0.2, diag=m.diag)
    assert "NSM_PATH=/home/alice/audit-bind" in export and "NSM_RESULT=done" in export, export
    assert f"NSM_CALLER_USER={ALICE.name}" in export and "_SYSTEMD_UNIT=nsmanagerd.service" in export, export

    m.exec(["journalctl", "--update-catalog"], what="journalctl --update-catalog")
    p = m.exec(["journalctl", "--no-pager", "-x", f"MESSAGE_ID={BIND_MESSAGE_ID}"], what="journalctl -x")
    assert "A bind mount into a user's view" in p.stdout, p.stdout
    m.exec([nsctl, "unmount", ALICE.name, "/home/alice/audit-bind"], what="nsctl unmount (cleanup)")
    m.exec(["rmdir", "/home/alice/audit-bind"], check=False)


# ---- eject, ReleaseWithHost=, mount events and verify, under the packaged unit ----------

def _start_holder(m, argv) -> tuple[subprocess.Popen, int]:
    """argv (a shell that prints its pid, then execs the holder) started in the container;
    the holder's pid there."""
    p = m.popen(argv)
    ready = select.select([p.stdout], [], [], timeout(30))[0]
    line = p.stdout.readline().decode().strip() if ready else ""
    if not line.isdigit():
        p.kill()
        p.wait(10)
        pytest.fail(f"the holder did not start: {_fmt(argv)}: {line!r} {p.stderr.read()!r}\n{m.diag()}",
                    pytrace=False)
    return p, int(line)


def _stop(m, procs) -> None:
    for p, pid in procs:
        m.exec(["sh", "-c", f"kill -KILL {pid}"], check=False)   # (minbase has no procps)
        try:
            p.wait(timeout(20))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)


def test_eject_names_its_holders_and_release_logs_them(machine, alice_session, tmp_path):
    """Under the packaged unit (its CapabilityBoundingSet=, seccomp filter, DevicePolicy=):
    a stick on the machine's /mnt/usb reaches alice's view, and an administrator binds it into
    her home too. With her shell's working directory in that bind and a root-owned process's
    on her /mnt/usb, `nsctl eject` refuses and names each (pid in the container, command,
    user, view, how it holds it), detaching nothing. The machine's own unmount then takes her
    /mnt/usb with it (propagation) and the daemon detaches the bind lazily (ReleaseWithHost=),
    naming in the journal who holds it; once they are gone the device is free."""
    m = machine
    nsctl = m.installed_path("nsctl")
    stick = Stick(m, tmp_path)
    holders = []
    view = f"/proc/{alice_session.pid}/ns/mnt"

    def in_view(path):
        return m.exec(["nsenter", f"--mount={view}", "findmnt", "-n", "-o", "SOURCE", path], check=False).stdout.strip()
    try:
        m.exec(["mkdir", "-p", "/mnt/usb"])
        m.exec(["mount", "-t", "ext4", stick.dev, "/mnt/usb"])
        m.exec(["chmod", "1777", "/mnt/usb"])
        wait_until(lambda: in_view("/mnt/usb"), "the stick in alice's view", 10, interval=0.1, diag=m.diag)
        m.exec([nsctl, "bind", ALICE.name, "/mnt/usb", "/home/alice/usb", "--mkdir"])
        assert in_view("/home/alice/usb") == stick.dev
        holders.append(_start_holder(m, ["su", "-l", ALICE.name, "-c", "cd ~/usb && echo $$ && exec sleep 300"]))
        holders.append(_start_holder(m, ["nsenter", f"--mount={view}", "--", "sh", "-c",
                                         "cd /mnt/usb && echo $$ && exec sleep 300"]))
        (_, alices), (_, roots) = holders
        p = m.exec([nsctl, "eject", "/mnt/usb"], check=False)
        assert p.returncode == 1, f"eject of a busy stick: exit status {p.returncode}\n{p.stdout}{p.stderr}"
        assert "Held by: " in p.stderr, p.stderr
        for line in (f"pid {alices} (sleep) of alice, in the view of 'alice': working directory on /home/alice/usb",
                     f"pid {roots} (sleep) of root, in the view of 'alice': working directory on /mnt/usb"):
            assert line in p.stderr, f"{line!r} not in nsctl eject's message:\n{p.stderr}"
        assert m.exec(["findmnt", "-n", "/mnt/usb"], check=False).stdout, "a refused eject detached the host's mount"
        assert in_view("/mnt/usb") and in_view("/home/alice/usb"), "a refused eject detached alice's copies"

        # The machine's own unmount; lazy, as a plain one says "busy" while her copies are held.
        m.exec(["umount", "-l", "/mnt/usb"])
        want = f"pid {alices} (sleep) of alice, in the view of 'alice'"
        log = wait_until(lambda: (lambda t: t if want in t else None)(
            m.journal("-u", UNIT, "--grep", f"Released block device {stick.devno}", lines=20)),
            f"ReleaseWithHost='s log naming {want}", 20, interval=0.2, diag=m.diag)
        print(log)
        assert "held by: " in log and "detached lazily" in log, log
        assert not in_view("/home/alice/usb") and not in_view("/mnt/usb"), "alice's copies outlived the unmount"
        assert not stick.free(), "the holders still hold the file system"
        _stop(m, holders)
        holders = []
        wait_until(stick.free, "the stick to be free once its holders are gone", 10, interval=0.1, diag=m.diag)
    finally:
        _stop(m, holders)
        m.exec(["umount", "-l", "/mnt/usb"], check=False)
        m.exec(["nsenter", f"--mount={view}", "umount", "-l", "/home/alice/usb"], check=False)
        m.exec(["rmdir", "/home/alice/usb"], check=False)
        stick.close()


def test_mount_events_say_how_and_why(machine, alice_session):
    """The daemon says once, at its start, how it sees mount changes, and when it polls, why
    (here: a container's root, on whatever kernel the machine runs)."""
    m = machine
    if m.is_active() != "active":
        m.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces")
    pid = m.systemctl_value("MainPID")
    log = wait_until(lambda: m.journal(f"_PID={pid}", "--grep", "Mount changes are seen with", lines=5)
                     .split("Mount changes are seen with", 1)[1:],
                     "the daemon to say how it sees mount changes", 10, interval=0.2, diag=m.diag)[0]
    print(f"nsmanagerd {pid}: Mount changes are seen with{log.splitlines()[0]}")
    if "fanotify mount events" not in log.splitlines()[0]:
        why = m.journal(f"_PID={pid}", "--grep", "fanotify", lines=5)
        assert "No fanotify mount events: " in why or "fanotify mount events fail" in why, \
            f"the daemon polls without saying why:\n{m.journal(f'_PID={pid}', lines=30)}"


def test_verify_forecasts_and_the_login_does_it(machine):
    """`nsctl verify` on the booted machine says what bob's next login does; that login then
    does it, through the packaged unit: refused for a bind whose source is missing, let in
    with the entry skipped once it begins with '-'."""
    m = machine
    nsctl = m.installed_path("nsctl")
    m.exec(["sh", "-c", "id bob >/dev/null 2>&1 || useradd --create-home --uid 2002 --user-group --shell /bin/bash bob"])
    conf = m.root_path("/etc/nsmanager/user.d/bob.conf")
    conf.parent.mkdir(parents=True, exist_ok=True)
    try:
        conf.write_text("[View]\nBindReadOnlyPaths=/srv/nothere:%h/x\n")
        p = m.exec([nsctl, "verify", "--user", "bob"], check=False)
        assert p.stdout.splitlines()[:1] == [
            "bob: will be refused: BindReadOnlyPaths=/srv/nothere:%h/x: failed to open source '/srv/nothere': "
            "No such file or directory"], f"{p.returncode}\n{p.stdout}{p.stderr}"
        if m.is_active() == "active":
            m.exec(["systemctl", "reload", UNIT])
        # The daemon refuses his view. The container's su-l has the line `optional`
        # (install_as_admin, as docs/pam.md shows for a stack without the package's profile),
        # which lets the login in outside any view, after the one line that says so.
        p = m.exec(["su", "-l", "bob", "-c", "readlink /proc/self/ns/mnt"], check=False)
        assert p.stdout.strip() == m.mntns(1) and "Your view of this machine could not be set up" in p.stderr, \
            f"bob's login:\n{p.stdout}{p.stderr}"
        assert "failed to open source '/srv/nothere'" in m.journal("-u", UNIT, "--grep", "view of 'bob'", lines=5)

        conf.write_text("[View]\nBindReadOnlyPaths=-/srv/nothere:%h/x\n")
        p = m.exec([nsctl, "verify", "--user", "bob"], check=False)
        assert p.stdout.splitlines()[:1] == [
            "bob: lands with entries skipped: BindReadOnlyPaths=-/srv/nothere:%h/x: the source '/srv/nothere' does "
            "not exist (the entry begins with '-'): the entry is skipped."], f"{p.returncode}\n{p.stdout}{p.stderr}"
        m.exec(["systemctl", "reload", UNIT])
        p = m.exec(["su", "-l", "bob", "-c", "readlink /proc/self/ns/mnt"], check=False)
        assert p.returncode == 0 and p.stdout.strip() != m.mntns(1), f"bob's login:\n{p.stdout}{p.stderr}"
    finally:
        conf.unlink(missing_ok=True)
        if m.is_active() == "active":
            m.exec(["systemctl", "reload", UNIT], check=False)
