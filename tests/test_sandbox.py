# SPDX-License-Identifier: LGPL-2.1-or-later
"""The test sandbox itself (tests/sandbox.py) and the shared helpers (tests/helpers.py):
no nsmanagerd needed."""

import os
import re
import shutil
import subprocess
import sys
import time

import dbus
import pytest

import helpers
import sandbox as sbm


def test_in_own_mount_namespace(sandbox):
    assert sbm.mntns_id() != sbm.mntns_id(os.getppid()), "the tests run in the caller's mount namespace"
    assert sbm.mntns_id() == sbm._entered_namespace
    root = sbm.find_mount(sandbox.mountinfo(), "/")
    assert not root.slave, "/ is a slave of the machine: our mounts could be seen there"


def test_users_resolve(sandbox):
    for u in sbm.TEST_USERS.values():
        out = subprocess.run(["getent", "passwd", u.name], capture_output=True, text=True).stdout
        assert out.startswith(f"{u.name}:x:{u.uid}:{u.gid}:"), out
        assert os.stat(u.home).st_uid == u.uid
    assert "carol" in subprocess.run(["getent", "group", "nsadmin"], capture_output=True, text=True).stdout
    r = sandbox.run_as("carol", ["id", "-Gn"])
    assert "nsadmin" in r.stdout.split()
    # a password that PAM (unix_chkpwd reads shadow) accepts
    if os.path.exists("/usr/bin/pamtester"):
        r = sandbox.run(["pamtester", "-v", "login", "alice", "authenticate"], input="alice-secret\n")
        assert r.returncode == 0, r.stdout + r.stderr


def test_system_bus(sandbox):
    r = sandbox.run(["busctl", "--system", "list", "--no-pager"])
    assert r.returncode == 0 and "org.freedesktop.DBus" in r.stdout, r.stderr
    assert "org.freedesktop.PolicyKit1" in r.stdout
    # an unprivileged user may not take our name; the policy is the project's own
    r = sandbox.run_as("alice", ["python3", "-c",
                                 "import dbus; dbus.SystemBus().request_name('org.example.NSManager')"])
    assert r.returncode != 0 and "AccessDenied" in r.stderr


def test_root_may_own_the_name(sandbox):
    conn = dbus.bus.BusConnection(sbm.SYSTEM_BUS_ADDRESS)
    try:
        assert conn.request_name(sbm.BUS_NAME) == dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER
    finally:
        conn.close()


def test_instance_leak_detection(instance):
    """cleanup_instance() reports a mount nobody tracked, and removes it."""
    target = instance.instance / "stray"
    target.mkdir()
    sbm.sys_mount("tmpfs", target, "tmpfs")
    problems = instance.cleanup_instance()
    assert any("leaked" in p and str(target) in p for p in problems), problems
    assert sbm.find_mount(instance.mountinfo(), str(target)) is None
    instance.new_instance("after-leak")


def test_helpers_clean_up(instance):
    before = len(instance.mountinfo())
    marker, content = instance.mount_cd("/mnt/cd")
    assert open(marker).read() == content
    instance.mount_tmpfs("/home/alice/x")
    assert len(instance.mountinfo()) == before + 2
    assert instance.cleanup_instance() == []
    assert len(instance.mountinfo()) == before
    instance.new_instance("after")


def test_signal_recorder(sandbox):
    with sandbox.signals() as rec:
        conn = dbus.bus.BusConnection(sbm.SYSTEM_BUS_ADDRESS)
        try:
            conn.request_name(sbm.BUS_NAME)
            msg = dbus.lowlevel.SignalMessage(sbm.MANAGER_PATH, sbm.MANAGER_IFACE, "NamespaceNew")
            msg.append("alice", dbus.ObjectPath("/org/example/NSManager/user/_2001"), signature="so")
            conn.send_message(msg)
            sig = rec.wait_for("NamespaceNew", lambda a: a[0] == "alice", timeout_sec=5)
            assert sig[3] == ("alice", "/org/example/NSManager/user/_2001")
        finally:
            conn.close()


def test_overlay_dir(sandbox):
    """A writable copy over /etc/pam.d, undone at the end: test_pam.py's copy is under it,
    and later tests must see that one, not this."""
    before = sorted(os.listdir("/etc/pam.d"))
    d = sandbox.overlay_dir("/etc/pam.d")
    try:
        (d / "nsm-selftest").write_text("auth required pam_permit.so\n")
        assert os.path.exists("/etc/pam.d/nsm-selftest")
        assert os.path.exists("/etc/pam.d/login")
    finally:
        sandbox.undo_overlay("/etc/pam.d")
    assert sorted(os.listdir("/etc/pam.d")) == before


@pytest.mark.parametrize("who", ["alice", "carol"])
def test_run_as_environment(sandbox, who):
    r = sandbox.run_as(who, ["sh", "-c", "echo $HOME $USER; id -u"])
    assert r.stdout.split() == [f"/home/{who}", who, str(sbm.TEST_USERS[who].uid)]


def test_error_names_are_the_daemons():
    """helpers' error names are every one of the project's in the table of src/shared/nsm-error.c,
    no more; and no other source spells one (every name comes from the table)."""
    table = (sbm.REPO / "src/shared/nsm-error.c").read_text()
    defined = {"org.example.NSManager.Error." + n for n in re.findall(r'NSM_ERROR_PREFIX "(\w+)"', table)}
    assert defined, "no NSM_ERROR_PREFIX names in src/shared/nsm-error.c"
    assert set(helpers.NSM_ERRORS) == defined, \
        f"only in helpers: {set(helpers.NSM_ERRORS) - defined}, only in the daemon: {defined - set(helpers.NSM_ERRORS)}"
    assert len(helpers.NSM_ERRORS) == len(defined)
    elsewhere = [str(p.relative_to(sbm.REPO)) for p in (sbm.REPO / "src").rglob("*.[ch]")
                 if p.name != "nsm-error.c" and re.search(r"NSManager\.Error\.[A-Z]", p.read_text())]
    assert not elsewhere, f"error names outside the table: {elsewhere}"


def test_expect_error_fails_when_it_should():
    def refuse(name, message):
        def call():
            raise dbus.exceptions.DBusException(message, name=name)
        return call
    e = helpers.expect_error(refuse(helpers.E_BUSY, "in use"), helpers.E_INVALID_PATH, helpers.E_BUSY)
    assert e.get_dbus_message() == "in use"
    with pytest.raises(AssertionError, match="expected .*InvalidPath, got .*Busy"):
        helpers.expect_error(refuse(helpers.E_BUSY, "in use"), helpers.E_INVALID_PATH)
    with pytest.raises(AssertionError, match="without a message"):
        helpers.expect_error(refuse(helpers.E_BUSY, ""), helpers.E_BUSY)
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        helpers.expect_error(lambda: None, helpers.E_BUSY)


def test_wait_until_returns_the_value_or_fails():
    values = iter([0, None, "", "here"])
    assert helpers.wait_until(lambda: next(values), "a value", interval=0) == "here"
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception, match=r"waiting for nothing\nsaw: never"):
        helpers.wait_until(lambda: False, "nothing", wait=0.2, interval=0.01, diag=lambda: "saw: never")
    assert time.monotonic() - start >= 0.2


# A sandbox of its own, nested in the suite's, set up from a copy of the checkout at `top`:
# it must still see the checkout's files once /tmp, /run and /home are covered.
NESTED = r"""
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tests"))
import sandbox
sb = sandbox.Sandbox(polkit=False)
sb.users = {}           # the suite's passwd already has the test users and group
sandbox.TEST_GROUPS = {}
try:
    sb.setup()
except RuntimeError as e:
    print("refused:", e)
    sys.exit(3)
try:
    policy = sandbox.REPO / "dbus" / "org.example.NSManager.conf"
    print("repo", sandbox.REPO, policy.is_file(), sandbox.mntns_id())
    sb.bus()
finally:
    sb.teardown(check=True)
"""


@pytest.mark.parametrize("made, top", [("/tmp/nsm-checkout", "/tmp/nsm-checkout/src"),
                                       ("/home/nsm-dev", "/home/nsm-dev/nsmanager"),
                                       ("/mnt/nsm-checkout", "/mnt/nsm-checkout"),
                                       ("/media/nsm-checkout", "/media/nsm-checkout")])
def test_checkout_location(sandbox, made, top):
    """A checkout under /tmp or /home (which the sandbox covers with tmpfs) is kept visible;
    one under /mnt or /media (which it empties) is refused at once, saying why."""
    for sub in ("tests", "dbus"):
        os.makedirs(f"{top}/{sub}", exist_ok=True)
    try:
        subprocess.run(["cp", sbm.REPO / "tests" / "sandbox.py", f"{top}/tests/"], check=True)
        subprocess.run(["cp", sbm.REPO / "dbus" / "org.example.NSManager.conf", f"{top}/dbus/"], check=True)
        p = subprocess.run([sys.executable, "-c", NESTED, top], capture_output=True, text=True,
                           timeout=sbm.timeout(60), env=dict(os.environ, NSM_BUILD_DIR=str(sbm.build_dir())))
        if top.startswith(("/mnt/", "/media/")):
            assert p.returncode == 3, p.stdout + p.stderr
            assert f"is under /{top.split('/')[1]}" in p.stdout and "move the checkout elsewhere" in p.stdout, p.stdout
        else:
            assert p.returncode == 0, p.stdout + p.stderr
            repo, seen, ns = p.stdout.split()[1:]
            assert repo == top and seen == "True", p.stdout
            assert int(ns) != sbm.mntns_id(), "the nested sandbox ran in the suite's namespace"
    finally:
        shutil.rmtree(made, ignore_errors=True)


# ---- the machine the suite runs on does not matter ----

def test_the_machines_own_mounts_under_mnt_and_media_are_taken_away(sandbox):
    """Whatever the machine has mounted on /mnt or /media (a cloud machine's scratch disk, a
    CD) is gone from the sandbox's table, covered or not: each is the sandbox's tmpfs and
    nothing else, so no view copies the machine's mounts and no count of mounts holds them."""
    mounts = sandbox.mountinfo()
    for d in sbm.MACHINE_MOUNT_DIRS:
        assert [(m.target, m.fstype, m.source) for m in mounts if sbm._is_under(m.target, d)] == [(d, "tmpfs", "tmpfs")]


def in_a_machine_of_its_own(prepare: str, argv: list, wait: float) -> subprocess.CompletedProcess:
    """argv in a mount namespace of its own made from the machine's (the one pytest was started
    in, not the sandbox's), after the shell commands `prepare`: mounts standing in for what the
    machine has mounted. They are made after unshare, so never in the machine's own namespace
    (the script stops if it still is); argv runs in the checkout."""
    fd = sbm.machine_namespace_fd()
    machine = os.readlink(f"/proc/self/fd/{fd}")
    script = f'[ "$(readlink /proc/self/ns/mnt)" != "$1" ] || exit 99\n{prepare}\ncd "$2"\nshift 2\nexec "$@"'
    return subprocess.run(["nsenter", f"--mount=/proc/self/fd/{fd}", "unshare", "--mount", "--propagation", "private",
                           "sh", "-ec", script, "sh", machine, str(sbm.REPO), *argv],
                          pass_fds=(fd,), capture_output=True, text=True, timeout=sbm.timeout(wait))


# What a cloud machine has: a disk on /mnt itself, with something below it; a CD under /media.
MACHINE_MOUNTS = """
mount -t tmpfs -o size=1m nsm-machine-mnt /mnt
mkdir /mnt/disk
mount -t tmpfs -o size=1m nsm-machine-disk /mnt/disk
mount -t tmpfs -o size=1m nsm-machine-media /media
mkdir /media/cdrom
mount -t tmpfs -o size=1m nsm-machine-cd /media/cdrom
"""
# The tests that failed on a machine whose /mnt is a mount point ("/mnt is mounted 2 times on
# the host"), the one of /media, and the sandbox's own promise above.
HOST_DEPENDENT = [
    "tests/test_sandbox.py::test_the_machines_own_mounts_under_mnt_and_media_are_taken_away",
    "tests/test_nsctl.py::test_json_matches_dbus",
    "tests/test_nsctl.py::test_mounts_tree",
    "tests/test_nsctl.py::test_change_verbs",
    "tests/test_propagation.py::test_story_2_share_mnt_retroactively",
    "tests/test_pam.py::test_desktop_dropin_media_appears_in_session",
]


def test_the_machines_own_mnt_and_media_do_not_matter(sandbox):
    """The suite passes whatever the machine holds on /mnt and /media: the tests that depend on
    them run again, in a pytest of their own started on a machine whose /mnt and /media are
    mount points with mounts below them (tmpfs mounts in a namespace made from the machine's
    before that pytest builds its sandbox)."""
    p = in_a_machine_of_its_own(MACHINE_MOUNTS, [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                                 *HOST_DEPENDENT], wait=900)
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    assert p.returncode == 0 and f"{len(HOST_DEPENDENT)} passed" in summary, \
        f"exit status {p.returncode}:\n{p.stdout[-6000:]}\n{p.stderr[-2000:]}"


# A sandbox set up and torn down on a machine whose /srv a "test" wrote into.
LEAVES_A_DIRECTORY = r"""
import os, sys
sys.path.insert(0, "tests")
import sandbox
sb = sandbox.Sandbox(polkit=False)
sb.setup()
os.mkdir("/srv/nsm-left-behind")
try:
    sb.teardown(check=True)
except sandbox.SandboxLeak as e:
    print(e)
    sys.exit(3)
"""


def test_teardown_names_what_was_left_on_the_machines_disk(sandbox):
    """A view's root is the machine's root: a test that writes outside the sandbox's tmpfs
    mounts leaves it on the machine's disk. The session's teardown fails, naming it. (On a
    tmpfs standing in for the machine's /srv: nothing is written on its disk here.)"""
    p = in_a_machine_of_its_own("mount -t tmpfs -o size=1m nsm-machine-srv /srv",
                                [sys.executable, "-c", LEAVES_A_DIRECTORY], wait=60)
    assert p.returncode == 3, f"exit status {p.returncode}: {p.stdout} {p.stderr}"
    assert "created on the machine's own file system in /srv: nsm-left-behind" in p.stdout, p.stdout


# The tests that look for processes of a test user (helpers.processes_of): alice (uid 2001)
# runs a `sleep`, or a `python3`, and the test waits for it to start or to end.
PROCESS_DEPENDENT = [
    "tests/test_nsctl.py::test_attach_sigint_is_forwarded",
    "tests/test_nsctl.py::test_attach_client_gone_hangs_up",
]


def test_a_stray_process_of_a_test_uid_does_not_matter(sandbox):
    """The machine may run processes of the test users' uids that are none of the sandbox's:
    another sandbox's alice, a real user 2001. With a `sleep` and a `python3` of uid 2001
    running outside its tree, a pytest of its own passes the tests that wait for alice's sleep
    to start and to end: each counts only what its sandbox started."""
    alice = sbm.TEST_USERS["alice"]
    ids = [f"--reuid={alice.uid}", f"--regid={alice.gid}", "--clear-groups", "--"]
    strays = [subprocess.Popen(["setpriv", *ids, *argv], stdin=subprocess.DEVNULL)
              for argv in (["sleep", "900"], [sys.executable, "-c", "import time; time.sleep(900)"])]
    try:
        p = in_a_machine_of_its_own("", [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                         *PROCESS_DEPENDENT], wait=600)
        summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        assert p.returncode == 0 and f"{len(PROCESS_DEPENDENT)} passed" in summary, \
            f"exit status {p.returncode}:\n{p.stdout[-6000:]}\n{p.stderr[-2000:]}"
        assert all(s.poll() is None for s in strays), "a test signalled a process it did not start"
    finally:
        for s in strays:
            s.kill()
            s.wait()
