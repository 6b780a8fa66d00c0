#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`nsctl attach USER -- true` against `nsenter -t PID -m true` (the floor: entering an
existing mount namespace by pid and exec'ing), as root and as the user, in the project's
throwaway sandbox. Prints medians and the ratio to the floor; absolute times are noisy on
shared machines, the ratios are what to compare.

Usage: sudo bench/bench_attach.py [--runs N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import sandbox as sbx  # noqa: E402


def median_ms(argv, runs):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)   # warm-up
    t = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        t.append((time.perf_counter() - start) * 1000)
    return statistics.median(t), min(t), max(t)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    sb = sbx.Sandbox(polkit=True)
    sb.setup()
    holder = None
    try:
        sb.start_daemon()
        sb.manager().CreateNamespace("alice")
        nsctl = str(sbx.nsctl_binary())
        # A process in alice's view for nsenter -t to enter through.
        holder = subprocess.Popen([nsctl, "attach", "alice", "--", "sleep", "600"], stdout=subprocess.DEVNULL)
        want = sb.view_ns_id("alice")
        deadline = time.monotonic() + 10
        pid = None
        while pid is None and time.monotonic() < deadline:
            for p in os.listdir("/proc"):
                if p.isdigit():
                    try:
                        if (os.readlink(f"/proc/{p}/ns/mnt") == f"mnt:[{want}]"
                                and Path(f"/proc/{p}/comm").read_text().strip() == "sleep"):
                            pid = p
                    except OSError:
                        pass
        if pid is None:
            sys.exit("no process found in alice's view")
        setpriv = sb._setpriv("alice")
        rows = [
            ("root: nsenter -t PID -m true (floor)", ["nsenter", "-t", pid, "-m", "true"]),
            ("root: nsctl attach alice -- true", [nsctl, "attach", "alice", "--", "true"]),
            ("alice: setpriv … true (floor)", setpriv + ["true"]),
            ("alice: setpriv … nsctl attach alice -- true", setpriv + [nsctl, "attach", "alice", "--", "true"]),
        ]
        results = {name: median_ms(argv, args.runs) for name, argv in rows}
        print(f"{'command':<48} {'median ms':>10} {'min':>7} {'max':>7} {'x floor':>8}")
        floors = [results[rows[0][0]][0], results[rows[2][0]][0]]
        for i, (name, _) in enumerate(rows):
            med, lo, hi = results[name]
            print(f"{name:<48} {med:>10.2f} {lo:>7.2f} {hi:>7.2f} {med / floors[i // 2]:>8.1f}")
    finally:
        if holder is not None:
            holder.terminate()
            holder.wait()
        sb.teardown(check=True)
    return 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench_attach.py must run as root")
    sys.exit(main())
