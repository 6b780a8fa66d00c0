# SPDX-License-Identifier: LGPL-2.1-or-later
"""The per-user [View] policy (src/nsmanagerd/view-policy.c), end to end.

Policies come from the sandbox's nsmanagerd.conf, group.d/GROUP.conf and
user.d/USER.conf (the `daemon` fixture's daemon_config marker); views are built by
the real daemon and looked at from inside with sandbox.in_view(). Every path a policy
mounts on or creates lies on the sandbox's own tmpfs (/home, /tmp): a view's root is
the machine's root filesystem, so a directory created elsewhere would land on its disk.
The fixture fails a test whose views leaked a mount into the host namespace."""

import os
import shutil
import uuid
from pathlib import Path

import pytest

from helpers import E_FAILED, E_INVALID_PATH, expect_error
from sandbox import TEST_USERS, find_mount, host_mountinfo

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
def test_symlink_in_destination_is_refused(daemon, host_files):
    """alice plants a symlink in her home pointing into bob's; the daemon must not follow
    it (nothing created in bob's home), and must undo what it made for the first entry."""
    host_files("/tmp/nsm-vp-src/f", "f\n")
    assert not Path("/home/bob/nsm-vp-target").exists() and not Path("/home/alice/nsm-vp-ok").exists()
    host_files("/home/bob/nsm-vp-target", owner="bob")
    link = Path("/home/alice/nsm-vp-link")
    link.symlink_to("/home/bob/nsm-vp-target")
    host_files.forget_later(link)
    host_files.forget_later("/home/alice/nsm-vp-ok")
    before = daemon.mount_count()

    message = create_fails(daemon, "alice")
    assert "[View] policy" in message
    assert "symbolic links" in message or "symlink" in message, message
    assert os.listdir("/home/bob/nsm-vp-target") == []
    assert not Path("/home/alice/nsm-vp-ok").exists(), "the first entry's mount point was not removed"
    assert daemon.mount_count() == before
    assert_no_namespace(daemon, "alice")


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
