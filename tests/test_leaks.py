# SPDX-License-Identifier: LGPL-2.1-or-later
"""Resource hygiene of the daemon: fds, mounts and child processes come back to where they
were after repeated create/inspect/remove cycles, failed calls included. (Memory leaks are
the ASan pass's job: tools/test runs every suite against a sanitized build too.)"""

import os
import time

import dbus
import pytest

from helpers import E_INVALID_MODE, E_INVALID_PATH, E_NO_SUCH_USER, expect_error, wait_until


def process_fds(pid) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.add(f"{fd} -> {os.readlink(f'/proc/{pid}/fd/{fd}')}")
        except FileNotFoundError:
            pass                          # closed between the listing and the readlink
    return out


def daemon_fds(sb) -> set[str]:
    return process_fds(sb.daemon.pid)


def settled_fd_count(sb) -> int:
    """The daemon's number of fds once it has stayed the same for 0.3 s."""
    last, since = len(daemon_fds(sb)), time.monotonic()
    while time.monotonic() - since < 0.3:
        time.sleep(0.02)
        n = len(daemon_fds(sb))
        if n != last:
            last, since = n, time.monotonic()
    return last


def daemon_children(sb, pid=None) -> list[str]:
    pid = pid or sb.daemon.pid
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(p)
            except OSError:
                pass
    return out


def settle(sb):
    """Wait until the work a reply does not wait for is done: removing a view starts a child
    that removes the policy's mount points after RemoveNamespace has answered. A child that
    never ends fails here, as a leak."""
    wait_until(lambda: len(daemon_children(sb)) == 1, "the daemon's children other than its builder to end",
               diag=lambda: daemon_children(sb))


def cycle(sb, mgr, user):
    path = mgr.CreateNamespace(user)
    ns = sb.namespace(path)
    ns.GetMounts()
    mgr.GetMounts(user)
    mgr.GetMounts("")
    sb.properties(path)                   # NMounts (no child: listmount, or the last count)
    fd = mgr.OpenMountNamespace(user).take()
    os.close(fd)
    mgr.BindMount(user, "/home/" + user, "/mnt/leakcheck-" + user, dbus.UInt64(0x1 | 0x2))
    mgr.Unmount(user, "/mnt/leakcheck-" + user, dbus.UInt64(0))
    mgr.EnslaveSubtree(user, "/mnt")
    mgr.ShareSubtree(user, "/mnt")
    mgr.SetPropagation(user, "/home", "private", dbus.UInt64(1))
    for bad, name in ((lambda: mgr.CreateNamespace("nosuchuser"), E_NO_SUCH_USER),
                      (lambda: mgr.BindMount(user, "/nonexistent", "/x", dbus.UInt64(0)), E_INVALID_PATH),
                      (lambda: mgr.SetPropagation(user, "/mnt", "sideways", dbus.UInt64(0)), E_INVALID_MODE),
                      (lambda: mgr.Unmount(user, "/", dbus.UInt64(0)), E_INVALID_PATH)):
        expect_error(bad, name)
    mgr.RemoveNamespace(user)


POLICY = """[View]
PrivateTmp=yes
HideOtherHomes=yes
BindReadOnlyPaths=/etc:/home/%u/nsm-leak-etc
InaccessiblePaths=-/srv/nsm-leak-nonexistent
TemporaryFileSystem=/home/%u/nsm-leak-tmpfs
"""


# Every kind of work runs in these cycles: views built (by the builder) with a [View] policy (in a
# child), pins made and dropped, mount tables read, propagation changes, binds, unmounts, and
# calls that fail. Whatever a child or the builder opened must not stay in the daemon, nor
# what the daemon passed the builder stay in the builder; the one child that stays is the
# builder (src/nsmanagerd/builder.c), the same process throughout.
@pytest.mark.daemon_config(extra_config=POLICY)
def test_fds_mounts_and_children_return_to_baseline(daemon, manager):
    sb = daemon
    # One warm-up cycle: lazily created things (the polkit registry, libmount caches) exist after it.
    cycle(sb, manager, "alice")
    settle(sb)
    fds, mounts = daemon_fds(sb), sb.mount_count()
    [builder] = daemon_children(sb)
    builder_fds = process_fds(builder)
    for i in range(10):
        cycle(sb, manager, ("alice", "bob")[i % 2])
    settle(sb)
    assert daemon_fds(sb) == fds, "the daemon's open fds changed over 10 cycles"
    assert sb.mount_count() == mounts, "the host's mount count changed over 10 cycles"
    assert daemon_children(sb) == [builder], "the daemon left child processes behind, or replaced its builder"
    assert process_fds(builder) == builder_fds, "the builder's open fds changed over 10 cycles"
    assert daemon_children(sb, builder) == [], "the builder left child processes behind"


def test_restart_does_not_accumulate_fds(daemon, manager):
    sb = daemon
    for u in ("alice", "bob", "carol"):
        manager.CreateNamespace(u)
    # Counted once each start is whole: the bus name comes before its last steps.
    sb.restart_daemon(ready=True)
    first = settled_fd_count(sb)
    sb.restart_daemon(ready=True)
    # Three namespaces, three fds, whatever the number of restarts. (A namespace's fd may be
    # held twice for a moment after the start, in a message to a helper not yet sent: a leak
    # stays.)
    wait_until(lambda: len(daemon_fds(sb)) == first, "the daemon to hold as many fds as after its last start",
               diag=lambda: "\n".join(sorted(daemon_fds(sb))))
    held = daemon_fds(sb)
    pins = [l for l in held if "/pins/" in l]
    assert len(pins) == 3, f"expected one fd per namespace: {held}"
    # The registry is the builder's to hold, once.
    [builder] = daemon_children(sb)
    registry = [l for l in process_fds(builder) if l.endswith("/registry")]
    assert len(registry) == 1, f"expected the builder to hold the registry once: {process_fds(builder)}"
