# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shipped bus policy on Debian 12's other bus, dbus-broker.

The policy refuses every message with fds to org.example.NSManager from anybody but root
(`<deny send_destination="org.example.NSManager" min_fds="1"/>`, docs/security.md). A bus
whose parser dropped the attribute would read a plain deny of everything sent to the daemon,
and users could no longer call it at all. So this runs dbus-broker-launch (socket-activated on
a socket of its own, with Debian's system.conf and the sandbox's system.d, the project's
policy in it) and a daemon connected to it, and shows: users' calls without fds are
answered by the daemon; users' messages with fds are refused by the bus, a refused method or
an Attach alike; root's with fds reach the daemon. The sandbox's dbus-daemon (1.14) does the
same in every other test (tests/test_attach.py test_users_send_no_fds)."""

import collections
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers import extra_users
from sandbox import daemon_binary, timeout

BROKER_DIR = Path("/run/nsm-test-broker")
BROKER_SOCKET = BROKER_DIR / "socket"
BROKER_ADDRESS = f"unix:path={BROKER_SOCKET}"

# One call on the broker's bus: METHOD with an fd ("fd") or without ("plain"), printed as JSON:
# {"ok": …} or {"error": name, "message": …}.
CALL = r"""
import json, os, sys
import dbus, dbus.lowlevel
method, how = sys.argv[1:3]
msg = dbus.lowlevel.MethodCallMessage("org.example.NSManager", "/org/example/NSManager",
                                      "org.example.NSManager.Manager", method)
null = os.open("/dev/null", os.O_RDWR)
if method == "ListNamespaces" and how == "fd":
    msg.append(dbus.types.UnixFd(null), signature="h")
elif method == "Attach":
    status_r, status_w = os.pipe()
    msg.append("nobody-has-one", ["true"], [], "/", *[dbus.types.UnixFd(null)] * 3, dbus.types.UnixFd(status_w),
               signature="sasasshhhh")
elif method == "OpenAttach":
    msg.append("nobody-has-one", ["true"], [], "/", dbus.UInt64(0), signature="sasasst")
try:
    reply = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"]).send_message_with_reply_and_block(msg, 20)
    print(json.dumps({"ok": repr(reply.get_args_list())}))
except dbus.exceptions.DBusException as e:
    print(json.dumps({"error": e.get_dbus_name(), "message": e.get_dbus_message()}))
"""


JOURNAL_SOCKET = Path("/run/systemd/journal/socket")


def journal_stand_in(log):
    """The sandbox's /run has no journald, and dbus-broker-launch logs there or not at all:
    a socket in its place (the sandbox's tmpfs), whose messages go to the broker's log.
    Returns the socket and the thread that reads it (joined before the log is closed)."""
    JOURNAL_SOCKET.parent.mkdir(parents=True, exist_ok=True)
    JOURNAL_SOCKET.unlink(missing_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(JOURNAL_SOCKET))

    def drain():
        while True:
            try:
                data = s.recv(1 << 20)
            except OSError:
                return
            if not data:
                return
            for line in data.decode(errors="replace").splitlines():
                if line.startswith("MESSAGE="):
                    log.write(f"journal: {line[8:]}\n")
                    log.flush()
    t = threading.Thread(target=drain, daemon=True)
    t.start()
    return s, t


def alive(pid):
    """Running, not a zombie (whoever reaps orphans here may take its time)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def broker(request, instance):
    """dbus-broker-launch on BROKER_SOCKET, and nsmanagerd on that bus (with the test's
    daemon_config settings); yields the Sandbox."""
    sb = instance
    marker = request.node.get_closest_marker("daemon_config")
    launcher = shutil.which("dbus-broker-launch")
    assert launcher, "dbus-broker-launch is missing: tools/deps installs dbus-broker"
    BROKER_DIR.mkdir(exist_ok=True)
    BROKER_SOCKET.unlink(missing_ok=True)
    log = open(sb.instance / "broker.log", "w")
    journal, drainer = journal_stand_in(log)
    bus = subprocess.Popen(["systemd-socket-activate", "-l", str(BROKER_SOCKET), launcher, "--scope", "system",
                            "--config-file", "/usr/share/dbus-1/system.conf"], stdout=log, stderr=subprocess.STDOUT)
    daemon = None
    try:
        deadline = time.monotonic() + timeout(10)
        while not BROKER_SOCKET.exists():
            assert bus.poll() is None and time.monotonic() < deadline, "the broker's socket did not appear"
            time.sleep(0.05)
        os.chmod(BROKER_SOCKET, 0o666)
        sb.write_config(**(marker.kwargs if marker else {}))
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=BROKER_ADDRESS)
        daemon = subprocess.Popen([str(daemon_binary()), f"--config={sb.config_file}"], env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
        while True:
            p = subprocess.run(["busctl", f"--address={BROKER_ADDRESS}", "status", "org.example.NSManager"],
                               capture_output=True)
            if p.returncode == 0:
                break
            assert daemon.poll() is None, (sb.instance / "broker.log").read_text()
            assert time.monotonic() < deadline, f"nsmanagerd did not take its name on the broker's bus: " \
                                                f"{(sb.instance / 'broker.log').read_text()}"
            time.sleep(0.1)
        yield sb
    finally:
        # The launcher's broker goes with it; wait for that too, it holds the sandbox's /run.
        children = []
        if bus.poll() is None:
            children = [int(c) for c in Path(f"/proc/{bus.pid}/task/{bus.pid}/children").read_text().split()]
        for p in (daemon, bus):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout(10))
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for pid in children:
            deadline = time.monotonic() + timeout(10)
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        journal.shutdown(socket.SHUT_RDWR)     # wakes the thread, which holds it
        drainer.join(timeout(10))               # it may be writing a last line to the log
        journal.close()
        JOURNAL_SOCKET.unlink(missing_ok=True)
        log.close()
        BROKER_SOCKET.unlink(missing_ok=True)


def call(sb, user, method, how="plain"):
    env = {"DBUS_SYSTEM_BUS_ADDRESS": BROKER_ADDRESS}
    argv = ["/usr/bin/python3", "-c", CALL, method, how]
    p = sb.run(argv, env=env, wait=60) if user == "root" else sb.run_as(user, argv, env=env, wait=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_the_policy_on_dbus_broker(broker):
    sb = broker
    version = subprocess.run(["dbus-broker", "--version"], capture_output=True, text=True).stdout.split()
    print(f"dbus-broker {version[1] if len(version) > 1 else version}")

    # Without fds, a user's calls reach the daemon: its answers, its errors (a user NSS does not know:
    # NoSuchUser, whoever asks).
    result = call(sb, "alice", "ListNamespaces")
    assert result == {"ok": "[dbus.Array([], signature=dbus.Signature('(suso)'))]"}, result
    result = call(sb, "alice", "OpenAttach")
    assert result.get("error") == "org.example.NSManager.Error.NoSuchUser", result

    # With fds, the broker refuses a user's message, whatever it is.
    for method in ("ListNamespaces", "Attach"):
        result = call(sb, "alice", method, "fd")
        assert result.get("error") == "org.freedesktop.DBus.Error.AccessDenied", (method, result)
        # The broker's words, not the daemon's (which would name OpenAttach, or the arguments).
        assert "OpenAttach" not in result["message"] and "Invalid arguments" not in result["message"], result
        print(f"{method} with an fd: {result['message']}")

    # Root's fds reach the daemon, which answers itself.
    result = call(sb, "root", "ListNamespaces", "fd")
    assert result.get("error") == "org.freedesktop.DBus.Error.InvalidArgs", result
    result = call(sb, "root", "Attach", "fd")
    assert result.get("error") == "org.example.NSManager.Error.NoSuchUser", result


# 32 subscriptions from as many bus names of one uid, held until stdin closes; prints the
# outcomes as JSON.
SUBSCRIBER = r"""
import json, os, sys, dbus, dbus.bus
conns, out = [], []
for i in range(32):
    c = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    conns.append(c)
    try:
        dbus.Interface(c.get_object("org.example.NSManager", "/org/example/NSManager"),
                       "org.example.NSManager.Manager").Subscribe()
        out.append("ok")
    except dbus.exceptions.DBusException as e:
        out.append(e.get_dbus_name())
print(json.dumps(out), flush=True)
sys.stdin.read()
"""


def broker_match_rules():
    """The daemon's match rules as dbus-broker counts them: it has no GetConnectionStats, its
    GetStats counts each connection's ("PeerAccounting")."""
    import dbus.bus
    bus = dbus.bus.BusConnection(BROKER_ADDRESS)
    try:
        owner = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                  "GetNameOwner", "s", ("org.example.NSManager",))
        stats = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Debug.Stats",
                                  "GetStats", "", ())
        (matches,) = [int(counts["Matches"]) for name, _creds, counts in stats["org.bus1.DBus.Debug.Stats.PeerAccounting"]
                      if name == owner]
        return matches
    finally:
        bus.close()


def test_forty_users_subscribing_on_dbus_broker(broker):
    """tests/test_mount_events.py's 40 uids x 32 subscriptions, on dbus-broker: the daemon
    stays, answers, and its match rules do not grow (they grew by one per subscriber name;
    dbus-broker allows root's connections 16,384 together)."""
    sb = broker
    before = broker_match_rules()
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=BROKER_ADDRESS)
    subscribers = []
    with extra_users(sb, 40) as uids:
        try:
            for uid in uids:
                subscribers.append(subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                                                     "/usr/bin/python3", "-c", SUBSCRIBER],
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env))
            for uid, p in zip(uids, subscribers):
                results = json.loads(p.stdout.readline())
                assert results == ["ok"] * 32, f"uid {uid}: {results}"
            assert broker_match_rules() == before
            result = call(sb, "alice", "ListNamespaces")
            assert "ok" in result, result
        finally:
            for p in subscribers:
                p.stdin.close()
                p.wait(timeout(10))


def broker_peer_counts():
    """dbus-broker's accounting of the daemon's connection (GetStats' PeerAccounting): its
    matches, replies owed and the like, by name."""
    import dbus.bus
    bus = dbus.bus.BusConnection(BROKER_ADDRESS)
    try:
        owner = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                  "GetNameOwner", "s", ("org.example.NSManager",))
        stats = bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Debug.Stats",
                                  "GetStats", "", ())
        (counts,) = [{str(k): int(v) for k, v in counts.items()}
                     for name, _creds, counts in stats["org.bus1.DBus.Debug.Stats.PeerAccounting"] if name == owner]
        return counts
    finally:
        bus.close()


def broker_call_as(sb, user, method, signature="", *args, interactive=False):
    """caller.call_as on the broker's bus."""
    from caller import client_argv, parse_result
    argv = client_argv(method, signature, args, interactive, call_timeout=25)
    env = {"DBUS_SYSTEM_BUS_ADDRESS": BROKER_ADDRESS}
    return parse_result(sb.run(argv, env=env, wait=90) if user == "root" else sb.run_as(user, argv, env=env, wait=90))


@pytest.fixture
def broker_polkit(broker):
    """A polkitd of its own on the broker's bus (the sandbox's is on its dbus-daemon), with
    tests/test_budgets.py's rules. Yields the Sandbox."""
    from test_budgets import ANSWER_RULES
    sb = broker
    rules = sb.polkit_rules_dir / "50-budgets.rules"
    rules.write_text(ANSWER_RULES)
    os.chmod(rules, 0o644)
    p = sb._spawn("polkitd-broker", ["/usr/lib/polkit-1/polkitd", "--no-debug"],
                  env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=BROKER_ADDRESS))
    try:
        deadline = time.monotonic() + timeout(20)
        while subprocess.run(["busctl", f"--address={BROKER_ADDRESS}", "status", "org.freedesktop.PolicyKit1"],
                             capture_output=True).returncode != 0:
            assert p.poll() is None and time.monotonic() < deadline, sb.log_text("polkitd-broker")
            time.sleep(0.1)
        yield sb
    finally:
        sb._stop_proc("polkitd-broker")
        rules.unlink(missing_ok=True)


@pytest.mark.daemon_config(PolkitTimeoutSec="5s", PolkitQuestionsPerUID="4")
def test_budgets_on_dbus_broker(broker_polkit):
    """tests/test_budgets.py's stuck agents and flood, on dbus-broker (shorter): 40 uids, each
    with an authentication agent that never answers, send 6 interactive OpenAttach('alice', …)
    each; alice's and root's calls answer, each uid gets 2 refusals naming
    PolkitQuestionsPerUID= and TimedOut for the rest; after twice the deadline 100 of carol's
    questions at once find room. Then one uid floods every method for 10 s from 4 connections
    while alice's and carol's calls answer. The daemon stays on the bus throughout with the
    same number of matches (GetStats), and owes the bus no more replies than before."""
    from caller import assert_ok
    from test_budgets import FLOOD, E_TIMED_OUT
    from helpers import E_LIMIT_EXCEEDED
    from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, build_dir
    sb = broker_polkit
    assert_ok(broker_call_as(sb, "root", "CreateNamespace", "s", "alice"), "root: CreateNamespace(alice)")
    before = broker_peer_counts()
    print("the daemon's accounting before:", before)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "DBUS_SYSTEM_BUS_ADDRESS": BROKER_ADDRESS}

    def as_uid(uid):
        return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]

    agent = build_dir() / "tests" / "stuck-agent"
    with extra_users(sb, 41) as uids:
        attackers = []
        started = time.monotonic()
        try:
            for uid in uids[:40]:
                attackers.append(subprocess.Popen(as_uid(uid) + [str(agent), "6", "alice"], stdin=subprocess.PIPE,
                                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
            assert_ok(broker_call_as(sb, "alice", "SetLinger", "sb", "alice", True), "alice: SetLinger")
            assert_ok(broker_call_as(sb, "root", "CreateNamespace", "s", "bob"), "root: CreateNamespace(bob)")
            for uid, a in zip(uids, attackers):
                lines = []
                for line in a.stdout:
                    line = line.rstrip("\n")
                    if line == "done":
                        break
                    lines.append(line)
                answers = [x for x in lines if x != "asked"]
                limited = [x for x in answers if x.startswith(E_LIMIT_EXCEEDED)]
                assert len(limited) == 2 and all("PolkitQuestionsPerUID=4" in x for x in limited), (uid, answers)
                assert all(x.startswith(E_TIMED_OUT) for x in answers if x not in limited), (uid, answers)
            time.sleep(max(0.0, started + 10 - time.monotonic()))
            assert_ok(broker_call_as(sb, "carol", "CreateNamespace", "s", "dave", interactive=True),
                      "carol: CreateNamespace(dave), interactive, after the deadline")
            p = subprocess.run(as_uid(2003) + [str(build_dir() / "bench" / "nsm-burst"), "--concurrency", "100",
                                               "CreateNamespace"],
                               input="bob\ndave\n" * 50, capture_output=True, text=True, env=env, timeout=timeout(120))
            results = collections.Counter(line.split()[3] for line in p.stdout.splitlines())
            assert results == {"ok": 100}, \
                f"the daemon had no room for carol's 100 questions: {dict(results)} {p.stderr[-500:]}"
        finally:
            for a in attackers:
                a.stdin.close()
            for a in attackers:
                a.wait(timeout(10))

        floods = [subprocess.Popen(as_uid(uids[40]) + ["/usr/bin/python3", "-c", FLOOD, BUS_NAME, MANAGER_PATH,
                                                       MANAGER_IFACE, "10"],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=env) for _ in range(4)]
        try:
            end = time.monotonic() + 10
            time.sleep(1)
            rounds = 0
            while time.monotonic() < end - 2:
                assert_ok(broker_call_as(sb, "alice", "SetLinger", "sb", "alice", True), "alice: SetLinger, flood")
                assert_ok(broker_call_as(sb, "carol", "GetMounts", "s", "alice"), "carol: GetMounts, flood")
                rounds += 1
            outputs = [p.communicate(timeout=timeout(60)) for p in floods]
        finally:
            for p in floods:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        assert rounds >= 2, "the flood ended before the others' calls"
        for out, err in outputs:
            assert "noreply" not in out and "calls" in out, (out, err[-500:])
        print("flood:", sum(int(out.split()[-1]) for out, _ in outputs), "calls;", rounds,
              "rounds of the others' calls")
    after = broker_peer_counts()
    print("the daemon's accounting after:", after)
    # ReplyObjects: the replies the bus waits for on the daemon's calls (the withdrawn
    # questions' included, until polkitd answered them).
    assert (after["Matches"], after["ReplyObjects"]) == (before["Matches"], before["ReplyObjects"]), (before, after)
    for user in ("alice", "bob", "dave"):     # a stopped daemon leaves the views pinned
        assert_ok(broker_call_as(sb, "root", "RemoveNamespace", "s", user), f"root: RemoveNamespace({user})")
