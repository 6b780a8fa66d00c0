# SPDX-License-Identifier: LGPL-2.1-or-later
"""Can(method, user): what a call would get from polkit, asked without interaction, through
the real bus and the real polkitd (as logind's CanPowerOff()).

There is no logind session in the sandbox: polkit treats every caller as "any", so
manage-own is auth_admin there (challenge), manage auth_admin_keep (challenge), attach-own
yes and attach auth_admin. Rules of the test's own change that; each answer is held against
what the call itself then does."""

import pytest

from caller import assert_ok, assert_refused, call_as
from helpers import (ALICE_OWN_ONLY, E_ACCESS_DENIED, E_INVALID_ARGS, E_LIMIT_EXCEEDED, E_NO_SUCH_USER, create,
                     expect_error)
from sandbox import MS_BIND, sys_mount, sys_umount

# Every method of the Manager Can() answers for, with what root gets on the host, on a view.
ROOT_ANSWERS = {
    "CreateNamespace": ("no", "yes"), "RemoveNamespace": ("no", "yes"),
    "GetNamespace": ("yes", "yes"), "GetNamespaceByUID": ("yes", "yes"), "ListNamespaces": ("yes", "yes"),
    "OpenSession": ("no", "yes"), "CloseSession": ("no", "yes"), "OpenMountNamespace": ("no", "yes"),
    "ShareSubtree": ("yes", "yes"), "EnslaveSubtree": ("no", "yes"), "SetPropagation": ("yes", "yes"),
    "BindMount": ("no", "yes"), "Unmount": ("no", "yes"), "GetMounts": ("yes", "yes"),
    "ListProcesses": ("no", "yes"), "SetLinger": ("no", "yes"), "Attach": ("no", "yes"), "OpenAttach": ("no", "yes"),
    "ReloadConfig": ("yes", "no"),
    "Eject": ("yes", "no"), "Subscribe": ("yes", "yes"), "Unsubscribe": ("yes", "yes"), "Can": ("yes", "yes"),
    "SubscribeViews": ("yes", "yes"), "UnsubscribeViews": ("yes", "yes"),
}

CHANGES_OF_A_VIEW = ("ShareSubtree", "EnslaveSubtree", "SetPropagation", "BindMount", "Unmount", "SetLinger")


def can(sb, caller, method, user, interactive=False):
    result = call_as(sb, caller, "Can", "ss", method, user, interactive=interactive)
    return assert_ok(result, f"{caller}: Can({method}, {user!r})")[0]


def test_root_may_everything_that_can_succeed(daemon, manager):
    create(daemon, "alice")
    for method, (host, view) in ROOT_ANSWERS.items():
        assert str(manager.Can(method, "")) == host, f"root: Can({method}, '')"
        assert str(manager.Can(method, "alice")) == view, f"root: Can({method}, 'alice')"
    # A user without a namespace is asked about too (CreateNamespace needs none).
    assert str(manager.Can("CreateNamespace", "bob")) == "yes"


def test_polkit_defaults_without_a_session(daemon):
    create(daemon, "alice", "bob")
    for method in CHANGES_OF_A_VIEW:
        assert can(daemon, "alice", method, "alice") == "challenge", f"manage-own is auth_admin: {method}"
        assert can(daemon, "alice", method, "bob") == "challenge", f"manage is auth_admin_keep: {method}"
    assert can(daemon, "alice", "OpenAttach", "alice") == "yes"      # attach-own: yes
    assert can(daemon, "alice", "OpenAttach", "bob") == "challenge"  # attach: auth_admin
    assert can(daemon, "alice", "Attach", "alice") == "no"           # takes fds: root's alone
    assert can(daemon, "alice", "RemoveNamespace", "alice") == "challenge"   # manage, also one's own
    assert can(daemon, "alice", "SetPropagation", "") == "challenge"
    assert can(daemon, "alice", "Eject", "") == "challenge"
    assert can(daemon, "alice", "ReloadConfig", "") == "challenge"
    # Reads and subscriptions are open; root's methods are not, and impossible calls are no.
    assert can(daemon, "alice", "GetMounts", "bob") == "yes"
    # Who runs what is not public: one's own view's processes, another's with manage.
    assert can(daemon, "alice", "ListProcesses", "alice") == "yes"
    assert can(daemon, "alice", "ListProcesses", "bob") == "challenge"
    assert can(daemon, "alice", "Subscribe", "") == "yes"
    assert can(daemon, "alice", "OpenMountNamespace", "alice") == "no"
    assert can(daemon, "alice", "OpenSession", "alice") == "no"
    assert can(daemon, "alice", "EnslaveSubtree", "") == "no"
    # Asking never asks anybody: with interaction allowed it is the same answer, at once.
    assert can(daemon, "alice", "SetLinger", "bob", interactive=True) == "challenge"


def test_answers_follow_the_rules_and_the_calls_agree(daemon, polkit_rules):
    create(daemon, "alice", "bob")
    polkit_rules("50-alice-own-only", ALICE_OWN_ONLY)
    for method in CHANGES_OF_A_VIEW:
        assert can(daemon, "alice", method, "alice") == "yes", method
        assert can(daemon, "alice", method, "bob") == "no", method
    assert can(daemon, "alice", "RemoveNamespace", "alice") == "no"
    assert can(daemon, "alice", "SetPropagation", "") == "no"
    # bob is not alice: the defaults still hold for him.
    assert can(daemon, "bob", "SetLinger", "bob") == "challenge"

    assert_ok(call_as(daemon, "alice", "SetLinger", "sb", "alice", True), "alice: SetLinger(alice)")
    assert_ok(call_as(daemon, "alice", "EnslaveSubtree", "ss", "alice", "/mnt"), "alice: EnslaveSubtree(alice, /mnt)")
    assert_refused(call_as(daemon, "alice", "SetLinger", "sb", "bob", True), "alice: SetLinger(bob)")
    assert_refused(call_as(daemon, "alice", "EnslaveSubtree", "ss", "bob", "/mnt"), "alice: EnslaveSubtree(bob, /mnt)")
    assert_refused(call_as(daemon, "alice", "RemoveNamespace", "s", "alice"), "alice: RemoveNamespace(alice)")


def test_rules_see_the_user(daemon, polkit_rules):
    """polkit rules get the view's user as a detail, as at the call."""
    create(daemon, "bob", "dave")
    polkit_rules("50-alice-dave", """
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage" && subject.user == "alice" &&
            action.lookup("user") == "dave")
                return polkit.Result.YES;
        if (action.id == "org.example.NSManager.manage" && subject.user == "alice")
                return polkit.Result.NO;
});
""")
    assert can(daemon, "alice", "SetLinger", "dave") == "yes"
    assert can(daemon, "alice", "SetLinger", "bob") == "no"
    assert can(daemon, "alice", "CreateNamespace", "dave") == "yes"
    assert_ok(call_as(daemon, "alice", "SetLinger", "sb", "dave", True), "alice: SetLinger(dave)")
    assert_refused(call_as(daemon, "alice", "SetLinger", "sb", "bob", True), "alice: SetLinger(bob)")


def test_bad_questions_are_named(daemon, manager):
    for method in ("", "Frobnicate", "setlinger", "Remove", "SetLinger\n"):
        expect_error(lambda: manager.Can(method, ""), E_INVALID_ARGS)
    for user in ("nosuchuser", "../alice", "alice/x", " alice"):
        expect_error(lambda: manager.Can("SetLinger", user), E_NO_SUCH_USER)
    result = call_as(daemon, "alice", "Can", "ss", "Frobnicate", "alice")
    assert result.get("error") == E_INVALID_ARGS and "Frobnicate" in result["message"], result


def test_no_polkit_is_an_error_not_an_answer(daemon, manager):
    """Without polkit (none running, none to activate) there is no verdict: the caller
    learns why instead of a guess."""
    create(daemon, "alice")
    empty = daemon.instance / "no-services"
    empty.mkdir()
    services = "/usr/share/dbus-1/system-services"
    daemon.stop_polkit()
    sys_mount(str(empty), services, None, MS_BIND)
    try:
        reload_bus(daemon)
        result = call_as(daemon, "alice", "Can", "ss", "SetLinger", "alice")
        assert result.get("error") == E_ACCESS_DENIED and "polkit is unavailable" in result["message"], result
        # Root and the open methods need no polkit.
        assert str(manager.Can("SetLinger", "alice")) == "yes"
        assert can(daemon, "alice", "GetMounts", "alice") == "yes"
    finally:
        sys_umount(services)
        reload_bus(daemon)
        daemon.start_polkit()


def reload_bus(sb):
    sb.bus().call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                           "ReloadConfig", "", ())


@pytest.mark.daemon_config(RateLimitBurst="3", RateLimitIntervalSec="1h")
def test_asking_polkit_is_rate_limited(daemon, manager):
    create(daemon, "alice")
    for _ in range(3):
        assert can(daemon, "alice", "SetLinger", "alice") == "challenge"
    result = call_as(daemon, "alice", "Can", "ss", "SetLinger", "alice")
    assert result.get("error") == E_LIMIT_EXCEEDED, result
    # What asks no polkit is not counted, and root is never limited.
    assert can(daemon, "alice", "GetNamespace", "alice") == "yes"
    for _ in range(5):
        assert str(manager.Can("SetLinger", "alice")) == "yes"
