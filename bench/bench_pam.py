#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What a PAM session module adds to a login: `runuser -l alice -c true` through three
stacks, in one run, in the project's throwaway sandbox (tests/sandbox.py):

  none            Debian 12's runuser-l stack (pam_keyinit, pam_limits, pam_unix)
  pam_namespace   the same plus Linux-PAM's pam_namespace, polyinstantiating one directory
                  (a mount namespace of its own per login, a bind mount of the user's instance)
  pam_nsmanager   the same plus pam_nsmanager (alice's namespace already exists: OpenSession
                  and setns; close_session closes the session fd, which ends the session)

pam_systemd is left out of the stacks (the sandbox has no logind), and libsystemd is preloaded
into every login, so pam_nsmanager is not charged for loading a library that pam_systemd loads
on every Debian login anyway. The logins of the stacks alternate, one of each per round, so a
burst of noise on this shared machine hits them alike. Reports, for each stack:

  login     the median login, whole (runuser's fork, exec, PAM, the shell, exit)
  adds      what the module adds to a login: the median over the rounds of its login less
            the round's login through `none`
  open, close
            the module's own open_session and close_session, timed from inside the login
            by bench/pam-stamp.so, which every stack has around the module's line (for
            `none`: the stamps' own cost)

and the ratios of pam_nsmanager's figures to pam_namespace's. Whole logins on a shared
machine are noisy (a login varies by ±2 ms: *adds* needs some 1,000 rounds to settle within
0.1 ms); the open/close columns are not. Then the same stacks once more through
`pamtester alice open_session close_session` (PAM alone: no shell, no fork), what each
module adds to that.

  --module PATH   (repeatable) also time another build of pam_nsmanager.so, side by side,
                  e.g. one built from an earlier commit

Usage: sudo bench/bench_pam.py [--logins N] [--module PATH ...]   (after ninja -C build)
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

BASE_STACK = """\
#%PAM-1.0
# bench/bench_pam.py: Debian 12's runuser-l without pam_systemd (no logind in the sandbox)
auth		include		runuser
session		optional	pam_keyinit.so force revoke
session		include		runuser
"""


def stack(stamp: Path, stamps: Path, line: str = "") -> str:
    """BASE_STACK, then the module's line between two stamps."""
    return (BASE_STACK + f"session\t\toptional\t{stamp} {stamps} before\n" + (line + "\n" if line else "")
            + f"session\t\toptional\t{stamp} {stamps} after\n")


def stamped_ms(stamps: Path) -> tuple[float, float]:
    """(open_session, close_session) of what stood between the stamps, in ms."""
    t = {}
    for line in stamps.read_text().splitlines():
        what, tag, ns = line.split()
        t[what, tag] = int(ns)
    return ((t["open", "after"] - t["open", "before"]) / 1e6, (t["close", "after"] - t["close", "before"]) / 1e6)


def libsystemd(module: Path) -> str:
    """The libsystemd the module links, as the dynamic linker resolves it."""
    out = subprocess.run(["ldd", module], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name, _, rest = line.strip().partition(" => ")
        if name.startswith("libsystemd.so"):
            return rest.split()[0]
    sys.exit(f"{module} does not link libsystemd (ldd)")


def pamtester_ms(service: str, env: dict) -> float:
    start = time.perf_counter()
    p = subprocess.run(["pamtester", service, "alice", "open_session", "close_session"], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1000
    if p.returncode != 0:
        sys.exit(f"pamtester {service} alice failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    return elapsed


def login_ms(env: dict) -> float:
    start = time.perf_counter()
    p = subprocess.run(["runuser", "-l", "alice", "-c", "true"], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1000
    if p.returncode != 0:
        sys.exit(f"runuser -l alice failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    return elapsed


def sessions_end(sb: "sbx.Sandbox") -> bool:
    """Whether alice's sessions all end (soon: the daemon learns of the last close when it
    next turns its loop)."""
    deadline = time.monotonic() + 5
    while sb.properties(sb.manager().GetNamespace("alice"))["Sessions"]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logins", type=int, default=45, help="logins per stack (default 45)")
    ap.add_argument("--module", action="append", default=[], type=Path,
                    help="another pam_nsmanager.so to time side by side (repeatable)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_pam.py must run as root (it builds a sandbox with mount namespaces)")
    for m in args.module:
        if not m.is_file():
            sys.exit(f"{m}: no such module")

    module = sbx.pam_module()
    stamp = sbx.build_dir() / "bench" / "pam-stamp.so"
    for built in (module, stamp):
        if not built.is_file():
            sys.exit(f"{built} is not built: meson setup build && ninja -C build")
    sb = sbx.Sandbox(polkit=False)
    sb.setup()
    try:
        # pam_namespace: one polyinstantiated directory, a per-user instance under a parent of
        # mode 000 (as pam_namespace(8) requires).
        bench = sb.base / "bench-pam"
        (bench / "poly").mkdir(parents=True)
        (bench / "poly-inst").mkdir(mode=0)
        os.chmod(bench / "poly-inst", 0)
        sb._bind_file(f"{bench}/poly  {bench}/poly-inst/  user  root\n", "/etc/security/namespace.conf", 0o644)

        stamps = bench / "stamps"
        stacks = {
            "none": stack(stamp, stamps),
            "pam_namespace": stack(stamp, stamps, "session\t\trequired\tpam_namespace.so"),
            "pam_nsmanager": stack(stamp, stamps, f"session\t\toptional\t{module}"),
        }
        for i, m in enumerate(args.module, 2):
            stacks[f"pam_nsmanager #{i}"] = stack(stamp, stamps, f"session\t\toptional\t{m.resolve()}")
        pamd = sb.overlay_dir("/etc/pam.d")
        service = pamd / "runuser-l"
        env = dict(os.environ, LD_PRELOAD=libsystemd(module))

        # After the sandbox's own mounts above: the daemon's instance checks that nothing
        # else was mounted while it ran.
        sb.start_daemon(StopDelaySec="1h")
        sb.manager().CreateNamespace("alice")
        alice_ns = sb.view_ns_id("alice")

        # Every stack does its work: pam_namespace's login has its instance on the
        # polyinstantiated directory, pam_nsmanager's lands in alice's namespace.
        for name, text in stacks.items():
            service.write_text(text)
            out = subprocess.run(["runuser", "-l", "alice", "-c", f"readlink /proc/self/ns/mnt; findmnt -n {bench}/poly"],
                                 env=env, capture_output=True, text=True).stdout.split("\n", 1)
            polyinstantiated = out[1].strip() != ""
            if polyinstantiated != (name == "pam_namespace"):
                sys.exit(f"{name}: {bench}/poly is {'' if polyinstantiated else 'not '}polyinstantiated: {out}")
            if name.startswith("pam_nsmanager") and out[0] != f"mnt:[{alice_ns}]":
                sys.exit(f"{name}: the login is in {out[0]}, alice's namespace is mnt:[{alice_ns}]")
            for _ in range(3):    # warm-up
                login_ms(env)

        times = {name: [] for name in stacks}
        opens = {name: [] for name in stacks}
        closes = {name: [] for name in stacks}
        for _ in range(args.logins):
            for name, text in stacks.items():
                service.write_text(text)
                stamps.unlink(missing_ok=True)
                times[name].append(login_ms(env))
                o, c = stamped_ms(stamps)
                opens[name].append(o)
                closes[name].append(c)
        if not sessions_end(sb):
            sys.exit("sessions left open in alice's namespace")

        med = {name: statistics.median(t) for name, t in times.items()}
        added = {name: statistics.median(a - b for a, b in zip(t, times["none"])) for name, t in times.items()}
        mo = {name: statistics.median(t) for name, t in opens.items()}
        mc = {name: statistics.median(t) for name, t in closes.items()}
        print(f"{args.logins} logins per stack, alternating; runuser -l alice -c true, libsystemd preloaded")
        print()
        print(f"{'stack':<18} {'login ms':>9} {'p10':>6} {'p90':>6} {'adds ms':>8} {'open ms':>8} {'close ms':>9}"
              f" {'adds ÷ pam_ns':>14} {'open+close ÷ pam_ns':>20}")
        for name, t in times.items():
            q = statistics.quantiles(t, n=10)
            if name == "none":
                tail = f"{'':>8} {mo[name]:>8.3f} {mc[name]:>9.3f}"
            else:
                tail = (f"{added[name]:>8.2f} {mo[name]:>8.3f} {mc[name]:>9.3f} "
                        f"{added[name] / added['pam_namespace']:>14.2f} "
                        f"{(mo[name] + mc[name]) / (mo['pam_namespace'] + mc['pam_namespace']):>20.2f}")
            print(f"{name:<18} {med[name]:>9.2f} {q[0]:>6.2f} {q[-1]:>6.2f} {tail}")

        # PAM alone: the same stacks through pamtester, one service each.
        for name, text in stacks.items():
            (pamd / f"bench-pamtester-{name.replace(' ', '_').replace('#', '')}").write_text(text)
        pt = {name: [] for name in stacks}
        for _ in range(args.logins):
            for name in stacks:
                pt[name].append(pamtester_ms(f"bench-pamtester-{name.replace(' ', '_').replace('#', '')}", env))
        pt_added = {name: statistics.median(a - b for a, b in zip(t, pt["none"])) for name, t in pt.items()}
        print()
        print(f"{args.logins} rounds of pamtester alice open_session close_session per stack, alternating")
        print()
        print(f"{'stack':<18} {'median ms':>10} {'adds ms':>8} {'adds ÷ pam_ns':>14}")
        for name, t in pt.items():
            tail = "" if name == "none" else f"{pt_added[name]:>8.2f} {pt_added[name] / pt_added['pam_namespace']:>14.2f}"
            print(f"{name:<18} {statistics.median(t):>10.2f} {tail}")
        if not sessions_end(sb):
            sys.exit("sessions left open in alice's namespace after pamtester")
        print()
        print(f"pam_nsmanager: {module}")
        for i, m in enumerate(args.module, 2):
            print(f"pam_nsmanager #{i}: {m.resolve()}")
    finally:
        sb.teardown(check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
