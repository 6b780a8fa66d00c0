#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fairness under a flood (issue 33): one uid calls every method at full speed from 4
connections (tests/test_budgets.py's flood) for --seconds, while alice (SetLinger, which
polkit allows her) and carol (GetMounts) make one call each per 100 ms, within their rate
limit. Prints their latencies' median and p99, idle and during the flood, in the project's
throwaway sandbox with its stock dbus-daemon and a real polkitd. Absolute times are noisy on
shared machines; the ratio of p99 under the flood to p99 idle is the figure.

Usage: sudo bench/bench_fairness.py [--seconds N]
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from benchlib import sbx  # noqa: E402

# One call every --gap seconds on one connection, for --seconds; prints the latencies (ms) as
# JSON, and the errors.
CLIENT = r"""
import json, sys, time
import dbus, dbus.lowlevel
method, sig, seconds, gap = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
args = json.loads(sys.argv[5])
bus = dbus.SystemBus()
lat, errors = [], []
end = time.monotonic() + seconds
while time.monotonic() < end:
    msg = dbus.lowlevel.MethodCallMessage("org.example.NSManager", "/org/example/NSManager",
                                          "org.example.NSManager.Manager", method)
    msg.append(*args, signature=sig)
    t = time.perf_counter()
    try:
        bus.send_message_with_reply_and_block(msg, 25)
    except dbus.exceptions.DBusException as e:
        errors.append(e.get_dbus_name())
    lat.append((time.perf_counter() - t) * 1000)
    time.sleep(gap)
print(json.dumps({"lat": lat, "errors": errors}))
"""

RULES = """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice")
                return polkit.Result.YES;
});
"""

CLIENTS = [("alice", "SetLinger", "sb", ["alice", True]), ("carol", "GetMounts", "s", ["alice"])]


def run_clients(sb, seconds):
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "DBUS_SYSTEM_BUS_ADDRESS": sbx.SYSTEM_BUS_ADDRESS}
    procs = [subprocess.Popen(sb._setpriv(user) + ["/usr/bin/python3", "-c", CLIENT, method, sig, str(seconds), "0.1",
                                                   json.dumps(args)], stdout=subprocess.PIPE, text=True, env=env)
             for user, method, sig, args in CLIENTS]
    out = {}
    for (user, method, _, _), p in zip(CLIENTS, procs):
        stdout, _ = p.communicate()
        if p.returncode != 0:
            sys.exit(f"{user}'s client failed ({p.returncode})")
        out[f"{user}: {method}"] = json.loads(stdout)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    from test_budgets import FLOOD
    sb = sbx.Sandbox(polkit=True)
    benchlib.add_users(sb, ["flood"])
    sb.setup()
    floods = []
    try:
        sb.start_daemon()
        sb.manager().CreateNamespace("alice")
        sb.set_polkit_rule("50-fairness", RULES)
        run_clients(sb, 2)                      # warm-up: caches, polkitd's first answers
        idle = run_clients(sb, args.seconds)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "DBUS_SYSTEM_BUS_ADDRESS": sbx.SYSTEM_BUS_ADDRESS}
        floods = [subprocess.Popen(sb._setpriv("flood") + ["/usr/bin/python3", "-c", FLOOD, sbx.BUS_NAME,
                                                          sbx.MANAGER_PATH, sbx.MANAGER_IFACE, str(args.seconds + 3)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                   for _ in range(4)]
        time.sleep(1)                           # the flood at full speed first
        flooded = run_clients(sb, args.seconds)
        flood_calls = 0
        for p in floods:
            out, err = p.communicate()
            if "calls" not in out:
                sys.exit(f"a flood process failed: {err[-500:]}")
            flood_calls += int(out.split()[-1])
        print(f"flood: {flood_calls} calls of uid {sb.users['flood'].uid} in {args.seconds + 3:g} s "
              f"({flood_calls / (args.seconds + 3):.0f}/s) from 4 connections")
        print(f"{'caller':<20} {'':<6} {'calls':>6} {'errors':>7} {'median ms':>10} {'p99 ms':>8} {'max ms':>8}")
        for name in idle:
            for label, r in (("idle", idle[name]), ("flood", flooded[name])):
                lat = r["lat"]
                print(f"{name:<20} {label:<6} {len(lat):>6} {len(r['errors']):>7} {benchlib.median(lat):>10.2f} "
                      f"{benchlib.percentile(lat, 99):>8.2f} {max(lat):>8.2f}")
            ratio = benchlib.percentile(flooded[name]["lat"], 99) / benchlib.percentile(idle[name]["lat"], 99)
            print(f"{name:<20} p99 under the flood / p99 idle: {ratio:.1f}")
            for label, r in (("idle", idle[name]), ("flood", flooded[name])):
                if r["errors"]:
                    print(f"  {label} errors: {sorted(set(r['errors']))}")
    finally:
        for p in floods:
            if p.poll() is None:
                p.kill()
                p.wait()
        sb.teardown(check=True)
    return 0


if __name__ == "__main__":
    benchlib.require_root("bench_fairness.py")
    sys.exit(main())
