# SPDX-License-Identifier: LGPL-2.1-or-later
"""How nsmanagerd logs: plain lines on a terminal, "<N>" lines on other streams, records with
their fields (read back from --log-export, the journal's export format: the sandbox has no
journald), and org.freedesktop.LogControl1, which only root may use to change them."""

import os
import pty
import subprocess

from sandbox import BUS_NAME, daemon_binary, timeout

LOG_CONTROL = ["/org/freedesktop/LogControl1", "org.freedesktop.LogControl1"]


def busctl(sb, *args, as_user=None):
    argv = ["busctl", "--system", *args]
    return sb.run_as(as_user, argv) if as_user else sb.run(argv)


def get_property(sb, name):
    p = busctl(sb, "get-property", BUS_NAME, *LOG_CONTROL, name)
    assert p.returncode == 0, p.stderr
    return p.stdout.split(None, 1)[1].strip().strip('"')


def run_as_alice_on(sandbox, stderr_is_tty):
    """nsmanagerd as alice, who may not run it: it says so on stderr and exits 1."""
    argv = sandbox._setpriv("alice") + [str(daemon_binary()), "--config=/nonexistent"]
    if not stderr_is_tty:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout(10))
        return p.returncode, p.stderr
    master, slave = pty.openpty()
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                           timeout=timeout(10))
        os.close(slave)
        slave = -1
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:     # EIO: the other side is closed
                break
            if not chunk:
                break
            out += chunk
        return p.returncode, out.decode()
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def test_terminal_gets_plain_lines(sandbox):
    rc, text = run_as_alice_on(sandbox, stderr_is_tty=True)
    assert rc == 1
    assert "must run as root" in text and "<3>" not in text, text
    # a stream that is not a terminal (a service's stderr read by journald) keeps the level
    rc, text = run_as_alice_on(sandbox, stderr_is_tty=False)
    assert rc == 1
    assert text.startswith("<3>") and "must run as root" in text, text


def test_log_control_is_roots(daemon, manager):
    sb = daemon
    assert get_property(sb, "LogLevel") == "info"
    assert get_property(sb, "LogTarget") == "console-prefixed"   # stderr is a file here
    assert get_property(sb, "SyslogIdentifier") == "nsmanagerd"

    # a user could erase the audit trail with LogTarget=null: refused, nothing changed
    for prop, value in (("LogTarget", "null"), ("LogLevel", "emerg")):
        p = busctl(sb, "set-property", BUS_NAME, *LOG_CONTROL, prop, "s", value, as_user="alice")
        assert p.returncode != 0 and "Access denied" in p.stderr, p.stderr
    assert get_property(sb, "LogTarget") == "console-prefixed"
    assert get_property(sb, "LogLevel") == "info"

    # root may: debug messages appear from now on
    before = len(sb.daemon_log_text())
    p = busctl(sb, "set-property", BUS_NAME, *LOG_CONTROL, "LogLevel", "s", "debug")
    assert p.returncode == 0, p.stderr
    assert get_property(sb, "LogLevel") == "debug"
    manager.CreateNamespace("alice")
    assert "<7>" in sb.daemon_log_text()[before:]
    assert any(r.get("PRIORITY") == "7" for r in sb.journal_records())

    p = busctl(sb, "set-property", BUS_NAME, *LOG_CONTROL, "LogLevel", "s", "loud")
    assert p.returncode != 0 and "Invalid log level" in p.stderr, p.stderr
    p = busctl(sb, "set-property", BUS_NAME, *LOG_CONTROL, "LogTarget", "s", "console")
    assert p.returncode == 0, p.stderr
    assert get_property(sb, "LogTarget") == "console"
    # the change itself is on record, said where the log went before it
    assert any("Log target set to 'console' by root" in r.get("MESSAGE", "") for r in sb.journal_records())


def test_export_records(daemon, manager):
    manager.CreateNamespace("alice")
    records = daemon.journal_records()
    created = [r for r in records if r.get("MESSAGE", "").startswith("Created the mount namespace of 'alice'")]
    assert len(created) == 1, records
    r = created[0]
    assert r["PRIORITY"] == "6" and r["SYSLOG_IDENTIFIER"] == "nsmanagerd"
    assert int(r["__REALTIME_TIMESTAMP"]) > 0 and int(r["_PID"]) == daemon.daemon.pid
