# SPDX-License-Identifier: LGPL-2.1-or-later
"""nsctl against the real daemon: its verbs, output and refusals, and `nsctl attach`
(Manager.Attach).

Every command runs the built nsctl against the real nsmanagerd of the sandbox
(conftest.py): as root, or as a test user through setpriv (uid, gid, groups, no
privileges). The interactive attach runs under a real terminal: a tmux session of
100x40 cells, driven with send-keys and read with capture-pane."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from caller import call_as
from helpers import (E_INTERACTIVE_AUTHORIZATION_REQUIRED, E_INVALID_PATH, E_NO_SUCH_NAMESPACE, ns_path,
                     processes_of, wait_until)
from sandbox import BASE, MANAGER_PATH, REPO, TEST_USERS, nsctl_binary, timeout
from sshd import Sshd

E_NAME_RE = re.compile(r"org\.(example|freedesktop)\.[A-Za-z.]*Error\.")


def one_line_error(p):
    """A refusal: exit 1, one line on stderr, the message and not the D-Bus name."""
    assert p.returncode == 1, f"exit {p.returncode}, stdout={p.stdout!r} stderr={p.stderr!r}"
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {p.stderr!r}"
    assert not E_NAME_RE.search(lines[0]), f"D-Bus error name on stderr: {lines[0]!r}"
    return lines[0]


def nsctl_as(sb, user, args, cwd=None, input=None, env=None, wait=30):
    argv = [nsctl_binary(), *args]
    if user is None:
        return sb.run(argv, input=input, env=env, wait=wait, cwd=cwd)
    return sb.run_as(user, argv, input=input, env=env, wait=wait, cwd=cwd)


@pytest.fixture
def views(daemon, manager):
    """alice's and bob's namespaces."""
    for u in ("alice", "bob"):
        manager.CreateNamespace(u)
    return daemon


def ns_id(sb, user):
    return int(sb.properties(ns_path(user), "org.example.NSManager.Namespace")["MountNamespaceId"])


# ---------------------------------------------------------------------------
# attach, without a terminal

def test_attach_as_root(views, nsctl):
    p = nsctl("attach", "alice", "--", "readlink", "/proc/self/ns/mnt")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"mnt:[{ns_id(views, 'alice')}]"

    p = nsctl("attach", "alice", "--", "id", "-u")
    assert p.stdout.strip() == "0"

    # the default command is alice's login shell
    p = nsctl("attach", "alice", input="echo $0; readlink /proc/self/ns/mnt\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["/bin/bash", f"mnt:[{ns_id(views, 'alice')}]"]

    p = nsctl("attach", "alice", "--", "sh", "-c", "exit 7")
    assert p.returncode == 7


def test_attach_as_user(views, nsctl):
    p = nsctl("attach", "alice", "--", "readlink", "/proc/self/ns/mnt", as_user="alice")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"mnt:[{ns_id(views, 'alice')}]"
    assert ns_id(views, "alice") != ns_id(views, "bob")

    p = nsctl("attach", "alice", "--", "id", as_user="alice")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "uid=2001(alice) gid=2001(alice) groups=2001(alice)"

    # no privileges left: not even the saved set-user-ID
    p = nsctl("attach", "alice", "--", "grep", "-E", "^(Uid|Gid|CapEff|CapPrm|CapAmb):", "/proc/self/status",
              as_user="alice")
    fields = dict(line.split(":", 1) for line in p.stdout.strip().splitlines())
    assert fields["Uid"].split() == ["2001"] * 4
    assert fields["Gid"].split() == ["2001"] * 4
    for cap in ("CapEff", "CapPrm", "CapAmb"):
        assert int(fields[cap], 16) == 0, p.stdout

    # the default command: alice's shell, reading our stdin
    p = nsctl("attach", "alice", as_user="alice", input="id -un; readlink /proc/self/ns/mnt\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["alice", f"mnt:[{ns_id(views, 'alice')}]"]


def test_attach_supplementary_groups(daemon, manager, nsctl):
    """carol is in nsadmin (2100): her groups come from the bus credentials."""
    manager.CreateNamespace("carol")
    p = nsctl("attach", "carol", "--", "id", "-G", as_user="carol")
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.split()) == ["2003", "2100"]


def test_attach_stdio_and_exit_status(views, nsctl):
    p = nsctl("attach", "alice", "--", "cat", as_user="alice", input="hi\n")
    assert (p.returncode, p.stdout) == (0, "hi\n")

    p = nsctl("attach", "alice", "--", "sh", "-c", "echo out; echo err >&2", as_user="alice")
    assert (p.stdout, p.stderr) == ("out\n", "err\n")

    assert nsctl("attach", "alice", "--", "true", as_user="alice").returncode == 0
    assert nsctl("attach", "alice", "--", "sh", "-c", "exit 7", as_user="alice").returncode == 7
    assert nsctl("attach", "alice", "--", "sh", "-c", "kill -TERM $$", as_user="alice").returncode == 143
    assert nsctl("attach", "alice", "--", "sh", "-c", "kill -KILL $$", as_user="alice").returncode == 137

    # the command cannot be run: as a shell says it
    p = nsctl("attach", "alice", "--", "no-such-command-here", as_user="alice")
    assert p.returncode == 127
    assert "no-such-command-here" in p.stderr


def test_attach_environment_and_directory(views, nsctl):
    sb = views
    p = nsctl("attach", "alice", "--", "sh", "-c", 'echo "$NSM_TEST_VAR"', as_user="alice",
              env={"NSM_TEST_VAR": "hello world"})
    assert p.stdout == "hello world\n"

    # the working directory where it exists in the view ...
    p = nsctl_as(sb, "alice", ["attach", "alice", "--", "pwd"], cwd="/home/alice")
    assert p.stdout.strip() == "/home/alice"
    p = nsctl_as(sb, "alice", ["attach", "alice", "--", "pwd"], cwd="/usr/share")
    assert p.stdout.strip() == "/usr/share"

    # ... else the caller's home (nsctl's own directory is gone here)
    parent = BASE / "nsctl-alice"
    parent.mkdir(exist_ok=True)
    os.chown(parent, 2001, 2001)
    gone = parent / "gone"
    gone.mkdir(exist_ok=True)
    os.chown(gone, 2001, 2001)
    p = sb.run_as("alice", ["sh", "-c", f'cd {gone} && rmdir {gone} && exec "$0" attach alice -- pwd',
                            nsctl_binary()])
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "/home/alice"

    # relative commands are refused before anything runs
    p = nsctl("attach", "alice", "--", "./x", as_user="alice")
    assert "absolute path" in one_line_error(p)


def test_attach_sigint_is_forwarded(views):
    """Without a terminal the command is in a session of its own: a ^C that reaches
    nsctl is passed on to it."""
    sb = views
    argv = sb._setpriv("alice") + [str(nsctl_binary()), "attach", "alice", "--", "sleep", "100"]
    proc = subprocess.Popen(argv, env=sb.user_env("alice"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # wait until the daemon has started sleep (it runs as alice, child of the daemon)
        wait_for_sleep(True, "alice's sleep to start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout(10))
        assert proc.returncode == 128 + signal.SIGINT, err
        assert not processes_of(2001, "sleep")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_attach_client_gone_hangs_up(views):
    """nsctl killed outright: the daemon sees the status pipe closed and sends the
    command SIGHUP, as a terminal hangup would."""
    sb = views
    argv = sb._setpriv("alice") + [str(nsctl_binary()), "attach", "alice", "--", "sleep", "100"]
    proc = subprocess.Popen(argv, env=sb.user_env("alice"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_sleep(True, "alice's sleep to start")
        proc.kill()
        proc.wait()
        wait_for_sleep(False, "alice's sleep to end with its client")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_for_sleep(running: bool, what: str):
    """Until alice (2001) runs a sleep, or (running=False) none."""
    wait_until(lambda: bool(processes_of(2001, "sleep")) == running, what, interval=0.05)


# ---------------------------------------------------------------------------
# refusals and usage

def test_attach_other_users_namespace_refused(views, nsctl):
    """attach (another user's namespace) is auth_admin: with no agent, refused."""
    p = nsctl("attach", "bob", "--", "id", as_user="alice")
    msg = one_line_error(p)
    assert "attach" in msg
    assert p.stdout == ""


def test_attach_other_users_namespace_allowed_by_polkit_rule(views, nsctl):
    """An administrator's polkit rule lets nsadmin members attach anywhere; the
    command still runs as the caller."""
    sb = views
    sb.set_polkit_rule("50-nsctl-test.rules", """
polkit.addRule(function(action, subject) {
    if (action.id == "org.example.NSManager.attach" && subject.isInGroup("nsadmin") &&
        action.lookup("user") == "alice")
        return polkit.Result.YES;
});
""")
    try:
        p = nsctl("attach", "alice", "--", "sh", "-c", "id -u; readlink /proc/self/ns/mnt", as_user="carol")
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["2003", f"mnt:[{ns_id(sb, 'alice')}]"]
        # the rule names alice only
        one_line_error(nsctl("attach", "bob", "--", "true", as_user="carol"))
    finally:
        sb.set_polkit_rule("50-nsctl-test.rules", None)


def test_attach_no_such_namespace(views, nsctl):
    msg = one_line_error(nsctl("attach", "carol", "--", "true", as_user="carol"))
    assert "carol" in msg
    one_line_error(nsctl("attach", "carol", "--", "true"))
    one_line_error(nsctl("attach", "nosuchuser", "--", "true", as_user="alice"))


def daemons_refusal(sb, user, method, signature, *args, names):
    """The message of the daemon's refusal of method(*args) called by `user` ("root" too) as
    nsctl calls it (no interactive authorization: nsctl's standard input is no terminal),
    after checking the refusal is one of `names`."""
    r = call_as(sb, user, method, signature, *args)
    assert r.get("error") in names, f"{user}: {method}{args}: expected {' or '.join(names)}, got {r}"
    assert r["message"], r
    return r["message"]


def test_other_refusals_are_one_line(views, nsctl):
    """Each refusal is one line, and it is the refusal of what was asked: the daemon's own
    message for the call the verb makes (whose name is checked on the bus), or nsctl's for a
    user NSS does not know; and the refused change did not happen."""
    sb = views
    for argv, call in ((("status", "carol"), ("GetNamespace", "s", "carol")),
                       (("mounts", "carol"), ("GetMounts", "s", "carol"))):
        want = daemons_refusal(sb, "root", *call, names=(E_NO_SUCH_NAMESPACE,))
        assert one_line_error(nsctl(*argv)) == want, argv
    assert one_line_error(nsctl("create", "nosuchuser")) == "Unknown user 'nosuchuser'."
    # changes need authorization: alice may not remove bob's namespace
    want = daemons_refusal(sb, "alice", "RemoveNamespace", "s", "bob", names=(E_INTERACTIVE_AUTHORIZATION_REQUIRED,))
    line = one_line_error(nsctl("remove", "bob", as_user="alice"))
    assert line.startswith(want + " ") and "No polkit agent can ask for a password here" in line, line
    want = daemons_refusal(sb, "root", "SetPropagation", "ssst", "alice", "relative/path", "slave", 0,
                           names=(E_INVALID_PATH,))
    assert one_line_error(nsctl("propagation", "alice", "relative/path", "slave")) == want
    assert sorted(str(n[0]) for n in sb.manager().ListNamespaces()) == ["alice", "bob"]


def test_bare_nsctl_lists(views, nsctl):
    """As loginctl: no command is `list` (options included)."""
    p = nsctl()
    assert p.returncode == 0, p.stderr
    assert p.stdout == nsctl("list").stdout
    assert [line.split()[0] for line in p.stdout.splitlines()[1:3]] == ["alice", "bob"]
    assert json.loads(nsctl("--json").stdout) == json.loads(nsctl("list", "--json").stdout)


def test_uid_wherever_a_user_name(views, manager, nsctl):
    """USER may be a UID, as in loginctl: the same answers as by name, for reading and
    changing verbs alike, also as a user."""
    for args in (["status", "{}"], ["status", "--json", "{}"], ["mounts", "--json", "{}"]):
        by_uid = nsctl(*[a.format("2001") for a in args])
        assert by_uid.returncode == 0, by_uid.stderr
        assert by_uid.stdout == nsctl(*[a.format("alice") for a in args]).stdout, args
    assert nsctl("linger", "2002", "yes").returncode == 0
    assert any(str(u) == "bob" and str(state) == "lingering" for u, _, state, _ in manager.ListNamespaces())
    assert json.loads(nsctl("status", "--json", "2002").stdout)["linger"]
    assert nsctl("create", "2003").returncode == 0
    assert "carol" in [str(u) for u, *_ in manager.ListNamespaces()]
    assert nsctl("propagation", "2003", "/mnt", "private").returncode == 0
    assert nsctl("status", "2001", as_user="alice").returncode == 0


def test_unknown_user_is_unknown(views, nsctl):
    """A name NSS does not know is a typo, not a user without a namespace."""
    assert one_line_error(nsctl("status", "alcie")) == "Unknown user 'alcie'."
    assert one_line_error(nsctl("bind", "alcie", "/srv", "/srv")) == "Unknown user 'alcie'."
    assert one_line_error(nsctl("status", "4242")) == "No user has UID 4242."
    # a user NSS knows, without a namespace, is told so by the daemon
    assert "alcie" not in one_line_error(nsctl("status", "carol"))
    assert "carol" in one_line_error(nsctl("status", "carol"))


def test_no_daemon_says_how_to_check(instance, nsctl):
    """No daemon on the bus (and none the bus could start): what to check, not D-Bus's
    'was not provided by any .service files'."""
    msg = one_line_error(nsctl("list"))
    assert "nsmanagerd is not running" in msg and "systemctl status nsmanagerd" in msg, msg
    assert "busctl status org.example.NSManager" in msg and ".service files" not in msg, msg


def test_polkit_without_a_terminal(views, nsctl, polkit_rules):
    """alice may create a namespace only as an administrator, and polkit would ask for the
    password; without a terminal nobody can be asked: nsctl says so and what to do, instead
    of 'authentication failed or was dismissed'."""
    msg = one_line_error(nsctl("create", "carol", as_user="alice"))
    assert "No polkit agent can ask for a password here (standard input is not a terminal)" in msg, msg
    assert "sudo" in msg and "--ask-password" in msg and "dismissed" not in msg, msg
    msg = one_line_error(nsctl("--no-ask-password", "create", "carol", as_user="alice"))
    assert "--no-ask-password was given" in msg and "--ask-password where" not in msg, msg
    # polkit's plain "no" stays a plain refusal
    polkit_rules("no-alice", """polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage" && subject.user == "alice")
            return polkit.Result.NO;
    });""")
    msg = one_line_error(nsctl("create", "carol", as_user="alice"))
    assert "Not authorized" in msg and "polkit agent" not in msg, msg


@pytest.mark.parametrize("args", [
    ["bogus"],
    ["attach"],
    ["list", "extra"],
    ["status"],
    ["status", "a", "b"],
    ["mounts", "alice", "bob"],
    ["propagation", "/mnt", "sideways"],
    ["linger", "alice", "maybe"],
    ["bind", "alice", "/srv"],
    ["list", "--graph"],
    ["create", "alice", "--json"],
    ["mounts", "--json", "--graph"],
    ["--no-such-option", "list"],
    ["attach", "alice", "sh", "-c", "true"],   # options of COMMAND need "--"
    ["list", "--json=bad"],                    # a value the option does not know
    ["mounts", "--graph=yes"],                 # a value for an option that takes none
    ["-r", "list"],                            # a short option of another verb
    ["bind", "alice", "/srv", "/mnt/x", "--recursive"],
    ["propagation", "alice", "/mnt", "shared", "--read-only"],
    ["status", ""],                            # the host is "" only for share, propagation
    ["unmount", "alice"],
    ["unmount", "alice", "/mnt", "extra"],
    ["unmount", "alice", "/mnt", "--recursive"],   # unmount's flag is --detach
    ["bind", "alice", "/srv", "/mnt/x", "--detach"],
    ["reload", "extra"],
    ["reload", "--json"],
])
def test_bad_usage(views, nsctl, args):
    p = nsctl(*args)
    assert p.returncode == 2, f"{args}: exit {p.returncode}, {p.stderr!r}"
    assert "Usage:" in p.stderr
    assert p.stdout == ""


def test_help_and_version(nsctl, sandbox):
    p = nsctl("--help")
    assert p.returncode == 0
    for verb in ("list", "status", "mounts", "create", "remove", "attach", "share", "enslave",
                 "propagation", "bind", "unmount", "linger", "reload"):
        assert re.search(rf"^ {verb}\b", p.stdout, re.M), verb
        q = nsctl(verb, "--help")
        assert q.returncode == 0 and f"nsctl {verb}" in q.stdout, verb
    p = nsctl("--version")
    assert p.returncode == 0 and re.fullmatch(r"nsctl \S+\n", p.stdout)


def _help_options(text):
    """The long options the Options: section of an nsctl --help lists."""
    section = text.split("\nOptions:\n", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^ (?:-\w,|   ) --([a-z-]+)", section, re.M))


def test_help_completion_and_man_page_agree(nsctl):
    """--help is made from nsctl's verb and option tables; the bash completion and the man
    page are written by hand and must name the same verbs and options."""
    text = nsctl("--help").stdout
    commands = text.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    verbs = re.findall(r"^ ([a-z]+)\b", commands, re.M)
    assert "list" in verbs and "reload" in verbs
    options = _help_options(text)
    per_verb = {v: _help_options(nsctl(v, "--help").stdout) for v in verbs}
    common = set.intersection(*per_verb.values())
    assert {"help", "version", "no-pager"} <= common
    assert set.union(*per_verb.values()) == options

    comp = (REPO / "completion/nsctl.bash").read_text()
    assert re.search(r"local verbs='([^']*)'", comp).group(1).split() == verbs
    comp_common = re.search(r"local common='([^']*)'", comp).group(1).split()
    assert {o[2:] for o in comp_common if o.startswith("--")} == common - {"version"}
    comp_opts = dict(re.findall(r"\[(\w+)\]='([^']*)'", comp))
    for v in verbs:
        assert {o[2:] for o in comp_opts.get(v, "").split()} == per_verb[v] - common, v
    top = re.search(r'compgen -W "\$common ([^"]*)"', comp).group(1).split()
    assert {o[2:] for o in top if o.startswith("--")} == options - common | {"version"}

    man = (REPO / "man/nsctl.1").read_text()
    man_commands = man.split("\n.SH COMMANDS\n", 1)[1].split("\n.SH ", 1)[0]
    man_options = man.split("\n.SH OPTIONS\n", 1)[1].split("\n.SH ", 1)[0]
    for v in verbs:
        assert re.search(rf"^\.B[IR]? {v}\b", man_commands, re.M), f"nsctl.1 lacks the command {v}"
    for o in options:
        assert "\\-\\-" + o.replace("-", "\\-") in man_options, f"nsctl.1 lacks the option --{o}"


def _complete(*words, env=None):
    """What the bash completion offers for the command line `words` (the last one is the
    word under the cursor), with the sandbox's nsctl first in PATH."""
    script = f'source {REPO / "completion/nsctl.bash"}; COMP_WORDS=(nsctl "$@"); COMP_CWORD=$#; ' \
             '_nsctl; printf "%s\\n" "${COMPREPLY[@]}"'
    env = dict(os.environ, PATH=f"{nsctl_binary().parent}:{os.environ.get('PATH', '/usr/bin:/bin')}", **(env or {}))
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", *words],
                       capture_output=True, text=True, timeout=timeout(30), env=env)
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def test_completion(views):
    assert _complete("un") == {"unmount"}
    assert _complete("re") == {"remove", "reload"}
    assert _complete("unmount", "alice", "/home/alice", "--") >= {"--detach", "--no-pager"}
    assert "--detach" not in _complete("bind", "--")
    assert _complete("unmount", "") == {"alice", "bob"}     # the users with a namespace
    assert _complete("-H", "somehost", "un") == {"unmount"}   # -H's argument is no verb
    assert _complete("--machine", "box", "unmount", "--") >= {"--detach", "--host", "--machine"}


# ---------------------------------------------------------------------------
# read verbs: tables, JSON, graph

def test_list_and_status_tables(views, nsctl):
    p = nsctl("list", as_user="dave")   # reading is open to everyone
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["USER", "UID", "STATE", "SESSIONS", "LINGER", "MOUNTS", "CREATED"]
    assert lines[1].split()[:5] == ["alice", "2001", "active", "0", "no"]
    assert lines[2].split()[:2] == ["bob", "2002"]
    assert lines[-1] == "2 namespaces listed."
    assert "\x1b[" not in p.stdout   # no colours without a terminal

    p = nsctl("status", "alice")
    assert p.returncode == 0, p.stderr
    assert "alice (2001)" in p.stdout
    assert re.search(rf"Namespace: mnt:\[{ns_id(views, 'alice')}\]", p.stdout)
    assert re.search(r"State: active", p.stdout)


def _namespace_json(sb, user, uid, state, path):
    props = sb.properties(str(path), "org.example.NSManager.Namespace")
    return {
        "user": str(user), "uid": int(uid), "gid": int(props["GID"]), "state": str(state),
        "object": str(path), "root": str(props["Root"]), "sessions": [str(s) for s in props["Sessions"]],
        "linger": bool(props["Linger"]), "mount_namespace_id": int(props["MountNamespaceId"]),
        "timestamp": int(props["Timestamp"]), "n_mounts": int(props["NMounts"]),
    }


def test_json_matches_dbus(views, manager, nsctl):
    sb = views
    manager.SetLinger("bob", True)

    p = nsctl("list", "--json")
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    want = [_namespace_json(sb, *entry) for entry in manager.ListNamespaces()]
    assert got == {"namespaces": want}

    p = nsctl("status", "--json=short", "bob")
    assert p.returncode == 0, p.stderr
    assert len(p.stdout.splitlines()) == 1
    state = next(str(s) for u, _, s, _ in manager.ListNamespaces() if u == "bob")
    assert json.loads(p.stdout) == _namespace_json(sb, "bob", 2002, state, ns_path("bob"))

    for user in ("alice", ""):
        args = ["mounts", "--json"] + ([user] if user else [])
        p = nsctl(*args)
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["namespace"] == user
        want = [(int(a), int(b), int(c), int(d), str(e), str(f), str(g), str(h))
                for a, b, c, d, e, f, g, h in manager.GetMounts(user)]
        got = [(m["mount_id"], m["parent_id"], m["peer_group"], m["master_group"], m["target"],
                m["source"], m["fstype"], m["propagation"]) for m in doc["mounts"]]
        assert got == want

    # where /mnt of alice propagates: the host and bob hold peers of it
    doc = json.loads(nsctl("mounts", "--json", "alice").stdout)
    mnt = next(m for m in doc["mounts"] if m["target"] == "/mnt")
    assert {(t["namespace"], t["kind"]) for t in mnt["propagates_to"]} == {("", "peer"), ("bob", "peer")}
    root = next(m for m in doc["mounts"] if m["target"] == "/")
    if root["master_group"]:
        assert root["receives_from"] == [""]

    # after alice's /mnt is enslaved, it receives from the host and bob but sends nowhere
    assert nsctl("enslave", "alice", "/mnt").returncode == 0
    doc = json.loads(nsctl("mounts", "--json", "alice").stdout)
    mnt = next(m for m in doc["mounts"] if m["target"] == "/mnt")
    assert mnt["propagates_to"] == [] and set(mnt["receives_from"]) == {"", "bob"}
    host = json.loads(nsctl("mounts", "--json").stdout)
    mnt = next(m for m in host["mounts"] if m["target"] == "/mnt")
    assert {(t["namespace"], t["kind"]) for t in mnt["propagates_to"]} == {("alice", "slave"), ("bob", "peer")}


def test_mounts_tree(views, nsctl):
    p = nsctl("mounts", "alice")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["TARGET", "SOURCE", "FSTYPE", "PROPAGATION", "PEER", "MASTER", "PROPAGATES", "TO"]
    assert lines[1].startswith("/ ")
    assert any(re.match(r"[├└]─/", line) for line in lines[2:])
    mnt = next(line for line in lines if re.match(r"[├└]─/mnt ", line))
    assert "(host)" in mnt and "bob" in mnt


def test_mounts_as_findmnt(views, nsctl):
    """What findmnt users reach for: -o/--output picks and orders the columns, --real hides
    the pseudo file systems (libmount's list, as findmnt --real), -t/--types keeps the types
    listed (libmount's matching: "noproc" too), TARGET keeps that mount and what is below it
    (as a tree rooted there), and --json keeps the same mounts; bad columns and arguments are
    usage errors."""
    sb = views
    sb.mount_tmpfs("/mnt/nsm-findmnt", view="alice")
    sb.mount_tmpfs("/mnt/nsm-findmnt/below", view="alice")

    p = nsctl("mounts", "alice", "-o", "target,fstype,id")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["TARGET", "FSTYPE", "ID"], lines[0]

    def targets(out):
        return [re.sub(r"^[\s│├└─]*", "", line).split()[0] for line in out.splitlines()[1:]]

    assert all(len(re.sub(r"^[\s│├└─]*", "", line).split()) == 3 for line in lines[1:]), p.stdout

    all_targets = targets(nsctl("mounts", "alice").stdout)
    assert sorted(all_targets) == sorted(m.target for m in sb.mountinfo(view="alice")), all_targets

    def findmnt(*args):
        p = sb.in_view("alice", ["findmnt", "-rn", "-o", "TARGET", *args])
        assert p.returncode in (0, 1), p.stderr
        return sorted(p.stdout.splitlines())

    # findmnt itself, in alice's view, is the measure
    real = targets(nsctl("mounts", "alice", "--real", "-o", "TARGET").stdout)
    assert real and sorted(real) == findmnt("--real"), real
    assert "/proc" not in real and "/" in real
    for types in ("tmpfs", "notmpfs,proc", "ext4"):
        shown = targets(nsctl("mounts", "alice", "-t", types, "-o", "TARGET").stdout)
        assert sorted(shown) == findmnt("-t", types), (types, shown)

    p = nsctl("mounts", "alice", "/mnt/nsm-findmnt", "-o", "TARGET,FSTYPE")
    assert p.returncode == 0, p.stderr
    assert [line.split() for line in p.stdout.splitlines()[1:]] == [["/mnt/nsm-findmnt", "tmpfs"],
                                                                    ["└─/mnt/nsm-findmnt/below", "tmpfs"]], p.stdout
    p = nsctl("mounts", "alice", "/mnt/nsm-findmnt/", "--json")
    assert p.returncode == 0, p.stderr
    assert [m["target"] for m in json.loads(p.stdout)["mounts"]] == ["/mnt/nsm-findmnt", "/mnt/nsm-findmnt/below"]
    p = nsctl("mounts", "alice", "--real", "--json")
    assert {m["target"] for m in json.loads(p.stdout)["mounts"]} == set(real)
    # the host's, by TARGET alone: /mnt is shared, alice's mounts there are the host's too
    p = nsctl("mounts", "/mnt", "-o", "TARGET")
    assert p.returncode == 0, p.stderr
    shown = targets(p.stdout)
    assert shown[0] == "/mnt" and "/mnt/nsm-findmnt/below" in shown, p.stdout
    assert all(t == "/mnt" or t.startswith("/mnt/") for t in shown), p.stdout

    for bad in (["alice", "-o", "TARGET,NOPE"], ["alice", "mnt"], ["alice", "/mnt", "--graph"],
                ["alice", "--real", "--follow"]):
        p = nsctl("mounts", *bad)
        assert p.returncode == 2, (bad, p.stdout, p.stderr)
    assert "unknown column 'NOPE'" in nsctl("mounts", "alice", "-o", "TARGET,NOPE").stderr


def test_mounts_options_and_from(views, nsctl, manager):
    """-o OPTIONS,FROM and --json's "options" and "from" are GetMountsEx's options and origin
    of each mount (GetMounts has neither; the ids shown stay GetMounts's): a tmpfs made nosuid
    and nodev in the view says so, a host mount is "host", a BindMount "daemon"."""
    sb = views
    sb.mount_tmpfs("/mnt/nsm-opts", view="alice")
    src = sb.instance / "opts-src"
    src.mkdir()
    manager.BindMount("alice", str(src), "/home/alice/opts-bind", 0x2)
    ex = {str(m[5]): (str(m[10]), str(m[13])) for m in manager.GetMountsEx("alice")}
    assert ex["/home/alice/opts-bind"][1] == "daemon" and ex["/"][1] == "host", ex

    p = nsctl("mounts", "alice", "-o", "TARGET,OPTIONS,FROM")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["TARGET", "OPTIONS", "FROM"], lines[0]
    rows = {}
    for line in lines[1:]:
        target, options, origin = re.sub(r"^[\s│├└─]*", "", line).split()
        rows[target] = (options, origin)
    assert set(rows) == set(ex), p.stdout
    assert rows == ex, p.stdout
    assert {"nosuid", "nodev"} <= set(rows["/mnt/nsm-opts"][0].split(",")), rows["/mnt/nsm-opts"]

    doc = json.loads(nsctl("mounts", "alice", "--json").stdout)
    assert {m["target"]: (m["options"], m["from"]) for m in doc["mounts"]} == ex
    want_ids = sorted(int(m[0]) for m in manager.GetMounts("alice"))
    assert sorted(m["mount_id"] for m in doc["mounts"]) == want_ids


def test_status_lists_the_processes_of_the_view(views, nsctl):
    """nsctl status USER lists the processes in the view (ListProcesses: those whose ns/mnt is
    the view's), for root and the view's user; bob is refused alice's list, and his status
    of alice leaves the processes out. A command name is text the process chose: escaped."""
    sb = views
    hostile = "import os,time; open('/proc/self/comm','wb').write(b'\\x1b]0;pwn\\x07'); time.sleep(120)"
    start = ("sleep 120 >/dev/null 2>&1 </dev/null & echo $!; "
             "python3 -c \"$1\" >/dev/null 2>&1 </dev/null & echo $!")
    p = sb.in_view("alice", ["sh", "-c", start, "sh", hostile], as_user="alice")
    assert p.returncode == 0, p.stderr
    pids = [int(x) for x in p.stdout.split()]
    try:
        alice_uid = TEST_USERS["alice"].uid
        wanted = {pids[0]: "sleep", pids[1]: "\\x1b]0;pwn\\x07"}
        # the python one sets its name once it runs
        deadline = time.monotonic() + timeout(30)
        while True:
            listed = call_as(sb, "root", "ListProcesses", "s", "alice")
            assert "ok" in listed, listed
            got = {int(pid): (int(uid), str(comm)) for pid, uid, comm, _ in listed["ok"][0]}
            if all(got.get(pid, (0, ""))[1] == comm for pid, comm in wanted.items()) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for pid, comm in wanted.items():
            assert got.get(pid) == (alice_uid, comm), (pid, got)
        assert os.getpid() not in got    # the test runs on the host, not in the view

        own = call_as(sb, "alice", "ListProcesses", "s", "alice")
        assert "ok" in own, own
        assert {int(x[0]) for x in own["ok"][0]} >= set(pids)
        refused = call_as(sb, "bob", "ListProcesses", "s", "alice")
        assert refused.get("error") in ("org.freedesktop.DBus.Error.AccessDenied",
                                        E_INTERACTIVE_AUTHORIZATION_REQUIRED), refused

        for who in ("root", "alice"):
            p = nsctl("status", "alice") if who == "root" else nsctl_as(sb, "alice", ["status", "alice"])
            assert p.returncode == 0, p.stderr
            assert "Processes:" in p.stdout, p.stdout
            line = next(x for x in p.stdout.splitlines() if re.search(rf"\b{pids[1]}\b", x))
            assert "\x1b" not in line and "\\x1b]0;pwn\\x07" in line and "alice" in line, line
            assert re.search(rf"\b{pids[0]} +alice +sleep\b", p.stdout), p.stdout
        p = nsctl_as(sb, "bob", ["status", "alice"])
        assert p.returncode == 0, p.stderr
        assert "Processes:" not in p.stdout and str(pids[0]) not in p.stdout, p.stdout
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_mounts_graph_is_valid_dot(views, nsctl):
    assert shutil.which("dot"), "dot is missing: tools/deps installs graphviz"
    for args in (["mounts", "--graph"], ["mounts", "--graph", "alice"]):
        p = nsctl(*args)
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("digraph")
        assert "cluster" in p.stdout and "peer group" in p.stdout
        svg = subprocess.run(["dot", "-Tsvg"], input=p.stdout, capture_output=True, text=True)
        assert svg.returncode == 0, svg.stderr
        assert "<svg" in svg.stdout


def test_output_escapes_control_characters(views, nsctl, made_in_home):
    """A mount point is a name anybody can choose (fusermount3 lets every user pick one, and
    -o fsname= the source). Shown raw, ESC and BEL would retitle root's terminal and clear it:
    the daemon escapes C0, C1 and DEL (docs/interface.md, "Text from the kernel or a user"),
    and nsctl shows the same in the tree, the graph, --json and errors."""
    name = "\x1b]0;PWNED\x07\x1b[2J\x7f\u009bx"
    shown = "\\x1b]0;PWNED\\x07\\x1b[2J\\x7f\\xc2\\x9bx"
    target = f"/home/alice/{name}"
    made_in_home(target)
    os.mkdir(target)
    p = nsctl("attach", "alice", "--", "mount", "-t", "tmpfs", "-o", "size=1m", f"src{name}", target)
    assert p.returncode == 0, p.stderr

    def no_controls(text):
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]", text), repr(text)

    tree = nsctl("mounts", "alice")
    assert tree.returncode == 0, tree.stderr
    no_controls(tree.stdout)
    row = next(line for line in tree.stdout.splitlines() if "PWNED" in line)
    assert f"/home/alice/{shown}" in row and f"src{shown}" in row, row

    graph = nsctl("mounts", "--graph", "alice")
    assert graph.returncode == 0, graph.stderr
    no_controls(graph.stdout)
    svg = subprocess.run(["dot", "-Tsvg"], input=graph.stdout, capture_output=True, text=True)
    assert svg.returncode == 0, svg.stderr

    js = nsctl("mounts", "--json", "alice")
    assert js.returncode == 0, js.stderr
    no_controls(js.stdout)
    assert f"/home/alice/{shown}" in [m["target"] for m in json.loads(js.stdout)["mounts"]]

    # the daemon's message quotes the path it refuses
    msg = one_line_error(nsctl("unmount", "alice", f"{target}/none"))
    no_controls(msg)
    assert shown in msg, msg


# ---------------------------------------------------------------------------
# verbs that change things

def test_change_verbs(daemon, manager, nsctl):
    sb = daemon
    assert nsctl("create", "carol").returncode == 0
    assert nsctl("create", "carol").returncode == 0           # idempotent
    assert [str(u) for u, *_ in manager.ListNamespaces()] == ["carol"]

    assert nsctl("linger", "carol", "yes").returncode == 0
    assert bool(sb.properties(ns_path("carol"), "org.example.NSManager.Namespace")["Linger"])
    assert nsctl("linger", "carol", "no").returncode == 0
    assert not bool(sb.properties(ns_path("carol"), "org.example.NSManager.Namespace")["Linger"])

    def propagation_of(path):
        return next(str(m[7]) for m in manager.GetMounts("carol") if str(m[4]) == path)

    assert nsctl("propagation", "carol", "/mnt", "private").returncode == 0
    assert propagation_of("/mnt") == "private"
    assert nsctl("share", "carol", "/mnt").returncode == 0
    assert propagation_of("/mnt") == "shared"
    assert nsctl("enslave", "carol", "/mnt").returncode == 0
    assert "slave" in propagation_of("/mnt")

    assert nsctl("remove", "carol").returncode == 0
    assert list(manager.ListNamespaces()) == []


def _mount_targets(manager, user):
    return [str(m[4]) for m in manager.GetMounts(user)]


@pytest.fixture
def made_in_home():
    """Directories a test has nsctl bind --mkdir create under /home: the sandbox's /home is
    the same file system in every view and lives as long as the session, so they are
    removed at the end (other tests expect the homes as the sandbox made them)."""
    made = []
    yield made.append
    for d in reversed(made):
        with contextlib.suppress(OSError):
            os.rmdir(d)


def test_unmount(views, manager, nsctl, made_in_home):
    """unmount USER PATH: a busy mount (one with a mount below it) is refused as busy,
    --detach (flags 0x1) takes it away with what is below it."""
    src = BASE / "nsctl-unmount-src"
    (src / "sub").mkdir(parents=True, exist_ok=True)
    made_in_home("/home/alice/data")
    assert nsctl("bind", "alice", src, "/home/alice/data", "--mkdir").returncode == 0
    assert "/home/alice/data" in _mount_targets(manager, "alice")
    p = nsctl("attach", "alice", "--", "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", "/home/alice/data/sub")
    assert p.returncode == 0, p.stderr

    msg = one_line_error(nsctl("unmount", "alice", "/home/alice/data"))
    assert "busy" in msg
    assert "/home/alice/data/sub" in _mount_targets(manager, "alice")

    p = nsctl("unmount", "alice", "/home/alice/data", "--detach")
    assert p.returncode == 0, p.stderr
    assert (p.stdout, p.stderr) == ("", "")
    targets = _mount_targets(manager, "alice")
    assert "/home/alice/data" not in targets and "/home/alice/data/sub" not in targets

    # a mount without anything below it goes without --detach
    assert nsctl("bind", "alice", src, "/home/alice/data").returncode == 0
    assert nsctl("unmount", "alice", "/home/alice/data").returncode == 0
    assert "/home/alice/data" not in _mount_targets(manager, "alice")


def test_unmount_refusals(views, manager, nsctl):
    assert "root" in one_line_error(nsctl("unmount", "alice", "/"))
    one_line_error(nsctl("unmount", "alice", "/home/alice"))        # not a mount point
    one_line_error(nsctl("unmount", "alice", "home/alice"))         # relative
    one_line_error(nsctl("unmount", "alice", "/mnt/../etc"))        # not normalized
    msg = one_line_error(nsctl("unmount", "carol", "/mnt"))         # no namespace
    assert "User 'carol' has no namespace (not logged in; 'nsctl create carol' makes one)." in msg, msg
    # a user may not take a mount of the host out of their view
    one_line_error(nsctl("unmount", "alice", "/mnt", "--detach", as_user="alice"))
    assert "/mnt" in _mount_targets(manager, "alice")


def test_reload(views, nsctl):
    """reload = ReloadConfig(): new settings for namespaces created afterwards, and one line
    that says so."""
    sb = views
    sb.write_config(ExcludeUsers="carol")
    p = nsctl("reload")
    assert p.returncode == 0, p.stderr
    assert (p.stdout, p.stderr) == ("Configuration reloaded: it applies to namespaces created from now on.\n", "")
    assert "carol" in one_line_error(nsctl("create", "carol"))
    assert nsctl("status", "alice").returncode == 0    # existing namespaces stay

    # a broken file is refused, named, and the configuration in force stays
    sb.write_config(extra="[Manager]\nMinUID=not-a-number\n")
    msg = one_line_error(nsctl("reload"))
    assert "nsmanagerd.conf:" in msg and "not a valid UID" in msg
    assert "carol" in one_line_error(nsctl("create", "carol"))

    # reloading is the administrator's: refused to a user without authorization
    sb.write_config()
    one_line_error(nsctl("reload", as_user="alice"))
    assert "carol" in one_line_error(nsctl("create", "carol"))
    assert nsctl("reload").returncode == 0
    assert nsctl("create", "carol").returncode == 0


# ---------------------------------------------------------------------------
# another machine's daemon: -H over ssh, -M a container

REMOTE = "nsm-remote"          # an ssh_config alias of the loopback sshd
UNREACHABLE = "nsm-unreachable"  # one of a port nobody listens on
# With -H or -M nsctl must not use the local bus: make it unreachable, so that only the
# way through ssh (or the container) can answer.
NO_LOCAL_BUS = {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus_socket"}


@pytest.fixture(scope="session")
def ssh_config_dir(sandbox):
    """A writable copy of /etc/ssh/ssh_config.d over the machine's, made once per session
    and before the test's daemon instance (whose mount check would count it otherwise).
    nsctl -H runs `ssh -xT HOST systemd-stdio-bridge` with no options of ours: a Host block
    there is how an administrator would set up port, key and known host too."""
    assert os.path.isdir("/etc/ssh/ssh_config.d"), "openssh-client's /etc/ssh/ssh_config.d is missing"
    return sandbox.overlay_dir("/etc/ssh/ssh_config.d")


@pytest.fixture
def remote(views, ssh_config_dir):
    """The sandbox reached as another machine: sshd on loopback (tests/sshd.py) with the
    machine's PAM stack, key logins for root and alice, under the alias REMOTE. There
    systemd-stdio-bridge connects to the default system bus, which in the sandbox's mount
    namespace is the sandbox's own, with the test's daemon on it. Yields the Sshd."""
    assert shutil.which("systemd-stdio-bridge"), "systemd-stdio-bridge (package systemd) is missing"
    conf = ssh_config_dir / "nsm-test.conf"
    with Sshd(["root", "alice"]) as server:
        unreachable = server.client_config(UNREACHABLE).replace(f"Port {server.port}\n", f"Port {_closed_port()}\n")
        conf.write_text(server.client_config(REMOTE) + unreachable)
        try:
            yield server
        finally:
            conf.unlink()


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]   # closed again when we return: nobody listens there


def _logins(server, user):
    return len(re.findall(rf"Accepted publickey for {user} ", server.log_text()))


def test_remote_reads(remote, manager, nsctl):
    """list, status and mounts of the sandbox's daemon through ssh, equal to the local
    answers; the local bus is unreachable for these calls."""
    assert one_line_error(nsctl("list", env=NO_LOCAL_BUS)).startswith("Failed to connect to the system bus")
    for args in (["list", "--json"], ["status", "--json", "alice"], ["mounts", "--json", "alice"],
                 ["mounts", "--json"]):
        p = nsctl("-H", REMOTE, *args, env=NO_LOCAL_BUS)
        assert p.returncode == 0, f"{args}: {p.stderr}\n{remote.log_text()}"
        assert json.loads(p.stdout) == json.loads(nsctl(*args).stdout), args
    p = nsctl("--host", f"root@{REMOTE}", "list", env=NO_LOCAL_BUS)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1].split()[:2] == ["alice", "2001"]
    assert "alice (2001)" in nsctl("-H", REMOTE, "status", "alice", env=NO_LOCAL_BUS).stdout
    assert _logins(remote, "root") == 6
    # the completion asks the daemon -H names for its users
    assert _complete("-H", REMOTE, "status", "", env=NO_LOCAL_BUS) == {"alice", "bob"}

    # the daemon's refusals come back as they do locally
    msg = one_line_error(nsctl("-H", REMOTE, "status", "carol", env=NO_LOCAL_BUS))
    assert msg == one_line_error(nsctl("status", "carol"))


def test_remote_changes(remote, manager, nsctl, made_in_home):
    """Verbs that change things, as root over ssh."""
    src = BASE / "nsctl-remote-src"
    src.mkdir(exist_ok=True)
    made_in_home("/home/carol/data")
    for args in (["create", "carol"], ["linger", "carol", "yes"],
                 ["bind", "carol", src, "/home/carol/data", "--mkdir"]):
        p = nsctl("-H", REMOTE, *args, env=NO_LOCAL_BUS)
        assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), f"{args}: {p.stderr}"
    assert "carol" in [str(u) for u, *_ in manager.ListNamespaces()]
    assert "/home/carol/data" in _mount_targets(manager, "carol")
    assert nsctl("-H", REMOTE, "unmount", "carol", "/home/carol/data", env=NO_LOCAL_BUS).returncode == 0
    assert "/home/carol/data" not in _mount_targets(manager, "carol")
    assert nsctl("-H", REMOTE, "reload", env=NO_LOCAL_BUS).returncode == 0
    assert nsctl("-H", REMOTE, "remove", "carol", env=NO_LOCAL_BUS).returncode == 0
    assert "carol" not in [str(u) for u, *_ in manager.ListNamespaces()]

    # as alice over ssh: reading is open, changing bob's namespace is refused by the
    # remote daemon (polkit there; no agent can answer from here), and nothing changes
    assert nsctl("-H", f"alice@{REMOTE}", "list", env=NO_LOCAL_BUS).returncode == 0
    one_line_error(nsctl("-H", f"alice@{REMOTE}", "remove", "bob", env=NO_LOCAL_BUS))
    assert "bob" in [str(u) for u, *_ in manager.ListNamespaces()]


def test_remote_refusals(remote, nsctl):
    """attach cannot work over ssh: refused as bad usage (exit 2) before any connection;
    a host that cannot be reached is a failure (exit 1)."""
    before = _logins(remote, "root")
    for args in (["attach", "alice"], ["attach", "alice", "--", "true"]):
        p = nsctl("-H", REMOTE, *args, env=NO_LOCAL_BUS)
        assert p.returncode == 2, p.stderr
        assert "cannot work over --host" in p.stderr and f"ssh -t {REMOTE} nsctl attach" in p.stderr
        assert "Usage:" in p.stderr and p.stdout == ""
    assert _logins(remote, "root") == before

    p = nsctl("-H", UNREACHABLE, "list", env=NO_LOCAL_BUS)
    assert p.returncode == 1 and p.stdout == ""
    assert "Connection refused" in p.stderr, p.stderr

    for args in (["-H", "", "list"], ["list", "-H"], ["list", "--machine="]):
        p = nsctl(*args)
        assert p.returncode == 2 and "Usage:" in p.stderr, f"{args}: {p.stderr}"


def test_machine(views, nsctl):
    """-M CONTAINER: libsystemd finds a container's leader in systemd-machined's
    /run/systemd/machines/NAME and connects to the system bus inside it. These test
    machines run no machined (PID 1 is not systemd; the booted Debian image of
    test_nspawn.py has no systemd-container), so no named container can be reached here:
    what runs here is ".host" (libsystemd's name for this machine's own bus), an unknown
    container, and the refusal of attach."""
    p = nsctl("-M", ".host", "list", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == json.loads(nsctl("list", "--json").stdout)

    msg = one_line_error(nsctl("--machine", "nsm-no-such-container", "list"))
    assert "nsm-no-such-container" in msg and "not running" in msg

    p = nsctl("-M", ".host", "attach", "alice", "--", "true")
    assert p.returncode == 2 and "cannot work over --machine" in p.stderr and "machinectl shell" in p.stderr


# ---------------------------------------------------------------------------
# attach under a real terminal

class Tmux:
    def __init__(self, sb, user, width=100, height=40):
        self.sb = sb
        self.sock = str(BASE / f"tmux-{os.getpid()}")
        self.env = sb.user_env(user, {"TERM": "xterm", "PS1": "OUTER$ "})
        shell = sb._setpriv(user) + ["env", "-i"] + [f"{k}={v}" for k, v in self.env.items()] + \
            ["bash", "--norc", "--noprofile"]
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), *shell)
        try:
            self.wait_for(r"OUTER\$$")
        except BaseException:
            self.close()
            raise

    def tmux(self, *args):
        p = subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True, timeout=timeout(10))
        assert p.returncode == 0, f"tmux {args}: {p.stderr}"
        return p.stdout

    def send(self, *keys):
        self.tmux("send-keys", "-t", "t", *keys)

    def line(self, text):
        self.send("-l", text)
        self.send("Enter")

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "t")

    def wait_for(self, pattern, wait=10):
        def text():
            # capture-pane drops trailing blanks: "PROMPT$ " reads "PROMPT$"
            return "\n".join(line.rstrip() for line in self.screen().splitlines()).rstrip("\n")

        def shown():
            now = text()
            return now if re.search(pattern, now, re.M) else None
        return wait_until(shown, f"{pattern!r} on the terminal", wait, interval=0.05, diag=text)

    def close(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True, timeout=timeout(10))
        if os.path.exists(self.sock):
            os.unlink(self.sock)


@pytest.fixture
def terminal(views):
    assert shutil.which("tmux"), "tmux is missing: tools/deps installs it"
    t = Tmux(views, "alice")
    yield t
    t.close()


def test_attach_interactive(views, terminal):
    t = terminal
    t.line(f"{nsctl_binary()} attach alice; echo RC=$?")
    t.wait_for(r"\$$")    # whatever prompt alice's bash sets up (bash.bashrc may set PS1)
    t.line("PS1='INNER$ '")
    t.wait_for(r"^INNER\$$")

    # our own pty, with the terminal's size
    t.line("tty; stty size")
    t.wait_for(r"^/dev/pts/\d+\n40 100\nINNER\$$")
    t.line("readlink /proc/self/ns/mnt; id -un")
    t.wait_for(rf"^mnt:\[{ns_id(views, 'alice')}\]\nalice\nINNER\$$")

    # the window size follows the terminal's
    t.tmux("resize-window", "-t", "t", "-x", "120", "-y", "30")
    t.line("stty size")
    t.wait_for(r"^30 120\nINNER\$$")

    # ^C interrupts the command in the namespace, not nsctl
    t.line("sleep 100")
    wait_for_sleep(True, "alice's sleep to start")
    t.send("C-c")
    t.wait_for(r"^INNER\$$")
    assert not processes_of(2001, "sleep")
    t.line("echo status=$? # first")
    t.wait_for(r"^status=130\nINNER\$$")

    # ^Z stops it: job control works on the pty
    t.line("sleep 100")
    wait_for_sleep(True, "alice's sleep to start")
    t.send("C-z")
    t.wait_for(r"Stopped\s+sleep 100\nINNER\$$")
    assert processes_of(2001, "sleep")
    t.line("fg")                # and fg brings it back to the foreground
    t.wait_for(r"^INNER\$ fg\nsleep 100$")
    t.send("C-c")
    t.wait_for(r"^INNER\$$")
    t.line("echo status=$?")
    t.wait_for(r"^status=130\nINNER\$$")

    # exit leaves nsctl with the shell's status, and the terminal as it was
    t.line("exit 3")
    t.wait_for(r"^RC=3\nOUTER\$$")
    t.line("stty -a | grep -o -- '-\\?icanon\\b' | head -1; stty -a | grep -o -- '-\\?echo\\b' | head -1")
    t.wait_for(r"^icanon\necho\nOUTER\$$")
