# SPDX-License-Identifier: LGPL-2.1-or-later
"""pytest fixtures for nsmanager: a throwaway machine with a real bus, polkit and daemon.

Run as root with Debian's pytest:  /usr/bin/python3 -m pytest -v tests
(NSM_BUILD_DIR=DIR picks another Meson build directory; NSM_TIMEOUT_SCALE=N
stretches every wait, e.g. for ASan builds.)

Importing this file moves the whole pytest process into a mount namespace of its
own with every mount private (tests/sandbox.py), so nothing a test mounts reaches
the machine. The machine the tests see is described in tests/sandbox.py: test
users in bind-mounted copies of passwd/group/shadow, tmpfs /home, /mnt, /media, /run,
/tmp (whatever the machine has mounted under /mnt and /media taken away first, so the
suite passes whatever they hold), an overlay on /var/lib, the project's bus policy, a
real dbus-daemon --system and a real polkitd. The session fails at its end if anything
appeared in the machine's own /, /etc, /srv or /var/lib (a view's root is the machine's
root: write only below the sandbox's tmpfs mounts, or a tmpfs of the test's own).

Test files, one per feature:
    test_core.py           start-up, views (created, looked at, propagating, removed),
                           the interface as busctl shows it
    test_refusals.py       refusals of a user or a session id (each feature's own refusals
                           are in its file)
    test_restart.py        crashes and restarts, the state directory, losing the bus
    test_propagation.py    ShareSubtree, EnslaveSubtree, SetPropagation, BindMount, Unmount,
                           GetMounts: the shared-subtrees story and the kernel's examples
    test_retroactive_share.py  ShareSubtree("") reaching the views that exist
    test_own_view.py       what a user may do to her own view: each rule, each attack
    test_view_policy.py    the [View] policy, and its paths never following a user's link
    test_config.py         the configuration taken whole or not at all, nsctl verify,
                           start-ups that change nothing, --release
    test_polkit.py         who may call what: root's methods, polkit's actions and rules
    test_can.py            Can(): what a call would get from polkit
    test_attach.py         Attach in the sandbox (test_nspawn_attach.py: under systemd)
    test_pam.py            logins through the real PAM stack (runuser, su, sshd, threads)
    test_login_without_view.py  LoginWithoutView=
    test_private_socket.py the private socket of the PAM module's logins
    test_login_cost.py     work a login must not do
    test_hung_fs.py        a hung file system or a greedy user stalls nobody else
    test_stray_fds.py      no fd a user sends reaches the daemon
    test_bus_broker.py     the bus policy on dbus-broker
    test_mount_events.py   Subscribe, MountsChanged, nsctl mounts --follow
    test_eject.py          Eject() and ReleaseWithHost=
    test_names.py          names as any bytes reach every reader whole; GetMountsEx, the
                           id-taking methods; Eject never of the host's own devices
    test_logging.py        logs, LogControl1, audit records
    test_leaks.py          fds, mounts and children back to where they were
    test_nsctl.py          the CLI: verbs, output, refusals, attach on a terminal
    test_cockpit.py        the Cockpit page in a real browser
    test_interface.py      the checked-in XML and docs/interface.md match the daemon
    test_install.py, test_deb.py   meson install, the Debian package
    test_host_alone.py     tools/test leaves the machine as it was: units, host keys, versions
    test_nspawn.py, test_nspawn_attach.py, test_qemu.py   Debian booted with systemd; other kernels
    test_sandbox.py        the sandbox and helpers themselves; the suite on a machine whose
                           /mnt and /media hold mounts
    test_house.py          the shape of the code: no circle in src/ (tools/include-graph)

Test users (sandbox.TEST_USERS; password: NAME-secret, e.g. alice-secret):
    alice 2001, bob 2002, carol 2003 (member of group nsadmin, gid 2100),
    dave 2004, erin 3000000000 (above 2^31), svc 500 (a system user, below
    MinUID). Shell /bin/bash,
    home /home/NAME (on the sandbox's tmpfs).

Fixtures
--------
sandbox   (session) the sandbox.Sandbox. Useful methods:
            bus(), manager(), namespace(path), properties(path)  dbus-python
            in_view(user, argv, as_user=None, input=None)  run inside user's view
                (setns through the fd of OpenMountNamespace) -> CompletedProcess
            run(argv), run_as(user, argv)       on the host (as_user: setpriv)
            mountinfo(view=None), mount_count(view=None), findmnt_json(view=None),
            findmnt(view=None), view_ns_id(user)
            mount_tmpfs(path, files={...}, view=None), mount_cd(path), umount(path),
            track_mount(path)   (test mounts are unmounted at the end of the test)
            overlay_dir("/etc/pam.d")  writable copy over a machine directory
            set_polkit_rule(name, js or None)  (restarts polkitd)
            start_daemon(**settings), stop_daemon(sig), kill_daemon(), restart_daemon(),
            write_config_file("user.d/alice.conf", text), daemon_log_text()
            attributes: subtree_root, state_dir, config_file, config_dir, daemon_log,
            daemon (the Popen), daemon_exit_codes, users
bus       (session) the sandbox's dbus-python connection to its system bus.
instance  (function) a fresh daemon instance (new SubtreeRoot, StateDirectory,
          configuration directory) that is NOT started: call
          sandbox.start_daemon(...) yourself (e.g. with notify=True, or after
          writing group.d/user.d files). Same cleanup as `daemon`.
daemon    (function) like `instance`, and nsmanagerd started with the sandbox's
          config (SubtreeRoot, StateDirectory in the instance, SharedSubtrees=/mnt,
          MinUID=1000, StopDelaySec=1s) plus the settings of the test's marker
              @pytest.mark.daemon_config(ExcludeUsers="dave", ViewPropagation="private",
                                         extra_config="[View]\\nPrivateTmp=yes",
                                         files={"user.d/alice.conf": "..."})
          Yields the Sandbox. At the end: every namespace is removed through the bus,
          the daemon gets SIGTERM, the test's mounts are unmounted, what the test
          added to /mnt and the homes is removed (they serve the whole session), and
          the test ERRORS if mounts leaked into the host namespace or processes were
          left behind. The daemon's log is attached to the report of a failed test.
manager   (function, needs daemon) dbus.Interface of org.example.NSManager.Manager.
signals   (function, needs daemon) a sandbox.SignalRecorder of the daemon's signals:
          signals.wait_for("NamespaceNew", lambda args: args[0] == "alice").
users     dict name -> sandbox.TestUser.
nsctl     function(*args, as_user=None, input=None, env=None) -> CompletedProcess
          running build/src/nsctl/nsctl on the host (as_user: unprivileged).
pam_module  A copy of build/src/pam/pam_nsmanager.so every user can read (fails if not built).
polkit_rules  function(name, javascript): a polkit rule for this test (removed after it).
pam_dir   (session) Path of the writable copy of /etc/pam.d bound over the sandbox's; install
          a test's own PAM services in it with helpers.PamServices.
dbus_error  function(exc) -> the D-Bus error name of a dbus.exceptions.DBusException.
machine   (module) a machine.Machine: Debian 12 booted with systemd as PID 1 in
          systemd-nspawn, the build installed as an administrator would
          (tests/machine.py), booted once for each module that asks for it and shared by
          its tests; a test that stops a service starts it again, one that has to end a
          container boots its own (machine.booted()). Skips against a sanitizer build.
          A failed test's report gets the container's console and journal.
alice_session  (function, needs machine) a machine.Login: alice logged in with su -l on
          the module's machine; the login of an earlier test while it lasts, else a new
          one.

Constants: sandbox.BUS_NAME, MANAGER_PATH, MANAGER_IFACE, NAMESPACE_IFACE,
ERROR_PREFIX ("org.example.NSManager.Error.").

Helpers (tests/helpers.py): the contract's error names E_NO_SUCH_USER, E_NO_SUCH_NAMESPACE,
E_NO_SUCH_SESSION, E_USER_EXCLUDED, E_INVALID_PATH, E_INVALID_MODE, E_BUSY, E_TIMED_OUT,
E_LIMIT_EXCEEDED, E_MOUNT_CHANGED (NSM_ERRORS), E_ACCESS_DENIED, E_INTERACTIVE_AUTHORIZATION_REQUIRED,
E_INVALID_ARGS, E_FAILED; expect_error(call, *names) (refused with one of the names and
a message), wait_until(predicate, what, wait=10, interval=0.02, diag=None), ns_path(user),
create(sb, *users), processes_of(uid, comm).
The booted-Debian harness: tests/machine.py (fixtures machine, alice_session above).

Every test stands alone: it passes when selected by itself (-k) and in any order. Share
what is expensive (the sandbox, a booted container) through fixtures, never state one
test leaves for the next.
"""

import contextlib
import os
import shutil
import stat
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine as machine_module  # noqa: E402
import sandbox as sandbox_module  # noqa: E402

# Before anything can start a thread: unshare(CLONE_NEWNS) needs a single-threaded process.
if os.geteuid() == 0:
    sandbox_module.enter_private_mount_namespace()


def pytest_configure(config):
    # pytest's temporary directories go to the sandbox's /tmp (a tmpfs of the sandbox, gone
    # when it ends). Without a basetemp of our own pytest would number them under
    # /tmp/pytest-of-root and clean up old ones at exit, after the sandbox took its /tmp
    # away: a traceback after a green run. With one, it empties it when it starts and
    # leaves it at exit.
    if config.option.basetemp is None:
        config.option.basetemp = "/tmp/nsmanager-pytest"
    config.addinivalue_line(
        "markers", "daemon_config(**settings): [Manager] settings (and extra_config=, files=) "
        "for the `daemon` fixture")
    for layer in LAYERS:
        config.addinivalue_line("markers", f"{layer}: a test of the {layer} layer (conftest.layer_of)")


# The layers of the suite (tools/test --layer NAME, pytest -m NAME). "unit" is meson's
# (meson test --suite unit), the C tests; the rest are pytest's, each test in one:
#   static   reads the tree and the build, needs no sandbox (the house, the interface files)
#   sandbox  the throwaway machine of tests/sandbox.py: bus, polkitd, daemon, PAM
#   booted   Debian 12 booted with systemd in systemd-nspawn, and the Debian package
#   qemu     Debian 12 booted under qemu with Debian's kernels
#   browser  the Cockpit page in headless Chromium
LAYERS = ("static", "sandbox", "booted", "qemu", "browser")
LAYER_OF_FILE = {"test_qemu.py": "qemu", "test_cockpit.py": "browser", "test_deb.py": "booted"}


def layer_of(item) -> str:
    named = LAYER_OF_FILE.get(item.path.name)
    if named:
        return named
    if "machine" in item.fixturenames:
        return "booted"
    return "sandbox" if "sandbox" in item.fixturenames else "static"


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(getattr(pytest.mark, layer_of(item)))
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="nsmanager tests need root (they build a sandbox machine)")
        for item in items:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)
    if report.failed and report.when == "call":
        m = getattr(item, "funcargs", {}).get("machine")
        if isinstance(m, machine_module.Machine):
            report.sections.append(("container console (last 100 lines)", m.console_text(100)))
            report.sections.append(("container journal (last 150 lines)", m.journal(lines=150)))
    if report.failed:
        sb = getattr(item, "_nsm_sandbox", None)
        if sb is not None:
            log = getattr(item, "_nsm_daemon_log", None) or (sb.daemon_log if sb.instance else None)
            if log is not None and log.exists():
                lines = log.read_text(errors="replace").splitlines()
                report.sections.append(("nsmanagerd log (last 200 lines)", "\n".join(lines[-200:])))


@pytest.fixture(scope="session")
def sandbox():
    sb = sandbox_module.Sandbox()
    sb.setup()
    yield sb
    sb.teardown()


@pytest.fixture(scope="session")
def bus(sandbox):
    return sandbox.bus()


@pytest.fixture
def users():
    return dict(sandbox_module.TEST_USERS)


# The sandbox's /mnt, /media and homes serve every test of the session: what a test leaves
# in them (a mount point mount_tmpfs made, a file) would be there for the next.
def _shared_dirs() -> dict[str, set[str]]:
    dirs = [d for d in sandbox_module.MACHINE_MOUNT_DIRS if os.path.isdir(d)]
    dirs += [u.home for u in sandbox_module.TEST_USERS.values() if os.path.isdir(u.home)]
    return {d: set(os.listdir(d)) for d in dirs}


def _remove_tree(path: str, dev: int) -> None:
    """rm -r that never crosses into a mount (a leftover mount is the leak check's business)."""
    st = os.lstat(path)
    if st.st_dev != dev or (stat.S_ISDIR(st.st_mode) and os.path.ismount(path)):
        return
    if stat.S_ISDIR(st.st_mode):
        for name in os.listdir(path):
            _remove_tree(os.path.join(path, name), dev)
        with contextlib.suppress(OSError):
            os.rmdir(path)
    else:
        os.unlink(path)


def _begin_instance(request, sandbox) -> dict[str, set[str]]:
    sandbox.new_instance(request.node.name)
    request.node._nsm_sandbox = sandbox
    return _shared_dirs()


def _end_instance(request, sandbox, shared_before: dict[str, set[str]]):
    log = sandbox.daemon_log if sandbox.instance else None
    problems = sandbox.cleanup_instance()
    request.node._nsm_daemon_log = log
    # After the unmounts: remove what the test added to /mnt and the homes.
    for d, names in shared_before.items():
        dev = os.lstat(d).st_dev
        for name in set(os.listdir(d)) - names:
            _remove_tree(os.path.join(d, name), dev)
    if problems:
        pytest.fail("cleanup after the test:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.fixture
def instance(request, sandbox):
    shared = _begin_instance(request, sandbox)
    yield sandbox
    _end_instance(request, sandbox, shared)


@pytest.fixture
def daemon(request, sandbox):
    marker = request.node.get_closest_marker("daemon_config")
    settings = dict(marker.kwargs) if marker else {}
    files = settings.pop("files", {})
    shared = _begin_instance(request, sandbox)
    for relpath, text in files.items():
        sandbox.write_config_file(relpath, text)
    try:
        sandbox.start_daemon(**settings)
    except sandbox_module.DaemonError as e:
        request.node._nsm_daemon_log = sandbox.daemon_log
        sandbox.cleanup_instance()
        pytest.fail(f"nsmanagerd did not start: {e}", pytrace=False)
    yield sandbox
    _end_instance(request, sandbox, shared)


@pytest.fixture
def manager(daemon):
    return daemon.manager()


@pytest.fixture
def signals(daemon):
    return daemon.signals(interface=sandbox_module.MANAGER_IFACE)


@pytest.fixture
def dbus_error():
    return sandbox_module.dbus_error_name


@pytest.fixture
def nsctl(sandbox):
    binary = sandbox_module.nsctl_binary()
    if not binary.exists():
        pytest.fail(f"{binary} is not built", pytrace=False)

    def run(*args, as_user=None, input=None, env=None, wait=30):
        argv = [binary, *args]
        if as_user is not None:
            return sandbox.run_as(as_user, argv, input=input, env=env, wait=wait)
        return sandbox.run(argv, input=input, env=env, wait=wait)
    return run


@pytest.fixture
def pam_module(sandbox):
    """The sandbox's copy of the built module, which every user can read (see
    Sandbox.setup): the checkout may lie below a directory only root may enter."""
    path = sandbox_module.pam_module()
    if not path.exists():
        pytest.fail(f"{path} is not built", pytrace=False)
    return path


@pytest.fixture(scope="module")
def machine(sandbox, tmp_path_factory):
    """Debian 12 booted with the build installed (tests/machine.py), once per module.
    (After the sandbox: pytest's temporary directories belong on its /tmp.)"""
    machine_module.require_plain_build()
    with machine_module.booted(tmp_path_factory.mktemp("nspawn"), prepare=machine_module.install_as_admin) as m:
        yield m


@pytest.fixture(scope="module")
def _alice_logins(machine):
    logins = []
    yield logins
    for login in logins:
        login.logout()


@pytest.fixture
def alice_session(machine, _alice_logins):
    """alice logged in on the module's machine: the login of an earlier test while it
    lasts, else a new one."""
    if not _alice_logins or not _alice_logins[-1].alive():
        _alice_logins.append(machine_module.Login(machine))
    return _alice_logins[-1]


@pytest.fixture(scope="session")
def pam_dir(sandbox):
    """A writable copy of the sandbox's /etc/pam.d, bound over it once, before any daemon
    instance (so the per-test mount checks do not count it) and undone by the sandbox's
    teardown. Not sandbox.overlay_dir(): that reuses one source directory per target and
    deletes it when called again for /etc/pam.d (tests/test_sandbox.py does), which would
    pull the ground from under this one."""
    existing = getattr(sandbox, "_nsm_pam_dir", None)
    if existing is not None:
        return existing
    src = sandbox_module.BASE / "test-pam" / "pam.d"
    if src.exists():
        shutil.rmtree(src)
    src.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree("/etc/pam.d", src, symlinks=True)
    os.chmod(src, 0o755)
    sandbox._mount(src, "/etc/pam.d", None, sandbox_module.MS_BIND)   # listed for teardown
    sandbox._nsm_pam_dir = src
    return src


@pytest.fixture
def polkit_rules(sandbox):
    """rules(name, javascript): install /etc/polkit-1/rules.d/NAME.rules for this test
    (polkitd is restarted each time, so it is in effect when this returns)."""
    written = []

    def add(name, javascript):
        written.append(name)
        sandbox.set_polkit_rule(name, javascript)

    yield add
    for name in written:
        sandbox.set_polkit_rule(name, None)
