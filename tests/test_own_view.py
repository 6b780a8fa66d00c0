# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a user may do to their own view (docs/security.md, src/nsmanagerd/own-view-rules.h).

Root runs inside every view (su, setuid programs, the PAM modules of the next login,
`nsctl attach` as root), so a user who changes what a path shows there changes what root
trusts. A caller with manage-own alone gets no more than fusermount3 or udisksctl would give
them. Each attack below was found against the first round's daemon, tried as alice would
(through the real polkitd, with a rule standing in for an active desktop session), and
shows its outcome as it matters: no uid 0, the host's file and mount unchanged, no file
created, the [View] policy still applied. The legitimate uses still work, root and manage
callers keep their power, and swapping directories for symlinks during the calls never
gets a mount outside what the rules allow.
"""

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from caller import assert_ok, call_as
from helpers import (E_ACCESS_DENIED, E_BUSY, E_INVALID_PATH, E_LIMIT_EXCEEDED, PamServices,
                     expect_error)
from sandbox import TEST_USERS, find_mount

# manage-own for alice and carol stands in for an active local session (the sandbox has no
# logind); carol, in nsadmin, also holds manage, as an administrator would.
RULES = """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage-own" &&
            (subject.user == "alice" || subject.user == "carol"))
                return polkit.Result.YES;
        if (action.id == "org.example.NSManager.manage" && subject.isInGroup("nsadmin"))
                return polkit.Result.YES;
});
"""

RULE_WORDS = ("owned", "regular file", "SharedSubtrees", "policy", "not a bind made for", "reachable", "own binds", "not a mount point")
# Words of single rules' sentences (src/nsmanagerd/own-view-rules.c), for refused(rule=).
NOT_HERS = "bind only onto their own files"
NOT_HER_DIR = "only inside a directory of their own"
NOT_HER_BIND = "is not a bind made for the caller"
POLICY_MOUNT = "is a mount of the [View] policy"
INSIDE_HER_BIND = "lies inside one of the caller's binds and is not one itself"


def refused(result, what, names=(E_ACCESS_DENIED,), rule=None):
    """A refusal with one of the names and a message naming the rule (with `rule`: that
    one, by words of its sentence in src/nsmanagerd/own-view-rules.c)."""
    assert "error" in result, f"{what} was allowed"
    assert result["error"] in names, f"{what}: expected {names}, got {result}"
    assert any(w in result["message"] for w in RULE_WORDS) or result["error"] == E_INVALID_PATH, \
        f"{what}: the message names no rule: {result['message']}"
    assert rule is None or rule in result["message"], f"{what}: refused, but not by the rule '{rule}': {result}"
    return result["message"]


def as_user(sb, user, *argv, check=True):
    return sb.run_as(user, list(argv), check=check)


def is_mount_point(sb, view, path):
    return find_mount(sb.mountinfo(view), path) is not None


@pytest.fixture
def own(daemon, polkit_rules):
    """alice's, bob's and carol's views; a scratch directory of alice's and carol's own in
    their homes (removed afterwards: the homes outlive the test)."""
    sb = daemon
    polkit_rules("50-own-view", RULES)
    scratch = {}
    for u in ("alice", "carol"):
        d = Path(TEST_USERS[u].home) / "nsm-own"
        as_user(sb, u, "mkdir", "-p", str(d))
        scratch[u] = d
    for u in ("alice", "bob", "carol"):
        sb.manager().CreateNamespace(u)
    sb.scratch = scratch
    yield sb
    for u in ("alice", "bob", "carol"):
        if u in [str(n) for n, *_ in sb.manager().ListNamespaces()]:
            sb.manager().RemoveNamespace(u)
    for d in scratch.values():
        shutil.rmtree(d, ignore_errors=True)


def alice_file(sb, name, text, mode=0o644):
    p = sb.scratch["alice"] / name
    as_user(sb, "alice", "sh", "-c", f'printf %s "$1" > "$2" && chmod {mode:o} "$2"', "sh", text, str(p))
    return str(p)


def alice_dir(sb, name, files=None):
    p = sb.scratch["alice"] / name
    as_user(sb, "alice", "mkdir", "-p", str(p))
    for n, text in (files or {}).items():
        as_user(sb, "alice", "sh", "-c", 'printf %s "$1" > "$2"', "sh", text, str(p / n))
    return str(p)


# ---- 1. a user's file over what root trusts ----

# The test's own su service, in the sandbox's copy of /etc/pam.d: root's password and nothing
# else (no pam_rootok, no nullok), so su gives alice uid 0 only if what her view shows at
# /etc/pam.d/su is not this file.
SU_SERVICE = "# nsmanager test: su asks for root's password\nauth required pam_unix.so\n" \
             "account required pam_unix.so\nsession required pam_unix.so\n"
EVIL_PAM = "auth sufficient pam_permit.so\naccount sufficient pam_permit.so\nsession optional pam_permit.so\n"


@pytest.fixture
def su_service(pam_dir):
    services = PamServices(pam_dir)
    services.install("su", text=SU_SERVICE)
    yield "/etc/pam.d/su"
    services.restore()


def su_uid(sb, nsctl, how):
    """alice runs `su -c 'id -u' root` in her view, with no password to give: in a process of
    hers there ("view"), or through `nsctl attach alice -- su …` ("attach": the daemon starts
    it there as alice). The uid it printed, or None where su asked for root's password."""
    argv = ["su", "-c", "id -u", "root"]
    if how == "view":
        p = sb.in_view("alice", argv, as_user="alice", input="")
    else:
        p = nsctl("attach", "alice", "--", *argv, as_user="alice", input="")
    if p.returncode == 0:
        return p.stdout.split()[-1]
    assert "Password:" in p.stderr, f"su ({how}) did not ask for root's password: {p.returncode} {p.stdout} {p.stderr}"
    return None


def test_bind_over_a_pam_service_is_refused_and_su_stays_root_only(own, su_service, nsctl):
    sb = own
    evil = alice_file(sb, "su-pam", EVIL_PAM)
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", evil, su_service, 0), f"alice binds over {su_service}")
    assert not is_mount_point(sb, "alice", su_service)
    assert sb.in_view("alice", ["cat", su_service]).stdout == SU_SERVICE
    # As it matters: su in her view, and su she runs there through nsctl attach, still ask for
    # root's password (and get none). test_root_binds_over_what_root_trusts shows both give
    # uid 0 once the bind is made.
    for how in ("view", "attach"):
        assert su_uid(sb, nsctl, how) is None, f"su ({how}) gave alice root"


def test_bind_over_root_directories_and_programs_is_refused(own):
    sb = own
    motd = alice_dir(sb, "motd.d", {"00-evil": "#!/bin/sh\ntouch /run/nsm-motd-ran\n"})
    script = alice_file(sb, "bash", "#!/bin/sh\necho pwned\n", 0o755)
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", motd, "/etc/update-motd.d", 0), "over /etc/update-motd.d",
            rule=NOT_HERS)
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", script, "/usr/bin/bash", 0), "over /usr/bin/bash", rule=NOT_HERS)
    # the read-only flag changes nothing about who owns the destination
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", script, "/usr/bin/bash", 1), "over /usr/bin/bash, ro",
            rule=NOT_HERS)
    assert not is_mount_point(sb, "alice", "/etc/update-motd.d")
    assert not is_mount_point(sb, "alice", "/usr/bin/bash")
    p = sb.in_view("alice", ["/usr/bin/bash", "-c", "echo fine"])
    assert p.stdout.strip() == "fine"


# ---- 2. joining a host peer group ----

def test_share_outside_shared_subtrees_is_refused(own):
    sb = own
    host_home = find_mount(sb.mountinfo(), "/home")
    assert host_home.shared, "the sandbox's /home should be shared on the host (the daemon makes / rshared)"
    message = refused(call_as(sb, "alice", "ShareSubtree", "ss", "alice", "/home"), "ShareSubtree(alice, /home)")
    assert "SharedSubtrees" in message
    view_home = find_mount(sb.mountinfo("alice"), "/home")
    assert view_home.peer_group != host_home.peer_group, "alice's /home joined the host's peer group"
    # …and what she would have done with it:
    evil = alice_file(sb, "bashrc", "echo pwned\n")
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", evil, "/home/bob/.bashrc", 0), "over bob's .bashrc")
    assert not is_mount_point(sb, None, "/home/bob/.bashrc")
    assert not is_mount_point(sb, "bob", "/home/bob/.bashrc")


# ---- 3. root's mounts under the shared /mnt ----

def test_roots_mounts_under_mnt_stay(own):
    sb = own
    sb.mount_tmpfs("/mnt/data", files={"backup.sh": "#!/bin/sh\necho root's backup\n"})
    evil = alice_file(sb, "backup.sh", "#!/bin/sh\necho pwned\n", 0o755)
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", evil, "/mnt/data/backup.sh", 0), "over root's backup.sh")
    for flags in (0, 1):
        refused(call_as(sb, "alice", "Unmount", "sst", "alice", "/mnt/data", flags), f"Unmount /mnt/data {flags}",
                rule=NOT_HER_BIND)
    assert Path("/mnt/data/backup.sh").read_text() == "#!/bin/sh\necho root's backup\n"
    assert is_mount_point(sb, None, "/mnt/data") and is_mount_point(sb, "bob", "/mnt/data")
    assert is_mount_point(sb, "alice", "/mnt/data")


def test_propagation_changes_add_no_mount_under_mnt(own):
    """SetPropagation and EnslaveSubtree on a directory that is no mount point would bind it
    onto itself first: under the shared /mnt that mount appears on the host and in every view,
    at a directory of root's that fusermount3 would not let her mount on."""
    sb = own
    os.makedirs("/mnt/nsm-roots-dir")
    try:
        host_before, bob_before = sb.mount_count(), sb.mount_count("bob")
        for method, sig, args in (("SetPropagation", "ssst", ("alice", "/mnt/nsm-roots-dir", "private", 0)),
                                  ("SetPropagation", "ssst", ("alice", "/mnt/nsm-roots-dir", "shared", 1)),
                                  ("EnslaveSubtree", "ss", ("alice", "/mnt/nsm-roots-dir"))):
            message = refused(call_as(sb, "alice", method, sig, *args), f"{method}{args}")
            assert "not a mount point" in message
        assert not is_mount_point(sb, None, "/mnt/nsm-roots-dir")
        assert not is_mount_point(sb, "bob", "/mnt/nsm-roots-dir")
        assert (sb.mount_count(), sb.mount_count("bob")) == (host_before, bob_before)
    finally:
        os.rmdir("/mnt/nsm-roots-dir")


# ---- 4. the create flag ----

def test_create_flag_creates_nothing_outside_the_callers_directories(own):
    sb = own
    f = alice_file(sb, "empty", "")
    d = alice_dir(sb, "somedir")
    os.makedirs("/run/lock", exist_ok=True)
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", f, "/run/nologin", 2), "create /run/nologin", rule=NOT_HER_DIR)
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", d, "/run/lock/a/b/c", 2), "create /run/lock/a/b/c",
            rule=NOT_HER_DIR)
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", d, "/home/bob/newdir", 2), "create in bob's home",
            rule=NOT_HER_DIR)
    assert not os.path.lexists("/run/nologin")
    assert not os.path.lexists("/run/lock/a")
    assert not os.path.lexists("/home/bob/newdir")
    # Inside her own directory: created, as hers.
    assert_ok(call_as(sb, "alice", "BindMount", "ssst", "alice", d, f"{sb.scratch['alice']}/new/deep", 2), "create in hers")
    for p in (sb.scratch["alice"] / "new", sb.scratch["alice"] / "new/deep"):
        assert p.stat().st_uid == TEST_USERS["alice"].uid, f"{p} is not alice's"



# ---- each rule of a bind, by its sentence ----

def test_each_bind_rule_is_the_one_that_refuses(own):
    """The refusals above show the outcome; these show that each rule of a user's bind
    (own-view-rules.c) is reached, alone: in each case all the other rules would let it
    through, so the message names the one that refused."""
    sb = own
    mine = alice_file(sb, "mine", "alice's\n")
    bob_home = Path(TEST_USERS["bob"].home)
    (bob_home / "nsm-secret").write_text("bob's\n")
    os.chown(bob_home / "nsm-secret", TEST_USERS["bob"].uid, TEST_USERS["bob"].gid)
    hers_under_mnt = Path("/mnt/nsm-alice")
    hers_under_mnt.mkdir()
    os.chown(hers_under_mnt, TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    # a mount point of hers that no bind of hers made: a tmpfs root mounted in her view
    mount_point = sb.scratch["alice"] / "roots-tmpfs"
    as_user(sb, "alice", "mkdir", str(mount_point))
    sb.in_view("alice", ["mount", "-t", "tmpfs", "-o", f"size=1m,nosuid,nodev,mode=755,uid={TEST_USERS['alice'].uid}",
                         "nsm-roots-tmpfs", str(mount_point)], check=True)
    # a FIFO of hers: hers, writable, on her home's file system, but no file
    fifo = sb.scratch["alice"] / "fifo"
    as_user(sb, "alice", "mkfifo", str(fifo))
    # a process of hers: /proc/PID is hers, on procfs
    sleeper = sb.run_popen(sb._setpriv("alice") + ["sleep", "300"])
    os.chmod(bob_home, 0o700)
    try:
        before = sb.mount_count("alice")
        for source, dest, flags, rule in (
                ("/etc/passwd", f"{sb.scratch['alice']}/passwd", 2, "is not owned by the caller"),
                (str(bob_home / "nsm-secret"), f"{sb.scratch['alice']}/peek", 2, "is not reachable for the caller"),
                (mine, str(bob_home / "nsm-secret"), 0, "is not reachable or not writable"),
                (mine, "/etc/hostname", 0, "bind only onto their own files"),
                (mine, str(fifo), 0, "is not a regular file or a directory"),
                (mine, "/etc/nsm-new", 2, "only inside a directory of their own"),
                (mine, f"/proc/{sleeper.pid}/environ", 0, "not one that holds files"),
                (str(sb.scratch["alice"]), str(mount_point), 0, "not one of the caller's own binds"),
                (str(sb.scratch["alice"]), str(hers_under_mnt), 0, "is on a shared mount")):
            refused(call_as(sb, "alice", "BindMount", "ssst", "alice", source, dest, flags),
                    f"BindMount {source} {dest} {flags}", rule=rule)
        assert sb.mount_count("alice") == before, "a refused bind left a mount in alice's view"
        assert not os.path.lexists("/etc/nsm-new") and not os.path.lexists(f"{sb.scratch['alice']}/passwd")
        assert not is_mount_point(sb, None, str(hers_under_mnt)) and not is_mount_point(sb, "bob", str(hers_under_mnt))
    finally:
        os.chmod(bob_home, 0o755)
        sleeper.kill()
        sleeper.wait()
        sb.in_view("alice", ["umount", str(mount_point)])
        hers_under_mnt.rmdir()
        (bob_home / "nsm-secret").unlink()


# ---- 5. the [View] policy's own mounts ----

SECRET_POLICY = {"user.d/alice.conf": "[View]\nHideOtherHomes=yes\nInaccessiblePaths=-/srv/secret\n"}


@pytest.fixture
def srv(daemon):
    """A tmpfs on /srv (never the machine's) with /srv/secret/file."""
    daemon.mount_tmpfs("/srv")
    os.makedirs("/srv/secret")
    Path("/srv/secret/file").write_text("the secret\n")
    yield Path("/srv")


@pytest.mark.daemon_config(files=SECRET_POLICY)
def test_policy_mounts_cannot_be_unmounted_or_repropagated(srv, own):
    sb = own
    for path in ("/home", "/srv/secret"):
        for flags in (0, 1):
            refused(call_as(sb, "alice", "Unmount", "sst", "alice", path, flags), f"Unmount {path} {flags}",
                    rule=NOT_HER_BIND)
        refused(call_as(sb, "alice", "SetPropagation", "ssst", "alice", path, "shared", 0), f"SetPropagation {path}",
                rule=POLICY_MOUNT)
        refused(call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", path), f"EnslaveSubtree {path}", rule=POLICY_MOUNT)
    refused(call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/", "private", 1), "recursive over the policy",
            rule="holds mounts of the [View] policy")
    # As it matters: the policy is still there.
    assert not sb.in_view("alice", ["test", "-e", "/home/bob"]).returncode == 0
    p = sb.in_view("alice", ["cat", "/srv/secret/file"], as_user="alice")
    assert p.returncode != 0 and "secret" not in p.stdout


@pytest.mark.daemon_config(files=SECRET_POLICY)
def test_a_bind_does_not_reopen_what_the_policy_closed(srv, own):
    sb = own
    # Even where alice owns it on the host: her view shows the policy's cover, which is not hers.
    os.chown("/srv/secret", TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    os.chown("/srv/secret/file", TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    peek = f"{sb.scratch['alice']}/peek"
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", "/srv/secret", peek, 2), "bind /srv/secret")
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", "/srv/secret/file", peek, 2), "bind /srv/secret/file")
    p = sb.in_view("alice", ["sh", "-c", f"cat {peek}/file {peek}"], as_user="alice")
    assert "secret" not in p.stdout


# ---- only the top of each of her binds is hers ----

@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=%h/nsm-own/policy-tmp\n"})
def test_mounts_copied_inside_her_bind_are_not_hers(srv, own):
    """A bind is recursive: binding a tree of hers that holds a [View] policy mount, or one of
    root's, copies those inside her bind. Only the bind's top is recorded as hers: the copies
    are not hers to unmount, nor to change the propagation of, by their paths."""
    sb = own
    scratch = sb.scratch["alice"]
    os.makedirs("/srv/roots")
    Path("/srv/roots/file").write_text("root's\n")
    sb.manager().BindMount("alice", "/srv/roots", f"{scratch}/roots-bind", 2)
    assert is_mount_point(sb, "alice", f"{scratch}/policy-tmp") and is_mount_point(sb, "alice", f"{scratch}/roots-bind")

    copy = f"{scratch}/copy"
    assert_ok(call_as(sb, "alice", "BindMount", "ssst", "alice", str(scratch), copy, 2), "alice binds her tree")
    copies = (f"{copy}/policy-tmp", f"{copy}/roots-bind")
    for path in copies:
        assert is_mount_point(sb, "alice", path), f"the recursive bind did not copy {path}"
        for flags in (0, 1):
            refused(call_as(sb, "alice", "Unmount", "sst", "alice", path, flags), f"Unmount {path} {flags}",
                    rule=NOT_HER_BIND)
        for mode, recursive in (("private", 0), ("shared", 0), ("unbindable", 1)):
            refused(call_as(sb, "alice", "SetPropagation", "ssst", "alice", path, mode, recursive),
                    f"SetPropagation {path} {mode} {recursive}", rule=INSIDE_HER_BIND)
        refused(call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", path), f"EnslaveSubtree {path}",
                rule=INSIDE_HER_BIND)
    # As it matters: the copies are there as they were.
    after = sb.mountinfo("alice")
    for path in copies:
        assert find_mount(after, path) is not None, f"{path} was unmounted"
    assert sb.in_view("alice", ["cat", f"{copy}/roots-bind/file"]).stdout == "root's\n"

    # The top is hers: its propagation is hers to change, but not, recursively, that of the copies.
    assert_ok(call_as(sb, "alice", "SetPropagation", "ssst", "alice", copy, "private", 0), "private, her bind")
    message = refused(call_as(sb, "alice", "SetPropagation", "ssst", "alice", copy, "private", 1), "recursive, her bind")
    assert "holds mounts" in message
    # With what it copied inside, it goes only detached, and takes the copies along.
    r = call_as(sb, "alice", "Unmount", "sst", "alice", copy, 0)
    assert r.get("error") == E_BUSY and "mounts below" in r["message"], r
    assert_ok(call_as(sb, "alice", "Unmount", "sst", "alice", copy, 1), "alice detaches her bind")
    assert not any(is_mount_point(sb, "alice", p) for p in (copy, *copies))
    assert is_mount_point(sb, "alice", f"{scratch}/policy-tmp") and is_mount_point(sb, "alice", f"{scratch}/roots-bind")


# ---- 6. [View] paths from specifiers never follow a user's symlink ----

@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nBindReadOnlyPaths=-%h/nsm-own/link:%h/nsm-own/peek\n"})
def test_view_policy_does_not_follow_a_users_symlink(daemon, polkit_rules):
    sb = daemon
    bob_home = Path(TEST_USERS["bob"].home)
    os.chmod(bob_home, 0o700)
    try:
        (bob_home / "secret.txt").write_text("bob's secret\n")
        os.chown(bob_home / "secret.txt", TEST_USERS["bob"].uid, TEST_USERS["bob"].gid)
        scratch = Path(TEST_USERS["alice"].home) / "nsm-own"
        as_user(sb, "alice", "mkdir", "-p", str(scratch))
        as_user(sb, "alice", "ln", "-s", str(bob_home / "secret.txt"), str(scratch / "link"))
        # Her link is not followed; it is her doing, so only that entry is skipped (logged),
        # and her view is built with the rest (tests/test_view_policy.py).
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
def test_view_policy_follows_roots_symlinks(srv, daemon):
    sb = daemon
    os.makedirs("/srv/data")
    Path("/srv/data/hello").write_text("hello\n")
    os.makedirs("/srv/peek")
    os.symlink("/srv/data", "/srv/link")   # root's
    sb.manager().CreateNamespace("alice")
    assert sb.in_view("alice", ["cat", "/srv/peek/hello"]).stdout == "hello\n"


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nBindReadOnlyPaths=/srv/link:/srv/peek\n"})
def test_view_policy_follows_roots_symlink_to_a_file(srv, daemon):
    sb = daemon
    Path("/srv/hello").write_text("hello\n")
    Path("/srv/peek").write_text("")
    os.symlink("/srv/hello", "/srv/link")   # root's, to a file: the last component
    sb.manager().CreateNamespace("alice")
    assert sb.in_view("alice", ["cat", "/srv/peek"]).stdout == "hello\n"


# ---- legitimate uses ----

def mount_options(sb, view, path):
    for line in sb.in_view(view, ["cat", "/proc/self/mountinfo"]).stdout.splitlines():
        fields = line.split()
        if fields[4] == path:
            return set(fields[5].split(","))
    return None


def test_legitimate_uses(own):
    sb = own
    src = alice_dir(sb, "src", {"hello": "from src\n"})
    dst = f"{sb.scratch['alice']}/dst"
    assert_ok(call_as(sb, "alice", "BindMount", "ssst", "alice", src, dst, 2), "alice binds ~/src onto ~/dst")
    assert sb.in_view("alice", ["cat", f"{dst}/hello"], as_user="alice").stdout == "from src\n"
    opts = mount_options(sb, "alice", dst)
    assert {"nosuid", "nodev"} <= opts, f"a user's bind must be nosuid,nodev: {opts}"
    assert not is_mount_point(sb, None, dst), "a bind in her view reached the host"

    # Her own bind: private, then shared again.
    assert_ok(call_as(sb, "alice", "SetPropagation", "ssst", "alice", dst, "private", 0), "private")
    assert find_mount(sb.mountinfo("alice"), dst).propagation == "private"
    assert_ok(call_as(sb, "alice", "SetPropagation", "ssst", "alice", dst, "shared", 0), "shared")
    assert find_mount(sb.mountinfo("alice"), dst).shared

    # Binding again onto it replaces the earlier bind instead of stacking.
    src2 = alice_dir(sb, "src2", {"hello": "from src2\n"})
    before = sb.mount_count("alice")
    assert_ok(call_as(sb, "alice", "BindMount", "ssst", "alice", src2, dst, 0), "alice binds again")
    assert sb.mount_count("alice") == before
    assert sb.in_view("alice", ["cat", f"{dst}/hello"], as_user="alice").stdout == "from src2\n"

    # She may unmount what was mounted for her.
    assert_ok(call_as(sb, "alice", "Unmount", "sst", "alice", dst, 0), "alice unmounts her bind")
    assert not is_mount_point(sb, "alice", dst)

    # Her /mnt: enslaved, and shared again (undoing it).
    assert_ok(call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", "/mnt"), "enslave /mnt")
    m = find_mount(sb.mountinfo("alice"), "/mnt")
    host = find_mount(sb.mountinfo(), "/mnt")
    assert m.slave and not m.shared and m.master == host.peer_group
    assert_ok(call_as(sb, "alice", "ShareSubtree", "ss", "alice", "/mnt"), "share /mnt again")
    m = find_mount(sb.mountinfo("alice"), "/mnt")
    assert m.shared and m.peer_group == host.peer_group and not m.slave


# Root does, over the bus, each thing alice is refused above (docs/security.md: root and
# manage callers keep their full power). Each shows it took effect where alice's attempt
# would have, and undoes it.

def test_root_shares_outside_shared_subtrees(own):
    sb = own
    mgr = sb.manager()
    mgr.ShareSubtree("alice", "/home")
    assert find_mount(sb.mountinfo("alice"), "/home").peer_group == find_mount(sb.mountinfo(), "/home").peer_group
    mgr.SetPropagation("alice", "/home", "slave", 0)
    assert find_mount(sb.mountinfo("alice"), "/home").master == find_mount(sb.mountinfo(), "/home").peer_group


def test_root_binds_over_what_root_trusts(own, su_service, nsctl):
    sb = own
    mgr = sb.manager()
    # alice's file over the test's own PAM service: su in her view, and through her attach,
    # now gives her uid 0. (The outcome test_bind_over_a_pam_service_is_refused_… looks for.)
    evil = alice_file(sb, "su-pam", EVIL_PAM)
    mgr.BindMount("alice", evil, su_service, 0)
    assert sb.in_view("alice", ["cat", su_service]).stdout == EVIL_PAM
    for how in ("view", "attach"):
        assert su_uid(sb, nsctl, how) == "0", f"su ({how}) did not give uid 0 over alice's PAM file"
    assert not is_mount_point(sb, None, su_service) and not is_mount_point(sb, "bob", su_service)
    mgr.Unmount("alice", su_service, 0)
    assert su_uid(sb, nsctl, "view") is None

    # A directory over /etc/update-motd.d, a script over /usr/bin/bash: in her view only.
    motd = alice_dir(sb, "motd.d", {"00-evil": "#!/bin/sh\necho evil motd\n"})
    mgr.BindMount("alice", motd, "/etc/update-motd.d", 0)
    assert sb.in_view("alice", ["ls", "/etc/update-motd.d"]).stdout.split() == ["00-evil"]
    assert not is_mount_point(sb, None, "/etc/update-motd.d")
    mgr.Unmount("alice", "/etc/update-motd.d", 0)
    assert "00-evil" not in sb.in_view("alice", ["ls", "/etc/update-motd.d"]).stdout

    script = alice_file(sb, "bash", "#!/bin/sh\necho pwned\n", 0o755)
    mgr.BindMount("alice", script, "/usr/bin/bash", 1)
    try:
        assert sb.in_view("alice", ["/usr/bin/bash", "-c", "echo fine"]).stdout == "pwned\n"
        # …and root's `nsctl attach alice` runs her login shell, /bin/bash, as the view shows it.
        assert nsctl("attach", "alice", input="").stdout == "pwned\n"
        assert not is_mount_point(sb, None, "/usr/bin/bash")
    finally:
        mgr.Unmount("alice", "/usr/bin/bash", 0)
    assert sb.in_view("alice", ["/usr/bin/bash", "-c", "echo fine"]).stdout == "fine\n"

    # Another user's file, in alice's view.
    bashrc = alice_file(sb, "bashrc", "echo pwned\n")
    mgr.BindMount("alice", bashrc, "/home/bob/.bashrc", 2)
    assert sb.in_view("alice", ["cat", "/home/bob/.bashrc"]).stdout == "echo pwned\n"
    assert not is_mount_point(sb, None, "/home/bob/.bashrc") and not is_mount_point(sb, "bob", "/home/bob/.bashrc")
    mgr.Unmount("alice", "/home/bob/.bashrc", 0)


def test_root_overmounts_and_unmounts_roots_mounts_under_mnt(own):
    sb = own
    mgr = sb.manager()
    roots = "#!/bin/sh\necho root's backup\n"
    sb.mount_tmpfs("/mnt/data", files={"backup.sh": roots})
    other = alice_file(sb, "backup.sh", "#!/bin/sh\necho another backup\n", 0o755)
    # Under the shared /mnt a bind in alice's view reaches the host and every view.
    mgr.BindMount("alice", other, "/mnt/data/backup.sh", 0)
    assert Path("/mnt/data/backup.sh").read_text() == "#!/bin/sh\necho another backup\n"
    assert is_mount_point(sb, "bob", "/mnt/data/backup.sh")
    mgr.Unmount("alice", "/mnt/data/backup.sh", 0)
    assert Path("/mnt/data/backup.sh").read_text() == roots
    # …and so does an unmount: /mnt/data goes from the host and every view.
    mgr.Unmount("alice", "/mnt/data", 1)
    for view in (None, "alice", "bob"):
        assert not is_mount_point(sb, view, "/mnt/data"), f"/mnt/data is still mounted in {view or 'the host'}"


def test_root_creates_where_alice_may_not(own):
    sb = own
    mgr = sb.manager()
    f = alice_file(sb, "empty", "")
    d = alice_dir(sb, "somedir")
    os.makedirs("/run/lock", exist_ok=True)
    made = ("/run/nologin", "/run/lock/a", "/home/bob/newdir")
    try:
        # On the sandbox's /run: /run/nologin blocks the sandbox's non-root logins until it goes.
        mgr.BindMount("alice", f, "/run/nologin", 2)
        mgr.BindMount("alice", d, "/run/lock/a/b/c", 2)
        mgr.BindMount("alice", d, "/home/bob/newdir", 2)
        for path in ("/run/nologin", "/run/lock/a", "/run/lock/a/b/c", "/home/bob/newdir"):
            assert os.lstat(path).st_uid == 0, f"{path} was not created as root's"
        assert os.path.isfile("/run/nologin")
        for path in ("/run/nologin", "/run/lock/a/b/c", "/home/bob/newdir"):
            assert is_mount_point(sb, "alice", path)
            mgr.Unmount("alice", path, 0)
        # What the flag made stays after Unmount: it is on the host's file systems.
        assert all(os.path.lexists(p) for p in made)
    finally:
        for path in made:
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.unlink(path)


@pytest.mark.daemon_config(files=SECRET_POLICY)
def test_root_changes_and_unmounts_the_policy_mounts(srv, own):
    sb = own
    mgr = sb.manager()
    for path in ("/home", "/srv/secret"):
        mgr.SetPropagation("alice", path, "shared", 0)
        assert find_mount(sb.mountinfo("alice"), path).shared
    # (EnslaveSubtree of /home is not for root either: the policy's tmpfs there is not the host's
    # file system, which the view could follow. /srv/secret is no mount point on the host: it
    # becomes a slave of what it follows now, its own peer group of one, so it sends no more.)
    mgr.EnslaveSubtree("alice", "/srv/secret")
    assert not find_mount(sb.mountinfo("alice"), "/srv/secret").shared
    mgr.SetPropagation("alice", "/", "private", 1)
    assert all(not m.shared and not m.slave for m in sb.mountinfo("alice"))
    # Unmounted, the policy no longer applies: alice reads the secret and sees bob's home.
    mgr.Unmount("alice", "/srv/secret", 0)
    mgr.Unmount("alice", "/home", 1)
    assert sb.in_view("alice", ["cat", "/srv/secret/file"], as_user="alice").stdout == "the secret\n"
    assert sb.in_view("alice", ["test", "-d", "/home/bob"]).returncode == 0


@pytest.mark.daemon_config(files=SECRET_POLICY)
def test_root_binds_what_the_policy_closed(srv, own):
    sb = own
    peek = f"{sb.scratch['alice']}/peek"
    # Root's binds are of host paths: the host's /srv/secret, which her view covers.
    sb.manager().BindMount("alice", "/srv/secret", peek, 2)
    assert sb.in_view("alice", ["cat", f"{peek}/file"], as_user="alice").stdout == "the secret\n"
    p = sb.in_view("alice", ["cat", "/srv/secret/file"], as_user="alice")
    assert p.returncode != 0, "the policy's cover went"


def test_an_administrator_keeps_manage_on_their_own_view(srv, own):
    sb = own
    os.makedirs("/srv/project")
    Path("/srv/project/README").write_text("root's project\n")
    carol_dst = f"{sb.scratch['carol']}/project"
    # carol holds manage (nsadmin): the rule that refuses alice asks polkit for manage instead.
    assert_ok(call_as(sb, "carol", "BindMount", "ssst", "carol", "/srv/project", carol_dst, 2), "carol binds root's dir")
    assert sb.in_view("carol", ["cat", f"{carol_dst}/README"]).stdout == "root's project\n"
    message = refused(call_as(sb, "alice", "BindMount", "ssst", "alice", "/srv/project",
                              f"{sb.scratch['alice']}/project", 2), "alice binds root's dir")
    assert "not owned by the caller" in message and "org.example.NSManager.manage" in message
    assert not os.path.lexists(f"{sb.scratch['alice']}/project")


@pytest.mark.daemon_config(MaxUserMounts="2")
def test_max_user_mounts(own):
    sb = own
    src = alice_dir(sb, "src", {"f": "x"})
    for i in (1, 2):
        assert_ok(call_as(sb, "alice", "BindMount", "ssst", "alice", src, f"{sb.scratch['alice']}/d{i}", 2), f"bind {i}")
    r = call_as(sb, "alice", "BindMount", "ssst", "alice", src, f"{sb.scratch['alice']}/d3", 2)
    assert r.get("error") == E_LIMIT_EXCEEDED and "MaxUserMounts" in r["message"], r
    assert not os.path.lexists(f"{sb.scratch['alice']}/d3")
    # Replacing one does not count; unmounting one makes room.
    assert_ok(call_as(sb, "alice", "BindMount", "ssst", "alice", src, f"{sb.scratch['alice']}/d1", 0), "rebind d1")
    assert_ok(call_as(sb, "alice", "Unmount", "sst", "alice", f"{sb.scratch['alice']}/d2", 0), "unmount d2")
    assert_ok(call_as(sb, "alice", "BindMount", "ssst", "alice", src, f"{sb.scratch['alice']}/d3", 2), "bind 3")
    # root is not limited
    sb.manager().BindMount("alice", src, f"{sb.scratch['alice']}/d4", 2)


# ---- races ----

SWAPPER = r"""
import os, sys
target, link_to, stop = sys.argv[1:4]
aside = target + ".aside"
while not os.path.exists(stop):
    try:
        if os.path.isdir(target) and not os.path.islink(target):
            os.rename(target, aside)          # her directory goes aside …
            os.symlink(link_to, target)       # … and a link to root's takes its place
        else:
            os.unlink(target)
            os.rename(aside, target)          # and back
    except OSError:
        pass
"""


RACE_ROUNDS = 40


@pytest.fixture
def roots_dir():
    """A directory of root's that alice's links point to: sticky and world-writable, like /tmp,
    so that her own permissions would let her create in it and only the rule stops her (the
    destination must be created inside a directory of hers). On the sandbox's /run: a daemon
    that got it wrong writes there, never into the machine's /etc."""
    d = Path("/run/nsm-roots")
    d.mkdir()
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d)


@pytest.mark.daemon_config(MaxUserMounts="1000")
def test_symlink_swaps_never_mount_outside_the_rules(own, roots_dir):
    """alice swaps a directory on her destination path, and her source, for a symlink to a
    directory of root's while her calls run, many times: nothing is ever created or mounted
    outside her own directories, and no bind ever shows a source that is not hers."""
    sb = own
    scratch = sb.scratch["alice"]
    src = alice_dir(sb, "rsrc", {"marker": "alice's\n"})
    alice_dir(sb, "race")
    stop = scratch / "stop"
    swappers = [sb.run_popen(sb._setpriv("alice") + ["/usr/bin/python3", "-c", SWAPPER, path, str(roots_dir), str(stop)])
                for path in (f"{scratch}/race", src)]
    before = {m.target for m in sb.mountinfo("alice")}
    outcomes = {"ok": 0, "refused": 0}
    try:
        for i in range(RACE_ROUNDS):
            for source, dest in ((f"{scratch}/src-fixed", f"{scratch}/race/t{i}"), (src, f"{scratch}/d{i}")):
                if source.endswith("src-fixed") and not os.path.isdir(source):
                    alice_dir(sb, "src-fixed", {"marker": "alice's\n"})
                r = call_as(sb, "alice", "BindMount", "ssst", "alice", source, dest, 2)
                if "error" in r:
                    assert r["error"] in (E_ACCESS_DENIED, E_INVALID_PATH), r
                    outcomes["refused"] += 1
                    continue
                outcomes["ok"] += 1
                new = [m for m in sb.mountinfo("alice") if m.target not in before]
                for m in new:
                    # Where it landed: in her own directories (hers may have moved aside meanwhile),
                    # and what it shows: a directory of hers (the root of the bind within its
                    # filesystem, /home's tmpfs), never root's.
                    assert m.target.startswith(str(scratch) + "/"), f"a bind landed outside her directories: {m}"
                    assert m.root.startswith(f"/alice/nsm-own/"), f"a bind shows something that is not hers: {m}"
                    assert {"nosuid", "nodev"} <= set(m.options.split(",")), m
                    before.add(m.target)
    finally:
        stop.touch()
        for p in swappers:
            p.wait(timeout=30)
    assert outcomes["ok"] > 0, f"no call went through: the race never tried the interesting case {outcomes}"
    # Every destination the loop asked for through the swapped directory (race/tN), had it been
    # created through her link, would be roots_dir/tN: none is, nor anything else there.
    assert sorted(os.listdir(roots_dir)) == [], f"created in root's directory: {sorted(os.listdir(roots_dir))}"
    assert not any(m.target.startswith(str(roots_dir)) for m in sb.mountinfo("alice")), "a bind landed in root's directory"
