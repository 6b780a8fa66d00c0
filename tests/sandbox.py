# SPDX-License-Identifier: LGPL-2.1-or-later
"""A throwaway machine for nsmanager's tests and demo.

The calling process moves into a mount namespace of its own, with every mount
private, so nothing it does reaches the machine's real mount table. Inside it
the sandbox builds what a small Debian machine has and nsmanagerd needs:

  /tmp       tmpfs; the sandbox's files live in /tmp/nsmanager-sandbox (BASE)
  /run       tmpfs (a machine's /run is one; /run/dbus holds the bus socket)
  /var/lib   an overlay of the machine's, writes on BASE (the daemon keeps its login
             filter in /var/lib/nsmanager across reboots)
  /etc/passwd, group, shadow, gshadow
             bind mounts of copies with the test users added (see TEST_USERS)
  /home      tmpfs with the test users' homes
  /mnt       tmpfs (the default SharedSubtrees), and /media (desktop.conf's): whatever the
             machine has mounted on or below them is unmounted first, in the sandbox's
             namespace only, so the tests see the same /mnt and /media on every machine
  /etc/dbus-1/system.d
             the project's own bus policy, dbus/org.example.NSManager.conf
  /usr/share/polkit-1/actions, /etc/polkit-1/rules.d
             the machine's actions plus the project's policy/*.policy; rules
             the tests write
  a real dbus-daemon --system (Debian's system.conf) and a real polkitd.

The real files are never written: they are only covered by bind mounts that
vanish with the namespace. A checkout (or build directory) under /tmp, /run or
/home is bound back at its own path over the sandbox's tmpfs; one under /mnt or /media is
refused at once (check_checkout_location). Each daemon "instance" gets fresh SubtreeRoot,
StateDirectory and configuration directories under BASE/runs/, so tests are
independent; cleanup_instance() removes what a test left and reports mounts
that leaked. teardown() undoes everything and checks that the mount table is
back to what it was once the machine's /mnt and /media were emptied, and that
nothing appeared in (or went from) the machine's own /, /etc, /srv and /var/lib
(a view's root is the machine's root: a directory made in a view outside the
sandbox's tmpfs mounts is made on the machine's disk).

Used by tests/conftest.py (the pytest fixtures) and tests/demo.py.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BUS_NAME = "org.example.NSManager"
RUNNING_LINE = " running; SubtreeRoot="    # nsmanagerd.c logs it just before its event loop
MANAGER_PATH = "/org/example/NSManager"
MANAGER_IFACE = "org.example.NSManager.Manager"
NAMESPACE_IFACE = "org.example.NSManager.Namespace"
ERROR_PREFIX = "org.example.NSManager.Error."
PROPERTIES_IFACE = "org.freedesktop.DBus.Properties"
POLKIT_BUS_NAME = "org.freedesktop.PolicyKit1"

SYSTEM_BUS_SOCKET = "/run/dbus/system_bus_socket"
# What nsmanagerd publishes for pam_nsmanager (src/shared/login-filter.h): the user range and
# LoginWithoutView=, on the sandbox's /run, and the copy kept across reboots, on the sandbox's
# /var/lib (an overlay: the machine's /var/lib below, writes on the sandbox's tmpfs).
LOGIN_FILTER = Path("/run/nsmanager/login-filter")
LOGIN_FILTER_PERSISTENT = Path("/var/lib/nsmanager/login-filter")
SYSTEM_BUS_ADDRESS = "unix:path=" + SYSTEM_BUS_SOCKET
NSM_PRIVATE_SOCKET = "/run/nsmanager/private"     # src/shared/bus-errors.h
BASE = Path("/tmp/nsmanager-sandbox")

# ASan/UBSan builds are slower; NSM_TIMEOUT_SCALE=3 stretches every wait.
TIMEOUT_SCALE = float(os.environ.get("NSM_TIMEOUT_SCALE", "1"))

# <linux/sched.h>, <sys/mount.h>, <linux/prctl.h>
CLONE_NEWNS = 0x00020000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_REC = 16384
MS_UNBINDABLE = 1 << 17
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MS_SHARED = 1 << 20
MNT_DETACH = 2
UMOUNT_NOFOLLOW = 8
PR_SET_CHILD_SUBREAPER = 36
SYS_open_tree = 428             # the same number on every architecture (Linux 5.2)
OPEN_TREE_CLONE = 1
AT_FDCWD = -100

# The machine's directories the sandbox empties and covers with a tmpfs of its own: whatever
# the machine has mounted there (a cloud machine's scratch disk on /mnt, a CD on /media) is
# taken away in the sandbox's namespace first, so it reaches no view and no count of mounts.
MACHINE_MOUNT_DIRS = ("/mnt", "/media")
# Where a test that wrote outside the sandbox's tmpfs mounts would leave something on the
# machine's own file systems (a view's root is the machine's root: a mkdir in a view is a
# real directory): listed at set-up and at teardown, which fails with what appeared.
MACHINE_DIRS_WATCHED = ("/", "/etc", "/srv", "/var/lib")

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.syscall.restype = ctypes.c_long


def timeout(seconds: float) -> float:
    return seconds * TIMEOUT_SCALE


def build_dir() -> Path:
    """The Meson build directory: $NSM_BUILD_DIR (relative to the repository) or build/."""
    return REPO / os.environ.get("NSM_BUILD_DIR", "build")


def daemon_binary() -> Path:
    return build_dir() / "src/nsmanagerd/nsmanagerd"


def nsctl_binary() -> Path:
    """The sandbox's copy of nsctl once the sandbox is set up (see Sandbox.setup), else the
    build's."""
    copy = BASE / "bin" / "nsctl"
    return copy if copy.exists() else build_dir() / "src/nsctl/nsctl"


def pam_build_dir() -> Path:
    """Where the PAM module and its threaded test caller come from: $NSM_PAM_BUILD_DIR, else
    the build directory. The ASan pass points this at the plain build: a sanitized module
    cannot be loaded into runuser, su or sshd, which are not."""
    d = os.environ.get("NSM_PAM_BUILD_DIR")
    return REPO / d if d else build_dir()


def built_pam_module() -> Path:
    return pam_build_dir() / "src/pam/pam_nsmanager.so"


def pam_module() -> Path:
    """The sandbox's copy of the PAM module once the sandbox is set up (see Sandbox.setup),
    which every user can read, else the build's."""
    copy = BASE / "bin" / "pam_nsmanager.so"
    return copy if copy.exists() else built_pam_module()


def checkout_paths() -> list[Path]:
    """The checkout and the build directories the tests read from, resolved, outermost first
    (a build directory inside the checkout is not listed again)."""
    found: list[Path] = []
    for p in sorted({REPO.resolve(), build_dir().resolve(), pam_build_dir().resolve()}, key=lambda x: len(x.parts)):
        if not any(_is_under(p, q) for q in found):
            found.append(p)
    return found


def check_checkout_location(users=()) -> None:
    """Refuse at once, with the reason, a checkout the sandbox cannot keep visible: one under
    /mnt (the default SharedSubtrees=: the daemon would copy it into every view and count it
    as a leak) or /media, under the sandbox's own BASE, or in a test user's home. A checkout under /tmp,
    /run or /home is kept: Sandbox.setup binds it back over the sandbox's tmpfs."""
    for p in checkout_paths():
        if _is_under(p, "/mnt"):
            raise RuntimeError(f"{p} is under /mnt, which the test sandbox covers with a tmpfs and nsmanagerd "
                               "shares into every view (SharedSubtrees=/mnt): move the checkout elsewhere")
        if any(_is_under(p, d) for d in MACHINE_MOUNT_DIRS):
            raise RuntimeError(f"{p} is under {next(d for d in MACHINE_MOUNT_DIRS if _is_under(p, d))}, which the "
                               "test sandbox empties and covers with a tmpfs: move the checkout elsewhere")
        if _is_under(p, BASE) or _is_under(BASE, p):
            raise RuntimeError(f"{p} overlaps the test sandbox's own directory {BASE}: move the checkout elsewhere")
        for u in users:
            if _is_under(p, u.home):
                raise RuntimeError(f"{p} is in the home of the test user {u.name}, which the sandbox "
                                   f"creates afresh: move the checkout elsewhere")


def _enc(s) -> bytes | None:
    return None if s is None else os.fsencode(s)


def sys_mount(source, target, fstype=None, flags=0, data=None) -> None:
    if _libc.mount(_enc(source), _enc(target), _enc(fstype), flags, _enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount({source!r}, {str(target)!r}, {fstype!r}, {flags:#x}): {os.strerror(e)}")


def sys_umount(target, flags=0) -> None:
    if _libc.umount2(_enc(target), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"umount2({str(target)!r}, {flags:#x}): {os.strerror(e)}")


def set_propagation(target, flags: int) -> None:
    sys_mount(None, target, None, flags)


# ---------------------------------------------------------------------------
# The process-wide mount namespace

_namespace_lock = threading.Lock()
_entered_namespace: int | None = None   # inode of the namespace we made
_namespace_baseline: list | None = None
_machine_namespace_fd: int | None = None   # the namespace we left


def mntns_id(pid: str | int = "self") -> int:
    """The inode number readlink /proc/PID/ns/mnt shows ("mnt:[N]")."""
    link = os.readlink(f"/proc/{pid}/ns/mnt")
    return int(re.fullmatch(r"mnt:\[(\d+)\]", link).group(1))


def enter_private_mount_namespace() -> int:
    """Move this process into a throwaway mount namespace with every mount private.

    Idempotent. Must run while the process has a single thread (unshare(CLONE_NEWNS)
    fails with EINVAL otherwise), so call it at import time. Returns the mount count
    of the fresh namespace: the baseline teardown compares against."""
    global _entered_namespace, _namespace_baseline, _machine_namespace_fd
    with _namespace_lock:
        if _entered_namespace is not None and _entered_namespace == mntns_id():
            return len(_namespace_baseline)
        if os.geteuid() != 0:
            raise PermissionError("the nsmanager sandbox needs root (CAP_SYS_ADMIN)")
        if threading.active_count() > 1:
            raise RuntimeError("enter_private_mount_namespace() must run before any thread starts")
        # The machine's namespace, kept for a session of tests that needs the machine as it
        # is (machine_namespace_fd()): this process never enters it again.
        _machine_namespace_fd = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        if _libc.unshare(CLONE_NEWNS) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"unshare(CLONE_NEWNS): {os.strerror(e)}")
        # Nothing we mount may propagate back to the machine, nor the machine's into us.
        set_propagation("/", MS_REC | MS_PRIVATE)
        # Orphans of processes we start (a daemon's helpers after kill -9, services the
        # bus activated) become our children, so teardown can find and stop them.
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        _entered_namespace = mntns_id()
        _namespace_baseline = parse_mountinfo(Path("/proc/self/mountinfo").read_text())
        _start_watchdog(_entered_namespace)
        return len(_namespace_baseline)


# If this process dies without its teardown (kill -9, a CI timeout), the processes it
# started would live on and keep the throwaway namespace and its mounts alive. Some of
# them cannot be tied to us with PR_SET_PDEATHSIG (dbus-daemon and polkitd change their
# uid, which clears it), so a watchdog waits for the end of a pipe only we hold, then
# kills whatever still runs in our mount namespace — everything there was started by us.
_WATCHDOG = r"""
import os, signal, sys
ns = sys.argv[1]
sys.stdin.buffer.read()
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        if os.readlink(f"/proc/{pid}/ns/mnt") == f"mnt:[{ns}]":
            os.kill(int(pid), signal.SIGKILL)
    except OSError:
        pass
"""
_watchdog_pipe = None
_watchdog = None


def _start_watchdog(ns_id: int) -> None:
    global _watchdog_pipe, _watchdog
    r, w = os.pipe()
    _watchdog = subprocess.Popen([sys.executable if os.path.exists(sys.executable) else "/usr/bin/python3",
                      "-c", _WATCHDOG, str(ns_id)], stdin=r, stdout=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)
    os.close(r)
    os.set_inheritable(w, False)
    _watchdog_pipe = w   # never written; closed by the kernel when we exit


def machine_namespace_fd() -> int:
    """An fd of the mount namespace this process left in enter_private_mount_namespace(): the
    machine's (or whatever namespace pytest was started in). Only to start a child that makes a
    namespace of its own from it at once (nsenter --mount=/proc/self/fd/N unshare --mount ...):
    nothing may be mounted in the machine's own."""
    if _machine_namespace_fd is None:
        raise RuntimeError("enter_private_mount_namespace() has not run")
    return _machine_namespace_fd


def child_processes() -> list[tuple[int, str]]:
    """(pid, state letter) of each child process of ours; with the subreaper flag, orphans of
    our children are ours too."""
    me = str(os.getpid())
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[1] == me:
            kids.append((int(d), fields[0]))
    return kids


def holders_of(target: str) -> list[str]:
    """The processes in our mount namespace whose working directory, root or an open file is
    at or below target: what keeps it busy ("pid 123 (sleep): cwd /tmp/x")."""
    ours = os.readlink("/proc/self/ns/mnt")
    prefix = target.rstrip("/") + "/"
    try:
        dev = os.stat(target).st_dev
    except OSError:
        return []
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") != ours:
                continue
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            links = [(n, f"/proc/{pid}/{n}") for n in ("cwd", "root")]
            links += [(f"fd {fd}", f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        held = []
        for n, link in links:
            with contextlib.suppress(OSError):
                path = os.readlink(link)
                # The same path on another file system (the machine's /tmp under ours) is not it.
                if (path == target or path.startswith(prefix)) and os.stat(link).st_dev == dev:
                    held.append(f"{n} {path}")
        if held:
            found.append(f"pid {pid} ({comm}): " + ", ".join(held[:3]))
    return found


def namespace_baseline() -> list:
    return list(_namespace_baseline or [])


# ---------------------------------------------------------------------------
# Mount tables

def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


@dataclasses.dataclass(frozen=True)
class Mount:
    id: int
    parent: int
    majmin: str
    root: str
    target: str
    options: str
    optional: tuple
    fstype: str
    source: str
    superoptions: str

    def _group(self, tag: str) -> int:
        for f in self.optional:
            if f.startswith(tag + ":"):
                return int(f.split(":", 1)[1])
        return 0

    @property
    def peer_group(self) -> int:
        return self._group("shared")

    @property
    def master(self) -> int:
        return self._group("master")

    @property
    def shared(self) -> bool:
        return self.peer_group != 0

    @property
    def slave(self) -> bool:
        return self.master != 0

    @property
    def unbindable(self) -> bool:
        return "unbindable" in self.optional

    @property
    def propagation(self) -> str:
        """As findmnt's PROPAGATION column: shared|private[,slave][,unbindable]."""
        words = ["shared" if self.shared else "private"]
        if self.slave:
            words.append("slave")
        if self.unbindable:
            words.append("unbindable")
        return ",".join(words)

    def __str__(self) -> str:
        return f"{self.target} ({self.fstype} {self.source}, {self.propagation}, id {self.id})"


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split(" ")
        sep = fields.index("-")
        mounts.append(Mount(
            id=int(fields[0]), parent=int(fields[1]), majmin=fields[2],
            root=_unescape(fields[3]), target=_unescape(fields[4]), options=fields[5],
            optional=tuple(fields[6:sep]), fstype=fields[sep + 1],
            source=_unescape(fields[sep + 2]), superoptions=fields[sep + 3] if len(fields) > sep + 3 else ""))
    return mounts


def visible_mounts(mounts: list[Mount]) -> list[Mount]:
    """Leave out mounts covered by a later mount (mountinfo still lists them): e.g. the
    machine's own mounts under /mnt once the sandbox's tmpfs is on /mnt."""
    order = {m.id: i for i, m in enumerate(mounts)}
    visible = []
    for m in mounts:
        covered = any(x.parent == m.parent and order[x.id] > order[m.id] and x.id != m.id
                      and _is_under(m.target, x.target) for x in mounts)
        if not covered:
            visible.append(m)
    ids = {m.id for m in visible}
    # a mount on a covered one is covered too
    changed = True
    while changed:
        changed = False
        for m in list(visible):
            if m.parent not in ids and m.parent in order and m.target != "/":
                visible.remove(m)
                ids.discard(m.id)
                changed = True
    return visible


def host_mountinfo() -> list[Mount]:
    # A name may be any bytes (tests/test_names.py): read them as os.fsdecode() would.
    return parse_mountinfo(Path("/proc/self/mountinfo").read_text(errors="surrogateescape"))


def find_mount(mounts: list[Mount], target: str) -> Mount | None:
    """The mount visible at target (the last one stacked there)."""
    found = None
    for m in mounts:
        if m.target == str(target):
            found = m
    return found


def _is_under(path: str, top: str) -> bool:
    path, top = str(path), str(top)
    return path == top or path.startswith(top.rstrip("/") + "/")


def take_away_machine_mounts(dirs=MACHINE_MOUNT_DIRS) -> None:
    """Unmount, detached, whatever is mounted on or below each of dirs, in this process's
    namespace only (enter_private_mount_namespace() made every mount private: the machine
    keeps its own). Deepest first; a mount that another covers can only be reached once the
    cover is gone, so each turn unmounts the deepest one its path reaches."""
    for _ in range(1000):
        found = sorted((m for m in host_mountinfo() if any(_is_under(m.target, d) for d in dirs)),
                       key=lambda m: -m.target.count("/"))
        if not found:
            return
        errors = []
        for m in found:
            try:
                sys_umount(m.target, MNT_DETACH | UMOUNT_NOFOLLOW)
                break
            except OSError as e:
                errors.append(f"{m}: {e.strerror}")
        else:
            raise RuntimeError("the sandbox cannot take the machine's mounts away in its own namespace: "
                               + "; ".join(errors))
    raise RuntimeError(f"the machine's mounts under {', '.join(dirs)} do not go away")


def open_machine_dirs(paths=MACHINE_DIRS_WATCHED) -> dict[str, int]:
    """{path: fd} of a detached, non-recursive copy of the mount that holds each path
    (open_tree(OPEN_TREE_CLONE)), at the path: what the machine's own file system holds
    there, whatever is mounted on top of it before or later."""
    fds = {}
    for p in paths:
        fd = _libc.syscall(ctypes.c_long(SYS_open_tree), ctypes.c_long(AT_FDCWD), os.fsencode(p),
                           ctypes.c_long(OPEN_TREE_CLONE | os.O_CLOEXEC))
        if fd < 0:
            e = ctypes.get_errno()
            for other in fds.values():
                os.close(other)
            raise OSError(e, f"open_tree({p}, OPEN_TREE_CLONE): {os.strerror(e)}")
        fds[p] = fd
    return fds


def list_machine_dirs(fds: dict[str, int]) -> dict[str, set[str]]:
    """The names in each directory of open_machine_dirs() (its fds are O_PATH: opened again
    for reading)."""
    listing = {}
    for p, fd in fds.items():
        d = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
        try:
            listing[p] = set(os.listdir(d))
        finally:
            os.close(d)
    return listing


# ---------------------------------------------------------------------------
# Users

@dataclasses.dataclass(frozen=True)
class TestUser:
    name: str
    uid: int
    gid: int
    groups: tuple = ()          # supplementary group names

    @property
    def home(self) -> str:
        return f"/home/{self.name}"

    shell = "/bin/bash"

    @property
    def password(self) -> str:
        return f"{self.name}-secret"


TEST_USERS = {u.name: u for u in (
    TestUser("alice", 2001, 2001),
    TestUser("bob", 2002, 2002),
    TestUser("carol", 2003, 2003, ("nsadmin",)),
    TestUser("dave", 2004, 2004),
    TestUser("svc", 500, 500),          # a system user, below MinUID
    TestUser("erin", 3000000000, 3000000000),   # a uid above 2^31 (sssd hands such out): printed unsigned
)}
TEST_GROUPS = {"nsadmin": 2100}


def _hash_password(password: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt
        except ImportError:
            return "!"
        return crypt.crypt(password, crypt.mksalt(crypt.METHOD_SHA512))


# ---------------------------------------------------------------------------
# D-Bus

def dbus_error_name(exc: BaseException) -> str | None:
    get = getattr(exc, "get_dbus_name", None)
    return get() if get else None


class SignalRecorder:
    """Records signals of org.example.NSManager on a connection of its own.

    Subscribe before the call that should emit, then wait_for(): signals that
    arrive meanwhile queue on the socket and are dispatched while waiting."""

    def __init__(self, address: str = SYSTEM_BUS_ADDRESS, interface: str | None = None):
        import dbus
        import dbus.bus
        from dbus.mainloop.glib import DBusGMainLoop
        from gi.repository import GLib
        self._glib = GLib
        self._context = GLib.MainContext.default()
        self.bus = dbus.bus.BusConnection(address, mainloop=DBusGMainLoop())
        self.received: list[tuple[str, str, str, tuple]] = []   # (interface, member, path, args)
        self._match = self.bus.add_signal_receiver(
            self._on_signal, dbus_interface=interface, path=None,
            interface_keyword="interface", member_keyword="member", path_keyword="path",
            sender_keyword="sender")
        self._interface = interface
        # The match is installed asynchronously; a round trip makes sure the bus has it.
        self.bus.get_unique_name()
        self.bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "GetId", "", ())

    def _on_signal(self, *args, interface=None, member=None, path=None, sender=None):
        if interface and interface.startswith("org.freedesktop.DBus") and interface != PROPERTIES_IFACE:
            return
        self.received.append((interface, member, path, tuple(args)))

    def _dispatch(self, seconds: float) -> None:
        fired = []
        source = self._glib.timeout_add(max(1, int(seconds * 1000)), lambda: fired.append(1) or False)
        try:
            while not fired:
                self._context.iteration(True)
                if self._pending_match():
                    break
        finally:
            if not fired:
                self._glib.source_remove(source)

    _want = None

    def _pending_match(self) -> bool:
        return self._want is not None and any(self._want(s) for s in self.received)

    def wait_for(self, member: str, predicate=None, timeout_sec: float = 10):
        """The first recorded signal `member` whose args satisfy predicate(args)."""
        def want(sig):
            return sig[1] == member and (predicate is None or predicate(sig[3]))
        self._want = want
        deadline = time.monotonic() + timeout(timeout_sec)
        try:
            while True:
                for sig in self.received:
                    if want(sig):
                        return sig
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no signal {member} within {timeout(timeout_sec)}s; got {self.received}")
                self._dispatch(left)
        finally:
            self._want = None

    def drain(self, seconds: float = 0.05) -> list:
        self._dispatch(seconds)
        return list(self.received)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._match.remove()
        with contextlib.suppress(Exception):
            self.bus.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def parse_journal_export(data: bytes) -> list:
    """The journal's export format: records separated by an empty line; a field is
    "KEY=value\\n", or "KEY\\n" + a 64-bit little-endian size + the value + "\\n"."""
    records, rec, i = [], {}, 0
    while i < len(data):
        if data[i:i + 1] == b"\n":
            if rec:
                records.append(rec)
            rec, i = {}, i + 1
            continue
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            key, value = line.split(b"=", 1)
            i = nl + 1
        else:
            key, size = line, int.from_bytes(data[nl + 1:nl + 9], "little")
            value = data[nl + 9:nl + 9 + size]
            i = nl + 9 + size + 1
        try:
            rec[key.decode()] = value.decode()
        except UnicodeDecodeError:
            rec[key.decode()] = value
    if rec:
        records.append(rec)
    return records


class DaemonError(RuntimeError):
    pass


class SandboxLeak(AssertionError):
    pass


# ---------------------------------------------------------------------------

class Sandbox:
    """See the module docstring. Typical use:

        sb = Sandbox(); sb.setup()
        sb.start_daemon(ExcludeUsers="dave")
        path = sb.manager().CreateNamespace("alice")
        print(sb.in_view("alice", ["findmnt"]).stdout)
        sb.teardown()
    """

    def __init__(self, root_propagation: str | None = None, polkit: bool = True, verbose: bool = False):
        # "private": the machine's / is not shared (as on this machine, and in the
        # namespace we enter); the daemon has to make it shared. "shared": as systemd
        # leaves it at boot.
        self.root_propagation = root_propagation or os.environ.get("NSM_SANDBOX_ROOT_PROPAGATION", "private")
        if self.root_propagation not in ("private", "shared"):
            raise ValueError(f"root_propagation must be private or shared, not {self.root_propagation!r}")
        self.with_polkit = polkit
        self.verbose = verbose
        self.base = BASE
        self.users = dict(TEST_USERS)
        self._mounts: list[str] = []          # the sandbox's own, in mount order
        self._test_mounts: list[str] = []     # made by tests through the helpers below
        self._procs: dict[str, subprocess.Popen] = {}
        self._bus = None
        self._recorders: list[SignalRecorder] = []
        self._n_instances = 0
        self.instance: Path | None = None
        self.daemon: subprocess.Popen | None = None
        self.daemon_exit_codes: list[int] = []
        self.ready_notifications: list[str] = []
        self._notify_sock: socket.socket | None = None
        self._instance_baseline: list[Mount] = []
        self.baseline: list[Mount] = []
        self._machine_dirs: dict[str, int] | None = None
        self._machine_dirs_before: dict[str, set[str]] = {}
        self._is_set_up = False

    # -- mounting ----------------------------------------------------------

    def _log(self, msg: str) -> None:
        if self.verbose:
            print(f"sandbox: {msg}", file=sys.stderr)

    def _mount(self, source, target, fstype=None, flags=0, data=None, test=False) -> None:
        sys_mount(source, target, fstype, flags, data)
        (self._test_mounts if test else self._mounts).append(str(target))
        self._log(f"mounted {source or fstype} on {target}")

    def _tmpfs(self, target, mode="755", size=None) -> None:
        data = f"mode={mode}" + (f",size={size}" if size else "")
        self._mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, data)

    def _cover(self, target: str, mode: str) -> None:
        """A tmpfs over the machine's directory `target`, with the checkout and build
        directories that lie below it bound back at their own paths (a CI clone in /tmp, a
        developer's in /home): opened before they are covered, bound through /proc/self/fd."""
        keep = [p for p in checkout_paths() if _is_under(p, target)]
        fds = [os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for p in keep]
        try:
            self._tmpfs(target, mode=mode)
            for p, fd in zip(keep, fds):
                os.makedirs(p, mode=0o755, exist_ok=True)
                self._mount(f"/proc/self/fd/{fd}", p, None, MS_BIND)
        finally:
            for fd in fds:
                os.close(fd)

    def _bind_file(self, content: str | bytes, target: str, mode: int, uid=0, gid=0) -> None:
        src = self.base / "overlays" / target.lstrip("/")
        src.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        src.write_bytes(content)
        os.chown(src, uid, gid)
        os.chmod(src, mode)
        self._mount(src, target, None, MS_BIND)

    def overlay_dir(self, target: str, copy: bool = True, mode: int | None = None,
                    owner: tuple | None = None) -> Path:
        """Cover the machine's directory `target` with a writable copy under BASE/overlays
        (e.g. /etc/pam.d, to add a PAM service). Returns the copy; the machine's directory
        is untouched. Undone at teardown."""
        src = self.base / "overlays" / target.lstrip("/")
        if target in self._mounts and src.is_dir():
            return src      # already overlaid this session: the same writable copy
        if src.exists():
            shutil.rmtree(src)
        if copy and os.path.isdir(target):
            shutil.copytree(target, src, symlinks=True)
        else:
            src.mkdir(parents=True)
        st = os.stat(target)
        os.chmod(src, mode if mode is not None else (st.st_mode & 0o7777))
        os.chown(src, *(owner if owner else (st.st_uid, st.st_gid)))
        self._mount(src, target, None, MS_BIND)
        return src

    def undo_overlay(self, target: str) -> None:
        """Uncover `target` again: unmount the overlay_dir() on top of it and drop its copy
        (for a test that must leave the machine as it found it)."""
        sys_umount(target)
        del self._mounts[len(self._mounts) - 1 - self._mounts[::-1].index(target)]
        shutil.rmtree(self.base / "overlays" / target.lstrip("/"))

    # -- set-up --------------------------------------------------------------

    def setup(self) -> "Sandbox":
        if self._is_set_up:
            return self
        check_checkout_location(self.users.values())
        enter_private_mount_namespace()
        # Before anything is mounted: what the machine itself mounted on /mnt and /media is
        # none of the tests' business, and the baseline is the table without it.
        take_away_machine_mounts()
        self.baseline = host_mountinfo()
        if self._machine_dirs is None:
            self._machine_dirs = open_machine_dirs()
            self._machine_dirs_before = list_machine_dirs(self._machine_dirs)
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = SYSTEM_BUS_ADDRESS
        try:
            self._cover("/tmp", mode="1777")
            self._cover("/run", mode="755")
            for d, mode in (("dbus", 0o755), ("lock", 0o1777), ("user", 0o755), ("sshd", 0o755)):
                os.mkdir(f"/run/{d}")
                os.chmod(f"/run/{d}", mode)
            self.base.mkdir()
            os.chmod(self.base, 0o755)      # whatever the umask: users reach bin/ below it
            for d in ("logs", "runs", "overlays", "bin", "varlib/upper", "varlib/work"):
                (self.base / d).mkdir(parents=True)
            # nsmanagerd writes /var/lib/nsmanager/login-filter: the machine's /var/lib stays
            # as it is, what is written goes to the overlay's upper directory on our tmpfs.
            self._mount("overlay", "/var/lib", "overlay", 0,
                        f"lowerdir=/var/lib,upperdir={self.base}/varlib/upper,workdir={self.base}/varlib/work")
            # The checkout may sit where other users cannot enter (a CI clone in a 0700
            # temporary directory): tests that run nsctl as alice run this copy, and a PAM
            # stack run by a user (pamtester as alice) loads this copy of the module.
            os.chmod(self.base / "bin", 0o755)
            for built in (build_dir() / "src/nsctl/nsctl", built_pam_module()):
                if built.exists():
                    shutil.copy2(built, self.base / "bin" / built.name)
                    os.chmod(self.base / "bin" / built.name, 0o755)
            self._setup_users()
            for d in MACHINE_MOUNT_DIRS:
                if os.path.isdir(d):
                    self._cover(d, mode="755")
            self._setup_dbus_policy()
            if self.with_polkit:
                self._setup_polkit_files()
            if self.root_propagation == "shared":
                set_propagation("/", MS_REC | MS_SHARED)
            self._start_dbus()
            if self.with_polkit:
                self.start_polkit()
            self._is_set_up = True
        except BaseException:
            self.teardown(check=False)
            raise
        return self

    def _setup_users(self) -> None:
        passwd = Path("/etc/passwd").read_text().rstrip("\n").split("\n")
        group = Path("/etc/group").read_text().rstrip("\n").split("\n")
        shadow = Path("/etc/shadow").read_text().rstrip("\n").split("\n")
        gshadow = Path("/etc/gshadow").read_text().rstrip("\n").split("\n") if os.path.exists("/etc/gshadow") else []
        taken_names = {l.split(":")[0] for l in passwd + group if l}
        taken_ids = {int(l.split(":")[2]) for l in passwd if l.count(":") >= 2}
        taken_gids = {int(l.split(":")[2]) for l in group if l.count(":") >= 2}
        days = int(time.time() // 86400)
        for u in self.users.values():
            if u.name in taken_names or u.uid in taken_ids or u.gid in taken_gids:
                raise RuntimeError(f"test user {u.name} ({u.uid}) clashes with an account of this machine")
            passwd.append(f"{u.name}:x:{u.uid}:{u.gid}:{u.name.capitalize()} (nsmanager test):{u.home}:{u.shell}")
            group.append(f"{u.name}:x:{u.gid}:")
            shadow.append(f"{u.name}:{_hash_password(u.password)}:{days}:0:99999:7:::")
            gshadow.append(f"{u.name}:!::")
        for g, gid in TEST_GROUPS.items():
            if g in taken_names or gid in taken_gids:
                raise RuntimeError(f"test group {g} ({gid}) clashes with a group of this machine")
            members = ",".join(u.name for u in self.users.values() if g in u.groups)
            group.append(f"{g}:x:{gid}:{members}")
            gshadow.append(f"{g}:!::{members}")
        shadow_gid = next((int(l.split(":")[2]) for l in group if l.startswith("shadow:")), 0)
        self._bind_file("\n".join(passwd) + "\n", "/etc/passwd", 0o644)
        self._bind_file("\n".join(group) + "\n", "/etc/group", 0o644)
        self._bind_file("\n".join(shadow) + "\n", "/etc/shadow", 0o640, gid=shadow_gid)
        if os.path.exists("/etc/gshadow"):
            self._bind_file("\n".join(gshadow) + "\n", "/etc/gshadow", 0o640, gid=shadow_gid)

        self._cover("/home", mode="755")
        for u in self.users.values():
            home = Path(u.home)
            if os.path.isdir("/etc/skel"):
                shutil.copytree("/etc/skel", home, symlinks=True)
            else:
                home.mkdir()
            for dirpath, dirnames, filenames in os.walk(home):
                for n in [dirpath] + [os.path.join(dirpath, f) for f in dirnames + filenames]:
                    os.lchown(n, u.uid, u.gid)
            os.chmod(home, 0o755)

    def _setup_dbus_policy(self) -> None:
        d = self.overlay_dir("/etc/dbus-1/system.d", copy=False, mode=0o755, owner=(0, 0))
        shutil.copy(REPO / "dbus/org.example.NSManager.conf", d / "org.example.NSManager.conf")
        os.chmod(d / "org.example.NSManager.conf", 0o644)

    def _setup_polkit_files(self) -> None:
        actions = self.overlay_dir("/usr/share/polkit-1/actions")
        for p in sorted((REPO / "policy").glob("*.policy")):
            shutil.copy(p, actions / p.name)
            os.chmod(actions / p.name, 0o644)
        self.polkit_rules_dir = self.overlay_dir("/etc/polkit-1/rules.d", copy=False)

    # -- processes ------------------------------------------------------------

    def _spawn(self, name: str, argv: list, env=None, log: Path | None = None, **kw) -> subprocess.Popen:
        log = log or (self.base / "logs" / f"{name}.log")
        with open(log, "ab") as f:
            f.write(f"==== {time.strftime('%H:%M:%S')} {' '.join(map(str, argv))}\n".encode())
            f.flush()
            p = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                 env=env, **kw)
        self._procs[name] = p
        return p

    def _stop_proc(self, name: str, sig=signal.SIGTERM, wait: float = 10) -> int | None:
        p = self._procs.pop(name, None)
        if p is None:
            return None
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout(wait))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return p.returncode

    def process(self, name: str) -> subprocess.Popen:
        """A process the sandbox started and tracks: "dbus-daemon", "polkitd", "nsmanagerd"."""
        return self._procs[name]

    def log_text(self, name: str) -> str:
        p = self.base / "logs" / f"{name}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def _start_dbus(self) -> None:
        p = self._spawn("dbus-daemon", ["dbus-daemon", "--system", "--nofork", "--nopidfile", "--nosyslog"])
        deadline = time.monotonic() + timeout(10)
        while True:
            if p.poll() is not None:
                raise RuntimeError(f"dbus-daemon exited with {p.returncode}:\n{self.log_text('dbus-daemon')}")
            if os.path.exists(SYSTEM_BUS_SOCKET):
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    try:
                        s.connect(SYSTEM_BUS_SOCKET)
                        break
                    except OSError:
                        pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"dbus-daemon did not listen on {SYSTEM_BUS_SOCKET}:\n{self.log_text('dbus-daemon')}")
            time.sleep(0.005)
        self.bus()   # answers Hello

    def restart_bus(self, before_start=None) -> None:
        """Stop the system bus (and polkitd with it), call before_start(), start both again.
        The sandbox's own connection is reconnected on its next use."""
        self.stop_polkit()
        self._stop_proc("dbus-daemon")
        self._bus = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SYSTEM_BUS_SOCKET)
        if before_start:
            before_start()
        self._start_dbus()
        self.start_polkit()

    def start_polkit(self) -> None:
        if "polkitd" in self._procs:
            return
        p = self._spawn("polkitd", ["/usr/lib/polkit-1/polkitd", "--no-debug"])
        self.wait_for_name(POLKIT_BUS_NAME, p, lambda: self.log_text("polkitd"))

    def stop_polkit(self) -> None:
        self._stop_proc("polkitd")

    def restart_polkit(self) -> None:
        """polkitd reloads rules on inotify, asynchronously; a restart is deterministic."""
        self.stop_polkit()
        self._wait_name_gone(POLKIT_BUS_NAME)
        self.start_polkit()

    def set_polkit_rule(self, name: str, javascript: str | None) -> None:
        """Write (or with None remove) /etc/polkit-1/rules.d/NAME.rules and restart polkitd."""
        path = self.polkit_rules_dir / f"{name}.rules"
        if javascript is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(javascript)
            os.chmod(path, 0o644)
        self.restart_polkit()

    def _children(self) -> list[int]:
        return [pid for pid, _state in child_processes()]

    def reap_strays(self) -> list[str]:
        """Stop child processes nobody is tracking (orphans adopted by the subreaper), and
        theirs: a stray's children become ours only once it is reaped, so this goes on until
        a pass finds none (one pass left a shell's `sleep`, in /tmp, holding the sandbox's
        /tmp at teardown). Returns a description of each."""
        known = {p.pid for p in self._procs.values() if p.poll() is None}
        if _watchdog is not None:
            known.add(_watchdog.pid)
        if self.daemon is not None and self.daemon.poll() is None:
            known.add(self.daemon.pid)
        strays = []
        while True:
            found = False
            for pid in self._children():
                if pid in known:
                    continue
                found = True
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                        errors="replace").strip()
                    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    cmd, state = "?", "?"
                if state != "Z":
                    strays.append(f"pid {pid}: {cmd}")
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            if not found:
                return strays

    # -- bus ---------------------------------------------------------------------

    def bus(self):
        """The sandbox's own connection to the sandbox's system bus (dbus-python)."""
        import dbus.bus
        if self._bus is None or not self._bus.get_is_connected():
            self._bus = dbus.bus.BusConnection(SYSTEM_BUS_ADDRESS)
        return self._bus

    def name_owner_pid(self, name: str) -> int | None:
        import dbus
        try:
            return int(self.bus().call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                                "GetConnectionUnixProcessID", "s", (name,)))
        except dbus.exceptions.DBusException:
            return None

    def wait_for_name(self, name: str, proc: subprocess.Popen, log, wait: float = 30) -> None:
        """Poll until `name` is owned by proc; fail early (with its log) if proc exits."""
        deadline = time.monotonic() + timeout(wait)
        while True:
            if self.name_owner_pid(name) == proc.pid:
                return
            if proc.poll() is not None:
                raise DaemonError(f"{proc.args[0]} exited with {proc.returncode} before owning {name}:\n{log()}")
            if time.monotonic() > deadline:
                raise DaemonError(f"{name} not owned by {proc.args[0]} after {timeout(wait)}s:\n{log()}")
            if self._notify_sock is not None:
                self._read_notifications(0.01)
            else:
                time.sleep(0.01)

    def _wait_name_gone(self, name: str, wait: float = 10) -> None:
        deadline = time.monotonic() + timeout(wait)
        while self.name_owner_pid(name) is not None:
            if time.monotonic() > deadline:
                raise DaemonError(f"{name} still owned {timeout(wait)}s after its owner stopped")
            time.sleep(0.005)

    def proxy(self, path: str):
        # A fresh proxy each time: dbus-python binds a proxy to the unique name of the
        # owner at creation, which changes when the daemon restarts.
        return self.bus().get_object(BUS_NAME, path)

    def manager(self):
        """dbus.Interface of org.example.NSManager.Manager (introspected: argument types
        such as 'u' and 't' are taken from the daemon, so plain ints work)."""
        import dbus
        return dbus.Interface(self.proxy(MANAGER_PATH), MANAGER_IFACE)

    def namespace(self, path: str):
        import dbus
        return dbus.Interface(self.proxy(str(path)), NAMESPACE_IFACE)

    def properties(self, path: str = MANAGER_PATH, interface: str | None = None) -> dict:
        import dbus
        iface = interface or (MANAGER_IFACE if str(path) == MANAGER_PATH else NAMESPACE_IFACE)
        props = dbus.Interface(self.proxy(str(path)), PROPERTIES_IFACE).GetAll(iface)
        return {str(k): v for k, v in props.items()}

    def signals(self, interface: str | None = None) -> SignalRecorder:
        """A SignalRecorder, closed with the instance."""
        r = SignalRecorder(interface=interface)
        self._recorders.append(r)
        return r

    # -- the daemon ------------------------------------------------------------

    def new_instance(self, name: str = "") -> Path:
        """Fresh SubtreeRoot, StateDirectory and configuration directory for the next
        daemon; records the mount table that cleanup_instance() compares against."""
        if self.instance is not None:
            self.cleanup_instance()
        if self.root_propagation == "private":
            # Each instance starts from the same machine: nothing shared (the daemon has to
            # fix that) — undo what an earlier daemon made shared.
            set_propagation("/", MS_REC | MS_PRIVATE)
        self._n_instances += 1
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60]
        d = self.base / "runs" / (f"{self._n_instances:03d}" + (f"-{label}" if label else ""))
        for sub in ("subtree", "state", "conf", "conf/nsmanagerd.conf.d", "conf/group.d", "conf/user.d"):
            (d / sub).mkdir(parents=True, mode=0o755)
        self.instance = d
        self.subtree_root = d / "subtree"
        self.state_dir = d / "state"
        self.config_dir = d / "conf"
        self.config_file = d / "conf/nsmanagerd.conf"
        self.daemon_log = d / "nsmanagerd.log"
        self.shared_subtrees = ["/mnt"]
        self.daemon_exit_codes = []
        self.ready_notifications = []
        self._instance_baseline = host_mountinfo()
        return d

    def write_config(self, extra: str = "", **settings) -> Path:
        """Write the [Manager] section of the instance's nsmanagerd.conf: the sandbox's
        paths, MinUID=1000, StopDelaySec=1s, then `settings` (lists are joined with
        spaces, bools become yes/no), then the raw text `extra` (e.g. a [View] section)."""
        if self.instance is None:
            self.new_instance()
        conf = {
            "SubtreeRoot": str(self.subtree_root),
            "StateDirectory": str(self.state_dir),
            "SharedSubtrees": "/mnt",
            "MinUID": "1000",
            "StopDelaySec": "1s",
        }
        for k, v in settings.items():
            if isinstance(v, bool):
                v = "yes" if v else "no"
            elif isinstance(v, (list, tuple)):
                v = " ".join(map(str, v))
            conf[k] = str(v)
        self.shared_subtrees = conf["SharedSubtrees"].split()
        text = "[Manager]\n" + "".join(f"{k}={v}\n" for k, v in conf.items())
        if extra:
            text += "\n" + extra.strip("\n") + "\n"
        self.config_file.write_text(text)
        return self.config_file

    def write_config_file(self, relpath: str, text: str) -> Path:
        """A file next to nsmanagerd.conf: "nsmanagerd.conf.d/10-x.conf",
        "group.d/nsadmin.conf", "user.d/alice.conf"."""
        p = self.config_dir / relpath
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    def start_daemon(self, extra_config: str = "", notify: bool = False, env: dict | None = None,
                     args: list | None = None, write: bool = True, wait: float = 30, ready: bool = False,
                     **settings) -> subprocess.Popen:
        """Write the config (unless write=False) and start nsmanagerd; returns once it
        owns org.example.NSManager. notify=True gives it a NOTIFY_SOCKET and records
        what it sends in self.ready_notifications. ready=True returns only once it logged
        "running", the last step before its loop: the name is taken before the last
        start-up steps (mount events, READY=1 with sd_notify's own socket), which a test
        counting the daemon's fds must not catch half-way."""
        if self.daemon is not None and self.daemon.poll() is None:
            raise DaemonError("nsmanagerd is already running")
        if self.instance is None:
            self.new_instance()
        binary = daemon_binary()
        started = self.daemon_log_text().count(RUNNING_LINE)
        if not binary.exists():
            raise DaemonError(f"{binary} does not exist: build first (meson setup build && ninja -C build)")
        if write or not self.config_file.exists():
            self.write_config(extra_config, **settings)
        e = dict(os.environ)
        e["DBUS_SYSTEM_BUS_ADDRESS"] = SYSTEM_BUS_ADDRESS
        e.pop("NOTIFY_SOCKET", None)
        if notify:
            self._open_notify_socket()
            e["NOTIFY_SOCKET"] = str(self.instance / "notify.sock")
        e.update(env or {})
        # Every record with its fields, as journald would keep them (there is no journald
        # here): journal_records() reads them back.
        self.daemon = self._spawn("nsmanagerd", [binary, f"--config={self.config_file}",
                                                 f"--log-export={self.journal_export}"] + (args or []),
                                  env=e, log=self.daemon_log)
        try:
            self.wait_for_name(BUS_NAME, self.daemon, self.daemon_log_text, wait)
            if ready:
                self._wait_running(started, wait)
        except DaemonError:
            self._procs.pop("nsmanagerd", None)
            if self.daemon.poll() is None:
                self.daemon.kill()
                # A daemon stuck in a file system's request (the very thing a test may be
                # after) cannot die until that is answered: fail now, not hang; it is reaped
                # when the test has taken the file system away.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.daemon.wait(timeout=timeout(10))
            raise
        return self.daemon

    @property
    def journal_export(self) -> Path:
        return self.instance / "journal.export"

    def journal_records(self) -> list:
        """The daemon's records so far (nsmanagerd --log-export: the journal's export
        format), each a dict of its fields, values as str (bytes where not UTF-8)."""
        try:
            data = self.journal_export.read_bytes()
        except FileNotFoundError:
            return []
        return parse_journal_export(data)

    def _open_notify_socket(self) -> None:
        if self._notify_sock is None:
            path = self.instance / "notify.sock"
            path.unlink(missing_ok=True)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.bind(str(path))
            self._notify_sock = s

    def _wait_running(self, started: int, wait: float) -> None:
        deadline = time.monotonic() + timeout(wait)
        while self.daemon_log_text().count(RUNNING_LINE) <= started:
            if self.daemon.poll() is not None:
                raise DaemonError(f"nsmanagerd exited with status {self.daemon.returncode} before it ran:\n"
                                  + self.daemon_log_text())
            if time.monotonic() > deadline:
                raise DaemonError("nsmanagerd took its bus name but did not log that it runs:\n"
                                  + self.daemon_log_text())
            time.sleep(0.02)

    def _read_notifications(self, wait: float) -> None:
        import select
        r, _, _ = select.select([self._notify_sock], [], [], wait)
        while r:
            self.ready_notifications.append(self._notify_sock.recv(65536).decode(errors="replace"))
            r, _, _ = select.select([self._notify_sock], [], [], 0)

    def notifications(self) -> list[str]:
        if self._notify_sock is not None:
            self._read_notifications(0)
        return list(self.ready_notifications)

    def stop_daemon(self, sig: int = signal.SIGTERM, wait: float = 20) -> int | None:
        """Signal nsmanagerd and wait for it; returns its exit status (negative: killed by
        that signal), also appended to self.daemon_exit_codes. None if it was not running."""
        if self.daemon is None:
            return None
        p, self.daemon = self.daemon, None
        self._procs.pop("nsmanagerd", None)
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout(wait))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                with open(self.daemon_log, "a") as f:
                    f.write(f"==== sandbox: nsmanagerd ignored signal {sig} for {timeout(wait)}s, killed\n")
                self.daemon_exit_codes.append(p.returncode)
                raise DaemonError(f"nsmanagerd did not exit within {timeout(wait)}s of signal {sig}")
        self.daemon_exit_codes.append(p.returncode)
        with open(self.daemon_log, "a") as f:
            f.write(f"==== sandbox: nsmanagerd exited with status {p.returncode}\n")
        self._wait_name_gone(BUS_NAME)
        if self._notify_sock is not None:
            self._read_notifications(0)
        return p.returncode

    def kill_daemon(self) -> int | None:
        """kill -9."""
        return self.stop_daemon(signal.SIGKILL)

    def restart_daemon(self, **kw) -> subprocess.Popen:
        """Start again with the same configuration and state (after stop or kill)."""
        if self.daemon is not None:
            self.stop_daemon()
        return self.start_daemon(write=False, **kw)

    def daemon_running(self) -> bool:
        return self.daemon is not None and self.daemon.poll() is None

    def daemon_log_text(self) -> str:
        return self.daemon_log.read_text(errors="replace") if self.instance and self.daemon_log.exists() else ""

    def cleanup_instance(self, remove_namespaces: bool = True) -> list[str]:
        """End the current instance: remove its namespaces through the bus, stop the
        daemon, unmount what the test mounted through the helpers, then compare the
        mount table with the one new_instance() saw. Mounts the daemon leaves by design
        (SubtreeRoot and SharedSubtrees bound onto themselves, private mounts in
        StateDirectory) are unmounted silently; anything else is a leak. Everything is
        cleaned up either way; returns the list of problems (empty when clean)."""
        if self.instance is None:
            return []
        problems = []
        if remove_namespaces and self.daemon_running():
            try:
                for user, _uid, _state, _path in self.manager().ListNamespaces():
                    try:
                        self.manager().RemoveNamespace(user)
                    except Exception as e:  # noqa: BLE001 - reported, cleanup goes on
                        problems.append(f"RemoveNamespace({user}) at cleanup failed: {e}")
            except Exception as e:  # noqa: BLE001
                problems.append(f"ListNamespaces at cleanup failed: {e}")
        if self.daemon is not None:
            try:
                code = self.stop_daemon()
                # 0 is a clean exit; anything else after SIGTERM is a crash or, in the
                # ASan/UBSan pass, a sanitizer's report (leaks exit with 23).
                if code not in (None, 0):
                    problems.append(f"nsmanagerd exited with status {code} after SIGTERM (see its log)")
            except DaemonError as e:
                problems.append(str(e))
        for r in self._recorders:
            r.close()
        self._recorders.clear()
        if self._notify_sock is not None:
            self._notify_sock.close()
            self._notify_sock = None

        for target in reversed(self._test_mounts):
            with contextlib.suppress(OSError):
                sys_umount(target, MNT_DETACH)
        self._test_mounts.clear()

        base_ids = {m.id for m in self._instance_baseline}
        now = host_mountinfo()
        now_ids = {m.id for m in now}
        gone = [m for m in self._instance_baseline if m.id not in now_ids]
        if gone:
            problems.append("mounts of the machine disappeared: " + "; ".join(map(str, gone)))
        expected = {str(self.subtree_root)} | set(self.shared_subtrees)
        leaked = []
        for m in now:
            if m.id in base_ids:
                continue
            by_design = m.target in expected or (
                _is_under(m.target, self.state_dir) and m.fstype != "nsfs")
            if not by_design:
                leaked.append(m)
        if leaked:
            problems.append(f"{len(leaked)} mount(s) leaked into the host namespace: "
                            + "; ".join(map(str, leaked)))
        # Deepest first, detached: a clean table for the next instance whatever happened.
        for m in sorted((m for m in now if m.id not in base_ids), key=lambda m: -m.target.count("/")):
            with contextlib.suppress(OSError):
                sys_umount(m.target, MNT_DETACH | UMOUNT_NOFOLLOW)
        left = [m for m in host_mountinfo() if m.id not in base_ids]
        if left:
            problems.append("could not unmount: " + "; ".join(map(str, left)))

        strays = self.reap_strays()
        if strays:
            problems.append("processes left running (stopped now): " + "; ".join(strays))
        self.instance = None
        return problems

    # -- looking at views ----------------------------------------------------------

    def open_view_fd(self, user: str) -> int:
        """An fd of user's mount namespace, from OpenMountNamespace (caller closes it)."""
        return self.manager().OpenMountNamespace(user).take()

    def view_argv(self, fd: int, argv: list, as_user: str | None = None) -> list:
        cmd = ["nsenter", f"--mount=/proc/self/fd/{fd}", "--"]
        if as_user is not None:
            cmd += self._setpriv(as_user)
        return cmd + [str(a) for a in argv]

    def in_view(self, user: str | None, argv: list, as_user: str | None = None, check: bool = False,
                input: str | None = None, wait: float = 30, env: dict | None = None) -> subprocess.CompletedProcess:
        """Run argv inside user's view (user None: on the host), setns() through the fd
        OpenMountNamespace returns (nsenter --mount=/proc/self/fd/N). With as_user the
        command then drops to that user's uid/gid/groups. Output is captured as text."""
        user_env = self.user_env(as_user, env) if as_user is not None else env
        replace = as_user is not None
        if user is None:
            return self.run(argv if as_user is None else self._setpriv(as_user) + list(argv),
                            check=check, input=input, wait=wait, env=user_env, replace_env=replace)
        fd = self.open_view_fd(user)
        try:
            return self.run(self.view_argv(fd, argv, as_user), pass_fds=(fd,), check=check,
                            input=input, wait=wait, env=user_env, replace_env=replace)
        finally:
            os.close(fd)

    def run(self, argv: list, check: bool = False, input: str | None = None, wait: float = 30,
            env: dict | None = None, replace_env: bool = False, **kw) -> subprocess.CompletedProcess:
        """Run argv (output captured as text); env is added to ours (replace_env: is the
        whole environment)."""
        e = {} if replace_env else dict(os.environ)
        e.update(env or {})
        kw.setdefault("errors", "surrogateescape")   # a name in the output may be any bytes
        p = subprocess.run([str(a) for a in argv], capture_output=True, text=True, input=input,
                           timeout=timeout(wait), env=e, **kw)
        if check and p.returncode != 0:
            raise subprocess.CalledProcessError(p.returncode, p.args, p.stdout, p.stderr)
        return p

    def run_popen(self, argv: list, **kw) -> subprocess.Popen:
        """Start argv in the background (output discarded unless given); the caller
        waits for it."""
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        return subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, **kw)

    def user_env(self, user: str, env: dict | None = None) -> dict:
        """The environment login(1) would give user (plus env)."""
        import pwd
        pw = pwd.getpwnam(user)
        e = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": pw.pw_dir, "USER": pw.pw_name,
             "LOGNAME": pw.pw_name, "SHELL": pw.pw_shell, "LANG": "C.UTF-8",
             "DBUS_SYSTEM_BUS_ADDRESS": SYSTEM_BUS_ADDRESS}
        e.update(env or {})
        return e

    def _setpriv(self, user: str) -> list:
        import pwd
        pw = pwd.getpwnam(user)
        return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups", "--"]

    def run_as(self, user: str, argv: list, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
        """Run argv on the host as `user`: uid, gid, supplementary groups and the
        environment login(1) would set (plus env); no PAM session."""
        return self.run(self._setpriv(user) + [str(a) for a in argv], env=self.user_env(user, env),
                        replace_env=True, **kw)

    def view_ns_id(self, user: str) -> int:
        out = self.in_view(user, ["readlink", "/proc/self/ns/mnt"], check=True).stdout.strip()
        return int(re.fullmatch(r"mnt:\[(\d+)\]", out).group(1))

    def mountinfo(self, view: str | None = None) -> list[Mount]:
        """Parsed /proc/self/mountinfo of the host (view None) or inside user's view."""
        if view is None:
            return host_mountinfo()
        return parse_mountinfo(self.in_view(view, ["cat", "/proc/self/mountinfo"], check=True).stdout)

    def mount_count(self, view: str | None = None) -> int:
        return len(self.mountinfo(view))

    FINDMNT_COLUMNS = "ID,PARENT,TARGET,SOURCE,FSTYPE,PROPAGATION"

    def findmnt_json(self, view: str | None = None, columns: str = FINDMNT_COLUMNS,
                     extra_args: list | None = None) -> list[dict]:
        """findmnt --json --list, on the host or in user's view: a list of dicts."""
        argv = ["findmnt", "--json", "--list", "-o", columns] + (extra_args or [])
        p = self.in_view(view, argv, check=True)
        return json.loads(p.stdout)["filesystems"] if p.stdout.strip() else []

    def findmnt(self, view: str | None = None, args: list | None = None,
                columns: str = "TARGET,SOURCE,FSTYPE,PROPAGATION") -> str:
        """findmnt's tree as text, for people."""
        p = self.in_view(view, ["findmnt", "-o", columns] + (args or []))
        return p.stdout + p.stderr

    # -- making mounts in tests ------------------------------------------------------

    def mount_tmpfs(self, target: str, source: str = "tmpfs", files: dict | None = None,
                    view: str | None = None, mode: str = "755") -> str:
        """Mount a small tmpfs at target (created if missing) on the host, or inside
        user's view with view=USER (as root there), and write `files` {name: text} in
        it. Unmounted by cleanup_instance() if the test does not."""
        files = files or {}
        if view is None:
            os.makedirs(target, exist_ok=True)
            self._mount(source, target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size=4m", test=True)
            for name, text in files.items():
                Path(target, name).write_text(text)
        else:
            script = 'mkdir -p "$1" && mount -t tmpfs -o "mode=$3,size=4m,nosuid,nodev" "$2" "$1"'
            script += "".join(f' && printf %s "${i + 4}" > "$1/{name}"'
                              for i, name in enumerate(files))
            self.in_view(view, ["sh", "-c", script, "sh", target, source, mode, *files.values()], check=True)
            self._test_mounts.append(str(target))   # if it propagated to the host
        return target

    def mount_cd(self, target: str = "/mnt/cd", label: str = "NSM_TEST_CD") -> tuple[str, str]:
        """Mount a "CD" on the host: a tmpfs whose source is the label, with a marker file
        README.txt. Returns (path of the marker, its content)."""
        content = f"nsmanager test CD {label}\n"
        self.mount_tmpfs(target, source=label, files={"README.txt": content}, mode="555")
        return f"{target}/README.txt", content

    def umount(self, target: str, view: str | None = None, detach: bool = False) -> None:
        if view is None:
            sys_umount(target, MNT_DETACH if detach else 0)
        else:
            self.in_view(view, ["umount"] + (["-l"] if detach else []) + [target], check=True)
        with contextlib.suppress(ValueError):
            self._test_mounts.remove(str(target))

    def track_mount(self, target: str) -> None:
        """Have cleanup_instance() unmount target (a mount a test made another way)."""
        self._test_mounts.append(str(target))

    # -- teardown --------------------------------------------------------------------

    def teardown(self, check: bool = True) -> None:
        """Stop every process, unmount everything, and (check=True) raise SandboxLeak if
        the mount table is not exactly what it was when the namespace was entered."""
        problems = []
        if self.instance is not None:
            problems += self.cleanup_instance()
        if self.daemon is not None:
            with contextlib.suppress(DaemonError):
                self.stop_daemon()
        for r in self._recorders:
            r.close()
        self._recorders.clear()
        if self._bus is not None:
            with contextlib.suppress(Exception):
                self._bus.close()
            self._bus = None
        for name in list(self._procs):
            self._stop_proc(name)
        self.reap_strays()
        if self.root_propagation == "shared" or self._mounts:
            with contextlib.suppress(OSError):
                set_propagation("/", MS_REC | MS_PRIVATE)
        base_ids = {m.id for m in self.baseline} if self.baseline else set()
        # Anything stacked on top of our mounts (leaks) has to go first.
        if self.baseline:
            extra = [m for m in host_mountinfo() if m.id not in base_ids]
            ours = set(self._mounts)
            strangers = [m for m in extra if m.target not in ours]
            if strangers:
                problems.append("mounts left at teardown: " + "; ".join(map(str, strangers)))
            for m in sorted(strangers, key=lambda m: -m.target.count("/")):
                with contextlib.suppress(OSError):
                    sys_umount(m.target, MNT_DETACH | UMOUNT_NOFOLLOW)
        for target in reversed(self._mounts):
            try:
                sys_umount(target)
            except OSError as e:
                if e.errno == errno.EBUSY:
                    problems.append(f"{target} busy at teardown, detached; held by: "
                                    + (", ".join(holders_of(target)) or "no process of ours"))
                    with contextlib.suppress(OSError):
                        sys_umount(target, MNT_DETACH)
                elif e.errno != errno.EINVAL:
                    problems.append(str(e))
        self._mounts.clear()
        self._is_set_up = False
        if self.baseline:
            now = host_mountinfo()
            if len(now) != len(self.baseline) or {m.id for m in now} != base_ids:
                extra = [m for m in now if m.id not in base_ids]
                problems.append(f"mount count {len(now)} after teardown, baseline {len(self.baseline)}; extra: "
                                + "; ".join(map(str, extra)))
        problems += self._check_machine_dirs()
        if problems and check:
            raise SandboxLeak("sandbox teardown: " + "\n".join(problems))

    def _check_machine_dirs(self) -> list[str]:
        """What appeared in (or went from) the machine's own /, /etc, /srv and /var/lib since
        set-up: something written past the sandbox's tmpfs mounts, onto the machine's disk.
        Reported, never removed (it may be someone else's)."""
        if self._machine_dirs is None:
            return []
        problems = []
        for p, names in list_machine_dirs(self._machine_dirs).items():
            before = self._machine_dirs_before[p]
            made, gone = sorted(names - before), sorted(before - names)
            if made:
                problems.append(f"created on the machine's own file system in {p}: {', '.join(made)}")
            if gone:
                problems.append(f"gone from the machine's own file system in {p}: {', '.join(gone)}")
        for fd in self._machine_dirs.values():
            os.close(fd)
        self._machine_dirs = None
        return problems

    def __enter__(self):
        return self.setup()

    def __exit__(self, exc_type, *exc):
        self.teardown(check=exc_type is None)
