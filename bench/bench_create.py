#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""How the cost of creating a namespace, and the size of views and of the host's mount
table, change with N, the number of namespaces that already exist.

Runs in the project's throwaway sandbox (tests/sandbox.py): a mount namespace of its own,
a temporary passwd with N_MAX extra users, a private dbus-daemon and nsmanagerd. Reports:

  - the raw-syscall floor (bench/nsm-floor: fork + open_tree clone of / + unshare, reaped),
  - CreateNamespace as a client sees it (a D-Bus round trip, the daemon's work, the child
    that builds and pins the view), as the median over a window of calls at each N,
  - the ratio of that to the floor, and to itself at N=1,
  - the host's and a new view's mount counts at each N.

Absolute times on shared machines are noisy; the ratios are what to compare.

Usage: sudo bench/bench_create.py [--max N] [--window W]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import sandbox as sbx  # noqa: E402


def floor_us(build: Path) -> float:
    out = subprocess.run([str(build / "bench" / "nsm-floor"), "300"], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=1000, help="namespaces to create in all (default 1000)")
    ap.add_argument("--window", type=int, default=15, help="calls timed around each checkpoint (default 15)")
    args = ap.parse_args()

    checkpoints = [c for c in (1, 10, 100, 300, 1000, 3000, 10000) if c <= args.max]

    # The timed users come first in the sandbox's passwd: NSS's "files" backend reads passwd
    # from the top, so a user on line N costs O(N) to look up — a cost of that backend (nscd,
    # sssd or systemd-userdb have none), which must not be mistaken for the daemon's.
    sb = sbx.Sandbox(polkit=False)
    timed = {cp: [f"t{cp:05d}x{k:02d}" for k in range(args.window)] for cp in checkpoints}
    for names in timed.values():
        for name in names:
            sb.users[name] = sbx.TestUser(name, 20000 + len(sb.users), 20000 + len(sb.users))
    fill = [f"bench{i:05d}" for i in range(args.max)]
    for name in fill:
        sb.users[name] = sbx.TestUser(name, 20000 + len(sb.users), 20000 + len(sb.users))
    n_users = len(timed) * args.window + len(fill)
    t0 = time.monotonic()
    sb.setup()
    try:
        sb.start_daemon(StopDelaySec="1h")
        mgr = sb.manager()
        floor = floor_us(sbx.build_dir())
        print(f"sandbox with {n_users} users ready in {time.monotonic() - t0:.1f}s; "
              f"raw floor (fork+open_tree+unshare): {floor:.0f} µs median")
        print()
        print(f"{'N':>6} {'create ms':>10} {'p90 ms':>8} {'x floor':>8} {'x N=1':>7} {'host mounts':>12} {'view mounts':>12}")

        created = 0
        n_fill = 0
        base_ms = None
        for cp in checkpoints:
            # Fill up to the checkpoint (untimed), then time a window of creations.
            while created < cp - 1:
                mgr.CreateNamespace(fill[n_fill])
                n_fill += 1
                created += 1
            times = []
            for name in timed[cp]:
                start = time.perf_counter()
                mgr.CreateNamespace(name)
                times.append((time.perf_counter() - start) * 1000)
                created += 1
            med = statistics.median(times)
            p90 = sorted(times)[int(len(times) * 0.9) - 1]
            base_ms = base_ms or med
            host = sb.mount_count()
            view = sb.mount_count(timed[cp][-1])
            print(f"{cp:>6} {med:>10.2f} {p90:>8.2f} {med * 1000 / floor:>8.1f} {med / base_ms:>7.2f} {host:>12} {view:>12}",
                  flush=True)
        print()
        print(f"{created} namespaces existed at the end; daemon RSS: "
              f"{Path(f'/proc/{sb.daemon.pid}/status').read_text().split('VmRSS:')[1].split()[0]} kB")
    finally:
        sb.teardown(check=True)
    return 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench_create.py must run as root (it builds a sandbox with mount namespaces)")
    sys.exit(main())
