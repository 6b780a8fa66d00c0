# SPDX-License-Identifier: LGPL-2.1-or-later
"""The connection a login keeps: pam_nsmanager writes its OpenSession right behind the
authentication on nsmanagerd's private socket, keeps the connection for the session, and
writes CloseSession on it at the end without waiting (src/pam/direct-call.h); the daemon keeps
such a connection as a bare socket that may carry that one call and nothing else
(src/nsmanagerd/kept-connection.h). tests/wire.py speaks the login's side for the tests that
hold many connections or send what a login never would."""

import os
from pathlib import Path
import resource
import socket
import subprocess
import threading
import time

import pytest

import sandbox as sb_module
import wire
from helpers import wait_until
from sandbox import timeout
from test_pam import logins, pam, parse_ns, run_with_syslog, runuser  # noqa: F401 (fixtures)


def daemon_sockets(daemon) -> int:
    """The sockets nsmanagerd holds open."""
    fd_dir = f"/proc/{daemon.daemon.pid}/fd"
    n = 0
    for fd in os.listdir(fd_dir):
        try:
            n += os.readlink(f"{fd_dir}/{fd}").startswith("socket:")
        except FileNotFoundError:
            pass
    return n


def sessions(daemon, user: str) -> list[str]:
    path = daemon.manager().GetNamespace(user)
    return sorted(str(s) for s in daemon.properties(path, "org.example.NSManager.Namespace")["Sessions"])


def closed_by_daemon(conn: wire.Connection, seconds: float = 10) -> bool:
    """True once nsmanagerd closed the connection (end of stream, nothing else sent)."""
    conn.sock.settimeout(timeout(seconds))
    try:
        return conn.sock.recv(1) == b""
    except ConnectionResetError:
        return True     # closed with some of what we sent unread
    except (TimeoutError, socket.timeout):
        return False


def open_kept(daemon, user: str, session_id: str) -> wire.Connection:
    """A connection with OpenSession(user, session_id) answered on it, as a login leaves it,
    once the daemon kept it or decided not to (--debug says which)."""
    conn = wire.Connection()
    mtype, fields, _ = conn.call("OpenSession", user, session_id)
    assert mtype == 2, fields
    os.close(conn.take_fd())
    wait_until(lambda: f"Kept the connection of session '{session_id}'" in daemon.daemon_log_text()
               or f"not keeping the one of session '{session_id}'" in daemon.daemon_log_text(),
               f"the daemon to keep the connection of {session_id}")
    return conn


DEBUG = pytest.mark.daemon_config(args=["--debug"])


@pytest.mark.daemon_config(OperationTimeoutSec="1s")
def test_a_login_ends_its_session_on_the_connection_it_kept(daemon, pam, logins):
    """A served private connection lives OperationTimeoutSec= and a second at most; the one a
    login kept outlives that, for the session, and its CloseSession ends the session."""
    daemon.manager().CreateNamespace("alice")
    before = daemon_sockets(daemon)
    login = logins(["runuser", "-l", "alice", "-c"])
    assert login.ns == daemon.view_ns_id("alice")
    time.sleep(2.5)
    assert daemon_sockets(daemon) == before + 1, "the login's connection is not kept"
    assert len(sessions(daemon, "alice")) == 1
    assert login.logout() == 0
    wait_until(lambda: sessions(daemon, "alice") == [], "the session to end")
    log = daemon.daemon_log_text()
    assert "of 'alice' closed." in log, log
    assert "exited without closing" not in log, log
    wait_until(lambda: daemon_sockets(daemon) == before, "the kept connection to go")


def test_after_a_daemon_restart_a_login_ends_its_session_on_a_new_connection(daemon, pam):
    """The kept connection dies with the daemon: close_session finds it gone, and calls
    CloseSession on a new connection to the daemon that runs now, which ends the session
    (recorded in the state it restarted from)."""
    daemon.manager().CreateNamespace("alice")
    work = sb_module.BASE / "syslog"
    result = {}

    def login():
        result["p"], result["log"] = run_with_syslog(["runuser", "-l", "alice", "-c", "sleep 3"], work)

    t = threading.Thread(target=login)
    t.start()
    try:
        wait_until(lambda: len(sessions(daemon, "alice")) == 1, "the login's session")
        daemon.restart_daemon()
    finally:
        t.join(timeout(60))
    assert result["p"].returncode == 0, result["p"].stderr
    log = result["log"]
    assert any("is gone" in line and "calling CloseSession on a new one" in line for line in log), log
    assert not any("Failed" in line for line in log if "pam_nsmanager" in line), log
    wait_until(lambda: sessions(daemon, "alice") == [], "the session to end")
    assert "of 'alice' closed." in daemon.daemon_log_text()


def as_signal(message: bytes) -> bytes:
    m = bytearray(message)
    m[1] = 4    # the type byte: a signal
    return bytes(m)


BAD = {
    "RemoveNamespace": (lambda c: c.send("RemoveNamespace", "alice"), "RemoveNamespace"),
    "OpenSession": (lambda c: c.send("OpenSession", "bob", "k2"), "OpenSession"),
    "another session": (lambda c: c.send("CloseSession", "alice", "other"), "CloseSession of another session"),
    "another user": (lambda c: c.send("CloseSession", "bob", "k1"), "CloseSession of another session"),
    "another interface": (lambda c: c.send("CloseSession", "alice", "k1", interface="org.freedesktop.DBus.Peer"),
                          "CloseSession"),
    "authentication again": (lambda c: c.sock.sendall(wire.AUTH_ROOT), "something that is not"),
    "too long": (lambda c: c.send("CloseSession", "alice", "k" * 2000), "something that is not"),
    "one argument": (lambda c: c.send("CloseSession", "alice"), "CloseSession with arguments other than two strings"),
    "a signal": (lambda c: c.sock.sendall(as_signal(wire.method_call(2, "CloseSession", "alice", "k1"))),
                 "a message that is not a method call"),
    "file descriptors": (lambda c: c.send("CloseSession", "alice", "k1", unix_fds=1), "a message with file descriptors"),
    "two messages at once": (lambda c: c.sock.sendall(wire.method_call(2, "CloseSession", "alice", "k1", reply=False) * 2),
                             "more than one message"),
}


@DEBUG
@pytest.mark.parametrize("what", BAD)
def test_a_kept_connection_carries_its_close_and_nothing_else(daemon, what):
    """The login holds the kept connection as root, and what it forks keeps it up to exec(),
    already the user's by then: whatever else comes on it closes it, undone, and the
    session stays (its leader lives)."""
    daemon.manager().CreateNamespace("alice")
    other = open_kept(daemon, "alice", "other")
    conn = open_kept(daemon, "alice", "k1")
    send, said = BAD[what]
    try:
        send(conn)
        assert closed_by_daemon(conn), "the daemon did not close the connection"
    finally:
        conn.close()
    assert f"The connection kept for session 'k1' of 'alice' sent {said}" in daemon.daemon_log_text()
    assert sessions(daemon, "alice") == ["k1", "other"]
    names = [str(n[0]) for n in daemon.manager().ListNamespaces()]
    assert "alice" in names and "bob" not in names, names
    # The other kept connection still does its job.
    other.send("CloseSession", "alice", "other", reply=False)
    wait_until(lambda: sessions(daemon, "alice") == ["k1"], "the other session to end")
    assert closed_by_daemon(other)
    other.close()
    daemon.manager().CloseSession("alice", "k1")


@DEBUG
def test_a_kept_connection_reads_its_close_in_pieces_and_answers_nothing(daemon):
    """A CloseSession that comes in two writes is read whole; one that asks for a reply
    gets none (a login does not wait for it), only the end of the connection; a peer that
    hangs up leaves its session to its leader."""
    daemon.manager().CreateNamespace("alice")
    halves = open_kept(daemon, "alice", "halves")
    data = wire.method_call(2, "CloseSession", "alice", "halves", reply=False)
    halves.sock.sendall(data[:40])
    time.sleep(0.2)
    assert sessions(daemon, "alice") == ["halves"]
    halves.sock.sendall(data[40:])
    assert closed_by_daemon(halves)
    halves.close()

    asking = open_kept(daemon, "alice", "asking")
    asking.send("CloseSession", "alice", "asking", reply=True)
    assert closed_by_daemon(asking), "an answer came, or the connection stayed"
    asking.close()

    gone = open_kept(daemon, "alice", "gone")
    gone.close()
    time.sleep(0.2)
    assert sessions(daemon, "alice") == ["gone"]
    assert "The connection kept" not in daemon.daemon_log_text()
    daemon.manager().CloseSession("alice", "gone")


@DEBUG
def test_beyond_the_most_kept_connections_a_login_ends_its_session_on_a_new_one(daemon, pam):
    """The daemon keeps at most a quarter of its RLIMIT_NOFILE (asked at each login, so a
    running daemon follows prlimit): beyond that it closes the connection after OpenSession,
    and the login's CloseSession comes on a new connection."""
    daemon.manager().CreateNamespace("alice")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    subprocess.run(["prlimit", f"--pid={daemon.daemon.pid}", "--nofile=64:"], check=True)
    conns = [open_kept(daemon, "alice", f"s{i:02}") for i in range(20)]
    try:
        refused = []
        for i, c in enumerate(conns):
            try:
                c.send("CloseSession", "alice", f"s{i:02}", reply=False)
            except (BrokenPipeError, ConnectionResetError):
                refused.append(i)
        assert refused == [16, 17, 18, 19], refused
        wait_until(lambda: sessions(daemon, "alice") == ["s16", "s17", "s18", "s19"], "16 sessions to end")

        # Still full: a login's CloseSession finds its connection closed, and calls again.
        more = [open_kept(daemon, "alice", f"t{i}") for i in range(16)]
        conns += more
        p, log = run_with_syslog(["runuser", "-l", "alice", "-c", "readlink /proc/self/ns/mnt"], sb_module.BASE / "syslog")
        assert p.returncode == 0 and parse_ns(p.stdout) == daemon.view_ns_id("alice"), p.stdout + p.stderr
        assert any("is gone" in line for line in log), log
        wait_until(lambda: not [s for s in sessions(daemon, "alice") if s.startswith("pam-")], "the login's session to end")
    finally:
        for c in conns:
            c.close()
        subprocess.run(["prlimit", f"--pid={daemon.daemon.pid}", f"--nofile={soft}:"], check=True)
    for s in sessions(daemon, "alice"):
        daemon.manager().CloseSession("alice", s)


@pytest.mark.parametrize("pipelined", [True, False], ids=["answered directly", "answered by sd-bus"])
def test_the_rule_holds_from_the_answer_on(daemon, pipelined):
    """The connection is restricted from the moment OpenSession is answered, not from when
    the daemon hands it over: a call written right behind the answer is refused too. Whether
    the daemon answered the login itself (its authentication and call came in one write,
    src/nsmanagerd/pipelined-open.h) or sd-bus did, with a filter until the hand-over."""
    daemon.manager().CreateNamespace("alice")
    for i in range(20):
        conn = wire.Connection(pipelined=pipelined)
        try:
            mtype, fields, _ = conn.call("OpenSession", "alice", f"r{i}")
            assert mtype == 2, fields
            conn.send("RemoveNamespace", "alice")
            assert closed_by_daemon(conn), "the daemon did not close the connection"
        finally:
            conn.close()
        assert f"The connection kept for session 'r{i}' of 'alice' sent RemoveNamespace" in daemon.daemon_log_text()
    assert "alice" in [str(n[0]) for n in daemon.manager().ListNamespaces()]
    for s in sessions(daemon, "alice"):
        daemon.manager().CloseSession("alice", s)


def private_socket_writes(user: str) -> tuple[list[str], subprocess.CompletedProcess]:
    """What a login writes on the private socket, as strace shows it (escaped strings)."""
    trace = sb_module.BASE / "strace-login.txt"
    p = subprocess.run(["strace", "-f", "-s", "1000", "-e", "trace=connect,sendto,sendmsg,write,close", "-o", str(trace),
                        "runuser", "-l", user, "-c", "readlink /proc/self/ns/mnt"],
                       capture_output=True, text=True, timeout=timeout(60))
    lines = trace.read_text().splitlines()
    trace.unlink()
    pid = fd = None
    writes = []
    for line in lines:
        who = line.split(" ", 1)[0]
        if fd is None and "connect(" in line and sb_module.NSM_PRIVATE_SOCKET in line and "= 0" in line:
            pid, fd = who, line.split("connect(", 1)[1].split(",", 1)[0]
        elif fd is not None and who == pid and any(f"{call}({fd}, " in line for call in ("sendto", "sendmsg", "write")):
            writes.append(line)
        elif fd is not None and who == pid and f"close({fd})" in line:
            fd = None   # the connection's fd, closed: the number may name another socket next
    return writes, p


def test_the_module_writes_its_call_behind_the_authentication_only_where_the_daemon_says_it_may(daemon, pam):
    """The daemon says PIPELINED_CALLS=1 in the login filter it writes. A daemon from before
    this change did not (and left such a call unanswered), as one still running during an
    upgrade: without the line the module waits for the authentication's answer, then calls."""
    daemon.manager().CreateNamespace("alice")
    view = daemon.view_ns_id("alice")
    lf = Path("/run/nsmanager/login-filter")
    text = lf.read_text()
    assert "PIPELINED_CALLS=1" in text.splitlines()

    writes, p = private_socket_writes("alice")
    assert p.returncode == 0 and parse_ns(p.stdout) == view, p.stdout + p.stderr
    assert "BEGIN\\r\\nl\\1" in writes[0] and "OpenSession" in writes[0], writes
    assert len(writes) == 2 and "CloseSession" in writes[1], writes

    lf.write_text(text.replace("PIPELINED_CALLS=1\n", ""))
    try:
        writes, p = private_socket_writes("alice")
    finally:
        lf.write_text(text)
    assert p.returncode == 0 and parse_ns(p.stdout) == view, p.stdout + p.stderr
    assert writes[0].split(", ")[1].endswith('BEGIN\\r\\n"'), writes
    assert "OpenSession" in writes[1] and "CloseSession" in writes[2], writes
    wait_until(lambda: sessions(daemon, "alice") == [], "the sessions to end")


@DEBUG
@pytest.mark.parametrize("peer", ["silent", "half an authentication", "authenticated", "kept"])
def test_the_daemon_exits_at_once_whatever_its_private_connections(daemon, peer):
    """SIGTERM ends the daemon at once, also with a private connection whose peer says
    nothing (sd-bus flushed every connection at exit, and flushing one that has not
    authenticated waits up to 25 s for it), half authenticates, waits after BEGIN, or is kept."""
    daemon.manager().CreateNamespace("alice")
    if peer == "kept":
        conn = open_kept(daemon, "alice", "exit")
        sock = conn.sock
    else:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.connect(sb_module.NSM_PRIVATE_SOCKET)
        if peer == "half an authentication":
            sock.sendall(b"\0AUTH EXTERNAL 30\r\n")
        elif peer == "authenticated":
            sock.sendall(wire.AUTH_ROOT)
    try:
        time.sleep(0.3)
        start = time.monotonic()
        assert daemon.stop_daemon(wait=timeout(20)) == 0
        elapsed = time.monotonic() - start
    finally:
        sock.close()
    assert elapsed < timeout(3), f"the daemon took {elapsed:.1f}s to exit"
    # alice's namespace outlived it, as namespaces do: a daemon again, to remove it at the end.
    daemon.restart_daemon()


def daemon_cpu_seconds(daemon) -> float:
    fields = Path(f"/proc/{daemon.daemon.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_out_of_fds_the_daemon_waits_to_accept_instead_of_spinning(daemon):
    """accept() failing for want of fds leaves the connection in the backlog, and the socket
    readable: the daemon spun on it at full CPU and logged as fast. Now it pauses (100 ms),
    logs once, and serves the login once fds are there again."""
    daemon.manager().CreateNamespace("alice")
    pid = daemon.daemon.pid
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    lowest_free = min(set(range(len(used) + 1)) - used)
    subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={lowest_free}:"], check=True)
    conn = wire.Connection()
    try:
        serial = conn.send("OpenSession", "alice", "after-emfile")
        before = daemon_cpu_seconds(daemon)
        time.sleep(1)
        spent = daemon_cpu_seconds(daemon) - before
        log = daemon.daemon_log_text()
        assert spent < 0.3, f"the daemon used {spent:.2f}s of CPU in 1s without fds"
        assert log.count("Failed to accept a private connection") == 1, log[-2000:]
        subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={soft}:"], check=True)
        mtype, fields, _ = conn.reply(serial, timeout=timeout(10))
        assert mtype == 2, fields
        os.close(conn.take_fd())
        assert "Accepting private connections again." in daemon.daemon_log_text()
    finally:
        subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={soft}:"], check=True)
        conn.close()
    wait_until(lambda: sessions(daemon, "alice") == ["after-emfile"], "the session")
    daemon.manager().CloseSession("alice", "after-emfile")
