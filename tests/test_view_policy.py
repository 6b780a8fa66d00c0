# SPDX-License-Identifier: LGPL-2.1-or-later
"""The per-user [View] policy (src/config/view-policy.c, view-policy-apply.c), end to end.

Policies come from the sandbox's nsmanagerd.conf, group.d/GROUP.conf and
user.d/USER.conf (the `daemon` fixture's daemon_config marker); views are built by
the real daemon and looked at from inside with sandbox.in_view(). Every path a policy
mounts on or creates lies on the sandbox's own tmpfs (/home, /tmp) or on one the test
mounts (/srv): a view's root is the machine's root filesystem, so a directory created
elsewhere would land on its disk. A path from a specifier (%h) never follows a user's
symlink, nor one her FUSE server says is root's.
The fixture fails a test whose views leaked a mount into the host namespace."""

import fcntl
import os
import shutil
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from helpers import E_FAILED, E_INVALID_PATH, PamServices, expect_error
from sandbox import TEST_USERS, find_mount, host_mountinfo, timeout
from test_hung_fs import FuseServer, servers  # noqa: F401 (fixture)

ALICE = TEST_USERS["alice"]

# A view that cannot be built is reported as Failed, naming the stage; bad input would
# also be fine as InvalidPath.
E_VIEW_FAILED = (E_FAILED, E_INVALID_PATH)


def sh(sb, user, script, as_user=None, check=False):
    """Run a shell script in user's view (as root there, or as as_user)."""
    return sb.in_view(user, ["sh", "-c", script], as_user=as_user, check=check)


def view_mount(sb, user, path):
    return find_mount(sb.mountinfo(user), path)


def is_read_only(m):
    return "ro" in m.options.split(",")


def assert_on_sandbox_tmpfs(*paths):
    """Refuse to write anywhere but the sandbox's own tmpfs."""
    mounts = host_mountinfo()
    for p in paths:
        top = next(t for t in ("/tmp", "/home") if p == t or p.startswith(t + "/"))
        m = find_mount(mounts, top)
        assert m is not None and m.fstype == "tmpfs", f"{top} is not the sandbox's tmpfs: refusing to write {p}"


@pytest.fixture
def host_files():
    """Create files and directories on the host (sandbox tmpfs only); removed afterwards."""
    created = []

    def make(path, content=None, owner=None, mode=None):
        assert_on_sandbox_tmpfs(path)
        p = Path(path)
        if content is None:
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content)
        if owner is not None:
            os.chown(p, TEST_USERS[owner].uid, TEST_USERS[owner].gid)
        if mode is not None:
            os.chmod(p, mode)
        created.append(p)
        return p

    def forget_later(path):
        created.append(Path(path))

    make.forget_later = forget_later
    yield make
    for p in reversed(created):
        if p.is_symlink() or p.is_file():
            p.unlink(missing_ok=True)
        elif p.is_dir():
            shutil.rmtree(p, ignore_errors=True)


def create_fails(sb, user):
    """CreateNamespace(user) must fail with a named error; returns its message."""
    return expect_error(lambda: sb.manager().CreateNamespace(user), *E_VIEW_FAILED).get_dbus_message()


def assert_no_namespace(sb, user):
    users = [str(u) for u, _uid, _state, _path in sb.manager().ListNamespaces()]
    assert user not in users


# ---------------------------------------------------------------------------
# PrivateTmp=

@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nPrivateTmp=yes\nTmpSize=8M\n"})
def test_private_tmp_per_user(daemon, host_files):
    marker = f"/tmp/nsm-vp-{uuid.uuid4().hex[:8]}"
    host_files(marker, "the host's\n")
    host_tmp = find_mount(host_mountinfo(), "/tmp").id
    m = daemon.manager()
    m.CreateNamespace("alice")
    m.CreateNamespace("bob")

    # alice: a fresh, empty, sticky tmpfs of her own on /tmp and /var/tmp
    assert sh(daemon, "alice", f"test -e {marker}").returncode == 1
    out = sh(daemon, "alice", "ls -A /tmp /var/tmp; stat -c %a /tmp /var/tmp", check=True).stdout.split()
    assert out == ["/tmp:", "/var/tmp:", "1777", "1777"], out
    for d in ("/tmp", "/var/tmp"):
        mnt = view_mount(daemon, "alice", d)
        assert mnt is not None and mnt.fstype == "tmpfs", f"{d} in alice's view: {mnt}"
        assert not mnt.shared, f"{d} in alice's view must propagate nowhere: {mnt}"
    size = sh(daemon, "alice", "stat -f -c '%b %S' /tmp", check=True).stdout.split()
    assert int(size[0]) * int(size[1]) == 8 << 20

    # what alice writes there stays there
    sh(daemon, "alice", "echo mine > /tmp/alice-file", as_user="alice", check=True)
    assert not Path("/tmp/alice-file").exists()
    assert sh(daemon, "bob", "test -e /tmp/alice-file").returncode == 1

    # bob (no policy) sees the host's /tmp
    assert sh(daemon, "bob", f"cat {marker}", check=True).stdout == "the host's\n"
    # and the host's /tmp is untouched
    assert find_mount(host_mountinfo(), "/tmp").id == host_tmp
    assert Path(marker).read_text() == "the host's\n"


# ---------------------------------------------------------------------------
# BindReadOnlyPaths= from group.d, specifiers, the empty assignment

@pytest.mark.daemon_config(files={
    "group.d/nsadmin.conf": "[View]\nBindReadOnlyPaths=-/tmp/nsm-vp-missing /tmp/nsm-vp-admin:%h/admin-%g-%G\n"})
def test_group_bind_read_only(daemon, host_files):
    host_files("/tmp/nsm-vp-admin/README", "for admins\n")
    host_files.forget_later("/home/carol/admin-carol-2003")
    m = daemon.manager()
    m.CreateNamespace("carol")
    m.CreateNamespace("alice")

    dest = "/home/carol/admin-carol-2003"    # %g of carol is her primary group, carol (2003)
    mnt = view_mount(daemon, "carol", dest)
    assert mnt is not None, daemon.findmnt("carol")
    assert is_read_only(mnt), mnt.options
    assert not mnt.shared
    assert sh(daemon, "carol", f"cat {dest}/README", as_user="carol", check=True).stdout == "for admins\n"
    p = sh(daemon, "carol", f"touch {dest}/x")     # even root: a read-only mount
    assert p.returncode != 0 and "Read-only" in p.stderr, p.stderr
    # the source stays writable on the host, and changes show through
    Path("/tmp/nsm-vp-admin/NEW").write_text("new\n")
    assert sh(daemon, "carol", f"cat {dest}/NEW", check=True).stdout == "new\n"
    # alice is not in nsadmin
    assert view_mount(daemon, "alice", dest) is None
    assert view_mount(daemon, "alice", "/home/alice/admin-alice-2001") is None


@pytest.mark.daemon_config(
    extra_config="[View]\nBindReadOnlyPaths=/tmp/nsm-vp-share:%h/nsm-vp-share\n",
    files={"user.d/alice.conf": "[View]\nBindReadOnlyPaths=\nBindPaths=/tmp/nsm-vp-share:%h/nsm-vp-share-rw\n"})
def test_empty_assignment_resets(daemon, host_files):
    host_files("/tmp/nsm-vp-share/f", "shared\n")
    for u in ("alice", "bob"):
        host_files.forget_later(f"/home/{u}/nsm-vp-share")
        host_files.forget_later(f"/home/{u}/nsm-vp-share-rw")
    m = daemon.manager()
    m.CreateNamespace("alice")
    m.CreateNamespace("bob")

    assert view_mount(daemon, "bob", "/home/bob/nsm-vp-share") is not None
    assert view_mount(daemon, "alice", "/home/alice/nsm-vp-share") is None
    assert not Path("/home/alice/nsm-vp-share").exists()   # never even created
    rw = view_mount(daemon, "alice", "/home/alice/nsm-vp-share-rw")
    assert rw is not None and not is_read_only(rw)
    sh(daemon, "alice", "echo hi > /home/alice/nsm-vp-share-rw/from-alice", check=True)
    assert Path("/tmp/nsm-vp-share/from-alice").read_text() == "hi\n"


# ---------------------------------------------------------------------------
# HideOtherHomes=, InaccessiblePaths=, TemporaryFileSystem=

@pytest.mark.daemon_config(extra_config="[View]\nHideOtherHomes=yes\n")
def test_hide_other_homes(daemon, host_files):
    host_files("/home/alice/nsm-vp-mine", "alice's\n", owner="alice")
    host_files("/home/bob/nsm-vp-bobs", "bob's\n", owner="bob")
    daemon.manager().CreateNamespace("alice")

    listing = sh(daemon, "alice", "ls -A /home", as_user="alice", check=True).stdout.split()
    assert listing == ["alice"]
    assert sh(daemon, "alice", "cat /home/alice/nsm-vp-mine", as_user="alice", check=True).stdout == "alice's\n"
    assert sh(daemon, "alice", "test -e /home/bob/nsm-vp-bobs").returncode == 1      # not even for root
    homes = view_mount(daemon, "alice", "/home")
    assert homes is not None and homes.fstype == "tmpfs" and is_read_only(homes), homes
    # her home is the real one, writable
    sh(daemon, "alice", "echo new > /home/alice/nsm-vp-written", as_user="alice", check=True)
    host_files.forget_later("/home/alice/nsm-vp-written")
    assert Path("/home/alice/nsm-vp-written").read_text() == "new\n"
    # the host still has every home
    assert Path("/home/bob/nsm-vp-bobs").exists()
    assert {u.name for u in TEST_USERS.values()} <= set(os.listdir("/home"))


@pytest.mark.daemon_config(files={
    "user.d/alice.conf": "[View]\nInaccessiblePaths=%h/nsm-vp-private %h/nsm-vp-private.txt -%h/nsm-vp-not-there\n"})
def test_inaccessible_paths(daemon, host_files):
    host_files("/home/alice/nsm-vp-private", owner="alice")
    host_files("/home/alice/nsm-vp-private/secret", "s\n", owner="alice")
    host_files("/home/alice/nsm-vp-private.txt", "t\n", owner="alice")
    daemon.manager().CreateNamespace("alice")

    p = sh(daemon, "alice", "ls /home/alice/nsm-vp-private", as_user="alice")
    assert p.returncode != 0 and "Permission denied" in p.stderr, p
    p = sh(daemon, "alice", "cat /home/alice/nsm-vp-private.txt", as_user="alice")
    assert p.returncode != 0 and "Permission denied" in p.stderr, p
    # even root finds nothing there
    assert sh(daemon, "alice", "ls -A /home/alice/nsm-vp-private", check=True).stdout == ""
    assert sh(daemon, "alice", "cat /home/alice/nsm-vp-private.txt", check=True).stdout == ""
    assert sh(daemon, "alice", "test -e /home/alice/nsm-vp-not-there").returncode == 1
    for path in ("/home/alice/nsm-vp-private", "/home/alice/nsm-vp-private.txt"):
        mnt = view_mount(daemon, "alice", path)
        assert mnt is not None and is_read_only(mnt), mnt
    # the host keeps them
    assert Path("/home/alice/nsm-vp-private/secret").read_text() == "s\n"


@pytest.mark.daemon_config(files={
    "user.d/bob.conf": "[View]\nTemporaryFileSystem=%h/nsm-vp-scratch:size=1M,mode=0700 %h/nsm-vp-frozen:ro\n"})
def test_temporary_file_system(daemon, host_files):
    host_files("/home/bob/nsm-vp-scratch/old", "old\n", owner="bob")
    host_files("/home/bob/nsm-vp-frozen", owner="bob")
    daemon.manager().CreateNamespace("bob")

    assert sh(daemon, "bob", "ls -A /home/bob/nsm-vp-scratch; stat -c %a /home/bob/nsm-vp-scratch", check=True).stdout == "700\n"
    size = sh(daemon, "bob", "stat -f -c '%b %S' /home/bob/nsm-vp-scratch", check=True).stdout.split()
    assert int(size[0]) * int(size[1]) == 1 << 20
    sh(daemon, "bob", "echo x > /home/bob/nsm-vp-scratch/new", check=True)
    assert not Path("/home/bob/nsm-vp-scratch/new").exists()
    frozen = view_mount(daemon, "bob", "/home/bob/nsm-vp-frozen")
    assert frozen is not None and frozen.fstype == "tmpfs" and is_read_only(frozen)


# ---------------------------------------------------------------------------
# Refusals: nothing is created, nothing is left behind

def test_bad_entry_fails_cleanly(daemon):
    """A malformed entry is refused when the file is read (ReloadConfig, naming the file, its
    line and the entry), not when a view is built: the view is built with the policy in
    force, and nothing of the bad entry is created."""
    assert not Path("/home/alice/nsm-vp-x").exists()
    path = daemon.write_config_file("user.d/alice.conf", "[View]\nBindPaths=relative/path:/home/alice/nsm-vp-x\n")
    message = expect_error(lambda: daemon.manager().ReloadConfig(), E_FAILED).get_dbus_message()
    assert f"{path}:2: 'relative/path:/home/alice/nsm-vp-x'" in message, message
    assert f"{path}:2: " in daemon.daemon_log_text()
    before = daemon.mount_count()
    daemon.manager().CreateNamespace("alice")
    assert not Path("/home/alice/nsm-vp-x").exists()
    assert daemon.mount_count() == before
    daemon.manager().CreateNamespace("bob")


@pytest.mark.daemon_config(files={
    "user.d/alice.conf": "[View]\nBindPaths=/tmp/nsm-vp-src:%h/nsm-vp-ok/dir /tmp/nsm-vp-src:%h/nsm-vp-link/planted\n"})
def test_symlink_in_destination_is_not_followed(daemon, host_files):
    """alice plants a symlink in her home pointing into bob's; the daemon must not follow
    it (nothing created in bob's home). It is her doing, in her home: that entry is
    skipped, and the rest of her policy applied."""
    host_files("/tmp/nsm-vp-src/f", "f\n")
    assert not Path("/home/bob/nsm-vp-target").exists() and not Path("/home/alice/nsm-vp-ok").exists()
    host_files("/home/bob/nsm-vp-target", owner="bob")
    link = Path("/home/alice/nsm-vp-link")
    link.symlink_to("/home/bob/nsm-vp-target")
    os.lchown(link, TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    host_files.forget_later(link)
    host_files.forget_later("/home/alice/nsm-vp-ok")

    daemon.manager().CreateNamespace("alice")
    assert os.listdir("/home/bob/nsm-vp-target") == []
    assert sh(daemon, "alice", "cat /home/alice/nsm-vp-ok/dir/f", check=True).stdout == "f\n"
    assert view_mount(daemon, "alice", "/home/bob/nsm-vp-target") is None
    assert "BindPaths=/tmp/nsm-vp-src:%h/nsm-vp-link/planted" in daemon.daemon_log_text()


@pytest.mark.daemon_config(ViewPropagation="shared", extra_config="[View]\nPrivateTmp=yes\n")
def test_policy_refused_where_it_would_reach_the_host(daemon, host_files):
    """With ViewPropagation=shared a view's /tmp is a peer of the host's: a private /tmp
    would be mounted on the host too. The policy refuses rather than do that."""
    marker = f"/tmp/nsm-vp-{uuid.uuid4().hex[:8]}"
    host_files(marker, "host\n")
    host_tmp = find_mount(host_mountinfo(), "/tmp").id
    before = daemon.mount_count()
    message = create_fails(daemon, "alice")
    assert "[View] policy" in message, message
    assert daemon.mount_count() == before
    assert find_mount(host_mountinfo(), "/tmp").id == host_tmp
    assert Path(marker).read_text() == "host\n"


# ---------------------------------------------------------------------------
# Mount points the policy makes in her home: hers while the view lasts, gone with it

def wait_gone(path):
    """The daemon removes them in a child after the view is unpinned: poll."""
    deadline = time.monotonic() + timeout(20)
    while os.path.lexists(path):
        assert time.monotonic() < deadline, f"{path} is still there after the view ended"
        time.sleep(0.05)


def owner(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid


MADE = "[View]\nBindReadOnlyPaths=/tmp/nsm-vp-mp-src:%h/nsm-mp/deep/x\nTemporaryFileSystem=%h/nsm-mp-t\n"


@pytest.mark.daemon_config(files={"user.d/alice.conf": MADE})
def test_mount_points_in_her_home_are_hers_and_go_with_the_view(daemon, host_files):
    """BindReadOnlyPaths=…:%h/nsm-mp/deep/x makes nsm-mp, deep and x in her real home (a
    view's root is the real disk): made as alice, as if she had made them, and removed again
    when the view ends. Nothing else in her home is touched."""
    host_files("/tmp/nsm-vp-mp-src/f", "f\n")
    for p in ("/home/alice/nsm-mp", "/home/alice/nsm-mp-t"):
        assert not os.path.lexists(p)
        host_files.forget_later(p)
    before = sorted(os.listdir("/home/alice"))
    daemon.manager().CreateNamespace("alice")

    assert sh(daemon, "alice", "cat /home/alice/nsm-mp/deep/x/f", check=True).stdout == "f\n"
    for p in ("/home/alice/nsm-mp", "/home/alice/nsm-mp/deep", "/home/alice/nsm-mp/deep/x", "/home/alice/nsm-mp-t"):
        assert owner(p) == (ALICE.uid, ALICE.gid), f"{p} is owned by {owner(p)}"
    assert os.listdir("/home/alice/nsm-mp/deep/x") == []

    daemon.manager().RemoveNamespace("alice")
    wait_gone("/home/alice/nsm-mp")
    wait_gone("/home/alice/nsm-mp-t")
    assert sorted(os.listdir("/home/alice")) == before


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=%h/nsm-mp-own %h/nsm-mp-a/b "
                                  "%h/nsm-mp-swapped\n"})
def test_what_she_made_stays(daemon, host_files):
    """Only what the policy made, still empty and still the same directory, is removed: her
    own directory at a destination stays, so does a made directory she put a file in (its
    made, empty child goes), and so does a directory of hers that took a made one's name."""
    host_files("/home/alice/nsm-mp-own", owner="alice")
    host_files.forget_later("/home/alice/nsm-mp-a")
    host_files.forget_later("/home/alice/nsm-mp-swapped")
    host_files.forget_later("/home/alice/nsm-mp-moved")
    daemon.manager().CreateNamespace("alice")
    assert view_mount(daemon, "alice", "/home/alice/nsm-mp-own").fstype == "tmpfs"
    # Her file next to the made mount point b, in the made directory a (the real disk in her view).
    sh(daemon, "alice", "echo keep > /home/alice/nsm-mp-a/keep", as_user="alice", check=True)
    # The made directory moved away on the host, hers in its place.
    daemon.in_view(None, ["sh", "-c", "mv /home/alice/nsm-mp-swapped /home/alice/nsm-mp-moved && "
                          "mkdir /home/alice/nsm-mp-swapped"], as_user="alice", check=True)

    daemon.manager().RemoveNamespace("alice")
    wait_gone("/home/alice/nsm-mp-a/b")
    assert os.path.isdir("/home/alice/nsm-mp-own")
    assert os.path.isdir("/home/alice/nsm-mp-moved")     # not where the policy mounts: not looked at
    assert Path("/home/alice/nsm-mp-a/keep").read_text() == "keep\n"
    assert os.path.isdir("/home/alice/nsm-mp-swapped")


# NS_GET_MNTNS_ID: _IOR(0xb7, 5, __u64)
NS_GET_MNTNS_ID = 0x8008b705


@pytest.mark.daemon_config(files={"user.d/alice.conf": MADE})
def test_mount_points_are_tagged_with_the_views_id(daemon, host_files):
    """What the policy made carries the view's 64-bit namespace id, never reused, not its
    inode: the kernel gives a freed inode to the next namespace, so a later view of hers could
    carry the tag of the earlier one, whose end would then remove (detach) her new view's
    mount points."""
    host_files("/tmp/nsm-vp-mp-src/f", "f\n")
    host_files.forget_later("/home/alice/nsm-mp")
    host_files.forget_later("/home/alice/nsm-mp-t")
    daemon.manager().CreateNamespace("alice")
    fd = daemon.open_view_fd("alice")
    try:
        ns_id = struct.unpack("Q", fcntl.ioctl(fd, NS_GET_MNTNS_ID, bytes(8)))[0]
    finally:
        os.close(fd)
    for p in ("/home/alice/nsm-mp", "/home/alice/nsm-mp/deep/x", "/home/alice/nsm-mp-t"):
        assert os.getxattr(p, "trusted.nsmanager.made-for").decode() == f"{ALICE.uid}:id:{ns_id}", p


@pytest.mark.daemon_config(files={"user.d/alice.conf": MADE})
def test_mount_points_go_with_a_view_that_ends_after_a_restart(daemon, host_files):
    """Where the policy may have made them is in the view's state: a daemon started again
    removes them when the view ends."""
    host_files("/tmp/nsm-vp-mp-src/f", "f\n")
    host_files.forget_later("/home/alice/nsm-mp")
    host_files.forget_later("/home/alice/nsm-mp-t")
    daemon.manager().CreateNamespace("alice")
    assert owner("/home/alice/nsm-mp/deep/x") == (ALICE.uid, ALICE.gid)
    daemon.restart_daemon()
    assert sh(daemon, "alice", "cat /home/alice/nsm-mp/deep/x/f", check=True).stdout == "f\n"
    daemon.manager().RemoveNamespace("alice")
    wait_gone("/home/alice/nsm-mp")
    wait_gone("/home/alice/nsm-mp-t")


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=%h/nsm-mp-ro/a/b\n"})
def test_no_root_mount_points_in_her_unwritable_directory(daemon, host_files):
    """A directory of hers she made unwritable to herself (chmod u-w) gets nothing from the
    policy: what she could not make there is not made as root instead (root-owned
    directories in her home, deeper ones made as root too). The entry fails as her own mkdir
    would: the entry is skipped with a note, as for a path of hers that cannot be used."""
    host_files("/home/alice/nsm-mp-ro", owner="alice", mode=0o555)
    daemon.manager().CreateNamespace("alice")
    assert os.listdir("/home/alice/nsm-mp-ro") == []
    spoiled_note(daemon, "alice", "TemporaryFileSystem=%h/nsm-mp-ro/a/b", "Permission denied")


# ---------------------------------------------------------------------------
# Paths from specifiers (%h) never follow a user's symlink, nor one her FUSE server says is root's

@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nBindReadOnlyPaths=-%h/nsm-own/link:%h/nsm-own/peek\n"})
def test_view_policy_does_not_follow_a_users_symlink(daemon, polkit_rules):
    sb = daemon
    bob_home = Path(TEST_USERS["bob"].home)
    os.chmod(bob_home, 0o700)
    try:
        (bob_home / "secret.txt").write_text("bob's secret\n")
        os.chown(bob_home / "secret.txt", TEST_USERS["bob"].uid, TEST_USERS["bob"].gid)
        scratch = Path(TEST_USERS["alice"].home) / "nsm-own"
        sb.run_as("alice", ["mkdir", "-p", str(scratch)], check=True)
        sb.run_as("alice", ["ln", "-s", str(bob_home / "secret.txt"), str(scratch / "link")], check=True)
        # Her link is not followed; it is her doing, so only that entry is skipped (logged),
        # and her view is built with the rest (as the entries a user spoiled, below).
        sb.manager().CreateNamespace("alice")
        assert not (scratch / "peek").exists()
        p = sb.in_view("alice", ["cat", str(scratch / "peek")])
        assert "secret" not in p.stdout
        assert "BindReadOnlyPaths=-%h/nsm-own/link:%h/nsm-own/peek" in sb.daemon_log_text()
    finally:
        os.chmod(bob_home, 0o755)
        (bob_home / "secret.txt").unlink(missing_ok=True)
        shutil.rmtree(Path(TEST_USERS["alice"].home) / "nsm-own", ignore_errors=True)


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nBindReadOnlyPaths=/srv/link:/srv/peek\n"})
def test_view_policy_follows_roots_symlinks(daemon):
    sb = daemon
    sb.mount_tmpfs("/srv")      # never the machine's /srv
    os.makedirs("/srv/data")
    Path("/srv/data/hello").write_text("hello\n")
    os.makedirs("/srv/peek")
    os.symlink("/srv/data", "/srv/link")   # root's
    sb.manager().CreateNamespace("alice")
    assert sb.in_view("alice", ["cat", "/srv/peek/hello"]).stdout == "hello\n"


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nBindReadOnlyPaths=/srv/link:/srv/peek\n"})
def test_view_policy_follows_roots_symlink_to_a_file(daemon):
    sb = daemon
    sb.mount_tmpfs("/srv")      # never the machine's /srv
    Path("/srv/hello").write_text("hello\n")
    Path("/srv/peek").write_text("")
    os.symlink("/srv/hello", "/srv/link")   # root's, to a file: the last component
    sb.manager().CreateNamespace("alice")
    assert sb.in_view("alice", ["cat", "/srv/peek"]).stdout == "hello\n"


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


# ---------------------------------------------------------------------------
# Entries a user spoiled: her symlink where a bind goes, a file where a directory is
# expected, another user's name in /tmp. The view is still built with everything that
# hides things; only that entry is skipped (or, where it hides something, covers what it
# still can), and the log says which, for whom, and why. Logins go through the real PAM
# stack (runuser -l with pam.d/nsm-runuser-l): with `optional` a view that failed would
# let the login go on in the host namespace, with every home and the secret in sight.

# What every user's view must hide, whatever they did: the other homes, and a file.
HIDING = "[View]\nHideOtherHomes=yes\nInaccessiblePaths=/srv/secret/file\n"
SECRET = "the secret\n"
# Run inside the login: the homes it sees, then the secret, each section ended by "--".
SHOW_POLICY = "ls -A /home; echo --; cat /srv/secret/file 2>&1; echo --; "


class Logins:
    def __init__(self, sb):
        self.sb = sb

    def run(self, user, script=""):
        """A login of user through the PAM stack, running SHOW_POLICY and then script;
        asserts that the policy holds in it and returns what script printed."""
        p = subprocess.run(["runuser", "-l", user, "-c", SHOW_POLICY + script + "\ntrue"], capture_output=True, text=True,
                           timeout=timeout(60), stdin=subprocess.DEVNULL)
        assert p.returncode == 0, f"{user}'s login failed: {p.stderr}"
        homes, secret, rest = p.stdout.split("--\n", 2)
        assert homes.split() == [user], f"{user}'s login sees the homes {homes.split()}: the [View] policy is off"
        assert SECRET not in secret and "Permission denied" in secret, f"{user}'s login reads the secret: {secret!r}"
        return rest


@pytest.fixture
def logins(pam_dir, daemon, pam_module):
    """/srv (a tmpfs) with the secret and each user's scratch directory, and runuser -l
    through the project's PAM service."""
    services = PamServices(pam_dir, pam_module)
    services.install("runuser-l", "nsm-runuser-l")
    daemon.mount_tmpfs("/srv")
    os.makedirs("/srv/secret")
    Path("/srv/secret/file").write_text(SECRET)
    for user in ("alice", "bob", "carol"):
        d = Path("/srv/scratch") / user
        d.mkdir(parents=True)
        (d / "marker").write_text(f"{user}'s scratch\n")
        os.chown(d, TEST_USERS[user].uid, TEST_USERS[user].gid)
    yield Logins(daemon)
    services.restore()


def as_alice(sb, script):
    sb.run_as("alice", ["sh", "-c", script], check=True)


def spoiled_note(sb, user, *words):
    """The daemon logged, for user's view, a line with all the words."""
    lines = [line for line in sb.daemon_log_text().splitlines() if f"the view of '{user}'" in line]
    assert any(all(w in line for w in words) for line in lines), \
        f"no log line for {user}'s view with {words}:\n" + "\n".join(lines)


@pytest.mark.daemon_config(extra_config=HIDING + "BindPaths=-/srv/scratch/%u:%h/scratch\n")
def test_her_symlink_where_a_bind_goes(logins, host_files):
    sb = logins.sb
    host_files.forget_later("/home/alice/scratch")
    host_files.forget_later("/home/bob/scratch")
    as_alice(sb, "ln -s /nonexistent ~/scratch")

    out = logins.run("alice", "readlink ~/scratch; cat ~/scratch/marker 2>&1")
    assert out.splitlines()[0] == "/nonexistent" and "alice's scratch" not in out, out
    assert not Path("/nonexistent").exists()
    spoiled_note(sb, "alice", "BindPaths=-/srv/scratch/%u:%h/scratch", "'/home/alice/scratch'", "symbolic link",
                 "belongs to alice (uid 2001)", "skipped")
    # her next login, and bob's (whose entry she cannot touch)
    logins.run("alice")
    assert logins.run("bob", "cat ~/scratch/marker") == "bob's scratch\n"


@pytest.mark.daemon_config(extra_config=HIDING + "BindReadOnlyPaths=-%h/nsm-link:%h/nsm-peek\n")
def test_a_dash_source_that_is_her_symlink(logins, host_files):
    sb = logins.sb
    host_files("/home/bob/nsm-bob", "bob's secret\n", owner="bob", mode=0o600)
    for p in ("/home/alice/nsm-link", "/home/alice/nsm-peek"):
        host_files.forget_later(p)
    as_alice(sb, "ln -s /home/bob/nsm-bob ~/nsm-link")

    out = logins.run("alice", "ls ~/nsm-peek 2>&1; cat ~/nsm-link 2>&1")
    assert "bob's secret" not in out, out
    assert not Path("/home/alice/nsm-peek").exists()
    spoiled_note(sb, "alice", "BindReadOnlyPaths=-%h/nsm-link:%h/nsm-peek", "the source '/home/alice/nsm-link'",
                 "skipped")
    logins.run("alice")
    logins.run("bob")


@pytest.mark.daemon_config(extra_config=HIDING + "BindPaths=/srv/scratch/%u:%h/scratch\n"
                           "TemporaryFileSystem=%h/nsm-tmp\n")
def test_a_file_where_a_directory_is_expected(logins, host_files):
    sb = logins.sb
    host_files("/home/alice/scratch", "her own file\n", owner="alice")
    host_files("/home/alice/nsm-tmp", "her tmp file\n", owner="alice")
    host_files.forget_later("/home/bob/scratch")
    host_files.forget_later("/home/bob/nsm-tmp")

    out = logins.run("alice", "cat ~/scratch; echo --; cat ~/nsm-tmp 2>&1")
    scratch, tmp = out.split("--\n")
    assert scratch == "her own file\n", "the bind went onto her file"
    # TemporaryFileSystem= hides: what she put there is covered, not shown
    assert "her tmp file" not in tmp and "Permission denied" in tmp, tmp
    spoiled_note(sb, "alice", "BindPaths=/srv/scratch/%u:%h/scratch", "where a directory is expected", "skipped")
    spoiled_note(sb, "alice", "TemporaryFileSystem=%h/nsm-tmp", "covered '/home/alice/nsm-tmp'")
    logins.run("alice")
    assert logins.run("bob", "cat ~/scratch/marker; ls -A ~/nsm-tmp | wc -l") == "bob's scratch\n0\n"


@pytest.mark.daemon_config(extra_config=HIDING + "TemporaryFileSystem=%h/nsm-cache\n"
                           "InaccessiblePaths=%h/nsm-private %h/nsm-via/private\n")
def test_symlinked_hiding_paths_under_her_home(logins, host_files):
    """InaccessiblePaths= and TemporaryFileSystem= paths that are her symlinks (the last
    component, and one on the way) fail closed: what is there is covered, never followed,
    and nothing shows through them."""
    sb = logins.sb
    host_files("/home/alice/nsm-real/private", "alice's private file\n", owner="alice")
    os.chown("/home/alice/nsm-real", TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    for p in ("nsm-private", "nsm-via", "nsm-cache"):
        host_files.forget_later(f"/home/alice/{p}")
    for p in ("nsm-cache", "nsm-private", "nsm-via"):
        host_files.forget_later(f"/home/bob/{p}")
    as_alice(sb, "ln -s nsm-real ~/nsm-private && ln -s nsm-real ~/nsm-via && ln -s nsm-real ~/nsm-cache")

    out = logins.run("alice", "cat ~/nsm-private/private 2>&1; cat ~/nsm-via/private 2>&1; "
                              "ls ~/nsm-cache 2>&1; echo --; cat ~/nsm-real/private")
    hidden, own = out.split("--\n")
    assert "private file" not in hidden, hidden
    assert own == "alice's private file\n", "her own files elsewhere are hers"
    spoiled_note(sb, "alice", "InaccessiblePaths=%h/nsm-private", "covered '/home/alice/nsm-private'")
    spoiled_note(sb, "alice", "InaccessiblePaths=%h/nsm-via/private", "covered '/home/alice/nsm-via'")
    spoiled_note(sb, "alice", "TemporaryFileSystem=%h/nsm-cache", "covered '/home/alice/nsm-cache'")
    # on the host, her links are untouched
    assert os.readlink("/home/alice/nsm-private") == "nsm-real"
    logins.run("alice")
    # bob has none of these paths: nothing to hide, and his view is built all the same
    assert logins.run("bob", "ls -A ~/nsm-cache | wc -l") == "0\n"
    spoiled_note(sb, "bob", "InaccessiblePaths=%h/nsm-private", "does not exist", "nothing is there to hide")


@pytest.mark.daemon_config(extra_config=HIDING + "BindPaths=/tmp/nsm-vp-scratch-%u:%h/nsm-scratch\n"
                           "InaccessiblePaths=-/tmp/nsm-vp-hide-%u\n")
def test_another_users_path_in_tmp(logins, host_files):
    """bob's and carol's policies name /tmp/nsm-vp-*-%u; alice gets there first. She can
    neither lock them out nor put anything into their views: the entries are skipped (or
    cover her link), and the daemon warns about such paths at every build."""
    sb = logins.sb
    for p in ("/tmp/nsm-vp-scratch-alice", "/tmp/nsm-vp-scratch-bob", "/tmp/nsm-vp-scratch-carol",
              "/tmp/nsm-vp-hide-bob", "/home/alice/nsm-trap", "/home/alice/nsm-scratch", "/home/bob/nsm-scratch",
              "/home/carol/nsm-scratch"):
        host_files.forget_later(p)
    as_alice(sb, "mkdir ~/nsm-trap && echo planted > ~/nsm-trap/planted && chmod -R a+rX ~/nsm-trap && "
                 "ln -s /home/alice/nsm-trap /tmp/nsm-vp-scratch-bob && ln -s /home/alice/nsm-trap /tmp/nsm-vp-hide-bob && "
                 "mkdir /tmp/nsm-vp-scratch-carol && echo planted > /tmp/nsm-vp-scratch-carol/planted && "
                 "mkdir /tmp/nsm-vp-scratch-alice && echo mine > /tmp/nsm-vp-scratch-alice/marker")
    # bob cannot remove her link from the sticky /tmp
    assert sb.run_as("bob", ["rm", "-f", "/tmp/nsm-vp-scratch-bob"]).returncode != 0

    out = logins.run("bob", "ls -A ~/nsm-scratch 2>&1; cat /tmp/nsm-vp-hide-bob/planted 2>&1")
    assert "planted\n" not in out.splitlines(keepends=True), out
    spoiled_note(sb, "bob", "BindPaths=/tmp/nsm-vp-scratch-%u:%h/nsm-scratch", "'/tmp' can be written by anybody",
                 "'nsm-vp-scratch-bob' in it belongs to uid 2001", "skipped")
    spoiled_note(sb, "bob", "InaccessiblePaths=-/tmp/nsm-vp-hide-%u", "covered '/tmp/nsm-vp-hide-bob'")
    out = logins.run("carol", "ls -A ~/nsm-scratch 2>&1")
    assert "planted" not in out, out
    spoiled_note(sb, "carol", "the source '/tmp/nsm-vp-scratch-carol' belongs to uid 2001, neither root nor carol",
                 "skipped")
    # alice's own directory there is hers to have bound, with a warning: anybody may take
    # the name once it is gone
    assert logins.run("alice", "cat ~/nsm-scratch/marker") == "mine\n"
    spoiled_note(sb, "alice", "the source '/tmp/nsm-vp-scratch-alice' lies where someone other than root and alice",
                 "'/tmp' can be written by anybody")
    # their next logins too
    logins.run("bob")
    logins.run("carol")


def setfacl(path, *entries):
    subprocess.run(["setfacl", "-m", ",".join(entries), str(path)], check=True, timeout=timeout(10))


@pytest.mark.daemon_config(extra_config=HIDING, files={"user.d/bob.conf": "[View]\nInaccessiblePaths=/srv/proj/secret\n"})
def test_a_directory_a_user_may_write_by_an_acl(logins, nsctl):
    """/srv/proj is root's, mode 0775, group root; setfacl gives alice write (a common way
    to hand a project lead one directory). bob's policy hides /srv/proj/secret. The mode
    bits say only root writes there; the kernel lets alice rename the secret away, which
    once failed bob's every view. Now verify names her ACL entry, and after her rename his
    login goes on under his policy, his entry hiding nothing, as for any spoiled entry."""
    sb = logins.sb
    proj = Path("/srv/proj")        # on the fixture's tmpfs, never the machine's /srv
    (proj / "secret").mkdir(parents=True)
    (proj / "secret" / "plan").write_text("bob's plan\n")
    os.chmod(proj, 0o775)
    setfacl(proj, "u:alice:rwx")

    p = nsctl("verify", "--config", str(sb.config_file))
    assert p.returncode == 0, p.stderr
    assert "InaccessiblePaths=/srv/proj/secret" in p.stderr and \
        "'/srv/proj' can be written by the ACL entry user:alice:rwx" in p.stderr, p.stderr

    as_alice(sb, "mv /srv/proj/secret /srv/proj/moved")
    assert logins.run("bob", "cat /srv/proj/moved/plan") == "bob's plan\n"
    spoiled_note(sb, "bob", "InaccessiblePaths=/srv/proj/secret", "does not exist", "nothing is there to hide",
                 "user:alice:rwx")
    logins.run("bob")


def test_verify_reads_acls(instance, nsctl):
    """Who may write a directory, as nsctl verify tells it: a named user's entry whose write
    the mask takes away is no writer; a named group's with write is; group root is, where
    NSS lists members in it other than root."""
    sb = instance
    sb.mount_tmpfs("/srv")          # never the machine's /srv
    for d in ("masked", "grouped", "rooted"):
        os.makedirs(f"/srv/{d}/x")
    setfacl("/srv/masked", "u:alice:rwx", "m::r-x")
    setfacl("/srv/grouped", "g:nsadmin:rwx")
    setfacl("/srv/rooted", "g:root:rwx")
    sb.write_config()
    bob = sb.write_config_file("user.d/bob.conf", "[View]\nInaccessiblePaths=/srv/masked/x /srv/grouped/x "
                                                  "/srv/rooted/x\n")
    p = nsctl("verify", "--config", str(sb.config_file))
    assert p.returncode == 0 and p.stdout.splitlines() == [
        "bob: lands in a view with InaccessiblePaths=/srv/masked/x, InaccessiblePaths=/srv/grouped/x, "
        "InaccessiblePaths=/srv/rooted/x", "No errors in the configuration."], p.stdout + p.stderr
    warned = [line for line in p.stderr.splitlines() if line.startswith(f"{bob}: warning:")]
    assert len(warned) == 1 and "InaccessiblePaths=/srv/grouped/x" in warned[0] and \
        "'/srv/grouped' can be written by the ACL entry group:nsadmin:rwx" in warned[0], p.stderr

    group = Path("/etc/group")      # the sandbox's copy
    before = group.read_text()
    try:
        group.write_text("".join("root:x:0:dave\n" if line.startswith("root:") else line
                                 for line in before.splitlines(keepends=True)))
        p = nsctl("verify", "--config", str(sb.config_file))
        assert "'/srv/rooted' can be written by the ACL entry group:root:rwx" in p.stderr, p.stderr
    finally:
        group.write_text(before)


@pytest.mark.daemon_config(extra_config=HIDING + "BindPaths=/srv/nsm-vp-missing:%h/nsm-x\n")
def test_an_administrators_error_still_fails_the_view(logins, host_files):
    """A source missing from root's own directory is nobody's doing but the administrator's:
    the view is not built without it, and the caller hears which entry."""
    host_files.forget_later("/home/alice/nsm-x")
    message = create_fails(logins.sb, "alice")
    assert "BindPaths=/srv/nsm-vp-missing:%h/nsm-x" in message, message
    assert_no_namespace(logins.sb, "alice")
    assert not Path("/home/alice/nsm-x").exists()
