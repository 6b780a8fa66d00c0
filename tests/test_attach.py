# SPDX-License-Identifier: LGPL-2.1-or-later
"""Manager.Attach in the sandbox, where systemd is not PID 1 and the daemon forks the
command itself (docs/attach.md): who the command runs as, and AttachTasksMax=.

The credentials race: alice sends Attach and, while the call is on its way,
execs the setgid unix_chkpwd (group shadow) with her bus connection still open. A daemon
that takes the caller's groups from /proc when it acts (sd-bus's SD_BUS_CREDS_AUGMENT)
then starts her command with gid shadow. The race is made deterministic with the real
polkitd: a polkit rule for attach-own waits (polkit.spawn) until the calling process runs
with group shadow before it says yes, and the daemon acts only after that answer. alice's
client (CLIENT below) is a small D-Bus client on a raw socket, so that it can send the call
and exec without waiting for the reply. The command must get alice's groups from NSS,
every time."""

import grp
import os
import pwd
import select
import subprocess
import time
from pathlib import Path

import pytest

from sandbox import SYSTEM_BUS_SOCKET, nsctl_binary, timeout

UNIX_CHKPWD = next((p for p in ("/usr/sbin/unix_chkpwd", "/sbin/unix_chkpwd") if Path(p).exists()), None)

# argv: socket path, user, unix_chkpwd, the fds of the command's stdout and of the status
# pipe. stdin: unix_chkpwd's, kept open by the test so that it waits for a password.
CLIENT = r'''
import os, socket, struct, sys

sock_path, user, unix_chkpwd = sys.argv[1], sys.argv[2], sys.argv[3]
OUT, STATUS = int(sys.argv[4]), int(sys.argv[5])


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
body.strv(["sh", "-c", "id -g; id -G"])
body.strv(["PATH=/usr/bin:/bin"])
body.string("/")
for i in range(4):
    body.u32(i)
attach = method_call(2, "/org/example/NSManager", "org.example.NSManager.Manager", "Attach",
                     "org.example.NSManager", "sasasshhhh", body.b, 4)
# Hello's reply first: fds sent along with data the bus still reads as part of the
# authentication would be dropped.
s.sendall(hello)
read_message(s)
null = os.open("/dev/null", os.O_RDONLY)
socket.send_fds(s, [attach], [null, OUT, OUT, STATUS])

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


def _read_until(fd, done, wait, client):
    data = b""
    deadline = time.monotonic() + timeout(wait)
    while not done(data):
        left = deadline - time.monotonic()
        if left <= 0:
            client.kill()
            pytest.fail(f"timed out, got {data!r}; the client said {client.stderr.read()!r}", pytrace=False)
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    return data


def attach_after_setgid_exec(sb, user="alice"):
    """One round of the race: (gid, groups) the command printed."""
    out_r, out_w = os.pipe()
    status_r, status_w = os.pipe()
    argv = sb._setpriv(user) + ["/usr/bin/python3", "-c", CLIENT, SYSTEM_BUS_SOCKET, user, UNIX_CHKPWD,
                                str(out_w), str(status_w)]
    client = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              pass_fds=(out_w, status_w), env=sb.user_env(user))
    os.close(out_w)
    os.close(status_w)
    try:
        status = _read_until(status_r, lambda d: d.endswith(b"\n"), 20, client)
        assert status == b"EXITED 0\n", f"the command ended with {status!r}"
        out = _read_until(out_r, lambda d: d.count(b"\n") >= 2, 5, client).decode().split("\n")
        return int(out[0]), sorted(int(g) for g in out[1].split())
    finally:
        client.stdin.close()          # unix_chkpwd reads no password and exits
        client.wait(timeout(10))
        client.stderr.close()
        os.close(out_r)
        os.close(status_r)


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
