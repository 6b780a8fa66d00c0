# SPDX-License-Identifier: LGPL-2.1-or-later
"""The configuration is taken whole or not at all, and a start that cannot serve leaves the
host as it was.

- ReloadConfig (and SIGHUP) reads every file first: nsmanagerd.conf, its drop-ins, group.d/
  and user.d/. A typo (an unknown section or setting) or a bad value anywhere fails it with
  FILE:LINE, and the configuration in force stays, the [View] policy of every user included:
  a view made after the refused reload has the old policy.
- `nsctl verify` reports the same errors with the daemon's own parser, without the daemon.
- A start with a missing --config, a broken file, no bus, another instance serving, or a
  failure after it began (the registry cannot be made) leaves the host's mount table exactly
  as it was.
- A SharedSubtrees= path a user can steer (her symlink in a directory anyone may write, her
  directory) is not shared, does not stop the daemon, and is shared at the reload after the
  administrator fixed it.
- `nsmanagerd --release` (the package's removal) takes away the mounts the daemon made and
  nothing else, and keeps a shared subtree that something is mounted below.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import dbus
import pytest

from helpers import E_FAILED, E_INVALID_PATH, E_USER_EXCLUDED, expect_error, wait_until
from sandbox import (SYSTEM_BUS_ADDRESS, TEST_USERS, daemon_binary, dbus_error_name, find_mount, host_mountinfo,
                     parse_mountinfo, sys_umount, timeout)

ALICE = TEST_USERS["alice"]

# Typical typos, and other errors a file may hold: (file, text, line, what the error says).
TYPOS = [
    ("user.d/bob.conf", "[View]\nHideOtherHome=yes\n", 2,
     "unknown setting HideOtherHome= in [View] (did you mean HideOtherHomes=?)"),
    ("nsmanagerd.conf.d/50-typo.conf", "# the section in lower case\n[manager]\nStopDelaySec=5s\n", 2,
     "unknown section [manager]"),
    ("nsmanagerd.conf.d/50-typo.conf", "[Manager]\nStopDelay=5s\n", 2,
     "unknown setting StopDelay= in [Manager] (did you mean StopDelaySec=?)"),
    ("user.d/bob.conf", "[View]\nHideOtherHomes=yes\nPrivateTmp=maybe\n", 3, "'maybe' is not a boolean"),
    ("nsmanagerd.conf.d/50-typo.conf", "[View]\nPrivateTmp=maybe\n", 2, "'maybe' is not a boolean"),
    ("group.d/nsadmin.conf", "[View]\nBindPaths=srv/data:/srv/data\n", 2, "the source is not an absolute"),
    ("user.d/bob.conf", "[View]\nBindReadOnlyPaths=/srv/%x:%h/x\n", 2, "'%x' is not a specifier"),
    ("user.d/bob.conf", "[Manager]\nMinUID=0\n", 1, "section [Manager] does not belong in this file"),
]
TYPO_IDS = ["HideOtherHome", "lowercase-section", "StopDelay", "PrivateTmp-user.d", "PrivateTmp-main",
            "BindPaths-relative", "bad-specifier", "Manager-in-user.d"]

OLD_POLICY = "[View]\nHideOtherHomes=yes\n"


def homes_seen(sb, user: str) -> set[str]:
    return set(sb.in_view(user, ["ls", "-A", "/home"], check=True).stdout.split())


def mount_table() -> list[tuple]:
    """Everything mountinfo says of every mount: ids, where, what, propagation."""
    return [(m.id, m.parent, m.target, m.fstype, m.source, m.propagation, m.peer_group, m.master)
            for m in host_mountinfo()]


def run_daemon(sb, *args, env=None, wait=30, binary=None) -> subprocess.CompletedProcess:
    """nsmanagerd in the foreground, for a start that must fail (or --release); 'binary' runs
    it under another program (strace) that is given the daemon's path in 'args'."""
    e = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=SYSTEM_BUS_ADDRESS)
    e.pop("NOTIFY_SOCKET", None)
    e.update(env or {})
    return subprocess.run([binary or str(daemon_binary()), *args], capture_output=True, text=True, env=e,
                          timeout=timeout(wait), stdin=subprocess.DEVNULL)


# ---------------------------------------------------------------------------
# ReloadConfig and nsctl verify


@pytest.mark.parametrize("relpath,text,line,reason", TYPOS, ids=TYPO_IDS)
@pytest.mark.daemon_config(files={"user.d/bob.conf": OLD_POLICY})
def test_a_typo_is_refused_and_the_old_policy_stays(daemon, nsctl, relpath, text, line, reason):
    """bob's policy hides the other homes. The administrator breaks a file: ReloadConfig
    fails naming it, its line and why; nsctl reload and nsctl verify say the same; bob's
    next view still has his policy; and a file that is fixed again is taken."""
    sb = daemon
    manager = sb.manager()
    path = sb.write_config_file(relpath, text)
    where = f"{path}:{line}: "

    e = expect_error(lambda: manager.ReloadConfig(), E_FAILED)
    assert where in e.get_dbus_message() and reason in e.get_dbus_message(), e.get_dbus_message()
    p = nsctl("reload")
    assert p.returncode == 1 and where in p.stderr and reason in p.stderr, p.stderr
    assert where in sb.daemon_log_text(), "the refused reload is not in the log"
    p = nsctl("verify", "--config", str(sb.config_file))
    assert p.returncode == 1 and where in p.stderr and reason in p.stderr, p.stderr
    p = nsctl("verify", str(path), as_user="alice")        # one file, by anybody who can read it
    assert p.returncode == 1 and where in p.stderr and reason in p.stderr, p.stderr

    # The old policy is in force, for bob's next view too (not the files as they are now).
    manager.CreateNamespace("bob")
    assert homes_seen(sb, "bob") == {"bob"}, "bob's view was built without his policy"
    manager.RemoveNamespace("bob")
    assert sb.daemon.poll() is None

    # SIGHUP refuses it the same way.
    os.kill(sb.daemon.pid, signal.SIGHUP)
    wait_until(lambda: sb.daemon_log_text().count(where) >= 3, "SIGHUP to refuse the file")

    # Fixed: taken; a user.d/bob.conf fixed to nothing drops bob's policy, as it should.
    if relpath == "user.d/bob.conf":
        sb.write_config_file(relpath, "[View]\nHideOtherHomes=no\n")
    else:
        path.unlink()
    assert nsctl("verify", "--config", str(sb.config_file)).returncode == 0
    manager.ReloadConfig()
    manager.CreateNamespace("bob")
    seen = homes_seen(sb, "bob")
    if relpath == "user.d/bob.conf":
        assert {"alice", "bob"} <= seen, seen
    else:
        assert seen == {"bob"}, seen


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nHideOtherHomes=yes\n"})
def test_a_broken_user_file_is_refused_at_reload_not_at_login(daemon):
    """Before, user.d files were read only when a view was built: a bad one passed the reload
    and the view then failed (or was built without the policy). Now the reload fails, and
    every error of every file is listed, each with its file and line."""
    sb = daemon
    a = sb.write_config_file("user.d/alice.conf", "[View]\nHideOtherHomes=yes\nPrivateTmp=maybe\n")
    b = sb.write_config_file("group.d/nsadmin.conf", "[View]\nInaccessiblePaths=relative\n")
    msg = expect_error(lambda: sb.manager().ReloadConfig(), E_FAILED).get_dbus_message()
    assert f"{a}:3: 'maybe' is not a boolean" in msg and f"{b}:2: " in msg, msg
    sb.manager().CreateNamespace("alice")
    assert homes_seen(sb, "alice") == {"alice"}, "alice's view does not have the policy in force"


def test_start_only_settings_are_named_at_reload(daemon):
    """SubtreeRoot= and StateDirectory= cannot move under running namespaces: a reload that
    changes them succeeds, and the log names what waits for the next start."""
    sb = daemon
    sb.write_config(SubtreeRoot="/tmp/nsmanager-sandbox/elsewhere")
    sb.manager().ReloadConfig()
    assert sb.properties()["SubtreeRoot"] == str(sb.subtree_root)
    wait_until(lambda: f"SubtreeRoot= ({sb.subtree_root} → /tmp/nsmanager-sandbox/elsewhere)" in sb.daemon_log_text(),
               "the reload to name the changed SubtreeRoot=")


def test_sighup_reloads_the_configuration_for_new_namespaces(daemon, manager):
    manager.CreateNamespace("alice")
    daemon.write_config(ExcludeUsers="bob")
    os.kill(daemon.daemon.pid, signal.SIGHUP)

    def refused():
        try:
            manager.CreateNamespace("bob")
        except dbus.exceptions.DBusException as e:
            assert dbus_error_name(e) == E_USER_EXCLUDED
            return True
        manager.RemoveNamespace("bob")        # not reloaded yet: undo and try again
        return False
    wait_until(refused, "SIGHUP to reload ExcludeUsers=", interval=0.05)
    # existing namespaces are untouched, the daemon still runs
    assert manager.GetNamespace("alice")
    assert daemon.daemon.poll() is None


def test_reload_with_a_broken_file_keeps_the_old_configuration(daemon, manager):
    daemon.write_config(extra="[Manager]\nMinUID=not-a-number\n")
    e = expect_error(lambda: manager.ReloadConfig(), E_FAILED)
    assert "nsmanagerd.conf:" in e.get_dbus_message() and "not a valid UID" in e.get_dbus_message(), \
        "the refusal should name the file, line and value"
    manager.CreateNamespace("alice")          # MinUID=1000 still holds: alice (2001) is fine
    expect_error(lambda: manager.CreateNamespace("svc"), E_USER_EXCLUDED)


def test_verify_files(instance, nsctl):
    """nsctl verify FILE...: each file alone, every error printed, exit status 1 on any,
    0 and one line for good files; works without root and without a daemon (no bus)."""
    tmp_path = instance.instance / "files"
    tmp_path.mkdir(mode=0o755)
    good = tmp_path / "nsmanagerd.conf"
    good.write_text("[Manager]\nSharedSubtrees=/mnt /media\n[View]\nBindPaths=-%h/src:/srv/%u:norbind\n"
                    "TemporaryFileSystem=/srv/scratch:mode=0700,size=1M\n")
    bad = tmp_path / "bad.conf"
    bad.write_text("[Manager]\nMinUID=ten\nSubtreeRoot=/subtree\n[Elsewhere]\nX=1\n[View]\nHideOtherHomes=yes\n")
    (tmp_path / "user.d").mkdir()
    user = tmp_path / "user.d" / "alice.conf"
    user.write_text("[View]\nPrivateTmp=yes\n[Manager]\nMinUID=1\n")
    nobus = {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"}

    p = nsctl("verify", str(good), as_user="alice", env=nobus)
    assert (p.returncode, p.stdout, p.stderr) == (0, "No errors in 1 file.\n", ""), p.stderr
    p = nsctl("verify", str(good), str(bad), str(user), str(tmp_path / "missing.conf"), env=nobus)
    assert p.returncode == 1 and p.stdout == "", p.stderr
    assert p.stderr.splitlines() == [
        f"{bad}:2: 'ten' is not a valid UID",
        f"{bad}:4: unknown section [Elsewhere]",
        f"{user}:3: section [Manager] does not belong in this file, which holds only [View]",
        f"{tmp_path / 'missing.conf'}: No such file or directory",
    ], p.stderr
    # usage: --config and files do not go together; not over -H
    assert nsctl("verify", "--config", str(good), str(good)).returncode == 2
    assert nsctl("-H", "somewhere", "verify").returncode == 2


def test_verify_the_installed_set(instance, nsctl):
    """Without FILE: the set the daemon reads (--config as the daemon's): drop-ins, group.d
    and user.d included; a file for a user nobody knows is a warning, not an error."""
    sb = instance
    sb.write_config()
    sb.write_config_file("user.d/alice.conf", "[View]\nPrivateTmp=yes\n")
    p = nsctl("verify", "--config", str(sb.config_file))
    assert (p.returncode, p.stderr) == (0, ""), p.stderr
    ghost = sb.write_config_file("user.d/nosuchuser.conf", "[View]\nPrivateTmp=yes\n")
    p = nsctl("verify", "--config", str(sb.config_file))
    assert p.returncode == 0 and f"{ghost}: warning: no user 'nosuchuser'" in p.stderr, p.stderr
    dropin = sb.write_config_file("nsmanagerd.conf.d/10-x.conf", "[Manager]\nViewPropagation=sideways\n")
    p = nsctl("verify", "--config", str(sb.config_file))
    assert p.returncode == 1 and f"{dropin}:2: 'sideways' is not one of slave, private, shared" in p.stderr, p.stderr
    p = nsctl("verify", "--config", str(sb.config_dir / "missing.conf"))
    assert p.returncode == 1 and "missing.conf: No such file or directory" in p.stderr, p.stderr


def test_verify_warns_about_each_users_policy(instance, nsctl):
    """Without FILE, verify also looks at the [View] policy of each user who has a user.d file,
    as the daemon composes it for her next view (the main file's [View], group.d/ of her groups,
    her file), and prints what the daemon warns about when it builds the view: a path that lies
    where someone other than root and the user decides what it names, a source that names the
    user but is somebody else's (on stderr); and, on stdout, what each user's next login will
    do: a policy that fails for this user is a refusal. Warnings: the exit status stays 0; a
    clean policy prints no warning."""
    sb = instance
    made = []
    try:
        for name, owner in (("scratch-bob", "bob"), ("source-bob", "alice")):
            d = Path("/tmp") / name          # the sandbox's /tmp, mode 1777 as everywhere
            d.mkdir()
            made.append(d)
            os.chown(d, TEST_USERS[owner].uid, TEST_USERS[owner].gid)

        sb.write_config(extra="[View]\nPrivateTmp=yes\n")
        sb.write_config_file("user.d/alice.conf", "[View]\nBindPaths=-%h/src:/srv/%u\nHideOtherHomes=yes\n")
        p = nsctl("verify", "--config", str(sb.config_file))
        assert (p.returncode, p.stderr) == (0, ""), p.stderr
        assert p.stdout.splitlines() == [
            "alice: lands with entries skipped: BindPaths=-%h/src:/srv/%u: the source '/home/alice/src' does not "
            "exist (the entry begins with '-'): the entry is skipped.",
            "No errors in the configuration."], p.stdout

        bob = sb.write_config_file("user.d/bob.conf", "[View]\nBindPaths=/tmp/scratch-%u:%h/scratch\n"
                                                      "BindPaths=/tmp/source-%u:/srv/%u\n")
        # carol's comes from her group's file; alice and bob are not in nsadmin
        sb.write_config_file("group.d/nsadmin.conf", "[View]\nTemporaryFileSystem=/tmp/cache-%u\n")
        carol = sb.write_config_file("user.d/carol.conf", "[View]\nPrivateTmp=yes\n")
        # Debian's nobody lives at /nonexistent: no homes directory to hide other than /
        sb.write_config_file("user.d/nobody.conf", "[View]\nHideOtherHomes=yes\n")
        p = nsctl("verify", "--config", str(sb.config_file))
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines() == [
            "alice: lands with entries skipped: BindPaths=-%h/src:/srv/%u: the source '/home/alice/src' does not "
            "exist (the entry begins with '-'): the entry is skipped.",
            "bob: lands with entries skipped: BindPaths=/tmp/source-%u:/srv/%u: the source '/tmp/source-bob' belongs "
            "to uid 2001, neither root nor bob: the entry is skipped.",
            "carol: lands in a view with PrivateTmp=yes, TemporaryFileSystem=/tmp/cache-%u",
            "nobody: will be refused: HideOtherHomes=yes: the home directory '/nonexistent' of 'nobody' has no "
            "parent other than /: Invalid argument",
            "No errors in the configuration."], p.stdout
        anybody = "'/tmp' can be written by anybody"
        assert sorted(p.stderr.splitlines()) == sorted([
            f"{bob}: warning: in the [View] policy of 'bob': BindPaths=/tmp/scratch-%u:%h/scratch: the source "
            f"'/tmp/scratch-bob' lies where someone other than root and bob decides what it names: {anybody}, and "
            "'scratch-bob' in it belongs to bob (uid 2002), not root (whoever creates it first decides what it is). "
            "Should it be spoiled, the entry is skipped.",
            f"{bob}: warning: in the [View] policy of 'bob': BindPaths=/tmp/source-%u:/srv/%u: the source "
            f"'/tmp/source-bob' lies where someone other than root and bob decides what it names: {anybody}, and "
            "'source-bob' in it belongs to uid 2001, not root (whoever creates it first decides what it is). "
            "Should it be spoiled, the entry is skipped.",
            f"{bob}: warning: in the [View] policy of 'bob': BindPaths=/tmp/source-%u:/srv/%u: the source "
            "'/tmp/source-bob' belongs to uid 2001, neither root nor bob: the entry is skipped.",
            f"{carol}: warning: in the [View] policy of 'carol': TemporaryFileSystem=/tmp/cache-%u: the path "
            f"'/tmp/cache-carol' lies where someone other than root and carol decides what it names: {anybody} and "
            "has no 'cache-carol' yet (whoever creates it first decides what it is). Should it be spoiled, the "
            "entry is replaced by a cover of what is there.",
        ]), p.stderr
        # nothing was made where the policies point
        assert not Path("/home/bob/scratch").exists() and not Path("/tmp/cache-carol").exists()
    finally:
        for d in made:
            d.rmdir()


def test_verify_says_what_each_next_login_does(instance, nsctl):
    """Without FILE, verify says on stdout what the next login of each user of user.d/ and
    each member of a group.d/ group will do, with the view builder's own lookups; --user=NAME
    says it of NAME alone. A bind whose source is missing fails the view (bob will be refused,
    as LoginWithoutView=restricted refuses a user with a policy); the same entry with '-' is
    skipped. The daemon then does exactly that: bob's view cannot be built, and then can."""
    sb = instance
    sb.write_config()
    sb.write_config_file("user.d/alice.conf", "[View]\nPrivateTmp=yes\nBindPaths=-/srv/nothere:/srv/x\nBindPaths=\n")
    sb.write_config_file("group.d/nsadmin.conf", "[View]\nHideOtherHomes=yes\n")
    sb.write_config_file("user.d/bob.conf", "[View]\nBindReadOnlyPaths=/srv/nothere:%h/x\n")
    p = nsctl("verify", "--config", str(sb.config_file))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "alice: lands in a view with PrivateTmp=yes",
        "bob: will be refused: BindReadOnlyPaths=/srv/nothere:%h/x: failed to open source '/srv/nothere': "
        "No such file or directory",
        "carol: lands in a view with HideOtherHomes=yes",
        "No errors in the configuration.",
    ], p.stdout

    sb.write_config_file("user.d/bob.conf", "[View]\nBindReadOnlyPaths=-/srv/nothere:%h/x\n")
    p = nsctl("verify", "--config", str(sb.config_file), "--user", "bob")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "bob: lands with entries skipped: BindReadOnlyPaths=-/srv/nothere:%h/x: the source '/srv/nothere' does not "
        "exist (the entry begins with '-'): the entry is skipped.",
        "No errors in the configuration.",
    ], p.stdout
    p = nsctl("verify", "--config", str(sb.config_file), "--user", "dave")
    assert p.stdout.splitlines()[0] == "dave: lands in a view with no [View] policy", p.stdout
    p = nsctl("verify", "--config", str(sb.config_file), "--user", "svc")
    assert p.stdout.splitlines()[0].startswith("svc: not managed"), p.stdout
    p = nsctl("verify", "--config", str(sb.config_file), "--user", "nsm-nosuchuser")
    assert p.returncode == 1 and "No user 'nsm-nosuchuser'" in p.stderr, p.stderr

    # LoginWithoutView=allow lets a user whose view fails in, without it
    sb.write_config_file("user.d/bob.conf", "[View]\nBindReadOnlyPaths=/srv/nothere:%h/x\n")
    sb.write_config(LoginWithoutView="allow")
    p = nsctl("verify", "--config", str(sb.config_file), "--user", "bob")
    assert p.stdout.splitlines()[0].startswith("bob: lands in the host namespace, without a view "
                                               "(LoginWithoutView=allow): BindReadOnlyPaths="), p.stdout

    # the daemon's builder agrees
    sb.write_config()
    sb.start_daemon()
    manager = sb.manager()
    e = expect_error(lambda: manager.CreateNamespace("bob"), E_INVALID_PATH, E_FAILED)
    assert "/srv/nothere" in e.get_dbus_message(), e.get_dbus_message()
    sb.write_config_file("user.d/bob.conf", "[View]\nBindReadOnlyPaths=-/srv/nothere:%h/x\n")
    manager.ReloadConfig()
    manager.CreateNamespace("bob")
    manager.RemoveNamespace("bob")
    assert not Path("/home/bob/x").exists()


def test_verify_does_not_print_a_users_names_raw(instance, nsctl):
    """The walk behind verify's warnings follows a user's own link, and what it names on the
    way is hers to choose: an escape sequence in it reaches root's terminal escaped."""
    sb = instance
    link = Path("/home/alice/nsm-esc-link")
    os.symlink("/tmp/\x1b]0;PWNED\x07x/y", link)
    os.lchown(link, TEST_USERS["alice"].uid, TEST_USERS["alice"].gid)
    try:
        sb.write_config()
        sb.write_config_file("user.d/alice.conf", "[View]\nBindPaths=-%h/nsm-esc-link:/srv/%u\n")
        p = nsctl("verify", "--config", str(sb.config_file))
        assert p.returncode == 0 and "has no '\\x1b]0;PWNED\\x07x' yet" in p.stderr, repr(p.stderr)
        assert "\x1b" not in p.stderr and "\x07" not in p.stderr, repr(p.stderr)
    finally:
        link.unlink()


# ---------------------------------------------------------------------------
# Start-up: nothing changes on the host unless the daemon serves


def test_missing_config_file_is_an_error(instance):
    """--config of a file that does not exist is an error, not an empty configuration; the
    host is not touched."""
    sb = instance
    before = mount_table()
    p = run_daemon(sb, f"--config={sb.config_dir}/nonexistent/x.conf")
    assert p.returncode == 1, p.stderr
    assert "nonexistent/x.conf: No such file or directory" in p.stderr, p.stderr
    assert mount_table() == before


@pytest.mark.parametrize("text,line", [("[Manager]\nSubtreeRoot=relative\n", 2),
                                       ("[View]\nHideOtherHome=yes\n", 2)], ids=["bad-value", "typo"])
def test_broken_config_keeps_the_daemon_from_starting(instance, text, line):
    sb = instance
    sb.write_config()
    bad = sb.write_config_file("user.d/alice.conf" if "View" in text else "nsmanagerd.conf.d/x.conf", text)
    before = mount_table()
    p = run_daemon(sb, f"--config={sb.config_file}")
    assert p.returncode == 1 and f"{bad}:{line}: " in p.stderr, p.stderr
    assert mount_table() == before, "a start refused for its configuration changed the host"


def test_shared_subtrees_as_long_as_a_build_request_holds(instance):
    """Every view's build request carries SharedSubtrees=: as many paths as it holds build
    views; one more and the configuration is refused at the start, naming the setting, not at
    each login."""
    sb = instance
    top = sb.instance / "shared"
    paths = []
    while True:     # each path and its field header (5 bytes), /mnt's too
        p = top / f"{len(paths):03d}".ljust(100 - len(str(top)) - 1, "x")
        if sum(5 + len(str(q)) for q in ["/mnt"] + paths + [p]) > 8192:
            break
        p.mkdir(parents=True)
        paths.append(p)
    sb.start_daemon(SharedSubtrees=" ".join(map(str, ["/mnt"] + paths)))
    sb.manager().CreateNamespace("alice")
    shared = {m.target for m in sb.mountinfo("alice") if any(o.startswith("shared:") for o in m.optional)}
    missing = [str(p) for p in paths if str(p) not in shared]
    assert not missing, f"{len(missing)} of {len(paths)} SharedSubtrees= not shared in alice's view: {missing[:3]}"
    sb.cleanup_instance()

    sb.new_instance()
    sb.write_config(SharedSubtrees=" ".join(map(str, ["/mnt"] + paths + [top / "one-more"])))
    before = mount_table()
    p = run_daemon(sb, f"--config={sb.config_file}")
    assert p.returncode == 1 and "SharedSubtrees= takes" in p.stderr, p.stderr
    assert mount_table() == before


def test_failed_start_without_a_bus_leaves_the_host_as_it_was(instance):
    """nsmanagerd run by hand cannot reach the bus: it must not have made SubtreeRoot, the
    registry and /mnt mounts by then, nor leave them."""
    sb = instance
    sb.write_config()
    before = mount_table()
    p = run_daemon(sb, f"--config={sb.config_file}", env={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent"})
    assert p.returncode == 1 and "system bus" in p.stderr, p.stderr
    assert mount_table() == before


def test_failed_start_after_the_host_was_prepared_is_undone(instance):
    """A failure once the host's side is set up (here the registry cannot be made: a
    directory is in its place) takes back exactly what this start did: the binds of
    SubtreeRoot, StateDirectory and the shared subtrees, and their propagation. The mount
    table is the same as before, to the peer group."""
    sb = instance
    media = sb.instance / "media"
    media.mkdir()
    sb.write_config(SharedSubtrees=f"/mnt {media}")
    (sb.state_dir / "registry").mkdir()
    before = mount_table()
    p = run_daemon(sb, f"--config={sb.config_file}")
    assert p.returncode == 1 and "registry" in p.stderr and "undoing" in p.stderr, p.stderr
    assert mount_table() == before
    # the same configuration starts once the way is clear
    (sb.state_dir / "registry").rmdir()
    sb.start_daemon(write=False)
    assert find_mount(host_mountinfo(), str(media)) is not None
    sb.manager().CreateNamespace("alice")


def test_a_second_instance_changes_nothing(daemon):
    """Another nsmanagerd on the same configuration while one serves: refused before it
    touches the host, and the first one serves on."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    before = mount_table()
    p = run_daemon(sb, f"--config={sb.config_file}")
    assert p.returncode == 1 and "another nsmanagerd runs" in p.stderr, p.stderr
    assert mount_table() == before
    assert sb.manager().GetNamespace("alice")


# ---------------------------------------------------------------------------
# SharedSubtrees= a user can steer


def test_shared_subtree_under_a_world_writable_directory(instance):
    """SharedSubtrees=.../pub/share with pub at mode 1777: alice's symlink there once stopped
    the daemon from starting at all. Now that path is not shared (nothing of hers is
    followed), the daemon starts and serves, and once the administrator fixed the directory
    a reload shares it."""
    sb = instance
    pub = sb.instance / "pub"
    pub.mkdir()
    os.chmod(pub, 0o1777)
    share = pub / "share"
    share.symlink_to("/etc")
    os.lchown(share, ALICE.uid, ALICE.gid)
    sb.start_daemon(SharedSubtrees=f"/mnt {share}")
    sb.track_mount(str(share))
    log = sb.daemon_log_text()
    assert f"SharedSubtrees={share}" in log and "tried again at the next" in log, log
    assert find_mount(host_mountinfo(), str(share)) is None and find_mount(host_mountinfo(), "/etc") is None
    assert str(share) not in [str(p) for p in sb.properties()["SharedSubtrees"]]
    assert find_mount(host_mountinfo(), "/mnt").shared
    sb.manager().CreateNamespace("alice")            # views are built, /mnt joined
    assert find_mount(sb.mountinfo("alice"), "/mnt").peer_group == find_mount(host_mountinfo(), "/mnt").peer_group

    # Her link gone, the directory still writable by all: refused again, with the reason.
    share.unlink()
    share.mkdir()
    sb.manager().ReloadConfig()
    wait_until(lambda: "can be written by someone other than root" in sb.daemon_log_text(), "the reason in the log")
    assert find_mount(host_mountinfo(), str(share)) is None
    # Fixed by the administrator: shared at the next reload, in a group of its own.
    os.chmod(pub, 0o755)
    sb.manager().ReloadConfig()
    m = find_mount(host_mountinfo(), str(share))
    assert m is not None and m.shared, f"{share} was not shared after the fix"
    assert str(share) in [str(p) for p in sb.properties()["SharedSubtrees"]]


def test_a_refused_configured_path_is_not_shared_as_one_shared_at_run_time(instance):
    """The list of subtrees shared at run time, saved for restarts, holds the configured ones
    too: a configured path refused at the next start must not come back through it, without
    the checks of SharedSubtrees=."""
    sb = instance
    pub = sb.instance / "pub"
    share = pub / "share"
    share.mkdir(parents=True)
    other = sb.instance / "other"
    other.mkdir()
    sb.start_daemon(SharedSubtrees=f"/mnt {share}")
    sb.track_mount(str(share))
    sb.track_mount(str(other))
    sb.manager().ShareSubtree("", str(other))     # writes the saved list
    sb.stop_daemon()
    subprocess.run(["umount", str(share)], check=True)
    os.chmod(pub, 0o1777)
    sb.start_daemon(write=False)
    assert "can be written by someone other than root" in sb.daemon_log_text()
    assert find_mount(host_mountinfo(), str(share)) is None, f"{share} was shared as a path shared at run time"
    shared = [str(p) for p in sb.properties()["SharedSubtrees"]]
    assert str(other) in shared and str(share) not in shared, shared


def test_shared_subtree_in_a_directory_a_user_may_write_by_an_acl(instance):
    """The directory a SharedSubtrees= path is in: root's, mode 0755, but an ACL entry lets
    alice write it (and so swap the path for her symlink). Refused with a warning naming
    the entry, as a directory the mode bits open is; the rest is shared, and once the
    entry is gone a reload shares it."""
    sb = instance
    pub = sb.instance / "pub"
    share = pub / "share"
    share.mkdir(parents=True)
    subprocess.run(["setfacl", "-m", f"u:{ALICE.uid}:rwx", str(pub)], check=True, timeout=timeout(10))
    sb.start_daemon(SharedSubtrees=f"/mnt {share}")
    sb.track_mount(str(share))
    log = sb.daemon_log_text()
    assert "can be written by someone other than root, the ACL entry user:2001:rwx" in log, log
    assert find_mount(host_mountinfo(), str(share)) is None
    assert find_mount(host_mountinfo(), "/mnt").shared
    # A masked entry writes nothing: shared at the next reload.
    subprocess.run(["setfacl", "-m", "m::r-x", str(pub)], check=True, timeout=timeout(10))
    sb.manager().ReloadConfig()
    m = find_mount(host_mountinfo(), str(share))
    assert m is not None and m.shared, f"{share} was not shared once the mask took alice's write away"


def test_a_users_directory_is_not_shared(instance):
    """A configured shared subtree that is a user's directory would share what she puts
    there with everybody, as root: refused with a warning, the rest is shared."""
    sb = instance
    hers = sb.instance / "hers"
    hers.mkdir()
    os.chown(hers, ALICE.uid, ALICE.gid)
    sb.start_daemon(SharedSubtrees=f"/mnt {hers}")
    sb.track_mount(str(hers))
    assert f"it belongs to uid {ALICE.uid}, not root" in sb.daemon_log_text()
    assert find_mount(host_mountinfo(), str(hers)) is None
    assert find_mount(host_mountinfo(), "/mnt").shared


# ---------------------------------------------------------------------------
# nsmanagerd --release


def test_release_takes_the_daemons_mounts_and_nothing_else(instance):
    """What the package's removal runs once the daemon is stopped: the registry pin and the
    binds the daemon made go; a process inside a view keeps its namespace and can use it;
    a shared subtree with a mount below it (a stick on it) stays, and is named; what the
    daemon did not make (the sandbox's /mnt, a tmpfs) stays."""
    sb = instance
    media = sb.instance / "media"
    media.mkdir()
    baseline = {m.id for m in host_mountinfo()}
    sb.start_daemon(SharedSubtrees=f"/mnt {media}")
    manager = sb.manager()
    manager.CreateNamespace("alice")
    manager.SetLinger("alice", True)
    fd = sb.open_view_fd("alice")
    inside = subprocess.Popen(["nsenter", f"--mount=/proc/self/fd/{fd}", "--", "sleep", "600"], pass_fds=(fd,))
    os.close(fd)
    try:
        p = run_daemon(sb, "--release")
        assert p.returncode == 1 and "stop it first" in p.stderr, p.stderr

        sb.mount_tmpfs(f"{media}/usb", source="USB")       # someone's stick under a shared subtree
        sb.stop_daemon()
        ours = [m for m in host_mountinfo() if m.id not in baseline]
        assert {m.target for m in ours} >= {str(sb.subtree_root), str(sb.state_dir), str(sb.state_dir / "registry"),
                                            str(media), f"{media}/usb"}, ours
        p = run_daemon(sb, "--release")
        assert p.returncode == 0, p.stderr
        assert f"Keeping the bind of '{media}' onto itself: {media}/usb is mounted below it" in p.stderr, p.stderr
        left = {m.target for m in host_mountinfo() if m.id not in baseline}
        assert left == {str(media), f"{media}/usb"}, left
        assert find_mount(host_mountinfo(), "/mnt") is not None, "the sandbox's /mnt is not the daemon's"

        # alice's namespace lives on in the process inside, and works.
        view = f"/proc/{inside.pid}/ns/mnt"
        out = subprocess.run(["nsenter", f"--mount={view}", "--", "ls", "-A", "/home"], capture_output=True,
                             text=True, timeout=timeout(10))
        assert out.returncode == 0 and "alice" in out.stdout.split(), out

        # The stick gone, a second release takes the rest.
        sb.umount(f"{media}/usb")
        p = run_daemon(sb, "--release")
        assert p.returncode == 0 and "Keeping" not in p.stderr, p.stderr
        assert not [m for m in host_mountinfo() if m.id not in baseline]
    finally:
        inside.kill()
        inside.wait()


def test_release_and_a_reinstall_name_the_users_left_in_views(instance):
    """Removing the package while alice has a process in her view: --release (prerm) names
    her, how many processes, and `loginctl kill-user alice`; bob, whose view nothing is in,
    is not named. --orphans (the postinst of a reinstall) says her view is orphaned; with the
    registry still pinned (an upgrade: the next daemon finds the views again) it says nothing,
    and nothing once her process has ended."""
    sb = instance
    sb.start_daemon()
    manager = sb.manager()
    manager.CreateNamespace("alice")
    manager.CreateNamespace("bob")
    manager.SetLinger("bob", True)
    fd = sb.open_view_fd("alice")
    inside = subprocess.Popen(["nsenter", f"--mount=/proc/self/fd/{fd}", "--", "sleep", "600"], pass_fds=(fd,))
    os.close(fd)
    config = f"--config={sb.config_file}"
    try:
        sb.stop_daemon()
        p = run_daemon(sb, config, "--orphans")
        assert p.returncode == 0 and p.stderr == "", p.stderr     # an upgrade: nothing is orphaned

        p = run_daemon(sb, config, "--release")
        assert p.returncode == 0, p.stderr
        assert "Users still have processes in their views: alice (1 process)." in p.stderr, p.stderr
        assert "orphaned" in p.stderr and "End them with: loginctl kill-user alice" in p.stderr, p.stderr
        assert "bob" not in p.stderr, p.stderr

        p = run_daemon(sb, config, "--orphans")
        assert p.returncode == 0, p.stderr
        assert "Orphaned views, left from before nsmanager was removed: alice (1 process)." in p.stderr, p.stderr
        assert "End them with: loginctl kill-user alice" in p.stderr and "bob" not in p.stderr, p.stderr

        inside.kill()
        inside.wait()
        p = run_daemon(sb, config, "--orphans")
        assert p.returncode == 0 and p.stderr == "", p.stderr
    finally:
        inside.kill()
        inside.wait()


# A process that makes mount namespaces one after the other, keeping each (an fd), until one has
# the inode number argv[1]; then it stays in that one until its stdin closes.
REUSE_INODE = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
target, held = int(sys.argv[1]), []
for _ in range(int(sys.argv[2])):
    if libc.unshare(0x00020000) != 0:       # CLONE_NEWNS
        sys.exit(f"unshare: {os.strerror(ctypes.get_errno())}")
    fd = os.open("/proc/self/ns/mnt", os.O_RDONLY)
    if os.fstat(fd).st_ino == target:
        print("reused", flush=True)
        sys.stdin.read()
        sys.exit(0)
    held.append(fd)
print("not reused", flush=True)
"""


def test_orphans_does_not_take_a_namespace_that_reused_a_views_inode(instance):
    """bob's view ends with --release (nothing is in it). The kernel gives its inode number to the
    next namespace made anywhere (another sandbox's, here a process of the test's): --orphans
    named bob "(1 process)" for it (seen once with test_interface.py running beside). His state
    file's MNTNS_UNIQUE_ID (NS_GET_MNTNS_ID, never reused) tells the two apart."""
    sb = instance
    sb.start_daemon()
    sb.manager().CreateNamespace("bob")
    state = (sb.state_dir / "namespaces" / "bob").read_text()
    inode = int(re.search(r"^MNTNS_ID=(\d+)$", state, re.M).group(1))
    assert re.search(r"^MNTNS_UNIQUE_ID=\d+$", state, re.M), state
    config = f"--config={sb.config_file}"
    sb.stop_daemon()
    p = run_daemon(sb, config, "--release")
    assert p.returncode == 0 and "bob" not in p.stderr, p.stderr
    reuse = subprocess.Popen(["/usr/bin/python3", "-c", REUSE_INODE, str(inode), "2000"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        outcome = reuse.stdout.readline().strip()
        if outcome != "reused":
            pytest.skip(f"no new mount namespace got the inode number of bob's ended view ({outcome or 'no answer'}): "
                        "the kernel gave it elsewhere, or has not freed it yet")
        p = run_daemon(sb, config, "--orphans")
        assert p.returncode == 0 and p.stderr == "", p.stderr
    finally:
        reuse.stdin.close()
        reuse.wait(timeout(30))


def test_orphans_walks_proc_once_for_all_views(instance, tmp_path):
    """--orphans with three views that each still have a process in them: each is named with
    its count, and /proc is opened once for all of them, not once per view (a machine with
    many views and many processes would pay views × processes). strace counts the opens."""
    sb = instance
    sb.start_daemon()
    manager = sb.manager()
    users = ("alice", "bob", "carol")
    inside = []
    try:
        for user in users:
            manager.CreateNamespace(user)
            fd = sb.open_view_fd(user)
            inside.append(subprocess.Popen(["nsenter", f"--mount=/proc/self/fd/{fd}", "--", "sleep", "600"],
                                           pass_fds=(fd,)))
            os.close(fd)
        config = f"--config={sb.config_file}"
        sb.stop_daemon()
        p = run_daemon(sb, config, "--release")
        assert p.returncode == 0, p.stderr
        trace = tmp_path / "strace.out"
        # LeakSanitizer cannot work under ptrace: the ASan pass's daemon would abort at exit.
        p = run_daemon(sb, "-o", str(trace), "-e", "trace=open,openat,openat2", str(daemon_binary()), config,
                       "--orphans", binary="strace",
                       env={"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"})
        assert p.returncode == 0, p.stderr
        for user in users:
            assert f"{user} (1 process)" in p.stderr, p.stderr
        opens = [line for line in trace.read_text().splitlines() if '"/proc"' in line]
        assert len(opens) == 1, opens
    finally:
        for proc in inside:
            proc.kill()
            proc.wait()


def test_release_leaves_a_mount_that_reuses_the_id_of_the_daemons(instance):
    """The daemon's bind of a shared subtree onto itself is gone (root unmounted it) and
    root mounted his own tmpfs there, which got the same mountinfo id (the kernel hands out
    the lowest free one). --release must know it is not the daemon's: by the unique id
    (Linux 6.8) the daemon recorded, or else by what the mount is; it stays, named."""
    sb = instance
    media = sb.instance / "media"
    media.mkdir()
    sb.start_daemon(SharedSubtrees=f"/mnt {media}")
    sb.stop_daemon()
    ours = find_mount(host_mountinfo(), str(media))
    assert ours is not None, "the daemon did not bind the shared subtree onto itself"
    sys_umount(str(media))
    # The lowest free id may be lower than ours: each tmpfs that gets one stays (stacked)
    # until one gets ours.
    for _ in range(64):
        sb.mount_tmpfs(str(media), source="ADMIN")
        admins = find_mount(host_mountinfo(), str(media))
        if admins.id >= ours.id:
            break
    if admins.id != ours.id:
        pytest.skip(f"the kernel gave mount id {ours.id} to another mount meanwhile, not to the administrator's tmpfs")
    Path(media, "admin-file").write_text("root's\n")

    p = run_daemon(sb, "--release")
    assert p.returncode == 0, p.stderr
    assert f"Leaving '{media}' alone: the mount there now is not the one nsmanagerd made" in p.stderr, p.stderr
    m = find_mount(host_mountinfo(), str(media))
    assert m is not None and m.id == ours.id and m.source == "ADMIN", "--release unmounted the administrator's tmpfs"
    assert Path(media, "admin-file").read_text() == "root's\n"
    assert find_mount(host_mountinfo(), str(sb.subtree_root)) is None, "the daemon's own mounts were not released"


def test_a_shared_subtree_taken_out_of_the_configuration(instance):
    """SharedSubtrees= without a path it had: never silently ignored. A reload says what
    happens; views made afterwards do not join it (it reaches them one way, as the rest of
    the host), the view that was its peer stays one; after a restart it is no longer shared
    in new views either (nothing brings it back), while a path shared at run time is kept."""
    sb = instance
    media = sb.instance / "media"
    media.mkdir()
    runtime = sb.instance / "runtime"
    runtime.mkdir()
    sb.start_daemon(SharedSubtrees=f"/mnt {media}")
    m = sb.manager()
    m.CreateNamespace("alice")
    m.ShareSubtree("", str(runtime))
    # the daemon's binds of both stay on the host (a restart needs them): the test's to undo
    sb.track_mount(str(media))
    sb.track_mount(str(runtime))
    group = find_mount(host_mountinfo(), str(media)).peer_group
    assert group and find_mount(sb.mountinfo("alice"), str(media)).peer_group == group

    sb.write_config(SharedSubtrees="/mnt")
    m.ReloadConfig()
    assert f"SharedSubtrees= no longer lists '{media}'" in sb.daemon_log_text()
    assert str(media) not in sb.properties()["SharedSubtrees"]
    assert str(runtime) in sb.properties()["SharedSubtrees"]
    m.CreateNamespace("bob")
    bob = find_mount(sb.mountinfo("bob"), str(media))
    assert bob.peer_group != group and bob.master == group, bob      # one way
    assert find_mount(sb.mountinfo("alice"), str(media)).peer_group == group

    sb.restart_daemon()
    props = sb.properties()["SharedSubtrees"]
    assert str(media) not in props and str(runtime) in props, props
    m = sb.manager()
    m.CreateNamespace("carol")
    carol = find_mount(sb.mountinfo("carol"), str(media))
    assert carol.peer_group != group, carol


def test_verify_names_settings_a_reload_cannot_change(daemon, nsctl):
    """SubtreeRoot= and StateDirectory= change only at a start: nsctl verify says so where the
    files hold another value than the running daemon's (a note: the files are fine), and
    says nothing where they agree."""
    sb = daemon
    p = nsctl("verify", f"--config={sb.config_file}")
    assert (p.returncode, p.stderr) == (0, ""), p.stderr
    assert sb.properties()["StateDirectory"] == str(sb.state_dir)
    elsewhere = "/tmp/nsmanager-sandbox/elsewhere"
    sb.write_config(SubtreeRoot=elsewhere)
    p = nsctl("verify", f"--config={sb.config_file}")
    assert p.returncode == 0, p.stderr
    assert p.stderr == (f"note: SubtreeRoot= is '{elsewhere}' in the files but '{sb.subtree_root}' in the running "
                        "nsmanagerd: a reload does not change it, the next start does (systemctl restart nsmanagerd)\n"), p.stderr
