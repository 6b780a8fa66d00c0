#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A burst of logins: 1,000 users log in, 200 at a time, each login a connection of its own
and one OpenSession as root — what pam_nsmanager does (bench/nsm-burst).

pam_nsmanager connects to nsmanagerd's private socket (/run/nsmanager/private: root only,
peer to peer), and to the system bus only where that socket is not there (the daemon not
running yet: the bus then starts it). Both paths are measured, each with a fresh daemon:

  private   first:    1,000 first logins: each creates its user's namespace (the target);
            again@C:  the same users log in again (their namespaces exist), C at a time;
  bus       first, again@C: the same through dbus-daemon, for C up to and beyond its 256
            connections per uid (every PAM login connects as root);
            stalled@K: the same, while K connections that never authenticate are open:
            dbus-daemon accepts at most 64 incomplete (not yet authenticated) connections,
            and no new one until one of those completes or reaches auth_timeout (30 s);
            polkit:   CreateNamespace by an unprivileged administrator (a polkit rule says
            yes), 200 at a time: every call makes the daemon ask polkit, and dbus-daemon
            lets a connection wait for at most 128 replies (max_replies_per_connection).

The sandbox's dbus-daemon reads Debian's system.conf: the limits of a real system bus. The
bus path runs again (unless --no-raised) with the limits raised in a file of
/etc/dbus-1/system.d, as a site would raise them. Each stage reports: calls answered,
failures by error name, wall time, logins per second, and the latency of a login (connect
to reply) as median, p90, p99, max and p99/median.

Usage: sudo bench/bench_burst.py [--users N] [--concurrency C] [--beyond C1,C2,...]
"""

import argparse
import collections
import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import sbx  # noqa: E402

# What a site with bursts of logins would put in /etc/dbus-1/system.d/ (or system-local.conf):
# docs/benchmarks.md says why.
RAISED_LIMITS = {
    "max_incomplete_connections": 1024,
    "auth_timeout": 5000,
    "max_connections_per_user": 4096,
    "max_completed_connections": 8192,
}

ADMIN_RULE = """polkit.addRule(function(action, subject) {
    if (action.id == "org.example.NSManager.manage" && subject.user == "alice")
        return polkit.Result.YES;
});
"""


def limits_xml(limits: dict) -> str:
    body = "".join(f'  <limit name="{k}">{v}</limit>\n' for k, v in limits.items())
    return ('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"\n'
            ' "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">\n'
            f"<busconfig>\n{body}</busconfig>\n")


def burst(sb: "sbx.Sandbox", method: str, users: list[str], concurrency: int, as_user: str | None = None,
          private: bool = False) -> dict:
    argv = [str(bl.tool("nsm-burst"))] + (["--private"] if private else []) + ["--concurrency", str(concurrency), method]
    if as_user:
        argv = sb._setpriv(as_user) + argv
    start = time.monotonic()
    p = subprocess.run(argv, input="\n".join(users) + "\n", capture_output=True, text=True, check=True)
    wall = time.monotonic() - start
    lat, connect, results = [], [], collections.Counter()
    for line in p.stdout.splitlines():
        _i, c_us, call_us, result = line.split(" ", 3)
        results[result] += 1
        connect.append(float(c_us) / 1000)
        if result == "ok":
            lat.append((float(c_us) + float(call_us)) / 1000)
    return {"calls": len(users), "wall": wall, "lat": lat, "connect": connect, "results": results}


@contextlib.contextmanager
def stalled_connections(k: int):
    """k connections to the bus that send the credentials byte and nothing more, as a client
    that hangs before it authenticates; yields a function that counts those the bus closed."""
    socks = []
    try:
        for _ in range(k):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            socks.append(s)
            s.connect(sbx.SYSTEM_BUS_SOCKET)
            s.sendall(b"\0")

        def dropped() -> int:
            n = 0
            for s in socks:
                try:
                    if s.recv(1, socket.MSG_DONTWAIT) == b"":
                        n += 1
                except BlockingIOError:
                    pass
                except OSError:
                    n += 1
            return n
        yield dropped
    finally:
        for s in socks:
            s.close()


def report(label: str, concurrency: int, r: dict) -> None:
    ok = r["results"].get("ok", 0)
    failures = ", ".join(f"{n} {name}" for name, n in r["results"].most_common() if name != "ok") or "none"
    if r["lat"]:
        med, p90, p99, top = (bl.median(r["lat"]), bl.percentile(r["lat"], 90), bl.percentile(r["lat"], 99),
                              max(r["lat"]))
        lat = f"{med:>7.1f} {p90:>7.1f} {p99:>7.1f} {top:>7.1f} {p99 / med:>6.2f}"
    else:
        lat = f"{'-':>7} {'-':>7} {'-':>7} {'-':>7} {'-':>6}"
    print(f"{label:<12} {concurrency:>5} {r['calls']:>6} {ok:>6} {r['wall']:>7.2f} {ok / r['wall']:>7.0f} {lat} "
          f"{bl.median(r['connect']):>8.2f} {bl.percentile(r['connect'], 99):>8.1f}  failed: {failures}", flush=True)


def header() -> None:
    print(f"{'stage':<12} {'conc':>5} {'calls':>6} {'ok':>6} {'wall s':>7} {'ok/s':>7} {'median':>7} {'p90':>7} "
          f"{'p99':>7} {'max':>7} {'p99/md':>6} {'conn md':>8} {'conn p99':>8}")
    print(f"{'':<12} {'':>5} {'':>6} {'':>6} {'':>7} {'':>7} {'ms':>7} {'ms':>7} {'ms':>7} {'ms':>7} {'':>6} "
          f"{'ms':>8} {'ms':>8}")


def fresh_daemon(sb: "sbx.Sandbox") -> None:
    sb.new_instance()
    sb.start_daemon(StopDelaySec="1h")


def run_private(sb: "sbx.Sandbox", users: list[str], concurrency: int, beyond: list[int]) -> None:
    fresh_daemon(sb)
    header()
    report("first", concurrency, burst(sb, "OpenSession", users, concurrency, private=True))
    for c in [concurrency] + beyond:
        report(f"again@{c}", c, burst(sb, "OpenSession", users, c, private=True))
    print(f"daemon RSS {bl.daemon_rss_kb(sb.daemon.pid)} kB")


def run_bus(sb: "sbx.Sandbox", users: list[str], concurrency: int, beyond: list[int], stalled: int) -> None:
    fresh_daemon(sb)
    header()
    report("first", concurrency, burst(sb, "OpenSession", users, concurrency))
    for c in [concurrency] + beyond:
        report(f"again@{c}", c, burst(sb, "OpenSession", users, c))
    with stalled_connections(stalled) as dropped:
        r = burst(sb, "OpenSession", users, concurrency)
        report(f"stalled@{stalled}", concurrency, r)
        print(f"{'':<12} {dropped()} of the {stalled} stalled connections were closed by the bus")
    report("polkit", concurrency, burst(sb, "CreateNamespace", users, concurrency, as_user="alice"))
    print(f"daemon RSS {bl.daemon_rss_kb(sb.daemon.pid)} kB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=1000, help="users logging in (default 1000)")
    ap.add_argument("--concurrency", type=int, default=200, help="logins at a time (default 200)")
    ap.add_argument("--beyond", default="300,600", help="further concurrencies on the bus (default 300,600)")
    ap.add_argument("--private-beyond", default="600,1000",
                    help="further concurrencies on the private socket (default 600,1000)")
    ap.add_argument("--stalled", type=int, default=100, help="connections that never authenticate (default 100)")
    ap.add_argument("--private-only", action="store_true", help="only the private socket's stages")
    ap.add_argument("--no-raised", action="store_true", help="skip the pass with raised dbus-daemon limits")
    ap.add_argument("--raise", dest="limits", default=",".join(f"{k}={v}" for k, v in RAISED_LIMITS.items()),
                    help="the limits of the second pass, NAME=VALUE,... (default: %(default)s)")
    args = ap.parse_args()
    beyond = [int(c) for c in args.beyond.split(",") if c]
    private_beyond = [int(c) for c in args.private_beyond.split(",") if c]
    limits = dict(item.split("=", 1) for item in args.limits.split(",") if item)

    sb = sbx.Sandbox(polkit=True)
    users = [f"burst{i:05d}" for i in range(args.users)]
    bl.add_users(sb, users)
    sb.setup()
    try:
        sb.set_polkit_rule("50-burst-admin", ADMIN_RULE)
        print(f"== the private socket (pam_nsmanager's first choice), {args.users} users ==")
        run_private(sb, users, args.concurrency, private_beyond)
        if args.private_only:
            return 0
        print()
        print(f"== the system bus, dbus-daemon's defaults (Debian's system.conf), {args.users} users ==")
        run_bus(sb, users, args.concurrency, beyond, args.stalled)
        if not args.no_raised:
            problems = sb.cleanup_instance()
            if problems:
                sys.exit("\n".join(problems))
            conf = sb.overlay_dir("/etc/dbus-1/system.d") / "nsmanager-burst-limits.conf"
            conf.write_text(limits_xml(limits))
            conf.chmod(0o644)
            sb.restart_bus()
            print()
            print(f"== the system bus, limits raised in /etc/dbus-1/system.d: "
                  + ", ".join(f"{k}={v}" for k, v in limits.items()) + " ==")
            run_bus(sb, users, args.concurrency, beyond, args.stalled)
    finally:
        sb.teardown(check=True)
    return 0


if __name__ == "__main__":
    bl.require_root("bench_burst.py")
    sys.exit(main())
