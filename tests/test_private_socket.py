# SPDX-License-Identifier: LGPL-2.1-or-later
"""nsmanagerd's private socket (/run/nsmanager/private, src/nsmanagerd/private-bus.c): root's
peer-to-peer sd-bus connections for pam_nsmanager's logins. What a connection there offers
(OpenSession, nothing else), who may connect (root, whatever the socket's mode), its places
(64 served at a time, and per real uid of the process that connected: a user may stop her
own su while it holds one), and the daemon's exit and accept() whatever the connections do.
The logins themselves are tests/test_pam.py's."""

import contextlib
import os
import re
import resource
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import sandbox as sb_module
from helpers import daemon_syscalls, wait_until
from sandbox import MANAGER_IFACE, MANAGER_PATH, NSM_PRIVATE_SOCKET, timeout
from test_pam import pam, parse_ns, runuser, stopped  # noqa: F401 (pam: the fixture, shared)

DEBUG = pytest.mark.daemon_config(args=["--debug"])


def private_call(*args: str, hold: bool = False):
    """tests/helpers/private-call.c: a call on the private socket through sd-bus, as the module makes
    it. Returns its first line ("ok N" with N fds, or "ERROR-NAME message"); with hold=True the
    process too, which holds the reply's fds until its stdin closes."""
    p = subprocess.Popen([str(sb_module.build_dir() / "tests" / "private-call")] + list(args),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if hold:
        return line, p
    p.stdin.close()
    p.wait(timeout(30))
    assert p.returncode == 0, p.stderr.read()
    return line


def sessions(daemon, user: str) -> list[str]:
    path = daemon.manager().GetNamespace(user)
    return sorted(str(s) for s in daemon.properties(path, "org.example.NSManager.Namespace")["Sessions"])


def test_a_private_connection_offers_a_login_what_it_needs_and_nothing_else(daemon):
    """OpenSession, with both fds, as on the bus; the other methods of the Manager, and the
    Namespace objects, are the system bus's only."""
    line, holder = private_call(MANAGER_PATH, MANAGER_IFACE, "OpenSession", "alice", "p2p", hold=True)
    try:
        assert line == "ok 2", line
        assert sessions(daemon, "alice") == ["p2p"]
        for method, args in (("ListNamespaces", ()), ("CreateNamespace", ("bob",)), ("CloseSession", ("alice", "p2p")),
                             ("OpenMountNamespace", ("alice",)), ("ReloadConfig", ())):
            line = private_call(MANAGER_PATH, MANAGER_IFACE, method, *args)
            assert line.startswith("org.freedesktop.DBus.Error.UnknownMethod "), (method, line)
        line = private_call("/org/example/NSManager/user/_2001", "org.freedesktop.DBus.Properties", "GetAll",
                            "org.example.NSManager.Namespace")
        assert line.startswith("org.freedesktop.DBus.Error.UnknownObject "), line
        assert sessions(daemon, "alice") == ["p2p"]
    finally:
        holder.stdin.close()
        holder.wait(timeout(30))
    wait_until(lambda: sessions(daemon, "alice") == [], "the session to end with its fd")
    assert [str(n[0]) for n in daemon.manager().ListNamespaces()] == ["alice"]


# What a D-Bus client says first (AUTH EXTERNAL with its uid in hex), and how far it got:
# "closed" when the daemon hung up, else what the daemon answered.
PEER_HELLO = r"""
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(float(sys.argv[2]))
s.connect(sys.argv[1])
try:
    s.sendall(b"\0AUTH EXTERNAL " + str(os.getuid()).encode().hex().encode() + b"\r\n")
    data = s.recv(256)
    print("closed" if not data else data.decode(errors="replace").split()[0])
except (ConnectionResetError, BrokenPipeError):
    print("closed")
"""


def test_the_private_socket_refuses_others_whatever_its_mode(daemon):
    """The daemon checks SO_PEERCRED on each connection to /run/nsmanager/private: with the
    socket's mode opened up (an administrator's chmod, a bind of it elsewhere), bob's
    connection is still closed before he can say anything, while root's is answered."""
    sock, directory = NSM_PRIVATE_SOCKET, os.path.dirname(NSM_PRIVATE_SOCKET)
    modes = {p: os.stat(p).st_mode & 0o7777 for p in (sock, directory)}
    try:
        os.chmod(directory, 0o755)
        os.chmod(sock, 0o666)
        argv = ["/usr/bin/python3", "-c", PEER_HELLO, sock, str(timeout(10))]
        root = daemon.run(argv)
        assert root.returncode == 0 and root.stdout.strip() == "OK", \
            f"root's connection was not answered: {root.stdout} {root.stderr}"
        bob = daemon.run_as("bob", argv)
        assert bob.returncode == 0 and bob.stdout.strip() == "closed", \
            f"bob's connection to the private socket was served: {bob.stdout} {bob.stderr}"
    finally:
        for p, mode in modes.items():
            os.chmod(p, mode)
    assert daemon.daemon_running()


@DEBUG
@pytest.mark.parametrize("peer", ["silent", "half an authentication", "authenticated"])
def test_the_daemon_exits_at_once_whatever_its_private_connections(daemon, peer):
    """SIGTERM ends the daemon at once, also with a private connection whose peer says
    nothing (sd-bus flushed every connection at exit, and flushing one that has not
    authenticated waits up to 25 s for it), half authenticates, or waits after BEGIN."""
    daemon.manager().CreateNamespace("alice")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.connect(sb_module.NSM_PRIVATE_SOCKET)
    if peer == "half an authentication":
        sock.sendall(b"\0AUTH EXTERNAL 30\r\n")
    elif peer == "authenticated":
        sock.sendall(b"\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n")
    try:
        # The daemon holds the connection: it accepted it, and answered what was sent.
        wait_until(lambda: accepted_by(daemon.daemon.pid, sock), "the daemon to accept the connection")
        if peer != "silent":
            answer = read_answer(sock, b"AGREE_UNIX_FD\r\n" if peer == "authenticated" else b"\r\n")
            assert answer.startswith(b"OK "), answer
        start = time.monotonic()
        assert daemon.stop_daemon(wait=timeout(20)) == 0
        elapsed = time.monotonic() - start
    finally:
        sock.close()
    assert elapsed < timeout(3), f"the daemon took {elapsed:.1f}s to exit"
    # alice's namespace outlived it, as namespaces do: a daemon again, to remove it at the end.
    daemon.restart_daemon()


def accepted_by(pid: int, sock: socket.socket) -> bool:
    """Whether process pid holds the other end of our connection `sock`, i.e. has accepted it
    (until then ss shows no socket whose peer is ours)."""
    ino = os.fstat(sock.fileno()).st_ino
    out = subprocess.run(["ss", "-xnpH"], capture_output=True, text=True, check=True).stdout
    return any(re.search(rf"\* {ino}\s+users:\(.*\bpid={pid},", line) for line in out.splitlines())


def read_answer(sock: socket.socket, end: bytes) -> bytes:
    """What the daemon answers on a connection, up to `end`."""
    sock.settimeout(timeout(10))
    got = b""
    while not got.endswith(end):
        chunk = sock.recv(256)
        assert chunk, f"the daemon hung up after {got!r}"
        got += chunk
    return got


def daemon_cpu_seconds(daemon) -> float:
    fields = Path(f"/proc/{daemon.daemon.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


RETRIES = 3


def test_out_of_fds_the_daemon_waits_to_accept_instead_of_spinning(daemon):
    """accept() failing for want of fds leaves the connection in the backlog, and the socket
    readable: the daemon spun on it at full CPU and logged as fast. Now it pauses (100 ms)
    before each new try, logs once, and serves the login once fds are there again."""
    daemon.manager().CreateNamespace("alice")
    pid = daemon.daemon.pid
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    lowest_free = min(set(range(len(used) + 1)) - used)
    subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={lowest_free}:"], check=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    measured = {}

    def refused_again_and_again():
        sock.connect(sb_module.NSM_PRIVATE_SOCKET)
        before = daemon_cpu_seconds(daemon)
        # Not a time, but what the daemon did: it tried again, RETRIES times, and failed.
        wait_until(lambda: trace.read_text().count("EMFILE") > RETRIES, f"the daemon to try {RETRIES} times more")
        measured["spent"] = daemon_cpu_seconds(daemon) - before

    trace = daemon.instance / "strace.log"
    try:
        attempts = [float(line.split()[1]) for line in
                    daemon_syscalls(daemon, refused_again_and_again, "accept4", timestamps=True).splitlines()
                    if "accept4(" in line and "EMFILE" in line]
        log = daemon.daemon_log_text()
        gaps = [b - a for a, b in zip(attempts, attempts[1:])]
        assert min(gaps) >= 0.05, f"the daemon tried again after {min(gaps) * 1000:.0f} ms: it spins ({gaps})"
        assert measured["spent"] < 0.3, f"the daemon used {measured['spent']:.2f}s of CPU without fds"
        assert log.count("Failed to accept a private connection") == 1, log[-2000:]
    finally:
        sock.close()
        subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={soft}:"], check=True)
    line, holder = private_call(MANAGER_PATH, MANAGER_IFACE, "OpenSession", "alice", "after-emfile", hold=True)
    try:
        assert line == "ok 2", line
        assert sessions(daemon, "alice") == ["after-emfile"]
    finally:
        holder.stdin.close()
        holder.wait(timeout(30))
    assert "Accepting private connections again." in daemon.daemon_log_text()


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


STOPPED_SU = 70     # more than the 64 places the socket has in all


def test_a_user_who_stops_her_own_su_keeps_nobody_else_out(daemon, pam):
    """alice knows her password, so she may run `su` as often as she likes and stop each one
    (SIGSTOP: its real uid is hers) while its pam_nsmanager holds a connection to the private
    socket. She did that 70 times: the places are counted by the connecting process's real
    uid, 4 served and 16 waiting for hers, the rest closed at once; bob's login (root's, from
    runuser) lands in his view at once, not after the stopped ones outlive their deadline."""
    pam.install("su-l", text=pam.text_of("nsm-su-l", "timeout=60"))
    daemon.manager().CreateNamespace("bob")
    view = daemon.view_ns_id("bob")
    sus = []
    try:
        # With the daemon stopped, each su connects and waits for its authentication's
        # answer; then each is stopped, and the daemon finds them all at once.
        with stopped(daemon.daemon.pid):
            for _ in range(STOPPED_SU):
                sus.append(subprocess.Popen(daemon._setpriv("alice") + ["su", "-", "alice", "-c", "true"],
                                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, env=daemon.user_env("alice")))
            for p in sus:
                p.stdin.write(b"alice-secret\n")
                p.stdin.close()
            wait_until(lambda: private_peers(daemon) >= STOPPED_SU, "every su to connect", wait=60,
                       diag=lambda: f"{private_peers(daemon)} connected")
            for p in sus:
                os.kill(p.pid, signal.SIGSTOP)
        wait_until(lambda: private_peers(daemon) <= 4 + 16,
                   "the daemon to close alice's connections beyond her places",
                   diag=lambda: f"{private_peers(daemon)} open")
        start = time.monotonic()
        p = runuser("bob", "readlink /proc/self/ns/mnt")
        elapsed = time.monotonic() - start
        assert p.returncode == 0 and parse_ns(p.stdout) == view, p.stdout + p.stderr
        assert elapsed < timeout(1.5), f"bob's login took {elapsed:.2f}s behind alice's stopped su"
        assert private_peers(daemon) <= 4 + 16 + 1, f"{private_peers(daemon)} of alice's connections still open"
    finally:
        for p in sus:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.wait()


def private_peers(sb) -> int:
    """Connections to this sandbox's daemon's private socket: those it accepted and those in
    its listener's backlog (the listener's Recv-Q). By the daemon's pid (ss -p): every sandbox
    on the machine shares the network namespace, and so the socket's path; counting by path
    alone counted another test run's logins too (this test failed when two runs overlapped)."""
    mine = f"pid={sb.daemon.pid},"
    listeners = subprocess.run(["ss", "-xlnpH", "src", sb_module.NSM_PRIVATE_SOCKET], capture_output=True,
                               text=True, check=True).stdout.splitlines()
    backlog = sum(int(line.split()[2]) for line in listeners if mine in line)
    established = subprocess.run(["ss", "-xnpH", "state", "connected", "src", sb_module.NSM_PRIVATE_SOCKET],
                                 capture_output=True, text=True, check=True).stdout.splitlines()
    return backlog + len([line for line in established if mine in line])


# Holds N silent connections to the private socket until its stdin closes. Run with a real
# uid of its own (setpriv --ruid) and root's effective one, as a user's stopped su is.
HOLDER = r'''
import socket, sys
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    socks.append(s)
print("connected", flush=True)
sys.stdin.read()
'''

FILLING_UIDS = 20          # 20 x (4 served + 16 waiting) = 400: more than the 64 + 256 places
HELD_PER_UID = 4 + 16 + 4  # each uid holds more than its places


def test_twenty_users_filling_the_waiting_list_keep_no_root_login_out(daemon, pam):
    """Twenty users each hold as many connections to the private socket as their real uid
    may (stopped su processes would): served 4 and waiting 16 each, 20 uids had every one of
    the 64 places and all 256 waiting places, and root's login waited in the backlog behind
    them. Users together have at most 48 served and 192 waiting; root's login (bob's, from
    runuser) lands in his view."""
    daemon.manager().CreateNamespace("bob")
    view = daemon.view_ns_id("bob")
    holders = []
    try:
        for i in range(FILLING_UIDS):
            h = subprocess.Popen(["setpriv", f"--ruid={30000 + i}", "/usr/bin/python3", "-c", HOLDER,
                                  NSM_PRIVATE_SOCKET, str(HELD_PER_UID)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            holders.append(h)
            assert h.stdout.readline().strip() == "connected"
        # Every connection accepted, or closed beyond the uid's (and now the users') places:
        # what stays is at most the places users have in all.
        wait_until(lambda: private_peers(daemon) <= 48 + 192, "the daemon to close the users' connections beyond their "
                   "places", wait=30, diag=lambda: f"{private_peers(daemon)} open")
        p = runuser("bob", "readlink /proc/self/ns/mnt")
        assert p.returncode == 0 and parse_ns(p.stdout) == view, \
            f"root's login did not land in bob's view: {p.stdout} {p.stderr}"
    finally:
        for h in holders:
            h.stdin.close()
            h.wait()
