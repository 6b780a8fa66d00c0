#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""How the cost of creating a namespace, and the size of views and of the host's mount
table, change with N, the number of namespaces that already exist.

Runs in the project's throwaway sandbox (tests/sandbox.py): a mount namespace of its own,
a temporary passwd with the users it needs, a private dbus-daemon and nsmanagerd. At each
checkpoint N it times a window of calls, each CreateNamespace preceded by a Peer.Ping to
the daemon (the same D-Bus round trip with no work behind it) and followed by one iteration
of each floor (bench/nsm-floor), so that all see the same load, and reports:

  - CreateNamespace as a client sees it, and less the median ping: the daemon's work;
  - the forked floor (fork a child that clones / with open_tree and unshares, reap it) and
    the in-process floor (the same two calls, then setns() back), and the ratio of the
    daemon's work to each;
  - the daemon's work against itself at the first checkpoint (flatness in N), as measured
    and divided by the in-process floor's own ratio (the same, less what the machine's load
    did to both);
  - the host's and a new view's mount counts, the daemon's RSS and open fds.

It writes an SVG plot of the times against N (--svg). Absolute times on shared machines are
noisy; the ratios, each measured in one run, are what to compare.

Usage: sudo bench/bench_create.py [--max N] [--window W] [--svg FILE]
"""

import argparse
import os
import sys
import time
from pathlib import Path

import dbus

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import sbx  # noqa: E402

CHECKPOINTS = (1, 10, 100, 300, 1000, 3000, 10000)


def view_op(sb, mgr, peer, user, window):
    """A view operation, a short-lived child each: SetPropagation of / in a view, the daemon's
    work less the median ping."""
    modes = ("private", "shared")
    for k in range(5):   # warm-up
        mgr.SetPropagation(user, "/", modes[k % 2], 0)
    pings, ops = [], []
    for k in range(window):
        start = time.perf_counter()
        peer.Ping()
        middle = time.perf_counter()
        mgr.SetPropagation(user, "/", modes[k % 2], 0)
        end = time.perf_counter()
        pings.append((middle - start) * 1000)
        ops.append((end - middle) * 1000)
    ping = bl.median(pings)
    less = [o - ping for o in ops]
    print()
    print(f"view operation (SetPropagation, {window} calls): {bl.median(ops):.3f} ms, ping {ping:.3f} ms, "
          f"less ping {bl.median(less):.3f} ms (p90 {bl.percentile(less, 90):.3f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=10000, help="largest N (default 10000)")
    ap.add_argument("--window", type=int, default=61, help="calls timed at each checkpoint (default 61)")
    ap.add_argument("--view-ops", type=int, default=0, metavar="W",
                    help="also time W view operations (SetPropagation, a short-lived child each; default 0)")
    ap.add_argument("--svg", default="bench-create.svg", help="where to write the plot (default ./bench-create.svg)")
    args = ap.parse_args()
    svg_path = Path(args.svg).resolve()   # written after the sandbox is gone (it may cover the directory)
    checkpoints = [c for c in CHECKPOINTS if c <= args.max]

    # The timed users come first in the sandbox's passwd: NSS's "files" backend reads passwd
    # from the top, so a user on line N costs O(N) to look up — a cost of that backend (nscd,
    # sssd or systemd-userdb have none), which must not be mistaken for the daemon's.
    sb = sbx.Sandbox(polkit=False)
    timed = {cp: [f"t{cp:05d}x{k:03d}" for k in range(args.window)] for cp in checkpoints}
    warm = [f"warm{k:02d}" for k in range(10)]
    bl.add_users(sb, warm + [name for names in timed.values() for name in names])
    fill = [f"bench{i:05d}" for i in range(args.max)]
    bl.add_users(sb, fill)

    rows = []
    floors = None
    t0 = time.monotonic()
    sb.setup()
    try:
        floors = bl.Floors()
        sb.start_daemon(StopDelaySec="1h")
        mgr = sb.manager()
        peer = dbus.Interface(sb.proxy(sbx.MANAGER_PATH), "org.freedesktop.DBus.Peer")
        # Warm up (the first calls fault in code and caches): created and removed again.
        for name in warm:
            peer.Ping()
            mgr.CreateNamespace(name)
            mgr.RemoveNamespace(name)
        print(f"sandbox with {len(sb.users)} users ready in {time.monotonic() - t0:.1f}s")
        print()
        print(f"{'N':>6} {'create':>7} {'ping':>6} {'less':>6} {'p90':>6} {'forked':>7} {'x fork':>7} "
              f"{'inproc':>7} {'x inpr':>7} {'x N=1':>6} {'÷floor':>6} {'host':>5} {'view':>5}")
        print(f"{'':>6} {'ms':>7} {'ms':>6} {'ping':>6} {'less':>6} {'floor':>7} {'':>7} {'floor':>7} {'':>7} "
              f"{'':>6} {'':>6} {'mnts':>5} {'mnts':>5}")

        created = n_fill = 0
        for cp in checkpoints:
            # Fill up to the checkpoint (untimed), then time a window of creations.
            while created < cp - 1:
                mgr.CreateNamespace(fill[n_fill])
                n_fill += 1
                created += 1
            pings, creates, forked, inproc = [], [], [], []
            for name in timed[cp]:
                start = time.perf_counter()
                peer.Ping()
                middle = time.perf_counter()
                mgr.CreateNamespace(name)
                end = time.perf_counter()
                pings.append((middle - start) * 1000)
                creates.append((end - middle) * 1000)
                created += 1
                forked.append(floors.ms("forked"))
                inproc.append(floors.ms("inproc"))
            ping = bl.median(pings)
            less = [c - ping for c in creates]
            row = {
                "n": cp, "create": bl.median(creates), "ping": ping, "less": bl.median(less),
                "p90": bl.percentile(less, 90), "forked": bl.median(forked), "inproc": bl.median(inproc),
                "host": sb.mount_count(), "view": sb.mount_count(timed[cp][-1]),
            }
            rows.append(row)
            first = rows[0]
            row["flat"] = row["less"] / first["less"]
            row["flat_floor"] = row["flat"] / (row["inproc"] / first["inproc"])
            print(f"{cp:>6} {row['create']:>7.3f} {row['ping']:>6.3f} {row['less']:>6.3f} {row['p90']:>6.3f} "
                  f"{row['forked']:>7.3f} {row['less'] / row['forked']:>7.2f} {row['inproc']:>7.3f} "
                  f"{row['less'] / row['inproc']:>7.2f} {row['flat']:>6.2f} {row['flat_floor']:>6.2f} "
                  f"{row['host']:>5} {row['view']:>5}", flush=True)
        if args.view_ops:
            view_op(sb, mgr, peer, timed[checkpoints[0]][0], args.view_ops)
        pid = sb.daemon.pid
        print()
        print(f"{created} namespaces existed at the end; daemon RSS {bl.daemon_rss_kb(pid)} kB, "
              f"{len(os.listdir(f'/proc/{pid}/fd'))} open fds")
    finally:
        if floors:
            floors.close()
        sb.teardown(check=True)

    print(f"flatness: the largest ratio to the first checkpoint is {max(r['flat'] for r in rows):.2f}, "
          f"{max(r['flat_floor'] for r in rows):.2f} divided by the in-process floor's")
    bl.write_svg(svg_path, bl.svg_line_chart(
        "Creating a namespace against N (medians)", "N: namespaces that already exist (log scale)", "ms",
        [
            {"label": "CreateNamespace as the client sees it", "points": [(r["n"], r["create"]) for r in rows]},
            {"label": "CreateNamespace less one Peer.Ping", "points": [(r["n"], r["less"]) for r in rows]},
            {"label": "forked floor (fork, open_tree, unshare, exit)", "points": [(r["n"], r["forked"]) for r in rows],
             "dashed": True},
            {"label": "in-process floor (open_tree, unshare, setns back)",
             "points": [(r["n"], r["inproc"]) for r in rows], "dashed": True},
        ],
        notes=[bl.plot_note("bench_create.py", f"window {args.window}")]))
    return 0


if __name__ == "__main__":
    bl.require_root("bench_create.py")
    sys.exit(main())
