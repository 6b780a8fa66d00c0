# SPDX-License-Identifier: LGPL-2.1-or-later
"""Shared budgets (docs/security.md, "Shared budgets"): no user can use up what every user
shares — polkit's attention, the daemon's replies the bus counts, the journal.

Callers with uids of their own come from setpriv, as any local account could (dbus-daemon
refuses a connection whose uid has no passwd entry: the `accounts` fixture adds them to the
sandbox's copy of /etc/passwd and /etc/group for the test).
The sandbox's dbus-daemon runs with its stock system bus limits (128 pending replies per
connection)."""

import collections
import os
import subprocess
import threading
import time

import pytest

from caller import assert_ok, call_as
from helpers import E_LIMIT_EXCEEDED, wait_until
from sandbox import BUS_NAME, SYSTEM_BUS_ADDRESS, build_dir, timeout

E_TIMED_OUT = "org.example.NSManager.Error.TimedOut"
DEADLINE = 5                     # PolkitTimeoutSec= of the test
ATTACKER_UID = 30001


@pytest.fixture
def accounts(sandbox):
    """Accounts atk30001… for the attackers' uids, for the length of the test."""
    saved = {f: open(f).read() for f in ("/etc/passwd", "/etc/group")}
    uids = list(range(ATTACKER_UID, ATTACKER_UID + 40)) + [ATTACKER_UID + 100]
    with open("/etc/passwd", "a") as f:
        f.writelines(f"atk{u}:x:{u}:{u}:attacker:/nonexistent:/usr/sbin/nologin\n" for u in uids)
    with open("/etc/group", "a") as f:
        f.writelines(f"atk{u}:x:{u}:\n" for u in uids)
    yield uids
    for f, text in saved.items():
        with open(f, "w") as out:
            out.write(text)


def as_uid(uid):
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


def uid_env():
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "DBUS_SYSTEM_BUS_ADDRESS": SYSTEM_BUS_ADDRESS}


class Output:
    """A process's stdout lines, read as they come."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))


ANSWER_RULES = """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice")
                return polkit.Result.YES;
        if (action.id == "org.example.NSManager.manage" && subject.user == "carol")
                return polkit.Result.YES;
});
"""


@pytest.mark.daemon_config(PolkitTimeoutSec=f"{DEADLINE}s", PolkitQuestionsPerUID="4")
def test_stuck_agents_do_not_stall_polkit(accounts, daemon, polkit_rules):
    """40 uids, each with an authentication agent that never answers, send 6 interactive
    OpenAttach('alice', …) each: 40 × 4 questions would be more than the bus lets the daemon
    wait for. Each uid gets 2 refusals naming PolkitQuestionsPerUID=, the rest TimedOut at the
    deadline; meanwhile alice's and root's calls answer. The agents stay: after the deadline
    the questions the daemon withdrew (CancelCheckAuthorization) are answered by polkitd and
    no longer held, so carol's interactive call finds a slot, and 100 of her questions at once
    find room on the daemon's connection."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    polkit_rules("50-budgets", ANSWER_RULES)
    agent = build_dir() / "tests" / "stuck-agent"
    assert agent.exists(), f"{agent} is not built"

    started = time.monotonic()
    attackers = []
    try:
        for i in range(40):
            p = subprocess.Popen(as_uid(ATTACKER_UID + i) + [str(agent), "6", "alice"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=uid_env())
            attackers.append(Output(p))
        wait_until(lambda: sum("asked" in a.lines for a in attackers) >= 8, "polkitd to ask the stuck agents",
                   timeout(20), diag=lambda: [a.lines[:3] for a in attackers[:2]] + [sb.log_text("polkitd")[-1500:]])

        # Others answer while the agents hold polkit's questions.
        assert_ok(call_as(sb, "alice", "SetLinger", "sb", "alice", True, call_timeout=25), "alice: SetLinger")
        assert_ok(call_as(sb, "root", "CreateNamespace", "s", "bob", call_timeout=25), "root: CreateNamespace(bob)")

        wait_until(lambda: all("done" in a.lines for a in attackers), "every attacker's calls to be answered",
                   timeout(3 * DEADLINE), diag=lambda: [a.lines for a in attackers if "done" not in a.lines][:2])
        for a in attackers:
            answers = [line for line in a.lines if line not in ("asked", "done")]
            limited = [x for x in answers if x.startswith(E_LIMIT_EXCEEDED)]
            assert len(limited) == 2, answers
            assert all("PolkitQuestionsPerUID=4" in x and "authorizations waiting" in x for x in limited), limited
            assert all(x.startswith(E_TIMED_OUT) and "PolkitTimeoutSec=" in x for x in answers if x not in limited), \
                answers

        # The agents are still there, still asked unless the daemon withdrew its questions.
        time.sleep(max(0.0, started + 2 * DEADLINE - time.monotonic()))
        assert_ok(call_as(sb, "carol", "CreateNamespace", "s", "dave", interactive=True, call_timeout=25),
                  "carol: CreateNamespace(dave), interactive, after the deadline")
        # dbus-daemon's GetConnectionStats does not count a connection's pending replies, so this
        # asks for room: 100 questions at once (64 in flight, the rest in turn) go through only if
        # fewer than 128 - 64 withdrawn ones are still counted against the daemon's connection.
        burst = build_dir() / "bench" / "nsm-burst"
        p = subprocess.run(as_uid(2003) + [str(burst), "--concurrency", "100", "CreateNamespace"],
                           input="bob\ndave\n" * 50, capture_output=True, text=True, check=True,
                           timeout=timeout(120))
        results = collections.Counter(line.split()[3] for line in p.stdout.splitlines())
        assert results == {"ok": 100}, f"the daemon had no room for carol's 100 questions: {dict(results)}"
    finally:
        for a in attackers:
            a.proc.stdin.close()
        for a in attackers:
            try:
                a.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                a.proc.kill()
                a.proc.wait()


FLOOD = r"""
import sys, time
import dbus, dbus.lowlevel
dest, path, iface, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
calls = [
    ("CreateNamespace", "s", ["alice"]), ("RemoveNamespace", "s", ["alice"]), ("SetLinger", "sb", ["alice", True]),
    ("ReloadConfig", "", []), ("Eject", "st", ["/mnt/x", 0]), ("BindMount", "ssst", ["alice", "/etc", "/mnt", 0]),
    ("Unmount", "sst", ["alice", "/mnt", 0]), ("ShareSubtree", "ss", ["", "/mnt"]),
    ("EnslaveSubtree", "ss", ["alice", "/mnt"]), ("SetPropagation", "ssst", ["alice", "/mnt", "private", 0]),
    ("OpenAttach", "sasasst", ["alice", ["true"], [], "/", 0]), ("OpenSession", "ss", ["alice", "s9"]),
    ("CloseSession", "ss", ["alice", "s9"]), ("OpenMountNamespace", "s", ["alice"]), ("GetMounts", "s", ["alice"]),
    ("Can", "ss", ["BindMount", "alice"]),
]
bus = dbus.SystemBus()
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    method, sig, args = calls[n % len(calls)]
    msg = dbus.lowlevel.MethodCallMessage(dest, path, iface, method)
    if sig:
        msg.append(*args, signature=sig)
    try:
        bus.send_message_with_reply_and_block(msg, 25)
    except dbus.exceptions.DBusException as e:
        if e.get_dbus_name() == "org.freedesktop.DBus.Error.NoReply":
            print("noreply", method, flush=True)
    n += 1
print("calls", n, flush=True)
"""


@pytest.mark.daemon_config(AuditRateLimitBurst="20", AuditRateLimitIntervalSec="1h", AuditRateLimitBurstAll="100")
def test_a_flood_leaves_others_and_the_journal_usable(accounts, daemon, polkit_rules):
    """One uid floods every method at full speed (4 connections, 20 s): alice's and root's
    calls answer throughout; the flood leaves at most AuditRateLimitBurst= records of that uid
    and one summary of what was not recorded, and root's action in the middle is recorded."""
    sb = daemon
    from sandbox import MANAGER_IFACE, MANAGER_PATH
    sb.manager().CreateNamespace("alice")
    polkit_rules("50-budgets", ANSWER_RULES)
    flooder = ATTACKER_UID + 100
    seconds = 20
    floods = [subprocess.Popen(as_uid(flooder) + ["/usr/bin/python3", "-c", FLOOD, BUS_NAME, MANAGER_PATH,
                                                  MANAGER_IFACE, str(seconds)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=uid_env()) for _ in range(4)]
    try:
        end = time.monotonic() + seconds
        time.sleep(2)
        rounds = 0
        while time.monotonic() < end - 3:
            assert_ok(call_as(sb, "alice", "SetLinger", "sb", "alice", True, call_timeout=25),
                      "alice: SetLinger during the flood")
            assert_ok(call_as(sb, "carol", "GetMounts", "s", "alice", call_timeout=25), "carol: GetMounts")
            if rounds == 1:
                assert_ok(call_as(sb, "root", "CreateNamespace", "s", "bob", call_timeout=25),
                          "root: CreateNamespace(bob) during the flood")
            rounds += 1
        outputs = [p.communicate(timeout=timeout(60)) for p in floods]
    finally:
        for p in floods:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert rounds >= 2, "the flood ended before the others' calls"
    for out, err in outputs:
        assert "noreply" not in out, out
        assert "calls" in out, err
    print("flood:", sum(int(out.split()[-1]) for out, _ in outputs), "calls;", rounds, "rounds of the others' calls")

    # A summary is due when its interval ends, or when the daemon stops (the views first: a
    # stopped daemon leaves them pinned).
    for user in ("alice", "bob"):
        sb.manager().RemoveNamespace(user)
    assert sb.stop_daemon() == 0, sb.daemon_log_text()
    records = sb.journal_records()
    mine = [r for r in records if r.get("NSM_CALLER_UID") == str(flooder) and "NSM_ACTION" in r]
    summaries = [r for r in records if r.get("NSM_CALLER_UID") == str(flooder) and "NSM_NOT_RECORDED" in r]
    assert len(mine) <= 20, f"{len(mine)} records of the flooding uid"
    assert len(summaries) == 1, summaries
    assert int(summaries[0]["NSM_NOT_RECORDED"]) > 0, summaries
    assert f"of uid {flooder}" in summaries[0]["MESSAGE"] and "not recorded" in summaries[0]["MESSAGE"], summaries
    assert any(r.get("NSM_CALLER_UID") == "0" and r.get("NSM_ACTION") == "CreateNamespace" and r.get("NSM_USER") == "bob"
               for r in records), "root's CreateNamespace(bob) during the flood was not recorded"
    assert any(r.get("NSM_CALLER_USER") == "alice" and r.get("NSM_ACTION") == "SetLinger" for r in records), \
        "alice's calls were not recorded"


def test_a_long_record_keeps_its_result(daemon):
    """A caller's long arguments are cut in the record's message, not its result: the message
    stays under the 2,048 bytes a record's message has and ends with the refusal; the fields
    keep everything."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    long_path = "/mnt/" + "ä" * 1500
    r = call_as(sb, "bob", "BindMount", "ssst", "alice", long_path, long_path, 0)
    assert "error" in r, r
    records = [x for x in sb.journal_records() if x.get("NSM_ACTION") == "BindMount" and x.get("NSM_CALLER_USER") == "bob"]
    assert len(records) == 1, records
    rec = records[0]
    message = rec["MESSAGE"]
    assert len(message.encode()) < 2048, len(message.encode())
    assert "refused: " in message and message.endswith("."), message[-300:]
    assert "…" in message, message
    assert rec["NSM_RESULT"] == r["error"], rec
    assert rec["NSM_PATH"] == long_path and rec["NSM_SOURCE"] == long_path


@pytest.mark.daemon_config(RateLimitBurst="2", RateLimitIntervalSec="1h")
def test_nsctl_names_the_budget(daemon):
    """A call refused for a budget says which, its key and when to try again, in nsctl's
    words too; calls polkit refused were charged (they asked polkit)."""
    from sandbox import nsctl_binary
    sb = daemon
    for _ in range(2):
        p = sb.run_as("bob", [nsctl_binary(), "create", "dave"])
        assert p.returncode != 0 and "LimitExceeded" not in p.stderr and "RateLimitBurst" not in p.stderr, p.stderr
    p = sb.run_as("bob", [nsctl_binary(), "create", "dave"])
    assert p.returncode != 0, p.stdout
    assert "uid 2002 made 2 calls within RateLimitIntervalSec=3600s (RateLimitBurst=2); try again in" in p.stderr, \
        p.stderr


LIST_FLOOD = r"""
import collections, json, sys
from gi.repository import Gio, GLib
dest, path, iface, user = sys.argv[1:5]
bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
loop = GLib.MainLoop()
answers = collections.Counter()
limited = []
in_flight = 0
stopping = False

def send():
    global in_flight
    in_flight += 1
    bus.call(dest, path, iface, "ListProcesses", GLib.Variant("(s)", (user,)), None, Gio.DBusCallFlags.NONE, 60000,
             None, done)

def done(conn, result):
    global in_flight
    in_flight -= 1
    try:
        conn.call_finish(result)
        answers["ok"] += 1
    except GLib.Error as e:
        name = Gio.DBusError.get_remote_error(e) or e.message
        answers[name] += 1
        if name.endswith("LimitExceeded") and len(limited) < 3:
            Gio.DBusError.strip_remote_error(e)
            limited.append(e.message)
    if not stopping:
        send()
    elif in_flight == 0:
        loop.quit()

def stop(*_):
    global stopping
    stopping = True
    return False

GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, stop)     # until the test closes our stdin
for _ in range(100):      # below the bus's 128 pending replies per connection
    send()
print("flooding", flush=True)
loop.run()
print(json.dumps({"answers": answers, "limited": limited}), flush=True)
"""


@pytest.mark.daemon_config(RateLimitBurst="1000000")
def test_a_flood_of_list_processes_leaves_the_loop_to_others(daemon, polkit_rules):
    """ListProcesses walks /proc. bob, with 300 processes in his view, keeps 200 calls of it
    in flight (2 connections), with a rate limit that does not stop him: at most 2 of his
    walks run at once (the rest LimitExceeded, saying so), every call is answered, and
    meanwhile alice's calls, ListProcesses included, answer within their deadline (the walks
    go a few /proc entries per turn of the loop, in turn with the bus)."""
    import json
    from sandbox import MANAGER_IFACE, MANAGER_PATH
    sb = daemon
    manager = sb.manager()
    manager.CreateNamespace("alice")
    manager.CreateNamespace("bob")
    polkit_rules("50-budgets", ANSWER_RULES)
    fd = sb.open_view_fd("bob")
    crowd = subprocess.Popen(["nsenter", f"--mount=/proc/self/fd/{fd}", "--", "/bin/sh", "-c",
                              "for i in $(seq 300); do sleep 600 & done; wait"], pass_fds=(fd,))
    os.close(fd)
    floods = []
    took = []
    try:
        wait_until(lambda: len(assert_ok(call_as(sb, "root", "ListProcesses", "s", "bob"), "root: ListProcesses")[0])
                   > 300, "bob's view to hold his 300 processes", timeout(30))
        floods = [subprocess.Popen(sb._setpriv("bob") + ["/usr/bin/python3", "-c", LIST_FLOOD, BUS_NAME, MANAGER_PATH,
                                                         MANAGER_IFACE, "bob"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=sb.user_env("bob")) for _ in range(2)]
        for p in floods:
            assert p.stdout.readline().strip() == "flooding", p.stderr.read() if p.poll() is not None else ""
        for _ in range(3):
            # A bound that proves "never blocks", not a measure: the calls' own deadline.
            started = time.monotonic()
            listed = assert_ok(call_as(sb, "alice", "ListProcesses", "s", "alice", call_timeout=25),
                               "alice: ListProcesses during the flood")
            assert isinstance(listed[0], list), listed
            assert_ok(call_as(sb, "alice", "SetLinger", "sb", "alice", True, call_timeout=25),
                      "alice: SetLinger during the flood")
            took.append(round(time.monotonic() - started, 1))
        for p in floods:
            p.stdin.close()
        for p in floods:
            p.wait(timeout=timeout(90))
        outputs = [(p.stdout.read(), p.stderr.read()) for p in floods]
    finally:
        for p in floods:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["pkill", "-KILL", "-P", str(crowd.pid)], check=False)   # its sleeps, ours
        crowd.kill()
        crowd.wait()
    answers = collections.Counter()
    limited = []
    for out, err in outputs:
        assert out.strip(), err
        result = json.loads(out.strip().splitlines()[-1])
        answers.update(result["answers"])
        limited += result["limited"]
    print("bob's answers:", dict(answers), "; alice's rounds took (s):", took)
    assert set(answers) <= {"ok", E_LIMIT_EXCEEDED}, answers
    assert answers["ok"] >= 1 and answers[E_LIMIT_EXCEEDED] >= 1, answers
    assert all("2 ListProcesses() calls of UID 2002 are still reading /proc" in x for x in limited), limited
