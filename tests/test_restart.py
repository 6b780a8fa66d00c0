# SPDX-License-Identifier: LGPL-2.1-or-later
"""Crashes and restarts: namespaces outlive the daemon, and what it knew comes back.

SIGTERM and SIGKILL leave every namespace alive and its mounts in place; the daemon started
again serves the same namespaces (same mount namespace, same timestamp), the host's mount
table as it was, propagation working both ways in the old views. A crash in the middle of
creating namespaces leaves no stray mounts. Sessions are matched again by their leader's pid
and start time, never by a reused pid. The state directory: every file fsync()ed before it
replaces the old one where the directory is not a tmpfs, and not on a tmpfs. Losing the
system bus ends the daemon with failure, and the next one serves the same namespaces.

What a crash in the middle of one operation leaves is with that operation's tests: a
ShareSubtree("") killed half-way (test_hung_fs.py), the records of a user's binds
(test_own_view.py), propagation changes (test_propagation.py), a login's session
(test_pam.py)."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import dbus
import pytest

from helpers import E_NO_SUCH_NAMESPACE, create, daemon_syscalls, expect_error, ns_path, wait_until
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, build_dir, timeout
from test_core import is_mount_point


# ---- SIGTERM and SIGKILL ----

def test_sigterm_exits_cleanly_and_namespaces_survive(daemon):
    (path,) = create(daemon, "alice")
    ns_id = daemon.view_ns_id("alice")
    assert daemon.stop_daemon(signal.SIGTERM) == 0
    daemon.restart_daemon()
    assert str(daemon.manager().GetNamespace("alice")) == path
    assert int(daemon.properties(path)["MountNamespaceId"]) == ns_id
    assert daemon.view_ns_id("alice") == ns_id


def test_kill9_and_restart(daemon):
    users = ["alice", "bob"]
    paths = create(daemon, *users)
    ids = {u: daemon.view_ns_id(u) for u in users}
    stamps = {u: int(daemon.properties(p)["Timestamp"]) for u, p in zip(users, paths)}
    host_before = daemon.mountinfo()

    assert daemon.kill_daemon() == -signal.SIGKILL
    daemon.restart_daemon()

    m = daemon.manager()
    assert [(str(r[0]), str(r[3])) for r in m.ListNamespaces()] == list(zip(users, paths))
    for u, p in zip(users, paths):
        assert m.GetNamespace(u) == p
        props = daemon.properties(p)
        assert props["MountNamespaceId"] == ids[u], f"{u}'s namespace is not the same one after the restart"
        assert props["Timestamp"] == stamps[u]
        assert daemon.view_ns_id(u) == ids[u]
    host_after = daemon.mountinfo()
    assert len(host_after) == len(host_before), \
        "restart changed the host's mount table: " + \
        str([str(x) for x in host_after if x.id not in {y.id for y in host_before}])

    # propagation still works both ways in the old views
    marker, content = daemon.mount_cd("/mnt/cd")
    for u in users:
        assert daemon.in_view(u, ["cat", marker]).stdout == content, f"host /mnt no longer reaches {u}"
    daemon.mount_tmpfs("/mnt/alice-usb", source="alice-usb", files={"f": "a\n"}, view="alice")
    assert daemon.in_view("bob", ["cat", "/mnt/alice-usb/f"]).stdout == "a\n"
    assert daemon.run(["cat", "/mnt/alice-usb/f"]).stdout == "a\n"
    daemon.umount("/mnt/alice-usb", view="alice")

    # and new ones can still be made, of the same size
    create(daemon, "carol")
    assert daemon.mount_count("carol") == daemon.mount_count("alice")


def test_mount_counts_are_right_after_a_restart(daemon, nsctl):
    """NMounts (MOUNTS in nsctl list and status) of views restored by a new daemon. Linux
    6.18's listmount(2) finds only namespaces some process is in, and nobody is logged in
    here: the count is then the last one the daemon read, and a new daemon reads each
    restored view's once. Manager.GetMounts (nsctl mounts USER) updates it, as
    Namespace.GetMounts does."""
    (path,) = create(daemon, "alice")
    expected = daemon.mount_count("alice")
    assert daemon.kill_daemon() == -signal.SIGKILL
    daemon.restart_daemon()
    wait_until(lambda: int(daemon.properties(path)["NMounts"]) == expected, "alice's mount count after the restart",
               diag=lambda: daemon.properties(path)["NMounts"])
    p = nsctl("list")
    assert p.returncode == 0 and re.search(rf"^alice\s.*\b{expected}\b", p.stdout, re.M), p.stdout

    # one more mount in the view: Manager.GetMounts reads it, and the count follows
    daemon.mount_tmpfs("/mnt/alice-extra", view="alice")
    rows = daemon.manager().GetMounts("alice")
    assert len(rows) == expected + 1
    assert int(daemon.properties(path)["NMounts"]) == expected + 1
    daemon.umount("/mnt/alice-extra", view="alice")


def test_kill9_while_creating(daemon, signals):
    """A crash in the middle of creating namespaces: after the restart every namespace
    the daemon lists works, the others left no mounts (and the fixture's leak check
    after removing them all finds nothing)."""
    users = ["alice", "bob", "carol", "dave"]
    calls = [daemon.run_popen(["busctl", "--system", "call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE,
                               "CreateNamespace", "s", u]) for u in users]
    signals.wait_for("NamespaceNew")
    daemon.kill_daemon()
    for c in calls:
        c.wait(timeout(30))
    daemon.restart_daemon()

    listed = {str(r[0]): str(r[3]) for r in daemon.manager().ListNamespaces()}
    assert listed, "the namespace announced before the crash is gone"
    host = daemon.mountinfo()
    for u in users:
        if u in listed:
            assert listed[u] == ns_path(u)
            assert int(daemon.properties(listed[u])["MountNamespaceId"]) == daemon.view_ns_id(u)
        else:
            expect_error(lambda: daemon.manager().GetNamespace(u), E_NO_SUCH_NAMESPACE)
        assert not is_mount_point(host, f"{daemon.subtree_root}/{u}"), f"stray mount of {u}'s tree"
    # the ones that were lost can be made now
    for u in users:
        assert create(daemon, u) == [ns_path(u)]
    assert len({daemon.mount_count(u) for u in users}) == 1


def test_kill9_restart_then_remove(daemon):
    start = daemon.mountinfo()
    create(daemon, "alice")
    daemon.kill_daemon()
    daemon.restart_daemon()
    daemon.manager().RemoveNamespace("alice")
    after = daemon.mountinfo()
    new = [str(m) for m in after if m.id not in {x.id for x in start}]
    assert not new, f"left on the host after restart and remove: {new}"
    expect_error(lambda: daemon.manager().GetNamespace("alice"), E_NO_SUCH_NAMESPACE)


# ---- sessions across a crash ----

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
    set_tid: tests/helpers/spawn-at-pid.c). The restarted daemon matches a session by its leader's
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


# ---- the state directory ----

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


# ---- losing the system bus ----

def test_losing_the_bus_ends_the_daemon(daemon):
    """When the system bus goes, nsmanagerd exits within a second (namespaces stay pinned),
    with failure, so that Restart=on-failure starts it again; started again, it serves the
    same namespaces."""
    sb = daemon
    mgr = sb.manager()
    mgr.CreateNamespace("alice")
    before = sb.view_ns_id("alice")
    proc = sb.daemon

    def daemon_gone():
        t = time.monotonic()
        proc.wait(timeout(5))
        assert time.monotonic() - t < timeout(1), "nsmanagerd lingered without a bus"
        assert proc.returncode == 1, f"nsmanagerd exited with {proc.returncode}, not failure"
    sb.restart_bus(before_start=daemon_gone)
    sb.daemon = None
    sb.start_daemon(write=False)
    assert sb.view_ns_id("alice") == before
    assert "Lost the connection to the system bus" in sb.daemon_log_text()
