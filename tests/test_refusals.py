# SPDX-License-Identifier: LGPL-2.1-or-later
"""Refusals of what most methods take, a user and a session id: each gets its named error
and a message, and nothing changes (no namespace, no mount, no directory, no session; the
daemon still serving).

The refusals of one feature's calls are with that feature: the propagation API's in
test_propagation.py, Attach's in test_attach.py, a user's changes to her own view in
test_own_view.py, the configuration's in test_config.py, who may call what in
test_polkit.py, the private socket's in test_private_socket.py, nsctl's in test_nsctl.py."""

import os

import dbus
import pytest

from helpers import (E_INVALID_ARGS, E_NO_SUCH_NAMESPACE, E_NO_SUCH_SESSION, E_NO_SUCH_USER, E_USER_EXCLUDED,
                     create, expect_error, ns_path, open_session)
from sandbox import TEST_USERS


# ---- a user: unknown, not a name, excluded, without a namespace ----

@pytest.mark.parametrize("name", ["nosuchuser", "zz-nobody-here"])
def test_unknown_user(daemon, name):
    e = expect_error(lambda: daemon.manager().CreateNamespace(name), E_NO_SUCH_USER)
    assert name in e.get_dbus_message(), f"message does not name the user: {e.get_dbus_message()!r}"


@pytest.mark.parametrize("name", ["../x", "", "a/b", ".", "..", "/", "alice/../bob", "x" * 300,
                                  "al ice", "alice\n", "-rf"])
def test_invalid_user_names(daemon, name):
    e = expect_error(lambda: daemon.manager().CreateNamespace(name), E_NO_SUCH_USER, E_INVALID_ARGS)
    assert e.get_dbus_message(), "refusal without a message"
    assert daemon.daemon_running()
    assert list(daemon.manager().ListNamespaces()) == []
    for made in (daemon.subtree_root.parent / "x", daemon.subtree_root / "a"):
        assert not made.exists(), f"the refused name left {made} behind"


@pytest.mark.daemon_config(ExcludeUsers="dave")
@pytest.mark.parametrize("name", ["root", "svc", "dave"])
def test_excluded_users(daemon, name):
    """root and a system user (uid 500 < MinUID) and an ExcludeUsers user."""
    e = expect_error(lambda: daemon.manager().CreateNamespace(name), E_USER_EXCLUDED)
    assert name in e.get_dbus_message(), f"message does not name the user: {e.get_dbus_message()!r}"
    assert list(daemon.manager().ListNamespaces()) == []


@pytest.mark.daemon_config(MinUID=2003)
def test_min_uid_setting(daemon):
    expect_error(lambda: daemon.manager().CreateNamespace("bob"), E_USER_EXCLUDED)       # 2002
    assert create(daemon, "carol") == [ns_path("carol")]                               # 2003


def test_get_namespace_of_none(daemon):
    expect_error(lambda: daemon.manager().GetNamespace("bob"), E_NO_SUCH_NAMESPACE)
    expect_error(lambda: daemon.manager().GetNamespace("nosuchuser"), E_NO_SUCH_NAMESPACE, E_NO_SUCH_USER)
    expect_error(lambda: daemon.manager().RemoveNamespace("bob"), E_NO_SUCH_NAMESPACE)


def test_refusals_leave_daemon_and_host_intact(daemon):
    start = daemon.mountinfo()
    m = daemon.manager()
    for name, names in (("../x", (E_NO_SUCH_USER, E_INVALID_ARGS)), ("", (E_NO_SUCH_USER, E_INVALID_ARGS)),
                        ("a/b", (E_NO_SUCH_USER, E_INVALID_ARGS)), ("root", (E_USER_EXCLUDED,)),
                        ("svc", (E_USER_EXCLUDED,)), ("nosuchuser", (E_NO_SUCH_USER,))):
        expect_error(lambda: m.CreateNamespace(name), *names)
    assert daemon.daemon_running()
    assert {x.id for x in daemon.mountinfo()} == {x.id for x in start}
    assert create(daemon, "alice") == [ns_path("alice")]


NO_FLAGS = dbus.UInt64(0)


# The contract's errors of a user, for every Manager method that takes one (docs/interface.md):
# a name that is no user, a user that is not managed, a user without a namespace (bob: alice
# has one), a session the namespace does not have. Each comes out under the name the contract
# gives it there, whatever the method.
@pytest.mark.parametrize("call, error", [
    (lambda m: m.CreateNamespace("no-such-user"), E_NO_SUCH_USER),
    (lambda m: m.CreateNamespace("not a name"), E_NO_SUCH_USER),
    (lambda m: m.CreateNamespace("svc"), E_USER_EXCLUDED),
    (lambda m: m.OpenSession("no-such-user", "s1"), E_NO_SUCH_USER),
    (lambda m: m.OpenSession("svc", "s1"), E_USER_EXCLUDED),
    (lambda m: m.Can("SetLinger", "no-such-user"), E_NO_SUCH_USER),
    (lambda m: m.RemoveNamespace("bob"), E_NO_SUCH_NAMESPACE),
    (lambda m: m.GetNamespace("bob"), E_NO_SUCH_NAMESPACE),
    (lambda m: m.GetNamespaceByUID(dbus.UInt32(TEST_USERS["bob"].uid)), E_NO_SUCH_NAMESPACE),
    (lambda m: m.CloseSession("bob", "s1"), E_NO_SUCH_NAMESPACE),
    (lambda m: m.CloseSession("alice", "no-such-session"), E_NO_SUCH_SESSION),
    (lambda m: m.OpenMountNamespace("bob"), E_NO_SUCH_NAMESPACE),
    (lambda m: m.ShareSubtree("bob", "/mnt"), E_NO_SUCH_NAMESPACE),
    (lambda m: m.EnslaveSubtree("bob", "/mnt"), E_NO_SUCH_NAMESPACE),
    (lambda m: m.SetPropagation("bob", "/mnt", "slave", NO_FLAGS), E_NO_SUCH_NAMESPACE),
    (lambda m: m.BindMount("bob", "/srv", "/mnt", NO_FLAGS), E_NO_SUCH_NAMESPACE),
    (lambda m: m.Unmount("bob", "/mnt", NO_FLAGS), E_NO_SUCH_NAMESPACE),
    (lambda m: m.GetMounts("bob"), E_NO_SUCH_NAMESPACE),
    (lambda m: m.SetLinger("bob", True), E_NO_SUCH_NAMESPACE),
    (lambda m: m.OpenAttach("bob", dbus.Array(["true"], "s"), dbus.Array([], "s"), "/", NO_FLAGS),
     E_NO_SUCH_NAMESPACE),
])
def test_each_method_names_a_users_refusal(daemon, manager, call, error):
    manager.CreateNamespace("alice")
    expect_error(lambda: call(manager), error)
    users = sorted(str(u) for u, _uid, _state, _path in manager.ListNamespaces())
    assert users == ["alice"], f"a refused call changed the namespaces: {users}"


# ---- a session id ----

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
