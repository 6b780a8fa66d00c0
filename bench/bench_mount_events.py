#!/usr/bin/python3 -P
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What mount events cost: the latency of a signal, what watching adds to a host mount, and
what ReleaseWithHost= costs (docs/mount-events.md, docs/benchmarks.md).

Runs in the project's throwaway sandbox (tests/sandbox.py), the host being the sandbox's
namespace; or, with --system, against the machine's own nsmanagerd under its unit on the real
system bus (below). The helper bench/nsm-events is the subscriber: it mounts a small tmpfs on the
host under /tmp (the slave rest of /: every view receives a copy), waits for the signals
of each watched view (MountsChanged, or its entry in ViewsMountsChanged or MountCountsChanged),
unmounts, waits again, and waits out the daemon's 100 ms.

  latency   with 1, 100 and 1,000 views watched (Namespace.Subscribe of each, N views there):
            from the host's mount(2) to the first signal and to the last (every watched view's)
  cost      at N views (default 1,000 and 10,000), in one run, alternating: the host's mount(2)
            and umount(2) with nobody watching, and with every view watched (--kinds: Manager.Subscribe,
            the aggregated SubscribeViews, SubscribeMountCounts (each view's number of mounts alone),
            the Cockpit page's pattern (SubscribeMountCounts and Namespace.Subscribe of the view it
            shows, whose MountsChanged make it read GetMountsEx), Namespace.Subscribe of each):
            what watching adds to the system calls, and the CPU the daemon (its helpers
            included) and dbus-daemon spend per mount and unmount; against the kernel's own
            fan-out (mount(2) at N views less at none, bench_fanout's measure)
  quiet     nobody watching, ReleaseWithHost=no: the daemon's CPU time and wakeups over 200
            host mounts (should be none)
  release   ReleaseWithHost=yes at N views (default 10,000): an ext4 loop device mounted on the
            host reaches every view, one view keeps a bind of it; from the host's umount(2)
            until the device is free (open O_EXCL), and the daemon's CPU for it

  --system  the installed daemon (nsmanagerd.service, D-Bus activated) on the machine's system
            bus, with dbus-daemon's CPU that of dbus.service; stages latency and cost only. For a
            throwaway machine alone (tools/qemu-bench's guest): it appends the users ev00000…
            to /etc/passwd and /etc/group, makes their homes and leaves their views (nothing
            removes them); it refuses to run unless the kernel command line has nsmtest=1
            (the qemu image's guests) or --throwaway-machine is given. The daemon's
            StopDelaySec= must outlast the run (views without sessions). The header says which
            path the daemon takes: MountEvents, how it reads tables (its journal), and how a
            view's number of mounts is counted (NS_MNT_GET_INFO from 6.12, else mountinfo lines).

Usage: sudo bench/bench_mount_events.py [--stages latency,cost,quiet,release] [--views N,...]
       [--iterations N] [--release-views N] [--kinds all,views,counts,page,each]
       [--system [--throwaway-machine]]
"""

import argparse
import fcntl
import json
import os
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from benchlib import sbx  # noqa: E402

TARGET = "/tmp/nsm-events"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


# /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN; else the children are found by their ppid.
HAVE_CHILDREN = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _live_children(pid: int) -> list[int]:
    if not HAVE_CHILDREN:
        return _children_by_ppid(pid)
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:
            pass
    return out


def _children_by_ppid(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(_stat(int(entry))[1]) == pid:
                    out.append(int(entry))
            except (OSError, IndexError):
                pass
    return out


def helper_seconds(pid: int) -> float:
    """The daemon's helpers: those it has reaped (cutime + cstime: readers forked per batch)
    and those that live (utime + stime and their own reaped children: the long-lived mount
    readers, the view builder)."""
    total = sum(int(_stat(pid)[i]) for i in (13, 14))
    for child in _live_children(pid):
        try:
            total += sum(int(_stat(child)[i]) for i in (11, 12, 13, 14))
        except (OSError, IndexError):
            pass   # gone meanwhile: in cutime from now on
    return total / CLK_TCK


def cpu_seconds(pid: int) -> float:
    """utime + stime of pid and of its helpers, reaped or alive."""
    return sum(int(_stat(pid)[i]) for i in (11, 12)) / CLK_TCK + helper_seconds(pid)


def bus_seconds(pid: int) -> float:
    return sum(int(_stat(pid)[i]) for i in (11, 12, 13, 14)) / CLK_TCK


def wakeups(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)


def run_events(subscribe: list[str], iterations: int, views: int = 0) -> list[tuple[float, float, float, float]]:
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=sbx.SYSTEM_BUS_ADDRESS, NSM_EVENTS_VIEWS=str(views))
    out = subprocess.run([str(bl.tool("nsm-events")), TARGET, str(iterations), *subscribe], check=True,
                         capture_output=True, text=True, env=env, timeout=3600)
    return [tuple(map(float, line.split())) for line in out.stdout.splitlines()]


class SandboxTarget:
    """The sandbox's daemon, started by the benchmark (the default)."""

    def __init__(self, sb, mgr):
        self.sb, self.mgr = sb, mgr

    def create(self, user: str) -> None:
        self.mgr.CreateNamespace(user)

    def namespace(self, user: str) -> str:
        return str(self.mgr.GetNamespace(user))

    def daemon_pid(self) -> int:
        return self.sb.daemon.pid

    def bus_pid(self) -> int:
        return self.sb.process("dbus-daemon").pid


BUS = "org.example.NSManager"
MANAGER_PATH = "/org/example/NSManager"
MANAGER_IFACE = "org.example.NSManager.Manager"
UNIT = "nsmanagerd.service"
# NS_MNT_GET_INFO of linux/nsfs.h (6.12): _IOR(0xb7, 10, struct mnt_ns_info), 16 bytes.
NS_MNT_GET_INFO = (2 << 30) | (16 << 16) | (0xb7 << 8) | 10


def busctl(*args: str) -> dict:
    """One call with systemd's busctl (the machine has no dbus-python: a qemu guest), its
    answer as busctl's JSON. The daemon answers CreateNamespace once the view is built:
    under TCG that takes a while."""
    p = subprocess.run(["busctl", "--system", "--json=short", "--timeout=600", *args], capture_output=True,
                       text=True, timeout=700)
    if p.returncode != 0:
        raise RuntimeError(f"busctl {' '.join(args)}: {p.stderr.strip()}")
    return json.loads(p.stdout) if p.stdout.strip() else {}


def unit_pid(unit: str) -> int:
    pid = int(subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", unit], check=True,
                             capture_output=True, text=True).stdout.strip() or 0)
    if pid == 0:
        sys.exit(f"{unit} is not running")
    return pid


class SystemTarget:
    """The machine's own nsmanagerd under its unit, on the system bus (--system); dbus-daemon
    is dbus.service's."""

    def __init__(self):
        self.paths: dict[str, str] = {}
        self.started = time.monotonic()

    def add_users(self, names: list[str]) -> None:
        """Users (and their groups) in /etc/passwd and /etc/group, after those there, with
        homes: useradd for each would take minutes under TCG."""
        passwd = Path("/etc/passwd").read_text().splitlines()
        group = Path("/etc/group").read_text().splitlines()
        known = {line.split(":")[0]: line for line in passwd if line}
        taken = {int(line.split(":")[2]) for line in passwd + group if line.count(":") >= 3}
        new_passwd, new_group = [], []
        for i, name in enumerate(names):
            uid = 30000 + i
            if name in known:
                if int(known[name].split(":")[2]) != uid:
                    sys.exit(f"{name} exists with another uid: {known[name]}")
                continue
            if uid in taken:
                sys.exit(f"uid {uid} of {name} is taken on this machine")
            new_passwd.append(f"{name}:x:{uid}:{uid}:Ev (nsmanager bench):/home/{name}:/bin/bash")
            new_group.append(f"{name}:x:{uid}:")
            home = Path(f"/home/{name}")
            home.mkdir(mode=0o755, parents=True, exist_ok=True)
            os.chown(home, uid, uid)
        for path, lines in (("/etc/passwd", new_passwd), ("/etc/group", new_group)):
            if lines:
                with open(path, "a") as f:
                    f.write("\n".join(lines) + "\n")

    def create(self, user: str) -> None:
        self.paths[user] = busctl("call", BUS, MANAGER_PATH, MANAGER_IFACE, "CreateNamespace", "s", user)["data"][0]
        if len(self.paths) % 100 == 0:   # under TCG a view takes a while: show progress
            print(f"({len(self.paths)} views, {time.monotonic() - self.started:.0f} s)", flush=True)

    def namespace(self, user: str) -> str:
        if user not in self.paths:
            self.paths[user] = busctl("call", BUS, MANAGER_PATH, MANAGER_IFACE, "GetNamespace", "s", user)["data"][0]
        return self.paths[user]

    def daemon_pid(self) -> int:
        return unit_pid(UNIT)

    def bus_pid(self) -> int:
        return unit_pid("dbus.service")

    def mount_events(self) -> str:
        return busctl("get-property", BUS, MANAGER_PATH, MANAGER_IFACE, "MountEvents")["data"]

    def tables_read(self) -> str:
        """What the daemon logged at its start about how it reads mount tables (listmount(2)
        from 6.8, unless the unit's filter refuses it; else mountinfo)."""
        out = subprocess.run(["journalctl", "--no-pager", "-b", "-u", UNIT, "-o", "cat", "-g", "Mount tables are read"],
                             capture_output=True, text=True).stdout.strip().splitlines()
        return out[-1].rstrip(".") if out else "(not logged)"

    def counted_with(self) -> str:
        """How a view watched for its number of mounts alone (the counts and page kinds) is
        counted: the readers ask the view's namespace fd NS_MNT_GET_INFO (6.12), else count
        the lines of its mountinfo (src/mount-reader/mount-reader-main.c, view_count). The
        readers log neither; the ioctl is asked here on one of the daemon's view fds, as root
        outside the unit: the unit's SystemCallFilter= (a deny list) does not name ioctl(2),
        so the kernel's answer here is the readers' answer."""
        daemon = self.daemon_pid()
        host = os.readlink(f"/proc/{daemon}/ns/mnt")
        for fd in os.listdir(f"/proc/{daemon}/fd"):
            try:
                link = os.readlink(f"/proc/{daemon}/fd/{fd}")
            except OSError:
                continue
            if not link.startswith("mnt:[") or link == host:
                continue
            ns = os.open(f"/proc/{daemon}/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                info = fcntl.ioctl(ns, NS_MNT_GET_INFO, struct.pack("=IIQ", 16, 0, 0))
                return f"NS_MNT_GET_INFO (answered here: {struct.unpack('=IIQ', info)[1]} mounts in {link})"
            except OSError as e:
                return f"mountinfo lines (NS_MNT_GET_INFO: {os.strerror(e.errno)})"
            finally:
                os.close(ns)
        return "(no view's namespace among the daemon's fds)"

    def view_receives(self, user: str, target: str) -> bool:
        """Whether a tmpfs the host mounts on target shows in user's view (GetMounts)."""
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "nsm-events-probe", target], check=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                mounts = busctl("call", BUS, MANAGER_PATH, MANAGER_IFACE, "GetMounts", "s", user)["data"][0]
                if any(target in json.dumps(m) for m in mounts):
                    return True
                time.sleep(1)
            return False
        finally:
            subprocess.run(["umount", target], check=True)


def ensure_views(t, users: list[str], created: list[int], n: int) -> None:
    while created[0] < n:
        t.create(users[created[0]])
        created[0] += 1


def ms(us: float) -> str:
    return f"{us / 1000:.2f}"


def stage_latency(t, users, created, counts, iterations):
    ensure_views(t, users, created, max(counts))
    paths = [t.namespace(u) for u in users[:max(counts)]]
    print(f"\nlatency: host mount(2) to MountsChanged, {created[0]} views, {iterations} mounts each")
    print(f"{'watched':>8} {'first med':>10} {'first p99':>10} {'last med':>9} {'last p99':>9}  (ms)")
    rows = []
    for k in counts:
        res = run_events(paths[:k], iterations)
        first = [r[2] for r in res]
        last = [r[3] for r in res]
        rows.append((k, first, last))
        print(f"{k:>8} {ms(bl.median(first)):>10} {ms(bl.percentile(first, 99)):>10} "
              f"{ms(bl.median(last)):>9} {ms(bl.percentile(last, 99)):>9}", flush=True)
    return rows


KINDS = {
    # what nsm-events subscribes as, at n views
    "all": lambda users, paths, n: ["all"],                      # Manager.Subscribe()
    "views": lambda users, paths, n: ["views"],                  # Manager.SubscribeViews()
    "counts": lambda users, paths, n: ["counts"],                # Manager.SubscribeMountCounts()
    # the Cockpit page, one view shown: SubscribeMountCounts() and that view's Namespace.Subscribe()
    "page": lambda users, paths, n: ["page", users[0], paths[0]],
    "each": lambda users, paths, n: paths[:n],                   # Namespace.Subscribe() of every view
}


def stage_cost(t, users, created, counts, iterations, base, kinds):
    daemon, bus = t.daemon_pid(), t.bus_pid()
    cpu_bus = bus_seconds
    base_mount = bl.median([r[0] for r in base])
    print(f"\ncost: what watching adds to a host mount ({iterations} mounts per round, medians); CPU per mount "
          f"and umount of the daemon with its helpers and of dbus-daemon, against the two system calls with "
          f"nobody watching (same run)")
    print(f"no views (at the start): mount {base_mount:.0f} µs, umount {bl.median([r[1] for r in base]):.0f} µs")
    print(f"{'views':>6} {'kind':>6} {'mount µs':>9} {'watched':>8} {'umount µs':>10} {'watched':>8} {'fan-out':>8} "
          f"{'daemon ms':>10} {'(helpers)':>9} {'bus ms':>7} {'ratio':>6} {'first ms':>9} {'last ms':>8} {'last p99':>9}")
    for n in counts:
        ensure_views(t, users, created, n)
        paths = [t.namespace(u) for u in users[:n]]
        for kind in kinds:
            sub = KINDS[kind](users, paths, n)
            plain, watched = [], []
            cpu_d = cpu_b = cpu_h = 0.0
            for _round in range(2):
                plain += run_events(["none"], iterations)
                d0, b0, h0 = cpu_seconds(daemon), cpu_bus(bus), helper_seconds(daemon)
                watched += run_events(sub, iterations, views=n)
                cpu_d += cpu_seconds(daemon) - d0
                cpu_b += cpu_bus(bus) - b0
                cpu_h += helper_seconds(daemon) - h0
            # The subscription itself (every view's first read) is in the CPU too: a run without
            # mounts measures it, to be taken off.
            d0, b0, h0 = cpu_seconds(daemon), cpu_bus(bus), helper_seconds(daemon)
            for _round in range(2):
                run_events(sub, 0, views=n)
            sub_d, sub_b, sub_h = cpu_seconds(daemon) - d0, cpu_bus(bus) - b0, helper_seconds(daemon) - h0
            per = 2 * iterations
            m_plain, m_watch = bl.median([r[0] for r in plain]), bl.median([r[0] for r in watched])
            u_plain, u_watch = bl.median([r[1] for r in plain]), bl.median([r[1] for r in watched])
            d_ms, b_ms = (cpu_d - sub_d) / per * 1000, (cpu_b - sub_b) / per * 1000
            h_ms = (cpu_h - sub_h) / per * 1000
            ratio = (d_ms + b_ms) * 1000 / (m_plain + u_plain)
            print(f"{n:>6} {kind:>6} {m_plain:>9.0f} {m_watch:>8.0f} {u_plain:>10.0f} {u_watch:>8.0f} "
                  f"{m_plain - base_mount:>8.0f} {d_ms:>10.2f} {h_ms:>9.2f} {b_ms:>7.2f} {ratio:>6.1f} "
                  f"{ms(bl.median([r[2] for r in watched])):>9} {ms(bl.median([r[3] for r in watched])):>8} "
                  f"{ms(bl.percentile([r[3] for r in watched], 99)):>9}", flush=True)


def stage_quiet(sb):
    pid = sb.daemon.pid
    c0, w0 = cpu_seconds(pid), wakeups(pid)
    subprocess.run([str(bl.tool("nsm-fanout")), TARGET, "200"], check=True, capture_output=True)
    print(f"\nquiet (nobody watching, ReleaseWithHost=no): 200 host mounts and umounts cost the daemon "
          f"{(cpu_seconds(pid) - c0) * 1000:.0f} ms of CPU and {wakeups(pid) - w0} wakeups")


def loop_device(sb) -> tuple[str, str]:
    image = sb.instance / "usb.img"
    subprocess.run(["truncate", "-s", "16M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    dev = subprocess.run(["losetup", "--find", "--show", str(image)], check=True, capture_output=True,
                         text=True).stdout.strip()
    return dev, str(image)


def free(dev: str) -> bool:
    try:
        os.close(os.open(dev, os.O_RDONLY | os.O_EXCL))
        return True
    except OSError:
        return False


def stage_release(sb, mgr, users, created, n, iterations):
    ensure_views(SandboxTarget(sb, mgr), users, created, n)
    dev, _ = loop_device(sb)
    pid = sb.daemon.pid
    target = "/tmp/nsm-usb"
    os.makedirs(target, exist_ok=True)
    keeper = users[0]
    times, umounts, cpu = [], [], []
    try:
        for _i in range(iterations):
            subprocess.run(["mount", "-t", "ext4", dev, target], check=True)
            os.makedirs(f"{target}/sub", exist_ok=True)
            home = f"/home/{keeper}"
            mgr.BindMount(keeper, f"{target}/sub", f"{home}/usb", 0x2)
            time.sleep(0.3)   # the daemon has seen the mount (one event)
            assert not free(dev)
            c0 = cpu_seconds(pid)
            t0 = time.monotonic()
            subprocess.run(["umount", target], check=True)
            t1 = time.monotonic()
            while not free(dev):
                if time.monotonic() - t0 > 120:
                    raise RuntimeError("the device was not released within 120 s")
                time.sleep(0.0005)
            t2 = time.monotonic()
            time.sleep(0.5)   # the release's helper has been reaped: its CPU counted
            cpu.append(cpu_seconds(pid) - c0)
            umounts.append((t1 - t0) * 1e6)
            times.append((t2 - t1) * 1e6)
    finally:
        subprocess.run(["umount", "-l", target], capture_output=True)
        subprocess.run(["losetup", "-d", dev], capture_output=True)
    print(f"\nrelease (ReleaseWithHost=yes, {created[0]} views, one keeps a bind of the device): host umount(2) "
          f"{bl.median(umounts) / 1000:.1f} ms; device free {ms(bl.median(times))} ms after it (median of {iterations}, "
          f"max {ms(max(times))}); daemon and helpers' CPU {bl.median(cpu) * 1000:.0f} ms per release")


def main_system(args, stages: list[str], watched: list[int], counts: list[int], total: int) -> int:
    if set(stages) - {"latency", "cost"}:
        sys.exit("--system runs the stages latency and cost only (quiet and release restart or "
                 "reconfigure the daemon)")
    if not args.throwaway_machine and "nsmtest=1" not in Path("/proc/cmdline").read_text().split():
        sys.exit("--system adds users to /etc/passwd and leaves views: only on a throwaway machine (a guest of "
                 "tools/qemu-bench, whose kernel command line has nsmtest=1), or with --throwaway-machine")
    t = SystemTarget()
    users = [f"ev{i:05d}" for i in range(total)]
    t.add_users(users)
    created = [0]
    # TARGET stays under /tmp, as in the sandbox: with the shipped configuration
    # (ViewPropagation=slave, PrivateTmp=no) a Debian 12 guest's /tmp is part of its root file
    # system, so a mount there reaches every view as a slave copy of the rest of '/', the same
    # path the sandbox's figures take and the (a host mount under the slave rest of
    # '/'). /mnt (SharedSubtrees=, peers of the host) would reach every view too, both ways.
    # Checked below on the first view rather than assumed.
    os.makedirs(TARGET, exist_ok=True)
    # The kernel's own fan-out is the mount's cost at N views less this, with no view at all.
    base = run_events(["none"], args.iterations)
    ensure_views(t, users, created, 1)
    if not t.view_receives(users[0], TARGET):
        sys.exit(f"a tmpfs mounted on {TARGET} does not show in {users[0]}'s view: pick another target")
    print(f"system: {UNIT} pid {t.daemon_pid()}, dbus-daemon pid {t.bus_pid()}, kernel {os.uname().release}; "
          f"MountEvents={t.mount_events()}; {t.tables_read()}; a view's number of mounts counted with "
          f"{t.counted_with()}; a tmpfs on {TARGET} reaches the views", flush=True)
    if "latency" in stages:
        stage_latency(t, users, created, watched, args.iterations)
    if "cost" in stages:
        stage_cost(t, users, created, counts, args.iterations, base, args.kinds.split(","))
    os.rmdir(TARGET)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stages", default="latency,cost,quiet,release")
    ap.add_argument("--watched", default="1,100,1000", help="views watched for the latency (default 1,100,1000)")
    ap.add_argument("--views", default="1000,10000", help="views for the cost (default 1000,10000)")
    ap.add_argument("--iterations", type=int, default=50, help="mounts per measurement (default 50)")
    ap.add_argument("--release-views", type=int, default=10000)
    ap.add_argument("--system", action="store_true", help="the machine's own daemon under its unit, on the "
                    "system bus; for a throwaway machine (see above)")
    ap.add_argument("--throwaway-machine", action="store_true", help="with --system: this machine may be changed "
                    "(without it, --system needs nsmtest=1 on the kernel command line)")
    ap.add_argument("--kinds", default="all", help="subscriptions for the cost: all (Manager.Subscribe), views "
                    "(SubscribeViews), counts (SubscribeMountCounts), page (the Cockpit page's: "
                    "SubscribeMountCounts and Namespace.Subscribe of the view shown), each (Namespace.Subscribe "
                    "of every view); default all")
    args = ap.parse_args()
    stages = args.stages.split(",")
    watched = [int(v) for v in args.watched.split(",")]
    counts = [int(v) for v in args.views.split(",")]
    total = max([1] + (watched if "latency" in stages else []) + (counts if "cost" in stages else []) +
                ([args.release_views] if "release" in stages else []))

    # Towards the unit's LimitNOFILE=524288: every namespace is an fd of the daemon; a watched one
    # is two more of a mount reader's (two readers share them). Without CAP_SYS_RESOURCE only up
    # to the hard limit (10,000 views need 11,000 in the daemon, a reader 10,000).
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    # As root (CAP_SYS_RESOURCE) the hard limit itself may rise, up to fs.nr_open. The daemon
    # inherits it.
    want = max(hard, 2 * max(counts) + 1000)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
        hard = want
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if "cost" in stages and max(counts) + 1000 > hard:
        sys.exit(f"watching {max(counts)} views needs {max(counts) + 1000} fds; the limit here is {hard}")
    if args.system:
        return main_system(args, stages, watched, counts, total)
    sb = sbx.Sandbox(polkit=False)
    users = [f"ev{i:05d}" for i in range(total)]
    bl.add_users(sb, users)
    created = [0]
    t0 = time.monotonic()
    sb.setup()
    try:
        os.makedirs(TARGET, exist_ok=True)
        if "quiet" in stages:
            sb.start_daemon(StopDelaySec="1h", ReleaseWithHost=False)
            sb.manager().CreateNamespace(users[0])
            stage_quiet(sb)
            sb.stop_daemon()
            sb.new_instance("events")
            created[0] = 0
        sb.start_daemon(StopDelaySec="1h", RateLimitBurst=0, wait=120)
        mgr = sb.manager()
        print(f"sandbox ready in {time.monotonic() - t0:.1f}s; MountEvents={sb.properties()['MountEvents']}")
        # The kernel's own fan-out is the mount's cost at N views less this, with no view at all.
        base = run_events(["none"], args.iterations)
        t = SandboxTarget(sb, mgr)
        if "latency" in stages:
            stage_latency(t, users, created, watched, args.iterations)
        if "cost" in stages:
            stage_cost(t, users, created, counts, args.iterations, base, args.kinds.split(","))
        if "release" in stages:
            stage_release(sb, mgr, users, created, args.release_views, max(3, args.iterations // 10))
        os.rmdir(TARGET)
    finally:
        sb.teardown(check=True)
    return 0


if __name__ == "__main__":
    bl.require_root("bench_mount_events.py")
    sys.exit(main())
