#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What one mount on the host costs as views accumulate.

Every view holds a copy of each host mount that propagates into it: a peer copy under a
shared subtree (SharedSubtrees=, /mnt here) and a slave copy anywhere else under / (the
default ViewPropagation=slave). Mounting there makes the kernel add a mount to every view,
and unmounting removes them all, under the kernel's one mount lock. This is the kernel's
cost of the design, not the daemon's.

Runs in the project's throwaway sandbox (tests/sandbox.py). At each number of views it
times (bench/nsm-fanout) a tmpfs mounted and unmounted on the host under /mnt and under
/tmp (the slave rest of /), and reports the medians, the cost per view, and the kernel
memory of a view's mounts (the mnt_cache slab of /proc/slabinfo, per view).

Usage: sudo bench/bench_fanout.py [--views 0,400,2000,...] [--iterations N] [--svg FILE]
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import sbx  # noqa: E402

TARGETS = (("/mnt", "/mnt/nsm-fanout", "shared /mnt (peers)"),
           ("/tmp", "/tmp/nsm-fanout", "slave rest of / (/tmp)"))


def mount_cost(target: str, iterations: int) -> tuple[float, float]:
    out = subprocess.run([str(bl.tool("nsm-fanout")), target, str(iterations)], check=True, capture_output=True,
                         text=True)
    m, u = out.stdout.split()
    return float(m), float(u)


def slab_bytes(cache: str = "mnt_cache") -> int | None:
    """Bytes in the active objects of a slab cache, or None where /proc/slabinfo lacks it."""
    try:
        for line in Path("/proc/slabinfo").read_text().splitlines():
            f = line.split()
            if f and f[0] == cache:
                return int(f[1]) * int(f[3])   # active objects × object size
    except OSError:
        pass
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--views", default="0,400,2000,5000,10000", help="numbers of views (default 0,400,2000,5000,10000)")
    ap.add_argument("--iterations", type=int, default=40, help="mounts timed at each point (default 40)")
    ap.add_argument("--svg", default="bench-fanout.svg", help="where to write the plot (default ./bench-fanout.svg)")
    args = ap.parse_args()
    counts = sorted({int(v) for v in args.views.split(",") if v})
    svg_path = Path(args.svg).resolve()   # written after the sandbox is gone (it may cover the directory)

    sb = sbx.Sandbox(polkit=False)
    users = [f"fan{i:05d}" for i in range(max(counts))]
    bl.add_users(sb, users)
    rows = []
    t0 = time.monotonic()
    sb.setup()
    try:
        sb.start_daemon(StopDelaySec="1h")
        mgr = sb.manager()
        for _parent, probe, _label in TARGETS:
            os.makedirs(probe, exist_ok=True)
        print(f"sandbox with {len(sb.users)} users ready in {time.monotonic() - t0:.1f}s")
        print()
        print(f"{'views':>6} {'/mnt mount':>10} {'umount':>8} {'/tmp mount':>10} {'umount':>8} "
              f"{'µs/view':>8} {'mounts':>9} {'host':>5}")
        print(f"{'':>6} {'µs':>10} {'µs':>8} {'µs':>10} {'µs':>8} {'(mount)':>8} {'B/view':>9} {'mnts':>5}")
        created = 0
        base_slab = None
        for n in counts:
            while created < n:
                mgr.CreateNamespace(users[created])
                created += 1
            costs = [mount_cost(probe, args.iterations) for _parent, probe, _label in TARGETS]
            slab = slab_bytes()
            if base_slab is None:
                base_slab = slab
            row = {"views": n, "costs": costs}
            rows.append(row)
            per_view = (max(c[0] for c in costs) - max(c[0] for c in rows[0]["costs"])) / n if n else 0
            per_view_bytes = (slab - base_slab) / n if n and slab is not None and base_slab is not None else 0
            print(f"{n:>6} {costs[0][0]:>10.1f} {costs[0][1]:>8.1f} {costs[1][0]:>10.1f} {costs[1][1]:>8.1f} "
                  f"{per_view:>8.2f} {per_view_bytes:>9.0f} {sb.mount_count():>5}", flush=True)
        for _parent, probe, _label in TARGETS:
            os.rmdir(probe)
    finally:
        sb.teardown(check=True)

    bl.write_svg(svg_path, bl.svg_line_chart(
        "One host mount + umount against the number of views (medians)", "views", "ms",
        [{"label": f"{label}: mount + umount",
          "points": [(r["views"], (r["costs"][i][0] + r["costs"][i][1]) / 1000) for r in rows]}
         for i, (_parent, _probe, label) in enumerate(TARGETS)],
        log_x=False,
        notes=[bl.plot_note("bench_fanout.py", f"{args.iterations} iterations")]))
    return 0


if __name__ == "__main__":
    bl.require_root("bench_fanout.py")
    sys.exit(main())
