# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Debian package (debian/, tools/build-deb): every file of the installation contract
at Debian's path in nsmanager_VERSION_ARCH.deb, the configuration a conffile, the
dependencies, maintainer scripts that leave the unit disabled (D-Bus activated) and the
PAM profile off until an administrator enables it, and lintian without errors.

The package is built once for the module by tools/build-deb --no-install-deps (tools/deps
installs debhelper, dpkg-dev, fakeroot and lintian) from a copy of the work tree, under
the sandbox's tmpfs /tmp; it is only looked at (dpkg-deb -c/-f/-e/-x), never installed on
this machine. tests/test_nspawn.py installs it into a booted container. The PAM profile is
tried with the real pam-auth-update in a mount namespace of its own, over copies of
/etc/pam.d, /var/lib/pam, debconf's database and /usr/share/pam-configs."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import sandbox as sandbox_module
from sandbox import REPO, timeout

PACKAGE = "nsmanager"


def run(argv, wait: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout(wait),
                          stdin=subprocess.DEVNULL, **kw)


def meson_version() -> str:
    found = re.search(r"^project\(.*?version\s*:\s*'([^']+)'", (REPO / "meson.build").read_text(), re.M | re.S)
    assert found, "no project version in meson.build"
    return found.group(1)


def multiarch() -> str:
    p = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"])
    return p.stdout.strip() or "x86_64-linux-gnu"


class Deb:
    """A built .deb and what dpkg-deb says about it."""

    def __init__(self, path: Path, unpacked: Path, control: Path, scratch: Path):
        self.path = path
        self.scratch = scratch        # for the tests (on the sandbox's /tmp, removed with the rest)
        self.unpacked = unpacked      # dpkg-deb -x
        self.control = control        # dpkg-deb -e
        self.entries: dict[str, str] = {}     # path -> mode string, from dpkg-deb -c
        p = run(["dpkg-deb", "-c", path])
        assert p.returncode == 0, p.stderr
        for line in p.stdout.splitlines():
            fields = line.split(None, 5)
            name = fields[5].split(" -> ")[0]
            self.entries["/" + name.lstrip("./").rstrip("/")] = fields[0]

    def field(self, name: str) -> str:
        p = run(["dpkg-deb", "-f", self.path, name])
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    def file(self, path: str) -> Path:
        return self.unpacked / path.lstrip("/")

    def is_file(self, path: str) -> bool:
        return self.entries.get(path, "").startswith("-")

    def is_dir(self, path: str) -> bool:
        return self.entries.get(path, "").startswith("d")


@pytest.fixture(scope="module")
def deb(sandbox):
    """tools/build-deb into a directory on the sandbox's /tmp; the nsmanager .deb, unpacked."""
    if sandbox_module._entered_namespace != sandbox_module.mntns_id():
        pytest.fail("the pytest process is not in the sandbox's mount namespace (conftest.py)", pytrace=False)
    options = sandbox_module.build_dir() / "meson-info" / "intro-buildoptions.json"
    if options.exists() and any(o["name"] == "b_sanitize" and o["value"] != "none"
                                for o in json.loads(options.read_text())):
        pytest.skip("the package is built from the tree, whatever the build directory: tested once, "
                    "in the pass of the plain build (tools/test)")
    if not shutil.which("dpkg-buildpackage") or not shutil.which("dh"):
        pytest.fail("dpkg-buildpackage or debhelper is not installed: run tools/deps", pytrace=False)
    top = Path(tempfile.mkdtemp(prefix="nsm-deb-", dir="/tmp"))
    try:
        out = top / "out"
        try:
            p = run([REPO / "tools" / "build-deb", "--no-install-deps", out], wait=900)
        except subprocess.TimeoutExpired:
            pytest.fail("tools/build-deb did not finish within 15 minutes", pytrace=False)
        log = p.stdout + p.stderr
        assert p.returncode == 0, "tools/build-deb failed:\n" + "\n".join(log.splitlines()[-60:])
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        path = out / f"{PACKAGE}_{meson_version()}_{arch}.deb"
        assert path.is_file(), f"no {path.name} in {sorted(x.name for x in out.iterdir())}\n{log[-3000:]}"
        unpacked, control = top / "unpacked", top / "control"
        for option, dest in (("-x", unpacked), ("-e", control)):
            p = run(["dpkg-deb", option, path, dest])
            assert p.returncode == 0, p.stderr
        scratch = top / "scratch"
        scratch.mkdir()
        yield Deb(path, unpacked, control, scratch)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def contract(arch_triplet: str) -> dict[str, str]:
    """Debian 12's path of every file of the installation contract -> what it is."""
    files = {
        "/usr/libexec/nsmanagerd": "the daemon",
        "/usr/bin/nsctl": "the CLI",
        f"/lib/{arch_triplet}/security/pam_nsmanager.so": "the PAM module",
        "/lib/systemd/system/nsmanagerd.service": "the systemd unit",
        "/usr/share/dbus-1/system.d/org.example.NSManager.conf": "the system bus policy",
        "/usr/share/dbus-1/system-services/org.example.NSManager.service": "the bus activation file",
        "/usr/share/polkit-1/actions/org.example.NSManager.policy": "the polkit actions",
        "/etc/nsmanager/nsmanagerd.conf": "the configuration",
        "/usr/share/bash-completion/completions/nsctl": "nsctl's bash completion",
        "/usr/share/pam-configs/nsmanager": "the pam-auth-update profile",
        "/usr/lib/pam.d/nsmanager-attach": "the PAM service of attached commands (libpam's vendor directory)",
        "/usr/share/doc/nsmanager/README.md": "the README (uncompressed: the unit's Documentation=)",
        "/usr/share/doc/nsmanager/examples/desktop.conf": "the desktop example",
        "/usr/share/doc/nsmanager/copyright": "the copyright file",
        "/usr/share/doc/nsmanager/changelog.gz": "the changelog",
    }
    # Every man page of man/, compressed, in its section.
    for page in sorted((REPO / "man").glob("*.[1-8]")):
        files[f"/usr/share/man/man{page.suffix[1:]}/{page.name}.gz"] = f"the man page {page.name}"
    return files


def test_package_metadata(deb):
    assert deb.field("Package") == PACKAGE
    assert deb.field("Version") == meson_version(), "the package's version is not meson.build's"
    assert deb.field("Architecture") == run(["dpkg", "--print-architecture"]).stdout.strip()
    print(f"{deb.path.name}: {deb.path.stat().st_size} bytes")


def test_every_file_at_debian_path(deb):
    triplet = multiarch()
    missing = [f"{path} ({what})" for path, what in contract(triplet).items() if not deb.is_file(path)]
    assert not missing, "not in the package: " + ", ".join(missing) + "\ndpkg-deb -c:\n" + "\n".join(sorted(deb.entries))
    for d in ("nsmanagerd.conf.d", "group.d", "user.d"):
        assert deb.is_dir(f"/etc/nsmanager/{d}"), f"/etc/nsmanager/{d}/ is not in the package"
    for exe in ("/usr/libexec/nsmanagerd", "/usr/bin/nsctl"):
        assert deb.entries[exe] == "-rwxr-xr-x", f"{exe} is {deb.entries[exe]}"
    assert deb.entries[f"/lib/{triplet}/security/pam_nsmanager.so"] == "-rw-r--r--"
    # One place for each: nothing under /usr/local, no second PAM module directory, no
    # build tree, no file of the tests.
    # /etc/pam.d is the administrator's (pam-auth-update edits it); the package's own stack
    # is in libpam's vendor directory.
    assert not [p for p in deb.entries if p.startswith("/etc/pam.d")], "the package installs into /etc/pam.d"
    strays = [p for p in deb.entries if p.startswith("/usr/local") or "/obj-" in p or "/build" in p
              or p.startswith(f"/usr/lib/{triplet}/security") or "/tests/" in p or p.endswith(".pyc")]
    assert not strays, f"files that do not belong in the package: {strays}"
    # The unit starts the packaged daemon.
    unit = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    unit.optionxform = str
    unit.read_string(deb.file("/lib/systemd/system/nsmanagerd.service").read_text())
    exec_start = unit["Service"]["ExecStart"].split()[0]
    assert exec_start == "/usr/libexec/nsmanagerd" and deb.is_file(exec_start), exec_start
    for doc in unit["Unit"]["Documentation"].split():
        if doc.startswith("file://"):
            assert deb.is_file(doc[len("file://"):]), f"Documentation={doc} is not in the package"


def test_files_are_the_sources(deb):
    """Data files are shipped as they are in the tree."""
    for src, path in (("policy/org.example.NSManager.policy", "/usr/share/polkit-1/actions/org.example.NSManager.policy"),
                      ("dbus/org.example.NSManager.conf", "/usr/share/dbus-1/system.d/org.example.NSManager.conf"),
                      ("dbus/org.example.NSManager.service", "/usr/share/dbus-1/system-services/org.example.NSManager.service"),
                      ("conf/nsmanagerd.conf", "/etc/nsmanager/nsmanagerd.conf"),
                      ("completion/nsctl.bash", "/usr/share/bash-completion/completions/nsctl"),
                      ("debian/pam-configs/nsmanager", "/usr/share/pam-configs/nsmanager"),
                      ("pam.d/nsmanager-attach", "/usr/lib/pam.d/nsmanager-attach")):
        assert deb.file(path).read_bytes() == (REPO / src).read_bytes(), f"{path} differs from {src}"


def test_binaries_hardened(deb):
    """Built with dpkg-buildflags and hardening=+all: full RELRO (BIND_NOW), PIE, no RPATH
    into the build tree."""
    assert shutil.which("readelf"), "readelf is missing: tools/deps installs binutils"
    for path in ("/usr/libexec/nsmanagerd", "/usr/bin/nsctl", f"/lib/{multiarch()}/security/pam_nsmanager.so"):
        dyn = run(["readelf", "-d", deb.file(path)]).stdout
        assert re.search(r"\(BIND_NOW\)|FLAGS.*\bNOW\b", dyn), f"{path} is not linked with -z now:\n{dyn}"
        assert "RPATH" not in dyn and "RUNPATH" not in dyn, f"{path} has an RPATH:\n{dyn}"
        header = run(["readelf", "-h", deb.file(path)]).stdout
        assert re.search(r"Type:\s+DYN", header), f"{path} is not position independent:\n{header}"


def test_conffiles(deb):
    """The configuration is a conffile (dpkg keeps an administrator's edits), and it is the
    only regular file under /etc."""
    conffiles = (deb.control / "conffiles").read_text().split()
    etc_files = sorted(p for p in deb.entries if p.startswith("/etc/") and deb.is_file(p))
    assert conffiles == ["/etc/nsmanager/nsmanagerd.conf"], conffiles
    assert etc_files == conffiles, f"files under /etc that are not conffiles: {set(etc_files) - set(conffiles)}"


def test_depends(deb):
    depends = [d.strip() for d in deb.field("Depends").split(",")]
    names = {re.split(r"[\s(:]", d)[0] for d in depends}
    # ${shlibs:Depends}: the libraries the binaries link.
    for lib in ("libc6", "libsystemd0", "libmount1", "libpam0g"):
        assert lib in names, f"Depends lacks {lib} (${{shlibs:Depends}}): {depends}"
    # The system bus, polkit (every call that is not a read is authorized by it), and
    # pam-auth-update for the maintainer scripts.
    for pkg in ("dbus", "polkitd", "libpam-runtime"):
        assert pkg in names, f"Depends lacks {pkg}: {depends}"
    print("Depends:", ", ".join(depends))


def test_maintainer_scripts(deb):
    """The unit is not enabled (D-Bus activation starts it) and not started by the
    installation; a running daemon is restarted after an upgrade and stopped on removal.
    The PAM profile is registered on configure and taken out of the stack on remove."""
    scripts = {name: (deb.control / name).read_text() for name in ("postinst", "prerm", "postrm")}
    for name, text in scripts.items():
        p = run(["sh", "-n", deb.control / name])
        assert p.returncode == 0, f"{name}: {p.stderr}"
        assert "#DEBHELPER#" not in text, f"{name}: debhelper's snippets were not substituted"
    postinst = scripts["postinst"]
    # --no-enable: an enable only inside "if deb-systemd-helper debian-installed", i.e. of a
    # unit an administrator enabled before (debhelper's postinst-systemd-dont-enable);
    # without it a first installation enables the unit (was-enabled defaults to true).
    guard = "if deb-systemd-helper debian-installed 'nsmanagerd.service'; then"
    assert guard in postinst, f"postinst enables nsmanagerd.service on installation:\n{postinst}"
    assert "deb-systemd-helper enable" not in postinst.split(guard)[0], postinst
    # deb-systemd-invoke starts only enabled units, restarts only running ones.
    assert re.search(r"deb-systemd-invoke \$_dh_action 'nsmanagerd.service'", postinst), postinst
    assert re.search(r"\bpam-auth-update --package\s*$", postinst, re.M), postinst
    prerm = scripts["prerm"]
    assert "pam-auth-update --package --remove nsmanager" in prerm, prerm
    assert re.search(r'\[ "\$1" = remove \]', prerm), prerm
    assert "deb-systemd-invoke stop 'nsmanagerd.service'" in prerm, prerm


def pam_profile(text: str) -> dict[str, str]:
    fields, key = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\S+):\s*(.*)$", line)
        if m:
            key = m.group(1)
            fields[key] = m.group(2).strip()
        elif line.strip() and key:
            fields[key] = (fields[key] + "\n" + " ".join(line.split())).strip()
    return fields


# In a mount namespace of its own: writable copies over what pam-auth-update reads and
# writes, the package's profile added, then what an administrator and the maintainer
# scripts run. Prints each resulting common-session.
PAM_AUTH_UPDATE = r"""
set -eu
scratch=$1 profile=$2
for d in /etc/pam.d /var/lib/pam /var/cache/debconf /usr/share/pam-configs; do
        mkdir -p "$scratch$d"
        cp -a "$d/." "$scratch$d/"
        mount --bind "$scratch$d" "$d"
done
cp "$profile" /usr/share/pam-configs/nsmanager
export DEBIAN_FRONTEND=noninteractive
show() { echo "== $1"; grep -hv '^#' /etc/pam.d/common-session | grep . || true;
         echo "== $1 noninteractive"; grep -hv '^#' /etc/pam.d/common-session-noninteractive | grep . || true; }
pam-auth-update --package
show postinst
pam-auth-update --enable nsmanager
show enabled
pam-auth-update --package --remove nsmanager
show removed
"""


def test_pam_profile(deb):
    """/usr/share/pam-configs/nsmanager: off until `pam-auth-update --enable nsmanager`,
    which adds `session optional pam_nsmanager.so` to common-session after pam_systemd
    (docs/pam.md) and not to common-session-noninteractive; the prerm's --remove takes it
    out again."""
    profile = pam_profile(deb.file("/usr/share/pam-configs/nsmanager").read_text())
    assert profile["Default"] == "no"
    assert profile["Session-Type"] == "Additional"
    assert profile["Session"].split() == ["optional", "pam_nsmanager.so"]
    assert shutil.which("pam-auth-update"), "pam-auth-update is missing: tools/deps installs libpam-runtime"
    p = run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", PAM_AUTH_UPDATE, "sh",
             deb.scratch / "pam-auth-update", deb.file("/usr/share/pam-configs/nsmanager")], wait=120)
    assert p.returncode == 0, f"pam-auth-update failed:\n{p.stdout}\n{p.stderr}"
    stacks, name = {}, None
    for line in p.stdout.splitlines():
        if line.startswith("== "):
            name = line[3:]
            stacks[name] = []
        elif name:
            stacks[name].append(" ".join(line.split()))
    print(p.stdout)
    assert any("pam_systemd.so" in line for line in stacks["postinst"]), \
        "common-session has no pam_systemd.so: tools/deps installs libpam-systemd"
    line = "session optional pam_nsmanager.so"
    enabled = stacks["enabled"]
    assert not any("pam_nsmanager" in x for x in stacks["postinst"]), "installing the package enabled the module"
    assert line in enabled, f"pam-auth-update --enable nsmanager did not add the line:\n{p.stdout}\n{p.stderr}"
    assert [x for x in enabled if x != line] == stacks["postinst"], "--enable changed more than the one line"
    systemd = next(i for i, x in enumerate(enabled) if "pam_systemd.so" in x)
    assert enabled.index(line) > systemd, f"pam_nsmanager.so comes before pam_systemd.so: {enabled}"
    assert not any("pam_nsmanager" in x for x in stacks["enabled noninteractive"]), \
        "the module is in common-session-noninteractive (cron, at): Session-Interactive-Only is lost"
    assert stacks["removed"] == stacks["postinst"], "pam-auth-update --remove did not restore common-session"


def test_lintian(deb):
    """lintian reports no error (warnings and infos are printed, not failed on). No
    overrides are shipped."""
    assert shutil.which("lintian"), "lintian is missing: tools/deps installs it"
    p = run(["lintian", "--allow-root", "--fail-on", "error", "--display-info", deb.path], wait=600)
    print(f"lintian {deb.path.name} (exit status {p.returncode}):\n{p.stdout}{p.stderr}")
    errors = [line for line in p.stdout.splitlines() if line.startswith("E:")]
    assert p.returncode == 0 and not errors, f"lintian errors:\n{p.stdout}{p.stderr}"
    assert not (deb.unpacked / "usr/share/lintian/overrides").exists(), "overrides are shipped: document them"
