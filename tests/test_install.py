# SPDX-License-Identifier: LGPL-2.1-or-later
"""Installation: `meson install --destdir` lays every file where Debian expects
it, and the installed unit passes `systemd-analyze verify`.

The project is configured afresh with --prefix=/usr (the layout of a Debian package) in
a temporary directory, built and installed into a DESTDIR there; nothing is installed
on the machine. The expected directories come from the pkg-config files of the
programs that read them, where installed, as meson.build does."""

import configparser
import os
import re
import shutil
import stat
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from helpers import processes_of, wait_until

REPO = Path(__file__).resolve().parent.parent

# Settings that make systemd give a service a mount namespace of its own: nsmanagerd must
# run in the host's (units/nsmanagerd.service.in says why). PrivateMounts= may only be "no";
# PrivateNetwork= only next to it (newer systemd adds a mount namespace for it otherwise).
MOUNT_NAMESPACE_SETTINGS = {
    "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateIPC",
    "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
    "ProtectControlGroups", "ProtectProc", "ProcSubset", "ReadWritePaths", "ReadOnlyPaths",
    "InaccessiblePaths", "ExecPaths", "NoExecPaths", "TemporaryFileSystem", "BindPaths",
    "BindReadOnlyPaths", "MountAPIVFS", "RootDirectory", "RootImage", "MountImages",
    "ExtensionImages", "ExtensionDirectories", "LogNamespace", "DynamicUser", "NetworkNamespacePath",
}

MANAGER_DEFAULTS = {
    "SubtreeRoot": "/subtree",
    "SharedSubtrees": "/mnt",
    "StopDelaySec": "10s",
    "MinUID": "1000",
    "ExcludeUsers": "",
    "StateDirectory": "/run/nsmanager",
    "ViewPropagation": "slave",
    "LoginWithoutView": "restricted",
    "LoginRefusedMessage": "",
    "OperationTimeoutSec": "5s",
    "MaxStuckOperations": "4",
    "MaxUserMounts": "64",
    "RateLimitIntervalSec": "10s",
    "RateLimitBurst": "200",
    "AttachTasksMax": "4096",
    "PolkitQuestionsPerUID": "4",
    "PolkitTimeoutSec": "20s",
    "AuditRateLimitIntervalSec": "30s",
    "AuditRateLimitBurst": "100",
    "AuditRateLimitBurstAll": "2000",
}
VIEW_KEYS = ["PrivateTmp", "TmpSize", "BindPaths", "BindReadOnlyPaths", "TemporaryFileSystem",
             "InaccessiblePaths", "HideOtherHomes"]


def pkg_config_variable(package, variable):
    try:
        p = subprocess.run(["pkg-config", f"--variable={variable}", package], capture_output=True, text=True)
    except FileNotFoundError:
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def multiarch():
    p = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True)
    return p.stdout.strip() or "x86_64-linux-gnu"


def expected_dirs():
    pam_libdir = pkg_config_variable("pam", "libdir")
    dbus_datadir = pkg_config_variable("dbus-1", "datadir")
    return {
        # Without pam.pc meson.build falls back to $libdir/security.
        "pam": (pam_libdir + "/security") if pam_libdir else f"/usr/lib/{multiarch()}/security",
        "polkit": pkg_config_variable("polkit-gobject-1", "policydir") or "/usr/share/polkit-1/actions",
        "dbus_policy": (dbus_datadir + "/dbus-1/system.d") if dbus_datadir else "/usr/share/dbus-1/system.d",
        "dbus_services": pkg_config_variable("dbus-1", "system_bus_services_dir") or "/usr/share/dbus-1/system-services",
        "units": pkg_config_variable("systemd", "systemdsystemunitdir") or "/lib/systemd/system",
        "dbus_interfaces": pkg_config_variable("dbus-1", "interfaces_dir") or "/usr/share/dbus-1/interfaces",
        "catalog": pkg_config_variable("systemd", "catalogdir") or "/usr/lib/systemd/catalog",
    }


@pytest.fixture(scope="module")
def destdir(sandbox):
    """Configure with --prefix=/usr, build, install into a DESTDIR; yields the DESTDIR.
    (On the sandbox's /tmp: set up first, it does not cover the DESTDIR of a module that
    runs before any test that needs it, and nothing lands in the machine's /tmp.)"""
    top = Path(tempfile.mkdtemp(prefix="nsm-install-"))
    build, dest = top / "build", top / "dest"
    try:
        p = subprocess.run(["meson", "setup", str(build), str(REPO), "--prefix=/usr"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"meson setup failed:\n{p.stdout}\n{p.stderr}"
        p = subprocess.run(["meson", "install", "-C", str(build), "--destdir", str(dest)],
                           capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, f"meson install failed:\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
        yield dest
    finally:
        shutil.rmtree(top, ignore_errors=True)


def installed(dest, path):
    return dest / str(path).lstrip("/")


def test_every_file_at_its_place(destdir):
    d = expected_dirs()
    files = {
        "/usr/libexec/nsmanagerd": "the daemon",
        "/usr/bin/nsctl": "the CLI",
        f"{d['polkit']}/org.example.NSManager.policy": "polkit actions",
        f"{d['dbus_policy']}/org.example.NSManager.conf": "system bus policy",
        f"{d['dbus_services']}/org.example.NSManager.service": "bus activation file",
        f"{d['units']}/nsmanagerd.service": "systemd unit",
        "/etc/nsmanager/nsmanagerd.conf": "configuration",
        "/usr/share/doc/nsmanager/examples/desktop.conf": "desktop example (documentation only)",
        f"{d['dbus_interfaces']}/org.example.NSManager.Manager.xml": "Manager introspection",
        f"{d['dbus_interfaces']}/org.example.NSManager.Namespace.xml": "Namespace introspection",
        "/usr/lib/pam.d/nsmanager-attach": "PAM service of attached commands (libpam's vendor directory)",
        f"{d['catalog']}/nsmanager.catalog": "the journal's catalog of the audit records",
    }
    files[f"{d['pam']}/pam_nsmanager.so"] = "PAM module"
    missing = [f"{path} ({what})" for path, what in files.items() if not installed(destdir, path).is_file()]
    assert not missing, "not installed: " + ", ".join(missing) + "\ninstalled:\n" + \
        "\n".join(sorted(str(p.relative_to(destdir)) for p in destdir.rglob("*")))

    for exe in ("/usr/libexec/nsmanagerd", "/usr/bin/nsctl"):
        assert os.access(installed(destdir, exe), os.X_OK), f"{exe} is not executable"
    for d_ in ("nsmanagerd.conf.d", "group.d", "user.d"):
        p = installed(destdir, f"/etc/nsmanager/{d_}")
        assert p.is_dir(), f"/etc/nsmanager/{d_} was not created"
        assert not any(p.iterdir()), f"/etc/nsmanager/{d_} should be empty"
    # The example is documentation, never enabled.
    assert not installed(destdir, "/etc/nsmanager/nsmanagerd.conf.d/desktop.conf").exists()

    # Data files are installed as they are in the source tree, world-readable.
    for src, path in (("policy/org.example.NSManager.policy", f"{d['polkit']}/org.example.NSManager.policy"),
                      ("dbus/org.example.NSManager.conf", f"{d['dbus_policy']}/org.example.NSManager.conf"),
                      ("dbus/org.example.NSManager.service", f"{d['dbus_services']}/org.example.NSManager.service"),
                      ("conf/nsmanagerd.conf", "/etc/nsmanager/nsmanagerd.conf"),
                      ("dbus/org.example.NSManager.Manager.xml",
                       f"{d['dbus_interfaces']}/org.example.NSManager.Manager.xml")):
        p = installed(destdir, path)
        assert p.read_bytes() == (REPO / src).read_bytes(), f"{path} differs from {src}"
        assert stat.S_IMODE(p.stat().st_mode) & 0o444 == 0o444, f"{path} is not world-readable"


def _unit(destdir):
    path = installed(destdir, f"{expected_dirs()['units']}/nsmanagerd.service")
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str
    parser.read_string(path.read_text())
    return path, parser


def test_unit_contents(destdir):
    path, unit = _unit(destdir)
    service = unit["Service"]
    assert service["Type"] == "dbus"
    assert service["BusName"] == "org.example.NSManager"
    assert service["ExecStart"].split()[0] == "/usr/libexec/nsmanagerd", \
        "ExecStart= must name the installed daemon"
    assert service["Restart"] == "on-failure"
    caps = set(service["CapabilityBoundingSet"].split())
    assert "CAP_SYS_ADMIN" in caps and "CAP_SYS_CHROOT" in caps, caps
    # (CAP_SYS_PTRACE is there for the holder scan: the unit says why, test_eject.py proves it)
    assert not caps & {"CAP_SYS_MODULE", "CAP_SYS_TIME", "CAP_SYS_BOOT", "CAP_NET_ADMIN",
                       "CAP_SYS_RAWIO", "CAP_MKNOD", "CAP_BPF"}, caps
    set_keys = {k for section in unit.sections() for k in unit[section]}
    assert not set_keys & MOUNT_NAMESPACE_SETTINGS, \
        f"{sorted(set_keys & MOUNT_NAMESPACE_SETTINGS)} would give nsmanagerd a mount namespace of its own"
    assert service["PrivateMounts"] == "no", "PrivateMounts=no must stay explicit"
    # Once attached programs are no longer the daemon's children (docs/attach.md), the unit
    # is hardened: the settings that would have broken them are on.
    for key, value in (("NoNewPrivileges", "yes"), ("RestrictAddressFamilies", "AF_UNIX"),
                       ("MemoryDenyWriteExecute", "yes"), ("SystemCallArchitectures", "native"),
                       ("PrivateNetwork", "yes"), ("RestrictNamespaces", "mnt uts")):
        assert service.get(key) == value, f"{key}={service.get(key)}, expected {value}"
    assert "CAP_KILL" not in caps, "the daemon no longer signals other users' programs"
    assert service.get("MountFlags", "shared") == "shared"
    assert unit["Install"]["WantedBy"] == "multi-user.target"

    activation = configparser.ConfigParser(interpolation=None)
    activation.optionxform = str
    activation.read(installed(destdir, f"{expected_dirs()['dbus_services']}/org.example.NSManager.service"))
    a = activation["D-BUS Service"]
    assert a["Name"] == "org.example.NSManager"
    assert a["SystemdService"] == "nsmanagerd.service"
    assert a["User"] == "root"
    assert a["Exec"] == "/bin/false"


def test_unit_verifies(destdir):
    """systemd-analyze verify on the installed unit, with ExecStart= pointing into DESTDIR
    (verify checks that the binary exists)."""
    assert shutil.which("systemd-analyze"), "systemd-analyze is missing: tools/deps installs systemd"
    path, _ = _unit(destdir)
    check = destdir.parent / "verify"
    check.mkdir(exist_ok=True)
    text = path.read_text()
    text = re.sub(r"^ExecStart=/", f"ExecStart={destdir}/", text, flags=re.M)
    (check / "nsmanagerd.service").write_text(text)
    # Documentation=man:… is checked against the pages just installed under DESTDIR.
    env = dict(os.environ, MANPATH=str(destdir / "usr/share/man"))
    p = subprocess.run(["systemd-analyze", "verify", str(check / "nsmanagerd.service")],
                       capture_output=True, text=True, timeout=120, cwd=check, env=env)
    # Warnings about other units of this machine (pulled in as dependencies) are not ours.
    ours = [l for l in (p.stdout + p.stderr).splitlines() if "nsmanagerd" in l]
    assert p.returncode == 0 and not ours, f"systemd-analyze verify:\n{p.stdout}{p.stderr}"


def test_config_lists_every_key_at_its_default(destdir):
    text = installed(destdir, "/etc/nsmanager/nsmanagerd.conf").read_text()
    lines = text.splitlines()
    assert "[Manager]" in lines and "[View]" in lines
    manager = lines[lines.index("[Manager]"):lines.index("[View]")]
    view = lines[lines.index("[View]"):]
    for key, default in MANAGER_DEFAULTS.items():
        assert f"#{key}={default}" in manager, f"[Manager] lacks '#{key}={default}'"
    for key in VIEW_KEYS:
        assert any(re.fullmatch(rf"#{key}=.*", l) for l in view), f"[View] lacks #{key}="
    # Everything is commented out: the installed file changes nothing.
    settings = [l for l in lines if l.strip() and not l.lstrip().startswith(("#", ";", "["))]
    assert not settings, f"active settings in the shipped configuration: {settings}"


def test_policy_file(destdir):
    path = installed(destdir, f"{expected_dirs()['polkit']}/org.example.NSManager.policy")
    assert shutil.which("xmllint"), "xmllint is missing: tools/deps installs libxml2-utils"
    dtd = "/usr/share/polkit-1/policyconfig-1.dtd"
    assert os.path.exists(dtd), f"{dtd} is missing: tools/deps installs polkitd"
    p = subprocess.run(["xmllint", "--noout", "--dtdvalid", dtd, str(path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    root = ET.parse(path).getroot()
    actions = {a.get("id"): a for a in root.findall("action")}
    expected = {
        "org.example.NSManager.manage": ("auth_admin_keep", "auth_admin_keep", "auth_admin_keep"),
        "org.example.NSManager.manage-own": ("auth_admin", "auth_admin", "yes"),
        "org.example.NSManager.attach-own": ("yes", "yes", "yes"),
        "org.example.NSManager.attach": ("auth_admin", "auth_admin", "auth_admin"),
    }
    assert set(actions) == set(expected)
    for action_id, (any_, inactive, active) in expected.items():
        a = actions[action_id]
        assert a.findtext("description").strip() and a.findtext("message").strip(), action_id
        defaults = a.find("defaults")
        assert (defaults.findtext("allow_any"), defaults.findtext("allow_inactive"),
                defaults.findtext("allow_active")) == (any_, inactive, active), action_id


def unit_capabilities():
    """CapabilityBoundingSet= of units/nsmanagerd.service.in, as setpriv names them."""
    for line in (REPO / "units/nsmanagerd.service.in").read_text().splitlines():
        if line.startswith("CapabilityBoundingSet="):
            return [c.lower().removeprefix("cap_") for c in line.split("=", 1)[1].split()]
    raise AssertionError("units/nsmanagerd.service.in sets no CapabilityBoundingSet=")


def test_unit_capabilities_suffice(instance, nsctl, monkeypatch):
    """The daemon does its whole job with no capability beyond the unit's bounding set:
    it runs here under setpriv with that bounding set (as systemd would start it) and
    builds views, changes propagation, binds into a user's home, hands out namespaces,
    starts an attached program as the user, and removes everything."""
    import sandbox as sandbox_module
    sb = instance
    real = sandbox_module.daemon_binary()
    wrapper = sb.instance / "nsmanagerd-capped"
    bounding = ",".join(["-all"] + [f"+{c}" for c in unit_capabilities()])
    wrapper.write_text(f'#!/bin/sh\nexec setpriv --bounding-set={bounding} -- {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setattr(sandbox_module, "daemon_binary", lambda: wrapper)
    sb.start_daemon()

    status = Path(f"/proc/{sb.daemon.pid}/status").read_text()
    cap_bnd = int(re.search(r"^CapBnd:\s*([0-9a-f]+)", status, re.M).group(1), 16)
    assert bin(cap_bnd).count("1") == len(unit_capabilities()), f"bounding set not applied: {cap_bnd:#x}"

    m = sb.manager()
    home = Path("/home/alice")
    mode = home.stat().st_mode
    home.chmod(0o700)   # as many homes are: root needs CAP_DAC_OVERRIDE to get in
    try:
        m.CreateNamespace("alice")
        m.CreateNamespace("bob")
        m.EnslaveSubtree("alice", "/mnt")
        m.ShareSubtree("alice", "/mnt")
        m.SetPropagation("bob", "/mnt", "private", 0)
        m.BindMount("alice", "/etc", "/home/alice/etc-copy", 0x1 | 0x2)
        p = sb.in_view("alice", ["cat", "/home/alice/etc-copy/hostname"])
        assert p.returncode == 0 and p.stdout == Path("/etc/hostname").read_text(), p.stderr
        assert any(str(x[4]) == "/home/alice/etc-copy" for x in m.GetMounts("alice"))
        m.Unmount("alice", "/home/alice/etc-copy", 0x1)
        m.SetLinger("bob", True)

        p = nsctl("attach", "alice", "--", "id", "-u", as_user="alice")
        assert p.returncode == 0 and p.stdout.strip() == "2001", p.stderr
        p = nsctl("attach", "bob", "--", "readlink", "/proc/self/ns/mnt")
        assert p.returncode == 0, p.stderr
        # (Not the hangup of a client that died: without systemd the daemon signals the
        # command itself, which needs CAP_KILL; under the unit systemd runs the command and
        # signals it (KillUnit), so the unit drops CAP_KILL. test_nsctl.py tests the former.)

        m.RemoveNamespace("bob")
        m.RemoveNamespace("alice")
    finally:
        home.chmod(stat.S_IMODE(mode))
        (home / "etc-copy").exists() and (home / "etc-copy").rmdir()
    log = sb.daemon_log_text()
    assert "Operation not permitted" not in log and "Permission denied" not in log, log


def _simulated_install(root: Path, packages: list) -> set:
    """What `apt-get install --no-install-recommends PACKAGES` would install on the Debian
    root `root` (its dpkg status, this machine's package lists): apt-get -s, which installs
    nothing."""
    p = subprocess.run(["apt-get", "-s", "-o", f"Dir::State::status={root}/var/lib/dpkg/status",
                        "install", "--no-install-recommends", *packages],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return {line.split()[1] for line in p.stdout.splitlines() if line.startswith("Inst ")}


def _deps(*args) -> list:
    p = subprocess.run([str(REPO / "tools/deps"), "--print", *args], capture_output=True, text=True, check=True)
    return p.stdout.split()


def test_demo_installs_only_what_it_runs():
    """tools/demo installs its own list (tools/deps --demo), not the tests' (lintian, clang,
    debootstrap, openssh-server, …): checked against the clean Debian 12 root of the booted
    test (on this machine, which has everything, an install could never show it)."""
    from machine import build_image
    image, _ = build_image()
    demo, full = _deps("--demo"), _deps()
    assert set(demo) < set(full)
    demo_install = _simulated_install(image, demo)
    full_install = _simulated_install(image, full)
    # what only the tests run (a few of the tests' packages, binutils say, come in anyway as
    # dependencies of the build's)
    # (the booted image's own packages, pamtester for its sssd logins say, are there already)
    in_image = set(subprocess.run([str(REPO / "tools/nspawn-image"), "--packages"], capture_output=True,
                                  text=True, check=True).stdout.split())
    for heavy in ("lintian", "debhelper", "clang", "debootstrap", "graphviz", "tmux", "openssh-server",
                  "pamtester", "strace", "bindfs", "systemd-container", "python3-pytest"):
        if heavy in in_image:
            assert heavy not in demo_install, heavy
            continue
        assert heavy in full_install and heavy not in demo_install, heavy
    assert len(demo_install) < len(full_install) / 2, (len(demo_install), len(full_install))

    # every package of the list is one the demo runs: tools/demo calls --demo
    assert re.search(r"^tools/deps --demo$", (REPO / "tools/demo").read_text(), re.M)



def test_catalog_explains_every_audit_record(destdir):
    """Every MESSAGE_ID of src/nsmanagerd/audit.c has an entry in the catalog, and the
    catalog is one journalctl accepts (--update-catalog into a directory of ours)."""
    source = (REPO / "src/nsmanagerd/audit.c").read_text()
    ids = set(re.findall(r'"([0-9a-f]{32})"', source))
    assert len(ids) >= 12
    catalog = (REPO / "catalog/nsmanager.catalog").read_text()
    entries = set(re.findall(r"^-- ([0-9a-f]{32})$", catalog, re.M))
    assert entries == ids, (ids ^ entries)
    root = Path(tempfile.mkdtemp(prefix="nsm-catalog-"))
    try:
        d = root / "usr/lib/systemd/catalog"
        d.mkdir(parents=True)
        shutil.copy(REPO / "catalog/nsmanager.catalog", d)
        p = subprocess.run(["journalctl", f"--root={root}", "--update-catalog"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        p = subprocess.run(["journalctl", f"--root={root}", "--list-catalog", *sorted(ids)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        listed = {line.split()[0] for line in p.stdout.splitlines() if line.strip()}
        assert listed == ids, p.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)
