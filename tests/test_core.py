# SPDX-License-Identifier: LGPL-2.1-or-later
"""nsmanagerd core: start-up, views (created, looked at, propagating, removed), and the
interface as busctl shows it. The refusals of user names are in test_refusals.py, crashes
and restarts in test_restart.py.

Everything goes through the real bus (dbus-python, busctl) to a real nsmanagerd in
the sandbox of conftest.py; views are entered with the fd of OpenMountNamespace.
The interface is described in docs/interface.md."""

import os
import re
import time
import xml.etree.ElementTree as ET

import dbus
import pytest

from helpers import E_NO_SUCH_NAMESPACE, E_NO_SUCH_USER, create, expect_error, ns_path, open_session, wait_until
from sandbox import (BUS_NAME, MANAGER_IFACE, MANAGER_PATH, NAMESPACE_IFACE, PROPERTIES_IFACE,
                     TEST_USERS, find_mount, mntns_id)


def targets(mounts):
    return [m.target for m in mounts]


def is_mount_point(mounts, path):
    return find_mount(mounts, path) is not None


# ---------------------------------------------------------------------------
# Start-up

def test_startup_propagation(daemon):
    """SubtreeRoot bound onto itself and unbindable, /mnt shared, / shared (the
    sandbox starts with everything private, as a machine without systemd)."""
    mounts = daemon.mountinfo()
    subtree = find_mount(mounts, str(daemon.subtree_root))
    assert subtree is not None, f"SubtreeRoot {daemon.subtree_root} is not a mount point"
    assert subtree.unbindable, f"SubtreeRoot is {subtree.propagation}, expected unbindable"
    mnt = find_mount(mounts, "/mnt")
    assert mnt.shared, f"/mnt is {mnt.propagation}, expected shared"
    root = find_mount(mounts, "/")
    assert root.shared, f"/ is {root.propagation}, expected shared"

    # findmnt agrees (the administrator's view of the same facts)
    by_target = {fs["target"]: fs for fs in daemon.findmnt_json()}
    assert "unbindable" in by_target[str(daemon.subtree_root)]["propagation"]
    assert by_target["/mnt"]["propagation"].startswith("shared")
    assert by_target["/"]["propagation"].startswith("shared")


def test_startup_later_mounts_propagate_everywhere(daemon):
    """/ made shared recursively (as systemd does), not just the root mount: the
    sandbox's own tmpfs mounts (/home, /tmp) must be shared too."""
    mounts = daemon.mountinfo()
    for path in ("/home", "/tmp"):
        m = find_mount(mounts, path)
        assert m.shared, f"{path} is {m.propagation} after start-up, expected shared"


def test_manager_properties(daemon):
    props = daemon.properties(MANAGER_PATH)
    assert isinstance(props["Version"], dbus.String) and props["Version"]
    assert props["SubtreeRoot"] == str(daemon.subtree_root)
    assert list(props["SharedSubtrees"]) == ["/mnt"]
    assert props["SharedSubtrees"].signature == "s"


@pytest.mark.daemon_config(SharedSubtrees="/mnt /tmp/nsmanager-sandbox/media")
def test_startup_binds_shared_subtree_that_is_no_mount_point(daemon):
    """A SharedSubtrees path that is not a mount point is bound onto itself first."""
    m = find_mount(daemon.mountinfo(), "/tmp/nsmanager-sandbox/media")
    assert m is not None and m.shared, "the second shared subtree is not a shared mount point"


def test_ready_notification(instance):
    """sd_notify(READY=1) once the bus name is taken."""
    instance.start_daemon(notify=True)
    wait_until(lambda: any("READY=1" in n.split("\n") for n in instance.notifications()), "READY=1",
               interval=0.01, diag=lambda: f"notifications: {instance.notifications()}")


# ---------------------------------------------------------------------------
# Creating, properties, listing

def test_create_is_idempotent(daemon, signals):
    first = daemon.manager().CreateNamespace("alice")
    second = daemon.manager().CreateNamespace("alice")
    assert isinstance(first, dbus.ObjectPath)
    assert first == second == ns_path("alice")
    # The daemon's signals come in the order it sends them: once bob's NamespaceNew is here,
    # a second one of alice's would be too.
    daemon.manager().CreateNamespace("bob")
    marker = signals.wait_for("NamespaceNew", lambda a: a[0] == "bob")
    news = [s for s in signals.received[:signals.received.index(marker)] if s[1] == "NamespaceNew"]
    assert len(news) == 1, f"NamespaceNew emitted {len(news)} times for one namespace: {news}"


def test_namespace_new_signal(daemon, signals):
    (path,) = create(daemon, "bob")
    iface, member, sigpath, args = signals.wait_for("NamespaceNew", lambda a: a[0] == "bob")
    assert iface == MANAGER_IFACE and sigpath == MANAGER_PATH
    assert args == ("bob", path)
    assert isinstance(args[1], dbus.ObjectPath)


def test_namespace_properties(daemon):
    before = time.time_ns() // 1000
    (path,) = create(daemon, "alice")
    after = time.time_ns() // 1000
    p = daemon.properties(path)
    alice = TEST_USERS["alice"]

    assert p["Name"] == "alice" and isinstance(p["Name"], dbus.String)
    assert p["UID"] == alice.uid and isinstance(p["UID"], dbus.UInt32)
    assert p["GID"] == alice.gid and isinstance(p["GID"], dbus.UInt32)
    assert p["State"] in ("active", "lingering", "closing") and isinstance(p["State"], dbus.String)
    assert p["State"] != "closing"
    assert p["Root"] == f"{daemon.subtree_root}/alice"
    assert list(p["Sessions"]) == [] and p["Sessions"].signature == "s"
    assert p["Linger"] is not None and isinstance(p["Linger"], dbus.Boolean) and not p["Linger"]
    assert isinstance(p["MountNamespaceId"], dbus.UInt64)
    assert isinstance(p["Timestamp"], dbus.UInt64)
    assert before <= p["Timestamp"] <= after, f"Timestamp {p['Timestamp']} not in [{before}, {after}]"
    assert isinstance(p["NMounts"], dbus.UInt32)

    # MountNamespaceId is what readlink /proc/self/ns/mnt shows inside
    inside = daemon.view_ns_id("alice")
    assert p["MountNamespaceId"] == inside
    assert inside != mntns_id(), "the view is the host's own mount namespace"
    # NMounts counts the mounts of the namespace
    assert p["NMounts"] == daemon.mount_count("alice")


def test_last_session_closed_is_one_change(daemon):
    """Closing the last session (or ending linger without one) changes Sessions and State
    together: one PropertiesChanged saying "closing", never an "active" namespace without
    sessions on the way."""
    mgr = daemon.manager()
    (path,) = create(daemon, "alice")
    fd = open_session(mgr, "alice", "only")
    with daemon.signals(interface=PROPERTIES_IFACE) as rec:
        mgr.CloseSession("alice", "only")
        os.close(fd)
        rec.wait_for("PropertiesChanged", lambda a: a[1].get("State") == "closing")
        mgr.SetLinger("alice", True)
        rec.wait_for("PropertiesChanged", lambda a: a[1].get("Linger"))
        mgr.SetLinger("alice", False)
        rec.wait_for("PropertiesChanged", lambda a: "Linger" in a[1] and not a[1]["Linger"])
        # One more change, after which nothing of the three can still be on its way (the
        # daemon's signals come in the order it sends them).
        marker_fd = open_session(mgr, "alice", "marker")
        marker = rec.wait_for("PropertiesChanged", lambda a: "marker" in a[1].get("Sessions", []))
        os.close(marker_fd)
        changes = [(str(a[1]["State"]), list(a[1]["Sessions"]), bool(a[1]["Linger"]))
                   for _, member, p, a in rec.received[:rec.received.index(marker)]
                   if member == "PropertiesChanged" and p == path]
    assert changes == [("closing", [], False), ("lingering", [], True), ("closing", [], False)], changes


def test_get_namespace_and_by_uid(daemon):
    alice, bob = create(daemon, "alice", "bob")
    m = daemon.manager()
    assert m.GetNamespace("alice") == alice
    assert m.GetNamespace("bob") == bob
    assert m.GetNamespaceByUID(dbus.UInt32(2002)) == bob
    assert m.GetNamespaceByUID(2001) == alice
    expect_error(lambda: m.GetNamespaceByUID(2004), E_NO_SUCH_NAMESPACE)          # dave: none yet
    expect_error(lambda: m.GetNamespaceByUID(4242), E_NO_SUCH_NAMESPACE, E_NO_SUCH_USER)


def test_list_namespaces_sorted(daemon):
    for u in ("dave", "bob", "carol", "alice"):
        create(daemon, u)
    listed = daemon.manager().ListNamespaces()
    assert listed.signature == "(suso)"
    rows = [(str(u), int(uid), str(state), str(path)) for u, uid, state, path in listed]
    assert [r[0] for r in rows] == ["alice", "bob", "carol", "dave"]
    for user, uid, state, path in rows:
        assert uid == TEST_USERS[user].uid
        assert path == ns_path(user)
        assert state in ("active", "lingering", "closing")


def test_view_root_is_the_machine_root(daemon):
    """The view is a bind copy of the host's /, in a mount namespace of its own, and
    each user has a different one."""
    create(daemon, "alice", "bob")
    host = daemon.run(["stat", "-c", "%d:%i", "/"], check=True).stdout
    assert daemon.in_view("alice", ["stat", "-c", "%d:%i", "/"], check=True).stdout == host
    assert daemon.view_ns_id("alice") != daemon.view_ns_id("bob")
    # the users' data is all there
    assert daemon.in_view("alice", ["getent", "passwd", "bob"], check=True).stdout.startswith("bob:")
    assert daemon.in_view("alice", ["test", "-d", "/home/alice"]).returncode == 0


def test_get_mounts(daemon):
    """GetMounts: a(ttttssss) matching /proc/self/mountinfo of the host ("") and of a view."""
    create(daemon, "alice")
    m = daemon.manager()

    host = m.GetMounts("")
    assert host.signature == "(ttttssss)"
    host_table = {int(r[0]): r for r in host}
    ours = {x.id: x for x in daemon.mountinfo()}
    assert set(host_table) == set(ours)
    for mid, (_id, parent, peer, master, point, source, fstype, prop) in host_table.items():
        mi = ours[mid]
        assert (int(parent), int(peer), int(master), str(point), str(fstype), str(prop)) == \
            (mi.parent, mi.peer_group, mi.master, mi.target, mi.fstype, mi.propagation), f"host mount {mi}"
    assert host_table[find_mount(daemon.mountinfo(), str(daemon.subtree_root)).id][7] == "private,unbindable"

    view = {int(r[0]): r for r in m.GetMounts("alice")}
    inside = {x.id: x for x in daemon.mountinfo("alice")}
    assert set(view) == set(inside)
    for mid, row in view.items():
        assert str(row[4]) == inside[mid].target, "mount points must be relative to the view's root"
        assert str(row[7]) == inside[mid].propagation
    points = [str(r[4]) for r in view.values()]
    assert "/" in points and "/mnt" in points
    assert not any(p.startswith(str(daemon.subtree_root)) for p in points)

    # the Namespace object's own GetMounts gives the same table
    ns_rows = {int(r[0]) for r in daemon.namespace(ns_path("alice")).GetMounts()}
    assert ns_rows == set(inside)


# ---------------------------------------------------------------------------
# Views: pruned, equal, cheap

def test_views_pruned_and_equal_size(daemon):
    """No view holds any /subtree/* tree (its own or another user's), and a view is as big
    with four users as with one."""
    users = ["alice", "bob", "carol", "dave"]
    counts = {}
    for i, u in enumerate(users):
        create(daemon, u)
        counts[u] = [daemon.mount_count(v) for v in users[:i + 1]]
    first = counts["alice"][0]
    for u, c in counts.items():
        assert c == [first] * len(c), f"view mount counts after creating {u}: {c} (alice alone: {first})"

    for viewer in users:
        mounts = daemon.mountinfo(viewer)
        under = [str(m) for m in mounts if m.target.startswith(str(daemon.subtree_root))]
        assert not under, f"{viewer}'s view holds subtree mounts: {under}"
        # the directories under SubtreeRoot are plain empty mount points, nothing of the others
        for other in users:
            listing = daemon.in_view(viewer, ["find", f"{daemon.subtree_root}/{other}", "-mindepth", "1"])
            assert listing.stdout == "", f"{viewer} sees {other}'s tree:\n{listing.stdout}"
        # the view holds every host mount except the pruned SubtreeRoot (and the daemon's
        # own StateDirectory: namespace pins are never copied into new namespaces)
        host_points = {t for t in targets(daemon.mountinfo())
                       if t != str(daemon.subtree_root) and not t.startswith(str(daemon.state_dir))}
        assert host_points <= set(targets(mounts)), \
            f"{viewer}'s view lacks host mounts: {sorted(host_points - set(targets(mounts)))}"


def test_host_mount_table_does_not_grow(daemon):
    create(daemon, "alice")
    one = daemon.mountinfo()
    create(daemon, "bob", "carol", "dave")
    four = daemon.mountinfo()
    assert len(four) == len(one), \
        f"host mounts: {len(one)} with 1 namespace, {len(four)} with 4; new: " \
        f"{[str(m) for m in four if m.id not in {x.id for x in one}]}"


# ---------------------------------------------------------------------------
# Propagation

def test_host_mnt_mount_reaches_every_view(daemon):
    users = ["alice", "bob", "carol"]
    create(daemon, *users)
    marker, content = daemon.mount_cd("/mnt/cd")
    for u in users:
        assert daemon.in_view(u, ["cat", marker]).stdout == content, f"the CD is not in {u}'s /mnt"
        fs = {f["target"]: f for f in daemon.findmnt_json(u)}
        assert fs["/mnt/cd"]["fstype"] == "tmpfs" and fs["/mnt/cd"]["source"] == "NSM_TEST_CD"
    daemon.umount("/mnt/cd")
    for u in users:
        assert not is_mount_point(daemon.mountinfo(u), "/mnt/cd"), f"eject did not reach {u}"


def test_namespace_created_after_host_mount_sees_it(daemon):
    marker, content = daemon.mount_cd("/mnt/cd")
    create(daemon, "alice")
    assert daemon.in_view("alice", ["cat", marker]).stdout == content


def test_user_mnt_mount_reaches_host_and_other_views(daemon):
    create(daemon, "alice", "bob", "carol")
    daemon.mount_tmpfs("/mnt/alice-usb", source="alice-usb", files={"data.txt": "from alice\n"}, view="alice")
    assert daemon.run(["cat", "/mnt/alice-usb/data.txt"]).stdout == "from alice\n", "not on the host"
    for u in ("bob", "carol"):
        assert daemon.in_view(u, ["cat", "/mnt/alice-usb/data.txt"]).stdout == "from alice\n", f"not in {u}'s view"
    host = find_mount(daemon.mountinfo(), "/mnt/alice-usb")
    assert host.source == "alice-usb"
    daemon.umount("/mnt/alice-usb", view="alice")
    assert not is_mount_point(daemon.mountinfo(), "/mnt/alice-usb")
    assert not is_mount_point(daemon.mountinfo("bob"), "/mnt/alice-usb")


def test_user_home_mount_stays_in_view(daemon):
    """Outside the shared subtrees a view is a slave: its mounts go nowhere."""
    create(daemon, "alice", "bob")
    before = len(daemon.mountinfo())
    daemon.mount_tmpfs("/home/alice/fuse", source="alice-fuse", files={"f": "x"}, view="alice")
    assert is_mount_point(daemon.mountinfo("alice"), "/home/alice/fuse")
    assert not is_mount_point(daemon.mountinfo(), "/home/alice/fuse"), "alice's home mount reached the host"
    assert not is_mount_point(daemon.mountinfo("bob"), "/home/alice/fuse"), "alice's home mount reached bob"
    assert len(daemon.mountinfo()) == before
    daemon.umount("/home/alice/fuse", view="alice")


def test_later_host_mounts_elsewhere_reach_views(daemon):
    """ViewPropagation=slave (default): what the host mounts later anywhere (a new export
    under /home, a /srv-like directory) appears in every view."""
    create(daemon, "alice", "bob")
    srv = "/tmp/nsmanager-sandbox/srv/export"
    daemon.mount_tmpfs("/home/nfs-auto", source="nfs-auto", files={"f": "home export\n"})
    daemon.mount_tmpfs(srv, source="srv-export", files={"f": "srv export\n"})
    for u in ("alice", "bob"):
        assert daemon.in_view(u, ["cat", "/home/nfs-auto/f"]).stdout == "home export\n", f"/home mount not in {u}'s view"
        assert daemon.in_view(u, ["cat", f"{srv}/f"]).stdout == "srv export\n", f"/srv-like mount not in {u}'s view"
    daemon.umount("/home/nfs-auto")
    assert not is_mount_point(daemon.mountinfo("alice"), "/home/nfs-auto"), "host unmount did not reach alice"


# ---------------------------------------------------------------------------
# Removing

def test_remove_namespace_leaves_nothing(daemon, signals):
    start = daemon.mountinfo()
    (path,) = create(daemon, "alice")
    daemon.manager().RemoveNamespace("alice")
    iface, member, sigpath, args = signals.wait_for("NamespaceRemoved")
    assert args == ("alice", path)

    after = daemon.mountinfo()
    new = [str(m) for m in after if m.id not in {x.id for x in start}]
    assert not new and len(after) == len(start), f"left on the host: {new}"
    assert not is_mount_point(after, f"{daemon.subtree_root}/alice")
    expect_error(lambda: daemon.manager().GetNamespace("alice"), E_NO_SUCH_NAMESPACE)
    expect_error(lambda: daemon.manager().GetNamespaceByUID(2001), E_NO_SUCH_NAMESPACE)
    assert [str(r[0]) for r in daemon.manager().ListNamespaces()] == []
    with pytest.raises(dbus.exceptions.DBusException):
        daemon.properties(path)
    expect_error(lambda: daemon.manager().RemoveNamespace("alice"), E_NO_SUCH_NAMESPACE)

    # and it can be made again
    assert create(daemon, "alice") == [path]


def test_namespace_remove_method(daemon, signals):
    (path,) = create(daemon, "bob")
    daemon.namespace(path).Remove()
    signals.wait_for("NamespaceRemoved", lambda a: a[0] == "bob")
    expect_error(lambda: daemon.manager().GetNamespace("bob"), E_NO_SUCH_NAMESPACE)


def test_remove_keeps_other_views_working(daemon):
    create(daemon, "alice", "bob")
    daemon.manager().RemoveNamespace("alice")
    marker, content = daemon.mount_cd("/mnt/cd")
    assert daemon.in_view("bob", ["cat", marker]).stdout == content


# ---------------------------------------------------------------------------
# Introspection (as an administrator sees it with busctl)

CORE_METHODS = {
    # name: (in signature, in argument names, out signature)
    "CreateNamespace": ("s", ["user"], "o"),
    "RemoveNamespace": ("s", ["user"], ""),
    "GetNamespace": ("s", ["user"], "o"),
    "GetNamespaceByUID": ("u", ["uid"], "o"),
    "ListNamespaces": ("", [], "a(suso)"),
    "OpenMountNamespace": ("s", ["user"], "h"),
    "GetMounts": ("s", ["user"], "a(ttttssss)"),
}
OTHER_METHODS = {
    "OpenSession": ("ss", ["user", "session_id"], "ohh"),
    "CloseSession": ("ss", ["user", "session_id"], ""),
    "ShareSubtree": ("ss", ["user", "path"], ""),
    "EnslaveSubtree": ("ss", ["user", "path"], ""),
    "SetPropagation": ("ssst", ["user", "path", "mode", "flags"], ""),
    "BindMount": ("ssst", ["user", "source", "destination", "flags"], ""),
    "Unmount": ("sst", ["user", "path", "flags"], ""),
    "SetLinger": ("sb", ["user", "enable"], ""),
    "Attach": ("sasasshhhh", ["user", "command", "environment", "working_directory",
                               "stdin", "stdout", "stderr", "status"], "u"),
    "OpenAttach": ("sasasst", ["user", "command", "environment", "working_directory", "flags"], "uhhhh"),
    "ReloadConfig": ("", [], ""),
}
NAMESPACE_PROPERTIES = {"Name": "s", "UID": "u", "GID": "u", "State": "s", "Root": "s",
                        "Sessions": "as", "Linger": "b", "MountNamespaceId": "t",
                        "Timestamp": "t", "NMounts": "u"}


def busctl_interface(sb, path, interface):
    xml = sb.run(["busctl", "--system", "--xml-interface", "introspect", BUS_NAME, path], check=True).stdout
    for iface in ET.fromstring(xml).iter("interface"):
        if iface.get("name") == interface:
            return iface
    raise AssertionError(f"{interface} not in the introspection of {path}")


def method_table(iface):
    table = {}
    for m in iface.iter("method"):
        ins = [a for a in m.iter("arg") if a.get("direction", "in") == "in"]
        outs = [a for a in m.iter("arg") if a.get("direction") == "out"]
        table[m.get("name")] = ("".join(a.get("type") for a in ins), [a.get("name") for a in ins],
                                "".join(a.get("type") for a in outs), [a.get("name") for a in outs])
    return table


def test_busctl_introspect_manager(daemon):
    text = daemon.run(["busctl", "--system", "introspect", BUS_NAME, MANAGER_PATH, MANAGER_IFACE],
                      check=True).stdout
    assert re.search(r"^\.CreateNamespace\s+method\s+s\s+o\s", text, re.M), text

    methods = method_table(busctl_interface(daemon, MANAGER_PATH, MANAGER_IFACE))
    for name, (sig_in, names, sig_out) in CORE_METHODS.items():
        assert name in methods, f"Manager lacks {name}"
        assert methods[name][:3] == (sig_in, names, sig_out), f"{name}: {methods[name]}"
        assert all(methods[name][3]), f"{name}: unnamed out arguments"

    iface = busctl_interface(daemon, MANAGER_PATH, MANAGER_IFACE)
    sigs = {s.get("name"): [(a.get("type"), a.get("name")) for a in s.iter("arg")] for s in iface.iter("signal")}
    assert sigs.get("NamespaceNew") == [("s", "user"), ("o", "namespace")]
    assert sigs.get("NamespaceRemoved") == [("s", "user"), ("o", "namespace")]
    props = {p.get("name"): p.get("type") for p in iface.iter("property")}
    assert {"Version": "s", "SubtreeRoot": "s", "SharedSubtrees": "as"}.items() <= props.items()


def test_busctl_introspect_whole_contract(daemon):
    """Every Manager method of the contract and the decided additions, with named arguments."""
    methods = method_table(busctl_interface(daemon, MANAGER_PATH, MANAGER_IFACE))
    missing = [n for n in OTHER_METHODS if n not in methods]
    assert not missing, f"Manager lacks {missing}"
    for name, (sig_in, names, sig_out) in OTHER_METHODS.items():
        assert methods[name][:3] == (sig_in, names, sig_out), f"{name}: {methods[name]}"


def test_busctl_introspect_namespace(daemon):
    (path,) = create(daemon, "alice")
    iface = busctl_interface(daemon, path, NAMESPACE_IFACE)
    props = {p.get("name"): p.get("type") for p in iface.iter("property")}
    assert NAMESPACE_PROPERTIES.items() <= props.items(), props
    methods = method_table(iface)
    assert methods.get("Remove", ("",))[:3] == ("", [], "")
    assert methods.get("GetMounts", ("",))[2] == "a(ttttssss)"
    # the node tree lists the user objects
    tree = daemon.run(["busctl", "--system", "tree", "--list", BUS_NAME], check=True).stdout
    assert path in tree.split()


def test_views_pin_whatever_cpu_the_daemon_runs_on(daemon):
    """Linux 6.18 hands out namespace ids in per-CPU batches and the pin's loop check compares
    ids, so a namespace made on one CPU can look older than the registry made on another
    (docs/kernel.md). The daemon confined to each CPU in turn — with the registry made on
    whichever CPU came first — must create, pin and restore namespaces every time."""
    cpus = sorted(os.sched_getaffinity(0))
    saved = set(cpus)
    names = ["alice", "bob", "carol", "dave"]
    made = {}
    try:
        for i, cpu in enumerate(cpus * 2):
            os.sched_setaffinity(0, {cpu})          # the daemon inherits it
            daemon.restart_daemon()
            manager = daemon.manager()              # bound to the new instance's bus name
            for user, ns_id in made.items():
                assert daemon.properties(manager.GetNamespace(user))["MountNamespaceId"] == ns_id, \
                    f"{user}'s namespace changed across a restart on CPU {cpu}"
            user = names[i % len(names)]
            if user in made:
                manager.RemoveNamespace(user)
                del made[user]
            path = manager.CreateNamespace(user)
            made[user] = daemon.properties(path)["MountNamespaceId"]
            assert daemon.view_ns_id(user) == made[user]
    finally:
        os.sched_setaffinity(0, saved)
