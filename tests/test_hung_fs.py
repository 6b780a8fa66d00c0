# SPDX-License-Identifier: LGPL-2.1-or-later
"""A hung file system or a greedy user never stalls the daemon for everyone else.

Every login goes through one daemon: whatever one user's view holds, no other user's call
may wait on it. The hung file system is a FUSE server of the tests' own (tests/helpers/fuse-hang.c)
that never answers, mounted with allow_other as `sshfs -o allow_other` would be:

  never-read     requests are never read: a process waiting for one can be killed
  read-no-reply  FUSE_INIT answered, then every request read and never answered: a process
                 waiting for one cannot be killed until the server dies (a hard NFS mount
                 behaves alike)

Also here: the per-user limits (MaxStuckOperations=, RateLimitBurst=), a ShareSubtree("")
that one stuck view cannot hold up (nor a kill in its middle: its state is saved before the
host is touched), a user's hung FUSE mount on or above a shared subtree where the view
builder looks, reading mount tables without asking any file system, and a flood of GetMounts.
Crashes and restarts in general are test_restart.py's.
"""

import json
import os
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from caller import assert_ok, call_as
from helpers import (E_LIMIT_EXCEEDED, E_NO_SUCH_NAMESPACE, E_TIMED_OUT, expect_error, open_session, processes_of,
                     wait_until)
from sandbox import TEST_USERS, build_dir, find_mount, timeout

# OperationTimeoutSec= of these tests, seconds: scaled as the waits are, or under the slower
# ASan build (NSM_TIMEOUT_SCALE=3) "answered within timeout(1)" would not tell a caller that
# was served from one that waited the whole deadline behind a hung mount.
TIMEOUT = int(timeout(2))
FAST = {"OperationTimeoutSec": f"{TIMEOUT}s"}
ALICE = TEST_USERS["alice"]
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
    # The user lookup's child of CreateNamespace may still be ending (a loaded machine): the
    # baseline is the builder alone, and the fds of that moment.
    [builder] = wait_until(lambda: len(daemon_children(sb)) == 1 and daemon_children(sb),
                           "the daemon's children to be the builder alone")
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
    wait_until(lambda: daemon_children_in(sb, "fuse"), "alice's call to wait for her FUSE server")
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


@pytest.mark.daemon_config(OperationTimeoutSec="60s", args=["--debug"])   # --debug: each call's arrival is logged
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
    arrived = sb.daemon_log_text().count("SetPropagation() from ")
    second = threading.Thread(target=alices_call, args=(queued, "/mnt"))
    second.start()
    wait_until(lambda: sb.daemon_log_text().count("SetPropagation() from ") > arrived,
               "the daemon to receive alice's second call")
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
    wait_until(lambda: daemon_children_in(sb, "fuse"), "alice's login to wait for the dead server")
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
        others_are_served(sb)      # answered after its end: the daemon has handled what came before
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


# ---- a hung FUSE mount of hers where the builder looks ----

def hang_alices_fuse_over_a_share(sb, servers, share, target, private):
    """Root shares `share` host-wide; alice mounts a FUSE server that never answers on
    `target` in her view (allow_other unless `private`), which reaches the host. Then
    nobody else's login waits, nor does the daemon's next start."""
    mgr = sb.manager()
    mgr.ShareSubtree("", share)
    mgr.CreateNamespace("alice")
    servers.append(FuseServer(sb, "read-no-reply", target, ALICE.uid, view="alice",
                              args=("private",) if private else ()))
    host = find_mount(sb.mountinfo(), target)
    assert host is not None and host.fstype.startswith("fuse"), "her FUSE mount did not reach the host"
    others_are_served(sb)
    # …nor a start of the daemon, which makes sure every shared subtree is a shared mount
    sb.stop_daemon()
    sb.start_daemon(write=False, wait=10)
    others_are_served(sb)


@pytest.mark.parametrize("private", [False, True], ids=["allow_other", "private"])
@pytest.mark.daemon_config(OperationTimeoutSec="2s")
def test_a_hung_fuse_mount_on_a_shared_subtree_stalls_no_login(daemon, servers, private):
    """Root shares alice's /srv/alice with everybody (ShareSubtree("", …)); she mounts a
    FUSE file system that never answers (allow_other, as sshfs users do) on it in her view,
    and it propagates to the host, covering the shared path. Every login's view is built
    by asking about that path: nobody else's login may wait on her server. Without
    allow_other (any user's plain fusermount3) root may not even look at it."""
    sb = daemon
    sb.mount_tmpfs("/srv")
    shared = Path("/srv/alice")
    shared.mkdir()
    os.chown(shared, ALICE.uid, ALICE.gid)
    hang_alices_fuse_over_a_share(sb, servers, str(shared), str(shared), private)
    # …and root's share stays: her mount on it is no reason to forget it
    assert str(shared) in [str(p) for p in sb.properties()["SharedSubtrees"]], \
        "the daemon dropped root's share of /srv/alice at its start"


@pytest.mark.parametrize("private", [False, True], ids=["allow_other", "private"])
@pytest.mark.daemon_config(OperationTimeoutSec="2s")
def test_a_fuse_mount_above_a_shared_subtree_stalls_no_login(daemon, servers, private):
    """Root shares /mnt/rt-alice/pub, below a directory of alice's under the shared /mnt.
    She mounts a FUSE file system that never answers on /mnt/rt-alice in her view; it
    reaches the host and every view, and the shared path now leads through her server —
    or, without allow_other, to a file system where root may not look."""
    sb = daemon
    mine = Path("/mnt/rt-alice")
    try:
        (mine / "pub").mkdir(parents=True)
        os.chown(mine, ALICE.uid, ALICE.gid)
        sb.track_mount(str(mine / "pub"))    # the host's bind of it onto itself
        hang_alices_fuse_over_a_share(sb, servers, str(mine / "pub"), str(mine), private)
    finally:
        for s in servers:
            s.stop()
        servers.clear()
        subprocess.run(["umount", "-l", str(mine / "pub")], capture_output=True)
        shutil.rmtree(mine, ignore_errors=True)


RENAME_EXCHANGE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) < 0:
    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
"""


@pytest.mark.parametrize("how", ["link", "exchange"])
@pytest.mark.daemon_config(OperationTimeoutSec="2s")
def test_a_fuse_mount_moved_onto_the_way_to_a_shared_subtree_stalls_no_login(daemon, servers, how):
    """Root shares /mnt/rt-alice/a/b/pub, two directories below one of alice's. Her FUSE
    mount that never answers is on /mnt/rt-alice/w/b, nowhere near the share, when the
    builder reads the host's mount table. Then, without mounting anything (no mount event:
    a table read earlier stays as it was), she puts it on the way: `link` swaps her
    directory a for a symlink to w (the shared path now leads through her server);
    `exchange` swaps a and w (renameat2 RENAME_EXCHANGE: her mount is now at
    /mnt/rt-alice/a/b, the share's mount at /mnt/rt-alice/w/b/pub). Neither may make a
    login wait, nor the daemon's next start: the builder, and the daemon sharing the path
    again, must look at the mounts they walk through, not at paths."""
    sb = daemon
    mine = Path("/mnt/rt-alice")
    share = mine / "a" / "b" / "pub"
    try:
        share.mkdir(parents=True)
        (mine / "w" / "b").mkdir(parents=True)
        for d in (mine, mine / "a", mine / "a" / "b", mine / "w", mine / "w" / "b"):
            os.chown(d, ALICE.uid, ALICE.gid)
        sb.track_mount(str(share))    # the host's bind of it onto itself
        mgr = sb.manager()
        mgr.ShareSubtree("", str(share))
        mgr.CreateNamespace("alice")
        servers.append(FuseServer(sb, "read-no-reply", str(mine / "w" / "b"), ALICE.uid, view="alice"))
        host = find_mount(sb.mountinfo(), str(mine / "w" / "b"))
        assert host is not None and host.fstype.startswith("fuse"), "her FUSE mount did not reach the host"
        others_are_served(sb)    # the builder has read the table with her mount in it
        sb.manager().RemoveNamespace("bob")

        if how == "link":
            sb.run_as("alice", ["mv", str(mine / "a"), str(mine / "a.old")], check=True)
            sb.run_as("alice", ["ln", "-s", "w", str(mine / "a")], check=True)
        else:
            sb.run_as("alice", ["/usr/bin/python3", "-c", RENAME_EXCHANGE, str(mine / "a"), str(mine / "w")],
                      check=True)
        moved = find_mount(sb.mountinfo(), str(mine / "a" / "b"))
        assert how == "link" or (moved is not None and moved.fstype.startswith("fuse")), \
            "the exchange did not put her mount on the way"
        others_are_served(sb)
        # …nor the daemon's next start, which shares the path on the host again, in its loop
        sb.stop_daemon()
        sb.start_daemon(write=False, wait=10)
        others_are_served(sb)
    finally:
        # her directories back where they were (nothing here asks her server), then her
        # server and the share's mount away
        if (mine / "a.old").exists():
            (mine / "a").unlink()
            (mine / "a.old").rename(mine / "a")
        elif how == "exchange" and find_mount(sb.mountinfo(), str(mine / "a" / "b")) is not None:
            subprocess.run(["/usr/bin/python3", "-c", RENAME_EXCHANGE, str(mine / "a"), str(mine / "w")], check=True)
        for s in servers:
            s.stop()
        servers.clear()
        subprocess.run(["umount", "-l", str(share)], capture_output=True)
        shutil.rmtree(mine, ignore_errors=True)


# ---- reading mount tables: hung file systems, floods ----

@pytest.mark.daemon_config(OperationTimeoutSec="2s")
def test_reading_a_view_with_a_hung_fuse_mount_waits_for_nothing(daemon, servers):
    """GetMounts and NMounts of alice's view while it holds a FUSE mount that never answers:
    mountinfo is read without asking any file system."""
    sb = daemon
    mgr = sb.manager()
    mgr.CreateNamespace("alice")
    target = Path(ALICE.home) / "rt-hang"
    target.mkdir(exist_ok=True)
    os.chown(target, ALICE.uid, ALICE.gid)
    try:
        servers.append(FuseServer(sb, "read-no-reply", str(target), ALICE.uid, view="alice"))
        for who in ("bob", "root"):
            t = time.monotonic()
            r = call_as(sb, who, "GetMounts", "s", "alice")
            assert "ok" in r and any(m[4] == str(target) for m in r["ok"][0]), r
            # A bound that proves "never blocks" (the hung server never answers), scaled for
            # a loaded machine: not a measure of speed.
            assert time.monotonic() - t < timeout(5)
        t = time.monotonic()
        sb.properties(f"/org/example/NSManager/user/_{ALICE.uid}")["NMounts"]
        assert time.monotonic() - t < timeout(1)
        others_are_served(sb)
    finally:
        for s in servers:
            s.stop()
        servers.clear()
        target.rmdir()


# As bob: the whole burst the rate limit allows, at once, without waiting for answers.
GET_MOUNTS_FLOOD = r"""
import sys
import dbus
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib
n = int(sys.argv[1])
DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
mgr = dbus.Interface(bus.get_object("org.example.NSManager", "/org/example/NSManager"),
                     "org.example.NSManager.Manager")
loop = GLib.MainLoop()
left = [n]
def done(*a):
    left[0] -= 1
    if left[0] == 0:
        loop.quit()
for _ in range(n):
    mgr.GetMounts("", reply_handler=done, error_handler=done, timeout=60)
print("sent", flush=True)
loop.run()
"""


def test_a_get_mounts_flood_does_not_stall_logins(daemon):
    """GetMounts is open to everyone and each call is a request to the one view builder,
    which every login also waits for. bob sends the whole burst RateLimitBurst= allows at
    once: carol's login must not wait behind it. The host's table is made bigger first."""
    sb = daemon
    sb.mount_tmpfs("/srv")
    for i in range(60):
        sb.mount_tmpfs(f"/srv/{i}")
    assert sb.mount_count() > 60
    flood = sb.run_popen(sb._setpriv("bob") + ["/usr/bin/python3", "-c", GET_MOUNTS_FLOOD, "200"],
                         stdout=subprocess.PIPE, text=True, env=sb.user_env("bob"))
    assert flood.stdout.readline().strip() == "sent"
    t = time.monotonic()
    session = f"rt-{time.monotonic_ns()}"
    fd = open_session(sb.manager(), "carol", session)
    took = time.monotonic() - t
    os.close(fd)
    flood.wait(timeout=60)
    assert took < timeout(1), f"carol's login waited {took:.2f}s behind bob's GetMounts"


# ---- crash windows ----
