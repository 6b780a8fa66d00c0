# SPDX-License-Identifier: LGPL-2.1-or-later
"""A user is her uid; NSS decides the name (docs/security.md).

Sites take their users from sssd or winbind, which answer a user by other spellings than her
canonical name: ALICE (case_sensitive = false), alice@CORP.EXAMPLE and longer forms (names
with a domain), CORP\\alice (winbind). sshd, login and display managers hand PAM the name as
it was typed (runuser and su do not: they hand PAM the pw_name NSS gave them). Here an NSS source of the tests' own (tests/helpers/nss-nsmtest.c, libnss_nsmtest.so.2)
answers those spellings for the test users, knows gina@corp.example (a site whose canonical
names are fully qualified) and the group "domain users@corp.example", and can be slow for names
it does not know, as an unreachable directory server is. It is loaded through copies of
/etc/nsswitch.conf and /etc/ld.so.cache bound over the sandbox's (the machine's are never
written). Logins go through sshd (tests/sshd.py) and pamtester, which pass the typed name to
PAM.
"""

import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sandbox as sb_module
from helpers import E_NO_SUCH_NAMESPACE, E_NO_SUCH_USER, E_TIMED_OUT, E_USER_EXCLUDED, expect_error, ns_path
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, TEST_USERS, timeout
from test_login_without_view import failing, profile  # noqa: F401 (a fixture)
from sshd import Sshd
from test_pam import host_ns, namespace_props, parse_ns, run_with_syslog

DATA = Path("/run/nsm-test-nss")
GINA = ("gina@corp.example", 2005)
FRANK = ("frank", 3000000007)          # a uid above 2^31, as directories hand out
BAD = ("bad/../name", 2006)             # a canonical name that cannot name a view
ODD = ("oddhome", 2008, "/home/odd\udcff")  # a home that is no UTF-8 (a byte 0xff), as NSS may give
DOMAIN_USERS = ("domain users@corp.example", 2200)
ALICE_SPELLINGS = ["alice", "ALICE", "alice@CORP.EXAMPLE", "CORP\\alice", "Alice@CORP.EXAMPLE.LONG-SUBDOMAIN.TEST"]
SECRET = "nsm-id-secret.txt"
ALICE_POLICY = {"user.d/alice.conf": f"[View]\nInaccessiblePaths=%h/{SECRET}\n"}


def library_dirs() -> list[str]:
    """The directories of the machine's ld.so.conf, in order."""
    out = subprocess.run(["ldconfig", "-v", "-N", "-X"], capture_output=True, text=True).stdout
    return [line.split(":")[0] for line in out.splitlines() if line and not line[0].isspace() and ":" in line]


@pytest.fixture
def directory(sandbox):
    """The test NSS source, in the sandbox's nsswitch.conf after `files`; its data for this
    test under /run (the sandbox's). Bound once per sandbox, before any daemon instance."""
    if not getattr(sandbox, "_nsm_test_nss", False):
        # From the plain build, as the PAM module: sshd and su load it, and they are not
        # sanitized (tools/test's ASan pass).
        lib = sb_module.pam_build_dir() / "tests/libnss_nsmtest.so.2"
        if not lib.exists():
            pytest.fail(f"{lib} is not built", pytrace=False)
        base = sb_module.BASE / "test-nss"
        shutil.rmtree(base, ignore_errors=True)
        (base / "lib").mkdir(parents=True)
        os.chmod(base, 0o755)
        os.chmod(base / "lib", 0o755)
        shutil.copy(lib, base / "lib" / lib.name)
        os.chmod(base / "lib" / lib.name, 0o755)
        # glibc finds NSS modules by their soname: our directory first in a cache of our own.
        (base / "ld.so.conf").write_text("\n".join([str(base / "lib")] + library_dirs()) + "\n")
        subprocess.run(["ldconfig", "-X", "-C", str(base / "ld.so.cache"), "-f", str(base / "ld.so.conf")],
                       check=True, capture_output=True)
        sandbox._bind_file((base / "ld.so.cache").read_bytes(), "/etc/ld.so.cache", 0o644)
        lines = []
        for line in Path("/etc/nsswitch.conf").read_text().splitlines():
            key = line.split(":")[0].strip()
            if key in ("passwd", "group") and ":" in line:
                sources = line.split(":", 1)[1].split()
                sources.insert(sources.index("files") + 1 if "files" in sources else 0, "nsmtest")
                line = f"{key}: " + " ".join(sources)
            lines.append(line)
        sandbox._bind_file("\n".join(lines) + "\n", "/etc/nsswitch.conf", 0o644)
        sandbox._nsm_test_nss = True

    DATA.mkdir(mode=0o755, exist_ok=True)
    (DATA / "slow").unlink(missing_ok=True)
    (DATA / "slow-uid").unlink(missing_ok=True)
    (DATA / "slow-uid-asked").unlink(missing_ok=True)
    (DATA / "slow-gid-main").unlink(missing_ok=True)
    (DATA / "slow-gid-main-asked").unlink(missing_ok=True)
    # No shadow entry ("*", not "x"): pam_unix's account check then asks for none, as with
    # sssd, whose pam_sss answers it.
    passwd = [f"{u.name}:*:{u.uid}:{u.gid}:{u.name}:{u.home}:{u.shell}" for u in TEST_USERS.values()]
    passwd.append(f"{GINA[0]}:*:{GINA[1]}:{GINA[1]}:Gina:/home/{GINA[0]}:/bin/bash")
    passwd.append(f"{FRANK[0]}:*:{FRANK[1]}:{FRANK[1]}:Frank:/home/{FRANK[0]}:/bin/bash")
    passwd.append(f"{BAD[0]}:*:{BAD[1]}:{BAD[1]}:Bad:/home/bad:/bin/bash")
    passwd.append(f"{ODD[0]}:*:{ODD[1]}:{ODD[1]}:Odd:{ODD[2]}:/bin/bash")
    (DATA / "passwd").write_bytes(("\n".join(passwd) + "\n").encode("utf-8", "surrogateescape"))
    (DATA / "group").write_text(f"{GINA[0]}:x:{GINA[1]}:\n{FRANK[0]}:x:{FRANK[1]}:\n"
                                f"{DOMAIN_USERS[0]}:x:{DOMAIN_USERS[1]}:alice,{GINA[0]}\n")
    for p in DATA.iterdir():
        os.chmod(p, 0o644)
    home = Path(f"/home/{GINA[0]}")
    home.mkdir(exist_ok=True)
    os.chown(home, GINA[1], GINA[1])
    yield DATA
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(DATA, ignore_errors=True)


def secret(home: str, name: str = SECRET) -> Path:
    """A file of the user's own, which her policy hides."""
    p = Path(home) / name
    p.write_text("the secret\n")
    os.chown(p, *(lambda s: (s.st_uid, s.st_gid))(os.stat(home)))
    return p


@pytest.fixture
def sshd(directory):
    """sshd with keys for alice and gina: `ssh -l SPELLING` with the key of the user NSS makes
    of it (sshd finds authorized_keys by the canonical name, and hands PAM the typed one)."""
    with Sshd(["alice", GINA[0]]) as server:
        yield server


def ssh(server: Sshd, user: str, as_typed: str, command: str) -> subprocess.CompletedProcess:
    argv = server.ssh_argv(user, command)
    argv[-2:-1] = ["-l", as_typed, "127.0.0.1"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout(60), stdin=subprocess.DEVNULL)


def login(server: Sshd, as_typed: str, command: str = f"cat ~/{SECRET} 2>/dev/null || echo hidden",
          user: str = "alice") -> tuple[int, str]:
    """ssh -l AS_TYPED with USER's key: (its mount namespace, the command's output)."""
    p = ssh(server, user, as_typed, f"readlink /proc/self/ns/mnt; id -u; {command}")
    assert p.returncode == 0, f"{as_typed!r}: {p.stdout + p.stderr}\n{server.log_text()[-2000:]}"
    lines = p.stdout.splitlines()
    return parse_ns(lines[0]), "\n".join(lines[1:])


def listed(sb) -> list[tuple[str, int]]:
    return [(str(n), int(u)) for n, u, _, _ in sb.manager().ListNamespaces()]


# ---- every spelling is alice ----

@pytest.mark.parametrize("existing", [False, True], ids=["new-namespace", "existing-namespace"])
@pytest.mark.parametrize("spelling", ALICE_SPELLINGS)
@pytest.mark.daemon_config(files=ALICE_POLICY)
def test_every_spelling_lands_in_her_one_view(directory, daemon, profile, sshd, spelling, existing):
    secret(TEST_USERS["alice"].home)
    if existing:
        daemon.manager().CreateNamespace("alice")
    ns, out = login(sshd, spelling)
    assert out == "2001\nhidden", f"{spelling!r} read what alice's policy hides, or is not alice: {out!r}"
    assert ns != host_ns(), f"{spelling!r} logged in on the host"
    assert ns == int(namespace_props(daemon, "alice")["MountNamespaceId"]), f"{spelling!r} is not in alice's view"
    assert listed(daemon) == [("alice", 2001)]


@pytest.mark.daemon_config(files=ALICE_POLICY)
def test_spellings_are_one_namespace_on_the_bus(directory, daemon, nsctl):
    """Two spellings are one namespace, one object, one entry; replies carry the canonical
    name; a UID names her too."""
    m = daemon.manager()
    paths = {str(m.CreateNamespace(s)) for s in ALICE_SPELLINGS + ["2001"]}
    assert paths == {ns_path("alice")}
    assert {str(m.GetNamespace(s)) for s in ALICE_SPELLINGS + ["2001"]} == paths
    assert listed(daemon) == [("alice", 2001)]
    p = nsctl("list")
    assert p.returncode == 0, p.stderr
    assert [line for line in p.stdout.splitlines() if "2001" in line and "alice" in line].__len__() == 1, p.stdout
    assert "ALICE" not in p.stdout and "CORP" not in p.stdout, p.stdout
    p = nsctl("status", "ALICE")
    assert p.returncode == 0 and "alice" in p.stdout, p.stdout + p.stderr
    # The audit records name her as the calls resolved her.
    log = daemon.daemon_log_text()
    assert "CreateNamespace by root" in log and "in the view of 'ALICE'" not in log, log
    assert "in the view of 'CORP" not in log and "in the view of '2001'" not in log, log
    m.RemoveNamespace("CORP\\alice")
    assert listed(daemon) == []
    expect_error(lambda: m.GetNamespace("ALICE"), E_NO_SUCH_NAMESPACE)
    expect_error(lambda: m.GetNamespace("alice@elsewhere.example"), E_NO_SUCH_USER)


@pytest.mark.daemon_config(ExcludeUsers="alice")
def test_exclude_users_excludes_every_spelling(directory, daemon, profile, sshd):
    for spelling in ALICE_SPELLINGS:
        ns, out = login(sshd, spelling, "true")
        assert ns == host_ns(), f"{spelling!r}: excluded, yet not on the host"
        e = expect_error(lambda: daemon.manager().CreateNamespace(spelling), E_USER_EXCLUDED)
        assert "'alice'" in e.get_dbus_message(), e.get_dbus_message()
    assert listed(daemon) == []


@pytest.mark.daemon_config(LoginWithoutView="deny", files=ALICE_POLICY)
def test_deny_lets_no_spelling_through_without_a_view(directory, daemon, profile, sshd):
    """Under LoginWithoutView=deny: a name NSS cannot resolve (alice@corp, not the directory's
    domain) is refused, whatever its shape; one it resolves to alice is refused while her view
    cannot be entered, and lands in it once it can."""
    for name in ("alice@corp", "CORP\\nobody-here", "x" * 40 + "@corp"):
        p, log = run_with_syslog(["pamtester", "nsm-pamtester-profile", name, "open_session"],
                                 sb_module.BASE / "syslog")
        assert p.returncode != 0, f"{name!r} was let through: {p.stdout + p.stderr}"
    with failing(daemon, "stopped"):
        for spelling in ALICE_SPELLINGS:
            p = ssh(sshd, "alice", spelling, "echo ran")
            assert p.returncode != 0 and "ran" not in p.stdout, f"{spelling!r} was let through without a view"
    secret(TEST_USERS["alice"].home)
    ns, out = login(sshd, "ALICE")
    assert out == "2001\nhidden" and ns != host_ns()


@pytest.mark.daemon_config(files={f"user.d/{ODD[0]}.conf": f"[View]\nInaccessiblePaths=%h/{SECRET}\n"})
def test_a_home_that_is_no_utf8_gets_its_policy(directory, daemon):
    """The [View] policy of a user whose home NSS gives in bytes that are no UTF-8 is applied
    in her view: the user record and the policy reach the mount child as bytes."""
    home = os.fsencode(ODD[2])
    os.makedirs(home, exist_ok=True)
    try:
        (Path(os.fsdecode(home)) / SECRET).write_text("odd's secret\n")
        daemon.manager().CreateNamespace(ODD[0])
        assert daemon.in_view(ODD[0], ["cat", os.path.join(home, SECRET.encode())]).stdout == ""
        assert (Path(os.fsdecode(home)) / SECRET).read_text() == "odd's secret\n"
    finally:
        shutil.rmtree(home, ignore_errors=True)


# ---- fully-qualified canonical names, groups with blanks ----

@pytest.mark.daemon_config(files={f"user.d/{GINA[0]}.conf": "[View]\nInaccessiblePaths=%h/secret-%u.txt\n"})
def test_a_fully_qualified_canonical_name_gets_her_view(directory, daemon, profile, sshd):
    home = f"/home/{GINA[0]}"
    secret(home, f"secret-{GINA[0]}.txt")
    for spelling in (GINA[0], "GINA", "CORP\\gina", "Gina@CORP.EXAMPLE"):
        ns, out = login(sshd, spelling, f"cat ~/secret-{GINA[0]}.txt 2>/dev/null || echo hidden", user=GINA[0])
        assert out == f"{GINA[1]}\nhidden", f"{spelling!r}: {out!r}"
        assert ns != host_ns()
        assert ns == int(namespace_props(daemon, GINA[0])["MountNamespaceId"])
    assert listed(daemon) == [GINA]
    props = namespace_props(daemon, GINA[0])
    assert props["Name"] == GINA[0]
    assert (daemon.subtree_root / GINA[0]).is_dir()


@pytest.mark.daemon_config(LoginWithoutView="restricted",
                           files={f"group.d/{DOMAIN_USERS[0]}.conf": f"[View]\nInaccessiblePaths=%h/{SECRET}\n"})
def test_a_group_with_a_blank_in_its_name_has_its_policy(directory, daemon, profile, sshd):
    """group.d/domain users@corp.example.conf applies to alice (a member), in her view and in
    the rule the module follows when the view cannot be entered; bob is no member."""
    secret(TEST_USERS["alice"].home)
    ns, out = login(sshd, "alice")
    assert out == "2001\nhidden" and ns != host_ns()
    text = Path("/run/nsmanager/login-filter").read_text()
    assert "VIEW_GROUP=domain\\x20users@corp.example " in text, text
    with failing(daemon, "stopped"):
        p = ssh(sshd, "alice", "ALICE", "echo ran")
        assert p.returncode != 0 and "ran" not in p.stdout, "alice's group policy was not seen: let through"
        p = subprocess.run(["runuser", "-l", "bob", "-c", "echo ran"], capture_output=True, text=True,
                           timeout=timeout(60), stdin=subprocess.DEVNULL)
        assert p.returncode == 0 and "ran" in p.stdout, p.stdout + p.stderr


# ---- a user's names never delay a login ----

FLOOD = r"""
import random, string, sys
import dbus, dbus.lowlevel

bus = dbus.SystemBus()
for i in range(int(sys.argv[1])):
    name = "".join(random.choices(string.ascii_lowercase, k=12))
    if i % 2:
        m = dbus.lowlevel.MethodCallMessage(sys.argv[2], sys.argv[3], sys.argv[4], "GetNamespace")
        m.append(name, signature="s")
    else:
        m = dbus.lowlevel.MethodCallMessage(sys.argv[2], sys.argv[3], sys.argv[4], "Can")
        m.append("SetLinger", name, signature="ss")
    m.set_no_reply(True)
    bus.send_message(m)
bus.flush()
print("sent", flush=True)
sys.stdin.read()
"""


@pytest.mark.daemon_config(files=ALICE_POLICY, RateLimitBurst="0")
def test_a_users_random_names_do_not_hold_up_a_login(directory, daemon, profile, sshd):
    """bob sends 1,000 fresh names to GetNamespace and Can while the directory takes 5 s for
    each name it does not know; alice's login meanwhile completes, in her view."""
    (directory / "slow").write_text("5\n")
    os.chmod(directory / "slow", 0o644)
    flood = subprocess.Popen(daemon._setpriv("bob") + ["/usr/bin/python3", "-c", FLOOD, "1000", BUS_NAME,
                                                       MANAGER_PATH, MANAGER_IFACE],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=daemon.user_env("bob"))
    try:
        assert flood.stdout.readline().strip() == "sent"
        daemon.manager().ListNamespaces()   # the daemon read them all: a turn of its loop after them
        secret(TEST_USERS["alice"].home)
        ns, out = login(sshd, "alice@CORP.EXAMPLE")
        assert out == "2001\nhidden" and ns != host_ns(), out
        assert ns == int(namespace_props(daemon, "alice")["MountNamespaceId"])
    finally:
        flood.stdin.close()
        flood.wait(timeout(30))


REFUSED_CALL = r"""
import sys
import dbus, dbus.lowlevel

bus = dbus.SystemBus()
m = dbus.lowlevel.MethodCallMessage(sys.argv[1], sys.argv[2], sys.argv[3], "Eject")
m.append("not/absolute", dbus.UInt64(0), signature="st")
bus.send_message(m)
bus.flush()
print("sent", flush=True)
sys.stdin.read()
"""


def test_a_callers_slow_uid_does_not_hold_up_others(directory, daemon):
    """The directory takes 30 s for gina's uid (as asked by the daemon). Her refused Eject is
    recorded with her uid and without a name, never by asking NSS on the loop (the audit
    record's caller name, a summary's, group root's members): root's and alice's calls after
    hers answer within their deadline, which they could not while the loop waited for NSS."""
    from caller import assert_ok, call_as
    daemon.manager().CreateNamespace("alice")
    (DATA / "slow-uid").write_text(f"{GINA[1]} 30\n")
    os.chmod(DATA / "slow-uid", 0o644)
    gina = subprocess.Popen(["setpriv", f"--reuid={GINA[1]}", f"--regid={GINA[1]}", "--clear-groups", "--",
                             "/usr/bin/python3", "-c", REFUSED_CALL, BUS_NAME, MANAGER_PATH, MANAGER_IFACE],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={"PATH": "/usr/bin:/bin", "DBUS_SYSTEM_BUS_ADDRESS": sb_module.SYSTEM_BUS_ADDRESS})
    try:
        assert gina.stdout.readline().strip() == "sent"
        # Behind hers on the daemon's connection: answered once hers was handled.
        assert_ok(call_as(daemon, "root", "ListNamespaces", call_timeout=20), "root: ListNamespaces")
        assert_ok(call_as(daemon, "alice", "GetNamespace", "s", "alice", call_timeout=20), "alice: GetNamespace")
    finally:
        gina.stdin.close()
        gina.wait(timeout(30))
        (DATA / "slow-uid").unlink(missing_ok=True)
    records = [r for r in daemon.journal_records() if r.get("NSM_ACTION") == "Eject"]
    assert len(records) == 1 and records[0].get("NSM_CALLER_UID") == str(GINA[1]), records
    assert "NSM_CALLER_USER" not in records[0], records


OWN_VIEW_RULES = """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage-own" && (subject.user == "alice" || subject.user == "bob"))
                return polkit.Result.YES;
});
"""


@pytest.mark.daemon_config(OperationTimeoutSec=f"{int(timeout(5))}s")
def test_a_callers_slow_groups_do_not_hold_up_others(directory, daemon, polkit_rules):
    """The directory takes 30 s for bob's uid (his groups, as the daemon asks for them). His
    own-view call (manage-own: the daemon acts with his groups) and his OpenAttach (the command
    gets his groups) wait for NSS in a child, never on the loop: meanwhile root's and alice's
    calls, her own-view call and her OpenAttach among them, answer; his get TimedOut at their
    deadline. Before, getpwuid() and getgrouplist() ran on the loop and held up everybody."""
    from caller import assert_ok, call_as
    bob = TEST_USERS["bob"]
    polkit_rules("50-own-view", OWN_VIEW_RULES)
    for u in ("alice", "bob"):
        daemon.manager().CreateNamespace(u)
    (DATA / "slow-uid").write_text(f"{bob.uid} 30\n")
    os.chmod(DATA / "slow-uid", 0o644)
    attach = ("OpenAttach", "sasasst", ["true"], ["PATH=/usr/bin:/bin"], "/", 0)
    propagation = ("SetPropagation", "ssst", "/mnt", "private", 0)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            own = pool.submit(call_as, daemon, "bob", propagation[0], propagation[1], "bob", *propagation[2:],
                              call_timeout=60)
            attached = pool.submit(call_as, daemon, "bob", attach[0], attach[1], "bob", *attach[2:], call_timeout=60)
            # Until the directory is asked for him (the daemon got his call).
            for _ in range(int(timeout(300))):
                if (DATA / "slow-uid-asked").exists() or own.done():
                    break
                time.sleep(0.1)
            assert (DATA / "slow-uid-asked").exists(), own.result() if own.done() else "bob's groups never asked"
            assert_ok(call_as(daemon, "root", "ListNamespaces", call_timeout=20), "root: ListNamespaces")
            assert_ok(call_as(daemon, "alice", "GetNamespace", "s", "alice", call_timeout=20), "alice: GetNamespace")
            assert_ok(call_as(daemon, "alice", propagation[0], propagation[1], "alice", *propagation[2:],
                              call_timeout=20), "alice: SetPropagation in her view")
            assert_ok(call_as(daemon, "alice", attach[0], attach[1], "alice", *attach[2:], call_timeout=20),
                      "alice: OpenAttach")
            for what, result in (("SetPropagation", own.result()), ("OpenAttach", attached.result())):
                assert result.get("error") == E_TIMED_OUT, f"bob's {what}: {result}"
    finally:
        (DATA / "slow-uid").unlink(missing_ok=True)


@pytest.mark.daemon_config(OperationTimeoutSec=f"{int(timeout(5))}s",
                           files={"group.d/nsm-id-team.conf": "[View]\nInaccessiblePaths=-/srv/nsm-id-team\n"})
def test_a_users_slow_groups_do_not_hold_up_other_logins(directory, daemon):
    """With a group policy file, a view's build needs the user's groups. The directory takes
    30 s for bob's (as the daemon asks for them): his view's build asks NSS in a child, never on
    the loop, and fails TimedOut at its deadline; meanwhile alice's view is made, and root's and
    alice's calls answer. Before, getgrouplist() ran on the loop and held up every login."""
    from caller import assert_ok, call_as
    bob = TEST_USERS["bob"]
    (DATA / "slow-uid").write_text(f"{bob.uid} 30\n")
    os.chmod(DATA / "slow-uid", 0o644)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            his = pool.submit(call_as, daemon, "root", "CreateNamespace", "s", "bob", call_timeout=60)
            for _ in range(int(timeout(300))):
                if (DATA / "slow-uid-asked").exists() or his.done():
                    break
                time.sleep(0.1)
            assert (DATA / "slow-uid-asked").exists(), his.result() if his.done() else "bob's groups never asked"
            assert_ok(call_as(daemon, "root", "CreateNamespace", "s", "alice", call_timeout=20), "root: alice's view")
            assert_ok(call_as(daemon, "root", "ListNamespaces", call_timeout=20), "root: ListNamespaces")
            assert_ok(call_as(daemon, "alice", "GetNamespace", "s", "alice", call_timeout=20), "alice: GetNamespace")
            result = his.result()
            assert result.get("error") == E_TIMED_OUT and "groups" in result.get("message", ""), result
    finally:
        (DATA / "slow-uid").unlink(missing_ok=True)
    assert [n for n, _ in listed(daemon)] == ["alice"]


@pytest.mark.daemon_config(extra_config="[View]\nInaccessiblePaths=-/srv/nsm-id-%g\n")
def test_a_policys_group_specifier_asks_no_nss_on_the_loop(directory, daemon):
    """%g in the policy is expanded in the child that applies it, and again by the daemon for
    the mount points it records: that one asked getgrgid() on the loop. The directory is slow
    (30 s) for gina's group as the daemon's own process asks (its children are answered at
    once): her view is made, with her group's name from the lookup in a child, and root's and
    alice's calls after it answer (NoReply before)."""
    from caller import assert_ok, call_as
    daemon.manager().CreateNamespace("alice")
    (DATA / "slow-gid-main").write_text(f"{GINA[1]} 30\n")
    os.chmod(DATA / "slow-gid-main", 0o644)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            hers = pool.submit(call_as, daemon, "root", "CreateNamespace", "s", GINA[0], call_timeout=60)
            for _ in range(int(timeout(300))):
                if (DATA / "slow-gid-main-asked").exists() or hers.done():
                    break
                time.sleep(0.1)
            assert_ok(call_as(daemon, "root", "ListNamespaces", call_timeout=20), "root: ListNamespaces")
            assert_ok(call_as(daemon, "alice", "GetNamespace", "s", "alice", call_timeout=20), "alice: GetNamespace")
            assert_ok(hers.result(), "root: gina's view")
    finally:
        (DATA / "slow-gid-main").unlink(missing_ok=True)


@pytest.mark.daemon_config(RateLimitBurst="3", RateLimitIntervalSec="1h")
def test_names_only_nss_can_answer_are_charged_and_bounded(directory, daemon):
    """Each name that needs NSS costs a lookup child: GetNamespace and Can of fresh names are
    charged to the caller's rate limit before the child starts (they were not: a stream of
    names forked children without end), and a name of megabytes is no user (it would have
    been copied into the cache and its failure's message)."""
    from caller import call_as
    results = [call_as(daemon, "bob", "GetNamespace", "s", f"nobody-{i}") for i in range(5)]
    errors = [r.get("error") for r in results]
    assert errors[:3] == [E_NO_SUCH_USER] * 3, results
    assert errors[3:] == [sb_module.ERROR_PREFIX + "LimitExceeded"] * 2, results
    assert "RateLimitBurst" in results[3]["message"], results
    expect_error(lambda: daemon.manager().GetNamespace("x" * 2_000_000), E_NO_SUCH_USER)
    expect_error(lambda: daemon.manager().GetNamespace("x" * 1025), E_NO_SUCH_USER)


# ---- a rename in the directory ----

def test_a_rename_in_the_directory_keeps_her_namespace(directory, daemon):
    """The directory renames gina (uid 2005) while the daemon is stopped: her namespace is
    restored under the name it was made with, found by her new name (by uid); her next one
    takes the new name."""
    m = daemon.manager()
    path = str(m.CreateNamespace(GINA[0]))
    daemon.stop_daemon()
    renamed = "gina.new@corp.example"
    text = (directory / "passwd").read_text(errors="surrogateescape").replace(f"{GINA[0]}:", f"{renamed}:")
    (directory / "passwd").write_text(text, errors="surrogateescape")
    daemon.restart_daemon()
    m = daemon.manager()
    assert listed(daemon) == [GINA], "her namespace was not restored under its name"
    assert str(m.GetNamespace(renamed)) == path == str(m.GetNamespace("GINA.NEW"))
    m.RemoveNamespace(renamed)
    assert str(m.CreateNamespace("GINA.NEW")) == path
    assert listed(daemon) == [(renamed, GINA[1])]
    assert (daemon.subtree_root / renamed).is_dir()


def test_a_start_restores_views_without_asking_nss(directory, daemon):
    """The directory stops answering for gina (uid 2005) while the daemon is stopped: a start
    restores her view from its state file, asking NSS nothing (before, a start asked NSS for
    each view before it took its bus name, which logins wait for: as many stalls as views, and
    a failure dropped the view)."""
    m = daemon.manager()
    path = str(m.CreateNamespace(GINA[0]))
    daemon.stop_daemon()
    (DATA / "slow-uid").write_text(f"{GINA[1]} 300\n")
    os.chmod(DATA / "slow-uid", 0o644)
    try:
        daemon.restart_daemon()
        assert listed(daemon) == [GINA], "her namespace was not restored"
        assert str(daemon.manager().GetNamespace(str(GINA[1]))) == path
        assert not (DATA / "slow-uid-asked").exists(), "the start asked NSS for her"
    finally:
        (DATA / "slow-uid").unlink(missing_ok=True)


def test_a_uid_above_2_to_the_31_is_printed_right(directory, daemon, nsctl):
    """uid 3000000007 by name and by number: one namespace, printed as the number it is."""
    m = daemon.manager()
    path = str(m.CreateNamespace("FRANK"))
    assert path == f"{MANAGER_PATH}/user/_{FRANK[1]}", path
    assert str(m.CreateNamespace(str(FRANK[1]))) == path
    assert str(m.GetNamespaceByUID(FRANK[1])) == path
    assert listed(daemon) == [FRANK]
    p = nsctl("list")
    assert p.returncode == 0 and str(FRANK[1]) in p.stdout and "-1294967296" not in p.stdout, p.stdout
    p = nsctl("status", str(FRANK[1]))
    assert p.returncode == 0 and "frank" in p.stdout, p.stdout + p.stderr


@pytest.mark.daemon_config(LoginWithoutView="deny")
def test_a_canonical_name_that_cannot_name_a_view(directory, daemon, profile):
    """NSS names uid 2006 'bad/../name': the daemon refuses it by name and by uid (NoSuchUser,
    nothing made); the module logs it and follows LoginWithoutView= (deny: refused)."""
    m = daemon.manager()
    for user in (BAD[0], str(BAD[1])):
        e = expect_error(lambda: m.CreateNamespace(user), E_NO_SUCH_USER)
        assert "cannot name a view" in e.get_dbus_message(), e.get_dbus_message()
    assert listed(daemon) == []
    assert not list(daemon.subtree_root.iterdir())
    p, log = run_with_syslog(["pamtester", "nsm-pamtester-profile", BAD[0], "open_session"], sb_module.BASE / "syslog")
    assert p.returncode != 0, p.stdout + p.stderr
    assert any("cannot name a view" in line for line in log), log


def test_after_a_rename_her_groups_are_her_uids_not_her_old_names(directory, daemon):
    """The directory renames gina (uid 2005) and gives her old name to a new user (uid 2009)
    in a group she is no longer in: her own-view calls run with the groups of her uid's
    name, not with those of the new user who took the name her view was made with."""
    m = daemon.manager()
    m.CreateNamespace(GINA[0])
    daemon.stop_daemon()
    renamed = "gina.new@corp.example"
    text = (directory / "passwd").read_text(errors="surrogateescape").replace(f"{GINA[0]}:", f"{renamed}:")
    text += f"{GINA[0]}:*:2009:2009:The new gina:/home/nobody:/bin/bash\n"
    (directory / "passwd").write_text(text, errors="surrogateescape")
    daemon.restart_daemon()
    argv = ["setpriv", f"--reuid={GINA[1]}", f"--regid={GINA[1]}", "--clear-groups", "--",
            str(sb_module.nsctl_binary()), "attach", str(GINA[1]), "--", "id", "-G"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode == 0, p.stderr
    assert sorted(int(g) for g in p.stdout.split()) == [GINA[1]], \
        f"her command ran with groups {p.stdout.strip()}, those of the new '{GINA[0]}'"
