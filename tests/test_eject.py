# SPDX-License-Identifier: LGPL-2.1-or-later
"""Eject() and ReleaseWithHost=: a device's file system detached from the host and from every
view, so that the device is free (docs/mount-events.md).

The device is a loop device over an ext4 image in the test's own directory (the sandbox's
/tmp tmpfs), mounted on the host's /mnt/usb inside the sandbox; every test detaches the loop
device at its end. "Free" is what udisksctl power-off needs: open(O_EXCL) of the device
succeeds (losetup -d would prove nothing: on a busy device it only sets autoclear). Through the
real bus and polkitd."""

import contextlib
import json
import os
import subprocess
import time

import dbus
import pytest

from caller import assert_refused, call_as
from helpers import E_BUSY, E_INVALID_ARGS, E_INVALID_PATH, create, expect_error, wait_until
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, MNT_DETACH, nsctl_binary, sys_umount

EJECT_LAZY = 0x1
RECURSIVE = 0x1
BIND_MKDIR = 0x2


class Usb:
    """An ext4 file system on a loop device, with a directory 'sub' holding a file."""

    def __init__(self, sb):
        self.sb = sb
        self.image = sb.instance / "usb.img"
        subprocess.run(["truncate", "-s", "16M", str(self.image)], check=True)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(self.image)], check=True)
        self.dev = subprocess.run(["losetup", "--find", "--show", str(self.image)], check=True, capture_output=True,
                                  text=True).stdout.strip()
        st = os.stat(self.dev)
        self.devno = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"

    def mount_on_host(self, target="/mnt/usb"):
        os.makedirs(target, exist_ok=True)
        subprocess.run(["mount", "-t", "ext4", self.dev, target], check=True)
        self.sb.track_mount(target)
        os.makedirs(f"{target}/sub", exist_ok=True)
        with open(f"{target}/sub/file", "w") as f:
            f.write("on the stick\n")

    def free(self) -> bool:
        """Whether the device is free: nobody has it open exclusively (a mounted file system
        does), as udisksctl power-off needs."""
        try:
            fd = os.open(self.dev, os.O_RDONLY | os.O_EXCL)
        except OSError:
            return False
        os.close(fd)
        return True

    def mounts(self, view=None):
        return [m.target for m in self.sb.mountinfo(view) if m.majmin == self.devno]

    def close(self):
        # Whatever a failed test left: lazily off the host (the views go with the daemon's
        # cleanup), then the loop device.
        for target in self.mounts():
            with contextlib.suppress(OSError):
                sys_umount(target, MNT_DETACH)
        subprocess.run(["losetup", "-d", self.dev], capture_output=True)


@pytest.fixture
def usb(daemon):
    u = Usb(daemon)
    yield u
    u.close()


def setup_copies(sb, usb):
    """A stick on a shared machine: the stick on the host's /mnt/usb (every view gets a copy); bob makes
    his /mnt, and with it his copy, private (the host's unmount no longer reaches it); alice binds
    its subdirectory into her home."""
    create(sb, "alice", "bob")
    usb.mount_on_host()
    m = sb.manager()
    m.SetPropagation("bob", "/mnt", "private", RECURSIVE)
    m.BindMount("alice", "/mnt/usb/sub", "/home/alice/usb", BIND_MKDIR)
    assert sb.in_view("alice", ["cat", "/home/alice/usb/file"]).stdout == "on the stick\n"
    assert usb.mounts("bob") == ["/mnt/usb"]
    assert not usb.free()


def bob_inside(sb, path="/mnt/usb"):
    """A process of bob's, in his view, working in his copy of the stick."""
    fd = sb.open_view_fd("bob")
    try:
        p = subprocess.Popen(["nsenter", f"--mount=/proc/self/fd/{fd}", "setpriv", "--reuid=2002", "--regid=2002",
                              "--clear-groups", "sh", "-c", f'cd "{path}" && echo ready && exec sleep 600'],
                             pass_fds=(fd,), stdout=subprocess.PIPE, text=True)
    finally:
        os.close(fd)
    assert p.stdout.readline() == "ready\n"
    return p


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_eject_detaches_every_copy_and_frees_the_device(daemon, usb):
    setup_copies(daemon, usb)
    detached = [(str(u), str(p)) for u, p in daemon.manager().Eject("/mnt/usb", 0)]
    for want in (("", "/mnt/usb"), ("bob", "/mnt/usb"), ("alice", "/home/alice/usb")):
        assert want in detached, f"{want} not in {detached}"
    assert len(detached) == len(set(detached))
    assert usb.mounts() == [] and usb.mounts("alice") == [] and usb.mounts("bob") == []
    assert usb.free(), "the device is still held after Eject"
    # Nothing was detached but the stick's mounts: alice's home and /mnt are as they were.
    assert daemon.in_view("alice", ["test", "-d", "/home/alice/usb"]).returncode == 0


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_eject_by_device_and_of_a_stack(daemon, usb):
    """Eject names the device; copies stacked on one another (bound onto itself) go too."""
    create(daemon, "alice")
    usb.mount_on_host()
    subprocess.run(["mount", "--bind", "/mnt/usb", "/mnt/usb"], check=True)
    daemon.track_mount("/mnt/usb")
    daemon.in_view("alice", ["mount", "--bind", "/mnt/usb/sub", "/mnt/usb/sub"], check=True)
    before = len(usb.mounts()) + len(usb.mounts("alice"))
    assert before >= 4
    detached = daemon.manager().Eject(usb.dev, 0)
    assert len(detached) >= before, detached
    assert usb.mounts() == [] and usb.mounts("alice") == [] and usb.free()


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_eject_busy_names_the_process_and_detaches_nothing(daemon, usb):
    setup_copies(daemon, usb)
    p = bob_inside(daemon)
    try:
        before = (usb.mounts(), usb.mounts("alice"), usb.mounts("bob"))
        e = expect_error(lambda: daemon.manager().Eject("/mnt/usb", 0), E_BUSY)
        message = e.get_dbus_message()
        assert f"pid {p.pid} (sleep) of bob" in message and "in the view of 'bob'" in message, message
        assert "working directory on /mnt/usb" in message, message
        assert (usb.mounts(), usb.mounts("alice"), usb.mounts("bob")) == before, "Busy must detach nothing"
        # nsctl says the same, escaped, and fails.
        r = daemon.run([nsctl_binary(), "eject", "/mnt/usb"])
        assert r.returncode == 1 and f"pid {p.pid} (sleep) of bob" in r.stderr, r

        # --lazy: detached anyway; the stick is free once bob's process lets go.
        r = daemon.run([nsctl_binary(), "eject", "/mnt/usb", "--lazy"])
        assert r.returncode == 0 and "bob" in r.stdout and "/home/alice/usb" in r.stdout, r
        assert usb.mounts() == [] and usb.mounts("alice") == [] and usb.mounts("bob") == []
        assert not usb.free(), "bob's process still holds the file system"
    finally:
        p.kill()
        p.wait()
    wait_until(usb.free, "the device to be free once the last holder is gone")


def test_eject_names_holders_under_the_units_capabilities(instance, monkeypatch):
    """The holder scan reads other users' /proc/PID/cwd, root, fdinfo and maps, which the kernel
    lets root do only with CAP_SYS_PTRACE: under the unit's CapabilityBoundingSet= (applied
    here with setpriv, as systemd would) Eject still names bob's process, and
    ReleaseWithHost='s log the holder of a copy it detaches lazily."""
    sb = instance
    start_under_bounding_set(sb, monkeypatch, "nsmanagerd-capped", ReleaseWithHost=True)
    usb = Usb(sb)
    try:
        create(sb, "alice", "bob")
        usb.mount_on_host()
        p = bob_inside(sb)
        try:
            e = expect_error(lambda: sb.manager().Eject("/mnt/usb", 0), E_BUSY)
            message = e.get_dbus_message()
            assert f"Held by: pid {p.pid} (sleep) of bob, in the view of 'bob': working directory on /mnt/usb" \
                in message, message
            # the host's own unmount: bob's copy goes lazily, and the log names who holds it
            sys_umount("/mnt/usb", MNT_DETACH)
            wait_until(lambda: f"pid {p.pid} (sleep) of bob" in sb.daemon_log_text(), "the holder in the log",
                       diag=lambda: sb.daemon_log_text()[-2000:])
        finally:
            p.kill()
            p.wait()
        wait_until(usb.free, "the device to be free once bob's process is gone")
    finally:
        usb.close()


def test_eject_without_ptrace_says_nothing_was_detached(instance, monkeypatch):
    """Under a bounding set without CAP_SYS_PTRACE (a drop-in that takes it away) the scan
    cannot see bob's process, and the detach finds the stick busy at its first mount: the
    refusal says nothing was detached, and why its holder is not named (it said 'became busy
    ... what was detached before stays detached', with nothing detached)."""
    sb = instance
    start_under_bounding_set(sb, monkeypatch, "nsmanagerd-no-ptrace", without={"sys_ptrace"},
                             ReleaseWithHost=False)
    usb = Usb(sb)
    try:
        create(sb, "alice", "bob")
        usb.mount_on_host()
        p = bob_inside(sb)
        try:
            e = expect_error(lambda: sb.manager().Eject("/mnt/usb", 0), E_BUSY)
            message = e.get_dbus_message()
            assert "nothing was detached" in message and "CAP_SYS_PTRACE" in message, message
            assert "stays detached" not in message, message
            assert usb.mounts() == ["/mnt/usb"] and usb.mounts("bob") == ["/mnt/usb"], "a refused eject detached"
        finally:
            p.kill()
            p.wait()
        sb.manager().Eject("/mnt/usb", 0)
        wait_until(usb.free, "the device to be free once bob's process is gone")
    finally:
        usb.close()


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_eject_holders_by_open_file_and_mapping(daemon, usb):
    """An open file (its fd's mnt_id) and a mapped one (by device) keep it busy too."""
    setup_copies(daemon, usb)
    fd = daemon.open_view_fd("alice")
    try:
        p = subprocess.Popen(["nsenter", f"--mount=/proc/self/fd/{fd}", "python3", "-c",
                              "import mmap,sys; f=open('/home/alice/usb/file','rb'); m=mmap.mmap(f.fileno(),0,"
                              "access=mmap.ACCESS_READ); print('ready',flush=True); sys.stdin.read()"],
                             pass_fds=(fd,), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    finally:
        os.close(fd)
    try:
        assert p.stdout.readline() == "ready\n"
        e = expect_error(lambda: daemon.manager().Eject(usb.dev, 0), E_BUSY)
        assert f"pid {p.pid} (python3) of root, in the view of 'alice': open file on /home/alice/usb" in \
            e.get_dbus_message(), e.get_dbus_message()
    finally:
        p.stdin.close()
        p.wait()
    daemon.manager().Eject(usb.dev, 0)
    assert usb.free()


def test_release_with_host_frees_the_device_after_the_hosts_umount(daemon, usb):
    """ReleaseWithHost=yes (the default): the host's umount of its last mount of the stick is
    enough; the copies bob and alice hold are detached within a bound."""
    setup_copies(daemon, usb)
    daemon.umount("/mnt/usb")
    start = time.monotonic()
    wait_until(usb.free, "the device to be free after the host's umount", wait=2)
    took = time.monotonic() - start
    assert usb.mounts("alice") == [] and usb.mounts("bob") == []
    log = daemon.daemon_log_text()
    assert f"Released block device {usb.devno}" in log and "alice's '/home/alice/usb'" in log, log
    print(f"released {took * 1000:.0f} ms after the umount")


@pytest.mark.daemon_config(env={"NSM_MOUNT_EVENTS": "poll"})
def test_release_with_host_in_poll_mode(daemon, usb):
    """The host's table read again after each change: a mount it has seen. (One mounted and
    unmounted between two reads, within 100 ms, is never seen, nor released.)"""
    rec = daemon.signals()
    dbus.Interface(rec.bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE).Subscribe()
    setup_copies(daemon, usb)
    rec.wait_for("HostMountsChanged", lambda args: any(str(a[2]) == "/mnt/usb" for a in args[0]))
    daemon.umount("/mnt/usb")
    wait_until(usb.free, "the device to be free after the host's umount (poll mode)", wait=3)


def test_release_with_host_detaches_a_busy_copy_lazily_and_logs_its_holder(daemon, usb):
    setup_copies(daemon, usb)
    p = bob_inside(daemon)
    try:
        daemon.umount("/mnt/usb")
        wait_until(lambda: usb.mounts("bob") == [] and usb.mounts("alice") == [], "the copies to be detached")
        wait_until(lambda: f"pid {p.pid} (sleep) of bob" in daemon.daemon_log_text(), "the holder in the log")
        assert "detached lazily" in daemon.daemon_log_text()
        assert not usb.free()
    finally:
        p.kill()
        p.wait()
    wait_until(usb.free, "the device to be free once bob's process is gone")


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_without_release_with_host_the_copies_stay(daemon, usb):
    """What ReleaseWithHost= is for: without it the host's umount leaves the device held."""
    setup_copies(daemon, usb)
    # A subscriber of everything has the daemon watch the host, as ReleaseWithHost=yes would:
    # the signal of a later host mount shows that it has handled the umount before it.
    rec = daemon.signals(interface=MANAGER_IFACE)
    dbus.Interface(rec.bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE).Subscribe()
    daemon.umount("/mnt/usb")
    daemon.mount_tmpfs("/mnt/nsm-later")
    rec.wait_for("HostMountsChanged", lambda a: any(str(m[2]) == "/mnt/nsm-later" for m in a[0]))
    assert "The host unmounted the last mount of block device" not in daemon.daemon_log_text()
    assert usb.mounts("bob") == ["/mnt/usb"] and usb.mounts("alice") == ["/home/alice/usb"]
    assert not usb.free()
    daemon.manager().Eject(usb.dev, 0)
    assert usb.free()


def test_eject_refused_without_manage(daemon, usb):
    """Eject needs manage (auth_admin_keep): alice is refused, and nothing is detached."""
    setup_copies(daemon, usb)
    assert_refused(call_as(daemon, "alice", "Eject", "st", "/mnt/usb", 0), "alice's Eject")
    assert_refused(call_as(daemon, "alice", "Eject", "st", "/mnt/usb", 0, interactive=True),
                   "alice's Eject with interaction allowed (no agent)")
    r = daemon.run_as("alice", [nsctl_binary(), "eject", "/mnt/usb", "--no-ask-password"])
    assert r.returncode == 1, r
    assert usb.mounts() == ["/mnt/usb"] and "/home/alice/usb" in usb.mounts("alice")


def test_eject_bad_input(daemon, usb):
    usb.mount_on_host()
    m = daemon.manager()
    expect_error(lambda: m.Eject("mnt/usb", 0), E_INVALID_PATH)
    expect_error(lambda: m.Eject("/mnt/../mnt/usb", 0), E_INVALID_PATH)
    expect_error(lambda: m.Eject("/", 0), E_INVALID_PATH)
    expect_error(lambda: m.Eject("/mnt/usb", 0x2), E_INVALID_ARGS)
    expect_error(lambda: m.Eject("/mnt/nothing-here", 0), E_INVALID_PATH)
    # A mount point whose file system has no device (a tmpfs), and the root file system.
    daemon.mount_tmpfs("/mnt/tmp")
    e = expect_error(lambda: m.Eject("/mnt/tmp", 0), E_INVALID_PATH)
    assert "not a file system on a block device" in e.get_dbus_message()
    root_dev = os.stat("/").st_dev
    if os.major(root_dev) != 0:
        devs = [d for d in os.listdir("/dev") if d.startswith(("sd", "vd", "nvme", "xvd"))]
        for d in devs:
            if os.stat(f"/dev/{d}").st_rdev == root_dev:
                e = expect_error(lambda: m.Eject(f"/dev/{d}", 0), E_INVALID_PATH)
                assert "root file system" in e.get_dbus_message()
    assert usb.mounts() == ["/mnt/usb"], "refusals must detach nothing"


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_nsctl_eject_json(daemon, usb):
    setup_copies(daemon, usb)
    r = daemon.run([nsctl_binary(), "eject", usb.dev, "--json=short"])
    assert r.returncode == 0, r
    got = {(d["user"], d["mount_point"]) for d in json.loads(r.stdout)["detached"]}
    assert {("", "/mnt/usb"), ("bob", "/mnt/usb"), ("alice", "/home/alice/usb")} <= got
    r = daemon.run([nsctl_binary(), "eject", usb.dev])
    assert r.returncode == 0 and "Nothing of" in r.stdout, r


@pytest.mark.daemon_config(ReleaseWithHost=False)
def test_eject_refuses_a_copy_hidden_under_another_mount(daemon, usb):
    """alice covers the directory that holds her bind of the stick with a tmpfs: no path leads to
    the bind any more, so it cannot be unmounted; Eject says which, and detaches nothing (lazy
    or not)."""
    setup_copies(daemon, usb)
    daemon.manager().BindMount("alice", "/mnt/usb/sub", "/home/alice/dir/usb", BIND_MKDIR)
    daemon.mount_tmpfs("/home/alice/dir", view="alice")
    before = (usb.mounts(), usb.mounts("alice"), usb.mounts("bob"))
    for flags in (0, EJECT_LAZY):
        e = expect_error(lambda: daemon.manager().Eject("/mnt/usb", flags), E_BUSY)
        assert "'/home/alice/dir/usb' in the view of 'alice'" in e.get_dbus_message() and "hidden" in \
            e.get_dbus_message(), e.get_dbus_message()
        assert (usb.mounts(), usb.mounts("alice"), usb.mounts("bob")) == before, "nothing may be detached"
    daemon.umount("/home/alice/dir", view="alice")
    daemon.manager().Eject("/mnt/usb", 0)
    assert usb.free()


def start_under_bounding_set(sb, monkeypatch, name, without=frozenset(), **settings):
    """Start the daemon with the shipped unit's CapabilityBoundingSet= (less `without`), as
    systemd would: a wrapper that runs it under setpriv --bounding-set."""
    import sandbox as sandbox_module
    from test_install import unit_capabilities
    real = sandbox_module.daemon_binary()
    wrapper = sb.instance / name
    bounding = ",".join(["-all"] + [f"+{c}" for c in unit_capabilities() if c not in without])
    wrapper.write_text(f'#!/bin/sh\nexec setpriv --bounding-set={bounding} -- {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(sandbox_module, "daemon_binary", lambda: wrapper)
    sb.start_daemon(**settings)
