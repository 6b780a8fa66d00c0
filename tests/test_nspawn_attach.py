# SPDX-License-Identifier: LGPL-2.1-or-later
"""`nsctl attach` on a Debian 12 booted with systemd, the package installed from the .deb:
systemd starts the attached command as a transient service in the caller's
user-UID.slice through the PAM service nsmanager-attach, so it is a process of the user
like a login's; and nsmanagerd.service, which starts no user's program itself, is
hardened.

The container is a fresh copy of tools/nspawn-image's Debian 12 booted with
tests/machine.py (booted()), the package built by test_deb.py's `deb` fixture. Into it, as
an administrator: `apt-get install ./nsmanager_*.deb`, the users alice (2001) and bob
(2002), `pam-auth-update --enable nsmanager`, and a limits.d file that gives alice a
distinctive fd limit. The module's tests share that container; each leaves it as it found
it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from helpers import wait_until
from machine import CONTAINER_ENV, UNIT, Machine, booted, ns_id_of
from sandbox import TEST_USERS, timeout
from test_deb import deb  # noqa: F401  (the package, built once for this module)

ALICE, BOB = TEST_USERS["alice"], TEST_USERS["bob"]
PAM_SERVICE = "nsmanager-attach"
# alice's fd limit from limits.d, neither the daemon's (LimitNOFILE=524288) nor systemd's
# default for services (1024:524288), nor anything a shell starts with.
ALICE_NOFILE = ("1717", "1818")
# At most this exposure (systemd-analyze security, 0-100 as --threshold= takes it: 4.0).
EXPOSURE_MAX = 40


@pytest.fixture(scope="module")
def machine(deb, tmp_path_factory):
    """The container with the package installed and configured (conftest.py attaches its
    console and journal to a failed test's report)."""
    package = "/root/" + deb.path.name      # (not /tmp: nspawn mounts a tmpfs there)

    def copy_package(m: Machine) -> None:
        m.root_path(package).write_bytes(deb.path.read_bytes())

    with booted(tmp_path_factory.mktemp("nspawn-attach"), prepare=copy_package) as m:
        m.exec(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "--no-install-recommends",
                "install", package], wait=300, what=f"apt-get install {package}")
        for u in (ALICE, BOB):
            m.exec(["useradd", "--create-home", "--uid", str(u.uid), "--user-group", "--shell", "/bin/bash",
                    u.name], what=f"useradd {u.name}")
        m.exec(["sh", "-c", f"printf 'alice soft nofile {ALICE_NOFILE[0]}\\nalice hard nofile {ALICE_NOFILE[1]}\\n'"
                            " > /etc/security/limits.d/90-nsmtest-alice.conf"])
        m.exec(["env", "DEBIAN_FRONTEND=noninteractive", "pam-auth-update", "--enable", "nsmanager"],
               what="pam-auth-update --enable nsmanager")
        yield m


def poll(predicate, wait: float, what: str, interval: float = 0.1, diag=None):
    return wait_until(predicate, what, wait=wait, interval=interval, diag=diag)


def su(m: Machine, user, command: str, **kw) -> subprocess.CompletedProcess:
    """A login of user (su -l: logind session, pam_nsmanager) running command."""
    kw.setdefault("what", f"su -l {user.name} -c {command!r}")
    return m.exec(["su", "-l", user.name, "-c", command], **kw)


def ns_link(m: Machine, user) -> str:
    return su(m, user, "readlink /proc/self/ns/mnt").stdout.strip()


def attach_units(m: Machine) -> list[str]:
    out = m.exec(["systemctl", "list-units", "--all", "--plain", "--no-legend", "nsmanager-attach-*"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def pids_controller(m: Machine) -> bool:
    """Whether the container's systemd can enforce TasksMax=: the pids controller is on
    the unified hierarchy (cgroup v2) or writable in its own v1 hierarchy."""
    unified = m.exec(["sh", "-c", "cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null || "
                                  "cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null"], check=False).stdout
    if "pids" in unified.split():
        return True
    return m.exec(["sh", "-c", "test -w /sys/fs/cgroup/pids/user.slice"], check=False).returncode == 0


# ---------------------------------------------------------------------------------------

PROBE = ("readlink /proc/self/ns/mnt; cat /proc/self/loginuid; echo; grep '^0::' /proc/self/cgroup; "
         "ulimit -Sn; ulimit -Hn; id -u; id -g; id -G; pwd")


def test_attach_is_a_login_of_the_user(machine):
    """su -l alice -c 'nsctl attach alice -- …': the command runs in alice's namespace, in
    her user-2001.slice (a transient nsmanager-attach-2001-….service), with loginuid 2001
    and the fd limit limits.d gives her logins — not the daemon's, nor the caller's own
    (lowered before the call). Its groups are hers from NSS. libpam found the PAM service
    in /usr/lib/pam.d: /etc/pam.d has none."""
    m = machine
    assert m.exec(["test", "-e", f"/etc/pam.d/{PAM_SERVICE}"], check=False).returncode != 0, \
        f"/etc/pam.d/{PAM_SERVICE} exists: the test would not show that libpam reads /usr/lib/pam.d"
    assert m.exec(["test", "-f", f"/usr/lib/pam.d/{PAM_SERVICE}"], check=False).returncode == 0
    link = ns_link(m, ALICE)
    assert link != m.mntns(1), "alice's login is not in a namespace of her own"

    p = su(m, ALICE, f"ulimit -Sn 200; nsctl attach alice -- sh -c {PROBE!r}")
    lines = p.stdout.splitlines()
    print(p.stdout)
    ns, loginuid, cgroup, soft, hard, uid, gid, groups, cwd = lines[:9]
    assert ns == link, f"the attached command is in {ns}, alice's namespace is {link}"
    assert loginuid == str(ALICE.uid), f"loginuid {loginuid}"
    assert re.fullmatch(rf"0::/user\.slice/user-{ALICE.uid}\.slice/nsmanager-attach-{ALICE.uid}-[0-9a-f]+\.service",
                        cgroup), cgroup
    assert (soft, hard) == ALICE_NOFILE, f"ulimit -n {soft}:{hard}, limits.d says {ALICE_NOFILE}"
    assert (uid, gid, groups) == (str(ALICE.uid), str(ALICE.uid), str(ALICE.uid)), (uid, gid, groups)
    assert cwd == f"/home/{ALICE.name}", f"the command started in {cwd}, su -l's directory is alice's home"
    daemon = m.proc_status(int(m.systemctl_value("MainPID")))
    assert daemon["NoNewPrivs"] == "1"
    # Collected once it ended: nothing stays loaded.
    poll(lambda: not attach_units(m), 10, "the attach unit to be collected", diag=m.diag)


def test_attach_environment_exit_status_and_errors(machine):
    """What the fork path did, through systemd: the caller's environment as given (quotes,
    $, backslashes, newlines; no expansion of $VAR in the argv), stdin and the exit status
    or signal; a command that is not there ends with 127 and says so, as in a shell."""
    m = machine
    value = "a 'b' \"c\" $HOME \\d `e`\nline2"
    script = m.root_path("/usr/local/bin/nsmtest-environment")
    script.write_text("#!/bin/sh\n"
                      "NSM_VALUE=$(printf 'a %sb%s \"c\" $HOME \\\\d `e`\\nline2' \"'\" \"'\")\n"
                      "export NSM_VALUE\n"
                      "nsctl attach alice -- printenv NSM_VALUE\n"
                      "nsctl attach alice -- echo '$HOME'\n")
    script.chmod(0o755)
    p = su(m, ALICE, "nsmtest-environment")
    assert p.stdout == value + "\n$HOME\n", repr(p.stdout)

    p = su(m, ALICE, "echo hello | nsctl attach alice -- cat")
    assert p.stdout == "hello\n"
    for command, status in (("exit 7", 7), ("kill -TERM $$", 143), ("kill -KILL $$", 137)):
        p = su(m, ALICE, f"nsctl attach alice -- sh -c {command!r}", check=False)
        assert p.returncode == status, f"{command}: exit status {p.returncode}, {p.stderr}"

    # As a shell says it: on the command's stderr, exit status 127.
    p = su(m, ALICE, "nsctl attach alice -- no-such-command-here", check=False)
    assert p.returncode == 127 and "no-such-command-here" in p.stderr, (p.returncode, p.stderr)
    poll(lambda: not attach_units(m), 10, "the attach units to be collected", diag=m.diag)


def test_root_attach_is_root_in_the_view(machine):
    """Root's `nsctl attach alice` enters alice's view itself (setns, like nsenter): as
    root, in her namespace, not in her slice."""
    m = machine
    link = ns_link(m, ALICE)
    p = m.exec(["nsctl", "attach", ALICE.name, "--", "sh", "-c", "id -u; readlink /proc/self/ns/mnt; "
                "grep '^0::' /proc/self/cgroup"])
    uid, ns, cgroup = p.stdout.split()
    assert (uid, ns) == ("0", link)
    assert f"user-{ALICE.uid}.slice" not in cgroup, cgroup


POLKIT_BOB_ATTACHES_ALICE = """
polkit.addRule(function(action, subject) {
    if (action.id == "org.example.NSManager.attach" && subject.user == "bob" && action.lookup("user") == "alice")
        return polkit.Result.YES;
});
"""


def test_attach_to_another_users_view(machine):
    """With a polkit rule that lets bob attach to alice's namespace: bob's command runs as
    bob, in alice's namespace (pam_nsmanager's "attach" takes the namespace from the unit),
    in bob's slice."""
    m = machine
    link = ns_link(m, ALICE)
    rule = Path(m.root_path("/etc/polkit-1/rules.d/50-nsmtest.rules"))
    rule.write_text(POLKIT_BOB_ATTACHES_ALICE)
    try:
        def allowed():
            p = su(m, BOB, "nsctl attach alice -- sh -c 'id -u; readlink /proc/self/ns/mnt; "
                           "grep ^0:: /proc/self/cgroup'", check=False)
            return p if p.returncode == 0 else None
        p = poll(allowed, 20, "polkitd to load the rule (it watches rules.d)", interval=0.5, diag=m.diag)
        uid, ns, cgroup = p.stdout.split()
        assert uid == str(BOB.uid)
        assert ns == link, f"bob's command is in {ns}, alice's namespace is {link}"
        assert f"/user-{BOB.uid}.slice/" in cgroup, cgroup
    finally:
        rule.unlink()


class Pty:
    """A terminal for a command run in the container: our pty's slave is its stdin, stdout
    and stderr, and its controlling terminal."""

    def __init__(self, m: Machine, argv, rows=40, cols=100):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

        def controlling_tty():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.proc = subprocess.Popen(["nsenter", f"--target={m.leader}", "--all", "--"] + list(argv),
                                     env=CONTAINER_ENV, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True, preexec_fn=controlling_tty)
        os.close(slave)
        self.out = b""

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def expect(self, pattern: str, wait: float = 20) -> re.Match:
        deadline = time.monotonic() + timeout(wait)
        while True:
            found = re.search(pattern.encode(), self.out, re.M)
            if found:
                self.out = self.out[found.end():]
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.master], [], [], left)[0]:
                pytest.fail(f"no {pattern!r} on the terminal; it shows {self.out[-800:]!r}", pytrace=False)
            try:
                self.out += os.read(self.master, 4096).replace(b"\r\n", b"\n")
            except OSError:
                pytest.fail(f"the terminal hung up before {pattern!r}; it shows {self.out[-800:]!r}", pytrace=False)

    def close(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout(10))
        os.close(self.master)
        return self.proc.returncode


# Whether a process of alice's named sleep runs in the container.
ALICE_SLEEPS = ('for s in /proc/[0-9]*/status; do grep -q "^Name:[[:space:]]*sleep$" "$s" 2>/dev/null && '
                f'grep -q "^Uid:[[:space:]]*{ALICE.uid}[[:space:]]" "$s" 2>/dev/null && exit 0; done; exit 1')


def test_attach_interactive(machine):
    """On a terminal: nsctl gives the command a pty of its own, which systemd makes the
    controlling terminal of the service's session; its size is the terminal's, ^C
    interrupts the command in the view (not nsctl), and exit hands back the shell's status."""
    m = machine
    link = ns_link(m, ALICE)
    # A login shell of alice on the terminal (su -l without -c keeps the controlling
    # terminal; with -c it starts the command in a session of its own), where she types.
    t = Pty(m, ["su", "-l", ALICE.name])
    try:
        t.send(b"PS1='OUTER$ '\n")
        t.expect(r"^OUTER\$ $")
        t.send(b"nsctl attach alice; echo RC=$?\n")
        time.sleep(1)
        t.send(b"PS1='INNER$ '\n")
        t.expect(r"^INNER\$ $")
        t.send(b"tty; stty size; readlink /proc/self/ns/mnt; cut -d' ' -f7 /proc/self/stat\n")
        found = t.expect(r"^(/dev/pts/\d+)\n(\d+ \d+)\n(mnt:\[\d+\])\n(\d+)\nINNER\$ $")
        assert found.group(2) == b"40 100", found.group(0)
        assert found.group(3).decode() == link
        assert found.group(4) != b"0", "the pty is not the controlling terminal (tty_nr 0)"
        t.send(b"sleep 100\n")
        # ^C for the running sleep: sent earlier it would reach the shell, with the same status
        poll(lambda: m.exec(["sh", "-c", ALICE_SLEEPS], check=False).returncode == 0, 10, "alice's sleep to run")
        t.send(b"\x03")
        t.expect(r"^INNER\$ $")
        t.send(b"echo status=$?\n")
        t.expect(r"^status=130\nINNER\$ $")
        t.send(b"exit 3\n")
        t.expect(r"^RC=3\nOUTER\$ $")
        t.send(b"exit\n")
    finally:
        t.close()


def _uid_processes(uid: int) -> int:
    n = 0
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and Path(f"/proc/{d}/status").read_text().split("\nUid:\t", 1)[1].split()[0] == str(uid):
                n += 1
        except (OSError, IndexError):
            pass
    return n


def _cgroup_procs(m: Machine, cgroup: str) -> list[str]:
    return m.exec(["sh", "-c", f"cat /sys/fs/cgroup/unified{cgroup}/cgroup.procs 2>/dev/null || "
                               f"cat /sys/fs/cgroup{cgroup}/cgroup.procs"], check=False).stdout.split()


def test_runaway_does_not_starve_the_daemon(machine):
    """A runaway inside an attach: xargs starts `sleep`s until alice may not fork any more,
    then waits. It is bounded by RLIMIT_NPROC (these machines share one pid space: the
    limit counts all of uid 2001's processes here, so it is set to what there is plus 150,
    and xargs waits instead of retrying). Its processes are all in alice's slice, none in
    the daemon's cgroup, and meanwhile the daemon serves bob's login. Where the pids
    controller works, user-2001.slice's TasksMax= caps it below the NPROC bound."""
    m = machine
    cap = 60
    pids = pids_controller(m)
    if pids:
        m.exec(["systemctl", "set-property", "--runtime", f"user-{ALICE.uid}.slice", f"TasksMax={cap}"])
    else:
        print("the pids controller is not available in this container (cgroup v1 without a delegated pids "
              "hierarchy): the slice's TasksMax= cannot be enforced here, its assertion is skipped")
    nproc = _uid_processes(ALICE.uid) + 150
    bomb = f"ulimit -u {nproc}; yes 300 | head -n 1000 | xargs -P 1000 -n 1 sleep 2>/dev/null"
    runaway = m.popen(["su", "-l", ALICE.name, "-c", f"nsctl attach alice -- bash -c {bomb!r}"])
    try:
        unit = poll(lambda: (attach_units(m) or [None])[0], 20, "the runaway's unit", diag=m.diag)
        cgroup = m.systemctl_value("ControlGroup", unit)
        assert f"/user-{ALICE.uid}.slice/" in cgroup, cgroup
        counts = []

        def settled():
            counts.append(len(_cgroup_procs(m, cgroup)))
            return len(counts) > 5 and counts[-1] == counts[-5] and counts[-1] > 10
        poll(settled, 60, "the runaway to reach its bound", interval=0.3, diag=m.diag)
        in_unit = counts[-1]
        in_daemon = _cgroup_procs(m, m.systemctl_value("ControlGroup"))
        daemon_uids = m.exec(["sh", "-c", " ".join(f"sed -n 's/^Uid:[[:space:]]*\\([0-9]*\\).*/\\1/p' /proc/{p}/status;"
                                                   for p in in_daemon)], check=False).stdout.split()
        print(f"runaway: {in_unit} processes in {unit} (RLIMIT_NPROC {nproc} for all of uid {ALICE.uid}); "
              f"{len(in_daemon)} in {UNIT}'s cgroup")
        if pids:
            tasks = int(m.systemctl_value("TasksCurrent", f"user-{ALICE.uid}.slice"))
            assert tasks <= cap, f"user-{ALICE.uid}.slice runs {tasks} tasks, TasksMax={cap}"
        else:
            assert in_unit >= 100, f"the runaway ran only {in_unit} processes"
        assert in_daemon and set(daemon_uids) == {"0"}, f"{UNIT}'s cgroup holds {in_daemon}, uids {daemon_uids}"

        # Meanwhile another user's login is served.
        link = ns_link(m, BOB)
        assert link != m.mntns(1), "bob's login fell back to the machine's namespace"
        assert ns_id_of(link) == m.busctl("get-property", "org.example.NSManager",
                                        f"/org/example/NSManager/user/_{BOB.uid}",
                                        "org.example.NSManager.Namespace", "MountNamespaceId")
    finally:
        for u in attach_units(m):
            m.exec(["systemctl", "stop", u], check=False)
        runaway.kill()
        runaway.wait(timeout(10))
        if pids:
            m.exec(["systemctl", "set-property", "--runtime", f"user-{ALICE.uid}.slice", "TasksMax=33%"],
                   check=False)
    poll(lambda: not attach_units(m), 20, "the runaway's unit to go", diag=m.diag)


def test_tasks_max_counts_descendants(machine):
    """AttachTasksMax= counts every task of the user's attached commands, what they forked
    included: with AttachTasksMax=20 and one command that started 25 sleeps, alice's next
    Attach is refused (LimitExceeded); once it ended, the next one runs. The setting takes
    effect with `systemctl reload`."""
    m = machine
    dropin = m.root_path("/etc/nsmanager/nsmanagerd.conf.d/50-nsmtest-tasks.conf")
    dropin.write_text("[Manager]\nAttachTasksMax=20\n")
    m.exec(["systemctl", "reload", UNIT])
    busy = m.popen(["su", "-l", ALICE.name, "-c",
                    "nsctl attach alice -- sh -c 'for i in $(seq 25); do sleep 100 & done; wait'"])
    try:
        unit = poll(lambda: (attach_units(m) or [None])[0], 20, "the busy unit", diag=m.diag)
        cgroup = m.systemctl_value("ControlGroup", unit)
        poll(lambda: len(_cgroup_procs(m, cgroup)) >= 20, 20, "25 sleeps", diag=m.diag)
        p = su(m, ALICE, "nsctl attach alice -- true", check=False)
        assert p.returncode == 1 and "AttachTasksMax=20" in p.stderr, (p.returncode, p.stderr)
        m.exec(["systemctl", "stop", unit])
        p = su(m, ALICE, "nsctl attach alice -- true", check=False)
        assert p.returncode == 0, p.stderr
    finally:
        for u in attach_units(m):
            m.exec(["systemctl", "stop", u], check=False)
        busy.kill()
        busy.wait(timeout(10))
        dropin.unlink()
        m.exec(["systemctl", "reload", UNIT])


def _exposure(m: Machine, unit: str) -> str:
    out = m.exec(["systemd-analyze", "security", "--no-pager", unit]).stdout
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+ \S+)", out)
    assert found, out[-500:]
    return found.group(1)


def test_unit_hardened(machine):
    """nsmanagerd.service rates at most 4.0 in `systemd-analyze security` (checked with
    --threshold=), runs with NoNewPrivileges and in the machine's own mount namespace, and
    did its whole job above under that: views, sessions, attach. Prints its exposure next
    to systemd-logind's."""
    m = machine
    # Its job, under the unit, whatever ran before: a view built (D-Bus activation if need be)
    # and read, with a bind and a propagation change in it.
    m.busctl("call", "org.example.NSManager", "/org/example/NSManager", "org.example.NSManager.Manager",
             "CreateNamespace", "s", "alice")
    m.exec(["nsctl", "bind", "alice", "/usr/share/doc", "/srv/nsm-hardened-doc", "--read-only", "--mkdir"])
    m.exec(["nsctl", "propagation", "alice", "/srv/nsm-hardened-doc", "private"])
    m.exec(["nsctl", "mounts", "alice"])
    ours, logind = _exposure(m, UNIT), _exposure(m, "systemd-logind.service")
    print(f"systemd-analyze security: {UNIT} {ours}, systemd-logind.service {logind}")
    p = m.exec(["systemd-analyze", "security", "--no-pager", f"--threshold={EXPOSURE_MAX}", UNIT], check=False)
    assert p.returncode == 0, f"{UNIT} is above {EXPOSURE_MAX / 10:.1f}: {ours}\n{p.stdout[-3000:]}"
    pid = int(m.systemctl_value("MainPID"))
    assert m.mntns(pid) == m.mntns(1), "nsmanagerd does not run in the machine's mount namespace"
    errors = m.journal("-u", UNIT, "-p", "err", lines=50)
    assert "-- No entries --" in errors, f"errors of {UNIT}:\n{errors}"


# Properties of an attach unit that a line of a unit file could set or change.
UNIT_PROPERTIES = ("Description", "ExecStart", "ExecStartPre", "ExecStartPost", "ExecStop", "ExecStopPost",
                   "ExecReload", "WorkingDirectory", "Environment", "EnvironmentFiles", "User", "Group", "PAMName",
                   "Slice", "Type", "FailureAction", "SuccessAction", "StandardInput", "StandardOutput",
                   "NoNewPrivileges", "LoadState", "Names")


def _unit_settings(m: Machine, unit: str) -> dict:
    out = m.exec(["systemctl", "show", unit] + [f"--property={p}" for p in UNIT_PROPERTIES]).stdout
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    # What a command line shows of the process it ran (pid, times) is state, not settings.
    for k in ("ExecStart", "ExecStopPost"):
        props[k] = re.sub(r" ; (start_time|stop_time|pid|code|status)=[^;}]*", "", props.get(k, ""))
    return props


def test_caller_text_never_becomes_unit_lines(machine):
    """The attack: alice attaches from a directory whose name holds a newline and unit lines
    (`x\\nEnvironmentFile=\\nExecStopPost=+/usr/bin/touch /pwned`), with a command whose name
    does the same for [Unit]; root runs `systemctl daemon-reload` (apt does, for any package
    with units); then her command exits. systemd 252 escapes only '%' when it writes a
    transient unit: a daemon that passed her text as WorkingDirectory= or Description= had
    systemd run her ExecStopPost= as root. Now the unit holds no text of hers: its settings are
    the same after the reload, it is still loaded and running (systemd reads back all it
    wrote: no ExecStartEx=, which 252 writes and then calls an unknown key), her command still
    ran in her directory, nothing ran as root, and her status still comes back."""
    m = machine
    cwd = "x\nEnvironmentFile=\nExecStopPost=+/usr/bin/touch /nsmtest-pwned"
    script = m.root_path("/usr/local/bin/nsmtest-unit-lines")
    # Directories as alice can make them; the command's name too holds a newline and a [Unit]
    # line (a link to sleep, found in her $PATH).
    script.write_text(r"""#!/bin/sh
set -e
cd
d=$(printf 'x\nEnvironmentFile=\nExecStopPost=+/usr/bin/touch /nsmtest-pwned')
mkdir -p "$d/bin"
cd "$d"
n=$(printf 'sleep\nFailureAction=reboot-force')
ln -sf /bin/sleep "bin/$n"
PATH="$PWD/bin:$PATH" exec nsctl attach alice -- "$n" 600
""")
    script.chmod(0o755)
    client = m.popen(["su", "-l", ALICE.name, "-c", "nsmtest-unit-lines; echo \"RC=$?\""])
    try:
        unit = poll(lambda: (attach_units(m) or [None])[0], 30, "alice's attach unit", diag=m.diag)
        pid = int(m.systemctl_value("MainPID", unit))
        assert pid > 0
        assert m.exec(["readlink", f"/proc/{pid}/cwd"]).stdout.rstrip("\n") == f"/home/{ALICE.name}/{cwd}", \
            "the command did not start in alice's directory"
        transient = m.exec(["cat", f"/run/systemd/transient/{unit}"]).stdout
        print(transient)
        assert "nsmtest-pwned" not in transient and "FailureAction" not in transient and "\nx\n" not in transient, \
            transient
        before = _unit_settings(m, unit)

        m.exec(["systemctl", "daemon-reload"])
        after = _unit_settings(m, unit)
        assert after == before, f"daemon-reload changed {unit}: " + str(
            {k: (before.get(k), after.get(k)) for k in set(before) | set(after) if before.get(k) != after.get(k)})
        assert m.systemctl_value("ActiveState", unit) == "active"
        assert m.systemctl_value("MainPID", unit) == str(pid)

        m.exec(["su", "-s", "/bin/sh", ALICE.name, "-c", f"kill {pid}"])
        out, err = client.communicate(timeout=timeout(30))
        assert b"RC=143" in out, f"alice's nsctl said {out!r} {err!r}"
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        for u in attach_units(m):
            m.exec(["systemctl", "stop", u], check=False)
        m.exec(["sh", "-c", "rm -rf /home/alice/x*"], check=False)
    assert m.exec(["test", "-e", "/nsmtest-pwned"], check=False).returncode != 0, "alice's ExecStopPost ran as root"
    journal = m.journal("-u", unit, lines=100)
    assert "Unknown key" not in journal and "nsmtest-pwned" not in journal, journal
    poll(lambda: not attach_units(m), 10, "the unit to be collected", diag=m.diag)


LONG_RUNNING = 40


def _daemon_match_rules(m: Machine) -> int:
    """The daemon's match rules on the container's system bus (dbus-daemon's Debug.Stats)."""
    (owner,) = m.busctl("call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                        "GetNameOwner", "s", "org.example.NSManager")
    (stats,) = m.busctl("call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Debug.Stats",
                        "GetConnectionStats", "s", owner)
    return int(stats["MatchRules"]["data"])


def test_long_running_attaches_hold_no_match_rule_each(machine):
    """With the real systemd: 40 long-running commands of alice's hold the daemon's two
    matches for all attached commands (JobRemoved, and PropertiesChanged of systemd's
    services), not two each (dbus-daemon allows a connection 512: ~256 attaches of one user
    made the daemon leave the bus, tests/test_attach.py). Their ends still reach the daemon
    through them: hung up, each unit is stopped and collected."""
    m = machine
    m.exec(["systemctl", "start", UNIT])
    before = _daemon_match_rules(m)
    # One after the other (at once, all but 8 would be refused: SystemdCallsPerUID=8); each
    # nsctl's pid (the container's) printed, to be killed by it there.
    # A start refused for a budget (its nsctl ends at once: the status reads of the commands
    # before it count against SystemdCallsPerUID= too) is tried again.
    count = "$(systemctl list-units --plain --no-legend 'nsmanager-attach-*' | wc -l)"
    starts = (f"for i in $(seq {LONG_RUNNING}); do while :; do "
              "nsctl attach alice -- sleep 1000 </dev/null >/dev/null 2>&1 & pid=$!; "
              f"until [ {count} -ge $i ] || ! kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
              f"[ {count} -ge $i ] && break; sleep 0.2; done; echo $pid; done; wait")
    runner = m.popen(["su", "-l", ALICE.name, "-c", starts])
    clients = [int(runner.stdout.readline()) for _ in range(LONG_RUNNING)]
    try:
        poll(lambda: len(attach_units(m)) >= LONG_RUNNING, 60, f"{LONG_RUNNING} attach units", diag=m.diag)
        rules = _daemon_match_rules(m)
        print(f"match rules: {before} before, {rules} with {LONG_RUNNING} attached commands")
        assert rules <= before + 2, f"{rules} match rules with {LONG_RUNNING} attached commands, {before} before"
    finally:
        # Each nsctl hangs up: SIGHUP to its command.
        m.exec(["sh", "-c", "kill -KILL " + " ".join(str(pid) for pid in clients)], check=False)
        runner.wait(timeout(30))
    poll(lambda: not attach_units(m), 60, "every attach unit to end and be collected", diag=m.diag)
    assert _daemon_match_rules(m) <= before + 2


MANY_ATTACHES = 600
MANY_HELD = 240


def test_six_hundred_attaches_over_time(machine):
    """One user starts 600 long-running attached commands over time, in waves of 8
    (SystemdCallsPerUID=8 calls in flight; RateLimitBurst= raised to 2000 for it), with the
    stock dbus-daemon limits: the daemon stays on the bus with the same number of match rules
    (GetConnectionStats) after every wave, and root's and bob's attaches answer throughout.
    At most 240 are held at once, the oldest wave ended as a new one starts: each nsctl keeps
    its bus connection, and dbus-daemon allows one uid 256 (max_connections_per_user)."""
    import signal
    m = machine
    dropin = m.root_path("/etc/nsmanager/nsmanagerd.conf.d/50-nsmtest-many.conf")
    dropin.parent.mkdir(parents=True, exist_ok=True)
    dropin.write_text("[Manager]\nRateLimitBurst=2000\n")
    m.exec(["systemctl", "restart", UNIT])
    started = time.monotonic()
    before = _daemon_match_rules(m)
    # Each wave waits for the one before to run (its calls answered, SystemdCallsPerUID=), and
    # for the oldest wave's commands to be gone once it was ended; 60 s at most for each.
    running = "systemctl list-units --state=running --plain --no-legend 'nsmanager-attach-*' | wc -l"
    waves = f"""
        upto() {{ t=0; until [ $({running}) "$1" "$2" ]; do
            t=$((t + 1)); [ $t -gt 600 ] && {{ echo "stuck at $n: $({running}) running"; exit 1; }}; sleep 0.1; done; }}
        n=0; held=''
        while [ $n -lt {MANY_ATTACHES} ]; do
            if [ $(echo $held | wc -w) -ge {MANY_HELD} ]; then
                set -- $held; kill -KILL $1 $2 $3 $4 $5 $6 $7 $8; shift 8; held="$*"
                upto -le {MANY_HELD - 8}
            fi
            wave=''
            for j in 1 2 3 4 5 6 7 8; do
                nsctl attach alice -- sleep 1000 </dev/null >/dev/null 2>&1 & wave="$wave $!"
            done
            held="$held $wave"; n=$((n + 8)); echo pids $wave
            w=$n; [ $w -gt {MANY_HELD} ] && w={MANY_HELD}
            # A start may be refused (SystemdCallsPerUID=8) while the status reads of the wave
            # just ended are in flight: a wave's worth of refused starts is allowed for.
            upto -ge $((w - 8))
            echo $n
        done
        echo done"""
    runner = m.popen(["su", "-l", ALICE.name, "-c", waves])
    pids = []               # each nsctl's pid (the container's: it shares the pid space)
    done = False
    checks = 0
    first = None
    try:
        for line in runner.stdout:
            line = line.decode().strip()
            if line == "done":
                done = True
                break
            if line.startswith("pids"):
                pids += line.split()[1:]
                continue
            assert not line.startswith("stuck"), line
            n = int(line)
            rules = _daemon_match_rules(m)
            if first is None:
                first = rules   # the two matches for all attaches, taken at the first
                assert first <= before + 2, f"{first} match rules with 8 attaches, {before} before"
            assert rules == first, f"{rules} match rules after {n} attaches, {first} after 8"
            if n % 80 == 0:
                m.exec(["nsctl", "attach", ALICE.name, "--", "true"], what=f"root's attach after {n}", wait=25)
                su(m, BOB, "nsctl attach bob -- true", wait=25, what=f"bob's attach after {n}")
                checks += 1
        assert done, f"the waves did not finish: {runner.stderr.read().decode()[-2000:]}"
        print(f"{MANY_ATTACHES} attaches in {time.monotonic() - started:.0f} s, {checks} rounds of root's and bob's "
              f"attaches; match rules {before} before, {first} throughout")
        assert m.is_active() == "active"
    finally:
        try:
            os.killpg(runner.pid, signal.SIGKILL)       # the waves' shell, if it is still going
        except ProcessLookupError:
            pass
        runner.wait(timeout(10))
        # Each nsctl hangs up: SIGHUP to its command. (Those of the waves ended are gone.)
        if pids:
            m.exec(["sh", "-c", "kill -KILL " + " ".join(pids[-MANY_HELD:]) + " 2>/dev/null"], check=False)
        dropin.unlink(missing_ok=True)
    poll(lambda: not attach_units(m), 120, "every attach unit to end and be collected", diag=m.diag)
    m.exec(["systemctl", "restart", UNIT])
