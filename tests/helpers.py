# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the test modules share besides the sandbox: the contract's error names, and the
few helpers several modules need.

    from helpers import E_INVALID_PATH, expect_error, wait_until

expect_error(call, *names) -> the DBusException: call() must be refused with one of the
    names, and with a message.
wait_until(predicate, what, wait=10, interval=0.02, diag=None) -> predicate()'s first
    true value; fails the test after `wait` (scaled) seconds.
ns_path(user) -> the object path of the user's namespace; create(sb, *users) ->
    CreateNamespace of each, their paths; processes_of(uid, comm) -> pids of the sandbox's
    own processes (descendants() of this pytest), never the machine's.
open_session(manager, user, session_id) -> the session fd of OpenSession (an int, the
    caller's to close: the session lasts while it is open); the namespace fd is closed.
daemon_syscalls(sb, action, syscalls, timestamps=False) -> strace's log of those syscalls by
    nsmanagerd and its children while action() ran (written to sb.instance/strace.log as it goes).
daemon_match_rules(sb) -> the match rules the daemon's connection holds on the bus.
extra_users(sb, n, first_uid=30000) -> a context manager: n more users (uids from first_uid)
    in the sandbox's /etc/passwd and /etc/group for the block (the bus wants a user record).
PamServices(pam_dir, module=None): install(service, source=None, text=None) puts a PAM
    service of the test's own (pam.d/SOURCE of the project with the built module, or
    `text`) into the sandbox's /etc/pam.d (the pam_dir fixture); restore() puts back what
    was there.

Error names: E_NO_SUCH_USER, E_NO_SUCH_NAMESPACE, E_NO_SUCH_SESSION, E_USER_EXCLUDED,
E_INVALID_PATH, E_INVALID_MODE, E_BUSY, E_TIMED_OUT, E_LIMIT_EXCEEDED, E_MOUNT_CHANGED (the project's,
org.example.NSManager.Error.*; NSM_ERRORS lists them all), and the standard
E_ACCESS_DENIED, E_INTERACTIVE_AUTHORIZATION_REQUIRED, E_INVALID_ARGS and E_FAILED
(org.freedesktop.DBus.Error.*).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import dbus
import pytest

from sandbox import ERROR_PREFIX, MANAGER_PATH, REPO, TEST_USERS, dbus_error_name, timeout

# The contract's errors (the table of src/shared/nsm-error.c; test_sandbox.py checks the two agree).
E_NO_SUCH_USER = ERROR_PREFIX + "NoSuchUser"
E_NO_SUCH_NAMESPACE = ERROR_PREFIX + "NoSuchNamespace"
E_NO_SUCH_SESSION = ERROR_PREFIX + "NoSuchSession"
E_USER_EXCLUDED = ERROR_PREFIX + "UserExcluded"
E_INVALID_PATH = ERROR_PREFIX + "InvalidPath"
E_INVALID_MODE = ERROR_PREFIX + "InvalidMode"
E_BUSY = ERROR_PREFIX + "Busy"
E_TIMED_OUT = ERROR_PREFIX + "TimedOut"
E_LIMIT_EXCEEDED = ERROR_PREFIX + "LimitExceeded"
E_MOUNT_CHANGED = ERROR_PREFIX + "MountChanged"
NSM_ERRORS = (E_NO_SUCH_USER, E_NO_SUCH_NAMESPACE, E_NO_SUCH_SESSION, E_USER_EXCLUDED, E_INVALID_PATH,
              E_INVALID_MODE, E_BUSY, E_TIMED_OUT, E_LIMIT_EXCEEDED, E_MOUNT_CHANGED)

# The standard ones the contract names, and Failed (a view that could not be built).
E_ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"
E_INTERACTIVE_AUTHORIZATION_REQUIRED = "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"
E_INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"
E_FAILED = "org.freedesktop.DBus.Error.Failed"


def ns_path(user: str) -> str:
    """The object path of a test user's namespace: /org/example/NSManager/user/_UID."""
    return f"{MANAGER_PATH}/user/_{TEST_USERS[user].uid}"


def create(sb, *users) -> list[str]:
    """CreateNamespace for each user; their object paths."""
    return [str(sb.manager().CreateNamespace(u)) for u in users]


def open_session(manager, user: str, session_id: str) -> int:
    _, mntns_fd, session_fd = manager.OpenSession(user, session_id)
    os.close(mntns_fd.take())
    return session_fd.take()


def descendants(root: int | None = None) -> set[int]:
    """pids of the processes below root (this pytest by default), machine-wide /proc read once.
    This process is a child subreaper (tests/sandbox.py): whatever the sandbox started,
    orphans included, is below it; what other sandboxes or the machine run is not."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(d))
    found, todo = set(), [root]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def processes_of(uid: int, comm: str) -> list[int]:
    """pids of the live (not zombie) processes named comm of uid that this test's sandbox
    started (descendants()): the machine may run processes of the same uid (other sandboxes,
    a real user), and a test counts only its own."""
    found = []
    for d in descendants():
        try:
            status = Path(f"/proc/{d}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("Name") == comm and fields.get("Uid", "").split()[0] == str(uid) \
                and fields.get("State", "").split()[0] != "Z":
            found.append(d)
    return sorted(found)


def expect_error(call, *names):
    """Run call(); it must fail with one of the D-Bus error names, and with a message a
    person can act on (the contract: every refusal is named and says why). Returns the
    dbus.exceptions.DBusException."""
    with pytest.raises(dbus.exceptions.DBusException) as info:
        call()
    name = dbus_error_name(info.value)
    assert name in names, f"expected {' or '.join(names)}, got {name}: {info.value.get_dbus_message()}"
    assert info.value.get_dbus_message(), f"{name} without a message: a refusal must say why"
    return info.value


def wait_until(predicate, what: str, wait: float = 10, interval: float = 0.02, diag=None):
    """Call predicate() until it returns something true, and return that; fail the test
    after `wait` seconds (stretched by NSM_TIMEOUT_SCALE), saying it waited for `what`,
    with diag() appended if given. predicate() may itself assert."""
    deadline = time.monotonic() + timeout(wait)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout(wait):.0f} s waiting for {what}"
                        + (f"\n{diag()}" if diag else ""), pytrace=False)
        time.sleep(interval)


def daemon_syscalls(sb, action, syscalls: str, strsize: int = 32, timestamps: bool = False) -> str:
    """strace's log of `syscalls` (strace's -e trace= list) made by nsmanagerd and its
    children while action() ran; strsize is strace's -s (how much of each string shows);
    timestamps: each line's second field is the time (-ttt). The log is written to
    sb.instance / "strace.log" as it goes: action() may watch it."""
    log = sb.instance / "strace.log"
    tracer = subprocess.Popen(["strace", "-f", "-e", f"trace={syscalls}", "-s", str(strsize), "-o", str(log)]
                              + (["-ttt"] if timestamps else []) + ["-p", str(sb.daemon.pid)],
                              stderr=subprocess.PIPE, text=True)
    # strace says "Process N attached" on stderr once it is in
    wait_until(lambda: "attached" in (tracer.stderr.readline() or ""), "strace to attach", 10)
    try:
        action()
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout(10))
    return log.read_text()


PAM_SRC = REPO / "pam.d"


class PamServices:
    """Installs service files into the sandbox's /etc/pam.d for one test; restores the
    copies of the machine's files afterwards. `module`: the built pam_nsmanager.so that
    text_of() puts in the project's files (not needed for a service given as text)."""

    def __init__(self, pam_dir: Path, module: Path | None = None):
        self.dir = pam_dir
        self.module_args = f"{module} debug"
        self._saved: dict[str, str | None] = {}

    def text_of(self, source: str, args: str = "") -> str:
        """pam.d/SOURCE with the module of the build, "debug" and `args` (e.g. "timeout=2")."""
        text = (PAM_SRC / source).read_text()
        assert re.search(r"\bpam_nsmanager\.so\b", text), f"pam.d/{source} does not use pam_nsmanager.so"
        return re.sub(r"\bpam_nsmanager\.so\b", f"{self.module_args} {args}".rstrip(), text)

    def install(self, service: str, source: str | None = None, text: str | None = None) -> Path:
        """Put pam.d/SOURCE (module path substituted) or `text` in place as SERVICE."""
        path = self.dir / service
        if service not in self._saved:
            self._saved[service] = path.read_text() if path.exists() else None
        path.write_text(text if text is not None else self.text_of(source or service))
        os.chmod(path, 0o644)
        return path

    def restore(self) -> None:
        for service, text in self._saved.items():
            path = self.dir / service
            if text is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(text)
        self._saved.clear()


# polkit: alice may change her own view (manage-own) and nobody else's (manage); others as the
# shipped actions say.
ALICE_OWN_ONLY = """
polkit.addRule(function(action, subject) {
        if (subject.user != "alice")
                return polkit.Result.NOT_HANDLED;
        if (action.id == "org.example.NSManager.manage-own")
                return polkit.Result.YES;
        if (action.id == "org.example.NSManager.manage")
                return polkit.Result.NO;
});
"""


def daemon_match_rules(sb) -> int:
    """How many match rules the daemon's connection holds on the bus, as dbus-daemon counts
    them against max_match_rules_per_connection (Debug.Stats, open to root)."""
    bus = sb.bus()
    owner = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                              "GetNameOwner", "s", ("org.example.NSManager",))
    stats = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Debug.Stats",
                              "GetConnectionStats", "s", (owner,))
    return int(stats["MatchRules"])


@contextlib.contextmanager
def extra_users(sb, n: int, first_uid: int = 30000):
    """n more users (nsmX, uid and gid first_uid + X) in the sandbox's /etc/passwd and
    /etc/group for the block: dbus-daemon refuses a connection whose uid has no user record.
    Yields their uids."""
    files = {name: sb.base / "overlays" / "etc" / name for name in ("passwd", "group")}
    before = {name: path.read_text() for name, path in files.items()}
    uids = [first_uid + i for i in range(n)]
    try:
        # Written in place: /etc/passwd is a bind mount of this very file.
        with open(files["passwd"], "a") as f:
            f.writelines(f"nsm{u}:x:{u}:{u}:nsmanager test:/:/usr/sbin/nologin\n" for u in uids)
        with open(files["group"], "a") as f:
            f.writelines(f"nsm{u}:x:{u}:\n" for u in uids)
        yield uids
    finally:
        for name, path in files.items():
            with open(path, "w") as f:
                f.write(before[name])
