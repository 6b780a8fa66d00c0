# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Debian package (debian/, tools/build-deb): every file of the installation contract
at Debian's path in nsmanager_VERSION_ARCH.deb, the configuration a conffile, the
dependencies, maintainer scripts that leave the unit disabled (D-Bus activated) and the
PAM profile off until an administrator enables it, lintian without errors, and the
package installed, enabled and removed by apt-get in a booted Debian 12.

The package is built once for the module by tools/build-deb --no-install-deps (tools/deps
installs debhelper, dpkg-dev, fakeroot and lintian) from a copy of the work tree, under
the sandbox's tmpfs /tmp; it is never installed on this machine: the tests look at it
(dpkg-deb -c/-f/-e/-x), and test_deb_package installs it into a booted container
(tests/machine.py). The PAM profile is tried with the real pam-auth-update in a mount
namespace of its own, over copies of /etc/pam.d, /var/lib/pam, debconf's database and
/usr/share/pam-configs."""

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
from helpers import wait_until
from machine import ALICE, UNIT, Login, Machine, booted, ns_id_of
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, REPO, timeout

PACKAGE = "nsmanager"
COCKPIT_PACKAGE = "cockpit-nsmanager"
COCKPIT_FILES = ("manifest.json", "index.html", "nsmanager.js", "nsmanager.css")


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
        built = Deb(path, unpacked, control, scratch)
        # The second binary package of the same source: the Cockpit page.
        page = out / f"{COCKPIT_PACKAGE}_{meson_version()}_all.deb"
        assert page.is_file(), f"no {page.name} in {sorted(x.name for x in out.iterdir())}\n{log[-3000:]}"
        for option, dest in (("-x", top / "cockpit-unpacked"), ("-e", top / "cockpit-control")):
            p = run(["dpkg-deb", option, page, dest])
            assert p.returncode == 0, p.stderr
        built.cockpit = Deb(page, top / "cockpit-unpacked", top / "cockpit-control", scratch)
        yield built
    finally:
        shutil.rmtree(top, ignore_errors=True)


def contract(arch_triplet: str) -> dict[str, str]:
    """Debian 12's path of every file of the installation contract -> what it is."""
    files = {
        "/usr/libexec/nsmanagerd": "the daemon",
        "/usr/libexec/nsmanager-attach-exec": "what an attached command's unit runs first, as the caller",
        "/usr/lib/systemd/catalog/nsmanager.catalog": "the journal's catalog of the audit records",
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
    only regular file under /etc. Nothing under /etc/pam.d: a PAM stack there would be a
    conffile freezing another package's stack (systemd's systemd-user, say) and surviving
    the removal; the PAM module is enabled through the pam-auth-update profile. The one
    stack of the package's own, nsmanager-attach (the PAM service of Attach()'s units), is
    in libpam's vendor directory /usr/lib/pam.d: no conffile, gone with the package, and
    /etc/pam.d/nsmanager-attach overrides it."""
    conffiles = (deb.control / "conffiles").read_text().split()
    etc_files = sorted(p for p in deb.entries if p.startswith("/etc/") and deb.is_file(p))
    assert conffiles == ["/etc/nsmanager/nsmanagerd.conf"], conffiles
    assert etc_files == conffiles, f"files under /etc that are not conffiles: {set(etc_files) - set(conffiles)}"
    pam_d = [p for p in deb.entries if "/pam.d" in p and deb.is_file(p)]
    assert pam_d == ["/usr/lib/pam.d/nsmanager-attach"], f"the package installs PAM stacks: {pam_d}"


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
# writes, then what an administrator and the maintainer scripts run, with the package's
# profile and with one as an earlier version had it (interactive sessions only). Prints
# both common-session files after each step.
PAM_AUTH_UPDATE = r"""
set -eu
scratch=$1 profile=$2 old=$3
for d in /etc/pam.d /var/lib/pam /var/cache/debconf /usr/share/pam-configs; do
        mkdir -p "$scratch$d"
        cp -a "$d/." "$scratch$d/"
        mount --bind "$scratch$d" "$d"
done
export DEBIAN_FRONTEND=noninteractive
show() { echo "== $1"; grep -hv '^#' /etc/pam.d/common-session | grep . || true;
         echo "== $1 noninteractive"; grep -hv '^#' /etc/pam.d/common-session-noninteractive | grep . || true; }
cp "$profile" /usr/share/pam-configs/nsmanager
pam-auth-update --package
show postinst
# The administrator's own line, after pam-auth-update's block.
for f in common-session common-session-noninteractive; do
        echo "session optional pam_umask.so" >> /etc/pam.d/$f
done
show edited
pam-auth-update --enable nsmanager
show enabled
pam-auth-update --enable mkhomedir
show mkhomedir
pam-auth-update --disable mkhomedir
pam-auth-update --package
show upgraded
pam-auth-update --package --remove nsmanager
show removed
# An upgrade from a version whose profile was for interactive sessions only.
cp "$old" /usr/share/pam-configs/nsmanager
pam-auth-update --package
pam-auth-update --enable nsmanager
show old
cp "$profile" /usr/share/pam-configs/nsmanager
pam-auth-update --package
show from-old
pam-auth-update --package --remove nsmanager
show removed-again
"""

# The control of the package's profile: the module's PAM_SESSION_ERR (LoginWithoutView=) fails
# the session, anything else is ignored, a module that cannot be loaded too.
PROFILE_CONTROL = "[success=ok ignore=ignore session_err=bad default=ignore]"

# An earlier version's: interactive sessions only, and `optional`.
OLD_PROFILE = """\
Name: Enter the per-user mount namespace of nsmanager on login
Default: no
Priority: 0
Session-Type: Additional
Session-Interactive-Only: yes
Session:
	optional	pam_nsmanager.so
"""


def test_pam_profile(deb):
    """/usr/share/pam-configs/nsmanager: off until `pam-auth-update --enable nsmanager`,
    which adds `session [success=ok ignore=ignore session_err=bad default=ignore]
    pam_nsmanager.so` (only the module's PAM_SESSION_ERR fails a login) to common-session and to
    common-session-noninteractive (cron, sudo, systemd --user), after pam_systemd and
    pam_mkhomedir (docs/pam.md); an administrator's own line stays through every step; an
    upgrade from the interactive-only profile adds the non-interactive line; the prerm's
    --remove restores both files."""
    profile = pam_profile(deb.file("/usr/share/pam-configs/nsmanager").read_text())
    assert profile["Default"] == "no"
    assert profile["Session-Type"] == "Additional"
    assert profile["Session"] == PROFILE_CONTROL + " pam_nsmanager.so"
    # pam-auth-update takes the field as set whatever its value (`defined(...)` in its
    # parse_pam_profile) and leaves the profile out of common-session-noninteractive then.
    assert "Session-Interactive-Only" not in profile, "Session-Interactive-Only in any form keeps cron, sudo " \
        "and systemd --user out"
    assert int(profile["Priority"]) < 0, "Priority 0 or more does not put the module after every profile of 0"
    assert shutil.which("pam-auth-update"), "pam-auth-update is missing: tools/deps installs libpam-runtime"
    assert Path("/usr/share/pam-configs/mkhomedir").exists(), "pam_mkhomedir's profile is missing (libpam-modules)"
    old = deb.scratch / "old-profile"
    old.write_text(OLD_PROFILE)
    p = run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", PAM_AUTH_UPDATE, "sh",
             deb.scratch / "pam-auth-update", deb.file("/usr/share/pam-configs/nsmanager"), old], wait=120)
    assert p.returncode == 0, f"pam-auth-update failed:\n{p.stdout}\n{p.stderr}"
    assert "Use of uninitialized" not in p.stderr, p.stderr
    stacks, name = {}, None
    for line in p.stdout.splitlines():
        if line.startswith("== "):
            name = line[3:]
            stacks[name] = []
        elif name:
            stacks[name].append(" ".join(line.split()))
    print(p.stdout)
    line = f"session {PROFILE_CONTROL} pam_nsmanager.so"
    admin = "session optional pam_umask.so"
    assert any("pam_systemd.so" in x for x in stacks["postinst"]), \
        "common-session has no pam_systemd.so: tools/deps installs libpam-systemd"
    for kind in ("", " noninteractive"):
        postinst, edited, enabled = stacks["postinst" + kind], stacks["edited" + kind], stacks["enabled" + kind]
        assert not any("pam_nsmanager" in x for x in postinst), "installing the package enabled the module"
        assert edited == postinst + [admin]
        assert line in enabled, f"pam-auth-update --enable nsmanager did not add the line{kind}:\n{p.stdout}"
        assert [x for x in enabled if x != line] == edited, f"--enable changed more than the one line{kind}"
        assert enabled[-1] == admin, f"the administrator's line moved{kind}: {enabled}"
        for other in ("pam_systemd.so", "pam_mkhomedir.so"):
            before = [i for i, x in enumerate(stacks["mkhomedir" + kind]) if other in x]
            assert stacks["mkhomedir" + kind].index(line) > max(before, default=-1), \
                f"pam_nsmanager.so comes before {other}{kind}: {stacks['mkhomedir' + kind]}"
        assert stacks["upgraded" + kind] == enabled, f"pam-auth-update --package changed an enabled stack{kind}"
        assert stacks["removed" + kind] == edited, f"--remove did not restore the stack{kind}"
        assert stacks["from-old" + kind] == enabled, f"the upgrade from the interactive-only profile{kind}"
        assert stacks["removed-again" + kind] == edited
    old_line = "session optional pam_nsmanager.so"
    assert old_line in stacks["old"] and old_line not in stacks["old noninteractive"], \
        "the earlier profile is not interactive-only: the upgrade step proves nothing"
    assert any("pam_systemd.so" in x for x in stacks["mkhomedir"])


@pytest.mark.parametrize("which", [PACKAGE, COCKPIT_PACKAGE])
def test_lintian(deb, which):
    """lintian reports no error (warnings and infos are printed, not failed on), for both
    binary packages. No overrides are shipped."""
    assert shutil.which("lintian"), "lintian is missing: tools/deps installs it"
    package = deb if which == PACKAGE else deb.cockpit
    p = run(["lintian", "--allow-root", "--fail-on", "error", "--display-info", package.path], wait=600)
    print(f"lintian {package.path.name} (exit status {p.returncode}):\n{p.stdout}{p.stderr}")
    errors = [line for line in p.stdout.splitlines() if line.startswith("E:")]
    assert p.returncode == 0 and not errors, f"lintian errors:\n{p.stdout}{p.stderr}"
    assert not (package.unpacked / "usr/share/lintian/overrides").exists(), "overrides are shipped: document them"


def test_cockpit_package(deb):
    """cockpit-nsmanager: Architecture all, the page's files as they are in cockpit/ where
    cockpit-bridge looks for packages, and nothing else but its docs; the page is not in
    nsmanager, so a machine without Cockpit gets none of it."""
    page = deb.cockpit
    assert page.field("Package") == COCKPIT_PACKAGE
    assert page.field("Version") == meson_version()
    assert page.field("Architecture") == "all"
    depends = [" ".join(d.split()) for d in page.field("Depends").split(",")]
    assert "cockpit-bridge (>= 287)" in depends, depends
    assert f"nsmanager (>= {meson_version()})" in depends, depends
    files = sorted(p for p in page.entries if page.is_file(p))
    expected = sorted([f"/usr/share/cockpit/nsmanager/{f}" for f in COCKPIT_FILES] +
                      [f"/usr/share/doc/{COCKPIT_PACKAGE}/copyright", f"/usr/share/doc/{COCKPIT_PACKAGE}/changelog.gz"])
    assert files == expected, files
    for f in COCKPIT_FILES:
        assert page.file(f"/usr/share/cockpit/nsmanager/{f}").read_bytes() == (REPO / "cockpit" / f).read_bytes(), f
    manifest = json.loads(page.file("/usr/share/cockpit/nsmanager/manifest.json").read_text())
    assert manifest["menu"]["index"]["label"] == "User views"
    assert not [p for p in deb.entries if "/cockpit" in p], "nsmanager ships files of the Cockpit page"


def _common_session(m: Machine, name: str = "common-session") -> list[str]:
    text = m.exec(["cat", f"/etc/pam.d/{name}"]).stdout
    return [" ".join(line.split()) for line in text.splitlines() if line.strip() and not line.startswith("#")]


# A PAM service of the test's own that includes common-session-noninteractive as cron's and
# sudo's do; run through a transient service with PAMName= (systemd opens a PAM session for
# the service's process, as cron does for a job).
NONINTERACTIVE_SERVICE = """\
#%PAM-1.0
# tests/test_deb.py: a non-interactive session, as cron's and sudo's stacks have it
@include common-account
@include common-session-noninteractive
"""


def test_deb_package(deb, tmp_path_factory):
    """The package as an administrator installs it, in a booted copy of the image without
    the build (tests/machine.py): `apt-get install ./nsmanager_*.deb` (offline: the image
    has every dependency) leaves nsmanagerd.service installed but disabled and stopped;
    the first bus call activates it; `pam-auth-update --enable nsmanager` adds the
    session line to common-session after pam_systemd.so; `su -l alice` lands in her
    namespace, and so do user@2001.service (systemd --user, through systemd-user's
    common-session-noninteractive) and a session through a common-session-noninteractive
    stack of the test's own — nothing but the package and pam-auth-update put the module
    there. `apt-get remove` takes the lines out again (no pam_nsmanager left anywhere in
    /etc/pam.d), stops the daemon, leaves no mount of the package on the machine (with bob's
    namespace lingering, and alice logged in: her login keeps a namespace that works) and
    keeps the conffile and the login filter under /var/lib/nsmanager, which `purge` removes;
    logins work throughout."""
    package = "/root/" + deb.path.name     # (not /tmp: nspawn mounts a tmpfs there)
    line = f"session {PROFILE_CONTROL} pam_nsmanager.so"
    image = None

    def copy_package(m: Machine) -> None:
        nonlocal image
        image = m.image
        m.root_path(package).write_bytes(deb.path.read_bytes())

    with booted(tmp_path_factory.mktemp("nspawn-deb"), prepare=copy_package) as m:
        apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-y", "--no-install-recommends",
               "-o", "Dpkg::Options::=--force-confdef"]
        p = m.exec(apt + ["install", package], wait=300, what=f"apt-get install {package} in the container")
        out = [x for x in (p.stdout + p.stderr).splitlines() if not x.startswith("(Reading database")]
        print("apt-get install:\n" + "\n".join(out[-30:]))
        m.exec(["useradd", "--create-home", "--uid", str(ALICE.uid), "--user-group", "--shell", "/bin/bash",
                ALICE.name], what="useradd alice")
        m.exec(["useradd", "--create-home", "--uid", str(ALICE.uid + 1), "--user-group", "--shell", "/bin/bash",
                "bob"], what="useradd bob")
        # The machine's mounts before the daemon ever ran.
        before_daemon = {m_.id for m_ in sandbox_module.parse_mountinfo(m.exec(["cat", "/proc/1/mountinfo"]).stdout)}

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

        # The administrator enables the PAM profile: both common-session files get the line.
        before = {f: _common_session(m, f) for f in ("common-session", "common-session-noninteractive")}
        m.exec(["env", "DEBIAN_FRONTEND=noninteractive", "pam-auth-update", "--enable", "nsmanager"],
               what="pam-auth-update --enable nsmanager")
        for f, was in before.items():
            enabled = _common_session(m, f)
            assert line in enabled, f"pam-auth-update did not add {line!r} to {f}:\n" + "\n".join(enabled)
            assert [x for x in enabled if x != line] == was, f"pam-auth-update changed more than the one line of {f}"
        enabled = _common_session(m)
        systemd = next((i for i, x in enumerate(enabled) if "pam_systemd.so" in x), None)
        assert systemd is not None and enabled.index(line) > systemd, enabled

        login = Login(m)
        try:
            ns_id = m.ns_property("MountNamespaceId")
            assert ns_id_of(login.link) == ns_id, f"alice's login is in {login.link}, her namespace is mnt:[{ns_id}]"
            assert login.link != m.mntns(1), "alice's login stayed in the machine's namespace"
            assert any(not s.startswith("pam-") for s in m.ns_property("Sessions")), \
                "alice's logind session is not among her namespace's sessions"

            # systemd --user, started by the login's pam_systemd.
            unit = f"user@{ALICE.uid}.service"
            wait_until(lambda: m.is_active(unit) == "active", f"{unit} to be active", 30, interval=0.1,
                       diag=m.diag)
            manager = int(m.systemctl_value("MainPID", unit))
            assert m.mntns(manager) == login.link, \
                f"{unit} (pid {manager}) is in {m.mntns(manager)}, alice's namespace is {login.link}"

            # A non-interactive session (cron's, sudo's stack).
            m.root_path("/etc/pam.d/nsm-noninteractive").write_text(NONINTERACTIVE_SERVICE)
            p = m.exec(["systemd-run", "--quiet", "--wait", "--pipe", "-p", "PAMName=nsm-noninteractive",
                        "-p", f"User={ALICE.name}", "readlink", "/proc/self/ns/mnt"],
                       what="a session through common-session-noninteractive (systemd-run -p PAMName=)")
            assert p.stdout.strip() == login.link, \
                f"the non-interactive session is in {p.stdout.strip()}, alice's namespace is {login.link}"
            assert m.ns_property("MountNamespaceId") == ns_id
        finally:
            login.logout()

        # What removal must cope with: bob's namespace lingers (no process in it), alice is
        # logged in. The daemon made its mounts on the host: the registry, SubtreeRoot,
        # StateDirectory, /mnt.
        m.exec(["nsctl", "create", "bob"], what="nsctl create bob")
        m.exec(["nsctl", "linger", "bob", "yes"], what="nsctl linger bob yes")
        login = Login(m)
        made = [x for x in sandbox_module.parse_mountinfo(m.exec(["cat", "/proc/1/mountinfo"]).stdout)
                if x.id not in before_daemon]
        assert {"/subtree", "/run/nsmanager", "/run/nsmanager/registry", "/mnt"} <= {x.target for x in made}, made

        # Removal: the PAM line goes (prerm), the daemon stops, its mounts go (prerm), the
        # conffile stays.
        p = m.exec(apt + ["remove", "nsmanager"], wait=180, what="apt-get remove nsmanager")
        print("apt-get remove:\n" + p.stdout + p.stderr)
        # (alice's logind runtime directory is hers, not the package's)
        left = [x for x in sandbox_module.parse_mountinfo(m.exec(["cat", "/proc/1/mountinfo"]).stdout)
                if x.id not in before_daemon and not x.target.startswith("/run/user/")]
        assert not left, "apt-get remove left mounts of the package:\n" + "\n".join(map(str, left))
        try:
            assert login.alive() and m.mntns(login.pid) == login.link, "alice's login lost its namespace"
            inside = m.exec(["nsenter", f"--target={login.pid}", "--mount", "--", "ls", "-A", "/home"],
                            what="a command in alice's namespace after the removal")
            assert {"alice", "bob"} <= set(inside.stdout.split()), inside.stdout
        finally:
            login.logout()
        left = m.exec(["grep", "-rl", "pam_nsmanager", "/etc/pam.d"], check=False)
        assert left.returncode == 1 and not left.stdout, f"apt-get remove left pam_nsmanager in {left.stdout}"
        for f, was in before.items():
            assert _common_session(m, f) == was, f"apt-get remove did not restore {f}"
        assert m.is_active() != "active", f"{UNIT} still runs after apt-get remove\n{p.stdout}"
        assert m.exec(["test", "-e", "/usr/libexec/nsmanagerd"], check=False).returncode != 0
        assert m.exec(["test", "-f", "/etc/nsmanager/nsmanagerd.conf"], check=False).returncode == 0, \
            "apt-get remove removed the conffile"
        after = m.su_alice("readlink /proc/self/ns/mnt").stdout.strip()
        assert after == m.mntns(1), f"after the removal su -l alice lands in {after}, not the machine's namespace"
        assert m.exec(["test", "-f", "/var/lib/nsmanager/login-filter"], check=False).returncode == 0, \
            "no login filter kept under /var/lib/nsmanager (LoginWithoutView= after a reboot)"
        m.exec(apt + ["purge", "nsmanager"], wait=180, what="apt-get purge nsmanager")
        assert m.exec(["test", "-e", "/etc/nsmanager/nsmanagerd.conf"], check=False).returncode != 0, \
            "apt-get purge left /etc/nsmanager/nsmanagerd.conf"
        assert m.exec(["test", "-e", "/var/lib/nsmanager"], check=False).returncode != 0, \
            "apt-get purge left /var/lib/nsmanager"
    # booted() checked the clean poweroff, the cgroups and the mount table.
    assert not (image / "usr/libexec/nsmanagerd").exists(), "the package was installed into the cached image"
