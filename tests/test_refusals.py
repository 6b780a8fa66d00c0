# SPDX-License-Identifier: LGPL-2.1-or-later
"""Refusals not covered by the feature suites: each gets its named error, and nothing changes."""

import os
import signal

import dbus
import pytest

from caller import call_as
from helpers import (E_ACCESS_DENIED, E_FAILED, E_INVALID_ARGS, E_INVALID_PATH, E_NO_SUCH_NAMESPACE,
                     E_NO_SUCH_SESSION, E_USER_EXCLUDED, expect_error, open_session, wait_until)
from sandbox import NSM_PRIVATE_SOCKET, dbus_error_name, find_mount, timeout


def test_close_unknown_session(daemon, manager):
    fd = open_session(manager, "alice", "s1")
    try:
        expect_error(lambda: manager.CloseSession("alice", "no-such-session"), E_NO_SUCH_SESSION)
        expect_error(lambda: manager.CloseSession("bob", "s1"), E_NO_SUCH_NAMESPACE)
        sessions = daemon.properties(manager.GetNamespace("alice"))["Sessions"]
        assert list(sessions) == ["s1"], "a refused CloseSession changed the sessions"
    finally:
        os.close(fd)


@pytest.mark.parametrize("session_id", ["", "has space", "a:b", "x" * 300, "tab\there"])
def test_open_session_with_a_bad_id(daemon, manager, session_id):
    expect_error(lambda: manager.OpenSession("alice", session_id), E_INVALID_ARGS)
    expect_error(lambda: manager.GetNamespace("alice"), E_NO_SUCH_NAMESPACE)


def test_nothing_is_bound_over_a_views_root(daemon, manager):
    manager.CreateNamespace("alice")
    before = daemon.mount_count("alice")
    expect_error(lambda: manager.BindMount("alice", "/home/alice", "/", dbus.UInt64(0)), E_INVALID_PATH)
    expect_error(lambda: manager.Unmount("alice", "/", dbus.UInt64(1)), E_INVALID_PATH)
    assert daemon.mount_count("alice") == before


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
    (["true"], [], "/", 0x2, E_INVALID_ARGS),                        # unknown flag
])
def test_open_attach_refuses_bad_arguments(daemon, manager, command, env, cwd, flags, error):
    """OpenAttach checks its arguments as Attach does, and its flags, before it makes any fd."""
    manager.CreateNamespace("alice")
    expect_error(lambda: manager.OpenAttach("alice", dbus.Array(command, "s"), dbus.Array(env, "s"), cwd,
                                            dbus.UInt64(flags)), error)


def test_sighup_reloads_the_configuration_for_new_namespaces(daemon, manager):
    manager.CreateNamespace("alice")
    daemon.write_config(ExcludeUsers="bob")
    os.kill(daemon.daemon.pid, signal.SIGHUP)

    def refused():
        try:
            manager.CreateNamespace("bob")
        except dbus.exceptions.DBusException as e:
            assert dbus_error_name(e) == E_USER_EXCLUDED
            return True
        manager.RemoveNamespace("bob")        # not reloaded yet: undo and try again
        return False
    wait_until(refused, "SIGHUP to reload ExcludeUsers=", interval=0.05)
    # existing namespaces are untouched, the daemon still runs
    assert manager.GetNamespace("alice")
    assert daemon.daemon.poll() is None


def test_reload_with_a_broken_file_keeps_the_old_configuration(daemon, manager):
    daemon.write_config(extra="[Manager]\nMinUID=not-a-number\n")
    e = expect_error(lambda: manager.ReloadConfig(), E_FAILED)
    assert "nsmanagerd.conf:" in e.get_dbus_message() and "not a valid UID" in e.get_dbus_message(), \
        "the refusal should name the file, line and value"
    manager.CreateNamespace("alice")          # MinUID=1000 still holds: alice (2001) is fine
    expect_error(lambda: manager.CreateNamespace("svc"), E_USER_EXCLUDED)


def test_root_only_methods_refuse_everybody_else(daemon, manager):
    """OpenSession, CloseSession and OpenMountNamespace are the PAM module's and root's: alice
    may not open or close a session (hers or bob's) nor take a namespace's fd, even with
    interaction allowed, and the refused calls change no session."""
    held = [open_session(manager, "alice", "s1"), open_session(manager, "bob", "s1")]
    for method, signature, args in (("CloseSession", "ss", ("alice", "s1")),
                                    ("CloseSession", "ss", ("bob", "s1")),
                                    ("OpenSession", "ss", ("alice", "s2")),
                                    ("OpenMountNamespace", "s", ("alice",)),
                                    ("OpenMountNamespace", "s", ("bob",))):
        r = call_as(daemon, "alice", method, signature, *args, interactive=True)
        assert r.get("error") == E_ACCESS_DENIED, f"alice: {method}{args}: {r}"
        assert "only available to root" in r["message"], r
    for user in ("alice", "bob"):
        sessions = daemon.properties(manager.GetNamespace(user))["Sessions"]
        assert list(sessions) == ["s1"], f"a refused call changed {user}'s sessions: {list(sessions)}"
    for fd in held:
        os.close(fd)


def test_the_hosts_root_is_never_unbindable(daemon, manager):
    """Every view is a copy of the host's '/': an unbindable one could not be copied."""
    before = find_mount(daemon.mountinfo(), "/")
    for flags in (0, 1):
        e = expect_error(lambda: manager.SetPropagation("", "/", "unbindable", dbus.UInt64(flags)), E_INVALID_PATH)
        assert "cannot be unbindable" in e.get_dbus_message(), e.get_dbus_message()
    after = find_mount(daemon.mountinfo(), "/")
    assert (after.id, after.optional) == (before.id, before.optional), "the refused call changed the host's '/'"
    manager.CreateNamespace("alice")          # views are still made


def test_a_view_path_on_another_file_system_does_not_rejoin_the_host(daemon, manager):
    """ShareSubtree(user, P) joins the host's peer group at P only where the view's P is on
    the host's file system there: a group cannot be joined across file systems (a
    PrivateTmp= /tmp, here a tmpfs root mounted over alice's /mnt)."""
    manager.CreateNamespace("alice")
    host_mnt = find_mount(daemon.mountinfo(), "/mnt")
    assert host_mnt is not None and host_mnt.shared, "the host's /mnt should be a shared subtree"
    # private first, so that the tmpfs over it stays in alice's view (not the sandbox's
    # mount_tmpfs(view=): its cleanup would unmount the host's /mnt)
    manager.SetPropagation("alice", "/mnt", "private", dbus.UInt64(0))
    daemon.in_view("alice", ["mount", "-t", "tmpfs", "-o", "size=4m,nosuid,nodev", "nsm-other-fs", "/mnt"], check=True)
    before = find_mount(daemon.mountinfo("alice"), "/mnt")
    assert before.source == "nsm-other-fs" and not before.shared, before
    e = expect_error(lambda: manager.ShareSubtree("alice", "/mnt"), E_INVALID_PATH)
    assert "not the host's filesystem" in e.get_dbus_message(), e.get_dbus_message()
    after = find_mount(daemon.mountinfo("alice"), "/mnt")
    assert (after.id, after.peer_group) == (before.id, before.peer_group), "the refused call changed alice's /mnt"
    assert find_mount(daemon.mountinfo(), "/mnt").id == host_mnt.id, "the host's /mnt changed"
    daemon.umount("/mnt", view="alice")


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
