# SPDX-License-Identifier: LGPL-2.1-or-later
"""Attacks on a user's own view, tried after the rules of own-view-rules.h landed.

Each test is an attack by alice (manage-own granted by a polkit rule standing in for an
active session), by bob or dave (without it), or by a user with a FUSE mount of their own,
through the real polkitd and the real kernel; it asserts the safe outcome. What each one
found is told in its docstring.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from caller import call_as
from helpers import E_ACCESS_DENIED, E_LIMIT_EXCEEDED, open_session
from sandbox import TEST_USERS, find_mount
from test_hung_fs import FuseServer, others_are_served, servers  # noqa: F401 (fixture)
from test_own_view import (SECRET_POLICY, alice_dir, alice_file, as_user, is_mount_point, own,  # noqa: F401 (fixtures)
                           refused, srv)

ALICE = TEST_USERS["alice"]


# ---- /proc: files a user "owns" that setuid programs trust ----

WAIT_THEN_EXEC = 'while [ ! -e "$1" ]; do sleep 0.05; done; shift; exec "$@"'


def alice_process_in_view(sb, go, argv):
    """A process of alice's in her view that waits for the file `go`, then execs argv (a
    setuid program keeps the pid, and /proc/PID stays the same directory)."""
    fd = sb.open_view_fd("alice")
    p = subprocess.Popen(sb.view_argv(fd, ["sh", "-c", WAIT_THEN_EXEC, "sh", str(go), *argv], as_user="alice"),
                         pass_fds=(fd,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=sb.user_env("alice"))
    os.close(fd)
    return p


def fusermount_unmounts(sb, target):
    """alice binds a file of hers over /proc/PID/mounts of her own process (the file is hers
    while the process is), which then execs the setuid fusermount3 -u TARGET: /etc/mtab is a
    link to /proc/self/mounts, and fusermount3 unmounts what mtab says is her FUSE mount.
    Returns the outcome of the BindMount call."""
    fake = alice_file(sb, "mounts", f"fake {target} fuse.fake rw,nosuid,nodev,user_id={ALICE.uid},"
                                    f"group_id={ALICE.gid} 0 0\n")
    go = sb.scratch["alice"] / "go"
    p = alice_process_in_view(sb, go, ["/usr/bin/fusermount3", "-u", "-z", target])
    try:
        result = call_as(sb, "alice", "BindMount", "ssst", "alice", fake, f"/proc/{p.pid}/mounts", 0)
        as_user(sb, "alice", "touch", str(go))
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return result


@pytest.mark.daemon_config(files=SECRET_POLICY)
def test_bind_over_proc_pid_mounts_cannot_undo_the_policy(srv, own):
    """fusermount3, the reference of what a user may do to their own view (docs/security.md),
    refuses to mount over procfs: some of its files are the user's without being theirs to
    fake. A bind over /proc/PID/mounts lets the setuid fusermount3 unmount the [View] policy's
    InaccessiblePaths= cover."""
    sb = own
    result = fusermount_unmounts(sb, "/srv/secret")
    refused(result, "alice binds over /proc/PID/mounts")
    p = sb.in_view("alice", ["cat", "/srv/secret/file"], as_user="alice")
    assert "secret" not in p.stdout, "the policy's cover is gone: alice reads /srv/secret"


def test_bind_over_proc_pid_mounts_cannot_unmount_the_hosts_mounts(own):
    """The same trick on root's /mnt/data: an unmount under the shared /mnt propagates to
    the host and every view."""
    sb = own
    sb.mount_tmpfs("/mnt/data", files={"backup.sh": "root's\n"})
    result = fusermount_unmounts(sb, "/mnt/data")
    refused(result, "alice binds over /proc/PID/mounts")
    assert is_mount_point(sb, None, "/mnt/data"), "root's /mnt/data was unmounted on the host"
    assert is_mount_point(sb, "bob", "/mnt/data")


# ---- Attach: the caller's groups ----

# Run as alice: connects to the bus (the bus driver now names this pid as the sender), then
# forks. The parent execs the setgid-shadow unix_chkpwd, which waits on a pipe; the child
# asks for Attach on the inherited connection and reports what the attached command printed.
ATTACH_AFTER_SETGID = r"""
import os, sys, time
import dbus, dbus.lowlevel
out_path, unix_chkpwd = sys.argv[1:3]
bus = dbus.SystemBus()
hold_r, hold_w = os.pipe()
if os.fork() > 0:
    os.dup2(hold_r, 0)
    os.execv(unix_chkpwd, [unix_chkpwd, "alice", "nullok"])
os.close(hold_r)
time.sleep(0.5)   # the parent is unix_chkpwd by now: egid shadow
out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
msg = dbus.lowlevel.MethodCallMessage("org.example.NSManager", "/org/example/NSManager",
                                      "org.example.NSManager.Manager", "OpenAttach")
msg.append("alice", ["sh", "-c", "id -g; cat /etc/shadow 2>&1"], [], "/", dbus.UInt64(0), signature="sasasst")
try:
    reply = bus.send_message_with_reply_and_block(msg, 30)
    pid, stdin, stdout, stderr, status = reply.get_args_list()
    os.close(stdin.take())
    stdout = stdout.take()
    while True:
        data = os.read(stdout, 65536)
        if not data:
            break
        os.write(out, data)
    os.read(status.take(), 100)   # the command's exit status: it has ended
except dbus.exceptions.DBusException as e:
    os.write(out, ("error " + e.get_dbus_name() + "\n").encode())
os.close(hold_w)          # unix_chkpwd reads EOF and exits
"""


def test_attach_takes_groups_from_nss_not_from_a_setgid_program(own):
    """The contract: Attach runs the command with the uid from the bus and the gid and
    groups NSS gives for it, never re-read from /proc — the caller can exec a setgid program
    meanwhile. With /proc's, alice's command ran as group shadow and read /etc/shadow."""
    sb = own
    out = sb.scratch["alice"] / "attach-out"
    shadow_gid = os.stat("/etc/shadow").st_gid
    assert shadow_gid != 0 and os.stat("/usr/sbin/unix_chkpwd").st_gid == shadow_gid
    p = as_user(sb, "alice", "/usr/bin/python3", "-c", ATTACH_AFTER_SETGID, str(out), "/usr/sbin/unix_chkpwd",
                check=False)
    text = out.read_text() if out.exists() else ""
    assert text, f"the attach client reported nothing: {p.stdout} {p.stderr}"
    assert not text.startswith("error"), text
    assert text.splitlines()[0] == str(ALICE.gid), f"the command ran with gid {text.splitlines()[0]}"
    assert "root:" not in text, "alice's attached command read /etc/shadow"


# ---- SetPropagation / EnslaveSubtree on a path that is no mount point ----

def test_propagation_changes_make_no_mounts_on_the_host(own):
    """Propagation can only be changed on a mount of its own, so the daemon binds a path
    onto itself first. For alice that made a mount on root's directory under the shared
    /mnt — on the host and in every view — which root then cannot remove or rename (EBUSY)
    and which keeps his `umount /mnt/data` busy."""
    sb = own
    sb.mount_tmpfs("/mnt/data")
    for d in ("a", "b", "c"):
        os.makedirs(f"/mnt/data/{d}")
    for what, args in (("SetPropagation private", ("SetPropagation", "ssst", "alice", "/mnt/data/a", "private", 0)),
                       ("SetPropagation shared", ("SetPropagation", "ssst", "alice", "/mnt/data/b", "shared", 0)),
                       ("EnslaveSubtree", ("EnslaveSubtree", "ss", "alice", "/mnt/data/c"))):
        call_as(sb, "alice", *args)
    for d in ("a", "b", "c"):
        assert not is_mount_point(sb, None, f"/mnt/data/{d}"), f"alice put a mount on the host's /mnt/data/{d}"
        assert not is_mount_point(sb, "bob", f"/mnt/data/{d}"), f"alice put a mount on bob's /mnt/data/{d}"


@pytest.mark.daemon_config(MaxUserMounts="2")
def test_propagation_changes_do_not_get_around_max_user_mounts(own):
    """Each directory made a mount point of its own that way was a mount MaxUserMounts=
    never counted: the view grew without limit (and, under /mnt, the host and every view)."""
    sb = own
    before = sb.mount_count("alice")
    for i in range(6):
        d = sb.scratch["alice"] / f"p{i}"
        as_user(sb, "alice", "mkdir", str(d))
        call_as(sb, "alice", "SetPropagation", "ssst", "alice", str(d), "private", 0)
        call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", str(d))
    assert sb.mount_count("alice") <= before + 2, \
        f"alice's view grew from {before} to {sb.mount_count('alice')} mounts with MaxUserMounts=2"


# ---- [View] policy paths: a symlink that says it is root's ----

@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nBindReadOnlyPaths=-%h/rt-fuse/link:%h/peek\n"})
def test_view_policy_does_not_trust_a_users_fuse_mount_saying_root_owns_a_link(daemon, servers):
    """A [View] path from %h follows only root's symlinks. Who owns a file on alice's FUSE
    mount is whatever her server says: a link it says is root's, to a directory in bob's
    0700 home, was followed, and the policy bound bob's directory into her view."""
    sb = daemon
    bob_home = Path(TEST_USERS["bob"].home)
    docs = bob_home / "docs"
    target = Path(ALICE.home) / "rt-fuse"
    os.chmod(bob_home, 0o700)
    try:
        docs.mkdir()
        (docs / "secret.txt").write_text("bob's secret\n")
        target.mkdir()
        os.chown(target, ALICE.uid, ALICE.gid)
        # alice's `sshfs -o allow_other`-like mount, made before her view is built (a login
        # outside it, or before nsmanager was installed): the view is a copy of the host
        servers.append(FuseServer(sb, "symlink", str(target), ALICE.uid, args=(str(docs),)))
        assert os.lstat(target / "link").st_uid == 0
        try:
            sb.manager().CreateNamespace("alice")
        except Exception as e:  # noqa: BLE001 — a refusal is one safe outcome
            assert "symbolic link" in str(e), e
            return
        p = sb.in_view("alice", ["cat", f"{ALICE.home}/peek/secret.txt"], as_user="alice")
        assert "secret" not in p.stdout, "the policy bound bob's directory into alice's view"
    finally:
        os.chmod(bob_home, 0o755)
        shutil.rmtree(docs, ignore_errors=True)
        for s in servers:
            s.stop()
        servers.clear()
        for leftover in (Path(ALICE.home) / "peek", target):
            if leftover.is_dir():
                leftover.rmdir()


# ---- Unmount: the name of a mount point, changed from outside the view ----

# Run as alice on the host, where her view's mount points are plain directories: swaps two
# of her directories' names (renameat2 RENAME_EXCHANGE) until the stop file appears.
EXCHANGER = r"""
import ctypes, os, sys
a, b, stop = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
n = 0
while n % 1000 or not os.path.exists(stop):
    libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE)
    n += 1
"""


def mount_ids(sb, view):
    return {m.id for m in sb.mountinfo(view)}


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=/home/alice/nsm-own/pol\n"})
def test_unmount_by_name_cannot_be_redirected_to_a_policy_mount(own):
    """Unmount checks the mount at the name, then unmounts by name. In her view neither
    name can change (mount points are busy), but on the host they are plain directories of
    hers: a process of hers there swaps the name of her bind with the name of the
    [View] policy's tmpfs, and an Unmount that checked her bind unmounted the policy's."""
    sb = own
    scratch = sb.scratch["alice"]
    pol = scratch / "pol"
    policy_mount = find_mount(sb.mountinfo("alice"), str(pol))
    assert policy_mount is not None and policy_mount.fstype == "tmpfs", "the policy's tmpfs is not there"
    src = scratch / "src"
    as_user(sb, "alice", "mkdir", str(src), str(scratch / "dst"))
    stop = scratch / "stop"
    swapper = sb.run_popen(sb._setpriv("alice") + ["/usr/bin/python3", "-c", EXCHANGER, str(scratch / "dst"),
                                                   str(pol), str(stop)])
    outcomes = {"unmounted": 0, "refused": 0}
    try:
        deadline = time.monotonic() + 60
        while outcomes["unmounted"] < 30 and time.monotonic() < deadline:
            if "ok" in call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), str(scratch / "dst"), 0):
                while "ok" not in call_as(sb, "alice", "Unmount", "sst", "alice", str(scratch / "dst"), 0):
                    outcomes["refused"] += 1
                outcomes["unmounted"] += 1
            assert policy_mount.id in mount_ids(sb, "alice"), \
                f"the [View] policy's tmpfs was unmounted after {outcomes}"
    finally:
        stop.touch()
        swapper.wait(timeout=30)
    assert outcomes["unmounted"] > 0 and outcomes["refused"] > 0, f"the race never ran: {outcomes}"


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
            as_user(sb, "alice", "mv", str(mine / "a"), str(mine / "a.old"))
            as_user(sb, "alice", "ln", "-s", "w", str(mine / "a"))
        else:
            as_user(sb, "alice", "/usr/bin/python3", "-c", RENAME_EXCHANGE, str(mine / "a"), str(mine / "w"))
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
            assert time.monotonic() - t < 5
        t = time.monotonic()
        sb.properties(f"/org/example/NSManager/user/_{ALICE.uid}")["NMounts"]
        assert time.monotonic() - t < 1
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


def test_a_get_mounts_flood_does_not_stall_logins(own):
    """GetMounts is open to everyone and each call is a request to the one view builder,
    which every login also waits for. bob sends the whole burst RateLimitBurst= allows at
    once: carol's login must not wait behind it. The host's table is made bigger first."""
    sb = own
    sb.mount_tmpfs("/srv")
    for i in range(60):
        sb.mount_tmpfs(f"/srv/{i}")
    assert sb.mount_count() > 60
    sb.manager().RemoveNamespace("carol")
    flood = sb.run_popen(sb._setpriv("bob") + ["/usr/bin/python3", "-c", GET_MOUNTS_FLOOD, "200"],
                         stdout=subprocess.PIPE, text=True, env=sb.user_env("bob"))
    assert flood.stdout.readline().strip() == "sent"
    t = time.monotonic()
    session = f"rt-{time.monotonic_ns()}"
    fd = open_session(sb.manager(), "carol", session)
    took = time.monotonic() - t
    os.close(fd)
    flood.wait(timeout=60)
    assert took < 1, f"carol's login waited {took:.2f}s behind bob's GetMounts"


@pytest.mark.daemon_config(MaxUserMounts="2")
def test_binds_under_the_shared_mnt_do_not_outlive_their_view(own):
    """alice's binds under the shared /mnt are on the host and in every view too. Removing
    her namespace (her last session closes) ends her view; if the host's copies stayed,
    each login of hers could add MaxUserMounts= more to the host's table — and to every
    view built afterwards — without end."""
    sb = own
    mine = Path("/mnt/rt-alice")
    try:
        mine.mkdir()
        os.chown(mine, ALICE.uid, ALICE.gid)
        src = sb.scratch["alice"] / "src"
        as_user(sb, "alice", "mkdir", str(src))
        before = sb.mount_count()
        for login in range(3):
            for i in range(2):
                r = call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), f"{mine}/{login}-{i}", 2)
                assert "ok" in r or r.get("error") in (E_LIMIT_EXCEEDED, E_ACCESS_DENIED), r
            sb.manager().RemoveNamespace("alice")
            sb.manager().CreateNamespace("alice")
        assert sb.mount_count() <= before + 2, \
            f"the host's table grew from {before} to {sb.mount_count()} mounts with MaxUserMounts=2"
    finally:
        for m in sorted((m.target for m in sb.mountinfo() if m.target.startswith(f"{mine}/")), reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(mine, ignore_errors=True)


# ---- the state file: records across a restart, odd characters ----

@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=/home/alice/nsm-own/pol\n"})
def test_records_survive_a_restart_and_a_path_cannot_write_one(own):
    """The records that decide what alice may unmount are kept in a state file, one line
    each, her destination path among them. A path with a newline and a record of its own
    (a session, a bind of hers naming the policy's tmpfs) written into it must stay one
    escaped path: after a restart she still may unmount her bind and still may not
    unmount the policy's mount."""
    sb = own
    scratch = sb.scratch["alice"]
    pol = find_mount(sb.mountinfo("alice"), f"{scratch}/pol")
    assert pol is not None
    src = scratch / "src"
    as_user(sb, "alice", "mkdir", str(src))
    odd = f"{scratch}/x\nSESSION=evil 1 1\nBIND={pol.id} {pol.id} user {scratch}/pol\\x41 \\ end"
    r = call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), odd, 2)
    assert "ok" in r, r
    sb.stop_daemon()
    state = (Path(sb.state_dir) / "namespaces" / "alice").read_text()
    assert "SESSION=evil" not in state.splitlines() and "\nBIND=" + str(pol.id) not in state, state
    sb.start_daemon(write=False)
    assert [str(s) for s in sb.properties(f"/org/example/NSManager/user/_{ALICE.uid}")["Sessions"]] == []
    refused(call_as(sb, "alice", "Unmount", "sst", "alice", f"{scratch}/pol", 0), "Unmount of the policy's tmpfs")
    assert find_mount(sb.mountinfo("alice"), f"{scratch}/pol") is not None
    r = call_as(sb, "alice", "Unmount", "sst", "alice", odd, 0)
    assert "ok" in r, r


# ---- MaxUserMounts=: what a bind brings along ----

@pytest.mark.daemon_config(MaxUserMounts="8")
def test_recursive_binds_of_binds_stay_within_max_user_mounts(own):
    """A bind copies the source's whole tree (recursively, so that the [View] policy's
    covers come along): binding a directory onto a place inside itself, again and again,
    copies every earlier bind each time — the view doubles with each call, and ~17 calls
    reach the kernel's limit for a namespace (fs.mount-max), with a huge table for
    everyone's GetMounts to read. MaxUserMounts= must bound the mounts, not the calls."""
    sb = own
    scratch = sb.scratch["alice"]
    tree = scratch / "tree"
    as_user(sb, "alice", "mkdir", str(tree))
    before = sb.mount_count("alice")
    for i in range(12):
        r = call_as(sb, "alice", "BindMount", "ssst", "alice", str(tree), f"{tree}/d{i}", 2)
        assert "ok" in r or r.get("error") == E_LIMIT_EXCEEDED, r
    grown = sb.mount_count("alice") - before
    assert grown <= 8, f"alice's view grew by {grown} mounts with MaxUserMounts=8"


@pytest.mark.daemon_config(MaxUserMounts="2")
def test_propagation_choices_do_not_pile_up_in_the_state(own):
    """Each SetPropagation is remembered in the namespace's state (so that a later
    ShareSubtree("") leaves it alone), by path. Bind, change, unmount, on a new path each
    time: the records of paths that are no mounts any more must not pile up — the daemon
    rewrites the whole file on every change, paths may be 4 kB long, and the rate limit
    allows 72000 calls an hour."""
    sb = own
    scratch = sb.scratch["alice"]
    src = scratch / "src"
    as_user(sb, "alice", "mkdir", str(src))
    for i in range(12):
        d = f"{scratch}/c{i}"
        assert "ok" in call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), d, 2)
        assert "ok" in call_as(sb, "alice", "SetPropagation", "ssst", "alice", d, "private", 0)
        assert "ok" in call_as(sb, "alice", "Unmount", "sst", "alice", d, 0)
    state = (Path(sb.state_dir) / "namespaces" / "alice").read_text()
    choices = [line for line in state.splitlines() if line.startswith("CHOICE=")]
    assert len(choices) <= 2, f"{len(choices)} records of propagation choices for paths that are gone"


# ---- the daemon's log ----

ATTACH_NAMED = r"""
import os, sys
import dbus, dbus.lowlevel
name = sys.argv[1]
msg = dbus.lowlevel.MethodCallMessage("org.example.NSManager", "/org/example/NSManager",
                                      "org.example.NSManager.Manager", "OpenAttach")
msg.append("alice", [name], [], "/", dbus.UInt64(0), signature="sasasst")
pid, stdin, stdout, stderr, status = dbus.SystemBus().send_message_with_reply_and_block(msg, 30).get_args_list()
os.read(status.take(), 100)
"""


def test_a_user_cannot_write_lines_into_the_daemons_log(own):
    """The daemon logs what a user named (Attach's command, the paths of an operation that
    timed out) one line per message, with journald's "<N>" priority prefix on stderr. A
    newline in a name started a line of the user's own, at any priority she liked."""
    sb = own
    as_user(sb, "alice", "/usr/bin/python3", "-c", ATTACH_NAMED, "/nonexistent\n<0>nsmanagerd: forged by alice",
            check=True)
    lines = sb.daemon_log_text().splitlines()
    assert any("nonexistent" in line for line in lines), "the Attach was not logged"
    assert not any(line.startswith(("<0>nsmanagerd: forged", "nsmanagerd: forged")) for line in lines), \
        "alice wrote a line of her own into the daemon's log"


# ---- BindMount onto what she may not write ----

READ_ONLY_POLICY = {"user.d/alice.conf": "[View]\nBindReadOnlyPaths=/srv/alice-ro\n"}


@pytest.fixture
def alice_ro(srv):
    """/srv/alice-ro, alice's with a file and a directory of hers in it, made read-only in her
    view by the [View] policy (created before her view is built)."""
    ro = srv / "alice-ro"
    (ro / "conf").mkdir(parents=True)
    (ro / "settings").write_text("the administrator's choice\n")
    for p in (ro, ro / "conf", ro / "settings"):
        os.chown(p, ALICE.uid, ALICE.gid)
    yield ro


@pytest.mark.daemon_config(files=READ_ONLY_POLICY)
def test_a_bind_does_not_undo_a_read_only_policy(alice_ro, own):
    """fusermount3, the reference, mounts only where the user may write (access(W_OK) on a
    directory, open(O_WRONLY) on a file): never inside a read-only mount. BindMount checked
    only the owner: alice's writable file and directory bound over hers inside the [View]
    policy's BindReadOnlyPaths= made what the administrator made read-only writable again."""
    sb = own
    settings, conf = alice_ro / "settings", alice_ro / "conf"
    check = sb.in_view("alice", ["sh", "-c", f"echo x > {settings}"], as_user="alice")
    assert check.returncode != 0, "the policy's bind is not read-only in her view"
    mine = alice_file(sb, "settings", "alice's choice\n")
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", mine, str(settings), 0), "bind over a read-only file",
            rule="not writable for the caller")
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", alice_dir(sb, "conf"), str(conf), 0),
            "bind over a read-only directory", rule="not writable for the caller")
    # As it matters: the read-only paths show what they showed, and stay read-only.
    p = sb.in_view("alice", ["sh", "-c", f"echo changed > {settings}; touch {conf}/new; cat {settings}"],
                   as_user="alice")
    assert p.stdout == "the administrator's choice\n", p.stdout
    assert not is_mount_point(sb, "alice", str(settings)) and not is_mount_point(sb, "alice", str(conf))


def test_a_bind_does_not_cover_a_bind_root_made_in_her_view(own):
    """A destination that is a mount point is hers to bind onto only if it is one of her own
    binds (which is then replaced). Root's bind of a directory of hers onto another, in her
    view (`nsctl bind alice …`), has her files on both sides: only that rule keeps her bind
    from covering root's."""
    sb = own
    approved = alice_dir(sb, "approved", {"tool": "root's choice\n"})
    app = f"{sb.scratch['alice']}/app"
    sb.manager().BindMount("alice", approved, app, 2)
    mine = alice_dir(sb, "mine", {"tool": "alice's choice\n"})
    before = sb.mount_count("alice")
    message = refused(call_as(sb, "alice", "BindMount", "ssst", "alice", mine, app, 0), "bind over root's bind")
    assert "own binds" in message, message
    assert sb.mount_count("alice") == before
    assert sb.in_view("alice", ["cat", f"{app}/tool"], as_user="alice").stdout == "root's choice\n"


# ---- /mnt: a bind of hers where the host has root's mount, then shared again ----

def test_unmounting_her_bind_under_a_rejoined_mnt_leaves_roots_mount(own):
    """alice makes her /mnt private; root then mounts a disk on a directory of hers there
    (/mnt/rt-alice) on the host, which her view no longer receives. She binds a directory of
    hers onto /mnt/rt-alice in her view (not shared: allowed), shares /mnt again (at
    SharedSubtrees=: allowed, it joins the host's group), and unmounts her bind: an unmount
    under a shared parent propagates to whatever each peer has mounted at that path."""
    sb = own
    mine = Path("/mnt/rt-alice")
    mine.mkdir()
    try:
        os.chown(mine, ALICE.uid, ALICE.gid)
        src = alice_dir(sb, "src")
        outcomes = [call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "private", 0)]
        sb.mount_tmpfs(str(mine), files={"backup.sh": "root's\n"})
        outcomes += [call_as(sb, "alice", "BindMount", "ssst", "alice", src, str(mine), 0),
                     call_as(sb, "alice", "ShareSubtree", "ss", "alice", "/mnt")]
        for flags in (0, 1):
            outcomes.append(call_as(sb, "alice", "Unmount", "sst", "alice", str(mine), flags))
            assert is_mount_point(sb, None, str(mine)), f"root's mount went from the host: {outcomes}"
            assert is_mount_point(sb, "bob", str(mine)), f"root's mount went from bob's view: {outcomes}"
            assert outcomes[-1].get("error") == E_ACCESS_DENIED and "shared mount" in outcomes[-1]["message"], outcomes
        assert Path(mine / "backup.sh").read_text() == "root's\n"
        # Her bind is still hers to unmount, where that stays in her view: /mnt private first.
        assert "ok" in call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "private", 0)
        assert "ok" in call_as(sb, "alice", "Unmount", "sst", "alice", str(mine), 0)
        assert not is_mount_point(sb, "alice", str(mine))
        assert is_mount_point(sb, None, str(mine)) and is_mount_point(sb, "bob", str(mine))
    finally:
        while subprocess.run(["umount", str(mine)], capture_output=True).returncode == 0:
            pass
        mine.rmdir()
