# SPDX-License-Identifier: LGPL-2.1-or-later
"""nsmanager on a Debian 12 that boots with systemd as PID 1 (systemd-nspawn).

The rest of the suite runs nsmanagerd by hand in the sandbox of conftest.py; this module
checks what only a real service manager shows: D-Bus activation through the installed
unit and its hardening (capability bounding set, seccomp, the machine's own mount
namespace), logind sessions (su -l) and user@.service entering the user's namespace
through pam_nsmanager, SharedSubtrees=/mnt reaching a login, the namespace and its
sessions surviving `systemctl stop/start`, `systemctl reload` and a SIGKILL
(Restart=on-failure), `nsctl attach` by the user against the real polkitd, and logout.

How:
  1. tools/nspawn-image builds (once; cached in /var/cache/nsmanager-nspawn/bookworm,
     $NSM_NSPAWN_IMAGE overrides) a debootstrapped minimal Debian 12. The only skip:
     it exits 3, the Debian archive is unreachable when the image has to be built.
  2. A holder process gets a mount namespace of its own (unshare -m, everything
     private, nested inside the pytest process's throwaway namespace of
     tests/sandbox.py). There a tmpfs on /run carries an overlayfs copy of the image
     (tmpfs upper dir), so the cached image stays clean and nspawn's own files under
     /run/systemd/nspawn vanish with it.
  3. Into the copy, as an administrator would: `meson install --destdir` of the build
     ($NSM_BUILD_DIR or build/; no rebuild), the test user alice (uid 2001) with
     useradd, `session optional pam_nsmanager.so` at the end of /etc/pam.d/su-l
     (after common-session's pam_systemd.so, docs/pam.md) and the project's
     pam.d/systemd-user as /etc/pam.d/systemd-user. nsmanagerd.service is not enabled:
     it is D-Bus activated.
  4. `systemd-nspawn -D ROOT -b --register=no --keep-unit --private-network` boots it
     in a cgroup of its own (console to a log file, attached to failures with the
     container's journal). Commands run inside with
     `nsenter --target <container PID 1> --all`.
  5. At the end SIGRTMIN+4 powers the container off; the holder exits, which drops the
     overlay; the cgroups are removed; the pytest process's mount table must be
     exactly what it was.

If pytest dies, the holder sees its stdin close, SIGKILLs the container and removes its
cgroups. The tests share one booted container and run in file order (alice's login is
made once, for the module); any subset can be selected with -k.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sandbox as sandbox_module
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, NAMESPACE_IFACE, REPO, TEST_USERS, timeout

IMAGE_TOOL = REPO / "tools" / "nspawn-image"
MACHINE_NAME = "nsmtest"
UNIT = "nsmanagerd.service"
ALICE = TEST_USERS["alice"]
ALICE_PATH = f"{MANAGER_PATH}/user/_{ALICE.uid}"
PAM_LINE = "session\toptional\tpam_nsmanager.so"

# Inside the holder's mount namespace.
SCRATCH = "/run/nsmtest"
ROOT = SCRATCH + "/root"

CONTAINER_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "SYSTEMD_PAGER": "",
    "SYSTEMD_COLORS": "0",
    "SYSTEMD_LOG_COLOR": "0",
}

# <linux/capability.h>, as systemctl show prints them.
CAPABILITIES = [
    "cap_chown", "cap_dac_override", "cap_dac_read_search", "cap_fowner", "cap_fsetid",
    "cap_kill", "cap_setgid", "cap_setuid", "cap_setpcap", "cap_linux_immutable",
    "cap_net_bind_service", "cap_net_broadcast", "cap_net_admin", "cap_net_raw",
    "cap_ipc_lock", "cap_ipc_owner", "cap_sys_module", "cap_sys_rawio", "cap_sys_chroot",
    "cap_sys_ptrace", "cap_sys_pacct", "cap_sys_admin", "cap_sys_boot", "cap_sys_nice",
    "cap_sys_resource", "cap_sys_time", "cap_sys_tty_config", "cap_mknod", "cap_lease",
    "cap_audit_write", "cap_audit_control", "cap_setfcap", "cap_mac_override",
    "cap_mac_admin", "cap_syslog", "cap_wake_alarm", "cap_block_suspend", "cap_audit_read",
    "cap_perfmon", "cap_bpf", "cap_checkpoint_restore",
]

# The holder: keeps the scratch mount namespace alive. Told the container's pids and
# cgroups, it SIGKILLs the pids and removes the cgroups when its stdin closes (pytest
# gone), unless told "clear" first.
HOLDER = r"""
import os, signal, sys, time
pids, cgroups = [], []
for line in sys.stdin:
    word, _, arg = line.strip().partition(" ")
    if word == "clear":
        pids, cgroups = [], []
    elif word == "pid":
        pids.append(int(arg))
    elif word == "cgroup":
        cgroups.append(arg)
for p in pids:
    try:
        os.kill(p, signal.SIGKILL)
    except OSError:
        pass
deadline = time.monotonic() + 10
for cg in cgroups:
    dirs = sorted((d for d, _, _ in os.walk(cg)), key=lambda d: -d.count("/"))
    for d in dirs:
        while True:
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
"""


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _fmt(argv) -> str:
    return " ".join(str(a) for a in argv)


def run(argv, *, wait: float = 60, check: bool = True, what: str | None = None, input: str | None = None,
        env: dict | None = None, diag=None) -> subprocess.CompletedProcess:
    """Run argv; on a timeout or (check) a non-zero exit, fail with its output (and diag())."""
    try:
        p = subprocess.run([str(a) for a in argv], input=input, capture_output=True, text=True,
                           env=env, timeout=timeout(wait), stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"{what or 'command'} did not finish within {timeout(wait):.0f} s: {_fmt(argv)}\n"
                    f"stdout: {_tail(out, 30)}\nstderr: {_tail(err, 30)}" + (f"\n{diag()}" if diag else ""),
                    pytrace=False)
    if check and p.returncode != 0:
        pytest.fail(f"{what or 'command'} failed (exit status {p.returncode}): {_fmt(argv)}\n"
                    f"stdout: {_tail(p.stdout, 40)}\nstderr: {_tail(p.stderr, 40)}" + (f"\n{diag()}" if diag else ""),
                    pytrace=False)
    return p


def poll(predicate, wait: float, what: str, interval: float = 0.1, diag=None):
    """predicate() until it returns something true; fail after `wait` seconds."""
    deadline = time.monotonic() + timeout(wait)
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout(wait):.0f} s waiting for {what}"
                        + (f"\n{diag()}" if diag else ""), pytrace=False)
        time.sleep(interval)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _status_field(pid, field: str) -> str | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


class Machine:
    """The booted container and the holder of its scratch mount namespace."""

    def __init__(self, image: Path, logdir: Path):
        self.image = image
        self.logdir = logdir
        self.console_log = logdir / "console.log"
        self.holder: subprocess.Popen | None = None
        self.nspawn: subprocess.Popen | None = None
        self.leader: int | None = None
        self.nspawn_status: int | None = None
        self.timings: dict[str, float] = {}
        self.cgroups: list[Path] = []
        self._image_lock = None
        self._console = None

    # --- the holder's mount namespace ----------------------------------------------

    def start_holder(self) -> None:
        self.holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--", "/usr/bin/python3", "-c", HOLDER],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True)
        mine = sandbox_module.mntns_id()
        poll(lambda: self.holder.poll() is not None or
             (os.path.exists(f"/proc/{self.holder.pid}/ns/mnt") and sandbox_module.mntns_id(self.holder.pid) != mine),
             10, "the holder's mount namespace")
        if self.holder.poll() is not None:
            pytest.fail(f"unshare --mount exited with {self.holder.returncode}", pytrace=False)

    def in_holder(self, argv, **kw) -> subprocess.CompletedProcess:
        return run(["nsenter", f"--target={self.holder.pid}", "--mount", "--"] + list(argv), **kw)

    def host_path(self, path: str) -> Path:
        """A path of the holder's mount namespace, as the pytest process reaches it."""
        return Path(f"/proc/{self.holder.pid}/root") / path.lstrip("/")

    def root_path(self, path: str) -> Path:
        """A path inside the container's (copied) root."""
        return self.host_path(ROOT + "/" + path.lstrip("/"))

    def tell_holder(self, line: str) -> None:
        if self.holder and self.holder.poll() is None:
            self.holder.stdin.write(line + "\n")
            self.holder.stdin.flush()

    def lock_image(self) -> None:
        """Shared lock on the image: tools/nspawn-image does not replace it while the
        overlay uses it as its lower layer."""
        self._image_lock = open(str(self.image) + ".lock", "a")
        fcntl.flock(self._image_lock, fcntl.LOCK_SH)

    def prepare_root(self) -> None:
        self.in_holder(["mount", "-t", "tmpfs", "-o", "mode=755,size=2G", "nsmtest-run", "/run"],
                       what="tmpfs on /run in the holder's namespace")
        self.in_holder(["mkdir", "-p", SCRATCH + "/upper", SCRATCH + "/work", ROOT])
        self.in_holder(["mount", "-t", "overlay", "-o",
                        f"lowerdir={self.image},upperdir={SCRATCH}/upper,workdir={SCRATCH}/work",
                        "nsmtest-root", ROOT], what="overlayfs copy of the image")

    def install_project(self, build: Path) -> None:
        if not (build / "build.ninja").exists():
            pytest.fail(f"{build} is not a configured Meson build directory", pytrace=False)
        # --no-rebuild: the binaries the rest of the suite tests (tools/test builds first).
        self.in_holder(["meson", "install", "-C", build, "--destdir", ROOT, "--no-rebuild", "--quiet"],
                       what="meson install --destdir into the container's root", wait=120)
        daemon = self.installed_path("nsmanagerd")
        missing = []
        for binary in (daemon, self.installed_path("nsctl"), self.installed_path("pam_nsmanager.so")):
            ldd = self.in_holder(["chroot", ROOT, "ldd", binary], what=f"ldd {binary} in the container")
            missing += [f"{binary}: {line.strip()}" for line in ldd.stdout.splitlines() if "not found" in line]
        assert not missing, "libraries the image lacks (add their packages to tools/nspawn-image):\n" + "\n".join(missing)

    _installed: dict | None = None

    def installed_path(self, name: str) -> str:
        """Where meson installed the build's file NAME (from meson-info)."""
        if self._installed is None:
            info = json.loads((sandbox_module.build_dir() / "meson-info" / "intro-installed.json").read_text())
            self._installed = {Path(src).name: dest for src, dest in info.items()}
        return self._installed[name]

    def configure_as_admin(self) -> None:
        self.in_holder(["chroot", ROOT, "useradd", "--create-home", "--uid", str(ALICE.uid), "--user-group",
                        "--shell", "/bin/bash", ALICE.name], what="useradd alice in the container")
        common = self.root_path("/etc/pam.d/common-session").read_text()
        assert re.search(r"^session\s+\S+\s+pam_systemd\.so", common, re.M), \
            "the image's common-session has no pam_systemd.so (is libpam-systemd in tools/nspawn-image?)"
        su_l = self.root_path("/etc/pam.d/su-l")
        su_l.write_text(su_l.read_text().rstrip("\n") + "\n" + PAM_LINE + "\n")
        (self.root_path("/etc/pam.d/systemd-user")).write_text((REPO / "pam.d" / "systemd-user").read_text())

    # --- the container ---------------------------------------------------------------

    def make_cgroups(self) -> list[str]:
        """A cgroup of its own for this container, below ours, in the hierarchies
        systemd uses (the name=systemd v1 one, the unified one). With --keep-unit nspawn
        splits the cgroup it was started in into payload/ and supervisor/; two containers
        started from one cgroup (here: the root, the machine's PID 1 is not systemd)
        would share them and kill each other's services."""
        own = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            num, controllers, path = line.split(":", 2)
            own["unified" if num == "0" else controllers] = path
        procs, done = [], set()
        name = f"nsmanager-nspawn-{os.getpid()}-{time.monotonic_ns()}"
        for mnt in sandbox_module.host_mountinfo():
            if mnt.fstype == "cgroup2":
                key = "unified"
            elif mnt.fstype == "cgroup" and "name=systemd" in mnt.superoptions.split(","):
                key = "name=systemd"
            else:
                continue
            if key not in own or key in done:
                continue
            base = Path(mnt.target) / own[key].lstrip("/")
            if not base.is_dir():
                continue
            cg = base / name
            cg.mkdir()
            self.tell_holder(f"cgroup {cg}")
            done.add(key)
            self.cgroups.append(cg)
            procs.append(str(cg / "cgroup.procs"))
        return procs

    def remove_cgroups(self) -> list[str]:
        problems = []
        for cg in self.cgroups:
            if not cg.exists():
                continue
            for dirpath, _, _ in sorted(os.walk(cg), key=lambda w: -w[0].count("/")):
                try:
                    os.rmdir(dirpath)
                except OSError as e:
                    left = Path(dirpath, "cgroup.procs").read_text().split() if Path(dirpath, "cgroup.procs").exists() else []
                    problems.append(f"cgroup {dirpath} not removed: {e.strerror} (processes {left})")
        self.cgroups = []
        return problems

    def boot(self) -> None:
        self._console = open(self.console_log, "w")
        argv = ["nsenter", f"--target={self.holder.pid}", "--mount", "--",
                "systemd-nspawn", "-D", ROOT, "-b", "--register=no", "--keep-unit", "--private-network",
                "-M", MACHINE_NAME, "--console=read-only"]
        self._console.write("# " + _fmt(argv) + "\n")
        procs = self.make_cgroups()
        # Into the container's own cgroups first, then exec nspawn.
        argv = ["sh", "-c", 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"',
                "sh"] + procs + ["--"] + argv
        self._console.flush()
        start = time.monotonic()
        self.nspawn = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._console,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        self.tell_holder(f"pid {self.nspawn.pid}")

        def leader():
            if self.nspawn.poll() is not None:
                pytest.fail(f"systemd-nspawn exited with {self.nspawn.returncode} before the container "
                            f"started\n{self.diag()}", pytrace=False)
            for c in _children(self.nspawn.pid):
                nspid = (_status_field(c, "NSpid") or "").split()
                if len(nspid) >= 2 and nspid[-1] == "1":
                    return c
            return None
        self.leader = poll(leader, 30, "the container's PID 1", diag=self.diag)
        self.tell_holder(f"pid {self.leader}")

        def booted():
            if self.nspawn.poll() is not None:
                pytest.fail(f"systemd-nspawn exited with {self.nspawn.returncode} during boot\n{self.diag()}",
                            pytrace=False)
            p = self.exec(["systemctl", "is-system-running", "--wait"], check=False, wait=60)
            return p.stdout.strip() if p.stdout.strip() in ("running", "degraded") else None
        state = poll(booted, 90, "the container to boot (systemctl is-system-running --wait)",
                     interval=0.2, diag=self.diag)
        self.timings["boot"] = time.monotonic() - start
        if state != "running":
            failed = self.exec(["systemctl", "--failed", "--no-legend"], check=False).stdout
            print(f"container booted {state}; failed units:\n{failed}")

    def exec(self, argv, **kw) -> subprocess.CompletedProcess:
        """Run argv in the container, as root, in every namespace of its PID 1."""
        kw.setdefault("diag", self.diag)
        kw.setdefault("wait", 30)
        return run(["nsenter", f"--target={self.leader}", "--all", "--"] + list(argv), env=CONTAINER_ENV, **kw)

    def popen(self, argv) -> subprocess.Popen:
        return subprocess.Popen(["nsenter", f"--target={self.leader}", "--all", "--"] + list(argv),
                                env=CONTAINER_ENV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)

    def running(self) -> bool:
        return self.nspawn is not None and self.nspawn.poll() is None

    def journal(self, *args, lines: int = 150) -> str:
        if not self.running() or self.leader is None:
            return "(the container is not running)"
        try:
            p = subprocess.run(["nsenter", f"--target={self.leader}", "--all", "--",
                                "journalctl", "--no-pager", "-o", "short-monotonic", "-n", str(lines)] + list(args),
                               env=CONTAINER_ENV, capture_output=True, text=True, timeout=20,
                               stdin=subprocess.DEVNULL)
            return p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            return "(journalctl timed out)"

    def console_text(self, lines: int = 100) -> str:
        try:
            text = self.console_log.read_text(errors="replace")
            text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text).replace("\r", "")
            return _tail("\n".join(line for line in text.splitlines() if line.strip()), lines)
        except OSError:
            return "(no console log)"

    def diag(self) -> str:
        return (f"--- container console ({self.console_log}, last 60 lines) ---\n{self.console_text(60)}\n"
                f"--- journalctl -u {UNIT} (last 60 lines) ---\n{self.journal('-u', UNIT, lines=60)}")

    # --- D-Bus through busctl ---------------------------------------------------------

    def busctl(self, *args, **kw):
        p = self.exec(["busctl", "--json=short"] + list(args), **kw)
        return json.loads(p.stdout)["data"] if p.stdout.strip() else None

    def ns_property(self, name: str):
        return self.busctl("get-property", BUS_NAME, ALICE_PATH, NAMESPACE_IFACE, name,
                           what=f"reading {name} of alice's namespace object (has her login created one?)")

    def systemctl_value(self, prop: str, unit: str = UNIT) -> str:
        return self.exec(["systemctl", "show", "-p", prop, "--value", unit]).stdout.strip()

    def is_active(self, unit: str = UNIT) -> str:
        return self.exec(["systemctl", "is-active", unit], check=False).stdout.strip()

    def mntns(self, pid) -> str:
        """readlink /proc/PID/ns/mnt of a process of the container."""
        return self.exec(["readlink", f"/proc/{pid}/ns/mnt"], what=f"readlink /proc/{pid}/ns/mnt").stdout.strip()

    def proc_status(self, pid) -> dict:
        text = self.exec(["cat", f"/proc/{pid}/status"]).stdout
        return {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}

    def su_alice(self, command: str, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("what", f"su -l alice -c {command!r}")
        return self.exec(["su", "-l", ALICE.name, "-c", command], **kw)

    # --- the end ----------------------------------------------------------------------

    def poweroff(self, wait: float = 60) -> int | None:
        """SIGRTMIN+4 to the container's PID 1 (what machinectl poweroff sends); SIGKILL
        if it does not go down in time. Returns nspawn's exit status."""
        if self.nspawn is None:
            return None
        if self.nspawn.poll() is None and self.leader is not None:
            start = time.monotonic()
            try:
                os.kill(self.leader, signal.SIGRTMIN + 4)
            except ProcessLookupError:
                pass
            deadline = start + timeout(wait)
            while self.nspawn.poll() is None and time.monotonic() < deadline:
                self._reap_container_orphans()
                time.sleep(0.05)
            if self.nspawn.poll() is not None:
                self.timings["poweroff"] = time.monotonic() - start
            else:
                print(f"the container did not power off within {timeout(wait):.0f} s: SIGKILL")
                for pid in (self.leader, self.nspawn.pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.nspawn.wait(30)
                self.nspawn_status = None
                return None
        self.nspawn_status = self.nspawn.returncode
        return self.nspawn_status

    @staticmethod
    def _reap_container_orphans() -> None:
        """Reap zombies of container processes that became our children. The process an
        nsenter forked into the container's PID namespace is reparented to the pytest
        process (a child subreaper, tests/sandbox.py) when that nsenter dies (killed on a
        timeout); unreaped, it stays in the container's process table and systemd-shutdown
        waits for it until its 90 s timeout."""
        me = str(os.getpid())
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            if (_status_field(pid, "PPid") == me and (_status_field(pid, "State") or "").startswith("Z")
                    and len((_status_field(pid, "NSpid") or "").split()) > 1):
                try:
                    os.waitpid(int(pid), os.WNOHANG)
                except ChildProcessError:
                    pass

    def release(self) -> list[str]:
        """End the holder: its mount namespace, the overlay and the tmpfs go with it; and
        remove the container's cgroups. Returns what could not be cleaned up."""
        if self.holder is not None and self.holder.poll() is None:
            if self.nspawn is None or self.nspawn.poll() is not None:
                self.tell_holder("clear")   # the pids are gone: do not kill a reused one
            self.holder.stdin.close()
            try:
                self.holder.wait(timeout(20))
            except subprocess.TimeoutExpired:
                self.holder.kill()
                self.holder.wait(10)
        if self._console is not None:
            self._console.close()
            self._console = None
        if self._image_lock is not None:
            self._image_lock.close()
            self._image_lock = None
        return self.remove_cgroups() if self.nspawn is None or self.nspawn.poll() is not None else []


def build_image() -> tuple[Path, float]:
    if not IMAGE_TOOL.exists():
        pytest.fail(f"{IMAGE_TOOL} is missing", pytrace=False)
    for tool in ("debootstrap", "systemd-nspawn"):
        if not any(Path(d, tool).exists() for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin")):
            pytest.fail(f"{tool} is not installed: run tools/deps (it installs debootstrap and "
                        "systemd-container)", pytrace=False)
    start = time.monotonic()
    try:
        p = subprocess.run([str(IMAGE_TOOL)], capture_output=True, text=True, timeout=timeout(1800),
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("tools/nspawn-image did not finish within 30 minutes", pytrace=False)
    if p.returncode == 3:
        pytest.skip(f"the Debian archive is unreachable, so there is no image to boot: {p.stderr.strip()}")
    if p.returncode != 0:
        pytest.fail(f"tools/nspawn-image failed (exit status {p.returncode}):\n{_tail(p.stderr, 40)}", pytrace=False)
    sys.stderr.write(p.stderr)
    return Path(p.stdout.strip().splitlines()[-1]), time.monotonic() - start


def _mount_table() -> list[tuple]:
    return [(m.id, m.parent, m.target, m.fstype, m.source, m.optional)
            for m in sandbox_module.host_mountinfo()]


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    if not sandbox_module.namespace_baseline() or sandbox_module._entered_namespace != sandbox_module.mntns_id():
        pytest.fail("the pytest process is not in the sandbox's throwaway mount namespace "
                    "(conftest.py enters it at import)", pytrace=False)
    options = {o["name"]: o["value"] for o in json.loads(
        (sandbox_module.build_dir() / "meson-info" / "intro-buildoptions.json").read_text())}
    if options.get("b_sanitize", "none") != "none":
        pytest.skip(f"{sandbox_module.build_dir()} is a sanitizer build (b_sanitize={options['b_sanitize']}): "
                    "the image has no sanitizer runtime; this test runs against the plain build")
    baseline = _mount_table()
    image, image_time = build_image()
    m = Machine(image, tmp_path_factory.mktemp("nspawn"))
    m.timings["image"] = image_time
    m.baseline = baseline
    try:
        m.lock_image()
        m.start_holder()
        start = time.monotonic()
        m.prepare_root()
        m.install_project(sandbox_module.build_dir())
        m.configure_as_admin()
        m.timings["prepare"] = time.monotonic() - start
        m.boot()
        yield m
    finally:
        m.poweroff()
        leftovers = m.release()
        print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in m.timings.items()))
    # (Not reached when the setup failed: its error is the one to see.)
    assert not leftovers, "\n".join(leftovers)
    now = _mount_table()
    assert now == baseline, ("the pytest process's mount table changed: "
                             f"added {[x for x in now if x not in baseline]}, "
                             f"removed {[x for x in baseline if x not in now]}")


@pytest.fixture(autouse=True)
def _container_logs_on_failure(request):
    """Attach the container's console and journal to a failed test's report."""
    yield
    rep = getattr(request.node, "rep_call", None)
    m = request.node.funcargs.get("machine") if hasattr(request.node, "funcargs") else None
    if rep is not None and rep.failed and isinstance(m, Machine):
        rep.sections.append(("container console (last 100 lines)", m.console_text(100)))
        rep.sections.append(("container journal (last 150 lines)", m.journal(lines=150)))


def _ns_id(link: str) -> int:
    found = re.fullmatch(r"mnt:\[(\d+)\]", link.strip())
    assert found, f"not a mount namespace link: {link!r}"
    return int(found.group(1))


# ---------------------------------------------------------------------------------------

def test_unit_verifies(machine):
    """The installed unit passes systemd-analyze verify under the container's systemd."""
    # --man=no: the minimal image has no man-db; test_install.py checks Documentation=man:…
    # against the installed pages.
    p = machine.exec(["systemd-analyze", "verify", "--man=no", UNIT], check=False)
    ours = [line for line in (p.stdout + p.stderr).splitlines() if "nsmanagerd" in line]
    assert p.returncode == 0 and not ours, f"systemd-analyze verify {UNIT}:\n{p.stdout}{p.stderr}"
    assert machine.systemctl_value("UnitFileState") == "disabled", "nothing should have enabled the unit"


def test_dbus_activation_and_hardening(machine):
    """The first call D-Bus-activates nsmanagerd.service, which runs with the unit's
    capability bounding set and seccomp filter, in the machine's own mount namespace."""
    assert machine.is_active() in ("inactive", "active"), machine.is_active()
    was_active = machine.is_active() == "active"
    reply = machine.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces",
                           what="busctl call ListNamespaces")
    assert isinstance(reply, list) and len(reply) == 1 and isinstance(reply[0], list), reply
    assert machine.is_active() == "active", f"{UNIT} is {machine.is_active()} after the call\n{machine.diag()}"
    if not was_active:
        log = machine.journal("-u", "dbus.service", "--grep", "org.example.NSManager")
        assert f"unit='{UNIT}'" in log, f"no D-Bus activation of {UNIT} in dbus.service's journal:\n{log}"

    pid = int(machine.systemctl_value("MainPID"))
    assert pid > 0
    status = machine.proc_status(pid)
    pid1_bnd = int(machine.proc_status(1)["CapBnd"], 16)
    unit_caps = machine.systemctl_value("CapabilityBoundingSet").split()
    unknown = [c for c in unit_caps if c not in CAPABILITIES]
    assert not unknown, f"unknown capability names {unknown}"
    unit_mask = sum(1 << CAPABILITIES.index(c) for c in unit_caps)
    bnd = int(status["CapBnd"], 16)
    names = [c for i, c in enumerate(CAPABILITIES) if bnd & (1 << i)]
    assert bnd == unit_mask & pid1_bnd, \
        f"CapBnd of nsmanagerd is {bnd:#x} ({' '.join(names)}), the unit says {unit_mask:#x} ({' '.join(unit_caps)})"
    assert bnd != pid1_bnd, "the daemon's bounding set is not limited"
    if machine.systemctl_value("SystemCallFilter"):
        assert status["Seccomp"] == "2", f"no seccomp filter on nsmanagerd: Seccomp {status['Seccomp']}"
    nnp = machine.systemctl_value("NoNewPrivileges") == "yes"
    assert status["NoNewPrivs"] == ("1" if nnp else "0")
    # The unit must not give the daemon a mount namespace of its own.
    assert machine.mntns(pid) == machine.mntns(1), "nsmanagerd does not run in the machine's mount namespace"


class Login:
    """A login of alice that lasts the module: su -l alice running a shell that execs a
    sleep, started through nsenter like the other commands."""

    def __init__(self, machine: Machine):
        self.machine = machine
        self.proc = machine.popen(["su", "-l", ALICE.name, "-c", "echo $$; readlink /proc/self/ns/mnt; exec sleep 3600"])
        out = b""
        deadline = time.monotonic() + timeout(30)
        while out.count(b"\n") < 2:
            left = deadline - time.monotonic()
            ready = select.select([self.proc.stdout], [], [], max(0, left))[0] if left > 0 else []
            chunk = os.read(self.proc.stdout.fileno(), 4096) if ready else b""
            if not chunk:
                self.proc.kill()
                self.proc.wait(10)
                pytest.fail(f"su -l alice did not start (exit status {self.proc.returncode}): stdout {out!r}, "
                            f"stderr {self.proc.stderr.read()!r}\n{machine.diag()}", pytrace=False)
            out += chunk
        lines = out.decode().split("\n")
        self.pid = int(lines[0])      # the sleep, in the container's PID namespace
        self.link = lines[1]          # "mnt:[N]"

    def logout(self) -> int | None:
        """End the sleep: su closes its PAM session (pam_nsmanager's CloseSession) and
        exits, then nsenter. Returns su's exit status."""
        if self.proc.poll() is None and self.machine.running():
            self.machine.exec(["sh", "-c", f"kill -TERM {self.pid}"], check=False)
        try:
            self.proc.wait(timeout(20))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for f in (self.proc.stdout, self.proc.stderr):
            if not f.closed:
                f.close()
        return self.proc.returncode


@pytest.fixture(scope="module")
def alice_session(machine):
    login = Login(machine)
    yield login
    login.logout()


def test_su_login_enters_namespace(machine, alice_session):
    """su -l alice (pam_systemd, then pam_nsmanager) lands in alice's namespace: the
    MountNamespaceId of her namespace object."""
    link = alice_session.link
    ns_id = machine.ns_property("MountNamespaceId")
    assert _ns_id(link) == ns_id, f"alice's login is in {link}, her namespace object says mnt:[{ns_id}]"
    assert link != machine.mntns(1), "alice's login stayed in the machine's namespace"
    once = machine.su_alice("readlink /proc/self/ns/mnt").stdout.strip()
    assert once == link, f"a second su -l alice is in {once}, the first in {link}"
    sessions = machine.ns_property("Sessions")
    # su's logind session (XDG_SESSION_ID, "c1"...) is recorded under its logind id.
    logind = machine.exec(["loginctl", "list-sessions", "--no-legend"]).stdout
    alice_ids = [line.split()[0] for line in logind.splitlines() if ALICE.name in line.split()]
    assert alice_ids and set(alice_ids) & set(sessions), \
        f"alice's logind sessions {alice_ids} are not among the namespace's Sessions {sessions}"
    listing = machine.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces")[0]
    assert [ALICE.name, ALICE.uid] in [row[:2] for row in listing], listing


def test_host_mount_under_mnt_reaches_view(machine, alice_session):
    """A tmpfs mounted on the machine's /mnt appears in alice's view (SharedSubtrees=/mnt),
    and its unmount too."""
    probe = "/mnt/nsm-probe"
    machine.exec(["mkdir", "-p", probe])
    machine.exec(["mount", "-t", "tmpfs", "-o", "size=1m", "nsm-probe", probe])
    try:
        machine.exec(["sh", "-c", f"echo from-the-host > {probe}/hello"])
        seen = machine.su_alice(f"cat {probe}/hello; findmnt -n -o FSTYPE,SOURCE {probe}", check=False)
        assert seen.stdout.split() == ["from-the-host", "tmpfs", "nsm-probe"], \
            f"alice's view does not show the host's tmpfs on {probe}: {seen.stdout!r} {seen.stderr!r}"
        mountinfo = machine.exec(["cat", f"/proc/{alice_session.pid}/mountinfo"]).stdout
        assert f" {probe} " in mountinfo, f"{probe} is not in the mount table of alice's session"
    finally:
        machine.exec(["umount", probe])
    gone = machine.su_alice(f"findmnt -n {probe} || echo none", check=False).stdout.strip()
    assert gone == "none", f"the unmount did not reach alice's view: {gone}"


def test_restart_keeps_namespace(machine, alice_session):
    """systemctl stop, then start: the pinned namespace survives, with the same id and
    sessions, and a new login still lands in it."""
    pid, link = alice_session.pid, alice_session.link
    ns_id = machine.ns_property("MountNamespaceId")
    sessions = sorted(machine.ns_property("Sessions"))
    machine.exec(["systemctl", "stop", UNIT], what=f"systemctl stop {UNIT}")
    assert machine.is_active() == "inactive", f"{UNIT} failed on stop\n{machine.diag()}"
    assert machine.mntns(pid) == link, "alice's session lost its namespace when the daemon stopped"
    machine.exec(["systemctl", "start", UNIT], what=f"systemctl start {UNIT}")
    assert machine.is_active() == "active", machine.diag()
    assert machine.ns_property("MountNamespaceId") == ns_id, "the namespace changed across the restart"
    assert sorted(machine.ns_property("Sessions")) == sessions, "the sessions were lost across the restart"
    again = machine.su_alice("readlink /proc/self/ns/mnt").stdout.strip()
    assert again == link, f"after the restart su -l alice lands in {again}, not {link}"
    errors = machine.journal("-u", UNIT, "-p", "warning", lines=50)
    print(f"warnings of {UNIT} in the journal:\n{errors}")


def test_reload(machine, alice_session):
    """systemctl reload (ExecReload=busctl call … ReloadConfig) succeeds and keeps the
    service and the namespace."""
    ns_id = machine.ns_property("MountNamespaceId")
    pid = machine.systemctl_value("MainPID")
    machine.exec(["systemctl", "reload", UNIT], what=f"systemctl reload {UNIT}")
    assert machine.is_active() == "active" and machine.systemctl_value("MainPID") == pid, machine.diag()
    assert machine.ns_property("MountNamespaceId") == ns_id


def test_crash_is_restarted(machine, alice_session):
    """SIGKILL to the daemon: systemd restarts it (Restart=on-failure) and the new one
    takes up the pinned namespace and its sessions."""
    link = alice_session.link
    ns_id = machine.ns_property("MountNamespaceId")
    sessions = sorted(machine.ns_property("Sessions"))
    old = int(machine.systemctl_value("MainPID"))
    machine.exec(["sh", "-c", f"kill -KILL {old}"])   # (minbase has no procps: the shell's kill)

    def restarted():
        pid = machine.systemctl_value("MainPID")
        return machine.is_active() == "active" and pid not in ("0", str(old)) and pid
    poll(restarted, 30, f"systemd to restart {UNIT} after SIGKILL", diag=machine.diag)
    assert int(machine.systemctl_value("NRestarts")) >= 1
    assert machine.ns_property("MountNamespaceId") == ns_id, "the namespace changed across the crash"
    assert sorted(machine.ns_property("Sessions")) == sessions, "the sessions were lost across the crash"
    assert machine.su_alice("readlink /proc/self/ns/mnt").stdout.strip() == link


def test_attach_as_user(machine, alice_session):
    """nsctl attach by alice herself, unprivileged, from the machine's namespace: the real
    polkitd allows attach-own, and systemd runs the command in her namespace as her, not as
    the daemon's child: none of the service's bounding set (tests/test_nspawn_attach.py has
    the rest)."""
    link = alice_session.link
    p = machine.exec(["setpriv", f"--reuid={ALICE.uid}", f"--regid={ALICE.gid}", "--init-groups", "--",
                      machine.installed_path("nsctl"), "attach", ALICE.name, "--",
                      "sh", "-c", "id -u; readlink /proc/self/ns/mnt; sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status"],
                     what="nsctl attach alice as alice")
    uid, attached, bnd = p.stdout.split()
    assert uid == str(ALICE.uid)
    assert attached == link, f"the attached command is in {attached}, alice's namespace is {link}"
    daemon_bnd = machine.proc_status(int(machine.systemctl_value("MainPID")))["CapBnd"]
    assert bnd != daemon_bnd, f"the attached command has the daemon's CapBnd {bnd}"


def test_user_manager_in_namespace(machine, alice_session):
    """pam_systemd of alice's login started user@2001.service; with the project's
    systemd-user stack (pam.d/systemd-user) systemd --user runs in alice's namespace."""
    unit = f"user@{ALICE.uid}.service"
    poll(lambda: machine.is_active(unit) == "active", 30, f"{unit} to be active", diag=machine.diag)
    pid = int(machine.systemctl_value("MainPID", unit))
    link = alice_session.link
    assert machine.mntns(pid) == link, f"{unit} (pid {pid}) is in {machine.mntns(pid)}, alice's namespace is {link}"
    sessions = machine.ns_property("Sessions")
    assert any(s.startswith("pam-systemd-user-") for s in sessions), \
        f"no systemd-user session among {sessions}"
    # The project's example is Debian 12's stack plus the one line.
    def rules(text):
        return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    debian = rules(machine.root_path("/usr/lib/pam.d/systemd-user").read_text())
    ours = rules((REPO / "pam.d" / "systemd-user").read_text())
    assert ours == debian + ["session optional pam_nsmanager.so"], \
        f"pam.d/systemd-user is no longer Debian 12's stack plus the line:\n{ours}\n{debian}"


def test_logout_closes_session(machine, alice_session):
    """alice logs out: su's close_session (pam_nsmanager's CloseSession) takes her logind
    session off the namespace, which stays for the user manager's session."""
    before = machine.ns_property("Sessions")
    logind = [s for s in before if not s.startswith("pam-")]
    assert logind, f"no logind session of su among {before}"
    status = alice_session.logout()
    assert status is not None
    after = poll(lambda: (lambda now: now if not set(logind) & set(now) else None)(machine.ns_property("Sessions")),
                 10, f"alice's su session to leave Sessions ({before})", diag=machine.diag)
    assert any(s.startswith("pam-systemd-user-") for s in after), after
    log = machine.journal("-u", UNIT, "--grep", "closed", lines=20)
    assert any(f"Session '{s}' of 'alice' closed" in log for s in logind), log


def test_poweroff_leaves_nothing(machine):
    """The container powers off cleanly; the holder's namespace goes with the copy, the
    cached image is untouched (tested last: the module's fixture then only checks)."""
    status = machine.poweroff()
    assert status == 0, f"systemd-nspawn exited with {status}\n{machine.console_text(40)}"
    leftovers = machine.release()
    assert not leftovers, "\n".join(leftovers)
    passwd = (machine.image / "etc" / "passwd").read_text()
    assert f"\n{ALICE.name}:" not in passwd, "alice was added to the cached image"
    assert not (machine.image / machine.installed_path("nsmanagerd").lstrip("/")).exists(), \
        "the project was installed into the cached image"
    check = subprocess.run([str(IMAGE_TOOL), "--check"], capture_output=True)
    assert check.returncode == 0, "the cached image is no longer current after the run"
    now = _mount_table()
    assert now == machine.baseline, f"mount table changed: {[x for x in now if x not in machine.baseline]}"


# ---------------------------------------------------------------------------------------
# The Debian package (debian/, tools/build-deb) in a container of its own.

def _common_session(m: Machine) -> list[str]:
    text = m.exec(["cat", "/etc/pam.d/common-session"]).stdout
    return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_deb_package(tmp_path_factory):
    """The package as an administrator installs it, in a fresh copy of the image (not the
    module's container, which had `meson install`): `apt-get install ./nsmanager_*.deb`
    (offline: the image has every dependency) leaves nsmanagerd.service installed but
    disabled and stopped; the first bus call activates it; `pam-auth-update --enable
    nsmanager` adds the session line to common-session after pam_systemd.so; `su -l alice`
    lands in her namespace. `apt-get remove` takes the line out again, stops the daemon and
    keeps the conffile, which `purge` removes; logins work throughout."""
    if not sandbox_module.namespace_baseline() or sandbox_module._entered_namespace != sandbox_module.mntns_id():
        pytest.fail("the pytest process is not in the sandbox's throwaway mount namespace "
                    "(conftest.py enters it at import)", pytrace=False)
    debdir = tmp_path_factory.mktemp("deb")
    run([REPO / "tools" / "build-deb", "--no-install-deps", debdir], wait=900, what="tools/build-deb")
    debs = sorted(debdir.glob("nsmanager_*.deb"))
    assert len(debs) == 1, f"tools/build-deb made {sorted(p.name for p in debdir.iterdir())}"
    deb = "/root/" + debs[0].name
    line = "session optional pam_nsmanager.so"

    baseline = _mount_table()
    image, image_time = build_image()
    m = Machine(image, tmp_path_factory.mktemp("nspawn-deb"))
    m.timings["image"] = image_time
    leftovers: list[str] = []
    try:
        m.lock_image()
        m.start_holder()
        m.prepare_root()
        # (Not /tmp: nspawn mounts a tmpfs there.)
        m.root_path(deb).write_bytes(debs[0].read_bytes())
        m.boot()
        apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "--no-install-recommends",
               "-o", "Dpkg::Options::=--force-confdef"]
        p = m.exec(apt + ["install", deb], wait=300, what=f"apt-get install {deb} in the container")
        out = [x for x in (p.stdout + p.stderr).splitlines() if not x.startswith("(Reading database")]
        print("apt-get install:\n" + "\n".join(out[-30:]))
        m.exec(["useradd", "--create-home", "--uid", str(ALICE.uid), "--user-group", "--shell", "/bin/bash",
                ALICE.name], what="useradd alice")

        # The unit is installed as the package left it: not enabled, not started.
        unit = m.exec(["systemctl", "cat", UNIT], what=f"systemctl cat {UNIT}").stdout
        assert "# /lib/systemd/system/nsmanagerd.service" in unit, unit
        assert re.search(r"^ExecStart=/usr/libexec/nsmanagerd$", unit, re.M), unit
        assert m.systemctl_value("UnitFileState") == "disabled", "the package enabled the unit"
        assert m.is_active() == "inactive", f"installing the package started {UNIT}: {m.is_active()}"
        assert not any("pam_nsmanager" in x for x in _common_session(m)), "installing the package enabled the PAM module"

        # D-Bus activation through the packaged activation file and bus policy.
        reply = m.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces",
                         what="busctl call ListNamespaces")
        assert reply == [[]], reply
        assert m.is_active() == "active", f"{UNIT} was not activated by the call\n{m.diag()}"

        # The administrator enables the PAM profile.
        before = _common_session(m)
        m.exec(["env", "DEBIAN_FRONTEND=noninteractive", "pam-auth-update", "--enable", "nsmanager"],
               what="pam-auth-update --enable nsmanager")
        enabled = _common_session(m)
        assert line in enabled, f"pam-auth-update did not add {line!r}:\n" + "\n".join(enabled)
        assert [x for x in enabled if x != line] == before, "pam-auth-update changed more than the one line"
        systemd = next((i for i, x in enumerate(enabled) if "pam_systemd.so" in x), None)
        assert systemd is not None and enabled.index(line) > systemd, enabled

        login = Login(m)
        try:
            ns_id = m.ns_property("MountNamespaceId")
            assert _ns_id(login.link) == ns_id, f"alice's login is in {login.link}, her namespace is mnt:[{ns_id}]"
            assert login.link != m.mntns(1), "alice's login stayed in the machine's namespace"
            assert any(not s.startswith("pam-") for s in m.ns_property("Sessions")), \
                "alice's logind session is not among her namespace's sessions"
        finally:
            login.logout()

        # Removal: the PAM line goes (prerm), the daemon stops, the conffile stays.
        p = m.exec(apt + ["remove", "nsmanager"], wait=180, what="apt-get remove nsmanager")
        assert not any("pam_nsmanager" in x for x in _common_session(m)), \
            "apt-get remove left pam_nsmanager.so in common-session"
        assert m.is_active() != "active", f"{UNIT} still runs after apt-get remove\n{p.stdout}"
        assert m.exec(["test", "-e", "/usr/libexec/nsmanagerd"], check=False).returncode != 0
        assert m.exec(["test", "-f", "/etc/nsmanager/nsmanagerd.conf"], check=False).returncode == 0, \
            "apt-get remove removed the conffile"
        after = m.su_alice("readlink /proc/self/ns/mnt").stdout.strip()
        assert after == m.mntns(1), f"after the removal su -l alice lands in {after}, not the machine's namespace"
        m.exec(apt + ["purge", "nsmanager"], wait=180, what="apt-get purge nsmanager")
        assert m.exec(["test", "-e", "/etc/nsmanager/nsmanagerd.conf"], check=False).returncode != 0, \
            "apt-get purge left /etc/nsmanager/nsmanagerd.conf"

        status = m.poweroff()
        assert status == 0, f"systemd-nspawn exited with {status}\n{m.console_text(40)}"
    finally:
        m.poweroff()
        leftovers = m.release()
        print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in m.timings.items()))
    assert not leftovers, "\n".join(leftovers)
    assert not (image / "usr/libexec/nsmanagerd").exists(), "the package was installed into the cached image"
    now = _mount_table()
    assert now == baseline, f"mount table changed: {[x for x in now if x not in baseline]}"
