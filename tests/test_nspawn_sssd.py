# SPDX-License-Identifier: LGPL-2.1-or-later
"""A user is her uid, with a real sssd: Debian 12's sssd 2.8 in the booted container
(tests/machine.py), `id_provider = proxy` over the files (sssd's own NSS responder, case folding
and name@domain parsing, as with LDAP or AD, and no directory server), with
`case_sensitive = false`, first in nsswitch.conf; once with short canonical names and once with
`use_fully_qualified_names = true` (realmd's default for AD).

Logins go through `login -f NAME` on a pty (script(1)), which hands PAM the name as typed
(su and runuser hand it the pw_name NSS gave them), and pamtester. alice has a [View] policy of
her own, and the group "domain users" (a blank in its name) one too.
"""

from __future__ import annotations

import os
import re

import pytest

from helpers import wait_until
from machine import booted, require_plain_build
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, build_dir

PROFILE = "session [success=ok ignore=ignore session_err=bad default=ignore]"
DOMAIN = "corp.example"


def canonical(name: str, qualified: bool) -> str:
    return f"{name}@{DOMAIN}" if qualified else name


def prepare(qualified: bool):
    def run(m) -> None:
        m.install_project(build_dir())
        module = m.installed_path("pam_nsmanager.so")
        root = m.root_path
        # The directory sssd proxies is the files: alice and bob, a group with a blank.
        for name, lines in (("passwd", "alice:*:2001:2001:Alice:/home/alice:/bin/bash\n"
                                       "bob:*:2002:2002:Bob:/home/bob:/bin/bash\n"),
                            ("group", "alice:x:2001:\nbob:x:2002:\ndomain users:x:2200:alice\n")):
            path = root(f"/etc/{name}")
            path.write_text(path.read_text() + lines)
        for user, uid in (("alice", 2001), ("bob", 2002)):
            home = root(f"/home/{user}")
            home.mkdir(parents=True, exist_ok=True)
            (home / "secret.txt").write_text("the secret\n")
            (home / "group-secret.txt").write_text("the group's secret\n")
            for p in (home, home / "secret.txt", home / "group-secret.txt"):
                os.chown(p, uid, uid)
        nss = root("/etc/nsswitch.conf")
        # sssd first, as where it serves the site's users: it answers none below min_id, nor
        # root (filter_users), which the files do.
        text = re.sub(r"^(passwd|group):.*$", r"\1: sss files", nss.read_text(), flags=re.M)
        nss.write_text(text)
        conf = root("/etc/sssd/sssd.conf")
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"""[sssd]
domains = {DOMAIN}

[domain/{DOMAIN}]
id_provider = proxy
proxy_lib_name = files
auth_provider = none
case_sensitive = false
use_fully_qualified_names = {"true" if qualified else "false"}
min_id = 2000
""")
        conf.chmod(0o600)
        policy = root("/etc/nsmanager")
        (policy / "user.d").mkdir(parents=True, exist_ok=True)
        (policy / "group.d").mkdir(parents=True, exist_ok=True)
        (policy / "user.d" / f"{canonical('alice', qualified)}.conf").write_text(
            "[View]\nInaccessiblePaths=%h/secret.txt\n")
        (policy / "group.d" / f"{canonical('domain users', qualified)}.conf").write_text(
            "[View]\nInaccessiblePaths=%h/group-secret.txt\n")
        # login(1)'s stack, without what a container cannot do (pam_loginuid, pam_securetty).
        root("/etc/pam.d/login").write_text(
            "auth required pam_permit.so\naccount required pam_permit.so\n"
            f"session required pam_unix.so\n{PROFILE} {module} debug\n")
        root("/etc/pam.d/nsm-test").write_text(f"{PROFILE} {module} debug\n")
    return run


@pytest.fixture(scope="module", params=[False, True], ids=["short-names", "fully-qualified"])
def sssd_machine(request, sandbox, tmp_path_factory):
    require_plain_build()
    qualified = request.param
    with booted(tmp_path_factory.mktemp("nspawn-sssd"), prepare=prepare(qualified)) as m:
        m.exec(["systemctl", "start", "sssd.service"], what="starting sssd")
        alice = canonical("alice", qualified)
        wait_until(lambda: "domain users" in m.exec(["id", alice], check=False).stdout,
                   "sssd to answer for alice and her groups", 30, interval=0.5,
                   diag=lambda: m.exec(["id", alice], check=False).stdout + m.journal("-u", "sssd", lines=30))
        m.qualified = qualified
        yield m


def getent(m, name: str) -> list[str] | None:
    p = m.exec(["getent", "passwd", name], check=False)
    return p.stdout.strip().split(":") if p.returncode == 0 else None


def typed_login(m, name: str) -> tuple[bool, str, str]:
    """login -f NAME on a pty: (whether the shell ran, what alice's two secrets gave, its mount
    namespace)."""
    script = ("echo @@$(cat ~/secret.txt 2>/dev/null || echo hidden)@@"
              "$(cat ~/group-secret.txt 2>/dev/null || echo hidden)@@$(readlink /proc/self/ns/mnt)@@; exit\n")
    p = m.exec(["script", "-qec", f"login -f '{name}'", "/dev/null"], input=script, check=False, wait=60)
    found = re.search(r"@@([^@\r\n]*)@@([^@\r\n]*)@@(mnt:\[\d+\])@@", p.stdout)
    if not found:
        return False, p.stdout + p.stderr, ""
    return True, f"{found.group(1)} {found.group(2)}", found.group(3)


def namespaces(m) -> list:
    return m.busctl("call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListNamespaces")[0]


def reconfigure(m, text: str) -> None:
    m.root_path("/etc/nsmanager/nsmanagerd.conf").write_text(text)
    m.exec(["busctl", "call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ReloadConfig"], what="ReloadConfig")


def host_ns(m) -> str:
    return m.exec(["readlink", "/proc/1/ns/mnt"]).stdout.strip()


def spellings(qualified: bool) -> list[str]:
    """What sssd resolves to alice: with fully-qualified names only names with the domain."""
    return (["ALICE@CORP.EXAMPLE", "alice@corp.example", "Alice@Corp.Example"] if qualified else
            ["ALICE", "alice@CORP.EXAMPLE", "Alice@Corp.Example", "alice"])


def test_every_spelling_lands_in_the_one_view(sssd_machine):
    m = sssd_machine
    alice = canonical("alice", m.qualified)
    for name in spellings(m.qualified):
        record = getent(m, name)
        assert record and record[0] == alice and record[2] == "2001", f"sssd answers {name!r} with {record}"
    reconfigure(m, "[Manager]\nStopDelaySec=1h\n")
    links = set()
    for existing in (False, True):
        if not existing:
            m.exec(["busctl", "call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "RemoveNamespace", "s", alice],
                   check=False)
        for name in spellings(m.qualified) if existing else spellings(m.qualified)[:1]:
            ran, secrets, link = typed_login(m, name)
            assert ran, f"login -f {name!r} did not run its shell: {secrets}\n{m.journal('--grep', 'nsmanager', lines=40)}"
            assert secrets == "hidden hidden", f"{name!r} read what her policies hide: {secrets}"
            assert link != host_ns(m), f"{name!r} logged in on the host"
            links.add(link)
        assert len(links) == 1, f"the spellings landed in several namespaces: {links}"
        assert [(n, u) for n, u, _, _ in namespaces(m)] == [(alice, 2001)], namespaces(m)
    p = m.exec([m.installed_path("nsctl"), "list"])
    assert p.stdout.count(alice) == 1 and "ALICE" not in p.stdout, p.stdout
    if m.qualified:
        # sssd does not resolve a short name now, and the files do not know ALICE: an unknown
        # user under LoginWithoutView=restricted, with policies for users, is refused.
        ran, out, _ = typed_login(m, "ALICE")
        assert not ran, f"ALICE, whom NSS does not know, was let in: {out}"
        # The files know alice by her short name: the same uid, the same view.
        ran, secrets, link = typed_login(m, "alice")
        assert ran and secrets == "hidden hidden" and link in links, (ran, secrets, link)
    assert len(namespaces(m)) == 1


def test_exclude_users_excludes_every_spelling(sssd_machine):
    m = sssd_machine
    alice = canonical("alice", m.qualified)
    m.exec(["busctl", "call", BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "RemoveNamespace", "s", alice], check=False)
    reconfigure(m, f"[Manager]\nExcludeUsers={alice}\n")
    try:
        for name in spellings(m.qualified):
            ran, secrets, link = typed_login(m, name)
            assert ran and link == host_ns(m), f"{name!r}: excluded, yet {link} ({secrets})"
        assert namespaces(m) == []
    finally:
        reconfigure(m, "[Manager]\n")


def test_deny_never_lets_a_spelling_through_without_a_view(sssd_machine):
    m = sssd_machine
    reconfigure(m, "[Manager]\nLoginWithoutView=deny\n")
    try:
        # A domain sssd does not serve: NSS cannot resolve it, and the rule refuses it.
        p = m.exec(["pamtester", "nsm-test", "alice@corp", "open_session"], check=False)
        assert p.returncode != 0, p.stdout + p.stderr
        for name in spellings(m.qualified):
            ran, secrets, link = typed_login(m, name)
            assert ran and secrets == "hidden hidden" and link != host_ns(m), (name, ran, secrets, link)
    finally:
        reconfigure(m, "[Manager]\n")
