# SPDX-License-Identifier: LGPL-2.1-or-later
"""How nsmanagerd logs: plain lines on a terminal, "<N>" lines on other streams, records with
their fields (read back from --log-export, the journal's export format: the sandbox has no
journald), and org.freedesktop.LogControl1, which only root may use to change them; what a user
names is logged, never a line of hers."""

import os
import pty
import re
import subprocess

import dbus

from helpers import daemon_syscalls
from sandbox import BUS_NAME, SYSTEM_BUS_ADDRESS, daemon_binary, timeout

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


def test_log_control_asks_the_bus_once_per_connection(daemon):
    """LogControl1 uses the daemon's cache of callers' credentials: the second Set on a
    connection is answered without a round trip to the bus (one on the event loop)."""
    sb = daemon
    bus = dbus.bus.BusConnection(SYSTEM_BUS_ADDRESS)
    try:
        props = dbus.Interface(bus.get_object(BUS_NAME, LOG_CONTROL[0]), dbus.PROPERTIES_IFACE)

        def set_level(level):
            return lambda: props.Set(LOG_CONTROL[1], "LogLevel", level)
        first = daemon_syscalls(sb, set_level("debug"), "sendmsg", strsize=512)
        again = daemon_syscalls(sb, set_level("info"), "sendmsg", strsize=512)
    finally:
        bus.close()
    assert len(re.findall("GetConnectionCredentials", first)) == 1, first
    assert len(re.findall("GetConnectionCredentials", again)) == 0, again
    assert get_property(sb, "LogLevel") == "info"


def test_export_records(daemon, manager):
    manager.CreateNamespace("alice")
    records = daemon.journal_records()
    created = [r for r in records if r.get("MESSAGE", "").startswith("Created the mount namespace of 'alice'")]
    assert len(created) == 1, records
    r = created[0]
    assert r["PRIORITY"] == "6" and r["SYSLOG_IDENTIFIER"] == "nsmanagerd"
    assert int(r["__REALTIME_TIMESTAMP"]) > 0 and int(r["_PID"]) == daemon.daemon.pid


ATTACH_NAMED = r"""
import os, sys
import dbus, dbus.lowlevel
name = sys.argv[1]
msg = dbus.lowlevel.MethodCallMessage("org.example.NSManager", "/org/example/NSManager",
                                      "org.example.NSManager.Manager", "OpenAttach")
msg.append("alice", [name], [], "/", dbus.UInt64(0), signature="sasasst")
pid, stdin, stdout, stderr, status = dbus.SystemBus().send_message_with_reply_and_block(msg, 30).get_args_list()
os.read(status.take(), 100)
"""


def test_a_user_cannot_write_lines_into_the_daemons_log(daemon):
    """The daemon logs what a user named (Attach's command, the paths of an operation that
    timed out) one line per message, with journald's "<N>" priority prefix on stderr. A
    newline in a name started a line of the user's own, at any priority she liked."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    sb.run_as("alice", ["/usr/bin/python3", "-c", ATTACH_NAMED, "/nonexistent\n<0>nsmanagerd: forged by alice"],
              check=True)
    lines = sb.daemon_log_text().splitlines()
    assert any("nonexistent" in line for line in lines), "the Attach was not logged"
    assert not any(line.startswith(("<0>nsmanagerd: forged", "nsmanagerd: forged")) for line in lines), \
        "alice wrote a line of her own into the daemon's log"


# ---------------------------------------------------------------------------
# the audit records: who changed what (src/nsmanagerd/audit.h)

AUDIT_IDS = {
    "CreateNamespace": "b064cde38c59441c9b83ad891b2d6284",
    "RemoveNamespace": "73d2b3853694401c8f64b9dabd57a931",
    "ShareSubtree": "b2c9bb3546434ef2b105c1965cf7ab80",
    "EnslaveSubtree": "920b36f2f1c848db89dd3e516475c1b2",
    "SetPropagation": "5ccd9834eee744c582841972b55a1679",
    "BindMount": "234f4ef9fa8841c8ba2eaf1e05ba42f3",
    "Unmount": "1de3f1e86c974d7fb61292f482e82788",
    "SetLinger": "ff08291e0f46411881298f54ed9326c7",
    "OpenAttach": "c612a1464d94450fb7eba4600478c07c",
    "ReloadConfig": "c93ed6426ca140b096e87616af594b4d",
}


def audit_records(sb, action):
    return [r for r in sb.journal_records() if r.get("NSM_ACTION") == action]


def test_audit_records_name_caller_and_arguments(daemon, manager, nsctl, polkit_rules):
    """carol (group nsadmin, allowed manage by a rule) binds into bob's view, root enslaves,
    shares, sets linger, creates, removes and reloads, alice attaches to her own view: each
    change is one record with its MESSAGE_ID, the caller's uid, name and pid, the namespace's
    user and the arguments, and the outcome. Reads leave none."""
    sb = daemon
    polkit_rules("50-nsadmin", """polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage" && subject.isInGroup("nsadmin"))
            return polkit.Result.YES;
    });""")
    src = sb.instance / "audit-src"
    src.mkdir()
    for u in ("alice", "bob"):
        manager.CreateNamespace(u)
    assert nsctl("bind", "bob", src, "/mnt", as_user="carol").returncode == 0
    assert nsctl("enslave", "bob", "/mnt").returncode == 0
    assert nsctl("share", "bob", "/mnt").returncode == 0
    assert nsctl("propagation", "bob", "/mnt", "private").returncode == 0
    assert nsctl("linger", "bob", "yes").returncode == 0
    assert nsctl("create", "carol").returncode == 0
    assert nsctl("remove", "carol").returncode == 0
    assert nsctl("reload").returncode == 0
    p = nsctl("attach", "alice", "--", "true", as_user="alice")
    assert p.returncode == 0, p.stderr
    reads_before = len(sb.journal_records())
    nsctl("list"), nsctl("status", "bob"), nsctl("mounts", "bob")
    assert not [r for r in sb.journal_records()[reads_before:] if "NSM_ACTION" in r]

    def one(action, **fields):
        found = [r for r in audit_records(sb, action) if all(r.get(k) == v for k, v in fields.items())]
        assert len(found) == 1, (action, fields, audit_records(sb, action))
        r = found[0]
        assert r["MESSAGE_ID"] == AUDIT_IDS[action] and r["NSM_RESULT"] == "done", r
        assert int(r["NSM_CALLER_PID"]) > 0 and r["PRIORITY"] == "6", r
        return r

    r = one("BindMount", NSM_USER="bob", NSM_CALLER_UID="2003")
    assert (r["NSM_CALLER_USER"], r["NSM_SOURCE"], r["NSM_PATH"], r["NSM_FLAGS"]) == ("carol", str(src), "/mnt", "0x0")
    # the message names the flags; the field keeps the number the catalog explains
    assert r["MESSAGE"].endswith(f"source={src} path=/mnt flags=none: done."), r["MESSAGE"]
    assert "BindMount by carol (uid 2003" in r["MESSAGE"] and "in the view of 'bob'" in r["MESSAGE"], r["MESSAGE"]
    one("EnslaveSubtree", NSM_USER="bob", NSM_CALLER_UID="0", NSM_CALLER_USER="root", NSM_PATH="/mnt")
    one("ShareSubtree", NSM_USER="bob", NSM_CALLER_UID="0", NSM_PATH="/mnt")
    one("SetPropagation", NSM_USER="bob", NSM_PATH="/mnt", NSM_MODE="private", NSM_FLAGS="0x0")
    one("SetLinger", NSM_USER="bob", NSM_LINGER="yes", NSM_CALLER_UID="0")
    one("CreateNamespace", NSM_USER="carol", NSM_CALLER_UID="0")
    one("RemoveNamespace", NSM_USER="carol", NSM_CALLER_UID="0")
    one("ReloadConfig", NSM_CALLER_UID="0")
    r = one("OpenAttach", NSM_USER="alice", NSM_CALLER_UID="2001", NSM_CALLER_USER="alice", NSM_COMMAND="true")
    assert int(r["NSM_PID"]) > 0
    assert not any("ENV" in k for k in r), r     # never the command's environment


def test_a_uid_above_2_31_is_printed_unsigned(daemon, manager, nsctl):
    """erin's uid is 3000000000, as sssd hands out: the audit record of her call and nsctl
    list show it as it is, not as a negative number."""
    sb = daemon
    manager.CreateNamespace("erin")
    p = nsctl("attach", "erin", "--", "true", as_user="erin")
    assert p.returncode == 0, p.stderr
    recs = [r for r in audit_records(sb, "OpenAttach") if r.get("NSM_USER") == "erin"]
    assert len(recs) == 1 and recs[0]["NSM_CALLER_UID"] == "3000000000", recs
    assert "OpenAttach by erin (uid 3000000000, pid" in recs[0]["MESSAGE"], recs[0]["MESSAGE"]
    rows = [line.split() for line in nsctl("list").stdout.splitlines()]
    assert ["erin", "3000000000"] in [r[:2] for r in rows], rows
    assert [str(u) for u, uid, *_ in manager.ListNamespaces() if int(uid) == 3000000000] == ["erin"]


def test_audit_records_refusals(daemon, manager, nsctl):
    """A refused change is on record too, with the error's name: alice trying bob's view. The
    message ends with the error's sentence and one full stop; flags are named."""
    sb = daemon
    manager.CreateNamespace("bob")
    assert nsctl("--no-ask-password", "linger", "bob", "yes", as_user="alice").returncode == 1
    assert nsctl("unmount", "bob", "/", "--detach").returncode == 1
    assert nsctl("eject", "--lazy", "/nsm-no-such-device").returncode == 1
    recs = audit_records(sb, "SetLinger")
    assert len(recs) == 1 and recs[0]["NSM_CALLER_UID"] == "2001" and recs[0]["PRIORITY"] == "5", recs
    assert recs[0]["NSM_RESULT"] == "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired", recs
    recs = audit_records(sb, "Unmount")
    assert len(recs) == 1 and recs[0]["NSM_RESULT"] == "org.example.NSManager.Error.InvalidPath", recs
    assert "flags=detach: refused:" in recs[0]["MESSAGE"] and recs[0]["NSM_FLAGS"] == "0x1", recs[0]
    recs = audit_records(sb, "Eject")
    assert len(recs) == 1 and "what=/nsm-no-such-device flags=lazy: refused: " in recs[0]["MESSAGE"], recs
    for action in ("SetLinger", "Unmount", "Eject"):
        message = audit_records(sb, action)[0]["MESSAGE"]
        assert message.endswith(".") and not message.endswith(".."), message
