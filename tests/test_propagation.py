# SPDX-License-Identifier: LGPL-2.1-or-later
"""The propagation API: ShareSubtree, EnslaveSubtree, SetPropagation, BindMount,
Unmount and GetMounts, live, on running namespaces.

The first tests tell the story of the shared-subtrees article step by step (a CD, alice,
bob, an enslaved /mnt, a private one, an unbindable tree, a read-only bind, a restart);
the last ones turn the worked examples of the kernel's
Documentation/filesystems/sharedsubtree.rst into calls of the daemon. Everything runs in
the sandbox of conftest.py against a real nsmanagerd, the real kernel and real FUSE
(Debian's bindfs); views are entered with the fd of OpenMountNamespace.
The interface is described in docs/interface.md."""

import contextlib
import os
import signal
import subprocess

import dbus
import pytest

from helpers import (E_BUSY, E_INVALID_ARGS, E_INVALID_MODE, E_INVALID_PATH, E_NO_SUCH_NAMESPACE, E_NO_SUCH_USER,
                     create, expect_error, wait_until)
from sandbox import MANAGER_PATH, TEST_USERS, find_mount, timeout

BIND_READ_ONLY = 0x1
BIND_MKDIR = 0x2
UNMOUNT_DETACH = 0x1
RECURSIVE = 0x1

# The article's story is told with ViewPropagation=private: only what is shared propagates.
ARTICLE = pytest.mark.daemon_config(SharedSubtrees="", ViewPropagation="private")


# ---------------------------------------------------------------------------
# Helpers

def mount_at(sb, path, view=None):
    """The mount visible at path on the host (view None) or in user's view, or None."""
    return find_mount(sb.mountinfo(view), str(path))


def where(view):
    return "on the host" if view is None else f"in {view}'s view"


def read(sb, view, path):
    """The content of path on the host (view None) or in user's view; None if unreadable."""
    p = sb.in_view(view, ["cat", str(path)])
    return p.stdout if p.returncode == 0 else None


def assert_sees(sb, view, path, content):
    got = read(sb, view, path)
    assert got == content, f"{path} {where(view)}: expected {content!r}, got {got!r}"


def assert_not_mounted(sb, view, path, why=""):
    m = mount_at(sb, path, view)
    assert m is None, f"{path} is a mount point {where(view)} ({m}){': ' + why if why else ''}"


def assert_mounted(sb, view, path, why=""):
    m = mount_at(sb, path, view)
    assert m is not None, f"{path} is not a mount point {where(view)}{': ' + why if why else ''}"
    return m


def srv_dir(sb, name="srv"):
    """A /srv-like directory of this instance, on the sandbox's /tmp tmpfs (never the real /srv)."""
    d = sb.instance / name
    d.mkdir(exist_ok=True)
    return str(d)


def get_mounts(sb, user):
    """GetMounts(user) as dicts keyed by mount point (the last one stacked there wins)."""
    rows = sb.manager().GetMounts(user)
    out = {}
    for mid, parent, peer, master, point, source, fstype, prop in rows:
        out[str(point)] = {"id": int(mid), "parent": int(parent), "peer": int(peer), "master": int(master),
                           "source": str(source), "fstype": str(fstype), "propagation": str(prop)}
    return out


class Fuse:
    """A real FUSE mount: bindfs, in the foreground, started inside a user's view (as root
    there: this machine's /dev/fuse is 0600, so unprivileged FUSE cannot open it). stop()
    unmounts it there and waits for bindfs to exit."""

    def __init__(self, sb, view, source, target):
        self.sb, self.view, self.target = sb, view, str(target)
        self.log_path = sb.instance / f"bindfs-{view}.log"
        fd = sb.open_view_fd(view)
        try:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(sb.view_argv(fd, ["bindfs", "-f", str(source), self.target]),
                                             pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        finally:
            os.close(fd)
        sb.track_mount(self.target)   # should it ever reach the host
        try:
            wait_until(lambda: self.proc.poll() is not None or self.mounted(),
                       f"bindfs to mount {self.target} in {view}'s view")
            assert self.proc.poll() is None, f"bindfs exited with {self.proc.returncode}: {self.log_path.read_text()}"
        except BaseException:
            self.stop()
            raise

    def mounted(self) -> bool:
        m = mount_at(self.sb, self.target, self.view)
        return m is not None and m.fstype.startswith("fuse")

    def stop(self):
        if self.proc.poll() is None:
            self.sb.in_view(self.view, ["fusermount3", "-u", "-z", self.target])
            try:
                self.proc.wait(timeout(10))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.mounted():      # bindfs was killed: the mount stays until unmounted
            self.sb.in_view(self.view, ["umount", "-l", self.target])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# ---------------------------------------------------------------------------
# 1. Nothing shared: a CD on the host stays on the host

@ARTICLE
def test_story_1_nothing_shared(daemon):
    create(daemon, "alice", "bob")
    assert list(daemon.properties(MANAGER_PATH)["SharedSubtrees"]) == []
    marker, content = daemon.mount_cd("/mnt/cd")
    assert_sees(daemon, None, marker, content)
    for u in ("alice", "bob"):
        assert_not_mounted(daemon, u, "/mnt/cd", "SharedSubtrees= is empty and the view is private")
        assert read(daemon, u, marker) is None, f"the CD's file is readable in {u}'s view"


# ---------------------------------------------------------------------------
# 2. ShareSubtree("", "/mnt") after the fact

@ARTICLE
def test_story_2_share_mnt_retroactively(daemon):
    create(daemon, "alice", "bob")
    before_marker, before_content = daemon.mount_cd("/mnt/cd-before", label="CD_BEFORE")
    for u in ("alice", "bob"):
        assert_not_mounted(daemon, u, "/mnt/cd-before")

    daemon.manager().ShareSubtree("", "/mnt")

    assert list(daemon.properties(MANAGER_PATH)["SharedSubtrees"]) == ["/mnt"]
    host_mnt = assert_mounted(daemon, None, "/mnt")
    assert host_mnt.shared and not host_mnt.slave, f"host /mnt is {host_mnt.propagation}"
    for u in ("alice", "bob"):
        m = assert_mounted(daemon, u, "/mnt")
        assert m.peer_group == host_mnt.peer_group, \
            f"{u}'s /mnt ({m.propagation}, group {m.peer_group}) is no peer of the host's ({host_mnt.peer_group})"
        # the CD that was there before the call appears as well
        assert_sees(daemon, u, before_marker, before_content)

    # one mounted afterwards appears in both views
    after_marker, after_content = daemon.mount_cd("/mnt/cd-after", label="CD_AFTER")
    for u in ("alice", "bob"):
        assert_sees(daemon, u, after_marker, after_content)

    # and nothing got doubled anywhere by the copying
    for view in (None, "alice", "bob"):
        points = [m.target for m in daemon.mountinfo(view)]
        for p in ("/mnt", "/mnt/cd-before", "/mnt/cd-after"):
            assert points.count(p) == 1, f"{p} is mounted {points.count(p)} times {where(view)}"

    # a namespace made after the call gets it the usual way
    create(daemon, "carol")
    assert_sees(daemon, "carol", after_marker, after_content)
    assert_sees(daemon, "carol", before_marker, before_content)

    # ejecting on the host ejects everywhere
    daemon.umount("/mnt/cd-before")
    for u in ("alice", "bob", "carol"):
        assert_not_mounted(daemon, u, "/mnt/cd-before", "the host's unmount did not propagate")


# ---------------------------------------------------------------------------
# 3. alice mounts a CD under her /mnt

@ARTICLE
def test_story_3_user_mount_reaches_host_and_others(daemon):
    create(daemon, "alice", "bob")
    daemon.manager().ShareSubtree("", "/mnt")
    daemon.mount_tmpfs("/mnt/alice-cd", source="ALICE_CD", files={"README.txt": "alice's CD\n"}, view="alice")
    assert_sees(daemon, None, "/mnt/alice-cd/README.txt", "alice's CD\n")
    assert_sees(daemon, "bob", "/mnt/alice-cd/README.txt", "alice's CD\n")
    assert mount_at(daemon, "/mnt/alice-cd").source == "ALICE_CD"
    daemon.umount("/mnt/alice-cd", view="alice")
    for view in (None, "bob"):
        assert_not_mounted(daemon, view, "/mnt/alice-cd", "alice's unmount did not propagate")


# ---------------------------------------------------------------------------
# 4. EnslaveSubtree: bob's FUSE mount stays his, the host's still reach him

def _enslave_story(sb, share_first):
    create(sb, "alice", "bob")
    m = sb.manager()
    if share_first:
        m.ShareSubtree("", "/mnt")
    host_group = get_mounts(sb, "")["/mnt"]["peer"]
    assert host_group != 0, "the host's /mnt is not shared"

    m.EnslaveSubtree("bob", "/mnt")

    bob_mnt = get_mounts(sb, "bob")["/mnt"]
    assert bob_mnt["propagation"] in ("private,slave", "shared,slave"), f"bob's /mnt is {bob_mnt['propagation']}"
    assert bob_mnt["master"] == host_group, \
        f"bob's /mnt follows group {bob_mnt['master']}, not the host's /mnt ({host_group})"
    assert get_mounts(sb, "alice")["/mnt"]["peer"] == host_group, "enslaving bob changed alice's /mnt"

    # A real FUSE mount in bob's /mnt (bindfs of his home, made inside his view).
    os.makedirs("/mnt/bobfs", exist_ok=True)
    os.chown("/mnt/bobfs", TEST_USERS["bob"].uid, TEST_USERS["bob"].gid)
    with open("/home/bob/notes.txt", "w") as f:
        f.write("bob's notes\n")
    with Fuse(sb, "bob", "/home/bob", "/mnt/bobfs"):
        fuse = assert_mounted(sb, "bob", "/mnt/bobfs")
        assert fuse.fstype.startswith("fuse"), f"bob's mount is {fuse}"
        got = sb.in_view("bob", ["cat", "/mnt/bobfs/notes.txt"], as_user="bob")
        assert got.stdout == "bob's notes\n", f"bob cannot read his FUSE mount: {got.stderr}"
        assert_not_mounted(sb, None, "/mnt/bobfs", "bob's /mnt is a slave: his mounts go nowhere")
        assert_not_mounted(sb, "alice", "/mnt/bobfs", "bob's /mnt is a slave: his mounts go nowhere")

        # what the host mounts still reaches bob (and alice)
        marker, content = sb.mount_cd("/mnt/cd", label="HOST_CD")
        assert_sees(sb, "bob", marker, content)
        assert_sees(sb, "alice", marker, content)
        # and what alice mounts, too
        sb.mount_tmpfs("/mnt/alice-usb", source="ALICE_USB", files={"f": "alice\n"}, view="alice")
        assert_sees(sb, "bob", "/mnt/alice-usb/f", "alice\n")
        assert_sees(sb, None, "/mnt/alice-usb/f", "alice\n")

        # ShareSubtree("bob", "/mnt"): two-way again
        m.ShareSubtree("bob", "/mnt")
        bob_mnt = get_mounts(sb, "bob")["/mnt"]
        assert (bob_mnt["propagation"], bob_mnt["peer"], bob_mnt["master"]) == ("shared", host_group, 0), \
            f"bob's /mnt after ShareSubtree: {bob_mnt}"
        sb.mount_tmpfs("/mnt/bob-usb", source="BOB_USB", files={"f": "bob\n"}, view="bob")
        assert_sees(sb, None, "/mnt/bob-usb/f", "bob\n")
        assert_sees(sb, "alice", "/mnt/bob-usb/f", "bob\n")
        # mounts he already had are still his, and still there
        assert_mounted(sb, "bob", "/mnt/bobfs")
        for view in (None, "alice", "bob"):
            points = [x.target for x in sb.mountinfo(view)]
            for p in ("/mnt/cd", "/mnt/alice-usb", "/mnt/bob-usb"):
                assert points.count(p) == 1, f"{p} is mounted {points.count(p)} times {where(view)}"
    assert_not_mounted(sb, "bob", "/mnt/bobfs", "bindfs did not go away")
    os.rmdir("/mnt/bobfs")
    for p in ("/mnt/bob-usb", "/mnt/alice-usb", "/mnt/cd"):
        sb.umount(p)
        for view in ("alice", "bob"):
            assert_not_mounted(sb, view, p, "the host's unmount did not propagate")


@ARTICLE
def test_story_4_enslave_bob(daemon):
    _enslave_story(daemon, share_first=True)


def test_enslave_bob_default_view(daemon):
    """The same with the default configuration (SharedSubtrees=/mnt, ViewPropagation=slave)."""
    _enslave_story(daemon, share_first=False)


def test_enslave_refusals(daemon):
    create(daemon, "alice")
    m = daemon.manager()
    expect_error(lambda: m.EnslaveSubtree("", "/mnt"), E_INVALID_ARGS)
    expect_error(lambda: m.EnslaveSubtree("carol", "/mnt"), E_NO_SUCH_NAMESPACE)
    expect_error(lambda: m.EnslaveSubtree("alice", "mnt"), E_INVALID_PATH)
    expect_error(lambda: m.EnslaveSubtree("alice", "/mnt/../etc"), E_INVALID_PATH)
    expect_error(lambda: m.EnslaveSubtree("alice", "/mnt/nonexistent"), E_INVALID_PATH)
    assert get_mounts(daemon, "alice")["/mnt"]["propagation"] == "shared", "a refused call changed alice's /mnt"


# ---------------------------------------------------------------------------
# 5. private and unbindable

@ARTICLE
def test_story_5_private(daemon):
    create(daemon, "alice", "bob")
    m = daemon.manager()
    m.ShareSubtree("", "/mnt")
    m.SetPropagation("alice", "/mnt", "private", 0)
    assert get_mounts(daemon, "alice")["/mnt"]["propagation"] == "private"

    marker, content = daemon.mount_cd("/mnt/cd")
    assert_not_mounted(daemon, "alice", "/mnt/cd", "alice's /mnt is private")
    assert_sees(daemon, "bob", marker, content)
    daemon.mount_tmpfs("/mnt/alice-usb", source="ALICE_USB", files={"f": "alice\n"}, view="alice")
    assert_sees(daemon, "alice", "/mnt/alice-usb/f", "alice\n")
    assert_not_mounted(daemon, None, "/mnt/alice-usb", "alice's /mnt is private")
    assert_not_mounted(daemon, "bob", "/mnt/alice-usb", "alice's /mnt is private")
    daemon.umount("/mnt/alice-usb", view="alice")

    # and back: ShareSubtree(alice) copies what she missed meanwhile
    m.ShareSubtree("alice", "/mnt")
    assert_sees(daemon, "alice", marker, content)
    daemon.umount("/mnt/cd")
    assert_not_mounted(daemon, "alice", "/mnt/cd")


def test_story_5_unbindable(daemon):
    srv = srv_dir(daemon)
    daemon.mount_tmpfs(srv, source="SRV", files={"index.html": "srv\n"})
    os.mkdir(f"{srv}/sub")
    create(daemon, "alice")
    m = daemon.manager()

    m.SetPropagation("", srv, "unbindable", 0)
    assert get_mounts(daemon, "")[srv]["propagation"] == "private,unbindable"
    assert mount_at(daemon, srv).unbindable

    for source in (srv, f"{srv}/sub"):
        err = expect_error(lambda: m.BindMount("alice", source, "/home/alice/srv", BIND_MKDIR), E_INVALID_PATH)
        assert "unbindable" in err.get_dbus_message(), err.get_dbus_message()
        assert_not_mounted(daemon, "alice", "/home/alice/srv")

    # pruned from views created afterwards
    create(daemon, "bob")
    assert_not_mounted(daemon, "bob", srv, "an unbindable mount must be pruned from new views")
    assert read(daemon, "bob", f"{srv}/index.html") is None


def test_set_propagation_binds_a_plain_directory(daemon):
    """A path that is not a mount point is bound onto itself first (mount --bind P P)."""
    plain = srv_dir(daemon, "plain")
    daemon.track_mount(plain)
    (daemon.instance / "plain" / "f").write_text("plain\n")
    create(daemon, "alice")
    m = daemon.manager()

    m.SetPropagation("", plain, "shared", 0)
    host = get_mounts(daemon, "")
    assert plain in host and host[plain]["propagation"] == "shared"
    parent = next(v for v in host.values() if v["id"] == host[plain]["parent"])
    assert host[plain]["peer"] != parent["peer"], \
        "a path bound onto itself and made shared must get a peer group of its own, not its parent's"

    m.SetPropagation("", plain, "unbindable", 0)
    assert get_mounts(daemon, "")[plain]["propagation"] == "private,unbindable"
    create(daemon, "bob")
    assert_not_mounted(daemon, "bob", plain)
    assert_sees(daemon, "bob", f"{plain}/f", "plain\n")   # the directory itself is still there

    # in a view, too
    os.mkdir("/home/alice/project")
    m.SetPropagation("alice", "/home/alice/project", "private", 0)
    assert get_mounts(daemon, "alice")["/home/alice/project"]["propagation"] == "private"
    assert_not_mounted(daemon, None, "/home/alice/project", "the view's bind reached the host")


def test_share_subtree_on_the_host_of_a_plain_directory(daemon):
    """ShareSubtree("", P) of a directory: bound onto itself, shared in a group of its own,
    and every existing view becomes a peer; recorded for restarts."""
    create(daemon, "alice", "bob")
    media = srv_dir(daemon, "media")
    daemon.track_mount(media)
    m = daemon.manager()
    m.ShareSubtree("", media)
    assert media in daemon.properties(MANAGER_PATH)["SharedSubtrees"]
    host = get_mounts(daemon, "")
    parent = next(v for v in host.values() if v["id"] == host[media]["parent"])
    assert host[media]["propagation"] == "shared" and host[media]["peer"] != parent["peer"], \
        f"{media} on the host: {host[media]}, its parent's group {parent['peer']}"
    for u in ("alice", "bob"):
        assert get_mounts(daemon, u)[media]["peer"] == host[media]["peer"], f"{u}'s {media} is no peer"
    daemon.mount_tmpfs(f"{media}/usb", source="USB", files={"f": "usb\n"})
    daemon.mount_tmpfs(f"{media}/alice", source="ALICE", files={"f": "alice\n"}, view="alice")
    daemon.track_mount(f"{media}/alice")
    for view in (None, "alice", "bob"):
        assert_sees(daemon, view, f"{media}/usb/f", "usb\n")
        assert_sees(daemon, view, f"{media}/alice/f", "alice\n")
        points = [x.target for x in daemon.mountinfo(view)]
        for p in (f"{media}/usb", f"{media}/alice"):
            assert points.count(p) == 1, f"{p} is mounted {points.count(p)} times {where(view)}"
    # what was shared at run time, kept for restarts (the configured /mnt is the configuration's)
    assert (daemon.state_dir / "shared-subtrees").read_text().split() == [media]


def test_share_subtree_refusals(daemon):
    create(daemon, "alice")
    m = daemon.manager()
    plain = srv_dir(daemon, "plain")
    expect_error(lambda: m.ShareSubtree("", "/"), E_INVALID_PATH)
    expect_error(lambda: m.ShareSubtree("", "mnt"), E_INVALID_PATH)
    expect_error(lambda: m.ShareSubtree("", "/mnt/"), E_INVALID_PATH)
    expect_error(lambda: m.ShareSubtree("carol", "/mnt"), E_NO_SUCH_NAMESPACE)
    # a user's path can only rejoin what the host shares
    expect_error(lambda: m.ShareSubtree("alice", plain), E_INVALID_PATH)
    assert_not_mounted(daemon, "alice", plain)
    assert_not_mounted(daemon, None, plain)
    assert list(daemon.properties(MANAGER_PATH)["SharedSubtrees"]) == ["/mnt"]


# ---------------------------------------------------------------------------
# 6. BindMount, path safety, refusals, Unmount

def make_data(sb, name="data", files=None):
    d = sb.instance / name
    d.mkdir(exist_ok=True)
    for n, text in (files or {"hello.txt": "hello from the host\n"}).items():
        (d / n).write_text(text)
    return str(d)


@pytest.mark.parametrize("view_propagation", ["slave", "private"])
def test_story_6_bind_read_only_mkdir(daemon, view_propagation):
    if view_propagation != "slave":
        daemon.stop_daemon()
        daemon.start_daemon(ViewPropagation=view_propagation)
    create(daemon, "alice", "bob")
    src = make_data(daemon)
    assert not os.path.exists("/home/alice/data")

    daemon.manager().BindMount("alice", src, "/home/alice/data", BIND_READ_ONLY | BIND_MKDIR)

    m = assert_mounted(daemon, "alice", "/home/alice/data")
    assert "ro" in m.options.split(","), f"the bind is not read-only: {m.options}"
    assert_sees(daemon, "alice", "/home/alice/data/hello.txt", "hello from the host\n")
    w = daemon.in_view("alice", ["sh", "-c", "echo x > /home/alice/data/new.txt"])
    assert w.returncode != 0 and "Read-only file system" in w.stderr, f"a write succeeded or failed oddly: {w.stderr}"
    w = daemon.in_view("alice", ["touch", "/home/alice/data/hello.txt"], as_user="alice")
    assert w.returncode != 0, "alice could write through a read-only bind"
    assert not os.path.exists(f"{src}/new.txt")
    # nothing appears on the host (the directory may: the view's root is the machine's)
    assert_not_mounted(daemon, None, "/home/alice/data", "a bind into a view must stay there")
    assert_not_mounted(daemon, "bob", "/home/alice/data")
    # the bound tree follows its source one way: the host's later mounts appear
    daemon.mount_tmpfs(f"{src}/sub", source="LATER", files={"f": "later\n"})
    assert_sees(daemon, "alice", "/home/alice/data/sub/f", "later\n")
    daemon.umount(f"{src}/sub")
    assert_not_mounted(daemon, "alice", "/home/alice/data/sub")


def test_bind_file_and_existing_directory(daemon):
    create(daemon, "alice")
    m = daemon.manager()
    f = daemon.instance / "motd"
    f.write_text("message of the day\n")
    m.BindMount("alice", str(f), "/home/alice/motd", BIND_READ_ONLY | BIND_MKDIR)
    assert_sees(daemon, "alice", "/home/alice/motd", "message of the day\n")
    assert os.path.isfile("/home/alice/motd") and os.path.getsize("/home/alice/motd") == 0
    # an existing destination needs no flag; read-write when not asked otherwise
    os.mkdir("/home/alice/work")
    src = make_data(daemon, "work", {"a": "a\n"})
    m.BindMount("alice", src, "/home/alice/work", 0)
    w = daemon.in_view("alice", ["sh", "-c", "echo b > /home/alice/work/b"])
    assert w.returncode == 0, w.stderr
    assert (daemon.instance / "work" / "b").read_text() == "b\n"
    assert_not_mounted(daemon, None, "/home/alice/work")


def test_bind_symlinks_are_never_followed(daemon):
    """A link alice plants in her home cannot make the daemon create or mount anything
    elsewhere: not in a directory standing in for /etc, not in the real /etc."""
    create(daemon, "alice")
    m = daemon.manager()
    src = make_data(daemon)
    fake_etc = daemon.instance / "fake-etc"
    fake_etc.mkdir()
    links = {"/home/alice/etc": str(fake_etc), "/home/alice/real-etc": "/etc", "/home/alice/up": ".."}
    for link, target in links.items():
        os.symlink(target, link)
        os.lchown(link, TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    etc_before = sorted(os.listdir("/etc"))
    fake_before = sorted(os.listdir(fake_etc))
    view_before = [x.target for x in daemon.mountinfo("alice")]
    try:
        for dest in ("/home/alice/etc/nsm-evil", "/home/alice/etc/nsm-evil/deeper", "/home/alice/etc",
                     "/home/alice/real-etc/nsm-evil", "/home/alice/real-etc/nsm-evil/deeper",
                     "/home/alice/real-etc", "/home/alice/up/bob/nsm-evil"):
            for flags in (BIND_MKDIR, BIND_MKDIR | BIND_READ_ONLY, 0):
                expect_error(lambda: m.BindMount("alice", src, dest, flags), E_INVALID_PATH)
        # a link as the source is not followed either
        expect_error(lambda: m.BindMount("alice", "/home/alice/real-etc", "/home/alice/x", BIND_MKDIR),
                     E_INVALID_PATH)
        assert not os.path.exists("/home/alice/x")
        # nor for the other calls that take a path in the view
        expect_error(lambda: m.SetPropagation("alice", "/home/alice/real-etc", "private", 0), E_INVALID_PATH)
        expect_error(lambda: m.Unmount("alice", "/home/alice/real-etc", 0), E_INVALID_PATH)
        expect_error(lambda: m.EnslaveSubtree("alice", "/home/alice/etc", ), E_INVALID_PATH)
    finally:
        created = sorted(set(os.listdir("/etc")) - set(etc_before))
        for name in created:    # never leave anything in the machine's /etc
            with contextlib.suppress(OSError):
                os.rmdir(f"/etc/{name}") if os.path.isdir(f"/etc/{name}") else os.unlink(f"/etc/{name}")
    assert created == [], f"the daemon created {created} in the real /etc"
    assert sorted(os.listdir(fake_etc)) == fake_before, f"the daemon created {os.listdir(fake_etc)} in {fake_etc}"
    assert not os.path.exists("/home/bob/nsm-evil")
    assert [x.target for x in daemon.mountinfo("alice")] == view_before, "a refused bind changed alice's view"
    assert [x.target for x in daemon.mountinfo()].count("/etc") <= 1


def test_bind_refusals(daemon):
    create(daemon, "alice")
    m = daemon.manager()
    src = make_data(daemon)
    bad_paths = ["home/alice/d", "", ".", "/home/alice/../bob/d", "/home/alice/./d", "/home//alice/d",
                 "/home/alice/d/", "/home/alice/d/..", "/.."]
    for bad in bad_paths:
        expect_error(lambda: m.BindMount("alice", src, bad, BIND_MKDIR), E_INVALID_PATH)
        expect_error(lambda: m.BindMount("alice", bad or "tmp", "/home/alice/d", BIND_MKDIR), E_INVALID_PATH)
    expect_error(lambda: m.BindMount("alice", "/nonexistent-nsm-source", "/home/alice/d", BIND_MKDIR), E_INVALID_PATH)
    expect_error(lambda: m.BindMount("alice", src, "/home/alice/missing/d", 0), E_INVALID_PATH)
    expect_error(lambda: m.BindMount("alice", src, "/", 0), E_INVALID_PATH)
    for flags in (0x4, 0x8, 1 << 63, 0x7):
        expect_error(lambda: m.BindMount("alice", src, "/home/alice/d", flags), E_INVALID_ARGS)
    expect_error(lambda: m.BindMount("carol", src, "/home/carol/d", BIND_MKDIR), E_NO_SUCH_NAMESPACE)
    expect_error(lambda: m.BindMount("", src, "/home/alice/d", BIND_MKDIR), E_NO_SUCH_USER, E_INVALID_ARGS)
    assert not os.path.exists("/home/alice/d") and not os.path.exists("/home/alice/missing")
    assert not os.path.exists("/home/carol/d")


def test_set_propagation_refusals(daemon):
    create(daemon, "alice")
    m = daemon.manager()
    for mode in ("bogus", "", "SHARED", "rshared", "slave,shared"):
        expect_error(lambda: m.SetPropagation("alice", "/mnt", mode, 0), E_INVALID_MODE)
    for flags in (0x2, 1 << 40):
        expect_error(lambda: m.SetPropagation("alice", "/mnt", "private", flags), E_INVALID_ARGS)
    expect_error(lambda: m.SetPropagation("carol", "/mnt", "private", 0), E_NO_SUCH_NAMESPACE)
    for bad in ("mnt", "/mnt/", "/mnt/../home", "/nonexistent-nsm"):
        expect_error(lambda: m.SetPropagation("alice", bad, "private", 0), E_INVALID_PATH)
    assert get_mounts(daemon, "alice")["/mnt"]["propagation"] == "shared", "a refused call changed alice's /mnt"
    assert not os.path.exists("/nonexistent-nsm")


def test_nothing_is_bound_over_a_views_root(daemon, manager):
    manager.CreateNamespace("alice")
    before = daemon.mount_count("alice")
    expect_error(lambda: manager.BindMount("alice", "/home/alice", "/", dbus.UInt64(0)), E_INVALID_PATH)
    expect_error(lambda: manager.Unmount("alice", "/", dbus.UInt64(1)), E_INVALID_PATH)
    assert daemon.mount_count("alice") == before


def test_the_hosts_root_is_never_unbindable(daemon, manager):
    """Every view is a copy of the host's '/': an unbindable one could not be copied."""
    before = find_mount(daemon.mountinfo(), "/")
    for flags in (0, 1):
        e = expect_error(lambda: manager.SetPropagation("", "/", "unbindable", dbus.UInt64(flags)), E_INVALID_PATH)
        assert "cannot be unbindable" in e.get_dbus_message(), e.get_dbus_message()
    after = find_mount(daemon.mountinfo(), "/")
    assert (after.id, after.optional) == (before.id, before.optional), "the refused call changed the host's '/'"
    manager.CreateNamespace("alice")          # views are still made


def test_a_view_path_on_another_file_system_does_not_rejoin_the_host(daemon, manager):
    """ShareSubtree(user, P) joins the host's peer group at P only where the view's P is on
    the host's file system there: a group cannot be joined across file systems (a
    PrivateTmp= /tmp, here a tmpfs root mounted over alice's /mnt)."""
    manager.CreateNamespace("alice")
    host_mnt = find_mount(daemon.mountinfo(), "/mnt")
    assert host_mnt is not None and host_mnt.shared, "the host's /mnt should be a shared subtree"
    # private first, so that the tmpfs over it stays in alice's view (not the sandbox's
    # mount_tmpfs(view=): its cleanup would unmount the host's /mnt)
    manager.SetPropagation("alice", "/mnt", "private", dbus.UInt64(0))
    daemon.in_view("alice", ["mount", "-t", "tmpfs", "-o", "size=4m,nosuid,nodev", "nsm-other-fs", "/mnt"], check=True)
    before = find_mount(daemon.mountinfo("alice"), "/mnt")
    assert before.source == "nsm-other-fs" and not before.shared, before
    e = expect_error(lambda: manager.ShareSubtree("alice", "/mnt"), E_INVALID_PATH)
    assert "not the host's filesystem" in e.get_dbus_message(), e.get_dbus_message()
    after = find_mount(daemon.mountinfo("alice"), "/mnt")
    assert (after.id, after.peer_group) == (before.id, before.peer_group), "the refused call changed alice's /mnt"
    assert find_mount(daemon.mountinfo(), "/mnt").id == host_mnt.id, "the host's /mnt changed"
    daemon.umount("/mnt", view="alice")


def test_unmount(daemon):
    create(daemon, "alice")
    m = daemon.manager()
    root_before = mount_at(daemon, "/", "alice")
    for path in ("/", "//", "/.", "/home/..", "/mnt/.."):
        for flags in (0, UNMOUNT_DETACH):
            expect_error(lambda: m.Unmount("alice", path, flags), E_INVALID_PATH)
    expect_error(lambda: m.Unmount("alice", "/home/alice", 0), E_INVALID_PATH)      # not a mount point
    expect_error(lambda: m.Unmount("alice", "/home/alice/nonexistent", 0), E_INVALID_PATH)
    expect_error(lambda: m.Unmount("alice", "mnt", 0), E_INVALID_PATH)
    expect_error(lambda: m.Unmount("alice", "/mnt", 0x2), E_INVALID_ARGS)
    expect_error(lambda: m.Unmount("carol", "/mnt", 0), E_NO_SUCH_NAMESPACE)
    root_after = mount_at(daemon, "/", "alice")
    assert root_after.id == root_before.id and "rw" in root_after.options.split(","), \
        f"alice's root changed: {root_before} -> {root_after} ({root_after.options})"
    assert "rw" in mount_at(daemon, "/").options.split(",")

    # busy: a process has its working directory inside
    daemon.mount_tmpfs("/home/alice/busy", source="BUSY", files={"f": "x"}, view="alice")
    fd = daemon.open_view_fd("alice")
    try:
        argv = daemon.view_argv(fd, ["sh", "-c", "cd /home/alice/busy && echo ready && exec sleep 600"])
        proc = subprocess.Popen(argv, pass_fds=(fd,), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    finally:
        os.close(fd)
    try:
        assert proc.stdout.readline() == "ready\n"
        err = expect_error(lambda: m.Unmount("alice", "/home/alice/busy", 0), E_BUSY)
        assert "/home/alice/busy" in err.get_dbus_message()
        assert_mounted(daemon, "alice", "/home/alice/busy", "a refused Unmount unmounted")
        m.Unmount("alice", "/home/alice/busy", UNMOUNT_DETACH)
        assert_not_mounted(daemon, "alice", "/home/alice/busy", "Unmount with the detach flag")
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()

    # a mount with mounts below it: busy without the flag, gone with it
    daemon.mount_tmpfs("/home/alice/outer", source="OUTER", view="alice")
    daemon.mount_tmpfs("/home/alice/outer/inner", source="INNER", view="alice")
    expect_error(lambda: m.Unmount("alice", "/home/alice/outer", 0), E_BUSY)
    m.Unmount("alice", "/home/alice/outer", UNMOUNT_DETACH)
    assert_not_mounted(daemon, "alice", "/home/alice/outer")
    assert_not_mounted(daemon, "alice", "/home/alice/outer/inner")

    # an idle one just goes
    daemon.mount_tmpfs("/home/alice/idle", source="IDLE", view="alice")
    m.Unmount("alice", "/home/alice/idle", 0)
    assert_not_mounted(daemon, "alice", "/home/alice/idle")


def test_unmount_under_shared_mnt_propagates(daemon):
    """Unmounting under a view's shared /mnt goes to its peers, the host included."""
    create(daemon, "alice", "bob")
    marker, content = daemon.mount_cd("/mnt/cd")
    assert_sees(daemon, "alice", marker, content)
    daemon.manager().Unmount("alice", "/mnt/cd", 0)
    for view in (None, "alice", "bob"):
        assert_not_mounted(daemon, view, "/mnt/cd", "Unmount under a shared /mnt must reach its peers")


# ---------------------------------------------------------------------------
# 7. Every change survives a restart

@ARTICLE
def test_story_7_changes_survive_restart(daemon):
    create(daemon, "alice", "bob")
    m = daemon.manager()
    m.ShareSubtree("", "/mnt")
    m.EnslaveSubtree("bob", "/mnt")
    src = make_data(daemon)
    m.BindMount("alice", src, "/home/alice/data", BIND_READ_ONLY | BIND_MKDIR)
    host_group = get_mounts(daemon, "")["/mnt"]["peer"]
    assert (daemon.state_dir / "shared-subtrees").read_text().split() == ["/mnt"]

    for n, sig in enumerate((signal.SIGTERM, signal.SIGKILL)):
        daemon.stop_daemon(sig)
        daemon.restart_daemon()
        m = daemon.manager()
        after = f"after {signal.Signals(sig).name} and a restart"
        assert list(daemon.properties(MANAGER_PATH)["SharedSubtrees"]) == ["/mnt"], after
        host = get_mounts(daemon, "")["/mnt"]
        assert (host["propagation"], host["peer"]) == ("shared", host_group), f"host /mnt {after}: {host}"
        # the shared /mnt stays shared: a new CD reaches both old views
        marker, content = daemon.mount_cd(f"/mnt/cd{n}", label=f"CD{n}")
        assert_sees(daemon, "alice", marker, content)
        assert_sees(daemon, "bob", marker, content)
        # alice's mounts still reach the host and bob
        daemon.mount_tmpfs(f"/mnt/alice{n}", source=f"ALICE{n}", files={"f": "a\n"}, view="alice")
        assert_sees(daemon, None, f"/mnt/alice{n}/f", "a\n")
        assert_sees(daemon, "bob", f"/mnt/alice{n}/f", "a\n")
        # bob's /mnt stays enslaved
        bob = get_mounts(daemon, "bob")["/mnt"]
        assert bob["propagation"] in ("private,slave", "shared,slave") and bob["master"] == host_group, \
            f"bob's /mnt {after}: {bob}"
        daemon.mount_tmpfs(f"/mnt/bob{n}", source=f"BOB{n}", files={"f": "b\n"}, view="bob")
        assert_not_mounted(daemon, None, f"/mnt/bob{n}", f"bob's /mnt is enslaved {after}")
        assert_not_mounted(daemon, "alice", f"/mnt/bob{n}", f"bob's /mnt is enslaved {after}")
        # the bind stays, read-only
        bind = assert_mounted(daemon, "alice", "/home/alice/data", after)
        assert "ro" in bind.options.split(",")
        assert_sees(daemon, "alice", "/home/alice/data/hello.txt", "hello from the host\n")
        # and the live calls work on the restored namespaces
        m.SetPropagation("alice", "/home/alice/data", "private", 0)
        assert get_mounts(daemon, "alice")["/home/alice/data"]["propagation"] == "private"

    # a view made after the restarts gets the shared /mnt the usual way
    create(daemon, "carol")
    assert_sees(daemon, "carol", "/mnt/cd1/README.txt", "nsmanager test CD CD1\n")
    assert get_mounts(daemon, "carol")["/mnt"]["peer"] == host_group
    for n in (0, 1):
        daemon.umount(f"/mnt/alice{n}")
        daemon.umount(f"/mnt/cd{n}")


# ---------------------------------------------------------------------------
# 8. GetMounts

PROPAGATION_WORDS = {"shared", "private", "private,slave", "shared,slave", "private,unbindable",
                     "private,slave,unbindable"}


def check_table(rows, what):
    ids = [int(r[0]) for r in rows]
    assert len(ids) == len(set(ids)), f"{what}: duplicate mount ids"
    idset = set(ids)
    roots = []
    for mid, parent, peer, master, point, source, fstype, prop in rows:
        row = f"{what}: {point} (id {mid}, parent {parent}, {prop})"
        assert str(point).startswith("/"), f"{row}: mount point not absolute"
        assert str(fstype), f"{row}: no fstype"
        assert str(source), f"{row}: no source"
        assert str(prop) in PROPAGATION_WORDS, f"{row}: propagation {prop!r}"
        assert (int(peer) != 0) == str(prop).startswith("shared"), f"{row}: peer group {peer}"
        assert (int(master) != 0) == (",slave" in str(prop)), f"{row}: master {master}"
        if int(parent) not in idset or int(parent) == int(mid):
            roots.append(str(point))
    assert roots == ["/"], f"{what}: mounts whose parent is not in the table: {roots} (only '/' may be)"


def test_story_8_get_mounts(daemon):
    create(daemon, "alice")
    m = daemon.manager()
    src = make_data(daemon)
    m.BindMount("alice", src, "/home/alice/data", BIND_MKDIR)
    host_rows, view_rows = list(m.GetMounts("")), list(m.GetMounts("alice"))
    check_table(host_rows, "host")
    check_table(view_rows, "alice")

    host, view = get_mounts(daemon, ""), get_mounts(daemon, "alice")
    subtree = str(daemon.subtree_root)
    assert host[subtree]["propagation"] == "private,unbindable"
    assert not [p for p in view if p == subtree or p.startswith(subtree + "/")], \
        "nothing under SubtreeRoot may appear in a view"
    assert not [p for p in view if p.startswith(str(daemon.state_dir))], "the state directory leaks into the view"
    # mount points relative to the view's root; the view follows the host
    assert view["/"]["propagation"] == "private,slave" and view["/"]["master"] == host["/"]["peer"], \
        f"alice's / is {view['/']} (host / group {host['/']['peer']})"
    assert view["/mnt"]["peer"] == host["/mnt"]["peer"] and view["/mnt"]["propagation"] == "shared"
    assert view["/home/alice/data"]["fstype"] == "tmpfs"
    assert view["/home/alice/data"]["propagation"] == "private,slave"
    assert "/home/alice/data" not in host
    # the same rows as the kernel's table inside the view
    inside = {x.id: x for x in daemon.mountinfo("alice")}
    assert {int(r[0]) for r in view_rows} == set(inside)
    for r in view_rows:
        x = inside[int(r[0])]
        assert (int(r[1]), int(r[2]), int(r[3]), str(r[4]), str(r[6]), str(r[7])) == \
            (x.parent, x.peer_group, x.master, x.target, x.fstype, x.propagation), f"row {r} vs {x}"
    # the Namespace object agrees
    path = str(m.GetNamespace("alice"))
    assert {int(r[0]) for r in daemon.namespace(path).GetMounts()} == set(inside)
    assert int(daemon.properties(path)["NMounts"]) == len(view_rows)
    expect_error(lambda: m.GetMounts("carol"), E_NO_SUCH_NAMESPACE)


# ---------------------------------------------------------------------------
# 9. Documentation/filesystems/sharedsubtree.rst, worked examples

def host_srv(sb, name="srv"):
    """A shared mount on the host (a tmpfs under the rshared /, in a group of its own)."""
    d = srv_dir(sb, name)
    sb.mount_tmpfs(d, source=name.upper(), files={"index.html": f"{name}\n"})
    assert mount_at(sb, d).shared
    return d


@pytest.mark.daemon_config(ViewPropagation="shared")
def test_kernel_shared_bind_gives_peers(daemon):
    """2a / 5b.1+6: 'mount --bind /mnt /tmp' of a shared mount: the replicas stay identical,
    whichever side mounts (BindMount follows the host both ways with ViewPropagation=shared)."""
    srv = host_srv(daemon)
    create(daemon, "alice")
    m = daemon.manager()
    dest = "/home/alice/srv"
    daemon.track_mount(dest)            # the view's /home is a peer of the host's here
    m.BindMount("alice", srv, dest, BIND_MKDIR)
    view = get_mounts(daemon, "alice")
    assert view[dest]["peer"] == get_mounts(daemon, "")[srv]["peer"], f"{dest} is no peer of {srv}: {view[dest]}"

    daemon.mount_tmpfs(f"{srv}/a", source="SD0", files={"t1": "t1\n"})
    assert_sees(daemon, "alice", f"{dest}/a/t1", "t1\n")
    daemon.mount_tmpfs(f"{dest}/b", source="SD1", files={"s1": "s1\n"}, view="alice")
    daemon.track_mount(f"{srv}/b")
    assert_sees(daemon, None, f"{srv}/b/s1", "s1\n")

    # umount propagates both ways too
    daemon.umount(f"{srv}/a")
    assert_not_mounted(daemon, "alice", f"{dest}/a")
    m.Unmount("alice", f"{dest}/b", 0)
    assert_not_mounted(daemon, None, f"{srv}/b")
    m.Unmount("alice", dest, 0)
    assert_not_mounted(daemon, "alice", dest)
    assert_not_mounted(daemon, None, dest)


def test_kernel_slave_receives_but_does_not_send(daemon):
    """2b / 5b.7: a bind made slave of /mnt: the mount event on /mnt/a propagates to it, the
    one on /tmp/b does not propagate back. BindMount's bind is such a slave by default."""
    srv = host_srv(daemon)
    create(daemon, "alice")
    m = daemon.manager()
    dest = "/home/alice/srv"
    m.BindMount("alice", srv, dest, BIND_MKDIR)
    view = get_mounts(daemon, "alice")
    assert view[dest]["propagation"] == "private,slave"
    assert view[dest]["master"] == get_mounts(daemon, "")[srv]["peer"]

    daemon.mount_tmpfs(f"{srv}/a", source="SD0", files={"t1": "t1\n"})
    assert_sees(daemon, "alice", f"{dest}/a/t1", "t1\n")
    daemon.mount_tmpfs(f"{dest}/b", source="SD1", files={"s1": "s1\n"}, view="alice")
    assert_sees(daemon, "alice", f"{dest}/b/s1", "s1\n")
    assert_not_mounted(daemon, None, f"{srv}/b", "a slave must not send")
    # umount events reach the slave as well
    daemon.umount(f"{srv}/a")
    assert_not_mounted(daemon, "alice", f"{dest}/a", "the host's unmount did not reach the slave")


def test_kernel_private_neither(daemon):
    """2c: a private mount does not forward or receive propagation — a bind made private in
    the view, and the bind of a private source (5b.5)."""
    srv = host_srv(daemon)
    create(daemon, "alice")
    m = daemon.manager()
    m.BindMount("alice", srv, "/home/alice/srv", BIND_MKDIR)
    m.SetPropagation("alice", "/home/alice/srv", "private", 0)
    assert get_mounts(daemon, "alice")["/home/alice/srv"]["propagation"] == "private"
    daemon.mount_tmpfs(f"{srv}/a", source="SD0", files={"t1": "t1\n"})
    assert_not_mounted(daemon, "alice", "/home/alice/srv/a", "a private mount must not receive")
    daemon.mount_tmpfs("/home/alice/srv/b", source="SD1", view="alice")
    assert_not_mounted(daemon, None, f"{srv}/b", "a private mount must not send")
    daemon.umount(f"{srv}/a")

    priv = host_srv(daemon, "priv")
    m.SetPropagation("", priv, "private", 0)
    assert get_mounts(daemon, "")[priv]["propagation"] == "private"
    m.BindMount("alice", priv, "/home/alice/priv", BIND_MKDIR)
    assert get_mounts(daemon, "alice")["/home/alice/priv"]["propagation"] == "private"
    assert_sees(daemon, "alice", "/home/alice/priv/index.html", "priv\n")
    daemon.mount_tmpfs(f"{priv}/a", source="SD2")
    assert_not_mounted(daemon, "alice", "/home/alice/priv/a")


def test_kernel_shared_and_slave(daemon):
    """5a(3): make-shared on a slave gives 'shared and slave': it still receives from its
    master, in a peer group of its own, and sends nothing to the master."""
    srv = host_srv(daemon)
    create(daemon, "alice")
    m = daemon.manager()
    m.BindMount("alice", srv, "/home/alice/srv", BIND_MKDIR)
    m.SetPropagation("alice", "/home/alice/srv", "shared", 0)
    host, view = get_mounts(daemon, "")[srv], get_mounts(daemon, "alice")["/home/alice/srv"]
    assert view["propagation"] == "shared,slave", view
    assert view["master"] == host["peer"] and view["peer"] not in (0, host["peer"]), (view, host)
    daemon.mount_tmpfs(f"{srv}/a", source="SD0", files={"t1": "t1\n"})
    assert_sees(daemon, "alice", "/home/alice/srv/a/t1", "t1\n")
    daemon.mount_tmpfs("/home/alice/srv/b", source="SD1", view="alice")
    assert_not_mounted(daemon, None, f"{srv}/b")
    daemon.umount(f"{srv}/a")
    # state diagram: make-slave of a shared-and-slave makes it a plain slave
    m.SetPropagation("alice", "/home/alice/srv", "slave", 0)
    view = get_mounts(daemon, "alice")["/home/alice/srv"]
    assert (view["propagation"], view["master"]) == ("private,slave", host["peer"]), view


def test_kernel_state_diagram_on_the_host(daemon):
    """5a: the state transitions, applied with SetPropagation("", …)."""
    srv = host_srv(daemon)
    create(daemon, "alice")
    m = daemon.manager()

    def state():
        return get_mounts(daemon, "")[srv]["propagation"]

    m.SetPropagation("", srv, "slave", 0)       # * the only mount of its group: slave = private
    assert state() == "private"
    m.SetPropagation("", srv, "slave", 0)       # ** slaving a non-shared mount has no effect
    assert state() == "private"
    m.SetPropagation("", srv, "unbindable", 0)
    assert state() == "private,unbindable"
    m.SetPropagation("", srv, "slave", 0)       # ** no effect on an unbindable one either
    assert state() == "private,unbindable"
    m.SetPropagation("", srv, "shared", 0)
    assert state() == "shared"
    m.SetPropagation("", srv, "private", 0)
    assert state() == "private"


def test_kernel_unbindable_cannot_be_bound(daemon):
    """2d / 5b.4+8: binding an unbindable mount is an invalid operation."""
    srv = host_srv(daemon)
    create(daemon, "alice")
    m = daemon.manager()
    m.SetPropagation("", srv, "unbindable", 0)
    err = expect_error(lambda: m.BindMount("alice", srv, "/home/alice/srv", BIND_MKDIR), E_INVALID_PATH)
    assert srv in err.get_dbus_message()
    assert_not_mounted(daemon, "alice", "/home/alice/srv")
    # made bindable again, it binds
    m.SetPropagation("", srv, "private", 0)
    m.BindMount("alice", srv, "/home/alice/srv", BIND_MKDIR)
    assert_sees(daemon, "alice", "/home/alice/srv/index.html", "srv\n")


def test_kernel_rbind_prunes_unbindable(daemon):
    """5c: rbind of a tree with an unbindable mount in it prunes that subtree."""
    srv = host_srv(daemon)
    daemon.mount_tmpfs(f"{srv}/B", source="B", files={"b": "b\n"})
    daemon.mount_tmpfs(f"{srv}/C", source="C", files={"c": "c\n"})
    daemon.mount_tmpfs(f"{srv}/C/F", source="F", files={"f": "f\n"})
    create(daemon, "alice")
    m = daemon.manager()
    m.SetPropagation("", f"{srv}/C", "unbindable", 0)
    m.BindMount("alice", srv, "/home/alice/srv", BIND_MKDIR)
    assert_sees(daemon, "alice", "/home/alice/srv/B/b", "b\n")
    assert_not_mounted(daemon, "alice", "/home/alice/srv/C", "the unbindable C must be pruned")
    assert_not_mounted(daemon, "alice", "/home/alice/srv/C/F", "the tree under C must be pruned")


def test_kernel_recursive_flag(daemon):
    """make-rprivate vs make-private: the recursive flag reaches the mounts below."""
    create(daemon, "alice")
    m = daemon.manager()
    daemon.mount_cd("/mnt/cd")
    m.SetPropagation("alice", "/mnt", "private", 0)
    view = get_mounts(daemon, "alice")
    assert view["/mnt"]["propagation"] == "private" and view["/mnt/cd"]["propagation"] == "shared", view
    m.SetPropagation("alice", "/mnt", "private", RECURSIVE)
    view = get_mounts(daemon, "alice")
    assert view["/mnt/cd"]["propagation"] == "private", view["/mnt/cd"]
    # ShareSubtree puts /mnt back into the host's group (not the mounts below: they are copies)
    m.ShareSubtree("alice", "/mnt")
    assert get_mounts(daemon, "alice")["/mnt"]["peer"] == get_mounts(daemon, "")["/mnt"]["peer"]


def test_kernel_umount_propagation(daemon):
    """Use case A: the CD mounted at /mnt reaches every namespace; ejecting it on the host
    unmounts it in every namespace."""
    create(daemon, "alice", "bob")
    marker, content = daemon.mount_cd("/mnt/cd")
    daemon.mount_tmpfs("/mnt/cd2", source="CD2")
    create(daemon, "carol")
    for u in ("alice", "bob", "carol"):
        assert_sees(daemon, u, marker, content)
    daemon.umount("/mnt/cd")
    daemon.umount("/mnt/cd2")
    for u in ("alice", "bob", "carol"):
        assert_not_mounted(daemon, u, "/mnt/cd", "umount on the host did not propagate")
        assert_not_mounted(daemon, u, "/mnt/cd2", "umount on the host did not propagate")


# ---------------------------------------------------------------------------
# Interplay of the calls

def test_share_on_the_host_again_keeps_an_enslaved_view(daemon):
    """ShareSubtree("", P) is idempotent: run again, it does not undo bob's EnslaveSubtree."""
    create(daemon, "alice", "bob")
    m = daemon.manager()
    m.EnslaveSubtree("bob", "/mnt")
    host_group = get_mounts(daemon, "")["/mnt"]["peer"]
    m.ShareSubtree("", "/mnt")
    assert get_mounts(daemon, "")["/mnt"]["peer"] == host_group, "the host's /mnt changed group"
    bob = get_mounts(daemon, "bob")["/mnt"]
    assert bob["propagation"] in ("private,slave", "shared,slave") and bob["master"] == host_group, \
        f"bob's /mnt after ShareSubtree('', '/mnt') again: {bob}"
    assert get_mounts(daemon, "alice")["/mnt"]["peer"] == host_group
    daemon.mount_tmpfs("/mnt/bob-usb", source="BOB_USB", view="bob")
    assert_not_mounted(daemon, None, "/mnt/bob-usb", "bob's /mnt must stay enslaved")


def test_enslave_a_private_mnt(daemon):
    """EnslaveSubtree after SetPropagation(private): the path follows the host's again
    (receives, and gets what it missed meanwhile), without sending."""
    create(daemon, "alice", "bob")
    m = daemon.manager()
    host_group = get_mounts(daemon, "")["/mnt"]["peer"]
    m.SetPropagation("alice", "/mnt", "private", 0)
    marker, content = daemon.mount_cd("/mnt/cd")
    assert_not_mounted(daemon, "alice", "/mnt/cd")
    m.EnslaveSubtree("alice", "/mnt")
    alice = get_mounts(daemon, "alice")["/mnt"]
    assert alice["propagation"] in ("private,slave", "shared,slave") and alice["master"] == host_group, alice
    assert_sees(daemon, "alice", marker, content)
    marker2, content2 = daemon.mount_cd("/mnt/cd2", label="CD2")
    assert_sees(daemon, "alice", marker2, content2)
    daemon.mount_tmpfs("/mnt/alice-usb", source="ALICE_USB", view="alice")
    assert_not_mounted(daemon, None, "/mnt/alice-usb")
    assert_not_mounted(daemon, "bob", "/mnt/alice-usb")
    daemon.umount("/mnt/cd")
    assert_not_mounted(daemon, "alice", "/mnt/cd", "the host's unmount must reach the slave")
    # EnslaveSubtree of a path the host has no shared mount at: a slave of what it follows now
    os.mkdir("/home/alice/project")
    m.EnslaveSubtree("alice", "/home/alice/project")
    project = get_mounts(daemon, "alice")["/home/alice/project"]
    assert project["propagation"] == "private,slave", project


def test_host_cannot_expose_subtree_root(daemon):
    """SubtreeRoot and StateDirectory stay unbindable whatever is done to the host, or every
    view would copy every other."""
    create(daemon, "alice")
    m = daemon.manager()
    subtree, state = str(daemon.subtree_root), str(daemon.state_dir)
    for path in (subtree, state, f"{subtree}/alice", f"{state}/namespaces"):
        for mode in ("shared", "slave", "private"):
            expect_error(lambda: m.SetPropagation("", path, mode, 0), E_INVALID_PATH)
        expect_error(lambda: m.ShareSubtree("", path), E_INVALID_PATH)
    host = get_mounts(daemon, "")
    assert host[subtree]["propagation"] == "private,unbindable"
    assert host[state]["propagation"] == "private,unbindable"

    # "mount --make-rshared /", as systemd does at boot: fine, but they stay unbindable
    m.SetPropagation("", "/", "shared", RECURSIVE)
    host = get_mounts(daemon, "")
    assert host[subtree]["propagation"] == "private,unbindable", host[subtree]
    assert host[state]["propagation"] == "private,unbindable", host[state]
    assert host["/tmp"]["propagation"] == "shared"
    create(daemon, "bob")
    leaked = [p for p in get_mounts(daemon, "bob") if p.startswith(subtree) or p.startswith(state)]
    assert not leaked, f"bob's view holds {leaked}"


def test_runtime_shared_directory_survives_restart(daemon):
    create(daemon, "alice")
    media = srv_dir(daemon, "media")
    daemon.track_mount(media)
    daemon.manager().ShareSubtree("", media)
    group = get_mounts(daemon, "")[media]["peer"]
    daemon.kill_daemon()
    daemon.restart_daemon()
    assert media in daemon.properties(MANAGER_PATH)["SharedSubtrees"]
    assert get_mounts(daemon, "")[media]["peer"] == group, "the host's shared directory changed group"
    create(daemon, "bob")
    daemon.mount_tmpfs(f"{media}/usb", source="USB", files={"f": "usb\n"})
    for view in (None, "alice", "bob"):
        assert_sees(daemon, view, f"{media}/usb/f", "usb\n")
        n = [x.target for x in daemon.mountinfo(view)].count(f"{media}/usb")
        assert n == 1, f"{media}/usb is mounted {n} times {where(view)}"


@pytest.mark.daemon_config(SharedSubtrees="/mnt /tmp/nsmanager-sandbox/media-configured")
def test_configured_shared_directory_gets_its_own_group(daemon):
    """The start-up counterpart of ShareSubtree("", P) for a plain directory: P gets a peer
    group of its own, so a mount under it shows up once, not twice (docs/kernel.md)."""
    media = "/tmp/nsmanager-sandbox/media-configured"
    create(daemon, "alice")
    host = get_mounts(daemon, "")
    parent = next(v for v in host.values() if v["id"] == host[media]["parent"])
    daemon.mount_tmpfs(f"{media}/usb", source="USB")
    counts = {where(v): [x.target for x in daemon.mountinfo(v)].count(f"{media}/usb") for v in (None, "alice")}
    assert host[media]["peer"] != parent["peer"] and set(counts.values()) == {1}, \
        f"{media} shares its parent's group {parent['peer']}; {media}/usb is mounted {counts} times"
