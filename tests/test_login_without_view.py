# SPDX-License-Identifier: LGPL-2.1-or-later
"""LoginWithoutView= (nsmanagerd.conf(5)): whether a login may go on in the host namespace
when its view cannot be entered, through the real PAM stack with the Debian package's
profile, `session [success=ok ignore=ignore session_err=bad default=ignore] pam_nsmanager.so`
(debian/pam-configs/nsmanager): the module answers PAM_IGNORE where the rule lets the login go
on and PAM_SESSION_ERR where it does not, on every path on which the login gets no view.

alice has a [View] policy of her own (user.d/alice.conf), bob has none; root and svc (below
MinUID=) are never nsmanager's. The daemon is stopped, stuck (SIGSTOP: the module's timeout=),
or answers TimedOut (its view builder stopped: OperationTimeoutSec=). A refused login must
not run anything: each login's command touches a file, which must not appear.
"""

import contextlib
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import sandbox as sb_module
from helpers import PamServices, wait_until
from sandbox import timeout
from sshd import Sshd
from test_pam import host_ns, namespace_props, parse_ns, run_with_syslog

PROFILE = "[success=ok ignore=ignore session_err=bad default=ignore]"
TIMEOUT = 2
POLICY = {"user.d/alice.conf": "[View]\nPrivateTmp=yes\n"}
USERS = ("alice", "bob", "root", "svc")


def with_profile(text: str) -> str:
    """A project pam.d file with the package's control on the module's line."""
    out, n = re.subn(r"^-?session\s+(?:optional|required)(\s+\S*pam_nsmanager\.so)", rf"session {PROFILE}\1", text,
                     flags=re.M)
    assert n == 1, text
    return out


@pytest.fixture
def profile(pam_dir, pam_module):
    """runuser-l, su-l, sshd and a pamtester service, each with the package's control."""
    services = PamServices(pam_dir, pam_module)
    for service, source in (("runuser-l", "nsm-runuser-l"), ("su-l", "nsm-su-l"), ("sshd", "nsm-sshd"),
                            ("nsm-pamtester-profile", "nsm-pamtester-optional")):
        services.install(service, text=with_profile(services.text_of(source, f"timeout={TIMEOUT}")))
    yield services
    services.restore()


def marker(user: str) -> Path:
    """A file the user's login command touches: in her home (on the sandbox's /home, which a
    view shares, whatever its /tmp), root's in BASE."""
    return sb_module.BASE / "ran-root" if user == "root" else Path(sb_module.TEST_USERS[user].home) / "nsm-ran"


def login(user: str) -> tuple[bool, int | None]:
    """runuser -l USER: (whether its command ran, the mount namespace it ran in)."""
    m = marker(user)
    m.unlink(missing_ok=True)
    p = subprocess.run(["runuser", "-l", user, "-c", f"readlink /proc/self/ns/mnt; touch {m}"], capture_output=True,
                       text=True, timeout=timeout(60), stdin=subprocess.DEVNULL)
    ran = m.exists()
    m.unlink(missing_ok=True)
    if p.returncode != 0:
        assert not ran, f"{user}'s login failed ({p.returncode}) but its command ran"
        assert "cannot open session" in p.stderr, p.stderr
        return False, None
    assert ran, p.stdout + p.stderr
    return True, parse_ns(p.stdout)


def daemon_children(sb) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{sb.daemon.pid}/task/{sb.daemon.pid}/children").read_text().split()]


@contextlib.contextmanager
def failing(sb, how: str):
    """nsmanagerd stopped, stuck, or answering TimedOut for every view it is to build. Yields
    what to call before each login."""
    if how == "stopped":
        sb.stop_daemon()
        yield lambda: None
        sb.restart_daemon()
    elif how == "stuck":
        os.kill(sb.daemon.pid, signal.SIGSTOP)
        try:
            yield lambda: None
        finally:
            os.kill(sb.daemon.pid, signal.SIGCONT)
    else:
        # The daemon's helpers stopped, the view builder among them: the build misses its
        # deadline, and the login is told TimedOut. The daemon then starts another builder,
        # which the next login finds stopped too.
        stopped = set()

        def stop_helpers():
            # At a deadline the daemon answers, gives the builder up and forks another, in one
            # turn of its loop: a call answered after that finds the new one there.
            sb.manager().ListNamespaces()
            for pid in daemon_children(sb):
                if pid in stopped:
                    continue
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                    stopped.add(pid)
            assert stopped, "no view builder to stop"
        try:
            yield stop_helpers
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)


# What each value lets through when the view cannot be entered.
ALLOWED = {
    "allow": {"alice", "bob", "root", "svc"},
    "deny": {"root", "svc"},
    "restricted": {"bob", "root", "svc"},
}

CASES = [pytest.param(value, how, marks=pytest.mark.daemon_config(LoginWithoutView=value, OperationTimeoutSec="1s",
                                                                  files=POLICY), id=f"{value}-{how}")
         for value in ALLOWED for how in ("stopped", "stuck", "timing-out")]


@pytest.mark.parametrize("value,how", CASES)
def test_each_value_when_the_view_cannot_be_entered(daemon, profile, value, how):
    """Under each value, with the daemon stopped, stuck and timing out: the users the rule
    lets through log in in the host namespace, the others are refused and run nothing; root
    and system users always log in, without asking the daemon. With the daemon back, alice
    and bob land in their views."""
    with failing(daemon, how) as before_login:
        for user in USERS:
            before_login()
            start = time.monotonic()
            ran, ns = login(user)
            took = time.monotonic() - start
            assert ran == (user in ALLOWED[value]), f"LoginWithoutView={value}, daemon {how}: {user} ran={ran}"
            if ran:
                assert ns == host_ns(), f"{user} ran in {ns}, not in the host's namespace"
            assert took < TIMEOUT + timeout(3), f"{user}'s login took {took:.1f}s"
    wait_until(lambda: daemon.daemon_running() and len(daemon_children(daemon)) >= 1, "the daemon to be back")
    for user in ("alice", "bob"):
        ran, ns = login(user)
        assert ran and ns == int(namespace_props(daemon, user)["MountNamespaceId"]) != host_ns(), (user, ns)


def test_the_filter_says_what_the_daemon_compiled(daemon):
    """What the daemon publishes for the module (/run/nsmanager/login-filter and its copy
    under /var/lib): the value, and what each file of the [View] policy does to each setting
    (PrivateTmp, HideOtherHomes, BindPaths, BindReadOnlyPaths, TemporaryFileSystem,
    InaccessiblePaths), from the daemon's own parser; files that touch nothing are left out.
    A reload publishes the new rule at once."""
    daemon.write_config_file("group.d/nsadmin.conf", "[View]\nInaccessiblePaths=-/srv/secret\n")
    daemon.write_config_file("group.d/other.conf", "# nothing\n")
    daemon.write_config_file("user.d/bob.conf", "[View]\nPrivateTmp=no\n")
    daemon.write_config_file("user.d/alice.conf", "[View]\nBindPaths=/srv/a:/srv/b\nBindPaths=\nHideOtherHomes=yes\n")
    daemon.write_config(extra="[View]\nTemporaryFileSystem=/srv/tmp\n")
    daemon.manager().ReloadConfig()
    for path in (sb_module.LOGIN_FILTER, sb_module.LOGIN_FILTER_PERSISTENT):
        lines = [x for x in path.read_text().splitlines() if not x.startswith("#")]
        assert lines == ["MIN_UID=1000", "EXCLUDE_USERS=", "LOGIN_WITHOUT_VIEW=restricted", "VIEW_MAIN=----y-",
                         "VIEW_GROUP=nsadmin -----y", "VIEW_USER=alice -yn---", "VIEW_USER=bob n-----"], (path, lines)
        assert oct(path.stat().st_mode & 0o777) == "0o644"
    daemon.write_config(LoginWithoutView="deny")
    daemon.manager().ReloadConfig()
    lines = [x for x in sb_module.LOGIN_FILTER.read_text().splitlines() if not x.startswith("#")]
    assert lines == ["MIN_UID=1000", "EXCLUDE_USERS=", "LOGIN_WITHOUT_VIEW=deny"], lines
    assert sb_module.LOGIN_FILTER_PERSISTENT.read_text() == sb_module.LOGIN_FILTER.read_text()


@pytest.mark.daemon_config(extra_config="[View]\nPrivateTmp=yes\n",
                           files={"user.d/bob.conf": "[View]\nPrivateTmp=no\n",
                                  "group.d/nsadmin.conf": "[View]\nPrivateTmp=yes\n",
                                  "user.d/carol.conf": "[View]\nPrivateTmp=no\n"})
def test_restricted_follows_the_effective_policy(daemon, profile):
    """`restricted` refuses exactly the users whose effective policy is not empty, merged as
    the daemon merges it: the main file's [View], then the user's groups' files, then her own.
    The main file's applies to everybody (alice, dave); bob's own file resets it; carol's group
    nsadmin sets it again, and her own file resets it last."""
    def allowed():
        with failing(daemon, "stopped"):
            return {u for u in ("alice", "bob", "carol", "dave") if login(u)[0]}

    assert allowed() == {"bob", "carol"}
    (daemon.config_dir / "user.d/carol.conf").unlink()
    daemon.write_config()               # and no main [View] any more
    daemon.manager().ReloadConfig()
    assert allowed() == {"alice", "bob", "dave"}


@pytest.mark.daemon_config(files=POLICY, ExcludeUsers="dave")
def test_the_rule_holds_before_the_daemons_first_start_since_boot(daemon, profile):
    """A reboot empties /run: until nsmanagerd starts again, the module follows the copy the
    daemon keeps under /var/lib, range and rule alike; where none was ever published, a login
    without its view is allowed."""
    daemon.stop_daemon()
    sb_module.LOGIN_FILTER.unlink()
    assert "LOGIN_WITHOUT_VIEW=restricted" in sb_module.LOGIN_FILTER_PERSISTENT.read_text()
    p, log = run_with_syslog(["runuser", "-l", "alice", "-c", f"touch {marker('alice')}"], sb_module.BASE / "syslog")
    assert p.returncode != 0 and not marker("alice").exists(), p.stdout + p.stderr
    assert any("Refusing the session of user 'alice' without its view (LoginWithoutView=restricted" in x for x in log), log
    assert login("bob")[0]
    # dave is outside the range by the copy too: no bus call (the bus stopped would cost the timeout).
    with contextlib.ExitStack() as stack:
        os.kill(daemon.process("dbus-daemon").pid, signal.SIGSTOP)
        stack.callback(os.kill, daemon.process("dbus-daemon").pid, signal.SIGCONT)
        start = time.monotonic()
        assert login("dave")[0]
        assert time.monotonic() - start < TIMEOUT
    sb_module.LOGIN_FILTER_PERSISTENT.unlink()
    p, log = run_with_syslog(["runuser", "-l", "alice", "-c", "true"], sb_module.BASE / "syslog")
    assert p.returncode == 0, p.stdout + p.stderr
    assert any("LoginWithoutView=allow, none published" in x for x in log), log
    daemon.restart_daemon()
    assert sb_module.LOGIN_FILTER.exists() and sb_module.LOGIN_FILTER_PERSISTENT.exists()


@pytest.mark.daemon_config(files=POLICY)
def test_a_module_that_cannot_be_loaded_locks_nobody_out(daemon, pam_dir, pam_module):
    """The package's control ignores what a module that cannot be loaded answers
    (module_unknown): with pam_nsmanager.so missing, root, alice (whose view is mandatory) and
    bob still log in. `required` would lock out everybody, root included: the reason the
    package does not install it."""
    services = PamServices(pam_dir, pam_module)
    missing = sb_module.BASE / "no-such-dir" / "pam_nsmanager.so"
    try:
        for control, expect in ((PROFILE, True), ("required", False)):
            services.install("runuser-l", text=re.sub(r"\S*pam_nsmanager\.so\S*( debug)?", str(missing),
                                                      with_profile(services.text_of("nsm-runuser-l")).replace(
                                                          PROFILE, control)))
            for user in ("root", "alice", "bob"):
                ran, ns = login(user)
                assert ran == expect, (control, user)
                if ran:
                    assert ns == host_ns()
    finally:
        services.restore()


@pytest.mark.parametrize("value", ["allow", "restricted"])
def test_a_failed_setns_follows_the_rule(daemon, profile, value):
    """The namespace fd came, and setns() failed (here: the PAM caller is root in a user
    namespace of its own, without CAP_SYS_ADMIN where the view is): the session fd is closed,
    and the login follows the rule like any other that gets no view, PAM_IGNORE under `allow`
    (not PAM_SESSION_ERR, which the profile would fail)."""
    daemon.write_config(LoginWithoutView=value, extra="[View]\nPrivateTmp=yes\n")
    daemon.manager().ReloadConfig()
    p, log = run_with_syslog(["unshare", "--user", "--map-root-user", "--", "pamtester", "nsm-pamtester-profile",
                              "alice", "open_session", "close_session"], sb_module.BASE / "syslog")
    assert any("Failed to join the user's mount namespace" in x for x in log), log
    assert (p.returncode == 0) == (value == "allow"), p.stdout + p.stderr
    wait_until(lambda: list(namespace_props(daemon, "alice")["Sessions"]) == [], "the unused session to end")


@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_an_unknown_user_follows_the_rule(daemon, profile):
    """A valid name NSS does not know: logged, nothing asked of the daemon, and the rule
    decides (deny here)."""
    p, log = run_with_syslog(["pamtester", "nsm-pamtester-profile", "nsm-nosuchuser", "open_session"],
                             sb_module.BASE / "syslog")
    assert p.returncode != 0, p.stdout + p.stderr
    assert any("User 'nsm-nosuchuser' does not exist." in line for line in log), log
    assert list(daemon.manager().ListNamespaces()) == []


REFUSED_DEFAULT = "Your view of this machine could not be set up. Please contact your administrator."
REFUSED_OWN = "Views are down for maintenance until 14:00 — ops@example.org can help."


@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_a_refused_login_says_one_line(daemon, profile, nsctl):
    """A refused login is told one line through the PAM conversation, as pam_nologin tells
    it, which runuser, su and pamtester show: a neutral sentence, or the administrator's
    LoginRefusedMessage=. Never the reason (the journal has it), nothing for a login that goes
    on, nothing under PAM_SILENT. A text that is not one line of plain text is a
    configuration error."""
    def said(argv):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout(60), stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout + p.stderr

    for text, expected in ((None, REFUSED_DEFAULT), (REFUSED_OWN, REFUSED_OWN)):
        if text:
            daemon.write_config(LoginWithoutView="deny", LoginRefusedMessage=text)
            daemon.manager().ReloadConfig()
        with failing(daemon, "stopped"):
            for argv in (["runuser", "-l", "alice", "-c", "true"], ["su", "-l", "alice", "-c", "true"],
                         ["pamtester", "nsm-pamtester-profile", "alice", "open_session"]):
                rc, out = said(argv)
                assert rc != 0, (argv, out)
                assert out.count(expected) == 1, (argv, out)
                # the reason stays in the journal
                for private in ("LoginWithoutView", "nsmanagerd", "org.example", "namespace"):
                    assert private not in out, (argv, out)
            rc, out = said(["pamtester", "nsm-pamtester-profile", "alice", "open_session(PAM_SILENT)"])
            assert rc != 0 and expected not in out, out
            rc, out = said(["runuser", "-l", "root", "-c", "true"])
            assert rc == 0 and expected not in out, out
    rc, out = said(["runuser", "-l", "bob", "-c", "true"])
    assert rc == 0 and expected not in out, out

    for bad in ("tab\there", "back\\slash", "x" * 513):
        daemon.write_config(LoginWithoutView="deny", LoginRefusedMessage=bad)
        p = nsctl("verify", "--config", str(daemon.config_file))
        assert p.returncode == 1 and re.search(r"nsmanagerd\.conf:\d+: .* is not one line", p.stderr), p.stderr


def forwarded(port: int, target: socket.socket) -> bool:
    """Whether a connection to localhost:port reaches `target` (a listening socket)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout(2)):
            target.settimeout(timeout(2))
            try:
                conn, _ = target.accept()
                conn.close()
                return True
            except (TimeoutError, socket.timeout):
                return False
    except OSError:
        return False


def port_listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.daemon_config(files=POLICY, OperationTimeoutSec="1s")
def test_ssh_runs_nothing_for_a_refused_login(daemon, profile):
    """OpenSSH does not end the connection when the PAM session fails: it restricts the
    session and exits when a command would run. With the daemon stopped, alice (a mandatory
    view) gets no command run and no port forwarded, and is shown the module's one line;
    bob (none) gets both, in the host's namespace."""
    with Sshd(["alice", "bob"]) as server, socket.socket() as target:
        target.bind(("127.0.0.1", 0))
        target.listen()
        with failing(daemon, "stopped"):
            for user, allowed in (("alice", False), ("bob", True)):
                m = marker(user)
                m.unlink(missing_ok=True)
                p = subprocess.run(server.ssh_argv(user, f"readlink /proc/self/ns/mnt; touch {m}"), capture_output=True,
                                   text=True, timeout=timeout(60), stdin=subprocess.DEVNULL)
                assert m.exists() == allowed, (user, p.returncode, p.stdout, p.stderr, server.log_text()[-3000:])
                if allowed:
                    assert parse_ns(p.stdout) == host_ns()
                else:
                    assert p.returncode != 0
                    # sshd shows the module's line with its login messages, then ends
                    assert (p.stdout + p.stderr).count(REFUSED_DEFAULT) == 1, p.stdout + p.stderr
                m.unlink(missing_ok=True)
                # A tunnel: forwarding is granted after authentication, before the session's
                # command; a restricted session refuses it.
                port = free_port()
                argv = server.ssh_argv(user, "")[:-2] + ["-N", "-o", "ExitOnForwardFailure=no", "-L",
                                                         f"127.0.0.1:{port}:127.0.0.1:{target.getsockname()[1]}",
                                                         f"{user}@127.0.0.1"]
                tunnel = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
                try:
                    # Listening locally means ssh has authenticated (-L binds once the
                    # connection is up); then whether the far end lets the forward through.
                    wait_until(lambda: port_listening(port) or tunnel.poll() is not None, f"{user}'s tunnel", wait=20)
                    assert forwarded(port, target) == allowed, (user, server.log_text()[-3000:])
                finally:
                    tunnel.kill()
                    tunnel.wait()
        assert "pam_open_session" in server.log_text()
