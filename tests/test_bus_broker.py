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
def broker(instance):
    """dbus-broker-launch on BROKER_SOCKET, and nsmanagerd on that bus; yields the Sandbox."""
    sb = instance
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
        sb.write_config()
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
