# SPDX-License-Identifier: LGPL-2.1-or-later
"""ShareSubtree("", P) reaches the views that exist already, two-way (the contract's
retroactive share): in the default ViewPropagation=slave a view's P follows the host one way
until then; afterwards it is a peer, so a mount its user makes there reaches the host and the
other views. Only a path whose propagation that view's user chose explicitly (EnslaveSubtree,
SetPropagation, recursively from an ancestor too) stays as it was, and the daemon remembers
those choices across restarts."""

import os

import pytest

from sandbox import find_mount


def peer_of_host(sb, user, path):
    host, view = find_mount(sb.mountinfo(), path), find_mount(sb.mountinfo(user), path)
    return view is not None and host is not None and host.shared and view.peer_group == host.peer_group


@pytest.fixture
def srv(daemon):
    daemon.mount_tmpfs("/srv")
    os.makedirs("/srv/media")
    os.makedirs("/srv/other/media")
    return daemon


def test_share_makes_existing_slave_views_two_way(srv):
    sb = srv
    mgr = sb.manager()
    # As /media on a systemd host: a mount of its own, shared, before the views exist.
    sb.mount_tmpfs("/srv/media")
    assert find_mount(sb.mountinfo(), "/srv/media").shared
    for u in ("alice", "carol"):
        mgr.CreateNamespace(u)
    before = find_mount(sb.mountinfo("carol"), "/srv/media")
    assert before.slave and not before.shared, "a view follows the host one way by default"

    mgr.ShareSubtree("", "/srv/media")
    assert peer_of_host(sb, "carol", "/srv/media") and peer_of_host(sb, "alice", "/srv/media")
    # carol's stick, mounted in her view, reaches the host and alice's view.
    sb.mount_tmpfs("/srv/media/stick", files={"id": "carol's stick\n"}, view="carol")
    assert open("/srv/media/stick/id").read() == "carol's stick\n"
    assert sb.in_view("alice", ["cat", "/srv/media/stick/id"]).stdout == "carol's stick\n"
    sb.umount("/srv/media/stick", view="carol")
    assert not os.path.exists("/srv/media/stick/id")


def test_explicit_choices_stay_across_restarts(srv):
    sb = srv
    mgr = sb.manager()
    sb.mount_tmpfs("/srv/media")
    sb.mount_tmpfs("/srv/other/media")
    for u in ("alice", "bob", "carol"):
        mgr.CreateNamespace(u)
    mgr.EnslaveSubtree("alice", "/srv/media")                  # explicitly a slave
    mgr.SetPropagation("bob", "/srv/other", "private", 1)       # recursively, from above
    sb.restart_daemon()

    mgr = sb.manager()
    mgr.ShareSubtree("", "/srv/media")
    mgr.ShareSubtree("", "/srv/other/media")
    alice = find_mount(sb.mountinfo("alice"), "/srv/media")
    assert alice.slave and not alice.shared and not peer_of_host(sb, "alice", "/srv/media"), \
        f"alice's choice was undone: {alice}"
    # bob's /srv/other/media is the one his recursive private bind of /srv/other holds: still
    # there, still private, and what the host mounts below it does not reach him.
    bobs = sb.mountinfo("bob")
    bob, bind = find_mount(bobs, "/srv/other/media"), find_mount(bobs, "/srv/other")
    assert bind is not None and bob is not None and bob.parent == bind.id, f"bob's bind is gone: {bind}, {bob}"
    assert bob.propagation == "private", f"bob's recursive choice was undone: {bob}"
    assert peer_of_host(sb, "carol", "/srv/media") and peer_of_host(sb, "carol", "/srv/other/media")
    assert peer_of_host(sb, "bob", "/srv/media")
    sb.mount_tmpfs("/srv/other/media/stick", files={"id": "host's stick\n"})
    assert sb.in_view("carol", ["cat", "/srv/other/media/stick/id"]).stdout == "host's stick\n"
    # (the mount point is a directory of the tmpfs bob's path shows too: only the mount must not reach him)
    p = sb.in_view("bob", ["ls", "/srv/other/media/stick"])
    assert p.returncode == 0, f"ls shows nothing either way where bob's view lacks the directory: {p.stderr}"
    assert p.stdout == "", "a host mount reached bob's private path"
    sb.umount("/srv/other/media/stick")

    # ShareSubtree(alice, P) is her undoing it: a peer again, and no longer a choice.
    mgr.ShareSubtree("alice", "/srv/media")
    assert peer_of_host(sb, "alice", "/srv/media")
    sb.restart_daemon()
    assert peer_of_host(sb, "alice", "/srv/media")
