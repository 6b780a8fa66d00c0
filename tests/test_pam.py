# SPDX-License-Identifier: LGPL-2.1-or-later
"""pam_nsmanager.so with the real PAM stack: runuser -l, su -, pamtester, a threaded PAM
caller and sshd, inside the sandbox (tests/sandbox.py).

The project's service files (pam.d/) are installed over the sandbox's copy of /etc/pam.d
(sandbox.overlay_dir: the machine's /etc/pam.d is never written), with "pam_nsmanager.so"
replaced by the module in the build directory plus "debug". The module reads the user range
from what the instance's daemon publishes (/run/nsmanager/login-filter, on the sandbox's /run).

A login is kept open by running a small command loop as its shell command (Login below):
the test sends command lines and reads their output, from inside the session.
"""

import contextlib
import os
import re
import select
import signal
import stat
import struct
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

import sandbox as sb_module
from helpers import E_NO_SUCH_NAMESPACE, PamServices, ns_path, open_session, wait_until
from sandbox import REPO, mntns_id, timeout
from sshd import Sshd

MARGIN = 5          # seconds on top of StopDelaySec for the daemon to remove a namespace
STOP_DELAY = 1      # the sandbox's StopDelaySec=1s

# Which project file goes over which service of the sandbox's /etc/pam.d.
SERVICES = {
    "runuser-l": "nsm-runuser-l",
    "su-l": "nsm-su-l",
    "sshd": "nsm-sshd",
    "nsm-pamtester-optional": "nsm-pamtester-optional",
    "nsm-pamtester-required": "nsm-pamtester-required",
}


def pam_threaded_binary() -> Path:
    """From the same build as the module (not a sanitizer build: see sandbox.pam_build_dir)."""
    return sb_module.pam_build_dir() / "src/pam/pam-threaded"


def outer_logind_session() -> str | None:
    """The logind session the test process is in (its cgroup is session-N.scope), if any:
    the logins the tests start are in it too, and the module takes that id (sd_pid_get_session)."""
    m = re.search(r"/session-([^/]+)\.scope$", Path("/proc/self/cgroup").read_text(), re.M)
    return m.group(1) if m else None


def session_id(service: str, pid: int) -> str:
    """The id the module gives a login of `service` whose login process is `pid` (no tty)."""
    return outer_logind_session() or f"pam-{service}-notty-{pid}"


def parse_ns(text: str) -> int:
    m = re.search(r"mnt:\[(\d+)\]", text)
    assert m, f"no mnt:[N] in {text!r}"
    return int(m.group(1))


# ---------------------------------------------------------------------------
# Fixtures

@pytest.fixture
def pam(pam_dir, daemon, pam_module):
    """The project's PAM services installed for the running daemon instance."""
    services = PamServices(pam_dir, pam_module)
    for service, source in SERVICES.items():
        services.install(service, source)
    yield services
    services.restore()


@pytest.fixture
def logins():
    """Starts Login objects; whatever a test leaves open is ended (killed) afterwards, so
    the daemon fixture finds no stray processes."""
    started = []

    def start(argv, **kw):
        login = Login(argv, **kw)
        started.append(login)
        login.wait_ready()
        return login
    yield start
    for login in started:
        login.kill()


# ---------------------------------------------------------------------------
# A login kept open

class LineReader:
    """Lines from a pipe, with a deadline (a hung PAM call must fail the test, not hang it)."""

    def __init__(self, pipe, context=lambda: ""):
        self.fd = pipe.fileno()
        self.context = context
        self._buf = b""

    def read_line(self, seconds: float) -> str | None:
        deadline = time.monotonic() + timeout(seconds)
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no output within {timeout(seconds)}s; so far {self._buf!r}; "
                                     f"stderr:\n{self.context()}")
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                if self._buf:
                    line, self._buf = self._buf, b""
                    return line.decode(errors="replace")
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode(errors="replace")


class Login:
    """argv + [LOOP]: e.g. ["runuser", "-l", "alice", "-c"]. The shell prints its mount
    namespace, then runs each line sent with run() and answers with a marker line."""

    LOOP = ('readlink /proc/self/ns/mnt; '
            'while IFS= read -r line; do eval "$line"; echo "@@end $?"; done')

    def __init__(self, argv: list, env: dict | None = None, loop: str | None = None):
        e = dict(os.environ)
        e.update(env or {})
        self.stderr_path = sb_module.BASE / "logs" / f"login-{time.monotonic_ns()}.err"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([str(a) for a in argv] + [loop or self.LOOP],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=e, bufsize=0)
        self.reader = LineReader(self.proc.stdout, self.stderr)
        self.ns = None

    def wait_ready(self) -> None:
        first = self.read_line(30)
        if first is None:
            self.proc.wait(timeout(10))
            raise AssertionError(f"login {self.proc.args} ended before its shell ran "
                                 f"(status {self.proc.returncode}):\n" + self.stderr())
        self.ns = parse_ns(first)

    @property
    def pid(self) -> int:
        """The login process: runuser/su, the one that opened the PAM session."""
        return self.proc.pid

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def read_line(self, seconds: float) -> str | None:
        return self.reader.read_line(seconds)

    def run(self, command: str, seconds: float = 30) -> tuple[int, str]:
        """Run a shell command line inside the session: (status, stdout+stderr)."""
        self.proc.stdin.write(f"( {command} ) 2>&1\n".encode())
        self.proc.stdin.flush()
        out = []
        while True:
            line = self.read_line(seconds)
            if line is None:
                raise AssertionError(f"the login ended while running {command!r}:\n{self.stderr()}")
            m = re.fullmatch(r"@@end (\d+)", line)
            if m:
                return int(m.group(1)), "\n".join(out)
            out.append(line)

    def check(self, command: str) -> str:
        status, out = self.run(command)
        assert status == 0, f"{command!r} failed in the session ({status}): {out}"
        return out

    def logout(self, seconds: float = 30) -> int:
        """End the shell (end of input): the login process closes the PAM session and exits."""
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.proc.stdin.close()
        rc = self.proc.wait(timeout(seconds))
        self._stderr.close()
        return rc

    def kill(self) -> None:
        """SIGKILL the login process (no close_session), then let its shell end."""
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            self.proc.stdin.close()
        self.proc.wait()
        with contextlib.suppress(OSError):
            self.proc.stdout.close()
        self._stderr.close()


# ---------------------------------------------------------------------------
# Helpers for the daemon's side

def namespace_path(sandbox, user: str) -> str | None:
    import dbus
    try:
        return str(sandbox.manager().GetNamespace(user))
    except dbus.exceptions.DBusException as e:
        if sb_module.dbus_error_name(e) == E_NO_SUCH_NAMESPACE:
            return None
        raise


def namespace_props(sandbox, user: str) -> dict | None:
    path = namespace_path(sandbox, user)
    return sandbox.properties(path) if path else None


def sessions(sandbox, user: str) -> list[str]:
    props = namespace_props(sandbox, user)
    return [str(s) for s in props["Sessions"]] if props else []


def wait_namespace_gone(sandbox, user: str, after: float):
    """The namespace must be gone within StopDelaySec + MARGIN of `after` (monotonic)."""
    limit = STOP_DELAY + MARGIN
    wait_until(lambda: namespace_path(sandbox, user) is None,
               f"{user}'s namespace to be removed after the last session", wait=limit)
    elapsed = time.monotonic() - after
    assert elapsed <= timeout(limit), f"removed only after {elapsed:.1f}s"


def host_ns() -> int:
    return mntns_id()


@contextlib.contextmanager
def stopped(pid: int):
    """The process stopped (SIGSTOP) for the block: alive, its sockets open, answering nothing."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def runuser(user: str, command: str, wait: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["runuser", "-l", user, "-c", command], capture_output=True, text=True,
                          timeout=timeout(wait), env=e)


SESSION_CHECKS = ('readlink /proc/self/ns/mnt; id -u; pwd; cat /mnt/cd/README.txt; '
                  'findmnt -rn -o TARGET | grep -c -F "{subtree}" || true; '
                  'cat /home/bob/private/secret 2>/dev/null || echo no-secret')


def prepare_view_checks(sandbox):
    """A CD on the host's /mnt, and bob's namespace with a mount of his own in his home:
    alice's session must see the first and not the second."""
    marker, content = sandbox.mount_cd("/mnt/cd")
    sandbox.manager().CreateNamespace("bob")
    sandbox.mount_tmpfs("/home/bob/private", view="bob", files={"secret": "bob's secret\n"})
    assert sandbox.in_view("bob", ["cat", "/home/bob/private/secret"]).stdout == "bob's secret\n"
    return content


def assert_alice_view(sandbox, out: str, content: str):
    lines = out.splitlines()
    assert len(lines) >= 6, out
    ns = parse_ns(lines[0])
    props = namespace_props(sandbox, "alice")
    assert props is not None, "no namespace for alice after her login"
    assert ns == int(props["MountNamespaceId"]), (ns, props["MountNamespaceId"])
    assert ns != host_ns()
    assert lines[1] == "2001"
    assert lines[2] == "/home/alice"
    assert lines[3] + "\n" == content, "the CD on the host's /mnt is not visible in the session"
    assert lines[4] == "0", "other users' trees under SubtreeRoot are visible in alice's session"
    assert lines[5] == "no-secret", "bob's private mount is visible in alice's session"


# ---------------------------------------------------------------------------
# Logins land in the view

def test_runuser_login_lands_in_view(daemon, pam):
    content = prepare_view_checks(daemon)
    p = runuser("alice", SESSION_CHECKS.format(subtree=daemon.subtree_root))
    assert p.returncode == 0, p.stderr
    assert_alice_view(daemon, p.stdout, content)
    # close_session ran: the session is gone, and so is the namespace after the delay.
    ended = time.monotonic()
    assert sessions(daemon, "alice") == []
    wait_namespace_gone(daemon, "alice", ended)
    # Closed by its fd, not by watching the login process (the daemon's fallback).
    assert re.search(r"Session '[^']+' of 'alice' closed\.", daemon.daemon_log_text())
    assert "Login process" not in daemon.daemon_log_text()


def test_su_login_lands_in_view(daemon, pam):
    content = prepare_view_checks(daemon)
    p = subprocess.run(["su", "-", "alice", "-c", SESSION_CHECKS.format(subtree=daemon.subtree_root)],
                       capture_output=True, text=True, timeout=timeout(60), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert_alice_view(daemon, p.stdout, content)
    assert sessions(daemon, "alice") == []


def test_pamtester_open_close(daemon, pam):
    signals = daemon.signals(interface=sb_module.MANAGER_IFACE)
    p = subprocess.run(["pamtester", "-v", "nsm-pamtester-required", "alice", "open_session", "close_session"],
                       capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "successfully opened a session" in p.stdout + p.stderr
    signals.wait_for("NamespaceNew", lambda args: args[0] == "alice")
    log = daemon.daemon_log_text()
    # The module's own session id (no logind session here): pam-SERVICE-TTY-PID.
    opened = re.findall(r"Session '(" + (outer_logind_session() or r"pam-nsm-pamtester-required-notty-\d+")
                        + r")' of 'alice' opened", log)
    assert len(opened) == 1, log
    # close_session closes the session fd, which ends the session: no call, nothing to wait for.
    wait_until(lambda: f"Session '{opened[0]}' of 'alice' closed." in daemon.daemon_log_text(),
               "the session to be closed")
    signals.wait_for("NamespaceRemoved", lambda args: args[0] == "alice", timeout_sec=STOP_DELAY + MARGIN)


def test_the_session_id_is_not_the_users_to_choose(daemon, pam):
    """XDG_SESSION_ID is never the session id: not in the PAM environment, where a stack with
    pam_env's user_readenv=1 before the module lets a user put it (here pam_env from a file),
    nor in the process's own environment. The id is logind's session of the login process, as
    its cgroup says (none in the sandbox), else the module's own pam-SERVICE-TTY-PID."""
    envfile = sb_module.BASE / "overlays" / "nsm-xdg-env.conf"
    envfile.write_text("XDG_SESSION_ID DEFAULT=c42\n")
    pam.install("nsm-pamtester-xdg", text=(
        "auth sufficient pam_rootok.so\n"
        "account required pam_permit.so\n"
        f"session required pam_env.so readenv=0 user_readenv=0 conffile={envfile}\n"
        "session required pam_unix.so\n"
        f"session required {pam.module_args}\n"))
    try:
        p = subprocess.run(["pamtester", "nsm-pamtester-xdg", "alice", "open_session", "close_session"],
                           capture_output=True, text=True, timeout=timeout(60))
        assert p.returncode == 0, p.stdout + p.stderr
        p = subprocess.run(["pamtester", "nsm-pamtester-required", "alice", "open_session", "close_session"],
                           capture_output=True, text=True, timeout=timeout(60),
                           env=dict(os.environ, XDG_SESSION_ID="outer7"))
        assert p.returncode == 0, p.stdout + p.stderr
    finally:
        envfile.unlink(missing_ok=True)
    log = daemon.daemon_log_text()
    assert "c42" not in log and "outer7" not in log, log
    opened = re.findall(r"Session '([^']+)' of 'alice' opened", log)
    assert len(opened) == 2, log
    if outer_logind_session() is None:
        assert re.fullmatch(r"pam-nsm-pamtester-xdg-notty-\d+", opened[0]), opened
        assert re.fullmatch(r"pam-nsm-pamtester-required-notty-\d+", opened[1]), opened
    else:
        assert opened == [outer_logind_session()] * 2, opened


# ---------------------------------------------------------------------------
# Session lifecycle

def test_concurrent_logins_share_namespace(daemon, pam, logins):
    first = logins(["runuser", "-l", "alice", "-c"])
    second = logins(["su", "-", "alice", "-c"])
    props = namespace_props(daemon, "alice")
    assert first.ns == second.ns == int(props["MountNamespaceId"])
    assert first.ns != host_ns()
    ids = set(sessions(daemon, "alice"))
    assert ids == {session_id("runuser-l", first.pid), session_id("su-l", second.pid)}, ids

    # Both shells are still there, in the same namespace.
    assert parse_ns(first.check("readlink /proc/self/ns/mnt")) == parse_ns(second.check("readlink /proc/self/ns/mnt"))

    assert first.logout() == 0
    wait_until(lambda: sessions(daemon, "alice") == [session_id("su-l", second.pid)], "the first session to close")
    assert namespace_path(daemon, "alice") is not None, "namespace removed while a session is open"
    assert second.logout() == 0
    ended = time.monotonic()
    wait_until(lambda: sessions(daemon, "alice") == [], "the second session to close")
    wait_namespace_gone(daemon, "alice", ended)


def test_reopen_within_delay_keeps_namespace(daemon, pam):
    first = runuser("alice", "readlink /proc/self/ns/mnt")
    assert first.returncode == 0, first.stderr
    second = runuser("alice", "readlink /proc/self/ns/mnt")
    assert second.returncode == 0, second.stderr
    assert parse_ns(first.stdout) == parse_ns(second.stdout)


def test_linger_keeps_namespace(daemon, pam, logins):
    login = logins(["runuser", "-l", "alice", "-c"])
    daemon.manager().SetLinger("alice", True)
    assert bool(namespace_props(daemon, "alice")["Linger"])
    signals = daemon.signals(interface=sb_module.MANAGER_IFACE)
    assert login.logout() == 0
    wait_until(lambda: sessions(daemon, "alice") == [], "the session to close")
    # Nothing happens. bob's namespace, whose only session ends after alice's, goes
    # StopDelaySec= later: alice's would have gone before, and its signal come first.
    os.close(open_session(daemon.manager(), "bob", "later"))
    bobs = signals.wait_for("NamespaceRemoved", lambda args: args[0] == "bob", timeout_sec=STOP_DELAY + MARGIN)
    assert not [s for s in signals.received[:signals.received.index(bobs)]
                if s[1] == "NamespaceRemoved" and s[3][0] == "alice"], "a lingering namespace was removed"
    props = namespace_props(daemon, "alice")
    assert props is not None and str(props["State"]) == "lingering"

    # A new login joins the lingering namespace.
    again = runuser("alice", "readlink /proc/self/ns/mnt")
    assert parse_ns(again.stdout) == login.ns

    released = time.monotonic()
    daemon.manager().SetLinger("alice", False)
    wait_namespace_gone(daemon, "alice", released)


def test_killed_login_is_cleaned_up(daemon, pam, logins):
    """SIGKILL: no close_session ran, and the session still ends, with the login process's
    last copy of its fd."""
    signals = daemon.signals(interface=sb_module.MANAGER_IFACE)
    login = logins(["runuser", "-l", "alice", "-c"])
    sid = session_id("runuser-l", login.pid)
    assert sessions(daemon, "alice") == [sid]
    killed = time.monotonic()
    login.kill()
    wait_until(lambda: sessions(daemon, "alice") == [], "the killed login's session to be closed")
    signals.wait_for("NamespaceRemoved", lambda args: args[0] == "alice", timeout_sec=STOP_DELAY + MARGIN)
    assert time.monotonic() - killed <= timeout(STOP_DELAY + MARGIN)
    assert f"Session '{sid}' of 'alice' closed." in daemon.daemon_log_text()


def read_until(reader: "LineReader", prefix: str) -> str:
    while True:
        line = reader.read_line(60)
        assert line is not None, f"no {prefix!r} line"
        if line.startswith(prefix):
            return line[len(prefix):].strip()


def test_a_forked_child_keeps_the_session_until_it_exits(daemon, pam):
    """A child the login process forks without exec (sshd's internal-sftp) holds a copy of the
    session fd: the session lasts past the login's own close_session and exit, until the child
    is gone too; nothing but the fd says so."""
    errpath = sb_module.BASE / "logs" / "pam-threaded-child.err"
    with open(errpath, "wb") as err:
        p = subprocess.Popen([pam_threaded_binary(), "nsm-pamtester-required", "alice"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=err, text=True, env=dict(os.environ, PAM_THREADED_CHILD="1"))
    reader = LineReader(p.stdout, errpath.read_text)
    child = int(read_until(reader, "child="))
    try:
        assert p.wait(timeout(30)) == 0, errpath.read_text()
        sid = session_id("nsm-pamtester-required", p.pid)
        assert sessions(daemon, "alice") == [sid], "the session ended while the child holds its fd"
        # A session closed after the login ended: once the daemon has seen that one end, it has
        # seen whatever the login's end did before.
        os.close(open_session(daemon.manager(), "alice", "later"))
        wait_until(lambda: "Session 'later' of 'alice' closed." in daemon.daemon_log_text(),
                   "the daemon to see the later session end")
        assert sessions(daemon, "alice") == [sid], "the session ended while the child holds its fd"
        os.kill(child, signal.SIGKILL)
        wait_until(lambda: sessions(daemon, "alice") == [], "the session to end with the child")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        p.stdout.close()
    assert "Login process" not in daemon.daemon_log_text()


def test_a_killed_daemon_keeps_open_sessions(daemon, pam, logins):
    """nsmanagerd killed (SIGKILL) and started again while a login is open: without systemd's
    fd store (the sandbox) the session comes back by its leader's pid and start time, and ends
    when that process does."""
    login = logins(["runuser", "-l", "alice", "-c"])
    sid = session_id("runuser-l", login.pid)
    daemon.kill_daemon()
    daemon.start_daemon(write=False)
    assert sessions(daemon, "alice") == [sid]
    assert parse_ns(login.check("readlink /proc/self/ns/mnt")) == int(namespace_props(daemon, "alice")["MountNamespaceId"])
    # bob's namespace, whose only session ends now, goes StopDelaySec= later: had the restart
    # lost alice's session, hers would have gone before.
    os.close(open_session(daemon.manager(), "bob", "later"))
    wait_until(lambda: namespace_path(daemon, "bob") is None, "bob's namespace to go", wait=STOP_DELAY + MARGIN)
    assert namespace_path(daemon, "alice") is not None, "the namespace went while its login was open"
    assert login.logout() == 0
    wait_until(lambda: sessions(daemon, "alice") == [], "the session to end with its login process")
    assert f"Login process {login.pid} of session '{sid}' of 'alice' exited" in daemon.daemon_log_text()


def test_sessions_of_one_id_last_until_the_last_ends(daemon):
    """Two OpenSessions of one id (su -l inside an ssh session is in that logind session too):
    the id stays in Sessions until both fds are closed. CloseSession (root's, busctl's) ends
    every session of the id at once, whatever fds are still open."""
    mgr = daemon.manager()
    fds = [open_session(mgr, "alice", "7"), open_session(mgr, "alice", "7")]
    try:
        assert sessions(daemon, "alice") == ["7"]
        os.close(fds.pop())
        wait_until(lambda: "Session '7' of 'alice' closed." in daemon.daemon_log_text(),
                   "the daemon to see the first session of the id end")
        assert sessions(daemon, "alice") == ["7"], "the id went with the first of its two sessions"
        os.close(fds.pop())
        wait_until(lambda: sessions(daemon, "alice") == [], "the id to go with the last session")
        fds += [open_session(mgr, "alice", "8"), open_session(mgr, "alice", "8")]
        mgr.CloseSession("alice", "8")
        assert sessions(daemon, "alice") == []
    finally:
        for fd in fds:
            os.close(fd)


# ---------------------------------------------------------------------------
# Users that are not ours

@pytest.mark.parametrize("user", ["root", "svc"])
def test_root_and_system_users_untouched(daemon, pam, user):
    p = runuser(user, "readlink /proc/self/ns/mnt; id -u")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split()
    assert parse_ns(lines[0]) == host_ns()
    assert lines[1] == ("0" if user == "root" else "500")
    assert list(daemon.manager().ListNamespaces()) == []
    p = subprocess.run(["pamtester", "nsm-pamtester-required", user, "open_session", "close_session"],
                       capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode == 0, p.stdout + p.stderr
    assert list(daemon.manager().ListNamespaces()) == []


@pytest.mark.daemon_config(ExcludeUsers="dave")
def test_excluded_user_untouched(daemon, pam):
    p = runuser("dave", "readlink /proc/self/ns/mnt")
    assert p.returncode == 0, p.stderr
    assert parse_ns(p.stdout) == host_ns()
    assert list(daemon.manager().ListNamespaces()) == []


@pytest.mark.daemon_config(ExcludeUsers="dave")
def test_daemon_is_asked_without_a_login_filter(daemon, pam):
    """Without the range nsmanagerd publishes (/run/nsmanager/login-filter, nor its copy
    under /var/lib: a daemon that never ran, files removed), the module asks the daemon, whose
    UserExcluded makes it step aside (PAM_IGNORE, a notice in syslog), even with required."""
    sb_module.LOGIN_FILTER.unlink()
    sb_module.LOGIN_FILTER_PERSISTENT.unlink()
    p, log = run_with_syslog(["pamtester", "nsm-pamtester-required", "dave", "open_session", "close_session"],
                             sb_module.BASE / "syslog")
    assert p.returncode == 0, p.stdout + p.stderr
    assert any("nsmanagerd does not manage user 'dave'" in line for line in log), log
    assert list(daemon.manager().ListNamespaces()) == []


@pytest.mark.daemon_config(ExcludeUsers="dave")
def test_users_outside_the_range_cost_no_bus_call(daemon, pam):
    """Every cron job of every system user runs the module (common-session-noninteractive):
    root, users below MinUID= and those in ExcludeUsers= are skipped from the published
    range, without a bus call. Shown with the bus and the daemon stopped and `required`:
    any call would time out and refuse the login."""
    for service in ("nsm-pamtester-required", "runuser-l"):
        pam.install(service, text=pam.text_of("nsm-pamtester-required" if service != "runuser-l"
                                              else "nsm-runuser-l-required", "timeout=2"))
    with stopped(daemon.process("dbus-daemon").pid), stopped(daemon.daemon.pid):
        for user in ("root", "svc", "dave"):
            p = subprocess.run(["pamtester", "nsm-pamtester-required", user, "open_session", "close_session"],
                               capture_output=True, text=True, timeout=timeout(60))
            assert p.returncode == 0, (user, p.stdout + p.stderr)
            p = runuser(user, "id -un")
            assert p.returncode == 0 and p.stdout.strip() == user, (user, p.stdout, p.stderr)


def login_filter() -> dict[str, str]:
    """/run/nsmanager/login-filter as KEY: VALUE (comments left out)."""
    lines = sb_module.LOGIN_FILTER.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


@pytest.mark.parametrize("how", ["ReloadConfig", "SIGHUP"])
@pytest.mark.daemon_config(ExcludeUsers="dave")
def test_reload_rewrites_the_login_filter(daemon, pam, how):
    """A reload publishes the new MinUID= and ExcludeUsers= for the module at once: alice
    (MinUID= raised above her uid) and carol (now in ExcludeUsers=) log in on the host
    without a bus call, and dave (no longer excluded) lands in his view."""
    assert login_filter() == {"MIN_UID": "1000", "EXCLUDE_USERS": "dave", "LOGIN_WITHOUT_VIEW": "restricted",
                              "VIEW_MAIN": "------"}
    daemon.write_config(MinUID=2002, ExcludeUsers="carol")
    want = {"MIN_UID": "2002", "EXCLUDE_USERS": "carol", "LOGIN_WITHOUT_VIEW": "restricted", "VIEW_MAIN": "------"}
    if how == "ReloadConfig":
        daemon.manager().ReloadConfig()
        assert login_filter() == want, "ReloadConfig answered before the filter was rewritten"
    else:
        os.kill(daemon.daemon.pid, signal.SIGHUP)
        wait_until(lambda: login_filter() == want, "SIGHUP to rewrite the login filter", interval=0.05,
                   diag=lambda: sb_module.LOGIN_FILTER.read_text())

    # Any bus call would time out and refuse the login (required, timeout=2): none is made.
    pam.install("runuser-l", text=pam.text_of("nsm-runuser-l-required", "timeout=2"))
    with stopped(daemon.process("dbus-daemon").pid), stopped(daemon.daemon.pid):
        for user in ("alice", "carol"):
            p = runuser(user, "readlink /proc/self/ns/mnt; id -un")
            assert p.returncode == 0, (user, p.stdout, p.stderr)
            ns, name = p.stdout.split()
            assert parse_ns(ns) == host_ns() and name == user, (user, p.stdout)
    p = runuser("dave", "readlink /proc/self/ns/mnt")
    assert p.returncode == 0, p.stderr
    assert parse_ns(p.stdout) == int(namespace_props(daemon, "dave")["MountNamespaceId"]) != host_ns()
    assert [str(n[0]) for n in daemon.manager().ListNamespaces()] == ["dave"]


# ---------------------------------------------------------------------------
# Desktop: removable media, threaded session workers

def test_desktop_dropin_media_appears_in_session(instance, pam_dir, pam_module, logins):
    sandbox = instance
    text = (REPO / "conf" / "desktop.conf").read_text()
    m = re.search(r"^SharedSubtrees=(.*)$", text, re.M)
    assert m and "/media" in m.group(1).split(), "conf/desktop.conf does not share /media"
    shared = m.group(1).split()
    # /media and /run are the sandbox's tmpfs: nothing below them is created on the real disk.
    os.makedirs("/run/media", exist_ok=True)
    try:
        sandbox.write_config_file("nsmanagerd.conf.d/desktop.conf", text)
        sandbox.start_daemon()
        sandbox.shared_subtrees = shared      # the drop-in's mounts are the daemon's by design
        assert sorted(map(str, sandbox.properties()["SharedSubtrees"])) == sorted(shared)

        services = PamServices(pam_dir, pam_module)
        try:
            services.install("runuser-l", "nsm-runuser-l")
            login = logins(["runuser", "-l", "alice", "-c"])
            assert login.ns == int(namespace_props(sandbox, "alice")["MountNamespaceId"])

            # udisks2 mounting a USB stick for alice, in the host namespace, after she logged in.
            os.makedirs("/media/alice", exist_ok=True)
            sandbox.mount_tmpfs("/media/alice/USBSTICK", source="NSM_USB", files={"LABEL": "usb stick\n"})
            assert login.check("cat /media/alice/USBSTICK/LABEL") == "usb stick"
            assert "NSM_USB" in login.check("findmnt -n -o SOURCE /media/alice/USBSTICK")
            # and the same under /run/media
            sandbox.mount_tmpfs("/run/media/alice", source="NSM_USB2", files={"LABEL": "second\n"})
            assert login.check("cat /run/media/alice/LABEL") == "second"
            assert login.logout() == 0
        finally:
            services.restore()
    finally:
        with contextlib.suppress(OSError):
            os.rmdir("/run/media")


def test_threaded_pam_caller_lands_in_namespace(daemon, pam):
    binary = pam_threaded_binary()
    if not binary.exists():
        pytest.fail(f"{binary} is not built", pytrace=False)
    errpath = sb_module.BASE / "logs" / "pam-threaded.err"
    with open(errpath, "wb") as err:
        p = subprocess.Popen([binary, "nsm-pamtester-required", "alice"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=err, text=True,
                             env=dict(os.environ, PAM_THREADED_HOLD="1"), cwd="/home/alice")
    reader = LineReader(p.stdout, errpath.read_text)
    try:
        out = {}
        while True:
            line = reader.read_line(60)
            if line is None:
                pytest.fail(f"pam-threaded ended early ({p.wait()}): {errpath.read_text()}", pytrace=False)
            line = line.strip()
            if line == "holding":
                break
            key, _, value = line.partition("=")
            out[key] = value
        props = namespace_props(daemon, "alice")
        assert parse_ns(out["session-ns"]) == int(props["MountNamespaceId"])
        assert parse_ns(out["main-ns"]) == host_ns(), "the other thread must stay where it was"
        assert out["cwd"] == "/home/alice"
        assert sessions(daemon, "alice") == [session_id("nsm-pamtester-required", p.pid)]
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.wait(timeout(30)) == 0, errpath.read_text()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert sessions(daemon, "alice") == []


def test_working_directory_falls_back_to_home(daemon, pam):
    """A working directory that does not exist in the view: the session starts in the home.
    An unbindable mount of the host is left out of views (as SubtreeRoot is)."""
    hidden = str(sb_module.BASE / "hostonly")
    daemon.mount_tmpfs(hidden)
    sb_module.set_propagation(hidden, sb_module.MS_UNBINDABLE)
    os.mkdir(f"{hidden}/work")
    p = subprocess.run([pam_threaded_binary(), "nsm-pamtester-required", "alice"], capture_output=True,
                       text=True, timeout=timeout(60), cwd=f"{hidden}/work")
    assert p.returncode == 0, p.stderr
    out = dict(line.partition("=")[::2] for line in p.stdout.splitlines())
    assert parse_ns(out["session-ns"]) == int(namespace_props(daemon, "alice")["MountNamespaceId"])
    assert out["cwd"] == "/home/alice", out


# ---------------------------------------------------------------------------
# Daemon not running

DEV_WITH_LOG = r"""
set -e
mkdir -p "$D/olddev"
mount --rbind /dev "$D/olddev"
mount -t tmpfs -o mode=755 tmpfs /dev
for f in null zero full random urandom tty; do touch /dev/$f; mount --bind "$D/olddev/$f" /dev/$f; done
ln -s /proc/self/fd /dev/fd; ln -s fd/0 /dev/stdin; ln -s fd/1 /dev/stdout; ln -s fd/2 /dev/stderr
touch /dev/log; mount --bind "$D/log" /dev/log
exec "$@"
"""


def run_with_syslog(argv: list, workdir: Path) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run argv in a mount namespace of its own whose /dev/log is a socket we read: what
    PAM modules send to syslog (there is no journal in the sandbox). The socket is read while
    argv runs: a datagram socket queues only net.unix.max_dgram_qlen (10) messages, and
    syslog() blocks when the queue is full."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "log"
    path.unlink(missing_ok=True)
    lines: list[str] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(str(path))
        os.chmod(path, 0o666)       # a PAM stack run by a user logs too
        s.settimeout(0.05)
        done = threading.Event()

        def read():
            while True:
                try:
                    lines.append(s.recv(65536).decode(errors="replace"))
                except (TimeoutError, socket.timeout):
                    if done.is_set():
                        return
        reader = threading.Thread(target=read)
        reader.start()
        try:
            p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", DEV_WITH_LOG, "sh"]
                               + [str(a) for a in argv], capture_output=True, text=True,
                               timeout=timeout(60), env=dict(os.environ, D=str(workdir)))
        finally:
            done.set()
            reader.join()
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        os.rmdir(workdir / "olddev")
    return p, lines


@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_daemon_stopped_optional_lets_in_required_refuses(daemon, pam):
    """With the daemon stopped and a login the rule does not let go on without its view
    (LoginWithoutView=deny: tests/test_login_without_view.py has the others): optional lets it
    in all the same (always fail open), required refuses it."""
    daemon.stop_daemon()
    work = sb_module.BASE / "syslog"

    # optional: the login goes through, in the host namespace, and the failure is logged.
    p, log = run_with_syslog(["runuser", "-l", "alice", "-c", "readlink /proc/self/ns/mnt; id -u"], work)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split()
    assert lines[1] == "2001"
    errors = [l for l in log if "pam_nsmanager(runuser-l:session): Failed to open session" in l]
    assert errors, log
    assert "org.example.NSManager" in errors[0], errors[0]
    assert errors[0].startswith("<83>"), errors[0]   # LOG_AUTHPRIV | LOG_ERR

    # The host namespace: the login did not land anywhere else.
    p2 = runuser("alice", "readlink /proc/self/ns/mnt")
    assert parse_ns(p2.stdout) == host_ns()

    # required: refused.
    pam.install("runuser-l", "nsm-runuser-l-required")
    p = runuser("alice", "echo logged-in")
    assert p.returncode != 0
    assert "logged-in" not in p.stdout
    assert "cannot open session" in p.stderr, p.stderr

    p = subprocess.run(["pamtester", "nsm-pamtester-optional", "alice", "open_session", "close_session"],
                       capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run(["pamtester", "nsm-pamtester-required", "alice", "open_session"],
                       capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode != 0
    assert "Cannot make/remove an entry for the specified session" in p.stdout + p.stderr


# A login never waits longer than timeout=: one deadline for connecting, authenticating and
# the call. The daemon stopped: its private socket (or the bus) takes the connection and
# nobody answers. The bus stopped and no private socket to go to: the kernel accepts the
# connection, and nobody answers the authentication (sd-bus alone would wait 25 s for it).
TIMEOUT = 2


@contextlib.contextmanager
def private_socket_gone():
    """nsmanagerd's private socket moved away: connect() fails, the module takes the bus."""
    aside = sb_module.NSM_PRIVATE_SOCKET + ".aside"
    os.rename(sb_module.NSM_PRIVATE_SOCKET, aside)
    try:
        yield
    finally:
        os.rename(aside, sb_module.NSM_PRIVATE_SOCKET)


@pytest.mark.parametrize("which", ["nsmanagerd", "dbus-daemon"])
@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_stopped_daemon_or_bus_costs_at_most_the_timeout(daemon, pam, which):
    pam.install("runuser-l", text=pam.text_of("nsm-runuser-l", f"timeout={TIMEOUT}"))
    pam.install("nsm-runuser-l-required", text=pam.text_of("nsm-runuser-l-required", f"timeout={TIMEOUT}"))
    work = sb_module.BASE / "syslog"
    slack = timeout(1.5)    # runuser itself, on a loaded machine
    gone = private_socket_gone() if which == "dbus-daemon" else contextlib.nullcontext()
    with gone, stopped(daemon.process(which).pid):
        # optional: the login goes on, in the host namespace, after the timeout.
        start = time.monotonic()
        p, log = run_with_syslog(["runuser", "-l", "alice", "-c", "echo logged-in"], work)
        elapsed = time.monotonic() - start
        assert p.returncode == 0 and p.stdout == "logged-in\n", p.stdout + p.stderr
        assert TIMEOUT - 0.1 <= elapsed <= TIMEOUT + slack, f"the login took {elapsed:.2f}s with timeout={TIMEOUT}"
        expected = f"nsmanagerd did not answer OpenSession for session '{outer_logind_session() or 'pam-runuser-l-notty-'}"
        errors = [line for line in log if expected in line]
        assert errors and f"within {TIMEOUT}s (timeout=)" in errors[0], log
        assert errors[0].startswith("<83>"), errors[0]   # LOG_AUTHPRIV | LOG_ERR
        # the module's answer was a refusal, which `optional` ignores: its one line
        assert p.stderr == "Your view of this machine could not be set up. Please contact your administrator.\n", \
            p.stderr
        p = runuser("alice", "readlink /proc/self/ns/mnt")
        assert p.returncode == 0 and parse_ns(p.stdout) == host_ns(), p.stdout + p.stderr

        # required: refused, after the timeout.
        pam.install("runuser-l", text=pam.text_of("nsm-runuser-l-required", f"timeout={TIMEOUT}"))
        start = time.monotonic()
        p = runuser("alice", "echo logged-in")
        elapsed = time.monotonic() - start
        assert p.returncode != 0 and "logged-in" not in p.stdout
        assert "cannot open session" in p.stderr, p.stderr
        assert TIMEOUT - 0.1 <= elapsed <= TIMEOUT + slack, f"the refusal took {elapsed:.2f}s with timeout={TIMEOUT}"


def chattering_signal(serial: int) -> bytes:
    """A signal with no body (path /a, interface a.b, member C): a message a login skips while
    it waits for its answer. Written out here, for this test only: the module itself speaks
    D-Bus through sd-bus."""
    fields = b""
    for code, value in ((1, "/a"), (2, "a.b"), (3, "C")):
        fields += b"\0" * (-len(fields) % 8)
        fields += bytes([code, 1]) + (b"o" if code == 1 else b"s") + b"\0" + struct.pack("<I", len(value)) \
            + value.encode() + b"\0"
    header = struct.pack("<cBBBIII", b"l", 4, 1, 1, 0, serial, len(fields)) + fields
    return header + b"\0" * (-len(header) % 8)


AUTH_OK = b"OK 0123456789abcdef0123456789abcdef\r\nAGREE_UNIX_FD\r\n"


def chatter(conn: socket.socket, stop: threading.Event):
    """Messages without end, none of them the answer, written faster than a login reads
    them, so that there is always more to read (for 10 s at most: then the end)."""
    until = time.monotonic() + timeout(10)
    batch = b"".join(chattering_signal(i) for i in range(1, 1001)) * 40
    # Room for several batches queued (SO_SNDBUFFORCE: beyond net.core.wmem_max, as root).
    conn.setsockopt(socket.SOL_SOCKET, 32, 4 * len(batch))
    conn.sendall(AUTH_OK)
    while not stop.is_set() and time.monotonic() < until:
        conn.sendall(batch)


# What a daemon gone wrong may answer on the private socket once the login's call came; all
# but "half a reply" leave the connection open after it, until the login is over.
WRONG_ANSWERS = {
    "garbage": lambda conn, stop: conn.sendall(b"HELLO\r\n"),
    "no D-Bus message": lambda conn, stop: conn.sendall(AUTH_OK + b"X" * 64),
    "half a reply": lambda conn, stop: conn.sendall(AUTH_OK + chattering_signal(1)[:20]),
    # A method return to the call (serial 1) without its body: no namespace to join.
    "a success without the namespace": lambda conn, stop: conn.sendall(
        AUTH_OK + struct.pack("<cBBBIII", b"l", 2, 1, 1, 0, 1, 8) + bytes([5, 1, ord("u"), 0]) + struct.pack("<I", 1)),
    "messages without end": chatter,
}


@pytest.mark.parametrize("answer", WRONG_ANSWERS)
def test_a_wrong_answer_on_the_private_socket_costs_at_most_the_timeout(daemon, pam, answer):
    """Whatever a daemon gone wrong answers on its private socket, the login gives up on it
    by timeout= at the latest (logged) and goes on in the host's namespace (optional); also
    when the daemon keeps writing messages that are not the answer."""
    pam.install("runuser-l", text=pam.text_of("nsm-runuser-l", f"timeout={TIMEOUT}"))
    work = sb_module.BASE / "syslog"
    stop = threading.Event()

    def serve(server: socket.socket):
        with contextlib.suppress(OSError):
            conn, _ = server.accept()
            with conn:
                conn.settimeout(timeout(30))
                conn.recv(4096)
                WRONG_ANSWERS[answer](conn, stop)
                if answer != "half a reply":
                    stop.wait(timeout(30))

    with private_socket_gone(), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(sb_module.NSM_PRIVATE_SOCKET)
        server.listen()
        server.settimeout(timeout(30))
        t = threading.Thread(target=serve, args=(server,))
        t.start()
        try:
            start = time.monotonic()
            p, log = run_with_syslog(["runuser", "-l", "alice", "-c", "echo logged-in"], work)
            elapsed = time.monotonic() - start
        finally:
            stop.set()
            t.join(timeout(60))
            os.unlink(sb_module.NSM_PRIVATE_SOCKET)
    assert p.returncode == 0 and p.stdout == "logged-in\n", p.stdout + p.stderr
    assert elapsed <= TIMEOUT + timeout(1.5), f"the login took {elapsed:.2f}s with timeout={TIMEOUT}"
    # sd-bus answers a call on a connection that went away with NoReply ("Connection terminated").
    assert any("pam_nsmanager" in line and ("OpenSession" in line or "Failed to open session" in line)
               for line in log), log


def test_logins_take_the_private_socket(daemon, pam):
    """Root's logins talk to nsmanagerd on its private socket, without dbus-daemon: with the
    bus stopped, a login still lands in the view at once, and logs out. (The module's
    timeout is longer than "at once", scaled as it is: a login that took the bus is then told
    apart from a slow one on a loaded machine or the ASan build.)"""
    wait = int(timeout(10))
    pam.install("runuser-l", text=pam.text_of("nsm-runuser-l", f"timeout={wait}"))
    mode = os.stat(sb_module.NSM_PRIVATE_SOCKET).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600, oct(mode)
    daemon.manager().CreateNamespace("alice")
    view = daemon.view_ns_id("alice")
    with stopped(daemon.process("dbus-daemon").pid):
        start = time.monotonic()
        p = runuser("alice", "readlink /proc/self/ns/mnt")
        elapsed = time.monotonic() - start
    assert p.returncode == 0 and parse_ns(p.stdout) == view, p.stdout + p.stderr
    assert elapsed < timeout(TIMEOUT), f"the login took {elapsed:.2f}s (the module waits {wait}s for the bus)"
    wait_until(lambda: list(daemon.properties(ns_path("alice"))["Sessions"]) == [], "the session to close")
    # Nobody but root gets in.
    p = daemon.run_as("bob", ["/usr/bin/python3", "-c", f"import socket; s = socket.socket(socket.AF_UNIX); "
                                                        f"s.connect({sb_module.NSM_PRIVATE_SOCKET!r})"])
    assert p.returncode != 0 and "Permission denied" in p.stderr, p.stderr


def unix_recv_queued(pid: int) -> bool:
    """Whether any unix socket of the process holds bytes it has not read (ss's Recv-Q)."""
    out = subprocess.run(["ss", "-xpn"], capture_output=True, text=True, check=True).stdout
    return any(int(line.split()[2]) > 0 for line in out.splitlines()[1:] if f"pid={pid}," in line)


def test_a_new_bus_caller_with_the_bus_stopped_stalls_no_login(daemon, pam):
    """The first call of a new bus connection makes the daemon ask dbus-daemon who sent it
    (GetConnectionCredentials). With dbus-daemon stopped right then, that question waits; a
    login on the private socket meanwhile must still land in its view at once, not wait until
    the module's timeout= and go on in the host's namespace."""
    wait = int(timeout(10))
    pam.install("runuser-l", text=pam.text_of("nsm-runuser-l", f"timeout={wait}"))
    daemon.manager().CreateNamespace("alice")
    view = daemon.view_ns_id("alice")
    bus = daemon.process("dbus-daemon").pid
    call = None
    try:
        with stopped(daemon.daemon.pid):
            # A new connection's call, delivered into the stopped daemon's socket.
            call = subprocess.Popen(["busctl", "--system", "call", "org.example.NSManager", "/org/example/NSManager",
                                     "org.example.NSManager.Manager", "CreateNamespace", "s", "bob"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wait_until(lambda: unix_recv_queued(daemon.daemon.pid), "the call to reach the daemon's socket")
            os.kill(bus, signal.SIGSTOP)
        try:
            start = time.monotonic()
            p = runuser("alice", "readlink /proc/self/ns/mnt")
            elapsed = time.monotonic() - start
        finally:
            os.kill(bus, signal.SIGCONT)
        assert p.returncode == 0 and parse_ns(p.stdout) == view, p.stdout + p.stderr
        assert elapsed < timeout(TIMEOUT), f"the login took {elapsed:.2f}s (the module waits {wait}s)"
        out, err = call.communicate(timeout=timeout(30))
        assert call.returncode == 0, err
        assert "bob" in [str(n[0]) for n in daemon.manager().ListNamespaces()], "the held call was not answered"
    finally:
        if call and call.poll() is None:
            call.kill()
            call.wait()


@pytest.mark.daemon_config(OperationTimeoutSec="2s")
def test_held_private_connections_keep_logins_out_only_for_a_while(daemon, pam):
    """The private socket serves 64 connections at a time, all root's; but a user may stop
    her own su (its real uid is hers) while its pam_nsmanager holds one. With 64 held open
    and saying nothing, the next login waits only until they outlive any call's deadline
    (OperationTimeoutSec=), then lands in its view: not until timeout=, nor for ever."""
    pam.install("runuser-l", text=pam.text_of("nsm-runuser-l", "timeout=10"))
    daemon.manager().CreateNamespace("alice")
    view = daemon.view_ns_id("alice")
    held = []
    try:
        for _ in range(64):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            s.connect(sb_module.NSM_PRIVATE_SOCKET)
            held.append(s)
        start = time.monotonic()
        p = runuser("alice", "readlink /proc/self/ns/mnt")
        elapsed = time.monotonic() - start
    finally:
        for s in held:
            s.close()
    assert p.returncode == 0 and parse_ns(p.stdout) == view, p.stdout + p.stderr
    assert elapsed < 2 + 1 + timeout(2), f"the login took {elapsed:.2f}s"


def module_imports(module: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--undefined-only", module], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def test_module_has_no_way_to_the_terminal(pam_module):
    """Nothing in the module can write to the login's terminal but the one line of a refused
    login (pam_error(), which is pam_prompt(PAM_ERROR_MSG): test_login_without_view.py): no
    stdio stream, no printing function, and none of the shared code's log functions (which
    write to stderr). Messages go through pam_syslog only."""
    imports = module_imports(pam_module)
    assert "pam_syslog" in imports and "sd_bus_new" in imports, sorted(imports)
    forbidden = {"stderr", "stdout", "printf", "vprintf", "puts", "fputs", "putchar", "perror", "dprintf",
                 "vdprintf", "fwrite", "psignal", "psiginfo", "err", "errx", "warn", "warnx", "verr", "vwarn",
                 "error", "error_at_line", "vfprintf", "syslog", "vsyslog", "openlog",
                 "pam_info", "pam_vinfo", "pam_error", "pam_verror", "pam_vprompt"}
    assert not imports & forbidden, f"the module imports {sorted(imports & forbidden)}"
    defined = subprocess.run(["nm", pam_module], capture_output=True, text=True, check=True).stdout
    assert not re.search(r"\blog_(internal|set_max_level|last_error)\b", defined), \
        "the shared code's stderr logging (src/shared/log.c) is linked into the module"


@pytest.mark.daemon_config(SharedSubtrees="/mnt /home/alice")
def test_nothing_on_the_terminal(daemon, pam):
    """A SharedSubtrees= path the daemon refuses (alice's home: the daemon warns about it, in
    its own log), bad options on the module's PAM line, and a damaged login-filter file: the
    login still lands in the view, its terminal shows only what the shell printed, and the
    module's complaints go to syslog. SYSTEMD_LOG_LEVEL=debug does not make libsystemd talk
    either."""
    assert "SharedSubtrees=/home/alice" in daemon.daemon_log_text()
    pam.install("runuser-l", text=pam.text_of("nsm-runuser-l", "timeout=abc bogus"))
    sb_module.LOGIN_FILTER.write_text("MIN_UID=not-a-number\n")
    p, log = run_with_syslog(["env", "SYSTEMD_LOG_LEVEL=debug", "SYSTEMD_LOG_TARGET=console",
                              "runuser", "-l", "alice", "-c", "readlink /proc/self/ns/mnt"], sb_module.BASE / "syslog")
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", f"written to the login's terminal: {p.stderr!r}"
    assert p.stdout.splitlines() == [f"mnt:[{namespace_props(daemon, 'alice')['MountNamespaceId']}]"], p.stdout
    text = "\n".join(log)
    assert "pam_nsmanager(runuser-l:session): Unknown option 'bogus', ignoring." in text, log
    assert "Invalid timeout 'abc'" in text, log
    assert f"Failed to read {sb_module.LOGIN_FILTER}, ignoring" in text, log


# ---------------------------------------------------------------------------
# sshd, end to end

@pytest.fixture
def sshd(daemon, pam):
    """Debian's sshd on 127.0.0.1 (tests/sshd.py) with the sandbox's PAM stack; key
    authentication for alice."""
    with Sshd(["alice"]) as server:
        yield server


def ssh(server: Sshd, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(server.ssh_argv("alice", command), capture_output=True, text=True,
                          timeout=timeout(60), stdin=subprocess.DEVNULL)


def test_sshd_login_lands_in_view(daemon, pam, sshd):
    content = prepare_view_checks(daemon)
    p = ssh(sshd, "readlink /proc/self/ns/mnt; findmnt -n -o TARGET /mnt/cd; id -u; cat /mnt/cd/README.txt; "
                  "cat /home/bob/private/secret 2>/dev/null || echo no-secret")
    assert p.returncode == 0, p.stderr + "\n" + sshd.log_text()
    lines = p.stdout.splitlines()
    props = namespace_props(daemon, "alice")
    assert props is not None, sshd.log_text()
    assert parse_ns(lines[0]) == int(props["MountNamespaceId"])
    assert lines[1] == "/mnt/cd"
    assert lines[2] == "2001"
    assert lines[3] + "\n" == content
    assert lines[4] == "no-secret"
    # The connection is over: sshd closed the session (or the daemon saw its process go).
    wait_until(lambda: sessions(daemon, "alice") == [], "the ssh session to close")
    assert re.search(r"Session 'pam-sshd-ssh-\d+' of 'alice' closed", daemon.daemon_log_text())


@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_sshd_required_refuses_without_daemon(daemon, pam, sshd):
    daemon.stop_daemon()
    pam.install("sshd", text=pam.text_of("nsm-sshd").replace(
        "session    optional     " + pam.module_args, "session    required     " + pam.module_args))
    p = ssh(sshd, "echo logged-in")
    assert p.returncode != 0
    assert "logged-in" not in p.stdout
    assert "pam_open_session" in sshd.log_text(), sshd.log_text()


@pytest.mark.parametrize("name", ["Not A User", "alice@example.com", "../etc"])
def test_names_the_daemon_cannot_serve_are_ignored(daemon, pam, name):
    """A name nsmanagerd would refuse (NoSuchUser) is not the module's business: with
    `session required` the stack still succeeds (PAM_IGNORE), and nothing reaches the daemon."""
    p = subprocess.run(["pamtester", "nsm-pamtester-required", name, "open_session", "close_session"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert daemon.manager().ListNamespaces() == []


# ---------------------------------------------------------------------------
# The module's refusals: the login fails with `required`, and syslog says why

def required_only(pam, args: str = "") -> str:
    """A service of pam_nsmanager alone, required: its result is the stack's."""
    return f"session required {pam.module_args} {args}".rstrip() + "\n"


@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_the_daemons_refusal_fails_a_required_login(daemon, pam):
    """A PAM stack run by a program that is not root (here pamtester as alice) gets the
    daemon's AccessDenied for OpenSession: where the rule denies a login without its view,
    `required` fails the session, the module logs the daemon's message, and no namespace or
    session is made."""
    pam.install("nsm-pam-refused", text=required_only(pam))
    p, log = run_with_syslog(daemon._setpriv("alice") + ["env", f"DBUS_SYSTEM_BUS_ADDRESS={sb_module.SYSTEM_BUS_ADDRESS}",
                                                          "pamtester", "nsm-pam-refused", "alice", "open_session"],
                             sb_module.BASE / "syslog")
    assert p.returncode != 0, p.stdout + p.stderr
    assert any("Failed to open session" in line and "only available to root" in line for line in log), log
    assert list(daemon.manager().ListNamespaces()) == []


@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_an_unknown_user_fails_a_required_login(daemon, pam):
    """A valid name NSS does not know: logged, nothing asked of the daemon, and the rule
    decides (deny: the session fails)."""
    pam.install("nsm-pam-refused", text=required_only(pam))
    p, log = run_with_syslog(["pamtester", "nsm-pam-refused", "nsm-nosuchuser", "open_session"],
                             sb_module.BASE / "syslog")
    assert p.returncode != 0, p.stdout + p.stderr
    assert any("User 'nsm-nosuchuser' does not exist." in line for line in log), log
    assert list(daemon.manager().ListNamespaces()) == []


def test_attach_outside_an_attach_unit_fails(daemon, pam):
    """`attach` is for the units nsmanagerd starts for Attach(), which name the namespace in
    NSMANAGER_ATTACH_NAMESPACE: without it the session fails, it does not fall back to the
    PAM user's own namespace (or the host)."""
    pam.install("nsm-pam-refused", text=required_only(pam, "attach"))
    daemon.manager().CreateNamespace("alice")
    p, log = run_with_syslog(["pamtester", "nsm-pam-refused", "alice", "open_session"], sb_module.BASE / "syslog")
    assert p.returncode != 0, p.stdout + p.stderr
    assert any("NSMANAGER_ATTACH_NAMESPACE is not set" in line for line in log), log
    assert list(daemon.properties(ns_path("alice"))["Sessions"]) == []
