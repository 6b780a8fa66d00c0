# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a user may do to their own view (docs/security.md, src/shared/own-view-rules.h).

Root runs inside every view (su, setuid programs, the PAM modules of the next login,
`nsctl attach` as root), so a user who changes what a path shows there changes what root
trusts. A caller with manage-own alone gets no more than fusermount3 or udisksctl would give
them. Each attack below is tried as alice would (through the real polkitd, with a rule
standing in for an active desktop session), by bob (without it), or through a process of
hers on the host, and shows its outcome as it matters: no uid 0, the host's file and mount
unchanged, no file created, the [View] policy still applied, no more mounts than
MaxUserMounts=. The first of each section were found against the first round's daemon;
those found after the rules landed say in their docstring what they found. The legitimate
uses still work, root and manage callers keep their power, and swapping directories for
symlinks during the calls never gets a mount outside what the rules allow.

Attacks on other features are with them: on [View] policy paths in test_view_policy.py, on
Attach's groups in test_attach.py, with hung FUSE mounts and floods in test_hung_fs.py, on
the daemon's log in test_logging.py.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from caller import assert_ok, call_as
from helpers import E_ACCESS_DENIED, E_BUSY, E_INVALID_PATH, E_LIMIT_EXCEEDED, E_TIMED_OUT, PamServices
from sandbox import TEST_USERS, find_mount

ALICE = TEST_USERS["alice"]

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
# Words of single rules' sentences (src/shared/own-view-rules.c), for refused(rule=).
NOT_HERS = "bind only onto their own files"
NOT_HER_DIR = "only inside a directory of their own"
NOT_HER_BIND = "is not a bind made for the caller"
POLICY_MOUNT = "is a mount of the [View] policy"
INSIDE_HER_BIND = "lies inside one of the caller's binds and is not one itself"


def refused(result, what, names=(E_ACCESS_DENIED,), rule=None):
    """A refusal with one of the names and a message naming the rule (with `rule`: that
    one, by words of its sentence in src/shared/own-view-rules.c)."""
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


def test_propagation_changes_make_no_mounts_on_the_host(own):
    """Propagation can only be changed on a mount of its own, so the daemon binds a path
    onto itself first. For alice that made a mount on root's directory under the shared
    /mnt — on the host and in every view — which root then cannot remove or rename (EBUSY)
    and which keeps his `umount /mnt/data` busy."""
    sb = own
    sb.mount_tmpfs("/mnt/data")
    for d in ("a", "b", "c"):
        os.makedirs(f"/mnt/data/{d}")
    for what, args in (("SetPropagation private", ("SetPropagation", "ssst", "alice", "/mnt/data/a", "private", 0)),
                       ("SetPropagation shared", ("SetPropagation", "ssst", "alice", "/mnt/data/b", "shared", 0)),
                       ("EnslaveSubtree", ("EnslaveSubtree", "ss", "alice", "/mnt/data/c"))):
        call_as(sb, "alice", *args)
    for d in ("a", "b", "c"):
        assert not is_mount_point(sb, None, f"/mnt/data/{d}"), f"alice put a mount on the host's /mnt/data/{d}"
        assert not is_mount_point(sb, "bob", f"/mnt/data/{d}"), f"alice put a mount on bob's /mnt/data/{d}"


@pytest.mark.daemon_config(MaxUserMounts="2")
def test_binds_under_the_shared_mnt_do_not_outlive_their_view(own):
    """alice's binds under the shared /mnt are on the host and in every view too. Removing
    her namespace (her last session closes) ends her view; if the host's copies stayed,
    each login of hers could add MaxUserMounts= more to the host's table — and to every
    view built afterwards — without end."""
    sb = own
    mine = Path("/mnt/rt-alice")
    try:
        mine.mkdir()
        os.chown(mine, ALICE.uid, ALICE.gid)
        src = sb.scratch["alice"] / "src"
        as_user(sb, "alice", "mkdir", str(src))
        before = sb.mount_count()
        for login in range(3):
            for i in range(2):
                r = call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), f"{mine}/{login}-{i}", 2)
                assert "ok" in r or r.get("error") in (E_LIMIT_EXCEEDED, E_ACCESS_DENIED), r
            sb.manager().RemoveNamespace("alice")
            sb.manager().CreateNamespace("alice")
        assert sb.mount_count() <= before + 2, \
            f"the host's table grew from {before} to {sb.mount_count()} mounts with MaxUserMounts=2"
    finally:
        for m in sorted((m.target for m in sb.mountinfo() if m.target.startswith(f"{mine}/")), reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(mine, ignore_errors=True)


def test_unmounting_her_bind_under_a_rejoined_mnt_leaves_roots_mount(own):
    """alice makes her /mnt private; root then mounts a disk on a directory of hers there
    (/mnt/rt-alice) on the host, which her view no longer receives. She binds a directory of
    hers onto /mnt/rt-alice in her view (not shared: allowed), shares /mnt again (at
    SharedSubtrees=: allowed, it joins the host's group), and unmounts her bind: an unmount
    under a shared parent propagates to whatever each peer has mounted at that path."""
    sb = own
    mine = Path("/mnt/rt-alice")
    mine.mkdir()
    try:
        os.chown(mine, ALICE.uid, ALICE.gid)
        src = alice_dir(sb, "src")
        outcomes = [call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "private", 0)]
        sb.mount_tmpfs(str(mine), files={"backup.sh": "root's\n"})
        outcomes += [call_as(sb, "alice", "BindMount", "ssst", "alice", src, str(mine), 0),
                     call_as(sb, "alice", "ShareSubtree", "ss", "alice", "/mnt")]
        for flags in (0, 1):
            outcomes.append(call_as(sb, "alice", "Unmount", "sst", "alice", str(mine), flags))
            assert is_mount_point(sb, None, str(mine)), f"root's mount went from the host: {outcomes}"
            assert is_mount_point(sb, "bob", str(mine)), f"root's mount went from bob's view: {outcomes}"
            assert outcomes[-1].get("error") == E_ACCESS_DENIED and "shared mount" in outcomes[-1]["message"], outcomes
        assert Path(mine / "backup.sh").read_text() == "root's\n"
        # Her bind is still hers to unmount, where that stays in her view: /mnt private first.
        assert "ok" in call_as(sb, "alice", "SetPropagation", "ssst", "alice", "/mnt", "private", 0)
        assert "ok" in call_as(sb, "alice", "Unmount", "sst", "alice", str(mine), 0)
        assert not is_mount_point(sb, "alice", str(mine))
        assert is_mount_point(sb, None, str(mine)) and is_mount_point(sb, "bob", str(mine))
    finally:
        while subprocess.run(["umount", str(mine)], capture_output=True).returncode == 0:
            pass
        mine.rmdir()


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


READ_ONLY_POLICY = {"user.d/alice.conf": "[View]\nBindReadOnlyPaths=/srv/alice-ro\n"}


@pytest.fixture
def alice_ro(srv):
    """/srv/alice-ro, alice's with a file and a directory of hers in it, made read-only in her
    view by the [View] policy (created before her view is built)."""
    ro = srv / "alice-ro"
    (ro / "conf").mkdir(parents=True)
    (ro / "settings").write_text("the administrator's choice\n")
    for p in (ro, ro / "conf", ro / "settings"):
        os.chown(p, ALICE.uid, ALICE.gid)
    yield ro


@pytest.mark.daemon_config(files=READ_ONLY_POLICY)
def test_a_bind_does_not_undo_a_read_only_policy(alice_ro, own):
    """fusermount3, the reference, mounts only where the user may write (access(W_OK) on a
    directory, open(O_WRONLY) on a file): never inside a read-only mount. BindMount checked
    only the owner: alice's writable file and directory bound over hers inside the [View]
    policy's BindReadOnlyPaths= made what the administrator made read-only writable again."""
    sb = own
    settings, conf = alice_ro / "settings", alice_ro / "conf"
    check = sb.in_view("alice", ["sh", "-c", f"echo x > {settings}"], as_user="alice")
    assert check.returncode != 0, "the policy's bind is not read-only in her view"
    mine = alice_file(sb, "settings", "alice's choice\n")
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", mine, str(settings), 0), "bind over a read-only file",
            rule="not writable for the caller")
    refused(call_as(sb, "alice", "BindMount", "ssst", "alice", alice_dir(sb, "conf"), str(conf), 0),
            "bind over a read-only directory", rule="not writable for the caller")
    # As it matters: the read-only paths show what they showed, and stay read-only.
    p = sb.in_view("alice", ["sh", "-c", f"echo changed > {settings}; touch {conf}/new; cat {settings}"],
                   as_user="alice")
    assert p.stdout == "the administrator's choice\n", p.stdout
    assert not is_mount_point(sb, "alice", str(settings)) and not is_mount_point(sb, "alice", str(conf))


# ---- /proc: files a user "owns" that setuid programs trust ----

WAIT_THEN_EXEC = 'while [ ! -e "$1" ]; do sleep 0.05; done; shift; exec "$@"'


def alice_process_in_view(sb, go, argv):
    """A process of alice's in her view that waits for the file `go`, then execs argv (a
    setuid program keeps the pid, and /proc/PID stays the same directory)."""
    fd = sb.open_view_fd("alice")
    p = subprocess.Popen(sb.view_argv(fd, ["sh", "-c", WAIT_THEN_EXEC, "sh", str(go), *argv], as_user="alice"),
                         pass_fds=(fd,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=sb.user_env("alice"))
    os.close(fd)
    return p


def fusermount_unmounts(sb, target):
    """alice binds a file of hers over /proc/PID/mounts of her own process (the file is hers
    while the process is), which then execs the setuid fusermount3 -u TARGET: /etc/mtab is a
    link to /proc/self/mounts, and fusermount3 unmounts what mtab says is her FUSE mount.
    Returns the outcome of the BindMount call."""
    fake = alice_file(sb, "mounts", f"fake {target} fuse.fake rw,nosuid,nodev,user_id={ALICE.uid},"
                                    f"group_id={ALICE.gid} 0 0\n")
    go = sb.scratch["alice"] / "go"
    p = alice_process_in_view(sb, go, ["/usr/bin/fusermount3", "-u", "-z", target])
    try:
        result = call_as(sb, "alice", "BindMount", "ssst", "alice", fake, f"/proc/{p.pid}/mounts", 0)
        as_user(sb, "alice", "touch", str(go))
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return result


@pytest.mark.daemon_config(files=SECRET_POLICY)
def test_bind_over_proc_pid_mounts_cannot_undo_the_policy(srv, own):
    """fusermount3, the reference of what a user may do to their own view (docs/security.md),
    refuses to mount over procfs: some of its files are the user's without being theirs to
    fake. A bind over /proc/PID/mounts lets the setuid fusermount3 unmount the [View] policy's
    InaccessiblePaths= cover."""
    sb = own
    result = fusermount_unmounts(sb, "/srv/secret")
    refused(result, "alice binds over /proc/PID/mounts")
    p = sb.in_view("alice", ["cat", "/srv/secret/file"], as_user="alice")
    assert "secret" not in p.stdout, "the policy's cover is gone: alice reads /srv/secret"


def test_bind_over_proc_pid_mounts_cannot_unmount_the_hosts_mounts(own):
    """The same trick on root's /mnt/data: an unmount under the shared /mnt propagates to
    the host and every view."""
    sb = own
    sb.mount_tmpfs("/mnt/data", files={"backup.sh": "root's\n"})
    result = fusermount_unmounts(sb, "/mnt/data")
    refused(result, "alice binds over /proc/PID/mounts")
    assert is_mount_point(sb, None, "/mnt/data"), "root's /mnt/data was unmounted on the host"
    assert is_mount_point(sb, "bob", "/mnt/data")


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


def test_a_bind_does_not_cover_a_bind_root_made_in_her_view(own):
    """A destination that is a mount point is hers to bind onto only if it is one of her own
    binds (which is then replaced). Root's bind of a directory of hers onto another, in her
    view (`nsctl bind alice …`), has her files on both sides: only that rule keeps her bind
    from covering root's."""
    sb = own
    approved = alice_dir(sb, "approved", {"tool": "root's choice\n"})
    app = f"{sb.scratch['alice']}/app"
    sb.manager().BindMount("alice", approved, app, 2)
    mine = alice_dir(sb, "mine", {"tool": "alice's choice\n"})
    before = sb.mount_count("alice")
    message = refused(call_as(sb, "alice", "BindMount", "ssst", "alice", mine, app, 0), "bind over root's bind")
    assert "own binds" in message, message
    assert sb.mount_count("alice") == before
    assert sb.in_view("alice", ["cat", f"{app}/tool"], as_user="alice").stdout == "root's choice\n"


# Run as alice on the host, where her view's mount points are plain directories: swaps two
# of her directories' names (renameat2 RENAME_EXCHANGE) until the stop file appears.
EXCHANGER = r"""
import ctypes, os, sys
a, b, stop = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
n = 0
while n % 1000 or not os.path.exists(stop):
    libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE)
    n += 1
"""


def mount_ids(sb, view):
    return {m.id for m in sb.mountinfo(view)}


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=/home/alice/nsm-own/pol\n"})
def test_unmount_by_name_cannot_be_redirected_to_a_policy_mount(own):
    """Unmount checks the mount at the name, then unmounts by name. In her view neither
    name can change (mount points are busy), but on the host they are plain directories of
    hers: a process of hers there swaps the name of her bind with the name of the
    [View] policy's tmpfs, and an Unmount that checked her bind unmounted the policy's."""
    sb = own
    scratch = sb.scratch["alice"]
    pol = scratch / "pol"
    policy_mount = find_mount(sb.mountinfo("alice"), str(pol))
    assert policy_mount is not None and policy_mount.fstype == "tmpfs", "the policy's tmpfs is not there"
    src = scratch / "src"
    as_user(sb, "alice", "mkdir", str(src), str(scratch / "dst"))
    stop = scratch / "stop"
    swapper = sb.run_popen(sb._setpriv("alice") + ["/usr/bin/python3", "-c", EXCHANGER, str(scratch / "dst"),
                                                   str(pol), str(stop)])
    outcomes = {"unmounted": 0, "refused": 0}
    try:
        deadline = time.monotonic() + 60
        while outcomes["unmounted"] < 30 and time.monotonic() < deadline:
            if "ok" in call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), str(scratch / "dst"), 0):
                while "ok" not in call_as(sb, "alice", "Unmount", "sst", "alice", str(scratch / "dst"), 0):
                    outcomes["refused"] += 1
                outcomes["unmounted"] += 1
            assert policy_mount.id in mount_ids(sb, "alice"), \
                f"the [View] policy's tmpfs was unmounted after {outcomes}"
    finally:
        stop.touch()
        swapper.wait(timeout=30)
    assert outcomes["unmounted"] > 0 and outcomes["refused"] > 0, f"the race never ran: {outcomes}"


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


# ---- MaxUserMounts=: what her calls may add to a view ----

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


@pytest.mark.daemon_config(MaxUserMounts="2")
def test_propagation_changes_do_not_get_around_max_user_mounts(own):
    """Each directory made a mount point of its own by SetPropagation or EnslaveSubtree (as in
    test_propagation_changes_make_no_mounts_on_the_host) was a mount MaxUserMounts= never
    counted: the view grew without limit (and, under /mnt, the host and every view)."""
    sb = own
    before = sb.mount_count("alice")
    for i in range(6):
        d = sb.scratch["alice"] / f"p{i}"
        as_user(sb, "alice", "mkdir", str(d))
        call_as(sb, "alice", "SetPropagation", "ssst", "alice", str(d), "private", 0)
        call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", str(d))
    assert sb.mount_count("alice") <= before + 2, \
        f"alice's view grew from {before} to {sb.mount_count('alice')} mounts with MaxUserMounts=2"


@pytest.mark.daemon_config(MaxUserMounts="8")
def test_recursive_binds_of_binds_stay_within_max_user_mounts(own):
    """A bind copies the source's whole tree (recursively, so that the [View] policy's
    covers come along): binding a directory onto a place inside itself, again and again,
    copies every earlier bind each time — the view doubles with each call, and ~17 calls
    reach the kernel's limit for a namespace (fs.mount-max), with a huge table for
    everyone's GetMounts to read. MaxUserMounts= must bound the mounts, not the calls."""
    sb = own
    scratch = sb.scratch["alice"]
    tree = scratch / "tree"
    as_user(sb, "alice", "mkdir", str(tree))
    before = sb.mount_count("alice")
    for i in range(12):
        r = call_as(sb, "alice", "BindMount", "ssst", "alice", str(tree), f"{tree}/d{i}", 2)
        assert "ok" in r or r.get("error") == E_LIMIT_EXCEEDED, r
    grown = sb.mount_count("alice") - before
    assert grown <= 8, f"alice's view grew by {grown} mounts with MaxUserMounts=8"


# ---- the state file: records across a restart, odd characters ----

@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=/home/alice/nsm-own/pol\n"})
def test_records_survive_a_restart_and_a_path_cannot_write_one(own):
    """The records that decide what alice may unmount are kept in a state file, one line
    each, her destination path among them. A path with a newline and a record of its own
    (a session, a bind of hers naming the policy's tmpfs) written into it must stay one
    escaped path: after a restart she still may unmount her bind and still may not
    unmount the policy's mount."""
    sb = own
    scratch = sb.scratch["alice"]
    pol = find_mount(sb.mountinfo("alice"), f"{scratch}/pol")
    assert pol is not None
    src = scratch / "src"
    as_user(sb, "alice", "mkdir", str(src))
    odd = f"{scratch}/x\nSESSION=evil 1 1\nBIND={pol.id} {pol.id} user {scratch}/pol\\x41 \\ end"
    r = call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), odd, 2)
    assert "ok" in r, r
    sb.stop_daemon()
    state = (Path(sb.state_dir) / "namespaces" / "alice").read_text()
    assert "SESSION=evil" not in state.splitlines() and "\nBIND=" + str(pol.id) not in state, state
    sb.start_daemon(write=False)
    assert [str(s) for s in sb.properties(f"/org/example/NSManager/user/_{ALICE.uid}")["Sessions"]] == []
    refused(call_as(sb, "alice", "Unmount", "sst", "alice", f"{scratch}/pol", 0), "Unmount of the policy's tmpfs")
    assert find_mount(sb.mountinfo("alice"), f"{scratch}/pol") is not None
    r = call_as(sb, "alice", "Unmount", "sst", "alice", odd, 0)
    assert "ok" in r, r


@pytest.mark.daemon_config(MaxUserMounts="2")
def test_propagation_choices_do_not_pile_up_in_the_state(own):
    """Each SetPropagation is remembered in the namespace's state (so that a later
    ShareSubtree("") leaves it alone), by path. Bind, change, unmount, on a new path each
    time: the records of paths that are no mounts any more must not pile up — the daemon
    rewrites the whole file on every change, paths may be 4 kB long, and the rate limit
    allows 72000 calls an hour."""
    sb = own
    scratch = sb.scratch["alice"]
    src = scratch / "src"
    as_user(sb, "alice", "mkdir", str(src))
    for i in range(12):
        d = f"{scratch}/c{i}"
        assert "ok" in call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), d, 2)
        assert "ok" in call_as(sb, "alice", "SetPropagation", "ssst", "alice", d, "private", 0)
        assert "ok" in call_as(sb, "alice", "Unmount", "sst", "alice", d, 0)
    state = (Path(sb.state_dir) / "namespaces" / "alice").read_text()
    choices = [line for line in state.splitlines() if line.startswith("CHOICE=")]
    assert len(choices) <= 2, f"{len(choices)} records of propagation choices for paths that are gone"


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
                    # (TimedOut: on a loaded machine, with the swappers spinning, a call may wait
                    # past OperationTimeoutSec= and be refused whole; nothing was done.)
                    assert r["error"] in (E_ACCESS_DENIED, E_INVALID_PATH, E_TIMED_OUT), r
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
