# SPDX-License-Identifier: LGPL-2.1-or-later
"""Mount events: Subscribe() and Unsubscribe() on the Manager and on a Namespace, the
MountsChanged and HostMountsChanged signals, the MountEvents property, and nsctl mounts
--follow (docs/mount-events.md).

Through the real bus: each subscriber is a connection of its own (a SignalRecorder, or a
process of the test user's), so the daemon knows it only by its bus name. The fallback that
reads a view's table again when the kernel flags a change (MountEvents "poll") is chosen
with the daemon's test knob NSM_MOUNT_EVENTS=poll (poll-mountinfo: as before Linux 6.8, from
/proc/self/mountinfo with the ids it reuses), so it runs on this kernel too."""

import json
import os
import re
import select
import subprocess
import time

import dbus
import pytest

from caller import CLIENT
from helpers import (E_LIMIT_EXCEEDED, E_NO_SUCH_NAMESPACE, create, daemon_match_rules, expect_error, extra_users, ns_path,
                     wait_until)
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, NAMESPACE_IFACE, find_mount, nsctl_binary, timeout

UNIQUE_ID_MIN = 1 << 31      # the kernel's unique mount ids start above the old ones (6.8)
MODES = {
    "fanotify": {},
    "poll": {"env": {"NSM_MOUNT_EVENTS": "poll"}},
    "poll-mountinfo": {"env": {"NSM_MOUNT_EVENTS": "poll-mountinfo"}},
}


# ---------------------------------------------------------------------------
# Helpers

def subscribe(sb, user=None):
    """A subscriber of user's view (None: of everything): a connection of its own."""
    rec = sb.signals()
    if user is None:
        dbus.Interface(rec.bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE).Subscribe()
    else:
        dbus.Interface(rec.bus.get_object(BUS_NAME, ns_path(user)), NAMESPACE_IFACE).Subscribe()
    return rec


def changes(rec, path, member="MountsChanged"):
    """What the signals of `member` at object `path` said so far: (signals, attached, detached),
    attached as (id, parent, mount point) in order, detached as ids."""
    sigs = [s for s in rec.received if s[1] == member and str(s[2]) == path]
    attached = [(int(i), int(p), str(m)) for s in sigs for (i, p, m) in s[3][0]]
    detached = [int(i) for s in sigs for i in s[3][1]]
    return sigs, attached, detached


def wait_changes(rec, path, done, member="MountsChanged", wait=10):
    """Dispatches until done(attached, detached) holds; returns changes()."""
    deadline = time.monotonic() + timeout(wait)
    while True:
        sigs, attached, detached = changes(rec, path, member)
        if done(attached, detached):
            return sigs, attached, detached
        if time.monotonic() > deadline:
            raise AssertionError(f"{member} of {path}: waited {timeout(wait)}s; got attached {attached}, "
                                 f"detached {detached}")
        rec.drain(0.05)


def mounted_at(attached, point):
    return [a for a in attached if a[2] == point]


def daemon_fds(sb):
    """The daemon's open files, as readlink shows them."""
    pid = sb.daemon.pid
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return out


def watch_fds(sb):
    """What the daemon and its mount readers hold to see mount changes: fanotify groups and
    mountinfo files."""
    return [f for f in daemon_fds(sb) if f == "anon_inode:[fanotify]"] + view_watch_fds(sb)


def reader_pids(sb):
    """The daemon's mount readers (docs/mount-events.md): its children named nsm-reader."""
    pids = []
    for tid in os.listdir(f"/proc/{sb.daemon.pid}/task"):
        for pid in open(f"/proc/{sb.daemon.pid}/task/{tid}/children").read().split():
            try:
                if open(f"/proc/{pid}/comm").read().strip() == "nsm-reader":
                    pids.append(int(pid))
            except OSError:
                pass
    return pids


def view_watch_fds(sb):
    """The mountinfo files the daemon and its mount readers hold: one per watched view (the
    readers hold the views', the daemon none)."""
    out = [f for f in daemon_fds(sb) if f.endswith("/mountinfo")]
    for pid in reader_pids(sb):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue                      # a reader that ended with its last view meanwhile
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.endswith("/mountinfo"):
                out.append(link)
    return out


def context_switches(pid):
    status = open(f"/proc/{pid}/status").read()
    return sum(int(m) for m in re.findall(r"ctxt_switches:\s+(\d+)", status))


def asleep(pid):
    """Whether every thread of pid sleeps: whatever woke it has been handled (a task woken is
    runnable until it has run and waits again, which counts one more voluntary switch)."""
    states = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        states.append(stat[stat.rindex(")") + 2])
    return all(state == "S" for state in states)


def first_listing(rec, point, member="MountsChanged", path=None):
    """Index in rec.received of the first signal `member` (of object `path`) that lists
    `point` attached, or None."""
    for i, (_, m, p, args) in enumerate(rec.received):
        if m == member and (path is None or str(p) == path) and any(str(a[2]) == point for a in args[0]):
            return i
    return None


def view_ids(sb, user):
    return {m.id for m in sb.mountinfo(user)}


# ---------------------------------------------------------------------------
# Subscribing and the signals

@pytest.mark.parametrize("mode", MODES)
def test_subscriber_sees_host_mounts_and_the_users_own(sandbox, request, mode):
    """A subscriber of alice's view hears of a mount the host makes under /mnt (it propagates
    into her view) and of one she makes in her home; of their unmounts too, by the same ids."""
    request.applymarker(pytest.mark.daemon_config(**MODES[mode]))
    sb = request.getfixturevalue("daemon")
    assert sb.properties()["MountEvents"] == ("fanotify" if mode == "fanotify" else "poll")
    create(sb, "alice")
    rec = subscribe(sb, "alice")
    path = ns_path("alice")

    sb.mount_cd("/mnt/cd")
    _, attached, _ = wait_changes(rec, path, lambda a, d: mounted_at(a, "/mnt/cd"))
    [(cd_id, cd_parent, _)] = mounted_at(attached, "/mnt/cd")
    sb.mount_tmpfs("/home/alice/x", view="alice")
    _, attached, _ = wait_changes(rec, path, lambda a, d: mounted_at(a, "/home/alice/x"))
    [(x_id, _, _)] = mounted_at(attached, "/home/alice/x")

    if mode == "poll-mountinfo":
        # Before Linux 6.8 there are only the ids of mountinfo, which the kernel reuses.
        ids = view_ids(sb, "alice")
        assert {cd_id, cd_parent, x_id} <= ids, f"ids {cd_id}, {cd_parent}, {x_id} not in alice's mountinfo {ids}"
    else:
        assert min(cd_id, cd_parent, x_id) > UNIQUE_ID_MIN, "MountsChanged must carry the kernel's unique ids"
    assert cd_id != x_id

    sb.umount("/mnt/cd")
    sb.umount("/home/alice/x", view="alice")
    _, attached, detached = wait_changes(rec, path, lambda a, d: {cd_id, x_id} <= set(d))
    assert sorted(detached) == sorted([cd_id, x_id]), f"each unmount once: {detached}"
    assert len(attached) == 2, f"nothing else was attached in alice's view: {attached}"
    # The host's own mount is the host's business: no HostMountsChanged for a view's subscriber.
    assert not changes(rec, MANAGER_PATH, "HostMountsChanged")[0]


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_without_subscribers_no_signals_and_no_work(daemon):
    """Nobody subscribed (and ReleaseWithHost=no): no signal, no fanotify group, no mountinfo
    held, and the daemon is not even woken by a host mount."""
    create(daemon, "alice")
    listener = daemon.signals()   # hears every signal of the daemon, subscribed to nothing
    assert watch_fds(daemon) == []
    daemon.mount_tmpfs("/home/alice/quiet", view="alice")   # (entering her view asks the daemon for its fd)
    wait_until(lambda: asleep(daemon.daemon.pid), "the daemon to wait for something to do")
    switches = context_switches(daemon.daemon.pid)
    for i in range(50):
        daemon.mount_tmpfs(f"/mnt/quiet{i}")
        daemon.umount(f"/mnt/quiet{i}")
    # Had a mount woken it, it would be runnable until it has handled that and waits again.
    wait_until(lambda: asleep(daemon.daemon.pid), "the daemon to wait for something to do")
    assert context_switches(daemon.daemon.pid) == switches, "the daemon was woken by mounts nobody watches"

    # A subscriber, and the signals come; gone again, and so is what the daemon held for it.
    rec = subscribe(daemon, "alice")
    wait_until(lambda: watch_fds(daemon), "the daemon to watch alice's view")
    daemon.mount_tmpfs("/mnt/heard")
    wait_changes(rec, ns_path("alice"), lambda a, d: mounted_at(a, "/mnt/heard"))
    # The listener hears it too (signals are broadcast), and, the daemon's signals coming in
    # the order it sends them, would have heard any about the quiet mounts before it.
    wait_until(lambda: first_listing(listener, "/mnt/heard") is not None, "the listener to hear of /mnt/heard",
               diag=lambda: f"{listener.drain()}")
    got = [s for s in listener.received[:first_listing(listener, "/mnt/heard")]
           if s[1] in ("MountsChanged", "HostMountsChanged")]
    assert got == [], f"signals without a subscriber: {got}"
    rec.close()
    wait_until(lambda: watch_fds(daemon) == [], "the daemon to drop the watch of a subscriber that left the bus")


def test_a_storm_gives_few_signals_each_mount_once(daemon):
    """200 mounts in a row in alice's view: a few signals (at most one per 100 ms), which
    together list each mount exactly once; then their 200 unmounts, each once too."""
    create(daemon, "alice")
    rec = subscribe(daemon, "alice")
    path = ns_path("alice")
    points = [f"/home/alice/storm/{i}" for i in range(200)]
    script = 'for p in "$@"; do mkdir -p "$p" && mount -t tmpfs -o size=64k storm "$p" || exit 1; done'

    start = time.monotonic()
    daemon.in_view("alice", ["sh", "-c", script, "sh", *points], check=True)
    sigs, attached, _ = wait_changes(rec, path, lambda a, d: len(a) >= 200, wait=30)
    took = time.monotonic() - start
    # One mount more: once it is listed, a duplicate of any of the 200 would have been too.
    daemon.mount_tmpfs("/home/alice/storm-end", view="alice")
    sigs, attached, detached = wait_changes(rec, path, lambda a, d: mounted_at(a, "/home/alice/storm-end"))
    [(end_id, _, _)] = mounted_at(attached, "/home/alice/storm-end")
    attached = [a for a in attached if a[0] != end_id]
    sigs = [s for s in sigs if any(str(a[2]) in points for a in s[3][0])]
    assert sorted(a[2] for a in attached) == sorted(points), "each mount listed exactly once"
    assert len({a[0] for a in attached}) == 200, "200 distinct ids"
    assert detached == []
    assert 1 < len(sigs) <= took / 0.1 + 2, f"{len(sigs)} signals for 200 mounts in {took:.2f}s: not coalesced"

    ids = {a[0] for a in attached}
    script = 'for p in "$@"; do umount "$p" || exit 1; done'
    daemon.in_view("alice", ["sh", "-c", script, "sh", *points], check=True)
    _, _, detached = wait_changes(rec, path, lambda a, d: len(d) >= 200, wait=30)
    daemon.umount("/home/alice/storm-end", view="alice")      # and one more, as above
    _, _, detached = wait_changes(rec, path, lambda a, d: end_id in d)
    detached = [d for d in detached if d != end_id]
    assert sorted(detached) == sorted(ids), "each unmount listed exactly once, by the id it was attached with"


def test_manager_subscriber_watches_every_view_and_the_host(daemon):
    """Manager.Subscribe(): MountsChanged of each view, also of one created afterwards, and
    HostMountsChanged for the host's own table."""
    create(daemon, "alice")
    rec = subscribe(daemon)
    create(daemon, "bob")
    # bob's view was created while everything is watched: its first signal lists what it has.
    _, attached, _ = wait_changes(rec, ns_path("bob"), lambda a, d: mounted_at(a, "/"))
    assert {a[2] for a in attached} == {m.target for m in daemon.mountinfo("bob")}
    daemon.mount_cd("/mnt/cd")
    for user in ("alice", "bob"):
        wait_changes(rec, ns_path(user), lambda a, d: mounted_at(a, "/mnt/cd"))
    _, attached, _ = wait_changes(rec, MANAGER_PATH, lambda a, d: mounted_at(a, "/mnt/cd"), "HostMountsChanged")
    host_id = mounted_at(attached, "/mnt/cd")[0][0]
    daemon.mount_tmpfs("/home/bob/own", view="bob")
    wait_changes(rec, ns_path("bob"), lambda a, d: mounted_at(a, "/home/bob/own"))
    daemon.umount("/mnt/cd")
    wait_changes(rec, MANAGER_PATH, lambda a, d: host_id in d, "HostMountsChanged")
    # bob's own mount is not the host's, nor alice's.
    assert not mounted_at(changes(rec, MANAGER_PATH, "HostMountsChanged")[1], "/home/bob/own")
    assert not mounted_at(changes(rec, ns_path("alice"))[1], "/home/bob/own")


def test_unsubscribe_ends_the_signals(daemon):
    create(daemon, "alice")
    rec = subscribe(daemon, "alice")
    ns = dbus.Interface(rec.bus.get_object(BUS_NAME, ns_path("alice")), NAMESPACE_IFACE)
    ns.Subscribe()   # twice from one name is one subscription
    ns.Unsubscribe()
    ns.Unsubscribe()   # and a second Unsubscribe is no error
    wait_until(lambda: view_watch_fds(daemon) == [], "the watch to end with the only subscription")
    daemon.mount_tmpfs("/mnt/after")
    # Another subscriber, and a mount it hears of: rec hears of it too (signals are broadcast),
    # and, the daemon's signals coming in the order it sends them, would have heard of
    # /mnt/after before, or with it.
    other = subscribe(daemon, "alice")
    daemon.mount_tmpfs("/mnt/later")
    wait_changes(other, ns_path("alice"), lambda a, d: mounted_at(a, "/mnt/later"))
    wait_until(lambda: first_listing(rec, "/mnt/later") is not None, "rec to hear of /mnt/later too",
               diag=lambda: f"{rec.drain()}")
    later = first_listing(rec, "/mnt/later")
    got = [s for s in rec.received[:later] if s[1] == "MountsChanged"]
    assert got == [], f"signals after Unsubscribe: {got}"
    assert not mounted_at([(int(i), int(p), str(m)) for i, p, m in rec.received[later][3][0]], "/mnt/after"), \
        f"/mnt/after signalled after Unsubscribe: {rec.received[later]}"


def test_a_removed_view_ends_its_subscriptions(daemon):
    create(daemon, "alice")
    old = subscribe(daemon, "alice")
    wait_until(lambda: view_watch_fds(daemon), "the watch of alice's view")
    daemon.manager().RemoveNamespace("alice")
    wait_until(lambda: view_watch_fds(daemon) == [], "the watch to end with the view")
    # A new view of alice is not watched by the old subscription. bob's, subscribed to now,
    # is: once bob hears of a mount that both views get, alice's old subscriber would have too.
    create(daemon, "alice")
    create(daemon, "bob")
    bobs = subscribe(daemon, "bob")
    daemon.mount_tmpfs("/mnt/later")
    wait_changes(bobs, ns_path("bob"), lambda a, d: mounted_at(a, "/mnt/later"))
    assert first_listing(old, "/mnt/later", path=ns_path("alice")) is None, "alice's new view is watched"
    assert len(view_watch_fds(daemon)) == 1, f"watched: {view_watch_fds(daemon)}; only bob's view should be"


SUBSCRIBER = r"""
import json, sys, dbus, dbus.bus
kind, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
conns, out = [], []
for i in range(n):
    c = dbus.bus.BusConnection("unix:path=/run/dbus/system_bus_socket")
    conns.append(c)
    iface = "org.example.NSManager." + kind
    try:
        dbus.Interface(c.get_object("org.example.NSManager", path), iface).Subscribe()
        out.append("ok")
    except dbus.exceptions.DBusException as e:
        out.append(e.get_dbus_name())
print(json.dumps(out))
sys.stdout.flush()
sys.stdin.read()
"""


def test_subscriptions_are_open_to_everyone_and_capped_per_uid(daemon):
    """alice (no privilege at all) may subscribe, to bob's view too (reading is open, as
    GetMounts is); beyond 32 subscriptions of one uid: LimitExceeded. Her connections gone,
    the daemon keeps nothing of them."""
    create(daemon, "alice", "bob")
    p = subprocess.Popen(["setpriv", "--reuid=2001", "--regid=2001", "--clear-groups", "/usr/bin/python3", "-c",
                          SUBSCRIBER, "Manager", MANAGER_PATH, "34"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        results = json.loads(p.stdout.readline())
        assert results[:32] == ["ok"] * 32, results
        assert results[32:] == [E_LIMIT_EXCEEDED] * 2, results
        wait_until(lambda: view_watch_fds(daemon), "the watch of every view")
        # bob, another uid, still may.
        q = subprocess.Popen(["setpriv", "--reuid=2002", "--regid=2002", "--clear-groups", "/usr/bin/python3", "-c",
                              SUBSCRIBER, "Namespace", ns_path("alice"), "1"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert json.loads(q.stdout.readline()) == ["ok"]
        q.stdin.close()
        q.wait(timeout(10))
    finally:
        p.stdin.close()
        p.wait(timeout(10))
    wait_until(lambda: view_watch_fds(daemon) == [], "every watch to end with its subscribers")


SUBSCRIBING_UIDS = 40      # x 32 subscriptions, one bus name each: 1,280 names


def test_forty_users_subscribing_all_they_may_add_no_match_rule(daemon):
    """40 uids (users added for the test: dbus-daemon wants a user record) each hold the 32
    subscriptions one uid may, each from a bus name of its own. Each name was one sd_bus_track,
    one match rule of the daemon's on the bus: 16 uids used up dbus-daemon's 512 and the
    daemon left the bus. Names are watched through the one NameOwnerChanged match the daemon
    holds: its match rules stay as they were, and it answers root and the others; the names
    gone, their watches end."""
    create(daemon, "alice")
    before = daemon_match_rules(daemon)
    subscribers = []
    with extra_users(daemon, SUBSCRIBING_UIDS) as uids:
        subscribe_from_each(daemon, uids, subscribers, before)
    wait_until(lambda: view_watch_fds(daemon) == [], "every watch to end with its subscribers")
    assert daemon_match_rules(daemon) == before


def subscribe_from_each(daemon, uids, subscribers, before):
    try:
        for uid in uids:
            p = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/usr/bin/python3",
                                  "-c", SUBSCRIBER, "Manager", MANAGER_PATH, "32"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            subscribers.append(p)
        for i, p in enumerate(subscribers):
            results = json.loads(p.stdout.readline())
            assert results == ["ok"] * 32, f"uid {uids[i]}: {results}"
        assert daemon.daemon_running(), "the daemon left"
        assert daemon_match_rules(daemon) == before
        assert str(daemon.manager().GetNamespace("alice")) == ns_path("alice")
        q = subprocess.Popen(["setpriv", "--reuid=2002", "--regid=2002", "--clear-groups", "/usr/bin/python3", "-c",
                              SUBSCRIBER, "Namespace", ns_path("alice"), "1"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert json.loads(q.stdout.readline()) == ["ok"], "bob could not subscribe"
        q.stdin.close()
        q.wait(timeout(10))
    finally:
        for p in subscribers:
            p.stdin.close()
            p.wait(timeout(10))


def test_subscribe_refusals(daemon):
    """A namespace that is gone; the private socket, whose connections have no bus name."""
    (path,) = create(daemon, "alice")
    rec = subscribe(daemon, "alice")
    daemon.manager().RemoveNamespace("alice")
    expect_error(lambda: dbus.Interface(rec.bus.get_object(BUS_NAME, path), NAMESPACE_IFACE).Subscribe(),
                 "org.freedesktop.DBus.Error.UnknownObject", E_NO_SUCH_NAMESPACE)
    # The private socket serves logins their OpenSession and nothing else (an sd-bus client:
    # test_private_socket.py's private-call).
    from test_private_socket import private_call
    line = private_call(MANAGER_PATH, MANAGER_IFACE, "Subscribe")
    assert line.startswith("org.freedesktop.DBus.Error.UnknownMethod "), line


@pytest.mark.daemon_config(env={"NSM_MOUNT_EVENTS": "none"})
def test_mount_events_none(daemon):
    """With nothing to see changes with (the test knob), the property says so and Subscribe is
    refused rather than silent."""
    assert daemon.properties()["MountEvents"] == "none"
    expect_error(lambda: daemon.manager().Subscribe(), "org.freedesktop.DBus.Error.NotSupported")


# ---------------------------------------------------------------------------
# nsctl mounts --follow

class Follow:
    """nsctl mounts [USER] --follow in the background; lines as they come."""

    def __init__(self, sb, *args, as_user=None):
        argv = [str(nsctl_binary()), "mounts", *args, "--follow"]
        if as_user:
            argv = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups"] + argv
        self.p = sb.run_popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/run/dbus/system_bus_socket"))
        self.lines = []
        self._partial = b""

    def wait_line(self, predicate, what, wait=10):
        deadline = time.monotonic() + timeout(wait)
        fd = self.p.stdout.fileno()
        while True:
            for line in self.lines:
                if predicate(line):
                    return line
            left = deadline - time.monotonic()
            if left <= 0 or self.p.poll() is not None:
                raise AssertionError(f"nsctl --follow: no line {what} in {self.lines}; "
                                     f"stderr {self.p.stderr.read() if self.p.poll() is not None else ''}")
            # From the pipe itself: a buffered readline() would keep the second of two lines
            # that came in one read where select() cannot see it (a bind made right after a
            # host mount, both in one MountsChanged, looked lost).
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                *done, self._partial = (self._partial + chunk).split(b"\n")
                self.lines += [line.decode(errors="replace") for line in done]

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(timeout(10))
        assert rc == 0, f"nsctl --follow exited {rc} on SIGTERM: {self.p.stderr.read()}"


def test_follow_prints_a_host_mount_with_its_origin(daemon):
    create(daemon, "alice")
    f = Follow(daemon, "alice")
    try:
        f.wait_line(lambda line: line.startswith("ACTION"), "the header")
        daemon.mount_cd("/mnt/cd")
        group = find_mount(daemon.mountinfo(), "/mnt/cd").peer_group
        assert group
        line = f.wait_line(lambda line: line.startswith("mount") and " /mnt/cd " in line, "mounting /mnt/cd")
        assert f"from the host's /mnt/cd (peer group {group})" in line, line
        assert "NSM_TEST_CD" in line and "tmpfs" in line, line
        daemon.mount_tmpfs("/home/alice/mine", view="alice")
        line = f.wait_line(lambda line: "/home/alice/mine" in line, "alice's own mount")
        # In no peer group: made in the view, or a private copy of a host's mount; the kernel
        # cannot tell which.
        assert line.startswith("mount") and line.endswith("unknown (in no peer group)"), line
        daemon.umount("/mnt/cd")
        f.wait_line(lambda line: line.startswith("umount") and " /mnt/cd " in line, "unmounting /mnt/cd")
    finally:
        f.stop()


def test_follow_labels_a_daemon_bind_and_a_view_local_peer_group(daemon):
    """A bind nsmanagerd made says so (it is no copy of the host's /); a peer group made inside
    the view is "made in this view", not "another view's"; a group is named by the host's mount
    at the same mount point (the one the view's is a copy of), never by another member."""
    create(daemon, "alice")
    src = daemon.instance / "follow-src"
    src.mkdir()
    f = Follow(daemon, "alice")
    try:
        f.wait_line(lambda line: line.startswith("ACTION"), "the header")
        daemon.manager().BindMount("alice", str(src), "/home/alice/bound", 0x2)
        line = f.wait_line(lambda line: " /home/alice/bound " in line, "the daemon's bind")
        assert line.startswith("mount") and line.endswith("bound by nsmanagerd (BindMount)"), line

        daemon.in_view("alice", ["sh", "-c", "mkdir -p /home/alice/vl /home/alice/vl2 && "
                                 "mount -t tmpfs -o size=1m vl /home/alice/vl && mount --make-shared /home/alice/vl && "
                                 "mount --bind /home/alice/vl /home/alice/vl2"], check=True)
        group = find_mount(daemon.mountinfo("alice"), "/home/alice/vl2").peer_group
        assert group
        line = f.wait_line(lambda line: " /home/alice/vl2 " in line, "the bind of the view's own shared mount")
        assert line.endswith(f"made in this view (peer group {group})"), line

        # A view's bind of a host mount elsewhere: the host has the group, but no mount there.
        daemon.mount_cd("/mnt/cd")
        f.wait_line(lambda line: " /mnt/cd " in line, "the host's /mnt/cd")
        daemon.in_view("alice", ["sh", "-c", "mkdir -p /home/alice/cd && mount --bind /mnt/cd /home/alice/cd"],
                       check=True)
        line = f.wait_line(lambda line: " /home/alice/cd " in line, "the view's bind of /mnt/cd")
        assert "unknown" in line and "from the host's" not in line, line
    finally:
        f.stop()


def test_follow_json_and_escapes(daemon):
    """--json: one object per line. What a user names (a mount point with an ESC in it) never
    reaches the terminal as a control character: escaped by the daemon's rule, in JSON too."""
    create(daemon, "alice")
    nasty = "/home/alice/\x1b]0;PWNED\x07"
    f = Follow(daemon, "alice", "--json")
    try:
        # No header in JSON: the daemon watching alice's view says that nsctl has subscribed.
        wait_until(lambda: view_watch_fds(daemon), "nsctl to subscribe")
        daemon.mount_tmpfs("/mnt/json")
        line = f.wait_line(lambda line: '"/mnt/json"' in line, "/mnt/json")
        obj = json.loads(line)
        assert obj["action"] == "mount" and obj["target"] == "/mnt/json" and obj["origin"].startswith("from the host's")
        assert {"mount_id", "parent_id", "source", "fstype", "propagation", "peer_group", "master_group"} <= set(obj)
    finally:
        f.stop()
    g = Follow(daemon, "alice")
    try:
        g.wait_line(lambda line: line.startswith("ACTION"), "the header")
        daemon.mount_tmpfs(nasty, view="alice")
        line = g.wait_line(lambda line: "PWNED" in line, "the nasty mount point")
        assert "\x1b" not in line and "\x07" not in line and "\\x1b]0;PWNED\\x07" in line, repr(line)
    finally:
        g.stop()


def test_follow_the_host_as_a_user(daemon):
    """Everyone may follow the host (HostMountsChanged); a view that does not exist is an error."""
    f = Follow(daemon, as_user=2001)
    try:
        f.wait_line(lambda line: line.startswith("ACTION"), "the header")
        daemon.mount_tmpfs("/mnt/hostfollow")
        line = f.wait_line(lambda line: "/mnt/hostfollow" in line, "the host's mount")
        assert line.startswith("mount") and "peer group" in line, line
    finally:
        f.stop()
    p = daemon.run([nsctl_binary(), "mounts", "nobody-here", "--follow"])
    assert p.returncode == 1 and p.stderr.strip(), p
