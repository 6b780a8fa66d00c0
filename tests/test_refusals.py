# SPDX-License-Identifier: LGPL-2.1-or-later
"""Refusals not covered by the feature suites: each gets its named error, and nothing changes."""

import os
import signal
import time

import dbus
import pytest

from sandbox import ERROR_PREFIX, dbus_error_name, timeout

INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"


def expect_error(call, *names):
    with pytest.raises(dbus.exceptions.DBusException) as info:
        call()
    assert dbus_error_name(info.value) in names, f"{dbus_error_name(info.value)}: {info.value}"
    assert info.value.get_dbus_message(), "a refusal must say why"
    return info.value


def test_close_unknown_session(daemon, manager):
    manager.OpenSession("alice", "s1")
    expect_error(lambda: manager.CloseSession("alice", "no-such-session"), ERROR_PREFIX + "NoSuchSession")
    expect_error(lambda: manager.CloseSession("bob", "s1"), ERROR_PREFIX + "NoSuchNamespace")
    sessions = daemon.properties(manager.GetNamespace("alice"))["Sessions"]
    assert list(sessions) == ["s1"], "a refused CloseSession changed the sessions"


@pytest.mark.parametrize("session_id", ["", "has space", "a:b", "x" * 300, "tab\there"])
def test_open_session_with_a_bad_id(daemon, manager, session_id):
    expect_error(lambda: manager.OpenSession("alice", session_id), INVALID_ARGS)
    expect_error(lambda: manager.GetNamespace("alice"), ERROR_PREFIX + "NoSuchNamespace")


def test_nothing_is_bound_over_a_views_root(daemon, manager):
    manager.CreateNamespace("alice")
    before = daemon.mount_count("alice")
    expect_error(lambda: manager.BindMount("alice", "/home/alice", "/", dbus.UInt64(0)), ERROR_PREFIX + "InvalidPath")
    expect_error(lambda: manager.Unmount("alice", "/", dbus.UInt64(1)), ERROR_PREFIX + "InvalidPath")
    assert daemon.mount_count("alice") == before


def attach_call(manager, command, env=(), cwd="/", status=None):
    r, w = os.pipe()
    try:
        fds = [dbus.types.UnixFd(f) for f in (0, 1, 2, status if status is not None else w)]
        return manager.Attach("alice", dbus.Array(command, "s"), dbus.Array(list(env), "s"), cwd, *fds)
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("command, env, cwd, error", [
    ([], [], "/", INVALID_ARGS),                                   # no command
    ([""], [], "/", INVALID_ARGS),                                 # empty command
    (["bin/true"], [], "/", INVALID_ARGS),                         # relative path with a slash
    (["true"], ["NOEQUALS"], "/", INVALID_ARGS),                   # not KEY=VALUE
    (["true"], ["=value"], "/", INVALID_ARGS),                     # empty key
    (["true"], [], "relative/dir", ERROR_PREFIX + "InvalidPath"),  # relative working directory
])
def test_attach_refuses_bad_arguments(daemon, manager, command, env, cwd, error):
    manager.CreateNamespace("alice")
    expect_error(lambda: attach_call(manager, command, env, cwd), error)


def test_attach_refuses_a_status_fd_it_cannot_write(daemon, manager):
    manager.CreateNamespace("alice")
    r, w = os.pipe()
    try:
        # the read end of a pipe: the daemon could never report the exit status
        expect_error(lambda: attach_call(manager, ["true"], status=r), INVALID_ARGS)
    finally:
        os.close(r)
        os.close(w)


def test_sighup_reloads_the_configuration_for_new_namespaces(daemon, manager):
    manager.CreateNamespace("alice")
    daemon.write_config(ExcludeUsers="bob")
    os.kill(daemon.daemon.pid, signal.SIGHUP)
    deadline = time.monotonic() + timeout(10)
    while True:
        try:
            manager.CreateNamespace("bob")
        except dbus.exceptions.DBusException as e:
            assert dbus_error_name(e) == ERROR_PREFIX + "UserExcluded"
            break
        manager.RemoveNamespace("bob")        # not reloaded yet: undo and try again
        assert time.monotonic() < deadline, "SIGHUP did not reload ExcludeUsers="
        time.sleep(0.05)
    # existing namespaces are untouched, the daemon still runs
    assert manager.GetNamespace("alice")
    assert daemon.daemon.poll() is None


def test_reload_with_a_broken_file_keeps_the_old_configuration(daemon, manager):
    daemon.write_config(extra="[Manager]\nMinUID=not-a-number\n")
    e = expect_error(lambda: manager.ReloadConfig(), "org.freedesktop.DBus.Error.Failed")
    assert "nsmanagerd.conf:" in e.get_dbus_message() and "not a valid UID" in e.get_dbus_message(), \
        "the refusal should name the file, line and value"
    manager.CreateNamespace("alice")          # MinUID=1000 still holds: alice (2001) is fine
    expect_error(lambda: manager.CreateNamespace("svc"), ERROR_PREFIX + "UserExcluded")
