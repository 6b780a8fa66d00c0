# SPDX-License-Identifier: LGPL-2.1-or-later
"""No file descriptor a user sends ever reaches the daemon.

Closing an fd of a file on a FUSE mount sends its server FLUSH, and the closing process waits
for the answer uninterruptibly: the kernel sends it as a forced request, SIGKILL does not end
the wait. The server sees who closes (the request's header carries the pid), so it can answer
everyone but the daemon. Any bus client may attach fds to any message, to a call the daemon
refuses too, and sd-bus closes them when it frees the message, in the event loop: one such fd
of alice's froze the daemon for everybody, logins included, until her server went away.

The FUSE server here is the tests' own (tests/helpers/fuse-hang.c, "flush-hang"): mounted for alice
without allow_other, as her fusermount3 would, it answers every request, reads of 'file'
included, except FLUSH from the daemon and its children. alice opens 'file' and sends the
fd: on a call the daemon refuses (ListNamespaces takes no fd), and as the stdin of Attach.
The bus policy (dbus/org.example.NSManager.conf) refuses both before the daemon sees them;
meanwhile bob's calls are answered within their deadline, root's logins of bob through the
real PAM stack land in his view, and SIGTERM ends the daemon in seconds."""

import json
import signal
import subprocess
import time

import pytest

from helpers import PamServices
from sandbox import TEST_USERS, timeout
from test_hung_fs import FuseServer, alice_fuse_dir, others_are_served

# As alice: open FILE on her FUSE mount and send the fd to the daemon with METHOD: prints the
# outcome as JSON. "ListNamespaces" takes no fd: the call is refused, with the fd on it.
SEND_FD = r"""
import json, os, sys
import dbus, dbus.lowlevel
path, method = sys.argv[1:3]
fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
os.read(fd, 16)    # her server answers her
msg = dbus.lowlevel.MethodCallMessage("org.example.NSManager", "/org/example/NSManager",
                                      "org.example.NSManager.Manager", method)
if method == "Attach":
    status_r, status_w = os.pipe()
    msg.append("alice", ["true"], [], "/", dbus.types.UnixFd(fd), dbus.types.UnixFd(status_w),
               dbus.types.UnixFd(status_w), dbus.types.UnixFd(status_w), signature="sasasshhhh")
else:
    msg.append(dbus.types.UnixFd(fd), signature="h")
os.close(fd)       # the message keeps a copy; her own close is answered
try:
    reply = dbus.SystemBus().send_message_with_reply_and_block(msg, 20)
    print(json.dumps({"ok": str(reply.get_args_list())}))
except dbus.exceptions.DBusException as e:
    print(json.dumps({"error": e.get_dbus_name(), "message": e.get_dbus_message()}))
"""


@pytest.fixture
def alices_file(daemon, pam_dir, pam_module):
    """alice's FUSE mount whose server never answers the daemon's FLUSH: 'file' on it; bob's
    logins with the project's PAM service for runuser -l (pam_nsmanager required)."""
    sb = daemon
    sb.manager().CreateNamespace("alice")
    target = alice_fuse_dir()
    server = FuseServer(sb, "flush-hang", str(target), TEST_USERS["alice"].uid, args=(str(sb.daemon.pid), "private"))
    pam = PamServices(pam_dir, pam_module)
    try:
        pam.install("runuser-l", "nsm-runuser-l-required")
        yield sb, target / "file", server
    finally:
        pam.restore()
        server.stop()


def everybody_else_is_served(sb):
    """bob's own calls answered within a second; root's for him too (his namespace, a
    session); a login of bob's through runuser -l and the PAM stack lands in his view."""
    p = sb.run_as("bob", ["timeout", str(timeout(5)), "busctl", "call", "org.example.NSManager",
                          "/org/example/NSManager", "org.example.NSManager.Manager", "ListNamespaces"], wait=30)
    assert p.returncode == 0, f"bob's ListNamespaces: {p.stderr}"
    others_are_served(sb)
    p = subprocess.run(["runuser", "-l", "bob", "-c", "readlink /proc/self/ns/mnt"], capture_output=True,
                       text=True, timeout=timeout(30))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"mnt:[{sb.view_ns_id('bob')}]", "bob's login is not in his view"


def the_daemon_ends_on_sigterm(sb):
    t = time.monotonic()
    status = sb.stop_daemon(signal.SIGTERM, wait=10)
    took = time.monotonic() - t
    assert status == 0 and took < timeout(5), f"SIGTERM: exit status {status} after {took:.1f}s"
    sb.restart_daemon()     # for the fixture, which removes the namespaces through it


@pytest.mark.parametrize("method", ["ListNamespaces", "Attach"])
def test_an_fd_on_alices_fuse_mount_never_reaches_the_daemon(alices_file, method):
    sb, file, server = alices_file
    p = sb.run_as("alice", ["/usr/bin/python3", "-c", SEND_FD, file, method], wait=60)
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    everybody_else_is_served(sb)
    the_daemon_ends_on_sigterm(sb)
    # The bus's refusal (dbus-daemon's words), not the daemon's: it never saw the message.
    assert result.get("error") == "org.freedesktop.DBus.Error.AccessDenied", result
    assert result["message"].startswith("Rejected send message"), result
    server.stop()
    log = server.proc.stderr.read()
    assert "not answering FLUSH" not in log, f"a process of the daemon's closed alice's fd: {log}"
