# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Debian 12 that boots with systemd as PID 1 (systemd-nspawn), for the tests that need
what only a real service manager shows: D-Bus activation, the unit's hardening, logind
sessions, user@.service, the Debian package's maintainer scripts.

How:
  1. tools/nspawn-image builds (once; cached in /var/cache/nsmanager-nspawn/bookworm,
     $NSM_NSPAWN_IMAGE overrides) a debootstrapped minimal Debian 12. The only skip:
     it exits 3, the Debian archive is unreachable when the image has to be built.
  2. A holder process gets a mount namespace of its own (unshare -m, everything
     private, nested inside the pytest process's throwaway namespace of
     tests/sandbox.py). There a tmpfs on /run carries an overlayfs copy of the image
     (tmpfs upper dir), so the cached image stays clean and nspawn's own files under
     /run/systemd/nspawn vanish with it. Every container has its own holder, so
     several may run at once.
  3. A prepare step writes into the copy before the boot. install_as_admin() does what
     an administrator would: `meson install --destdir` of the build ($NSM_BUILD_DIR or
     build/; no rebuild), the test user alice (uid 2001) with useradd,
     `session optional pam_nsmanager.so` at the end of /etc/pam.d/su-l (after
     common-session's pam_systemd.so) and of /etc/pam.d/common-session-noninteractive
     (which Debian's systemd-user stack includes: user@.service), as docs/pam.md says
     for an installation without the package's pam-auth-update profile.
     nsmanagerd.service is not enabled: it is D-Bus activated.
  4. `systemd-nspawn -D ROOT -b --register=no --keep-unit --private-network` boots it
     in a cgroup of its own (console to a log file, attached to failures with the
     container's journal). Commands run inside with
     `nsenter --target <container PID 1> --all`.
  5. At the end SIGRTMIN+4 powers the container off; the holder exits, which drops the
     overlay; the cgroups are removed; the pytest process's mount table must be
     exactly what it was.

If pytest dies, the holder sees its stdin close, SIGKILLs the container and removes its
cgroups.

Use:
  - The fixture `machine` of tests/conftest.py: a container prepared by
    install_as_admin(), booted once for the test module that asks for it and shared by
    that module's tests. A test must not leave it worse than it found it (a service it
    stops, it starts again); one that has to end a container boots its own.
  - The fixture `alice_session`: alice logged in on that container (a Login), made by
    the first test that needs it and kept for the next while it lasts.
  - For a container prepared otherwise (a package instead of the build, another
    configuration), boot one in the test:
        with booted(tmp_path_factory.mktemp("name"), prepare=lambda m: ...) as m:
            m.exec([...])
    booted() fails the test if the container does not power off cleanly or leaves
    cgroups or mounts behind. Such a test takes the `sandbox` fixture before
    tmp_path_factory: pytest's temporary directories belong on the sandbox's /tmp (one
    made before it would be on the machine's real /tmp, and hidden from later tests
    under the sandbox's tmpfs).

Machine: exec(argv, check=True, wait=30, what=, input=) -> CompletedProcess (fails the
test on a non-zero exit or a timeout, with the console and the unit's journal), popen,
su_alice(command), busctl(*args) -> the reply's data, ns_property(name) of alice's
namespace object, systemctl_value(prop, unit), is_active(unit), mntns(pid),
proc_status(pid), journal(*args), console_text(), diag(), root_path(path) (the copy's
root, from the pytest process), installed_path(name) (where meson installs NAME),
poweroff() -> nspawn's exit status, release() -> what was left behind.
Login(machine): `su -l alice` holding a shell: .pid, .link ("mnt:[N]"), .session
(logind's XDG_SESSION_ID), .alive(), .logout(). ns_id_of("mnt:[N]") -> N.
Stick(machine, directory): ext4 on a loop device attached by the pytest process, its node
made in the container's /dev (.dev, .devno "7:N", .free(), .close()).
run(argv, ...) fails the test with what it saw; waits are helpers.wait_until.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sandbox as sandbox_module
from helpers import ns_path, wait_until
from sandbox import BUS_NAME, NAMESPACE_IFACE, REPO, TEST_USERS, timeout

IMAGE_TOOL = REPO / "tools" / "nspawn-image"
MACHINE_NAME = "nsmtest"
UNIT = "nsmanagerd.service"
ALICE = TEST_USERS["alice"]
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
        wait_until(lambda: self.holder.poll() is not None or
                   (os.path.exists(f"/proc/{self.holder.pid}/ns/mnt") and sandbox_module.mntns_id(self.holder.pid) != mine),
                   "the holder's mount namespace", 10, interval=0.1)
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
        for stack in ("su-l", "common-session-noninteractive"):
            path = self.root_path(f"/etc/pam.d/{stack}")
            path.write_text(path.read_text().rstrip("\n") + "\n" + PAM_LINE + "\n")

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
        self.leader = wait_until(leader, "the container's PID 1", 30, interval=0.1, diag=self.diag)
        self.tell_holder(f"pid {self.leader}")

        def booted():
            if self.nspawn.poll() is not None:
                pytest.fail(f"systemd-nspawn exited with {self.nspawn.returncode} during boot\n{self.diag()}",
                            pytrace=False)
            p = self.exec(["systemctl", "is-system-running", "--wait"], check=False, wait=60)
            return p.stdout.strip() if p.stdout.strip() in ("running", "degraded") else None
        state = wait_until(booted, "the container to boot (systemctl is-system-running --wait)", 90,
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
        return self.busctl("get-property", BUS_NAME, ns_path(ALICE.name), NAMESPACE_IFACE, name,
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
                self._continue_stopped_wrappers()
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

    def _continue_stopped_wrappers(self) -> None:
        """SIGCONT our `nsenter --target=<PID 1> --all` processes that are stopped. Such an
        nsenter forks its command into the container's PID namespace and stays outside,
        waiting with WUNTRACED: when the command stops, it stops itself too (util-linux's
        continue_as_child). systemd-shutdown stops every process of the container before it
        sends SIGTERM, and continues them after; the nsenter outside is not continued, so it
        never reaps its command, whose zombie systemd-shutdown waits for until its 90 s
        timeout (a root `nsctl attach … sleep` started by popen() and left running showed
        it). Continued, nsenter continues its command and reaps it."""
        wrapper = f"nsenter\0--target={self.leader}\0--all\0".encode()
        for pid, state in sandbox_module.child_processes():
            if state != "T":
                continue
            try:
                if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(wrapper):
                    continue
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass

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


def run_image_tool(tool: Path, programs: tuple[str, ...], packages: str, args: tuple[str, ...] = ()) -> tuple[Path, float]:
    """Runs an image tool of tools/ (nspawn-image, qemu-image) with args: the image's directory
    (built if it is not current) and the time it took. `programs` must be installed; `packages`
    says by what."""
    if not tool.exists():
        pytest.fail(f"{tool} is missing", pytrace=False)
    for program in programs:
        if not shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
            pytest.fail(f"{program} is not installed: run tools/deps (it installs {packages})", pytrace=False)
    start = time.monotonic()
    try:
        p = subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=timeout(1800),
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tools/{tool.name} did not finish within 30 minutes", pytrace=False)
    if p.returncode == 3:
        pytest.skip(f"the Debian archive is unreachable, so there is no image to boot: {p.stderr.strip()}")
    if p.returncode != 0:
        pytest.fail(f"tools/{tool.name} failed (exit status {p.returncode}):\n{_tail(p.stderr, 40)}", pytrace=False)
    sys.stderr.write(p.stderr)
    return Path(p.stdout.strip().splitlines()[-1]), time.monotonic() - start


def build_image() -> tuple[Path, float]:
    return run_image_tool(IMAGE_TOOL, ("debootstrap", "systemd-nspawn"), "debootstrap and systemd-container")


def mount_table() -> list[tuple]:
    """The pytest process's mount table, for comparing before and after a container."""
    return [(m.id, m.parent, m.target, m.fstype, m.source, m.optional)
            for m in sandbox_module.host_mountinfo()]


def require_sandbox_namespace() -> None:
    if not sandbox_module.namespace_baseline() or sandbox_module._entered_namespace != sandbox_module.mntns_id():
        pytest.fail("the pytest process is not in the sandbox's throwaway mount namespace "
                    "(conftest.py enters it at import)", pytrace=False)


def require_plain_build() -> None:
    """Skip unless the build directory is a plain one: the image has no sanitizer runtime
    (tools/test runs the booted tests once, against the plain build)."""
    options = {o["name"]: o["value"] for o in json.loads(
        (sandbox_module.build_dir() / "meson-info" / "intro-buildoptions.json").read_text())}
    if options.get("b_sanitize", "none") != "none":
        pytest.skip(f"{sandbox_module.build_dir()} is a sanitizer build (b_sanitize={options['b_sanitize']}): "
                    "the image has no sanitizer runtime; this test runs against the plain build")


def install_as_admin(m: Machine) -> None:
    """The prepare step of the `machine` fixture: the build installed, alice, the PAM lines."""
    m.install_project(sandbox_module.build_dir())
    m.configure_as_admin()


@contextlib.contextmanager
def booted(logdir: Path, prepare=None):
    """A fresh overlay copy of the image, prepare(machine) run on its root, booted; at the
    end powered off and released. Fails if the container did not power off cleanly or
    left cgroups or mounts behind (not when the body failed: its error is the one to
    see)."""
    require_sandbox_namespace()
    baseline = mount_table()
    image, image_time = build_image()
    m = Machine(image, logdir)
    m.timings["image"] = image_time
    m.baseline = baseline
    try:
        m.lock_image()
        m.start_holder()
        start = time.monotonic()
        m.prepare_root()
        if prepare is not None:
            prepare(m)
        m.timings["prepare"] = time.monotonic() - start
        m.boot()
        yield m
    finally:
        status = m.poweroff()
        leftovers = m.release()
        print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in m.timings.items()))
    assert status == 0, f"systemd-nspawn exited with {status}\n{m.console_text(40)}"
    assert not leftovers, "\n".join(leftovers)
    now = mount_table()
    assert now == baseline, ("the pytest process's mount table changed: "
                             f"added {[x for x in now if x not in baseline]}, "
                             f"removed {[x for x in baseline if x not in now]}")


class Stick:
    """A USB stick for a container: ext4 on a loop device. The container has neither udev nor
    devtmpfs, so the pytest process attaches the loop device (losetup --find retries where
    two sandboxes race for one) over an image in `directory` (the sandbox's /tmp), and the
    device's node is made in the container's /dev under the same name. close() unmounts
    nothing: the test has freed it; it removes the node and detaches the loop device."""

    def __init__(self, m: Machine, directory: Path, size: str = "16M"):
        self.machine = m
        self.image = directory / "stick.img"
        run(["truncate", "-s", size, str(self.image)])
        run(["mkfs.ext4", "-q", "-F", str(self.image)])
        self.dev = run(["losetup", "--find", "--show", str(self.image)]).stdout.strip()
        st = os.stat(self.dev)
        self.devno = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        m.exec(["mknod", "-m", "0660", self.dev, "b", str(os.major(st.st_rdev)), str(os.minor(st.st_rdev))])

    def free(self) -> bool:
        """Nobody has it open exclusively (a mounted file system does): udisksctl power-off
        would succeed."""
        try:
            fd = os.open(self.dev, os.O_RDONLY | os.O_EXCL)
        except OSError:
            return False
        os.close(fd)
        return True

    def close(self) -> None:
        if self.machine.running():
            self.machine.exec(["rm", "-f", self.dev], check=False)
        subprocess.run(["losetup", "-d", self.dev], capture_output=True)


def ns_id_of(link: str) -> int:
    """N of a mount namespace link "mnt:[N]"."""
    found = re.fullmatch(r"mnt:\[(\d+)\]", link.strip())
    assert found, f"not a mount namespace link: {link!r}"
    return int(found.group(1))


class Login:
    """A login of alice: su -l alice running a shell that execs a sleep, started through
    nsenter like the other commands. It lasts until logout() (or the container's end)."""

    def __init__(self, machine: Machine):
        self.machine = machine
        self.proc = machine.popen(["su", "-l", ALICE.name, "-c",
                                   'echo $$; readlink /proc/self/ns/mnt; echo "$XDG_SESSION_ID"; exec sleep 3600'])
        out = b""
        deadline = time.monotonic() + timeout(30)
        while out.count(b"\n") < 3:
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
        self.session = lines[2]       # logind's session id ("" if pam_systemd made none)

    def alive(self) -> bool:
        return self.proc.poll() is None and self.machine.running()

    def logout(self) -> int | None:
        """End the sleep: su closes its PAM session (pam_nsmanager closes the session fd) and
        exits, then nsenter. Returns su's exit status."""
        if self.alive():
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

