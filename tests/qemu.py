# SPDX-License-Identifier: LGPL-2.1-or-later
"""Debian 12 booted under qemu (TCG: no KVM needed) with one of Debian's own kernels, for the
kernel matrix (tests/test_qemu.py): what the project does on the kernels its users run.

How:
  1. tools/qemu-image builds (once; cached in /var/cache/nsmanager-qemu/bookworm,
     $NSM_QEMU_IMAGE overrides) root.img, an ext4 disk made with mkfs.ext4 -d from a
     debootstrapped Debian 12, and takes the kernels and their initramfs out of it
     (tools/qemu-image --kernels). The only skip: it exits 3, the Debian archive is
     unreachable when the image has to be built.
  2. A payload disk of the test's own, also made with mkfs.ext4 -d (label nsmpayload),
     carries what the guest is to run: `run` (a bash script) and whatever it needs (the
     .deb). Nothing is ever mounted on this machine: both disks are files.
  3. qemu-system-x86_64 -accel tcg boots the kernel with root.img as /dev/vda, opened with
     snapshot=on (the cached image is never written; a shared lock on it keeps
     tools/qemu-image from replacing it meanwhile), and the payload disk as /dev/vdb. The
     image's nsmtest-payload.service mounts it once the boot has settled, runs `run`,
     saves the boot's journal next to the output and powers off. The console goes to
     console.log, what `run` prints to the second serial port, checks.log, read while
     the guest runs: a test waits for lines there, never for a fixed time.
  4. After the poweroff, debugfs reads the results off the payload disk (out/).

Use:
    with Guest(image, kernel, logdir) as g:     # tools/qemu-image, its --kernels line
        g.boot({"run": script, "nsmanager.deb": path}, wait=900)
        g.checks_text(), g.out("journal.txt"), g.console_text()
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from machine import run_image_tool
from sandbox import REPO, timeout

IMAGE_TOOL = REPO / "tools" / "qemu-image"
QEMU = "qemu-system-x86_64"


@dataclass
class Kernel:
    name: str          # debian12, debian13
    version: str       # uname -r
    vmlinuz: Path
    initrd: Path


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


def build_image(desktop: bool = False) -> tuple[Path, float]:
    """tools/qemu-image: the image's directory (built if it is not current) and the time it took.
    desktop: the desktop image (--desktop: LightDM, Xorg and a kernel with DRM drivers)."""
    return run_image_tool(IMAGE_TOOL, ("debootstrap", "mkfs.ext4", "debugfs", QEMU),
                          "qemu-system-x86, debootstrap and e2fsprogs", ("--desktop",) if desktop else ())


def kernels(image: Path) -> dict[str, Kernel]:
    found = {}
    for line in (image / "kernels").read_text().splitlines():
        name, version, vmlinuz, initrd = line.split()
        found[name] = Kernel(name, version, image / vmlinuz, image / initrd)
    return found


def make_disk(path: Path, files: dict[str, object], label: str = "nsmpayload") -> None:
    """An ext4 image at path holding files (name -> bytes, str or a Path to copy), and an
    empty out/, made with mkfs.ext4 -d from a directory next to it."""
    tree = path.with_suffix(".tree")
    shutil.rmtree(tree, ignore_errors=True)
    (tree / "out").mkdir(parents=True)
    size = 0
    for name, content in files.items():
        dest = tree / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, dest)     # with its mode: a program stays executable
        else:
            dest.write_bytes(content.encode() if isinstance(content, str) else content)
        size += dest.stat().st_size
    mb = size // (1 << 20) + 64
    p = subprocess.run(["mkfs.ext4", "-q", "-F", "-L", label, "-d", str(tree), str(path), f"{mb}M"],
                       capture_output=True, text=True, timeout=timeout(120))
    shutil.rmtree(tree, ignore_errors=True)
    if p.returncode != 0:
        pytest.fail(f"mkfs.ext4 -d for {path} failed: {p.stderr}", pytrace=False)


def debugfs_cat(disk: Path, path: str) -> str | None:
    """A file of an ext4 image, read with debugfs (None if it is not there)."""
    p = subprocess.run(["debugfs", "-R", f"cat {path}", str(disk)], capture_output=True, timeout=timeout(60))
    if p.returncode != 0 or b"File not found" in p.stderr:
        return None
    return p.stdout.decode(errors="replace")


class Guest:
    """One boot of the image with one kernel and one payload."""

    def __init__(self, image: Path, kernel: Kernel, logdir: Path, memory_mb: int = 1024, cpus: int = 2,
                 vga: bool = False):
        self.image = image
        self.vga = vga          # an emulated VGA card (bochs-drm drives it): a graphical seat0
        self.kernel = kernel
        self.logdir = logdir
        self.memory_mb = memory_mb
        self.cpus = cpus
        self.console_log = logdir / "console.log"
        self.checks_log = logdir / "checks.log"
        self.payload = logdir / "payload.img"
        self.qemu: subprocess.Popen | None = None
        self.timings: dict[str, float] = {}
        self._lock = None

    def __enter__(self):
        # Shared: tools/qemu-image does not replace the image while a guest boots it.
        self._lock = open(str(self.image) + ".lock", "a")
        fcntl.flock(self._lock, fcntl.LOCK_SH)
        return self

    def __exit__(self, *exc):
        self.kill()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def argv(self) -> list[str]:
        # -cx16: Debian 12's qemu (7.2) emulates cmpxchg16b wrongly enough that 6.12's SLUB,
        # which uses it for every allocation, oopses within seconds of boot (seen with
        # -cpu max and qemu64 alike, with one TCG thread or several); without the flag the
        # kernel takes its other path. 6.1 boots either way.
        append = ("root=/dev/vda rw console=ttyS0 nsmtest=1 panic=-1 systemd.show_status=false "
                  "systemd.journald.forward_to_console=0 loglevel=4")
        return [QEMU, "-accel", "tcg,thread=multi", "-machine", "q35", "-cpu", "qemu64,-cx16", "-smp", str(self.cpus),
                "-m", str(self.memory_mb), "-nodefaults", "-no-reboot", "-display", "none", "-nic", "none",
                "-kernel", str(self.kernel.vmlinuz), "-initrd", str(self.kernel.initrd), "-append", append,
                "-drive", f"file={self.image / 'root.img'},format=raw,if=virtio,snapshot=on",
                "-drive", f"file={self.payload},format=raw,if=virtio",
                "-serial", f"file:{self.console_log}", "-serial", f"file:{self.checks_log}"] + \
            (["-device", "VGA"] if self.vga else [])

    def boot(self, files: dict[str, object], wait: float = 900, on_line=None) -> int | None:
        """Boots with a payload of files, waits for the guest to power off (at most wait
        seconds, stretched by NSM_TIMEOUT_SCALE; then it is killed). on_line(line) sees each
        line of checks.log as it comes. Returns qemu's exit status (None if it was killed)."""
        make_disk(self.payload, files)
        start = time.monotonic()
        self.qemu = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = start + timeout(wait)
        seen = 0
        while True:
            text = self.checks_text()
            lines = text.splitlines(keepends=True)
            for line in lines[seen:]:
                if not line.endswith("\n"):
                    break
                seen += 1
                if "NSMTEST: start" in line and "boot" not in self.timings:
                    self.timings["boot"] = time.monotonic() - start
                if on_line:
                    on_line(line.rstrip("\n"))
            if self.qemu.poll() is not None:
                break
            if time.monotonic() > deadline:
                self.kill()
                return None
            time.sleep(0.5)
        self.timings["total"] = time.monotonic() - start
        return self.qemu.returncode

    def kill(self) -> None:
        if self.qemu is not None and self.qemu.poll() is None:
            self.qemu.kill()
            self.qemu.wait(30)

    def qemu_output(self) -> str:
        if self.qemu is None or self.qemu.stdout is None or self.qemu.poll() is None:
            return ""
        return self.qemu.stdout.read().decode(errors="replace")

    def checks_text(self) -> str:
        try:
            return self.checks_log.read_text(errors="replace").replace("\r", "")
        except OSError:
            return ""

    def console_text(self, lines: int = 80) -> str:
        try:
            text = self.console_log.read_text(errors="replace")
        except OSError:
            return "(no console log)"
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "")
        return _tail("\n".join(line for line in text.splitlines() if line.strip()), lines)

    def out(self, name: str) -> str | None:
        """A file the guest left in out/ of the payload disk (after the poweroff)."""
        return debugfs_cat(self.payload, f"/out/{name}")
