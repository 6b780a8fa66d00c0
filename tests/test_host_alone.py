# SPDX-License-Identifier: LGPL-2.1-or-later
"""tools/test changes nothing on the machine but the packages tools/deps names.

Installing openssh-server, dbus-broker, cockpit-ws or systemd-container runs maintainer
scripts that enable units (ssh.service; dbus-broker.service as the system's and every
user's dbus.service from the next boot; cockpit.socket; machines.target) and generate SSH
host keys. tools/deps runs apt-get inside its guard, which undoes that. Two checks:

- the guard itself, on a root directory of the test's own: a simulated install enables
  units there the way deb-systemd-helper does and writes a host key, and afterwards
  everything is as it was (nothing on the machine is touched);
- the machine itself, when tools/test runs this file: tools/test records
  `tools/deps --host-state` before it installs anything (NSM_HOST_BEFORE names the file),
  and here the same facts are read again and compared. An installed package may have a
  newer version only where a package installed or upgraded since depends on that newer
  version (or breaks the older one): what apt-get must do, nothing more."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEPS = REPO / "tools/deps"

# The [Install] sections of Debian 12's units, as their packages ship them.
UNITS = {
    "lib/systemd/system/ssh.service":
        "[Service]\nExecStart=/usr/sbin/sshd -D\n[Install]\nWantedBy=multi-user.target\nAlias=sshd.service\n",
    "lib/systemd/system/dbus.service":
        "[Service]\nExecStart=/usr/bin/dbus-daemon --system\n",
    "lib/systemd/system/dbus-broker.service":
        "[Service]\nExecStart=/usr/bin/dbus-broker-launch --scope system\n[Install]\nAlias=dbus.service\n",
    "usr/lib/systemd/user/dbus-broker.service":
        "[Service]\nExecStart=/usr/bin/dbus-broker-launch --scope user\n[Install]\nAlias=dbus.service\n",
    "lib/systemd/system/lightdm.service":
        "[Service]\nExecStart=/usr/sbin/lightdm\n[Install]\nAlias=display-manager.service\n",
    "lib/systemd/system/gdm3.service":
        "[Service]\nExecStart=/usr/sbin/gdm3\n[Install]\nAlias=display-manager.service\n",
    "lib/systemd/system/postgresql.service":
        "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
}


def is_enabled(root, unit, scope="--system"):
    p = subprocess.run(["systemctl", f"--root={root}", scope, "is-enabled", unit],
                       capture_output=True, text=True)
    return p.stdout.strip()


def test_guard_undoes_what_an_install_enables(sandbox, tmp_path):
    root = tmp_path / "root"
    for path, text in UNITS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "etc/ssh").mkdir(parents=True)
    (root / "etc/ssh/ssh_host_rsa_key").write_text("the machine's own\n")
    # the machine's own choices before the install: a service enabled, a display manager
    subprocess.run(["systemctl", f"--root={root}", "enable", "postgresql.service", "lightdm.service"],
                   check=True, capture_output=True)
    before = sorted(str(p.relative_to(root)) + " -> " + os.readlink(p)
                    for p in (root / "etc/systemd").rglob("*") if p.is_symlink())

    # What the packages' postinsts do: deb-systemd-helper enables (system and user units),
    # gdm3 takes the display-manager alias over, openssh-server generates the keys missing.
    install = (f"systemctl --root={root} enable ssh.service dbus-broker.service"
               f" && systemctl --root={root} --global enable dbus-broker.service"
               f" && ln -sfn /lib/systemd/system/gdm3.service {root}/etc/systemd/system/display-manager.service"
               f" && touch {root}/etc/ssh/ssh_host_ed25519_key {root}/etc/ssh/ssh_host_ed25519_key.pub")
    p = subprocess.run([DEPS, "--guarded", root, "sh", "-c", install], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "disabling what the install enabled: dbus-broker.service gdm3.service ssh.service" in p.stdout, p.stdout

    assert is_enabled(root, "ssh.service") == "disabled"
    assert is_enabled(root, "dbus-broker.service") == "disabled"
    assert is_enabled(root, "dbus-broker.service", "--global") == "disabled"
    assert not os.path.lexists(root / "etc/systemd/system/dbus.service")
    assert not os.path.lexists(root / "etc/systemd/user/dbus.service")
    assert not os.path.lexists(root / "etc/systemd/system/sshd.service")
    assert is_enabled(root, "postgresql.service") == "enabled"
    assert os.readlink(root / "etc/systemd/system/display-manager.service") == "/lib/systemd/system/lightdm.service"
    after = sorted(str(p.relative_to(root)) + " -> " + os.readlink(p)
                   for p in (root / "etc/systemd").rglob("*") if p.is_symlink())
    assert after == before
    assert sorted(p.name for p in (root / "etc/ssh").iterdir()) == ["ssh_host_rsa_key"]
    assert (root / "etc/ssh/ssh_host_rsa_key").read_text() == "the machine's own\n"


def test_guard_keeps_the_commands_failure(sandbox, tmp_path):
    """An apt-get that fails still gets its enablements undone, and its status is kept."""
    root = tmp_path / "root"
    (root / "lib/systemd/system").mkdir(parents=True)
    (root / "lib/systemd/system/ssh.service").write_text(UNITS["lib/systemd/system/ssh.service"])
    p = subprocess.run([DEPS, "--guarded", root, "sh", "-c",
                        f"systemctl --root={root} enable ssh.service; exit 100"],
                       capture_output=True, text=True)
    assert p.returncode == 100, p.stdout + p.stderr
    assert is_enabled(root, "ssh.service") == "disabled"


def parse_state(text):
    units, aliases, packages = {}, {}, {}
    for line in text.splitlines():
        f = line.split()
        if f[0] == "unit":
            units[(f[1], f[2])] = f[3] if len(f) > 3 else ""
        elif f[0] == "alias":
            aliases[f[2]] = f[3] if len(f) > 3 else ""
        elif f[0] == "package":
            packages[f[1]] = f[2]
    return units, aliases, packages


def version_satisfies(version, op, wanted):
    return subprocess.run(["dpkg", "--compare-versions", version, op, wanted]).returncode == 0


def relations():
    """{package: [(field, name, op, version)]} of every installed package's Depends,
    Pre-Depends and Breaks that carry a version, and {package: its source package}."""
    p = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status}\t${Package}\t${source:Package}\t"
                        "${Depends}, ${Pre-Depends}\t${Breaks}\n"],
                       capture_output=True, text=True, check=True)
    rels, sources = {}, {}
    for line in p.stdout.splitlines():
        status, pkg, source, depends, breaks = line.split("\t")
        if status != "installed":
            continue
        sources[pkg] = source
        out = rels.setdefault(pkg, [])
        for field, text in (("depends", depends), ("breaks", breaks)):
            for alt in text.replace("|", ",").split(","):
                alt = alt.strip()
                if "(" not in alt:
                    continue
                name, cond = alt.split("(", 1)
                op, ver = cond.rstrip(")").split()
                out.append((field, name.strip().split(":")[0], op, ver))
    return rels, sources


def unexplained_upgrades(before, now):
    """The packages installed before whose version changed, or that went, although no
    package installed or upgraded since needed it."""
    changed = {name for name in before if now.get(name) != before[name]}
    if not changed:
        return []
    rels, sources = relations()
    arrived = {name for name in now if name not in before} | changed
    wrong, forced = [], set()
    for name in sorted(changed):
        if name not in now:
            wrong.append(f"{name} {before[name]} was removed")
            continue
        old = before[name]
        # a package that came or moved needs a newer one (or breaks the old one) …
        if any(n == name and (version_satisfies(old, op, ver) != (field == "depends"))
               for pkg in arrived for field, n, op, ver in rels.get(pkg, [])):
            forced.add(name)
        # … or this one moves in step with one that moved (libnss-systemd with systemd:
        # its old version required the old systemd, as its new one requires the new)
        elif any(field == "depends" and n in changed and n in before and not version_satisfies(before[n], op, ver)
                 for field, n, op, ver in rels.get(name, [])):
            forced.add(name)
    # apt keeps the binaries of one source together (systemd-sysv, libudev1 with systemd)
    forced_sources = {sources.get(name) for name in forced}
    for name in sorted(changed - forced):
        if name in now and sources.get(name) not in forced_sources:
            wrong.append(f"{name} {before[name]} -> {now[name]}, which no new package requires")
    return wrong


def enabled(state):
    return state in ("enabled", "enabled-runtime", "alias", "linked", "linked-runtime")


def test_machine_as_before_tools_test():
    before_file = os.environ.get("NSM_HOST_BEFORE")
    if not before_file:
        pytest.skip("NSM_HOST_BEFORE unset: tools/test records the machine before it installs anything "
                    "(the guard itself is tested above)")
    units_before, aliases_before, packages_before = parse_state(Path(before_file).read_text())
    now = subprocess.run([DEPS, "--host-state"], capture_output=True, text=True, check=True).stdout
    units_now, aliases_now, packages_now = parse_state(now)
    for key, state in units_before.items():
        assert enabled(units_now[key]) == enabled(state), f"{key}: {state!r} before, {units_now[key]!r} now"
    assert aliases_now == aliases_before
    assert unexplained_upgrades(packages_before, packages_now) == []
