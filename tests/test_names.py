# SPDX-License-Identifier: LGPL-2.1-or-later
"""Names reach every reader whole (docs/interface.md, "Text from the kernel or a user").

The kernel allows any byte but '/' and NUL in a mount point, and a tmpfs's source (as a FUSE
fsname=) is any bytes its mounter chose; a process sets its own comm. The bus refuses a
string that is not UTF-8, so one such name used to fail GetMounts of every view that saw it,
and the Busy of an Eject that named such a process. The daemon escapes them by one rule
(bytes that are not UTF-8, control characters and '\\' as \\xNN); nsctl shows the same.

And Eject takes what the kernel says: never the devices of the host's /, /usr, /boot, /var,
/home or swap, for anyone, root included."""

import json
import os
import subprocess

import dbus
import pytest

from caller import call_as
from helpers import (ALICE_OWN_ONLY, E_BUSY, E_INVALID_ARGS, E_INVALID_PATH, E_MOUNT_CHANGED, create, expect_error, ns_path,
                     wait_until)
from sandbox import MS_NODEV, MS_NOSUID, nsctl_binary, sys_mount
from test_eject import Usb
from test_mount_events import Follow, subscribe, wait_changes

# Not UTF-8 (0xff), ESC, BEL, a C1 CSI, a backslash, and text that is fine (an RTL mark).
BAD = b"bad\xff\x1b]0;X\x07\xc2\x9b\xe2\x80\x8f\\end"
BAD_SHOWN = "bad\\xff\\x1b]0;X\\x07\\xc2\\x9b\u200f\\x5cend"
SRC = b"src\xfe\x01"
SRC_SHOWN = "src\\xfe\\x01"


def fs(b: bytes) -> str:
    """bytes as Python names them in paths (os.fsdecode), for subprocess and the sandbox."""
    return os.fsdecode(b)


def mount_named(sb, target: bytes, source: bytes = SRC, view=None):
    """A tmpfs whose source and mount point are these bytes, on the host or in a view."""
    if view is None:
        os.makedirs(target, exist_ok=True)
        sys_mount(fs(source), fs(target), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")
        sb.track_mount(fs(target))
    else:
        sb.in_view(view, ["sh", "-c", 'mkdir -p "$1" && mount -t tmpfs -o size=1m,nosuid,nodev "$2" "$1"', "sh",
                          fs(target), fs(source)], check=True)


def rows(mounts):
    return [(str(m[4]), str(m[5])) for m in mounts]


@pytest.fixture
def named(daemon):
    """alice and bob, a hostile name on the shared /mnt (every view has it) and one in alice's
    view alone."""
    create(daemon, "alice", "bob")
    mount_named(daemon, b"/mnt/" + BAD)
    wait_until(lambda: ("/mnt/" + BAD_SHOWN, SRC_SHOWN) in rows(daemon.manager().GetMounts("bob")),
               "the host's mount to reach bob's view")
    mount_named(daemon, b"/home/alice/" + BAD, view="alice")
    return daemon


def test_get_mounts_of_everyone_lists_a_hostile_name_escaped(named):
    sb = named
    m = sb.manager()
    host = rows(m.GetMounts(""))
    assert ("/mnt/" + BAD_SHOWN, SRC_SHOWN) in host, host
    for user in ("alice", "bob"):
        got = rows(m.GetMounts(user))
        assert ("/mnt/" + BAD_SHOWN, SRC_SHOWN) in got, (user, got)
        assert rows(sb.namespace(ns_path(user)).GetMounts()) == got
    assert ("/home/alice/" + BAD_SHOWN, SRC_SHOWN) in rows(m.GetMounts("alice"))
    assert not any("/home/alice/bad" in t for t, _ in rows(m.GetMounts("bob")))
    assert not any("/home/alice/bad" in t for t, _ in host)


def test_nsctl_shows_a_hostile_name_in_text_json_and_graph(named):
    sb = named
    nsctl = nsctl_binary()
    for args in ([], ["alice"], ["bob"]):
        p = sb.run([nsctl, "mounts", *args])
        assert p.returncode == 0 and "Failed" not in p.stderr, p
        assert "\x1b" not in p.stdout and "\x07" not in p.stdout and "\udcff" not in p.stdout, repr(p.stdout)
        assert "/" + BAD_SHOWN in p.stdout.replace("\u2500", "") or BAD_SHOWN in p.stdout, (args, p.stdout)
        assert SRC_SHOWN in p.stdout, (args, p.stdout)
    p = sb.run([nsctl, "mounts", "--json", "alice"])
    assert p.returncode == 0, p
    targets = [m["target"] for m in json.loads(p.stdout)["mounts"]]
    assert "/mnt/" + BAD_SHOWN in targets and "/home/alice/" + BAD_SHOWN in targets, targets
    g = sb.run([nsctl, "mounts", "--graph", "alice"])
    assert g.returncode == 0, g
    svg = subprocess.run(["dot", "-Tsvg"], input=g.stdout, capture_output=True, text=True)
    assert svg.returncode == 0, svg.stderr
    assert BAD_SHOWN in svg.stdout, svg.stdout[:2000]


def test_mounts_changed_and_follow_carry_a_hostile_name(named):
    sb = named
    rec = subscribe(sb, "alice")
    f = Follow(sb, "alice")
    try:
        f.wait_line(lambda line: line.startswith("ACTION"), "the header")
        mount_named(sb, b"/mnt/" + BAD + b"2")
        target = "/mnt/" + BAD_SHOWN + "2"
        wait_changes(rec, ns_path("alice"), lambda attached, detached: any(a[2] == target for a in attached))
        line = f.wait_line(lambda line: target in line, "the hostile mount")
        assert line.startswith("mount") and SRC_SHOWN in line and "\x1b" not in line, repr(line)
    finally:
        f.stop()
        sb.umount(fs(b"/mnt/" + BAD + b"2"), detach=True)


@pytest.fixture
def usb(daemon):
    u = Usb(daemon)
    yield u
    u.close()


def test_busy_names_a_holder_whose_comm_is_not_utf8(daemon, usb):
    """A process that names itself (prctl PR_SET_NAME) with bytes that are not UTF-8 holds the
    stick: the Busy that names it still arrives, escaped, and nsctl shows the same."""
    create(daemon, "alice")
    usb.mount_on_host()
    p = subprocess.Popen(["python3", "-c", "import ctypes, os, sys; os.chdir('/mnt/usb'); "
                          "ctypes.CDLL(None).prctl(15, b'hold\\xff\\x1b', 0, 0, 0); print('ready', flush=True); "
                          "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        e = expect_error(lambda: daemon.manager().Eject("/mnt/usb", 0), E_BUSY)
        assert f"pid {p.pid} (hold\\xff\\x1b) of root" in e.get_dbus_message(), e.get_dbus_message()
        r = daemon.run([nsctl_binary(), "eject", "/mnt/usb"])
        assert r.returncode == 1 and f"pid {p.pid} (hold\\xff\\x1b) of root" in r.stderr, r
        assert usb.mounts() == ["/mnt/usb"]
    finally:
        p.kill()
        p.wait()


def test_eject_never_takes_the_hosts_own_devices(daemon, usb):
    """The file systems of the host's /, /usr, /boot, /boot/efi, /var, /home and swap are never
    ejected, root asking or not; any other block device may be named by its number as
    /dev/block/MAJ:MIN, whether or not such a node exists."""
    m = daemon.manager()
    expect_error(lambda: m.Eject("/", 0), E_INVALID_PATH)
    root = os.stat("/").st_dev
    if os.major(root) != 0:
        e = expect_error(lambda: m.Eject(f"/dev/block/{os.major(root)}:{os.minor(root)}", 0), E_INVALID_PATH)
        assert "root file system" in e.get_dbus_message() and "never" in e.get_dbus_message()
    expect_error(lambda: m.Eject("/dev/block/4095:4095", 0), E_INVALID_PATH)
    expect_error(lambda: m.Eject("/dev/block/7:x", 0), E_INVALID_PATH)

    # The stick, mounted where the host keeps /boot (in the sandbox's own namespace): refused.
    usb.mount_on_host("/boot")
    try:
        e = expect_error(lambda: m.Eject(f"/dev/block/{usb.devno}", 0), E_INVALID_PATH)
        assert "/boot" in e.get_dbus_message(), e.get_dbus_message()
        expect_error(lambda: m.Eject(usb.dev, 0), E_INVALID_PATH)
    finally:
        daemon.umount("/boot")
    usb.mount_on_host()
    detached = [(str(u), str(p)) for u, p in m.Eject(f"/dev/block/{usb.devno}", 0)]
    assert ("", "/mnt/usb") in detached and usb.mounts() == []


# ---------------------------------------------------------------------------
# GetMountsEx, the companion of GetMounts

UNIQUE_ID_MIN = 1 << 31      # the kernel's unique mount ids start above the old ones (6.8)
EX_FIELDS = ("id", "fingerprint", "parent_id", "peer_group", "master_group", "mount_point", "mount_point_bytes",
             "source", "source_bytes", "fstype", "options", "propagation", "device", "origin")


def mounts_ex(sb, user):
    """GetMountsEx(user) as dicts, the byte arrays as bytes."""
    out = []
    for m in sb.manager().GetMountsEx(user):
        d = dict(zip(EX_FIELDS, m))
        d["mount_point_bytes"] = bytes(d["mount_point_bytes"])
        d["source_bytes"] = bytes(d["source_bytes"])
        out.append(d)
    return out


def at(mounts, target: bytes):
    found = [m for m in mounts if m["mount_point_bytes"] == target]
    assert found, f"no mount at {target!r} in {[m['mount_point'] for m in mounts]}"
    return found[-1]


@pytest.mark.daemon_config(files={"user.d/alice.conf": "[View]\nTemporaryFileSystem=%h/nsm-ex-scratch:size=1M\n"})
def test_get_mounts_ex_gives_bytes_ids_devices_and_origins(named, usb):
    sb = named
    m = sb.manager()
    usb.mount_on_host()
    # A tmpfs whose source names the stick's node (any mounter may write any source).
    mount_named(sb, b"/mnt/fake", source=os.fsencode(usb.dev))
    src = sb.instance / "ex-src"
    src.mkdir()
    m.BindMount("alice", str(src), "/home/alice/ex-bind", 0x2)
    major, minor = (int(x) for x in usb.devno.split(":"))
    wait_until(lambda: any(e["mount_point"] == "/mnt/fake" for e in mounts_ex(sb, "alice")), "/mnt/fake in alice's view")

    for user in ("", "alice", "bob"):
        ex = mounts_ex(sb, user)
        assert len(ex) == len(m.GetMounts(user)), user
        bad = at(ex, b"/mnt/" + BAD)
        assert bad["mount_point"] == "/mnt/" + BAD_SHOWN and bad["source"] == SRC_SHOWN and bad["source_bytes"] == SRC
        assert bad["device"] == 0 and bad["fstype"] == "tmpfs" and "size=1024k" in bad["options"], bad
        assert bad["origin"] == "host", (user, bad)
        # The device is the kernel's: a tmpfs that calls itself the stick's node has none.
        assert at(ex, b"/mnt/fake")["device"] == 0
        assert at(ex, b"/mnt/usb")["device"] == (major << 32) | minor
        assert at(ex, b"/")["device"] == 0 or at(ex, b"/")["device"] >> 32 == os.major(os.stat("/").st_dev)
        ids = [e["id"] for e in ex]
        assert len(set(ids)) == len(ids)
        if all(i >= UNIQUE_ID_MIN for i in ids):
            assert all(e["fingerprint"] == 0 for e in ex)
            assert all(e["parent_id"] in set(ids) for e in ex if e["mount_point"] != "/"), user
        else:
            assert all(e["fingerprint"] != 0 for e in ex)

    alice = mounts_ex(sb, "alice")
    assert [tuple(x) for x in sb.namespace(ns_path("alice")).GetMountsEx()] == \
        [tuple(x) for x in m.GetMountsEx("alice")]
    assert at(alice, b"/home/alice/" + BAD)["origin"] == "unknown"     # root made it in the view: who knows
    assert at(alice, b"/home/alice/ex-bind")["origin"] == "daemon"
    assert at(alice, b"/home/alice/nsm-ex-scratch")["origin"] == "policy"
    assert not any(e["mount_point_bytes"].startswith(b"/home/alice/") for e in mounts_ex(sb, "bob"))


def test_get_mounts_ex_shares_the_id_space_of_mounts_changed(named):
    sb = named
    rec = subscribe(sb, "alice")
    mount_named(sb, b"/mnt/" + BAD + b"3")
    target = "/mnt/" + BAD_SHOWN + "3"
    _, attached, _ = wait_changes(rec, ns_path("alice"), lambda a, d: any(x[2] == target for x in a))
    signalled = [x[0] for x in attached if x[2] == target][-1]
    assert at(mounts_ex(sb, "alice"), b"/mnt/" + BAD + b"3")["id"] == signalled


# ---------------------------------------------------------------------------
# The id-taking methods: the mount that was shown, or nothing

def test_unmount_by_id_removes_exactly_the_mount_shown(named):
    sb = named
    m = sb.manager()
    target = b"/home/alice/" + BAD
    shown = at(mounts_ex(sb, "alice"), target)
    before = {e["id"] for e in mounts_ex(sb, "alice")}

    # Another mount now sits at that path (alice's, stacked over it): the id names the one shown.
    mount_named(sb, target, source=b"other", view="alice")
    top = at(mounts_ex(sb, "alice"), target)
    assert top["id"] != shown["id"]
    e = expect_error(lambda: m.UnmountById("alice", shown["id"], dbus.ByteArray(target), 0), E_MOUNT_CHANGED)
    assert BAD_SHOWN in e.get_dbus_message(), e.get_dbus_message()
    assert at(mounts_ex(sb, "alice"), target)["id"] == top["id"], "MountChanged must change nothing"

    m.UnmountById("alice", top["id"], dbus.ByteArray(target), 0)
    after = mounts_ex(sb, "alice")
    assert {e["id"] for e in after} == before, "exactly the one mount went"
    # The audit record names it, escaped as everywhere.
    records = [r for r in sb.journal_records() if r.get("NSM_ACTION") == "UnmountById"]
    assert any(r.get("NSM_MOUNT_ID") == str(top["id"]) and r.get("NSM_PATH") == "/home/alice/" + BAD_SHOWN and
               r.get("NSM_RESULT") == "done" for r in records), records
    m.UnmountById("alice", shown["id"], dbus.ByteArray(target), 0)
    assert not [e for e in mounts_ex(sb, "alice") if e["mount_point_bytes"] == target]
    # Gone: its id names nothing at that path any more.
    expect_error(lambda: m.UnmountById("alice", shown["id"], dbus.ByteArray(target), 0), E_MOUNT_CHANGED)
    # The same mount of the host's, at its path in bob's view: a copy has an id of its own.
    host_id = at(mounts_ex(sb, ""), b"/mnt/" + BAD)["id"]
    expect_error(lambda: m.UnmountById("bob", host_id, dbus.ByteArray(b"/mnt/" + BAD), 0), E_MOUNT_CHANGED)
    assert at(mounts_ex(sb, "bob"), b"/mnt/" + BAD)

    expect_error(lambda: m.UnmountById("alice", 0, dbus.ByteArray(target), 0), E_INVALID_ARGS)
    expect_error(lambda: m.UnmountById("alice", 1, dbus.ByteArray(b"/mnt/a\0b"), 0), E_INVALID_PATH)
    expect_error(lambda: m.UnmountById("alice", 1, dbus.ByteArray(b"/mnt/../etc"), 0), E_INVALID_PATH)


def test_set_propagation_by_id(named):
    sb = named
    m = sb.manager()
    target = b"/mnt/" + BAD
    shown = at(mounts_ex(sb, "bob"), target)
    assert shown["propagation"] != "private"
    expect_error(lambda: m.SetPropagationById("bob", shown["id"] + 1, dbus.ByteArray(target), "private", 0),
                 E_MOUNT_CHANGED)
    expect_error(lambda: m.SetPropagationById("bob", shown["id"], dbus.ByteArray(b"/mnt"), "private", 0),
                 E_MOUNT_CHANGED)
    assert at(mounts_ex(sb, "bob"), target)["propagation"] == shown["propagation"]
    m.SetPropagationById("bob", shown["id"], dbus.ByteArray(target), "private", 0)
    assert at(mounts_ex(sb, "bob"), target)["propagation"] == "private"
    assert at(mounts_ex(sb, "alice"), target)["propagation"] != "private"


def test_nsctl_acts_by_id_on_a_name_as_shown(named):
    """nsctl unmount/propagation --id: the path as nsctl showed it (escaped), the id as --json
    or --follow showed it; another mount there now is refused, and nothing changes."""
    sb = named
    nsctl = nsctl_binary()
    target = b"/home/alice/" + BAD
    shown = at(mounts_ex(sb, "alice"), target)
    js = json.loads(sb.run([nsctl, "mounts", "--json", "alice"], check=True).stdout)["mounts"]
    old_id = next(m["mount_id"] for m in js if m["target"] == "/home/alice/" + BAD_SHOWN)

    p = sb.run([nsctl, "propagation", "alice", "/home/alice/" + BAD_SHOWN, "private", "--id", str(shown["id"] + 1)])
    assert p.returncode == 1 and "MountChanged" not in p.stderr and "not mount" in p.stderr, p
    p = sb.run([nsctl, "propagation", "alice", "/home/alice/" + BAD_SHOWN, "shared", "--id", str(shown["id"])])
    assert p.returncode == 0, p
    assert at(mounts_ex(sb, "alice"), target)["propagation"] == "shared"
    p = sb.run([nsctl, "unmount", "alice", "/home/alice/" + BAD_SHOWN, "--id", str(old_id)])
    assert p.returncode == 0, p
    assert not [e for e in mounts_ex(sb, "alice") if e["mount_point_bytes"] == target]
    p = sb.run([nsctl, "unmount", "alice", "/home/alice/" + BAD_SHOWN, "--id", str(shown["id"])])
    assert p.returncode == 1 and BAD_SHOWN in p.stderr and "\x1b" not in p.stderr, p
    p = sb.run([nsctl, "unmount", "alice", "/home/alice/a\\q", "--id", "5"])
    assert p.returncode == 1, p


def test_can_mount_answers_per_mount(named, polkit_rules):
    """CanMount(user, id): for that very mount, what UnmountById, SetPropagationById and Eject
    would get. The view's root is never unmounted, the host's own devices never ejected; for
    alice on her own view (manage-own yes, manage no) her own bind may go, a host mount not."""
    sb = named
    m = sb.manager()
    polkit_rules("50-alice-own-only", ALICE_OWN_ONLY)
    usb = Usb(sb)
    try:
        usb.mount_on_host()
        src = sb.instance / "can-src"
        src.mkdir()
        os.chown(src, 2001, 2001)
        assert "ok" in call_as(sb, "alice", "BindMount", "ssst", "alice", str(src), "/home/alice/own", 0x2)
        alice = mounts_ex(sb, "alice")
        root, own, hostcopy = at(alice, b"/"), at(alice, b"/home/alice/own"), at(alice, b"/mnt/" + BAD)

        def can(user, mount, as_user="root"):
            r = call_as(sb, as_user, "CanMount", "st", user, mount["id"])
            assert "ok" in r, r
            return {str(k): str(v) for k, v in r["ok"][0].items()}

        assert can("alice", root) == {"UnmountById": "no", "SetPropagationById": "yes", "Eject": "no"}
        assert can("alice", own)["UnmountById"] == "yes" and can("alice", own)["Eject"] == "no"
        host_usb = at(mounts_ex(sb, ""), b"/mnt/usb")
        assert can("", host_usb) == {"UnmountById": "no", "SetPropagationById": "yes", "Eject": "yes"}
        assert can("", at(mounts_ex(sb, ""), b"/"))["Eject"] == "no"
        assert can("alice", own, "alice") == {"UnmountById": "yes", "SetPropagationById": "yes", "Eject": "no"}
        assert can("alice", hostcopy, "alice")["UnmountById"] == "no"
        assert can("bob", at(mounts_ex(sb, "bob"), b"/mnt/" + BAD), "alice")["UnmountById"] == "no"
        r = call_as(sb, "root", "CanMount", "st", "alice", own["id"] + 1000000)
        assert r.get("error") == E_MOUNT_CHANGED, r
        # What it says is what the call does: alice unmounts her own bind by id.
        assert "ok" in call_as(sb, "alice", "UnmountById", "stayt", "alice", own["id"], list(b"/home/alice/own"), 0)
    finally:
        usb.close()
