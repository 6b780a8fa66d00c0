# SPDX-License-Identifier: LGPL-2.1-or-later
"""Authorization: who may call what; nsmanagerd against Debian's real polkitd.

Read-only calls are open to everyone; OpenSession, CloseSession and OpenMountNamespace are
root's (and the PAM module's) alone; everything else is polkit's to decide.

The sandbox (tests/sandbox.py) runs polkitd on its own system bus with the project's
policy/org.example.NSManager.policy over /usr/share/polkit-1/actions and a rules
directory of the tests' own over /etc/polkit-1/rules.d. Each call below comes from a
separate process running as the test user (setpriv to the user's uid, gid and groups),
so the daemon sees the user only through the bus credentials.

There is no logind session in the sandbox, so polkit treats every caller as "any"
(not active, not local): manage-own falls back to auth_admin, exactly what a cron
job or an ssh command without a session would get.

Attach (attach-own / attach) is covered by the nsctl tests."""

import collections
import json
import os
import pwd
import subprocess
import time

import pytest

from caller import REFUSED, assert_ok, assert_refused, call_as, client_argv, parse_result
from helpers import E_ACCESS_DENIED, E_INTERACTIVE_AUTHORIZATION_REQUIRED, create, descendants, ns_path, open_session, wait_until
from sandbox import (BUS_NAME, MANAGER_IFACE, MANAGER_PATH, NAMESPACE_IFACE, PROPERTIES_IFACE,
                     build_dir, find_mount, sys_mount, sys_umount, timeout, MS_BIND)

def setpriv_argv(user):
    pw = pwd.getpwnam(user)
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups", "--"]


def wait_for_no_process_mentioning(text, wait=20):
    def found():
        pids = []
        for d in descendants():     # the sandbox's polkitd and what its rules spawned
            try:
                if text.encode() in open(f"/proc/{d}/cmdline", "rb").read():
                    pids.append(d)
            except OSError:
                pass
        return pids
    wait_until(lambda: not found(), f"no process to run '{text}'", wait, interval=0.05,
               diag=lambda: f"processes {found()} still run it")


def wait_for_slow_rule(slow, marker):
    """Until polkit runs the slow rule (it touches marker first) on alice's call `slow`,
    which must still be waiting."""
    def ran():
        assert slow.poll() is None, f"alice's call ended before polkit ran the rule: {slow.communicate()}"
        return marker.exists()
    wait_until(ran, "polkit to run the slow rule", 20, interval=0.01)


def snapshot(sb, *users):
    """What an unauthorized caller must not be able to change."""
    state = {
        "namespaces": sorted((str(u), int(uid), str(s)) for u, uid, s, _ in sb.manager().ListNamespaces()),
        "host": sorted((m.target, m.propagation, m.fstype) for m in sb.mountinfo()
                       if not m.target.startswith(str(sb.subtree_root))),
    }
    for u in users:
        props = sb.properties(ns_path(u))
        state[u] = {
            "mounts": sorted((m.target, m.propagation, m.fstype) for m in sb.mountinfo(u)),
            "linger": bool(props["Linger"]),
            "sessions": list(map(str, props["Sessions"])),
        }
    return state


def view_propagation(sb, user, path):
    m = find_mount(sb.mountinfo(user), path)
    assert m is not None, f"{path} is not a mount point in {user}'s view"
    return m.propagation


# ---------------------------------------------------------------------------

def test_policy_actions_installed(sandbox):
    """polkitd knows our four actions with the contract's defaults (as pkaction reads
    them from the installed policy file)."""
    expected = {
        "org.example.NSManager.manage": ("auth_admin_keep", "auth_admin_keep", "auth_admin_keep"),
        "org.example.NSManager.manage-own": ("auth_admin", "auth_admin", "yes"),
        "org.example.NSManager.attach-own": ("yes", "yes", "yes"),
        "org.example.NSManager.attach": ("auth_admin", "auth_admin", "auth_admin"),
    }
    for action, (any_, inactive, active) in expected.items():
        p = sandbox.run(["pkaction", "--verbose", "--action-id", action])
        assert p.returncode == 0, f"polkitd does not know {action}: {p.stderr}"
        text = p.stdout
        assert f"implicit any:      {any_}" in text, text
        assert f"implicit inactive: {inactive}" in text, text
        assert f"implicit active:   {active}" in text, text
        assert "description:" in text and "message:" in text, text


def test_unprivileged_refused_admin_calls(daemon):
    """alice, with no rule for her, is refused every call that changes the host or
    another user's namespace, or hands out a namespace fd; nothing changes."""
    sb = daemon
    sb.manager().CreateNamespace("alice")

    # A namespace she may not create stays absent.
    assert_refused(call_as(sb, "alice", "CreateNamespace", "s", "bob"), "alice: CreateNamespace(bob)")
    assert_refused(call_as(sb, "alice", "CreateNamespace", "s", "alice"), "alice: CreateNamespace(alice)")
    assert sorted(str(u) for u, *_ in sb.manager().ListNamespaces()) == ["alice"]

    sb.manager().CreateNamespace("bob")
    before = snapshot(sb, "alice", "bob")
    calls = [
        ("RemoveNamespace", "s", "bob"),
        ("RemoveNamespace", "s", "alice"),
        ("ShareSubtree", "ss", "", "/mnt"),
        ("ShareSubtree", "ss", "bob", "/mnt"),
        ("EnslaveSubtree", "ss", "bob", "/mnt"),
        ("SetPropagation", "ssst", "", "/mnt", "private", 0),
        ("SetPropagation", "ssst", "bob", "/mnt", "private", 0),
        ("BindMount", "ssst", "bob", "/etc", "/mnt", 0),
        ("Unmount", "sst", "bob", "/mnt", 0),
        ("SetLinger", "sb", "bob", True),
        ("OpenMountNamespace", "s", "bob"),
        ("OpenMountNamespace", "s", "alice"),
        ("OpenSession", "ss", "alice", "s-alice-1"),
        ("OpenSession", "ss", "bob", "s-bob-1"),
    ]
    for method, signature, *args in calls:
        assert_refused(call_as(sb, "alice", method, signature, *args), f"alice: {method}{tuple(args)}")
    assert_refused(call_as(sb, "alice", "Remove", path=ns_path("bob"), iface=NAMESPACE_IFACE),
                   "alice: bob's Namespace.Remove()")
    # Not even her own view's propagation without authorization (no active session here).
    assert_refused(call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", "/mnt"), "alice: EnslaveSubtree(alice)")

    assert snapshot(sb, "alice", "bob") == before, "a refused call changed something"


def test_refusal_names(daemon):
    """auth_admin without interactive authorization allowed: InteractiveAuthorizationRequired,
    so a client knows that asking again with an agent could work; with it allowed but no
    agent to ask: AccessDenied. Root-only methods: AccessDenied."""
    sb = daemon
    r = call_as(sb, "alice", "CreateNamespace", "s", "bob", interactive=False)
    assert r.get("error") == E_INTERACTIVE_AUTHORIZATION_REQUIRED, r
    assert "org.example.NSManager.manage" in r["message"], r
    r = call_as(sb, "alice", "CreateNamespace", "s", "bob", interactive=True)
    assert r.get("error") == E_ACCESS_DENIED, r
    r = call_as(sb, "alice", "OpenSession", "ss", "alice", "s1", interactive=True)
    assert r.get("error") == E_ACCESS_DENIED, r
    assert "root" in r["message"], r


def test_root_only_methods_refuse_everybody_else(daemon, manager):
    """OpenSession, CloseSession and OpenMountNamespace are the PAM module's and root's: alice
    may not open or close a session (hers or bob's) nor take a namespace's fd, even with
    interaction allowed, and the refused calls change no session."""
    held = [open_session(manager, "alice", "s1"), open_session(manager, "bob", "s1")]
    for method, signature, args in (("CloseSession", "ss", ("alice", "s1")),
                                    ("CloseSession", "ss", ("bob", "s1")),
                                    ("OpenSession", "ss", ("alice", "s2")),
                                    ("OpenMountNamespace", "s", ("alice",)),
                                    ("OpenMountNamespace", "s", ("bob",))):
        r = call_as(daemon, "alice", method, signature, *args, interactive=True)
        assert r.get("error") == E_ACCESS_DENIED, f"alice: {method}{args}: {r}"
        assert "only available to root" in r["message"], r
    for user in ("alice", "bob"):
        sessions = daemon.properties(manager.GetNamespace(user))["Sessions"]
        assert list(sessions) == ["s1"], f"a refused call changed {user}'s sessions: {list(sessions)}"
    for fd in held:
        os.close(fd)


def test_unprivileged_callers(daemon):
    """Read-only calls are open to everyone; OpenMountNamespace is for root only."""
    create(daemon, "alice")
    bc = ["busctl", "--system", "call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE]
    r = daemon.run_as("bob", bc + ["ListNamespaces"])
    assert r.returncode == 0 and "alice" in r.stdout, r.stderr
    r = daemon.run_as("bob", ["busctl", "--system", "get-property", BUS_NAME, ns_path("alice"),
                              NAMESPACE_IFACE, "Name"])
    assert r.returncode == 0 and '"alice"' in r.stdout, r.stderr
    r = daemon.run_as("alice", bc + ["OpenMountNamespace", "s", "alice"])
    assert r.returncode != 0
    assert "Access denied" in r.stderr or "AccessDenied" in r.stderr or "ermission" in r.stderr, r.stderr


def test_manage_own_rule(daemon, polkit_rules):
    """A rule granting manage-own to alice lets her enslave her own /mnt, but not bob's."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    sb.manager().CreateNamespace("bob")
    assert view_propagation(sb, "alice", "/mnt") == "shared"

    polkit_rules("50-alice-own", """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice")
                return polkit.Result.YES;
});
""")
    assert_ok(call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", "/mnt"), "alice: EnslaveSubtree(alice, /mnt)")
    assert "slave" in view_propagation(sb, "alice", "/mnt")

    assert_refused(call_as(sb, "alice", "EnslaveSubtree", "ss", "bob", "/mnt"), "alice: EnslaveSubtree(bob, /mnt)")
    assert view_propagation(sb, "bob", "/mnt") == "shared"
    # Her own namespace, yes; the host or creating namespaces is still manage.
    assert_refused(call_as(sb, "alice", "ShareSubtree", "ss", "", "/mnt"), "alice: ShareSubtree(host)")
    assert_refused(call_as(sb, "alice", "CreateNamespace", "s", "carol"), "alice: CreateNamespace(carol)")

    # Undo, as herself: her /mnt rejoins the host's peer group.
    assert_ok(call_as(sb, "alice", "ShareSubtree", "ss", "alice", "/mnt"), "alice: ShareSubtree(alice, /mnt)")
    assert view_propagation(sb, "alice", "/mnt") == "shared"


def test_group_rule_manage(daemon, polkit_rules):
    """A rule granting manage to group nsadmin lets carol (a member) create and remove
    bob's namespace; dave (not a member) is still refused."""
    sb = daemon
    polkit_rules("50-nsadmin", """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage" && subject.isInGroup("nsadmin"))
                return polkit.Result.YES;
});
""")
    assert_refused(call_as(sb, "dave", "CreateNamespace", "s", "bob"), "dave: CreateNamespace(bob)")
    assert not sb.manager().ListNamespaces()

    path = assert_ok(call_as(sb, "carol", "CreateNamespace", "s", "bob"), "carol: CreateNamespace(bob)")[0]
    assert path == ns_path("bob")
    assert str(sb.manager().GetNamespace("bob")) == ns_path("bob")
    assert_ok(call_as(sb, "carol", "ShareSubtree", "ss", "", "/mnt"), "carol: ShareSubtree(host, /mnt)")

    assert_refused(call_as(sb, "dave", "RemoveNamespace", "s", "bob"), "dave: RemoveNamespace(bob)")
    assert_ok(call_as(sb, "carol", "RemoveNamespace", "s", "bob"), "carol: RemoveNamespace(bob)")
    assert not sb.manager().ListNamespaces()
    # manage does not make her root: root-only methods stay root-only.
    assert_refused(call_as(sb, "carol", "OpenMountNamespace", "s", "carol"), "carol: OpenMountNamespace")


def test_rules_see_details(daemon, polkit_rules):
    """Rules get the method's details: here alice may manage dave's namespace and no
    other (action.lookup("user"))."""
    sb = daemon
    polkit_rules("50-alice-dave", """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage" && subject.user == "alice" &&
            action.lookup("user") == "dave")
                return polkit.Result.YES;
});
""")
    assert_ok(call_as(sb, "alice", "CreateNamespace", "s", "dave"), "alice: CreateNamespace(dave)")
    assert_refused(call_as(sb, "alice", "CreateNamespace", "s", "bob"), "alice: CreateNamespace(bob)")
    assert sorted(str(u) for u, *_ in sb.manager().ListNamespaces()) == ["dave"]


def test_read_only_calls_open_to_everyone(daemon, polkit_rules):
    """Get*, List* and properties work for any user, even when polkit says no to
    everything (they never ask it)."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    polkit_rules("10-deny-all", """
polkit.addRule(function(action, subject) {
        if (action.id.indexOf("org.example.NSManager.") == 0)
                return polkit.Result.NO;
});
""")
    for user in ("bob", "dave", "alice"):
        r = assert_ok(call_as(sb, user, "ListNamespaces"), f"{user}: ListNamespaces")[0]
        assert [x[0] for x in r] == ["alice"]
        assert assert_ok(call_as(sb, user, "GetNamespace", "s", "alice"), f"{user}: GetNamespace")[0] == ns_path("alice")
        assert assert_ok(call_as(sb, user, "GetNamespaceByUID", "u", 2001), f"{user}: GetNamespaceByUID")[0] \
            == ns_path("alice")
        mounts = assert_ok(call_as(sb, user, "GetMounts", "s", "alice"), f"{user}: GetMounts(alice)")[0]
        assert any(m[4] == "/mnt" for m in mounts), mounts
        assert assert_ok(call_as(sb, user, "GetMounts", "s", ""), f"{user}: GetMounts(host)")[0]
        props = assert_ok(call_as(sb, user, "GetAll", "s", MANAGER_IFACE, iface=PROPERTIES_IFACE),
                          f"{user}: Manager properties")[0]
        assert props["SharedSubtrees"] == ["/mnt"], props
        props = assert_ok(call_as(sb, user, "GetAll", "s", NAMESPACE_IFACE, path=ns_path("alice"),
                                  iface=PROPERTIES_IFACE), f"{user}: Namespace properties")[0]
        assert props["Name"] == "alice" and props["UID"] == 2001, props
        assert assert_ok(call_as(sb, user, "GetMounts", path=ns_path("alice"), iface=NAMESPACE_IFACE),
                         f"{user}: Namespace.GetMounts")[0]
    # ... while the deny rule is indeed in force.
    assert_refused(call_as(sb, "alice", "EnslaveSubtree", "ss", "alice", "/mnt"), "alice under deny-all")


def test_polkit_does_not_block_others(daemon, polkit_rules):
    """While polkit thinks about one caller (a rule that takes 3 s), the daemon keeps
    answering everyone else: read-only calls and root's calls come back at once, and
    the waiting call succeeds afterwards."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    marker = sb.instance / "polkit-thinking"
    os.chmod(sb.instance, 0o777)   # polkitd runs as user polkitd
    polkit_rules("50-slow", f"""
polkit.addRule(function(action, subject) {{
        if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice") {{
                polkit.spawn(["/bin/sh", "-c", "touch {marker}; sleep 3"]);
                return polkit.Result.YES;
        }}
}});
""")
    slow = subprocess.Popen(setpriv_argv("alice") + client_argv("EnslaveSubtree", "ss", ["alice", "/mnt"]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=sb.user_env("alice"))
    try:
        wait_for_slow_rule(slow, marker)

        started = time.monotonic()
        assert [str(x[0]) for x in sb.manager().ListNamespaces()] == ["alice"]
        assert assert_ok(call_as(sb, "bob", "GetMounts", "s", "alice"), "bob: GetMounts while polkit thinks")
        assert_ok(call_as(sb, "root", "CreateNamespace", "s", "bob"), "root: CreateNamespace while polkit thinks")
        elapsed = time.monotonic() - started
        assert slow.poll() is None, "alice's call was answered before polkit had"
        assert elapsed < timeout(2.5), f"others waited {elapsed:.1f}s behind alice's polkit check"

        out, err = slow.communicate(timeout=timeout(30))
        result = json.loads(out)
        assert_ok(result, "alice: EnslaveSubtree(alice) after the slow rule")
        assert "slave" in view_propagation(sb, "alice", "/mnt")
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()


# 201 calls of one uid: above the default RateLimitBurst=, which every call that asks polkit is charged to.
@pytest.mark.daemon_config(RateLimitBurst="1000")
def test_a_burst_of_checks_beyond_the_bus_limit(daemon, polkit_rules):
    """200 calls at once, each needing polkit: dbus-daemon lets a connection wait for at most
    128 replies (max_replies_per_connection on the system bus) and refuses its calls beyond,
    which would deny callers for the bus's sake. The daemon keeps fewer questions in flight
    and queues the rest: every caller gets polkit's own answer."""
    sb = daemon
    polkit_rules("50-alice-manage", """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage" && subject.user == "alice")
                return polkit.Result.YES;
});
""")
    burst = build_dir() / "bench" / "nsm-burst"
    assert burst.exists(), f"{burst} is not built"
    # each call a connection of its own (as alice: 200 of her connections, under 256 per uid)
    users = ["bob", "carol", "dave"] * 67
    p = subprocess.run(setpriv_argv("alice") + [str(burst), "--concurrency", "200", "CreateNamespace"],
                       input="\n".join(users) + "\n", capture_output=True, text=True, check=True,
                       timeout=timeout(120))
    results = collections.Counter(line.split()[3] for line in p.stdout.splitlines())
    assert results == {"ok": len(users)}, f"not every call was authorized: {dict(results)}"


def test_polkit_unavailable(daemon, sandbox):
    """Without polkitd on the bus (and none to activate), unprivileged callers get
    AccessDenied saying so; root still works."""
    sb = daemon
    empty = sb.instance / "no-services"
    empty.mkdir()
    services = "/usr/share/dbus-1/system-services"
    sandbox.stop_polkit()
    sys_mount(str(empty), services, None, MS_BIND)
    try:
        sb.bus().call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "ReloadConfig", "", ())
        r = call_as(sb, "alice", "CreateNamespace", "s", "bob")
        assert r.get("error") == E_ACCESS_DENIED, r
        assert "polkit is unavailable" in r["message"], r
        assert not sb.manager().ListNamespaces()

        # Read-only calls and root do not need polkit.
        assert_ok(call_as(sb, "alice", "ListNamespaces"), "alice: ListNamespaces without polkit")
        assert_ok(call_as(sb, "root", "CreateNamespace", "s", "bob"), "root: CreateNamespace without polkit")
    finally:
        sys_umount(services)
        sb.bus().call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "ReloadConfig", "", ())
        sandbox.start_polkit()


def test_shutdown_with_query_in_flight(daemon, polkit_rules):
    """SIGTERM while polkit is still thinking about a call: the daemon drops the pending
    query (polkit_registry_free) and exits cleanly; the caller gets an error, not a hang.
    Under an ASan build (tools/test) this also checks the registry for leaks and
    use-after-free, after a mix of answered, refused and multi-step checks."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    sb.manager().CreateNamespace("bob")
    marker = sb.instance / "polkit-thinking"
    os.chmod(sb.instance, 0o777)
    polkit_rules("50-slow", f"""
polkit.addRule(function(action, subject) {{
        if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice") {{
                polkit.spawn(["/bin/sh", "-c", "touch {marker}; sleep 3"]);
                return polkit.Result.YES;
        }}
}});
""")
    assert_refused(call_as(sb, "bob", "EnslaveSubtree", "ss", "alice", "/mnt"), "bob: EnslaveSubtree(alice)")
    assert_refused(call_as(sb, "bob", "CreateNamespace", "s", "carol"), "bob: CreateNamespace(carol)")

    slow = subprocess.Popen(setpriv_argv("alice") + client_argv("EnslaveSubtree", "ss", ["alice", "/mnt"]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=sb.user_env("alice"))
    try:
        wait_for_slow_rule(slow, marker)
        for user in ("bob", "alice"):
            sb.manager().RemoveNamespace(user)
        status = sb.stop_daemon()
        out, _ = slow.communicate(timeout=timeout(30))
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.wait()
    # Let polkitd finish the rule, so that the rule's removal does not orphan its sleep.
    wait_for_no_process_mentioning(str(marker))
    assert status == 0, f"nsmanagerd exited with {status}:\n{sb.daemon_log_text()}"
    assert "Sanitizer" not in sb.daemon_log_text(), sb.daemon_log_text()
    result = json.loads(out)
    assert "error" in result, f"alice's call succeeded after the daemon stopped: {result}"
