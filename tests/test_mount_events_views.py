# SPDX-License-Identifier: LGPL-2.1-or-later
"""The aggregated subscriptions (Manager.SubscribeViews(), the ViewsMountsChanged signal;
Manager.SubscribeMountCounts(), the MountCountsChanged signal), and
that every kind of subscriber hears each mount once attached and once detached, on the
fanotify path and on the poll path (the daemon's test knob NSM_MOUNT_EVENTS=poll), docs/
mount-events.md and docs/interface.md."""

import collections
import os
import signal
import time

import dbus
import pytest

from helpers import E_LIMIT_EXCEEDED, create, expect_error, ns_path, wait_until
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, NAMESPACE_IFACE, timeout
from test_mount_events import reader_pids, view_watch_fds

MODES = {
    "fanotify": {},
    "poll": {"env": {"NSM_MOUNT_EVENTS": "poll"}},
    # Linux 6.1: no listmount(2), the views' tables from their mountinfo (ids the kernel reuses).
    "poll-mountinfo": {"env": {"NSM_MOUNT_EVENTS": "poll-mountinfo"}},
}
USERS = ("alice", "bob", "carol")


def subscriber(sb, kind, user=None):
    """A connection of its own subscribed as `kind`: "view" (Namespace.Subscribe() of user),
    "all" (Manager.Subscribe()), "views" (Manager.SubscribeViews()) or "counts"
    (Manager.SubscribeMountCounts())."""
    rec = sb.signals()
    if kind == "view":
        dbus.Interface(rec.bus.get_object(BUS_NAME, ns_path(user)), NAMESPACE_IFACE).Subscribe()
    else:
        manager = dbus.Interface(rec.bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE)
        {"views": manager.SubscribeViews, "counts": manager.SubscribeMountCounts}.get(kind, manager.Subscribe)()
    return rec


def counts(rec, start=None):
    """Each view's number of mounts as MountCountsChanged last told it (over `start`: view path
    → NMounts read after subscribing)."""
    out = dict(start or {})
    for s in rec.received:
        if s[1] == "MountCountsChanged":
            assert str(s[2]) == MANAGER_PATH
            out.update({str(p): int(n) for p, n in s[3][0]})
    return out


def nmounts(sb, users):
    """NMounts of each user's view, by path."""
    return {ns_path(u): int(sb.properties(ns_path(u))["NMounts"]) for u in users}


def per_view(rec, path):
    """MountsChanged of the view at `path`: attached [(id, point)], detached [id]."""
    sigs = [s for s in rec.received if s[1] == "MountsChanged" and str(s[2]) == path]
    return ([(int(i), str(m)) for s in sigs for (i, _, m) in s[3][0]], [int(i) for s in sigs for i in s[3][1]])


def aggregated(rec):
    """ViewsMountsChanged so far: Counters of (point, view path) attached and detached."""
    attached, detached = collections.Counter(), collections.Counter()
    for s in rec.received:
        if s[1] != "ViewsMountsChanged":
            continue
        assert str(s[2]) == MANAGER_PATH
        for counter, entries in ((attached, s[3][0]), (detached, s[3][1])):
            for point, views in entries:
                for v in views:
                    counter[(str(point), str(v))] += 1
    return attached, detached


def drain_until(recs, done, what, wait=20):
    deadline = time.monotonic() + timeout(wait)
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout(wait)}s for {what}")
        for r in recs:
            r.drain(0.02)


def test_views_subscription_lists_a_host_mount_once_with_its_views(daemon):
    """A host mount that reaches every view is one entry naming the views; a mount made in one
    view names that view alone; no MountsChanged is sent for an aggregated subscriber alone
    (a listener subscribed to nothing would hear any); the host's own changes come as
    HostMountsChanged."""
    paths = create(daemon, *USERS)
    listener = daemon.signals()
    rec = subscriber(daemon, "views")
    daemon.mount_cd("/mnt/cd")
    daemon.mount_tmpfs("/home/bob/own", view="bob")
    drain_until([rec, listener], lambda: aggregated(rec)[0][("/home/bob/own", ns_path("bob"))] and
                all(aggregated(rec)[0][("/mnt/cd", p)] for p in paths), "ViewsMountsChanged of /mnt/cd and /home/bob/own")
    entries = [(str(point), sorted(map(str, views))) for s in rec.received if s[1] == "ViewsMountsChanged"
               for point, views in s[3][0]]
    assert ("/mnt/cd", sorted(paths)) in entries, f"one entry with every view: {entries}"
    assert ("/home/bob/own", [ns_path("bob")]) in entries, entries
    drain_until([rec], lambda: any(s[1] == "HostMountsChanged" for s in rec.received), "HostMountsChanged of /mnt/cd")
    daemon.umount("/mnt/cd")
    drain_until([rec, listener], lambda: all(aggregated(rec)[1][("/mnt/cd", p)] for p in paths),
                "/mnt/cd detached in every view")
    listener.drain(0.3)
    assert not [s for s in listener.received if s[1] == "MountsChanged"], \
        "an aggregated subscriber alone made the daemon send per-view signals"
    assert not [s for s in rec.received if s[1] == "MountsChanged"]


def test_views_subscription_is_budgeted_and_ends_with_its_name(daemon):
    """It counts against the per-uid cap as Subscribe does; twice from one name is one; the
    name gone, the watches end."""
    create(daemon, "alice")
    recs = [subscriber(daemon, "views")]
    m = dbus.Interface(recs[0].bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE)
    m.SubscribeViews()
    m.UnsubscribeViews()
    m.UnsubscribeViews()
    wait_until(lambda: view_watch_fds(daemon) == [], "the watch to end with UnsubscribeViews")
    m.SubscribeViews()
    wait_until(lambda: view_watch_fds(daemon), "the watch of every view")
    recs[0].close()
    wait_until(lambda: view_watch_fds(daemon) == [], "the watch to end with the subscriber's name")


def setns_calls(pid, action):
    """The setns(2) calls of process pid while action() runs (strace attached)."""
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile("r", dir="/run", prefix="nsm-strace.") as out:
        st = subprocess.Popen(["strace", "-q", "-e", "trace=setns", "-o", out.name, "-p", str(pid)])
        try:
            wait_until(lambda: any(line.split()[1] != "0" for line in open(f"/proc/{pid}/status")
                                   if line.startswith("TracerPid:")), "strace to attach")
            action()
        finally:
            st.send_signal(signal.SIGINT)
            st.wait(timeout(10))
        return [line for line in out.read().splitlines() if "setns(" in line]


def test_mount_counts_of_every_view_are_read_without_entering_them(daemon):
    """SubscribeMountCounts(): each view whose number of mounts changed is named once per
    interval with its number, the one NMounts gives; its reader counts from outside the view
    (no setns(2)) unless someone wants that view's changes (Namespace.Subscribe()), then it
    enters that view alone, and counts from outside again once that watch ends; a view created
    while subscribed has its count told; the subscription ends with Unsubscribe."""
    paths = create(daemon, *USERS)
    bob_path = ns_path("bob")
    rec = subscriber(daemon, "counts")
    start = nmounts(daemon, USERS)
    assert start == {ns_path(u): daemon.mount_count(u) for u in USERS}, start
    [reader] = reader_pids(daemon)
    rec.drain(0.3)
    n0 = len(rec.received)
    assert not [s for s in rec.received if s[1] == "MountCountsChanged"], "counts sent that nothing changed"

    def host_mount():
        daemon.mount_tmpfs("/mnt/counted")
        drain_until([rec], lambda: counts(rec, start) == {p: start[p] + 1 for p in paths}, "every view counted")

    assert setns_calls(reader, host_mount) == [], "the reader entered views to count them"
    assert nmounts(daemon, USERS) == counts(rec, start) == {ns_path(u): daemon.mount_count(u) for u in USERS}
    rec.drain(0.3)
    seen = [s for s in rec.received[n0:] if s[1] == "MountCountsChanged"]
    assert sum(len(s[3][0]) for s in seen) == len(USERS), f"a view named twice for one mount: {seen}"

    # bob's changes wanted: his table is read (his view entered).
    bob = subscriber(daemon, "view", "bob")

    def host_umount():
        daemon.umount("/mnt/counted")
        drain_until([rec, bob], lambda: counts(rec, start) == start and per_view(bob, bob_path)[1],
                    "the unmount counted and told bob's subscriber")

    assert setns_calls(reader, host_umount), "bob's view was not read for his subscriber"
    daemon.mount_tmpfs("/home/bob/own", view="bob")
    drain_until([rec, bob], lambda: [p for _, p in per_view(bob, bob_path)[0]] == ["/home/bob/own"] and
                counts(rec, start)[bob_path] == start[bob_path] + 1, "bob's own mount, told and counted")
    daemon.umount("/home/bob/own", view="bob")
    drain_until([rec], lambda: counts(rec, start) == start, "bob's own unmount counted")
    bob.close()

    def bob_mounts():
        daemon.mount_tmpfs("/home/bob/own2", view="bob")
        drain_until([rec], lambda: counts(rec, start)[bob_path] == start[bob_path] + 1, "bob's mount counted")
        daemon.umount("/home/bob/own2", view="bob")
        drain_until([rec], lambda: counts(rec, start) == start, "bob's unmount counted")

    wait_until(lambda: not setns_calls(reader, bob_mounts),
               "bob's view counted from outside again once his subscriber left", wait=10)

    # A new view: its first count told.
    new = create(daemon, "dave")[0]
    drain_until([rec], lambda: counts(rec).get(new) == daemon.mount_count("dave"), "dave's view counted")
    dbus.Interface(rec.bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE).UnsubscribeMountCounts()
    wait_until(lambda: view_watch_fds(daemon) == [], "the watches to end with UnsubscribeMountCounts")


def test_subscribing_in_a_loop_leaves_each_view_read_as_wanted(daemon):
    """With every view counted, a client that subscribes to everything and unsubscribes 30
    times without waiting for the answers switches each view's reader between reading its
    table and counting it (one request per view at a time, docs/design.md); at the end bob's
    subscriber hears his mount, the counts are right, and once everyone but the counter has
    left, bob's view is counted from outside again."""
    create(daemon, *USERS)
    bob_path = ns_path("bob")
    counter = subscriber(daemon, "counts")
    start = nmounts(daemon, USERS)
    looper = daemon.signals()
    m = dbus.Interface(looper.bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE)
    answers = []
    for _ in range(30):
        for call in (m.Subscribe, m.Unsubscribe):
            call(reply_handler=lambda: answers.append("ok"), error_handler=lambda e: answers.append(e))
    drain_until([looper, counter], lambda: len(answers) == 60, "the 60 answers")
    assert answers == ["ok"] * 60, answers
    bob = subscriber(daemon, "view", "bob")
    daemon.mount_tmpfs("/home/bob/looped", view="bob")
    drain_until([bob, counter], lambda: "/home/bob/looped" in [p for _, p in per_view(bob, bob_path)[0]] and
                counts(counter, start)[bob_path] == start[bob_path] + 1, "bob's mount told and counted")
    assert nmounts(daemon, ["bob"])[bob_path] == start[bob_path] + 1
    daemon.umount("/home/bob/looped", view="bob")
    drain_until([bob, counter], lambda: counts(counter, start) == start, "bob's unmount counted")
    bob.close()
    looper.close()
    [reader] = reader_pids(daemon)

    def bob_mounts():
        daemon.mount_tmpfs("/home/bob/again", view="bob")
        drain_until([counter], lambda: counts(counter, start)[bob_path] == start[bob_path] + 1, "counted")
        daemon.umount("/home/bob/again", view="bob")
        drain_until([counter], lambda: counts(counter, start) == start, "counted")

    wait_until(lambda: not setns_calls(reader, bob_mounts), "bob's view counted from outside again", wait=10)


def test_mount_readers_follow_the_watches_and_are_replaced(daemon):
    """The views' tables are watched by the daemon's mount readers (docs/mount-events.md): none
    runs while nobody watches; one killed is replaced and its views watched again, so that a
    host mount is still heard in every view; the last watch gone, no reader is left."""
    paths = create(daemon, *USERS)
    assert reader_pids(daemon) == [], "a mount reader runs while nobody watches"
    rec = subscriber(daemon, "views")
    first = reader_pids(daemon)
    assert first, "no mount reader watches the views"
    assert len(view_watch_fds(daemon)) == len(USERS), view_watch_fds(daemon)
    for pid in first:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: reader_pids(daemon) and not set(reader_pids(daemon)) & set(first) and
               len(view_watch_fds(daemon)) == len(USERS), "another reader to watch every view")
    time.sleep(0.3)   # its first tables read (what is mounted before them is their start)
    daemon.mount_cd("/mnt/cd")
    drain_until([rec], lambda: all(aggregated(rec)[0][("/mnt/cd", p)] for p in paths),
                "/mnt/cd attached in every view after the reader was replaced")
    daemon.umount("/mnt/cd")
    drain_until([rec], lambda: all(aggregated(rec)[1][("/mnt/cd", p)] for p in paths),
                "/mnt/cd detached in every view")
    rec.close()
    wait_until(lambda: reader_pids(daemon) == [], "the reader to end with the last watch")


def test_a_view_mount_swapped_within_an_interval_is_heard(daemon):
    """A reader lists only what is new where the namespace's count of mounts says nothing else
    changed (docs/mount-events.md): an unmount of the newest mount and of an old one (past
    the newest few it checks), each with a mount in the same command, are both heard, the
    gone mount detached and the new one attached, once."""
    path = create(daemon, "alice")[0]
    rec = subscriber(daemon, "view", "alice")
    points = [f"/home/alice/sw{i}" for i in range(10)]
    daemon.in_view("alice", ["sh", "-c", "; ".join(f"mkdir -p {p} && mount -t tmpfs -o size=1m sw {p}"
                                                   for p in points)], check=True)
    drain_until([rec], lambda: len(per_view(rec, path)[0]) == len(points), "the ten mounts")
    ids = {p: i for i, p in per_view(rec, path)[0]}
    # The newest one goes (found among the newest), then the oldest (not: the whole table).
    for gone, new in ((points[-1], "/home/alice/swa"), (points[0], "/home/alice/swb")):
        daemon.in_view("alice", ["sh", "-c", f"umount {gone} && mkdir -p {new} && "
                                 f"mount -t tmpfs -o size=1m sw {new}"], check=True)
        drain_until([rec], lambda: new in [p for _, p in per_view(rec, path)[0]] and
                    ids[gone] in per_view(rec, path)[1], f"{gone} detached and {new} attached")
    rec.drain(0.3)
    attached, detached = per_view(rec, path)
    assert sorted(detached) == sorted([ids[points[-1]], ids[points[0]]]), (attached, detached)
    assert sorted(p for _, p in attached) == sorted(points + ["/home/alice/swa", "/home/alice/swb"]), attached


# alice's subscriptions, each from a bus name of its own, as a user's client would.
CAPPED = r"""
import json, sys, dbus
results, buses = [], []
for i in range(int(sys.argv[1])):
    bus = dbus.bus.BusConnection("unix:path=/run/dbus/system_bus_socket")
    buses.append(bus)
    try:
        m = dbus.Interface(bus.get_object("org.example.NSManager", "/org/example/NSManager"),
                           "org.example.NSManager.Manager")
        (m.Subscribe, m.SubscribeViews, m.SubscribeMountCounts)[i % 3]()
        results.append("ok")
    except dbus.DBusException as e:
        results.append(e.get_dbus_name())
print(json.dumps(results), flush=True)
sys.stdin.read()
"""


def test_views_subscriptions_count_against_the_per_uid_cap(daemon):
    import json
    import subprocess
    create(daemon, "alice")
    p = subprocess.Popen(["setpriv", "--reuid=2001", "--regid=2001", "--clear-groups", "/usr/bin/python3", "-c",
                          CAPPED, "33"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        results = json.loads(p.stdout.readline())
        assert results == ["ok"] * 32 + [E_LIMIT_EXCEEDED], results
    finally:
        p.stdin.close()
        p.wait(timeout(10))
    wait_until(lambda: view_watch_fds(daemon) == [], "every watch to end with its subscribers")


ROUNDS = 3
HOST_MOUNTS = 4


@pytest.mark.parametrize("mode", MODES)
def test_every_subscriber_hears_each_mount_once(sandbox, request, mode):
    """3 views × 4 host mounts under the slave rest of / per round, and right after them (no
    pause) a mount made in one view, then all unmounted, 3 rounds (each mount heard before it
    goes: one attached and detached within an interval may be in neither list): every per-view subscriber,
    a Manager subscriber and an aggregated one each hear every mount once attached and once
    detached, none missed, none twice."""
    request.applymarker(pytest.mark.daemon_config(**MODES[mode]))
    sb = request.getfixturevalue("daemon")
    assert sb.properties()["MountEvents"] == mode.split("-")[0]
    paths = dict(zip(USERS, create(sb, *USERS)))
    views = {u: subscriber(sb, "view", u) for u in USERS}
    everything = subscriber(sb, "all")
    agg = subscriber(sb, "views")
    counter = subscriber(sb, "counts")
    start = nmounts(sb, USERS)
    recs = [*views.values(), everything, agg, counter]

    expected = collections.Counter()          # (point, view path) → mounts attached there
    gone = collections.Counter()              # … and detached

    def heard(rec, u):
        attached, detached = per_view(rec, paths[u])
        want = collections.Counter(p for (p, v), n in expected.items() if v == paths[u] for _ in range(n))
        ids = {p: [i for i, q in attached if q == p] for p in want}
        want_gone = [i for (p, v), n in gone.items() if v == paths[u] for i in ids.get(p, [])[:n]]
        return collections.Counter(p for _, p in attached) == want and sorted(detached) == sorted(want_gone)

    def counted():
        return {paths[u]: start[paths[u]] + sum(n for (p, v), n in expected.items() if v == paths[u]) -
                sum(n for (p, v), n in gone.items() if v == paths[u]) for u in USERS}

    def all_heard():
        return (all(heard(views[u], u) for u in USERS) and all(heard(everything, u) for u in USERS) and
                aggregated(agg) == (expected, gone) and counts(counter, start) == counted())

    def state():
        return (f"per view: { {u: per_view(views[u], paths[u]) for u in USERS} }\n"
                f"manager: { {u: per_view(everything, paths[u]) for u in USERS} }\n"
                f"aggregated: {aggregated(agg)}\ncounts: {counts(counter, start)}, want {counted()}\n"
                f"expected: {expected}\ngone: {gone}")

    def wait_all(what):
        try:
            drain_until(recs, all_heard, what, wait=30)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{state()}") from None

    for r in range(ROUNDS):
        points = [f"/mnt/ev{r}-{i}" for i in range(HOST_MOUNTS)]
        owner = USERS[r % 3]
        local = f"/home/{owner}/local{r}"
        for p in points:
            sb.mount_tmpfs(p)
        sb.mount_tmpfs(local, view=owner)      # the lost-event race: right after the host's
        changed = [(p, paths[u]) for p in points for u in USERS] + [(local, paths[owner])]
        expected.update(changed)
        wait_all(f"round {r}: every subscriber to hear every mount attached")
        assert counts(counter, start) == {paths[u]: sb.mount_count(u) for u in USERS}, state()
        for p in points:
            sb.umount(p)
        sb.umount(local, view=owner)
        gone.update(changed)
        wait_all(f"round {r}: every subscriber to hear every mount detached")

    # A last mount, heard by all: a duplicate of any earlier change would have come before it.
    sb.mount_tmpfs("/mnt/ev-end")
    for u in USERS:
        expected[("/mnt/ev-end", paths[u])] += 1
    drain_until(recs, lambda: all(("/mnt/ev-end" in [p for _, p in per_view(r, paths[u])[0]])
                                  for u in USERS for r in (views[u], everything)) and
                all(aggregated(agg)[0][("/mnt/ev-end", paths[u])] for u in USERS), "/mnt/ev-end")
    sb.umount("/mnt/ev-end")
    assert aggregated(agg)[1] == gone, state()
    for u in USERS:
        attached, detached = per_view(views[u], paths[u])
        # (mountinfo's ids, as before Linux 6.8, come back for a later mount: the mount is its id
        # and mount point there)
        once = set(attached) if mode == "poll-mountinfo" else {i for i, _ in attached}
        assert len(attached) == len(once), f"{u}: a mount listed twice: {attached}"
        assert collections.Counter(p for _, p in attached) == \
            collections.Counter(p for (p, v), n in expected.items() if v == paths[u] for _ in range(n)), state()
        assert per_view(everything, paths[u])[0] == attached or \
            sorted(per_view(everything, paths[u])[0]) == sorted(attached), state()
    assert aggregated(agg)[0] == expected, state()
    drain_until([counter], lambda: counts(counter, start) == start, "every view's count back to its start")
    assert start == {paths[u]: sb.mount_count(u) for u in USERS}


STORM = 8500      # mounts and unmounts: 17,000 events, past the kernel's default queue of 16,384


@pytest.mark.daemon_config(env={"NSM_FANOTIFY_QUEUE": "bounded"})
def test_an_overflow_of_the_kernels_queue_is_read_again(daemon):
    """The daemon asks for an unlimited fanotify queue; with the kernel's default one (the test
    knob NSM_FANOTIFY_QUEUE=bounded) 8,500 host mounts and unmounts while the daemon is
    stopped overflow it, and the events of what came last are lost. The daemon reads the host's
    table again: a Manager subscriber still hears of the mount that went meanwhile and of the
    one that stayed, each once."""
    import os
    import signal
    from sandbox import sys_mount, sys_umount
    assert daemon.properties()["MountEvents"] == "fanotify"
    rec = subscriber(daemon, "all")

    def host(point):
        sigs = [s for s in rec.received if s[1] == "HostMountsChanged"]
        return ([int(i) for s in sigs for (i, _, m) in s[3][0] if str(m) == point], [int(i) for s in sigs for i in s[3][1]])

    daemon.mount_tmpfs("/mnt/before")
    drain_until([rec], lambda: host("/mnt/before")[0], "/mnt/before attached")
    [before] = host("/mnt/before")[0]
    storm = daemon.subtree_root.parent / "storm"
    storm.mkdir()
    os.kill(daemon.daemon.pid, signal.SIGSTOP)
    try:
        for _ in range(STORM):
            sys_mount("storm", str(storm), "tmpfs", 0, "size=16k")
            sys_umount(str(storm))
        daemon.umount("/mnt/before")
        daemon.mount_tmpfs("/mnt/kept")
    finally:
        os.kill(daemon.daemon.pid, signal.SIGCONT)
    drain_until([rec], lambda: host("/mnt/kept")[0] and before in host("/mnt/kept")[1], "/mnt/kept attached and "
                "/mnt/before detached after the overflow", wait=30)
    assert "dropped mount events" in daemon.daemon_log.read_text(), "the queue did not overflow"
    rec.drain(0.3)
    assert len(host("/mnt/kept")[0]) == 1 and host("/mnt/kept")[1].count(before) == 1, host("/mnt/kept")


@pytest.mark.parametrize("mode", MODES)
def test_follow_prints_a_bind_made_right_after_a_host_mount(sandbox, request, mode):
    """A host mount and, right after it, a bind in alice's view come in one MountsChanged and
    nsctl --follow prints both lines at once. The tests' reader of its output used to read a
    buffered line and then wait on the pipe: the second line sat in the buffer and the bind
    looked lost (now it reads the pipe itself, tests/test_mount_events.py's Follow)."""
    from test_mount_events import Follow
    request.applymarker(pytest.mark.daemon_config(**MODES[mode]))
    sb = request.getfixturevalue("daemon")
    create(sb, "alice")
    f = Follow(sb, "alice")
    try:
        f.wait_line(lambda line: line.startswith("ACTION"), "the header")
        for i in range(20):
            sb.mount_tmpfs(f"/mnt/r{i}")
            sb.in_view("alice", ["sh", "-c", f"mkdir -p /home/alice/b{i} && mount --bind /home/alice/b{i} /home/alice/b{i}"],
                       check=True)
            f.wait_line(lambda line, i=i: line.startswith("mount") and f" /mnt/r{i} " in line, f"mounting /mnt/r{i}")
            f.wait_line(lambda line, i=i: line.startswith("mount") and f" /home/alice/b{i} " in line,
                        f"binding /home/alice/b{i}")
    finally:
        f.stop()
