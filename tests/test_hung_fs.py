# SPDX-License-Identifier: LGPL-2.1-or-later
"""A hung file system or a greedy user never stalls the daemon for everyone else.

Every login goes through one daemon: whatever one user's view holds, no other user's call
may wait on it. The hung file system is a FUSE server of the tests' own (tests/fuse-hang.c)
that never answers, mounted with allow_other as `sshfs -o allow_other` would be:

  never-read     requests are never read: a process waiting for one can be killed
  read-no-reply  FUSE_INIT answered, then every request read and never answered: a process
                 waiting for one cannot be killed until the server dies (a hard NFS mount
                 behaves alike)

Also here: the per-user limits (MaxStuckOperations=, RateLimitBurst=), a ShareSubtree("")
that one stuck view cannot hold up, the crash windows (state saved before the host is
touched; sessions matched by pid and start time; files fsync()ed where the state directory
is not a tmpfs), and losing the system bus.
"""

import json
import os
import re
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

import dbus
import pytest

from caller import assert_ok, call_as
from helpers import (E_LIMIT_EXCEEDED, E_NO_SUCH_NAMESPACE, E_TIMED_OUT, daemon_syscalls, expect_error,
                     ns_path, open_session, processes_of, wait_until)
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, TEST_USERS, build_dir, find_mount, timeout

# OperationTimeoutSec= of these tests, seconds: scaled as the waits are, or under the slower
# ASan build (NSM_TIMEOUT_SCALE=3) "answered within timeout(1)" would not tell a caller that
# was served from one that waited the whole deadline behind a hung mount.
TIMEOUT = int(timeout(2))
FAST = {"OperationTimeoutSec": f"{TIMEOUT}s"}
ALICE_OWN = """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice")
                return polkit.Result.YES;
});
"""


class FuseServer:
    """tests/fuse-hang: mounted at target (in the view of `view`, or on the host), for uid;
    args: what the mode takes besides (the symlink mode's target)."""

    def __init__(self, sb, mode, target, uid, view=None, args=()):
        self.sb, self.target, self.view = sb, target, view
        binary = build_dir() / "tests/fuse-hang"
        assert binary.exists(), f"{binary} is not built"
        argv = [str(binary), mode, target, str(uid), *args]
        # The view's fd is kept: the mount is taken away through it, whatever the daemon does.
        self.fd = sb.open_view_fd(view) if view is not None else None
        if self.fd is not None:
            argv = sb.view_argv(self.fd, argv)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     pass_fds=(self.fd,) if self.fd is not None else ())
        line = self.proc.stdout.readline()
        assert line.strip() == "ready", f"fuse-hang did not start: {line} {self.proc.stderr.read()}"

    def stop(self):
        """Kill the server (the kernel aborts its connection: every waiter gets ENOTCONN) and
        take the dead mount away."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.fd is None:
            subprocess.run(["umount", "-l", self.target], capture_output=True)
        else:
            subprocess.run(self.sb.view_argv(self.fd, ["umount", "-l", self.target]), pass_fds=(self.fd,),
                           capture_output=True)
            os.close(self.fd)
            self.fd = None


@pytest.fixture
def servers():
    started = []
    yield started
    for s in started:
        s.stop()


def daemon_children(sb):
    pid = sb.daemon.pid
    out = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(p))
        except (OSError, ValueError, IndexError):
            pass
    return out


def daemon_fds(sb):
    pid = sb.daemon.pid
    return sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))


def timed(f):
    t = time.monotonic()
    r = f()
    return r, time.monotonic() - t


def others_are_served(sb):
    """bob's namespace created and a session of his opened, each answered within a second."""
    mgr = sb.manager()
    _, took = timed(lambda: mgr.CreateNamespace("bob"))
    assert took < timeout(1), f"bob's CreateNamespace waited {took:.2f}s"
    session = f"hung-fs-test-{time.monotonic_ns()}"
    fd, took = timed(lambda: open_session(mgr, "bob", session))
    os.close(fd)
    assert took < timeout(1), f"bob's OpenSession waited {took:.2f}s"


def alice_fuse_dir():
    d = Path(TEST_USERS["alice"].home) / "fuse"
    d.mkdir(exist_ok=True)
    os.chown(d, TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    return d


@pytest.mark.parametrize("mode", ["never-read", "read-no-reply"])
@pytest.mark.daemon_config(**FAST)
def test_a_hung_fuse_mount_costs_only_its_owner(daemon, polkit_rules, servers, mode):
    sb = daemon
    polkit_rules("50-alice-own", ALICE_OWN)
    sb.manager().CreateNamespace("alice")
    [builder] = daemon_children(sb)
    fds = daemon_fds(sb)
    mounts = sb.mount_count()
    target = alice_fuse_dir()
    servers.append(FuseServer(sb, mode, str(target), TEST_USERS["alice"].uid, view="alice"))

    result = {}

    def alices_call():
        result["r"], result["took"] = timed(lambda: call_as(sb, "alice", "SetPropagation", "ssst", "alice",
                                                            f"{target}/sub", "private", 0))
    t = threading.Thread(target=alices_call)
    t.start()
    time.sleep(0.3)
    others_are_served(sb)          # meanwhile: nobody else waits
    t.join(timeout(TIMEOUT + 15))
    assert result["r"].get("error") == E_TIMED_OUT, result
    assert "did not finish" in result["r"]["message"]
    assert result["took"] < TIMEOUT + timeout(2), f"the answer came after {result['took']:.2f}s"
    if mode == "read-no-reply":
        # SIGKILL cannot end it while the server holds the request: it stays, not waited for.
        assert len(daemon_children(sb)) == 2, "the stuck child should still be there"

    # Once the server is gone, everything is back: no child, fd or mount left over.
    for s in servers:
        s.stop()
    servers.clear()
    wait_until(lambda: daemon_children(sb) == [builder], "the stuck child to end", 10)
    assert daemon_fds(sb) == fds, f"fds: before {fds}, after {daemon_fds(sb)}"
    assert sb.mount_count() == mounts
    assert_ok(call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "shared", 0), "alice, afterwards")


@pytest.mark.daemon_config(OperationTimeoutSec="60s")
def test_a_queued_call_times_out_from_its_arrival(daemon, polkit_rules, servers):
    """The deadline counts from a call's arrival, time in its namespace's queue included: a
    call of alice's waiting behind one stuck on her hung FUSE mount is answered TimedOut at
    its own deadline, without ever starting, while the stuck one still runs; other users'
    calls are answered meanwhile. The two calls get different deadlines from a reload of
    OperationTimeoutSec= between them (it applies to the calls that arrive afterwards)."""
    sb = daemon
    polkit_rules("50-alice-own", ALICE_OWN)
    mgr = sb.manager()
    mgr.CreateNamespace("alice")
    target = alice_fuse_dir()
    servers.append(FuseServer(sb, "never-read", str(target), TEST_USERS["alice"].uid, view="alice"))
    assert is_peer_of_host(sb, "alice", "/mnt")
    stuck, queued = {}, {}

    def alices_call(into, path):
        into["r"], into["took"] = timed(lambda: call_as(sb, "alice", "SetPropagation", "ssst", "alice", path,
                                                        "private", 0))
    first = threading.Thread(target=alices_call, args=(stuck, f"{target}/sub"))
    first.start()
    wait_until(lambda: len(daemon_children(sb)) == 2, "alice's first call to start its helper")
    sb.write_config(OperationTimeoutSec=f"{TIMEOUT}s")
    mgr.ReloadConfig()
    second = threading.Thread(target=alices_call, args=(queued, "/mnt"))
    second.start()
    time.sleep(0.3)
    others_are_served(sb)          # meanwhile: another user's namespace is served
    second.join(timeout(TIMEOUT + 15))
    assert not second.is_alive(), "the queued call was not answered at its deadline"
    assert queued["r"].get("error") == E_TIMED_OUT and "waited" in queued["r"]["message"], queued
    assert TIMEOUT <= queued["took"] < TIMEOUT + timeout(2), f"the answer came after {queued['took']:.2f}s"
    assert first.is_alive(), f"the call in front of it should still be stuck: {stuck}"

    # Once the server is gone the first call ends; the queued one never ran, not even late.
    for s in servers:
        s.stop()
    servers.clear()
    first.join(timeout(15))
    assert "error" in stuck.get("r", {}), stuck
    assert is_peer_of_host(sb, "alice", "/mnt"), "the call that timed out in the queue was applied"
    assert_ok(call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "private", 0), "the same call now")
    assert find_mount(sb.mountinfo("alice"), "/mnt").propagation == "private"


@pytest.mark.daemon_config(MaxStuckOperations="1", **FAST)
def test_stuck_operations_are_capped_per_user(daemon, polkit_rules, servers):
    sb = daemon
    polkit_rules("50-alice-own", ALICE_OWN)
    sb.manager().CreateNamespace("alice")
    target = alice_fuse_dir()
    servers.append(FuseServer(sb, "read-no-reply", str(target), TEST_USERS["alice"].uid, view="alice"))
    r = call_as(sb, "alice", "SetPropagation", "ssst", "alice", f"{target}/a", "private", 0)
    assert r.get("error") == E_TIMED_OUT, r
    r, took = timed(lambda: call_as(sb, "alice", "SetPropagation", "ssst", "alice", f"{target}/b", "private", 0))
    assert r.get("error") == E_LIMIT_EXCEEDED and "MaxStuckOperations" in r["message"], r
    assert took < timeout(2)
    others_are_served(sb)


@pytest.mark.daemon_config(MaxStuckOperations="2", **FAST, files={
    "user.d/alice.conf": "[View]\nHideOtherHomes=yes\nInaccessiblePaths=/srv/secret/file\n"})
def test_stuck_operations_never_refuse_her_next_login_its_policy(daemon, polkit_rules, servers):
    """Her calls stuck on her own hung FUSE mount up to MaxStuckOperations= refuse her next
    calls, but never her next login's view: where logins may go on without a view, a refused
    policy step would be her policy switched off by two timed-out calls."""
    sb = daemon
    polkit_rules("50-alice-own", ALICE_OWN)
    sb.mount_tmpfs("/srv")
    os.makedirs("/srv/secret")
    Path("/srv/secret/file").write_text("the secret\n")
    mgr = sb.manager()
    mgr.CreateNamespace("alice")
    target = alice_fuse_dir()
    servers.append(FuseServer(sb, "read-no-reply", str(target), TEST_USERS["alice"].uid, view="alice"))
    for name in ("a", "b"):
        r = call_as(sb, "alice", "SetPropagation", "ssst", "alice", f"{target}/{name}", "private", 0)
        assert r.get("error") == E_TIMED_OUT, r
    r = call_as(sb, "alice", "SetPropagation", "ssst", "alice", f"{target}/c", "private", 0)
    assert r.get("error") == E_LIMIT_EXCEEDED and "MaxStuckOperations" in r["message"], r

    # Her view goes (the stuck calls keep the old one alive, nothing else); her next login
    # builds a new one, with its policy.
    mgr.RemoveNamespace("alice")
    session = f"stuck-then-login-{time.monotonic_ns()}"
    held = open_session(mgr, "alice", session)
    try:
        assert sb.in_view("alice", ["ls", "-A", "/home"], as_user="alice", check=True).stdout.split() == ["alice"]
        p = sb.in_view("alice", ["cat", "/srv/secret/file"], as_user="alice")
        assert p.returncode != 0 and "secret" not in p.stdout, p
        # her own calls are still refused while those two are stuck
        r = call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "private", 0)
        assert r.get("error") == E_LIMIT_EXCEEDED, r
        others_are_served(sb)
    finally:
        os.close(held)


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nBindPaths=/srv/nfs/alice:/home/%u/nfs\n"}, **FAST)
def test_a_view_source_on_a_dead_server_fails_that_login_only(daemon, servers):
    """A [View] bind source on a hung FUSE mount stands in for homes on a dead NFS server."""
    sb = daemon
    sb.mount_tmpfs("/srv")
    os.makedirs("/srv/nfs")
    servers.append(FuseServer(sb, "read-no-reply", "/srv/nfs", 0))
    mgr = sb.manager()
    result = {}

    def alices_login():
        try:
            result["r"], result["took"] = timed(lambda: mgr.OpenSession("alice", "dead-nfs"))
        except Exception as e:   # noqa: BLE001 — the error is the point
            result["e"] = e
    t = threading.Thread(target=alices_login)
    t.start()
    time.sleep(0.3)
    others_are_served(sb)
    t.join(timeout(TIMEOUT + 15))
    e = result.get("e")
    assert e is not None and e.get_dbus_name() == E_TIMED_OUT, result
    assert "[View] policy" in e.get_dbus_message() or "View" in e.get_dbus_message()
    expect_error(lambda: mgr.GetNamespace("alice"), E_NO_SUCH_NAMESPACE)
    for s in servers:
        s.stop()
    servers.clear()
    wait_until(lambda: not os.path.exists(f"{sb.subtree_root}/alice"), "alice's mount point to go")
    wait_until(lambda: len(daemon_children(sb)) == 1, "the stuck child to end", 10)


@pytest.mark.daemon_config(RateLimitBurst="5", RateLimitIntervalSec="1min")
def test_get_mounts_is_rate_limited_per_caller(daemon):
    sb = daemon
    sb.manager().CreateNamespace("alice")
    for i in range(5):
        assert_ok(call_as(sb, "bob", "GetMounts", "s", "alice"), f"GetMounts {i}")
    r = call_as(sb, "bob", "GetMounts", "s", "alice")
    assert r.get("error") == E_LIMIT_EXCEEDED and "RateLimitBurst" in r["message"], r
    # others, and root, are not affected
    assert_ok(call_as(sb, "carol", "GetMounts", "s", "alice"), "carol's GetMounts")
    for _ in range(10):
        sb.manager().GetMounts("alice")


def read_to_end(r, seconds=10):
    """What comes on pipe r until its writers are all gone; None if one stays longer than
    the timeout."""
    data = b""
    deadline = time.monotonic() + timeout(seconds)
    while select.select([r], [], [], max(0, deadline - time.monotonic()))[0]:
        chunk = os.read(r, 65536)
        if not chunk:
            return data
        data += chunk
    return None


# A user's attach of argv[3:] to argv[1]'s namespace: OpenAttach, its stdin closed, the status
# read to the end; prints {"ok": pid, "status": line} or the error, as JSON. argv[2]: "wait" to
# read the status, else the status fd is inherited by a child that keeps it open and prints
# its pid.
OPEN_ATTACH = r"""
import json, os, sys
import dbus
target, how, command = sys.argv[1], sys.argv[2], sys.argv[3:]
m = dbus.Interface(dbus.SystemBus().get_object("org.example.NSManager", "/org/example/NSManager"),
                   "org.example.NSManager.Manager")
try:
    pid, i, o, e, status = m.OpenAttach(target, command, ["PATH=/usr/bin:/bin"], "/", dbus.UInt64(0))
except dbus.exceptions.DBusException as x:
    print(json.dumps({"error": x.get_dbus_name(), "message": x.get_dbus_message()}))
    sys.exit(0)
os.close(i.take())
status = status.take()
line = b""
while True:
    chunk = os.read(status, 100)
    if not chunk:
        break
    line += chunk
print(json.dumps({"ok": int(pid), "status": line.decode()}))
"""


def attach_as(sb, user, target):
    """user's attach of `true` to target's namespace, from a process of its own: the result,
    and what came on the status fd (b"" if the command never started). Users call OpenAttach
    (the daemon makes the fds); root calls Attach with its own."""
    if user != "root":
        p = sb.run_as(user, ["/usr/bin/python3", "-c", OPEN_ATTACH, target, "wait", "true"], wait=60)
        assert p.returncode == 0, p.stderr
        result = json.loads(p.stdout)
        return result, result.pop("status", "").encode()
    null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    r, w = os.pipe()
    try:
        result = call_as(sb, user, "Attach", "sasasshhhh", target, ["true"], [], "/",
                         *[{"fd": null}] * 3, {"fd": w}, pass_fds=(null, w))
        os.close(w)
        w = -1
        status = read_to_end(r)
        if status is None:
            pytest.fail("the status pipe stayed open", pytrace=False)
        return result, status
    finally:
        for fd in (null, r, w):
            if fd >= 0:
                os.close(fd)


@pytest.mark.daemon_config(RateLimitBurst="3", RateLimitIntervalSec="1min")
def test_attach_is_rate_limited_per_caller(daemon):
    """alice's Attach to her own namespace beyond RateLimitBurst= is refused with
    LimitExceeded, and her command does not start; bob's Attach to his, and root's, go on."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    sb.manager().CreateNamespace("bob")
    for i in range(3):
        result, status = attach_as(sb, "alice", "alice")
        assert_ok(result, f"alice's Attach {i}")
        assert status == b"EXITED 0\n", status
    result, status = attach_as(sb, "alice", "alice")
    assert result.get("error") == E_LIMIT_EXCEEDED and "RateLimitBurst" in result["message"], result
    assert status == b"", f"the refused command ran: {status!r}"
    # others, and root, are not affected
    result, status = attach_as(sb, "bob", "bob")
    assert_ok(result, "bob's Attach")
    assert status == b"EXITED 0\n", status
    for i in range(5):
        result, status = attach_as(sb, "root", "alice")
        assert_ok(result, f"root's Attach {i}")


def alices_hung_file_server(sb, servers):
    """alice's namespace, and her FUSE mount whose 'file' never answers a read: its
    directory and its server."""
    sb.manager().CreateNamespace("alice")
    target = alice_fuse_dir()
    server = FuseServer(sb, "file-read-no-reply", str(target), TEST_USERS["alice"].uid)
    servers.append(server)
    return target, server


def hold_pipe_from_a_hung_mapping(file, w, user):
    """A process of user's writing into pipe w from a mapping of `file`, on a FUSE mount
    whose server never answers reads: the mapping's page is not there, so the copy faults,
    inside the pipe's lock, and the fault waits for the server. Returned once it waits."""
    writer = subprocess.Popen(
        ["/usr/bin/python3", "-c",
         "import mmap, os, sys\n"
         "f = open(sys.argv[1], 'rb')\n"
         "m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)\n"
         "os.write(int(sys.argv[2]), m)\n",
         str(file), str(w)], pass_fds=(w,), user=user.uid, group=user.gid, stderr=subprocess.DEVNULL)
    wait_until(lambda: "pipe_write" in Path(f"/proc/{writer.pid}/stack").read_text(),
               "the write to wait in the fault, inside the pipe's lock")
    return writer


def daemon_children_in(sb, function):
    """The daemon's children whose kernel stack is in `function`."""
    found = []
    for pid in daemon_children(sb):
        try:
            if function in Path(f"/proc/{pid}/stack").read_text():
                found.append(pid)
        except OSError:
            pass
    return found


# alice's OpenAttach of argv[1:]: her end of the command's stdin goes to fd 3 of a child that
# she leaves running (it writes from her hung mapping); prints the pid, then the status line.
OPEN_ATTACH_HOLDING_STDIN = r"""
import mmap, os, sys
import dbus
m = dbus.Interface(dbus.SystemBus().get_object("org.example.NSManager", "/org/example/NSManager"),
                   "org.example.NSManager.Manager")
pid, i, o, e, status = m.OpenAttach("alice", sys.argv[2:], ["PATH=/usr/bin:/bin"], "/", dbus.UInt64(0))
stdin, status = i.take(), status.take()
if os.fork() == 0:
    f = open(sys.argv[1], "rb")
    mp = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
    os.write(stdin, mp)
    os._exit(0)
os.close(stdin)
print(int(pid), flush=True)
line = b""
while True:
    chunk = os.read(status, 100)
    if not chunk:
        break
    line += chunk
print(line.decode(), end="", flush=True)
"""


def test_a_pipe_held_by_a_write_from_a_hung_mapping_stalls_nobody(daemon, servers):
    """Writing to a pipe takes the pipe's lock, whatever the flags, and a writer holds it
    while it copies from its own memory; closing a pipe's last copy takes it too. Alice writes
    into her command's stdin, the pipe the daemon made for OpenAttach, from a mapping of a file
    on her FUSE mount whose server never answers reads: her write waits in the page fault,
    holding the lock. The daemon let go of its copies right after the reply, so nothing of it
    waits there: others are served, and once her server is gone her command's status comes."""
    sb = daemon
    alice = TEST_USERS["alice"]
    target, server = alices_hung_file_server(sb, servers)
    client = subprocess.Popen(sb._setpriv("alice") + ["/usr/bin/python3", "-c", OPEN_ATTACH_HOLDING_STDIN,
                                                      str(target / "file"), "sh", "-c", "sleep 0.5"],
                              env=sb.user_env("alice"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid = int(client.stdout.readline())
        wait_until(lambda: any("pipe_write" in Path(f"/proc/{p}/stack").read_text()
                               for p in processes_of(alice.uid, "python3")),
                   "alice's write to wait in the fault, inside the pipe's lock")
        wait_until(lambda: not Path(f"/proc/{pid}").exists() or
                   Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZD",
                   "alice's command to end")
        time.sleep(0.3)
        others_are_served(sb)
        # (Without systemd her command is the daemon's child: it waits there, in its exit.)
        assert not [c for c in daemon_children_in(sb, "pipe") if c != pid], \
            "a process of the daemon waits for alice's pipe"
        server.stop()
        out, err = client.communicate(timeout=timeout(20))
        assert out == "EXITED 0\n", (out, err)
    finally:
        server.stop()
        if client.poll() is None:
            client.kill()
            client.wait()


@pytest.mark.daemon_config(RateLimitBurst="0", MaxStuckOperations="0",
                           files={"user.d/alice.conf": "[View]\nPrivateTmp=yes\n"})
def test_zero_means_no_limit(daemon, polkit_rules):
    """RateLimitBurst=0 and MaxStuckOperations=0 turn the limit off (as systemd's settings
    do), rather than refusing every call and every login with a [View] policy."""
    sb = daemon
    polkit_rules("50-alice-own", ALICE_OWN)
    sb.manager().CreateNamespace("alice")                 # its [View] policy runs as alice's
    for i in range(20):
        assert_ok(call_as(sb, "bob", "GetMounts", "s", "alice"), f"GetMounts {i}")
    assert_ok(call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "shared", 0), "alice's own change")


# ---- ShareSubtree("", P) with one view stuck ----

def setup_share(sb, servers):
    """alice's and bob's views; /srv/share on a tmpfs; bob's /srv/share covered by a FUSE
    mount that never answers."""
    sb.mount_tmpfs("/srv")
    os.makedirs("/srv/share")
    mgr = sb.manager()
    mgr.CreateNamespace("alice")
    mgr.CreateNamespace("bob")
    servers.append(FuseServer(sb, "never-read", "/srv/share", TEST_USERS["bob"].uid, view="bob"))


def is_peer_of_host(sb, user, path):
    host = find_mount(sb.mountinfo(), path)
    view = find_mount(sb.mountinfo(user), path)
    return host is not None and view is not None and host.shared and view.peer_group == host.peer_group


@pytest.mark.daemon_config(**FAST)
def test_share_with_one_view_stuck(daemon, servers):
    sb = daemon
    setup_share(sb, servers)
    e, took = timed(lambda: expect_error(lambda: sb.manager().ShareSubtree("", "/srv/share"), E_TIMED_OUT))
    assert "bob" in e.get_dbus_message() and "alice" not in e.get_dbus_message()
    assert took < TIMEOUT + timeout(2)
    # the finished views are applied, the host's share saved
    assert is_peer_of_host(sb, "alice", "/srv/share")
    assert "/srv/share" in [str(p) for p in sb.properties()["SharedSubtrees"]]
    # bob's view joins at the next start, once its file system answers again
    for s in servers:
        s.stop()
    servers.clear()
    sb.restart_daemon()
    wait_until(lambda: is_peer_of_host(sb, "bob", "/srv/share"), "bob's view to join at the next start")
    assert is_peer_of_host(sb, "alice", "/srv/share")


@pytest.mark.daemon_config(**FAST)
def test_share_survives_a_kill_in_the_middle(daemon, servers):
    """SIGKILL while one view has not joined yet: the host's share and that view's join are
    saved before anything is done, and the next start finishes the job."""
    sb = daemon
    setup_share(sb, servers)
    t = threading.Thread(target=lambda: expect_error(lambda: sb.manager().ShareSubtree("", "/srv/share"),
                                                      "org.freedesktop.DBus.Error.NoReply",
                                                      "org.freedesktop.DBus.Error.Disconnected", E_TIMED_OUT))
    t.start()
    wait_until(lambda: is_peer_of_host(sb, "alice", "/srv/share"), "alice's view to join")
    sb.kill_daemon()
    t.join(timeout(30))
    for s in servers:
        s.stop()
    servers.clear()
    sb.start_daemon(write=False)
    wait_until(lambda: is_peer_of_host(sb, "bob", "/srv/share"), "bob's view to join at the next start")
    assert "/srv/share" in [str(p) for p in sb.properties()["SharedSubtrees"]]


# ---- crash windows ----

# A login's session: OpenSession from a process of its own, its leader, which holds the
# session (its fd) until its stdin closes.
SESSION_HOLDER = r"""
import os, sys
import dbus
bus_name, path, interface, user, session = sys.argv[1:6]
manager = dbus.Interface(dbus.SystemBus().get_object(bus_name, path), interface)
_, fd, session_fd = manager.OpenSession(user, session)
os.close(fd.take())
held = session_fd.take()
print("open", flush=True)
sys.stdin.read()
"""


def hold_session(user, session):
    p = subprocess.Popen(["/usr/bin/python3", "-c", SESSION_HOLDER, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, user,
                          session], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "open", f"OpenSession({user}, {session}) failed"
    return p


def session_ids(sb, user):
    return sorted(str(s) for s in sb.properties(ns_path(user))["Sessions"])


def namespace_gone(sb, user):
    try:
        sb.manager().GetNamespace(user)
    except dbus.exceptions.DBusException as e:
        assert e.get_dbus_name() == E_NO_SUCH_NAMESPACE, e
        return True
    return False


def test_a_restored_session_is_the_same_process(daemon):
    """nsmanagerd is killed (SIGKILL) while two sessions of alice's are open; the leader of
    one ends while the daemon is down, and its pid goes to an unrelated process (clone3 with
    set_tid: tests/spawn-at-pid.c). The restarted daemon matches a session by its leader's
    pid and start time: it closes that session instead of taking the new process for its
    leader (which would keep the namespace alive as long as that process lives), keeps the
    other one, and still sees that one's leader end."""
    sb = daemon
    gone, alive = hold_session("alice", "gone"), hold_session("alice", "alive")
    pid, started = gone.pid, start_time(gone.pid)
    reused = None
    try:
        assert session_ids(sb, "alice") == ["alive", "gone"]
        sb.kill_daemon()
        gone.stdin.close()
        gone.wait(timeout(10))
        reused = subprocess.Popen([str(build_dir() / "tests/spawn-at-pid"), str(pid), "sleep", "600"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert reused.stdout.readline().strip() == "ready", f"pid {pid} could not be had again: {reused.stderr.read()}"
        assert start_time(pid) != started, "the same start time: not another process"

        sb.start_daemon(write=False)
        assert session_ids(sb, "alice") == ["alive"], "a reused pid was taken for the session's leader"
        alive.stdin.close()
        alive.wait(timeout(10))
        wait_until(lambda: session_ids(sb, "alice") == [], "the session to end with its leader")
        wait_until(lambda: namespace_gone(sb, "alice"), "the namespace to go after StopDelaySec=")
        assert reused.poll() is None, "the process with the reused pid should still run"
    finally:
        for p in (gone, alive):
            if p.poll() is None:
                p.kill()
                p.wait()
        if reused is not None:
            if reused.poll() is None:
                os.kill(pid, signal.SIGKILL)     # its child, the sleep; then it exits
            reused.wait(timeout(10))
            reused.stdout.close()
            reused.stderr.close()


def start_time(pid):
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[19])


@pytest.fixture
def ext4_instance(instance):
    """A daemon instance whose StateDirectory is on ext4 (a loop image on the sandbox's
    tmpfs), where fsync matters."""
    sb = instance
    image = sb.instance / "state.img"
    subprocess.run(["truncate", "-s", "32M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    mnt = sb.instance / "ext4"
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], check=True)
    sb.track_mount(str(mnt))
    sb.ext4_state = mnt / "state"
    yield sb


def syscalls_during(sb, action):
    """The fsync/rename calls nsmanagerd (and its children) makes during action()."""
    return daemon_syscalls(sb, action, "fsync,fdatasync,rename")


def test_state_is_fsynced_where_it_is_not_a_tmpfs(ext4_instance):
    sb = ext4_instance
    sb.start_daemon(StateDirectory=str(sb.ext4_state))
    sb.mount_tmpfs("/srv")
    os.makedirs("/srv/shared-at-runtime")
    trace = syscalls_during(sb, lambda: (sb.manager().CreateNamespace("alice"),
                                         sb.manager().ShareSubtree("", "/srv/shared-at-runtime")))
    # every state file is synced before it replaces the old one: the namespace's, and the
    # list of subtrees shared at run time (not what is kept in /run, a tmpfs)
    renames = [(src, dst) for src, dst in re.findall(r'rename\("([^"]+)", "([^"]+)"\)', trace)
               if dst.startswith(str(sb.ext4_state))]
    assert any(dst.endswith("/namespaces/alice") for _, dst in renames), trace
    assert any(dst.endswith("/shared-subtrees") for _, dst in renames), trace
    assert trace.count("fsync(") >= 2 * len(renames), f"renames without fsync:\n{trace}"
    sb.stop_daemon()
    sb.start_daemon(write=False)
    assert "/srv/shared-at-runtime" in [str(p) for p in sb.properties()["SharedSubtrees"]]
    sb.manager().RemoveNamespace("alice")


@pytest.mark.daemon_config()
def test_state_on_a_tmpfs_is_not_fsynced(daemon):
    sb = daemon
    sb.mount_tmpfs("/srv")
    os.makedirs("/srv/shared-at-runtime")
    trace = syscalls_during(sb, lambda: (sb.manager().CreateNamespace("alice"),
                                         sb.manager().ShareSubtree("", "/srv/shared-at-runtime")))
    assert "rename(" in trace, trace
    assert "fsync(" not in trace, f"fsync on a tmpfs is wasted time:\n{trace}"


def test_losing_the_bus_ends_the_daemon(daemon):
    """When the system bus goes, nsmanagerd exits cleanly within a second (namespaces stay
    pinned); started again, it serves the same namespaces."""
    sb = daemon
    mgr = sb.manager()
    mgr.CreateNamespace("alice")
    before = sb.view_ns_id("alice")
    proc = sb.daemon

    def daemon_gone():
        t = time.monotonic()
        proc.wait(timeout(5))
        assert time.monotonic() - t < timeout(1), "nsmanagerd lingered without a bus"
        assert proc.returncode == 0, f"nsmanagerd exited with {proc.returncode}"
    sb.restart_bus(before_start=daemon_gone)
    sb.daemon = None
    sb.start_daemon(write=False)
    assert sb.view_ns_id("alice") == before
    assert "Lost the connection to the system bus" in sb.daemon_log_text()
