# SPDX-License-Identifier: LGPL-2.1-or-later
"""Manager.Attach in the sandbox, where systemd is not PID 1 and the daemon forks the
command itself (docs/attach.md): who the command runs as, AttachTasksMax=, its pipes and
pty, and its refusals (each named, before anything starts). At the end, the daemon's use of
the bus where systemd is PID 1 (attach-unit.c), against tests/helpers/systemd-standin.c, the part of
systemd's bus API it calls: its match rules and its calls in flight (tests/test_nspawn_attach.py
has the real systemd).

The credentials race: alice sends Attach and, while the call is on its way,
execs the setgid unix_chkpwd (group shadow) with her bus connection still open. A daemon
that takes the caller's groups from /proc when it acts (sd-bus's SD_BUS_CREDS_AUGMENT)
then starts her command with gid shadow. The race is made deterministic with the real
polkitd: a polkit rule for attach-own waits (polkit.spawn) until the calling process runs
with group shadow before it says yes, and the daemon acts only after that answer. alice's
client (CLIENT below) is a small D-Bus client on a raw socket, so that it can send the call
(OpenAttach: users send no fds) and exec without waiting for the reply; the command writes
what it learnt into a file. The command must get alice's groups from NSS, every time."""

import grp
import json
import os
import pwd
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import dbus
import pytest

from caller import call_as
from helpers import (E_INVALID_ARGS, E_INVALID_PATH, E_NO_SUCH_NAMESPACE, create, daemon_match_rules, expect_error,
                     extra_users)
from sandbox import SYSTEM_BUS_SOCKET, build_dir, nsctl_binary, timeout

UNIX_CHKPWD = next((p for p in ("/usr/sbin/unix_chkpwd", "/sbin/unix_chkpwd") if Path(p).exists()), None)

# argv: socket path, user, unix_chkpwd, the file the command writes its ids into. stdin:
# unix_chkpwd's, kept open by the test so that it waits for a password.
CLIENT = r'''
import os, socket, struct, sys

sock_path, user, unix_chkpwd, OUT = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


class Writer:
    # D-Bus marshalling, little endian, of the few types the calls need.
    def __init__(self):
        self.b = b""

    def align(self, n):
        self.b += b"\0" * (-len(self.b) % n)

    def byte(self, v):
        self.b += bytes([v])

    def u32(self, v):
        self.align(4)
        self.b += struct.pack("<I", v)

    def u64(self, v):
        self.align(8)
        self.b += struct.pack("<Q", v)

    def string(self, s):
        e = s.encode()
        self.u32(len(e))
        self.b += e + b"\0"

    def signature(self, s):
        e = s.encode()
        self.byte(len(e))
        self.b += e + b"\0"

    def strv(self, items):
        self.u32(0)
        at, start = len(self.b) - 4, len(self.b)
        for s in items:
            self.string(s)
        self.b = self.b[:at] + struct.pack("<I", len(self.b) - start) + self.b[at + 4:]


def method_call(serial, path, interface, member, destination, signature="", body=b"", n_fds=0):
    fields = Writer()
    def field(code, t, write):
        fields.align(8)
        fields.byte(code)
        fields.signature(t)
        write(fields)
    field(1, "o", lambda w: w.string(path))
    field(2, "s", lambda w: w.string(interface))
    field(3, "s", lambda w: w.string(member))
    field(6, "s", lambda w: w.string(destination))
    if signature:
        field(8, "g", lambda w: w.signature(signature))
    if n_fds:
        field(9, "u", lambda w: w.u32(n_fds))
    head = struct.pack("<cBBBIII", b"l", 1, 0, 1, len(body), serial, len(fields.b)) + fields.b
    return head + b"\0" * (-len(head) % 8) + body


def read_message(s):
    def exactly(n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                sys.exit("the bus closed the connection")
            b += chunk
        return b
    head = exactly(16)
    body_len, fields_len = struct.unpack("<I", head[4:8])[0], struct.unpack("<I", head[12:16])[0]
    return head + exactly(fields_len + (-fields_len % 8) + body_len)


def read_line(s):
    line = b""
    while not line.endswith(b"\r\n"):
        chunk = s.recv(1)
        if not chunk:
            sys.exit("the bus closed the connection during authentication")
        line += chunk
    return line.decode()


s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock_path)
s.sendall(b"\0AUTH EXTERNAL " + str(os.geteuid()).encode().hex().encode() + b"\r\n")
assert read_line(s).startswith("OK "), "authentication refused"
s.sendall(b"NEGOTIATE_UNIX_FD\r\n")
assert read_line(s).startswith("AGREE_UNIX_FD"), "the bus does not pass fds"
s.sendall(b"BEGIN\r\n")

hello = method_call(1, "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "org.freedesktop.DBus")
body = Writer()
body.string(user)
body.strv(["sh", "-c", 'id -g > "$1.new"; id -G >> "$1.new"; mv "$1.new" "$1"', "sh", OUT])
body.strv(["PATH=/usr/bin:/bin"])
body.string("/")
body.u64(0)
attach = method_call(2, "/org/example/NSManager", "org.example.NSManager.Manager", "OpenAttach",
                     "org.example.NSManager", "sasasst", body.b)
s.sendall(hello)
read_message(s)
s.sendall(attach)

# The reply is never read: the connection stays open in the setgid program.
os.set_inheritable(s.fileno(), True)
os.execv(unix_chkpwd, [unix_chkpwd, user, "nullok"])
'''

# attach-own for alice: yes, once the calling process runs with group shadow (at most 5 s).
WAIT_FOR_EXEC_RULE = '''
polkit.addRule(function(action, subject) {
    if (action.id == "org.example.NSManager.attach-own" && subject.user == "alice") {
        polkit.spawn(["/bin/sh", "-c",
                      "for i in $(seq 500); do " +
                      "  grep -Eq '^Gid:[[:space:]]+[0-9]+[[:space:]]+%d[[:space:]]' /proc/" + subject.pid + "/status && exit 0; " +
                      "  sleep 0.01; " +
                      "done; exit 0"]);
        return polkit.Result.YES;
    }
});
'''


@pytest.fixture
def alice_view(daemon, manager):
    manager.CreateNamespace("alice")
    return daemon


def attach_after_setgid_exec(sb, user="alice"):
    """One round of the race: (gid, groups) the command wrote."""
    home = Path(pwd.getpwnam(user).pw_dir)
    out = home / f"nsmtest-ids-{time.monotonic_ns()}"
    argv = sb._setpriv(user) + ["/usr/bin/python3", "-c", CLIENT, SYSTEM_BUS_SOCKET, user, UNIX_CHKPWD, str(out)]
    client = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=sb.user_env(user))
    try:
        deadline = time.monotonic() + timeout(20)
        while not out.exists():
            if time.monotonic() > deadline or client.poll() not in (None, 0):
                client.kill()
                pytest.fail(f"the command wrote nothing; the client said {client.stderr.read()!r}", pytrace=False)
            time.sleep(0.02)
        lines = out.read_text().split("\n")
        return int(lines[0]), sorted(int(g) for g in lines[1].split())
    finally:
        client.stdin.close()          # unix_chkpwd reads no password and exits
        client.wait(timeout(10))
        client.stderr.close()
        out.unlink(missing_ok=True)


def test_groups_from_nss_not_proc(alice_view):
    """However often it is tried: the command runs with alice's gid and groups from NSS,
    not with the group shadow of the setgid program the caller runs meanwhile."""
    assert UNIX_CHKPWD and os.stat(UNIX_CHKPWD).st_mode & 0o2000, \
        "no setgid unix_chkpwd: tools/deps installs libpam-modules-bin"
    shadow = grp.getgrnam("shadow").gr_gid
    alice = pwd.getpwnam("alice")
    want = sorted(set(os.getgrouplist("alice", alice.pw_gid)))
    assert shadow not in want
    alice_view.set_polkit_rule("50-attach-race", WAIT_FOR_EXEC_RULE % shadow)
    try:
        for attempt in range(5):
            gid, groups = attach_after_setgid_exec(alice_view)
            assert (gid, groups) == (alice.pw_gid, want), \
                f"attempt {attempt}: the command ran with gid {gid}, groups {groups}; alice's are {alice.pw_gid}, {want}"
    finally:
        alice_view.set_polkit_rule("50-attach-race", None)


# Run as alice: connects to the bus (the bus driver now names this pid as the sender), then
# forks. The parent execs the setgid-shadow unix_chkpwd, which waits on a pipe; the child
# asks for Attach on the inherited connection and reports what the attached command printed.
ATTACH_AFTER_SETGID = r"""
import os, sys, time
import dbus, dbus.lowlevel
out_path, unix_chkpwd, shadow = sys.argv[1:4]
bus = dbus.SystemBus()
hold_r, hold_w = os.pipe()
if os.fork() > 0:
    os.dup2(hold_r, 0)
    os.execv(unix_chkpwd, [unix_chkpwd, "alice", "nullok"])
os.close(hold_r)
# Until the parent is unix_chkpwd: egid shadow (Gid: real effective saved fs).
deadline = time.monotonic() + 30
while open(f"/proc/{os.getppid()}/status").read().split("\nGid:")[1].split()[1] != shadow:
    if time.monotonic() > deadline:
        sys.exit("the parent never ran with the group shadow")
    time.sleep(0.01)
out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
msg = dbus.lowlevel.MethodCallMessage("org.example.NSManager", "/org/example/NSManager",
                                      "org.example.NSManager.Manager", "OpenAttach")
msg.append("alice", ["sh", "-c", "id -g; cat /etc/shadow 2>&1"], [], "/", dbus.UInt64(0), signature="sasasst")
try:
    reply = bus.send_message_with_reply_and_block(msg, 30)
    pid, stdin, stdout, stderr, status = reply.get_args_list()
    os.close(stdin.take())
    stdout = stdout.take()
    while True:
        data = os.read(stdout, 65536)
        if not data:
            break
        os.write(out, data)
    os.read(status.take(), 100)   # the command's exit status: it has ended
except dbus.exceptions.DBusException as e:
    os.write(out, ("error " + e.get_dbus_name() + "\n").encode())
os.close(hold_w)          # unix_chkpwd reads EOF and exits
"""


def test_attach_takes_groups_from_nss_not_from_a_setgid_program(alice_view):
    """The contract: Attach runs the command with the uid from the bus and the gid and
    groups NSS gives for it, never re-read from /proc — the caller can exec a setgid program
    meanwhile. With /proc's, alice's command ran as group shadow and read /etc/shadow."""
    sb = alice_view
    alice = pwd.getpwnam("alice")
    out = Path(alice.pw_dir) / "nsm-attach-out"
    shadow_gid = os.stat("/etc/shadow").st_gid
    assert shadow_gid != 0 and os.stat("/usr/sbin/unix_chkpwd").st_gid == shadow_gid
    p = sb.run_as("alice", ["/usr/bin/python3", "-c", ATTACH_AFTER_SETGID, str(out), "/usr/sbin/unix_chkpwd",
                            str(shadow_gid)])
    text = out.read_text() if out.exists() else ""
    assert text, f"the attach client reported nothing: {p.stdout} {p.stderr}"
    assert not text.startswith("error"), text
    assert text.splitlines()[0] == str(alice.pw_gid), f"the command ran with gid {text.splitlines()[0]}"
    assert "root:" not in text, "alice's attached command read /etc/shadow"


def _sleeps_in(sb, user):
    """Live `sleep` processes of user in their view (other sandboxes' alice may run sleeps
    too: the machine's pid space is shared)."""
    uid, link = pwd.getpwnam(user).pw_uid, f"mnt:[{sb.view_ns_id(user)}]"
    found = []
    for d in os.listdir("/proc"):
        try:
            status = Path(f"/proc/{d}/status").read_text() if d.isdigit() else ""
            if status and os.readlink(f"/proc/{d}/ns/mnt") != link:
                continue
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("Name") == "sleep" and fields.get("Uid", "").split()[:1] == [str(uid)] \
                and not fields.get("State", "").startswith("Z"):
            found.append(int(d))
    return found


@pytest.mark.daemon_config(AttachTasksMax="2")
def test_tasks_max(alice_view, nsctl):
    """AttachTasksMax=2: while two of alice's commands run, a third is refused with
    LimitExceeded (one line from nsctl, naming the setting); once one has ended, the next
    one starts. Root is not limited. (Without systemd only the forked commands count, not
    what they fork: docs/attach.md.)"""
    sb = alice_view
    argv = sb._setpriv("alice") + [str(nsctl_binary()), "attach", "alice", "--", "sleep", "100"]
    clients = [subprocess.Popen(argv, env=sb.user_env("alice"), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        deadline = time.monotonic() + timeout(10)
        while len(_sleeps_in(sb, 'alice')) < 2:
            assert time.monotonic() < deadline, "the two attached sleeps never started"
            time.sleep(0.05)
        p = nsctl("attach", "alice", "--", "true", as_user="alice")
        assert p.returncode == 1 and "AttachTasksMax=2" in p.stderr, (p.returncode, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert nsctl("attach", "alice", "--", "true").returncode == 0, "root was limited"

        clients[0].kill()          # the daemon hangs its sleep up
        clients[0].wait()
        while len(_sleeps_in(sb, 'alice')) > 1:
            assert time.monotonic() < deadline, "the sleep of the killed client went on"
            time.sleep(0.05)
        p = nsctl("attach", "alice", "--", "true", as_user="alice")
        assert p.returncode == 0, p.stderr
    finally:
        for c in clients:
            c.kill()
            c.wait()


def _attach(sb, user, args, input=b"", cwd=None, env=None):
    """nsctl attach run as user with pipes (not a terminal) for its stdio."""
    return subprocess.run(sb._setpriv(user) + [str(nsctl_binary()), "attach", *args], input=input,
                          capture_output=True, cwd=cwd, env=sb.user_env(user, env), timeout=timeout(30))


def test_attach_with_pipes(alice_view):
    """As a user, through OpenAttach without a terminal: the daemon's pipes carry stdin to the
    command and its stdout and stderr apart back to nsctl's; the command gets alice's
    environment as given (a newline, quotes, a '$' unexpanded) and her working directory, a
    directory name with a newline and unit-file lines in it included; nsctl exits with its
    status. Root is not needed anywhere."""
    sb = alice_view
    alice = pwd.getpwnam("alice")
    top = Path(alice.pw_dir) / "x\nEnvironmentFile=\nExecStopPost=+"
    odd = top / "usr/bin/touch /nsmtest-pwned"     # directories, as alice can make them
    odd.mkdir(parents=True)
    value = "a 'b' \"c\" $HOME \\d `e`\nline2"
    try:
        p = _attach(sb, "alice", ["alice", "--", "sh", "-c", 'cat; echo to-stderr >&2; pwd; printenv NSM_VALUE; '
                                  'echo "$1"; exit 7', "sh", "$HOME"],
                    input=b"from stdin\n", cwd=odd, env={"NSM_VALUE": value})
        assert p.returncode == 7, (p.returncode, p.stderr)
        assert p.stdout.decode() == f"from stdin\n{odd}\n{value}\n$HOME\n", p.stdout
        assert p.stderr == b"to-stderr\n", p.stderr
    finally:
        shutil.rmtree(top)
    assert not Path("/nsmtest-pwned").exists()

    # A command that never reads its stdin, and an endless one: nsctl does not wait for it.
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        p = subprocess.run(sb._setpriv("alice") + [str(nsctl_binary()), "attach", "alice", "--", "true"],
                           stdin=yes.stdout, capture_output=True, env=sb.user_env("alice"), timeout=timeout(30))
        assert p.returncode == 0, p.stderr
    finally:
        yes.kill()
        yes.wait()
    # Where nsctl's stdout goes away, so does the command's: yes dies of SIGPIPE (141).
    p = subprocess.run(["sh", "-c", f"{' '.join(sb._setpriv('alice'))} {nsctl_binary()} attach alice -- yes | "
                                    "head -n 1; echo \"${PIPESTATUS:-}\""], capture_output=True,
                       env=sb.user_env("alice"), timeout=timeout(30))
    assert p.stdout.startswith(b"y\n"), p


def test_attach_with_a_pty(alice_view):
    """On a terminal: OpenAttach's pty, owned by alice, is the command's stdin, stdout, stderr
    and controlling terminal, with nsctl's terminal's size; typed input reaches it, and ^C
    kills the command (not nsctl), whose status comes back: 128 + SIGINT."""
    import fcntl
    import pty
    import struct
    import termios
    sb = alice_view
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 77, 0, 0))
    script = ('stat -c "owner=%u" "$(tty)"; stty size; cut -d" " -f7 /proc/self/stat; '
              'read -r line; echo "got=$line"; sleep 100; exit 3')
    proc = subprocess.Popen(sb._setpriv("alice") + [str(nsctl_binary()), "attach", "alice", "--", "sh", "-c", script],
                            stdin=slave, stdout=slave, stderr=slave, env=sb.user_env("alice"),
                            start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    out = b""

    def expect(pattern, wait=20):
        nonlocal out
        deadline = time.monotonic() + timeout(wait)
        while not re.search(pattern, out):
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern!r} on the terminal: {out!r}"
            if select.select([master], [], [], left)[0]:
                try:
                    out += os.read(master, 4096)
                except OSError:
                    break
        found = re.search(pattern, out)
        assert found, f"no {pattern!r} on the terminal: {out!r}"
        return found
    try:
        found = expect(rb"owner=(\d+)\r?\n(\d+ \d+)\r?\n(\d+)\r?\n")
        assert found.group(1) == str(pwd.getpwnam("alice").pw_uid).encode(), out
        assert found.group(2) == b"33 77", out
        assert found.group(3) != b"0", "the pty is not the command's controlling terminal"
        os.write(master, b"typed\r")
        expect(rb"got=typed")
        deadline = time.monotonic() + timeout(10)
        while not _sleeps_in(sb, "alice"):    # ^C for the sleep, not for what comes before it
            assert time.monotonic() < deadline, "the command's sleep never started"
            time.sleep(0.02)
        os.write(master, b"\x03")       # SIGINT to the command's foreground group, in its pty
        assert proc.wait(timeout(20)) == 130, out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_users_send_no_fds(alice_view, nsctl):
    """The bus refuses alice's Attach with fds (and any message with fds she sends to the
    daemon) before the daemon sees it; root's Attach with fds works, and busctl works for root. The
    status socket OpenAttach returns can only be read: she cannot queue anything (no fd
    either) to the daemon's end."""
    from caller import call_as
    sb = alice_view
    null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    r, w = os.pipe()
    try:
        result = call_as(sb, "alice", "Attach", "sasasshhhh", "alice", ["true"], [], "/", *[{"fd": null}] * 3,
                         {"fd": w}, pass_fds=(null, w))
        assert result.get("error") == "org.freedesktop.DBus.Error.AccessDenied", result
        # dbus-daemon's refusal, not the daemon's ("Attach() takes the command's fds…"): the
        # message never reached it.
        assert result["message"].startswith("Rejected send message"), result
        result = call_as(sb, "root", "Attach", "sasasshhhh", "alice", ["true"], [], "/", *[{"fd": null}] * 3,
                         {"fd": w}, pass_fds=(null, w))
        assert "ok" in result, result
        # busctl (252) sends no fds, but takes them: root's OpenAttach from it.
        p = subprocess.run(["busctl", "call", "org.example.NSManager", "/org/example/NSManager",
                            "org.example.NSManager.Manager", "OpenAttach", "sasasst", "alice", "1", "true", "0", "/",
                            "0"], stdin=null, capture_output=True, text=True, timeout=timeout(30))
        assert p.returncode == 0 and p.stdout.startswith("uhhhh "), p
        os.close(w)
        w = -1
        assert os.read(r, 64) == b"EXITED 0\n"
    finally:
        for fd in (null, r, w):
            if fd >= 0:
                os.close(fd)

    check = r'''
import dbus, os, socket, sys
bus = dbus.SystemBus()
m = dbus.Interface(bus.get_object("org.example.NSManager", "/org/example/NSManager"), "org.example.NSManager.Manager")
pid, i, o, e, status = m.OpenAttach("alice", ["cat"], ["PATH=/usr/bin:/bin"], "/", dbus.UInt64(0))
s = socket.socket(fileno=status.take())
try:
    s.send(b"x")
    print("sent")
except BrokenPipeError:
    print("EPIPE")
try:
    socket.send_fds(s, [b"x"], [0])
    print("sent fd")
except BrokenPipeError:
    print("EPIPE")
os.close(i.take())
print(s.recv(64).decode(), end="")
'''
    p = sb.run_as("alice", ["/usr/bin/python3", "-c", check], wait=30)
    assert p.stdout == "EPIPE\nEPIPE\nEXITED 0\n", (p.stdout, p.stderr)


def test_attach_exec_takes_the_command_from_its_environment(sandbox, tmp_path):
    """nsmanager-attach-exec, the fixed main program of attach units where systemd starts the
    command (tests/test_nspawn_attach.py runs it there): it decodes the command, environment
    and directory the daemon escaped (a newline, a backslash, quotes, '$'), drops every
    NSMANAGER_ATTACH_* variable, NSMANAGER_ATTACH_NAMESPACE included, and says why, exit
    127, when the command is not there."""
    from sandbox import build_dir
    binary = build_dir() / "src/attach-exec/nsmanager-attach-exec"
    where = tmp_path / "a\nb"
    where.mkdir()
    script = 'printf "%s|" "$PWD" "$X" "$0" "${NSMANAGER_ATTACH_NAMESPACE-unset}"; env | grep -c "^NSMANAGER_ATTACH_"'
    env = {"PATH": "/usr/bin:/bin", "NSMANAGER_ATTACH_NAMESPACE": "alice",
           "NSMANAGER_ATTACH_ARGC": "4", "NSMANAGER_ATTACH_ARGV_0": "sh", "NSMANAGER_ATTACH_ARGV_1": "-c",
           "NSMANAGER_ATTACH_ARGV_2": script.replace("\\", "\\\\"), "NSMANAGER_ATTACH_ARGV_3": "'$HOME' \\\\x41\\x09",
           "NSMANAGER_ATTACH_ENVC": "2", "NSMANAGER_ATTACH_ENV_0": "X=line1\\x0aline2 \"q\"",
           "NSMANAGER_ATTACH_ENV_1": "PATH=/bin",
           "NSMANAGER_ATTACH_DIRECTORY": str(where).replace("\n", "\\x0a")}
    p = subprocess.run([binary], env=env, capture_output=True, text=True, timeout=timeout(10))
    assert p.returncode == 1 and p.stdout == f"{where}|line1\nline2 \"q\"|'$HOME' \\x41\t|unset|0\n", (p.stdout, p.stderr)
    env.update({"NSMANAGER_ATTACH_ARGC": "1", "NSMANAGER_ATTACH_ARGV_0": "no-such-command-here"})
    p = subprocess.run([binary], env=env, capture_output=True, text=True, timeout=timeout(10))
    assert p.returncode == 127 and "no-such-command-here" in p.stderr, (p.returncode, p.stderr)
    env["NSMANAGER_ATTACH_ARGV_0"] = "bad\\q"
    p = subprocess.run([binary], env=env, capture_output=True, text=True, timeout=timeout(10))
    assert p.returncode == 1 and "incomplete" in p.stderr, (p.returncode, p.stderr)


# ---- refusals: each named, before anything starts ----

def attach_call(manager, command, env=(), cwd="/", status=None, user="alice"):
    r, w = os.pipe()
    try:
        fds = [dbus.types.UnixFd(f) for f in (0, 1, 2, status if status is not None else w)]
        return manager.Attach(user, dbus.Array(command, "s"), dbus.Array(list(env), "s"), cwd, *fds)
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("command, env, cwd, error", [
    ([], [], "/", E_INVALID_ARGS),                                   # no command
    ([""], [], "/", E_INVALID_ARGS),                                 # empty command
    (["bin/true"], [], "/", E_INVALID_ARGS),                         # relative path with a slash
    (["true"], ["NOEQUALS"], "/", E_INVALID_ARGS),                   # not KEY=VALUE
    (["true"], ["=value"], "/", E_INVALID_ARGS),                     # empty key
    (["true"], [], "relative/dir", E_INVALID_PATH),  # relative working directory
])
def test_attach_refuses_bad_arguments(daemon, manager, command, env, cwd, error):
    manager.CreateNamespace("alice")
    expect_error(lambda: attach_call(manager, command, env, cwd), error)


def test_attach_refuses_a_status_fd_it_cannot_write(daemon, manager):
    manager.CreateNamespace("alice")
    r, w = os.pipe()
    try:
        # the read end of a pipe: the daemon could never report the exit status
        expect_error(lambda: attach_call(manager, ["true"], status=r), E_INVALID_ARGS)
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("command, env, cwd, flags, error", [
    ([], [], "/", 0, E_INVALID_ARGS),                                # no command
    (["bin/true"], [], "/", 0, E_INVALID_ARGS),                      # relative path with a slash
    (["true"], ["=value"], "/", 0, E_INVALID_ARGS),                  # empty key
    (["true"], [], "relative/dir", 0, E_INVALID_PATH),               # relative working directory
    (["true"], [], "/", 0x4, E_INVALID_ARGS),                        # unknown flag
    (["true"], [], "/", 0x2 | 24 << 32 | 80 << 48, E_INVALID_ARGS),  # a terminal's size, no terminal
    (["true"], [], "/", 0x1 | 24 << 32 | 80 << 48, E_INVALID_ARGS),  # size bits without 0x2
])
def test_open_attach_refuses_bad_arguments(daemon, manager, command, env, cwd, flags, error):
    """OpenAttach checks its arguments as Attach does, and its flags, before it makes any fd."""
    manager.CreateNamespace("alice")
    expect_error(lambda: manager.OpenAttach("alice", dbus.Array(command, "s"), dbus.Array(env, "s"), cwd,
                                            dbus.UInt64(flags)), error)


def test_open_attach_sets_the_terminals_size_before_the_command_starts(alice_view, manager):
    """The pty's size travels with the call (flag 0x2: rows in bits 32-47, columns in 48-63):
    a command that asks for it at once sees it. nsctl set it after the reply, when the command
    had started: once in a while `stty size` said "0 0"."""
    flags = 0x1 | 0x2 | 33 << 32 | 77 << 48
    pid, i, o, e, status = manager.OpenAttach("alice", ["stty", "size"], ["PATH=/usr/bin:/bin"], "/",
                                              dbus.UInt64(flags))
    master, status = i.take(), status.take()      # status stays open: closing it first hangs up the command
    for fd in (o, e):
        os.close(fd.take())
    out = b""
    try:
        while select.select([master], [], [], timeout(20))[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:         # EIO: the command ended, the slave is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        os.close(status)
    assert out.split() == [b"33", b"77"], out


def test_attach_to_a_user_without_a_namespace(daemon, manager):
    manager.CreateNamespace("alice")
    e = expect_error(lambda: attach_call(manager, ["true"], user="bob"), E_NO_SUCH_NAMESPACE)
    assert "bob" in e.get_dbus_message()
    expect_error(lambda: manager.GetNamespace("bob"), E_NO_SUCH_NAMESPACE)


def test_attach_refuses_a_status_fd_that_is_no_pipe(daemon, manager):
    """The exit status goes to a pipe or a socket: anything else open for writing (here
    /dev/null; not a file on the sandbox's /tmp, which the traceback's copy of the fd would
    keep busy) is refused before anything starts."""
    manager.CreateNamespace("alice")
    fd = os.open("/dev/null", os.O_WRONLY | os.O_CLOEXEC)
    try:
        e = expect_error(lambda: attach_call(manager, ["true"], status=fd), E_INVALID_ARGS)
        assert "pipe or a socket" in e.get_dbus_message(), e.get_dbus_message()
    finally:
        os.close(fd)


# ---- many attached commands, where systemd runs them --------------------------------

# alice's client: N OpenAttach calls one after the other, keeping every command's fds; then,
# once told (a line on stdin), reads each command's status.
MANY_ATTACHES = r'''
import json, resource, socket, sys, dbus
n = int(sys.argv[1])
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))     # 4 fds a command
m = dbus.Interface(dbus.SystemBus().get_object("org.example.NSManager", "/org/example/NSManager"),
                   "org.example.NSManager.Manager")
kept, errors = [], []
for _ in range(n):
    try:
        pid, i, o, e, status = m.OpenAttach("alice", ["sleep", "infinity"], ["PATH=/usr/bin:/bin"], "/",
                                            dbus.UInt64(0))
        kept.append((i.take(), o.take(), e.take(), socket.socket(fileno=status.take())))
    except dbus.exceptions.DBusException as ex:
        errors.append(f"{ex.get_dbus_name()}: {ex.get_dbus_message()}")
print(json.dumps({"started": len(kept), "errors": errors[:5]}), flush=True)
sys.stdin.readline()
ends = {}
for *_, s in kept:
    line = s.recv(64).decode().strip()
    ends[line] = ends.get(line, 0) + 1
print(json.dumps(ends), flush=True)
'''

MANY = 300


@pytest.fixture
def systemd_standin(daemon):
    """tests/helpers/systemd-standin.c owns org.freedesktop.systemd1 on the sandbox's bus, and
    /run/systemd/system (the sandbox's /run) makes the daemon believe systemd is PID 1:
    Attach() goes through attach-unit.c, as on a booted machine."""
    made_run_systemd = not os.path.exists("/run/systemd")
    os.makedirs("/run/systemd/system")
    p = subprocess.Popen([str(Path(build_dir()) / "tests" / "systemd-standin")], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready", "systemd-standin did not start"
        yield p
    finally:
        p.terminate()
        p.wait(timeout(10))
        os.rmdir("/run/systemd/system")
        if made_run_systemd:
            os.rmdir("/run/systemd")


@pytest.mark.daemon_config(RateLimitBurst="1000")
def test_many_attached_commands_add_no_match_rule(daemon, systemd_standin):
    """alice attaches 300 long-running commands, one after the other, where systemd runs
    them. Each held two match rules of the daemon's on the bus: at ~256 dbus-daemon refused
    the next AddMatch (512 per connection), and the daemon left the bus. One JobRemoved and
    one PropertiesChanged match serve them all: the daemon's match rules are as many after
    the 300th as after the first, root's and bob's attaches answer meanwhile, and every
    command's end reaches its status socket."""
    create(daemon, "alice", "bob")
    pid, *fds = daemon.manager().OpenAttach("alice", ["true"], [], "/", dbus.UInt64(0))
    for fd in fds:
        os.close(fd.take())
    rules = daemon_match_rules(daemon)
    pw = pwd.getpwnam("alice")
    client = subprocess.Popen(daemon._setpriv("alice") + ["/usr/bin/python3", "-c", MANY_ATTACHES, str(MANY)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=daemon.user_env("alice"), cwd=pw.pw_dir)
    try:
        started = json.loads(client.stdout.readline())
        assert started == {"started": MANY, "errors": []}, started
        assert daemon.daemon_running(), "the daemon left"
        assert daemon_match_rules(daemon) == rules
        for user, target in (("root", "alice"), ("bob", "bob")):
            result = call_as(daemon, user, "OpenAttach", "sasasst", target, ["true"], [], "/", 0)
            assert "ok" in result, f"{user}'s attach: {result}"
        systemd_standin.send_signal(signal.SIGUSR1)    # every command ends
        client.stdin.write("\n")
        client.stdin.flush()
        ends = json.loads(client.stdout.readline())
        assert ends == {"EXITED 0": MANY}, ends
    finally:
        client.stdin.close()
        client.wait(timeout(30))
    assert daemon_match_rules(daemon) == rules


def busctl_attach(sb, user: str, target: str) -> subprocess.Popen:
    """OpenAttach(target, ["true"]) by `user` ("root" for root), from busctl, in the background.
    Without interactive authorization (busctl allows it by default): these calls test the
    budgets of calls to systemd, not PolkitQuestionsPerUID= (test_budgets.py)."""
    argv = ["busctl", "--system", "--timeout=60", "--allow-interactive-authorization=no", "call", "org.example.NSManager", "/org/example/NSManager",
            "org.example.NSManager.Manager", "OpenAttach", "sasasst", target, "1", "true", "0", "/", "0"]
    if user != "root":
        argv = sb._setpriv(user) + argv
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def held(standin, n: int) -> None:
    """Until the stand-in holds n StartTransientUnit calls."""
    while True:
        line = standin.stdout.readline().strip()
        assert line.startswith("held "), line
        if int(line.split()[1]) >= n:
            return


def test_calls_to_systemd_in_flight_are_budgeted_per_uid_and_for_users_with_room_for_root(daemon, systemd_standin):
    """systemd answers nothing for a while: each uid gets at most 8 of the daemon's calls in
    flight, users together 32, the rest of the 48 is root's, far below the 128 replies
    dbus-daemon keeps pending for a connection. A caller over a budget is refused by name
    (which budget, whose, how many); root's attach still goes, and once systemd answers,
    every call that went is answered."""
    users = ["alice", "bob", "carol", "dave"]
    with extra_users(daemon, 1) as (extra_uid,):
        extra = f"nsm{extra_uid}"
        create(daemon, *users, extra)
        systemd_standin.send_signal(signal.SIGUSR2)      # hold the answers
        going = []
        try:
            for i, user in enumerate(users):
                going += [busctl_attach(daemon, user, user) for _ in range(8)]
                held(systemd_standin, 8 * (i + 1))
                if user == "alice":
                    _, err = busctl_attach(daemon, "alice", "alice").communicate(timeout=timeout(30))
                    assert "uid 2001 has 8 calls to systemd in flight (SystemdCallsPerUID=8)" in err, err
            _, err = busctl_attach(daemon, extra, extra).communicate(timeout=timeout(30))
            assert "Users have 32 calls to systemd in flight (SystemdCallsOfUsers=32)" in err, err
            going.append(busctl_attach(daemon, "root", "alice"))
            held(systemd_standin, 33)
        finally:
            systemd_standin.send_signal(signal.SIGUSR2)  # answer them
            answers = [p.communicate(timeout=timeout(30)) for p in going]
        for p, (out, err) in zip(going, answers):
            assert p.returncode == 0 and out.startswith("uhhhh "), err
        assert daemon.daemon_running()


FAKE_JOB_REMOVED = r'''
import sys
import dbus, dbus.lowlevel
unit = sys.argv[1]
bus = dbus.SystemBus()
daemon = bus.get_name_owner("org.example.NSManager")
# Straight to the daemon: the bus routes a broadcast "from" systemd's name only when its sender
# owns it, but delivers a signal sent to a unique name whoever sends it.
m = dbus.lowlevel.SignalMessage("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "JobRemoved")
m.set_destination(daemon)
m.append(dbus.UInt32(1), dbus.ObjectPath("/org/freedesktop/systemd1/job/1"), unit, "failed", signature="uoss")
bus.send_message(m)
m = dbus.lowlevel.SignalMessage("/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged")
m.set_destination(daemon)
m.append("org.freedesktop.systemd1", "", bus.get_unique_name(), signature="sss")
bus.send_message(m)
bus.flush()
print("sent", flush=True)
'''


def test_a_peers_fake_job_removed_is_ignored(daemon, systemd_standin):
    """alice's attach waits for systemd (the stand-in holds its start). bob, who knows the
    unit's name (systemd's units are public), sends the daemon a JobRemoved(…, "failed") of
    that unit straight to its unique name, and a NameOwnerChanged claiming systemd's name:
    sd-bus lets both through the daemon's matches (it cannot check a well-known sender). The
    daemon compares the sender with the name's owner and ignores them: once systemd answers,
    alice's attach succeeds."""
    create(daemon, "alice")
    systemd_standin.send_signal(signal.SIGUSR2)          # hold the answers
    attach = busctl_attach(daemon, "alice", "alice")
    try:
        line = systemd_standin.stdout.readline().strip()
        assert line.startswith("held 1 "), line
        unit = line.split()[2]
        fake = daemon.run_as("bob", ["/usr/bin/python3", "-c", FAKE_JOB_REMOVED, unit])
        assert fake.returncode == 0 and fake.stdout.strip() == "sent", fake.stderr
        # Behind bob's signals on the daemon's connection: they were handled when this answers.
        daemon.manager().ListNamespaces()
    finally:
        systemd_standin.send_signal(signal.SIGUSR2)      # answer
        out, err = attach.communicate(timeout=timeout(30))
    assert attach.returncode == 0 and out.startswith("uhhhh "), err
