# SPDX-License-Identifier: LGPL-2.1-or-later
"""A login's OpenSession for a namespace that is up, answered on the private socket without
sd-bus (src/nsmanagerd/pipelined-open.h): the authentication and the call that came in one
write are taken from the socket and answered in one write, and the connection is kept. Every
other first write goes to sd-bus untouched, which answers it as before, errors included.
strace on the daemon tells the two apart: sd-bus sets socket options on every connection it
serves (SO_PASSCRED and others); the direct answer sets none."""

import contextlib
import os
import socket
import subprocess
import time

import pytest

import sandbox as sb_module
import wire
from helpers import wait_until
from sandbox import timeout
from test_kept_connection import closed_by_daemon, sessions


@contextlib.contextmanager
def daemon_syscalls(daemon, out: list):
    """strace on nsmanagerd while the block runs: its setsockopt and sendmsg calls, into out."""
    trace = sb_module.BASE / "strace-daemon.txt"
    p = subprocess.Popen(["strace", "-f", "-s", "300", "-e", "trace=setsockopt,sendmsg", "-o", str(trace),
                          "-p", str(daemon.daemon.pid)], stderr=subprocess.PIPE, text=True)
    try:
        # strace says so on stderr once it has attached: only then is everything seen.
        line = p.stderr.readline()
        assert "attached" in line, line
        yield
        time.sleep(0.2)
    finally:
        p.send_signal(2)
        p.wait(timeout=timeout(10))
        p.stderr.close()
    out += trace.read_text().splitlines()
    trace.unlink()


def setsockopts(lines: list) -> list:
    return [l for l in lines if "setsockopt(" in l]


def answered_on(conn: wire.Connection, serial: int) -> tuple[int, dict, bytes]:
    mtype, fields, body = conn.reply(serial, timeout=timeout(10))
    return mtype, fields, body


def fd_ns(fd: int) -> int:
    return int(os.readlink(f"/proc/self/fd/{fd}")[len("mnt:["):-1])


@pytest.mark.parametrize("when", ["at once", "after a while"])
def test_a_login_of_a_user_whose_namespace_is_up_is_answered_without_sd_bus(daemon, when):
    """The pipelined OpenSession of an existing namespace: the namespace's fd, the session
    recorded, in one write from the daemon, no sd-bus connection set up; also where the login
    writes a while after connecting (the daemon then waits for its first bytes); the
    connection then carries the session's CloseSession."""
    daemon.manager().CreateNamespace("alice")
    view = daemon.view_ns_id("alice")
    lines: list = []
    with daemon_syscalls(daemon, lines):
        conn = wire.Connection()
        if when == "after a while":
            time.sleep(0.3)
        mtype, fields, _ = conn.call("OpenSession", "alice", "fast-1", timeout=timeout(10))
    try:
        assert mtype == 2, fields
        assert fields[8] == "oh" and fields[9] == 1, fields
        fd = conn.take_fd()
        assert fd_ns(fd) == view
        os.close(fd)
        assert sessions(daemon, "alice") == ["fast-1"]
        assert setsockopts(lines) == [], "an sd-bus connection was set up:\n" + "\n".join(lines)
        answers = [l for l in lines if "sendmsg(" in l and "AGREE_UNIX_FD" in l]
        assert len(answers) == 1 and "OK " in answers[0] and "SCM_RIGHTS" in answers[0], "\n".join(lines)

        conn.send("CloseSession", "alice", "fast-1", reply=False)
        wait_until(lambda: sessions(daemon, "alice") == [], "the session to end by its CloseSession")
        assert closed_by_daemon(conn)
    finally:
        conn.close()
    assert "Session 'fast-1' of 'alice' closed." in daemon.daemon_log_text()


def raw_exchange(data: bytes) -> bytes:
    """Writes data on a new private connection, returns what came back until the daemon stops
    sending for a moment."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        s.connect(sb_module.NSM_PRIVATE_SOCKET)
        s.sendall(data)
        s.settimeout(timeout(5))
        got = s.recv(4096)
        s.settimeout(0.5)
        with contextlib.suppress(TimeoutError, socket.timeout):
            while chunk := s.recv(4096):
                got += chunk
        return got
    finally:
        s.close()


def test_what_is_not_such_a_login_goes_to_sd_bus_with_its_answer(daemon):
    """Everything but that one success is answered by sd-bus and the method, as before: the
    errors by name; a call that wants no answer gets none (and is done); a call of another
    kind; two calls at once, both done; the authentication as another uid refused; a first
    login, whose namespace is built; the same session twice."""
    m = daemon.manager()
    m.CreateNamespace("alice")
    lines: list = []
    with daemon_syscalls(daemon, lines):
        conn = wire.Connection()
        mtype, fields, body = conn.call("OpenSession", "alice", "has space", timeout=timeout(10))
        conn.close()
    assert mtype == 3 and wire.error_name(fields) == "org.freedesktop.DBus.Error.InvalidArgs", fields
    assert b"has spaces" in body
    assert setsockopts(lines), "no sd-bus connection served the refusal"

    conn = wire.Connection()
    mtype, fields, _ = conn.call("OpenSession", "nosuchuser-xyz", "s1", timeout=timeout(10))
    conn.close()
    assert mtype == 3 and wire.error_name(fields) == "org.example.NSManager.Error.NoSuchUser", fields

    # No reply asked for: none comes, and the session is opened all the same.
    got = raw_exchange(wire.AUTH_ROOT + wire.method_call(1, "OpenSession", "alice", "quiet", reply=False))
    assert got.count(b"\r\n") == 2 and got.endswith(b"AGREE_UNIX_FD\r\n"), got
    wait_until(lambda: "quiet" in sessions(daemon, "alice"), "the unanswered OpenSession to be done")
    m.CloseSession("alice", "quiet")

    conn = wire.Connection()
    mtype, fields, _ = conn.call("Ping", interface="org.freedesktop.DBus.Peer", timeout=timeout(10))
    conn.close()
    assert mtype == 2, fields

    # OpenSession and CloseSession in one write: sd-bus serves both, in order.
    conn = wire.Connection()
    data = wire.AUTH_ROOT + wire.method_call(1, "OpenSession", "alice", "both") + \
        wire.method_call(2, "CloseSession", "alice", "both")
    conn.serial = 2
    conn.sock.sendall(data)
    mtype, fields, _ = conn.reply(1, timeout=timeout(10))
    assert mtype == 2, fields
    os.close(conn.take_fd())
    mtype, fields, _ = conn.reply(2, timeout=timeout(10))
    assert mtype == 2, fields
    conn.close()
    assert "both" not in sessions(daemon, "alice")

    # EXTERNAL as uid 1 from root: sd-bus refuses the authentication.
    got = raw_exchange(b"\0AUTH EXTERNAL 31\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n" +
                       wire.method_call(1, "OpenSession", "alice", "other-uid"))
    assert got.startswith(b"REJECTED"), got
    assert "other-uid" not in sessions(daemon, "alice")

    # The same session twice: one session.
    for _ in range(2):
        conn = wire.Connection()
        mtype, fields, _ = conn.call("OpenSession", "alice", "twice", timeout=timeout(10))
        assert mtype == 2, fields
        os.close(conn.take_fd())
        conn.close()
    assert sessions(daemon, "alice").count("twice") == 1

    # A first login: the namespace is built, by the method.
    conn = wire.Connection()
    mtype, fields, _ = conn.call("OpenSession", "bob", "first", timeout=timeout(30))
    try:
        assert mtype == 2, fields
        fd = conn.take_fd()
        assert fd_ns(fd) == daemon.view_ns_id("bob")
        os.close(fd)
    finally:
        conn.close()


LOGIN = """
import os, sys
sys.path.insert(0, sys.argv[1])
import wire
conn = wire.Connection()
mtype, fields, _ = conn.call("OpenSession", "alice", sys.argv[2])
assert mtype == 2, fields
os.close(conn.take_fd())
print("open", flush=True)
sys.stdin.read()
"""


def test_a_session_id_opened_by_a_second_process_ends_with_it(daemon):
    """An id made of a pid ("pam-SERVICE-TTY-PID") comes back with the pid, possibly before
    the daemon has handled the old login process's exit, which then ended the new login's
    session. A second process opening a session id is its owner from then on: the first
    one's exit leaves the session, the second one's ends it."""
    daemon.manager().CreateNamespace("alice")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    logins = []
    try:
        for _ in range(2):
            p = subprocess.Popen(["/usr/bin/python3", "-c", LOGIN, tests_dir, "pam-login-tty1-4711"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert p.stdout.readline().strip() == "open"
            logins.append(p)
        assert sessions(daemon, "alice") == ["pam-login-tty1-4711"]
        logins[0].kill()
        logins[0].wait()
        time.sleep(timeout(0.5))    # the daemon sees an exit at once (its pidfd): time enough to act on it
        assert sessions(daemon, "alice") == ["pam-login-tty1-4711"], "the first process's exit ended the second's session"
        logins[1].kill()
        logins[1].wait()
        wait_until(lambda: sessions(daemon, "alice") == [], "the session to end with the second process")
    finally:
        for p in logins:
            if p.poll() is None:
                p.kill()
                p.wait()
