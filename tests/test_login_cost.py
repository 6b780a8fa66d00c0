# SPDX-License-Identifier: LGPL-2.1-or-later
"""Work a login does not need, and must not do (bench/ measures how long the rest takes;
these tests check, with strace, that the work is gone, never how fast anything is):

  - one bus round trip per call: the caller's credentials are asked of the bus once per
    connection, not at every call;
  - no group lookup when no group has a [View] policy (group.d/GROUP.conf): NSS's initgroups
    reads all of /etc/group, then asks every other source of groups;
  - a view builder that stops answering is replaced at the deadline of what it works on,
    not earlier (its timer stays armed across requests);
  - a burst of logins on the private socket, beyond the connections the daemon serves at
    once, is answered in full.
"""

import collections
import contextlib
import os
import re
import signal
import subprocess
import time

import dbus
import pytest

from helpers import E_TIMED_OUT, daemon_syscalls, expect_error, wait_until
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH, SYSTEM_BUS_ADDRESS, build_dir, timeout


def private_manager():
    """The Manager through a connection of its own (a new unique name on the bus)."""
    bus = dbus.bus.BusConnection(SYSTEM_BUS_ADDRESS)
    return bus, dbus.Interface(bus.get_object(BUS_NAME, MANAGER_PATH), MANAGER_IFACE)


def credential_queries(trace: str) -> int:
    return len(re.findall(r"GetConnectionCredentials", trace))


def test_credentials_are_asked_once_per_connection(daemon):
    sb = daemon
    bus, mgr = private_manager()
    try:
        first = daemon_syscalls(sb, lambda: mgr.CreateNamespace("alice"), "sendmsg", strsize=512)
        again = daemon_syscalls(sb, lambda: (mgr.GetNamespace("alice"), mgr.CreateNamespace("bob")), "sendmsg",
                                strsize=512)
    finally:
        bus.close()
    assert credential_queries(first) == 1, f"the first call should ask the bus for the caller once:\n{first}"
    assert credential_queries(again) == 0, f"later calls on the connection asked the bus again:\n{again}"


def test_no_group_lookup_without_group_policies(daemon):
    sb = daemon
    trace = daemon_syscalls(sb, lambda: sb.manager().CreateNamespace("carol"), "openat")
    assert '"/etc/passwd"' in trace, f"the user is looked up:\n{trace}"
    assert '"/etc/group"' not in trace, f"carol's groups were looked up though no group has a policy:\n{trace}"


@pytest.mark.daemon_config(files={"group.d/nsadmin.conf": "[View]\nPrivateTmp=yes\n"})
def test_group_policies_look_groups_up(daemon):
    sb = daemon
    trace = daemon_syscalls(sb, lambda: sb.manager().CreateNamespace("carol"), "openat")
    assert '"/etc/group"' in trace, f"carol is in nsadmin, which has a policy:\n{trace}"
    # The policy in force was read at start (and at each reload), not at the view.
    assert "group.d/nsadmin.conf" not in trace, trace


def daemon_children(sb):
    return [int(p) for p in open(f"/proc/{sb.daemon.pid}/task/{sb.daemon.pid}/children").read().split()]


@pytest.mark.daemon_config(OperationTimeoutSec="2s")
def test_a_stuck_builder_is_replaced_at_the_deadline(daemon):
    sb = daemon
    mgr = sb.manager()
    mgr.CreateNamespace("alice")      # the builder's timer is armed for this call's deadline
    time.sleep(1)                     # bob's deadline comes a second after alice's
    [builder] = daemon_children(sb)
    os.kill(builder, signal.SIGSTOP)
    try:
        start = time.monotonic()
        e = expect_error(lambda: mgr.CreateNamespace("bob"), E_TIMED_OUT)
        took = time.monotonic() - start
    finally:
        with contextlib.suppress(ProcessLookupError):   # killed and reaped by now, as it should be
            os.kill(builder, signal.SIGCONT)
    assert "did not answer in time" in e.get_dbus_message(), e.get_dbus_message()
    # Not at alice's deadline, which came first: at bob's own, counted from his call.
    assert took >= 2, f"bob's call was given up after {took:.2f}s, before OperationTimeoutSec=2s"
    wait_until(lambda: builder not in daemon_children(sb) and len(daemon_children(sb)) == 1,
               "the stuck builder to be replaced", timeout(10))
    mgr.CreateNamespace("bob")
    assert sb.mount_count("alice") > 0 and sb.mount_count("bob") > 0


def test_a_burst_of_logins_on_the_private_socket(daemon):
    """More logins at once than the daemon serves on its private socket (it takes the rest
    from the listen backlog as connections go): every one is answered, with its namespace."""
    sb = daemon
    burst = build_dir() / "bench" / "nsm-burst"
    assert burst.exists(), f"{burst} is not built"
    users = ["alice", "bob", "carol", "dave"] * 50
    p = subprocess.run([str(burst), "--private", "--concurrency", "200", "OpenSession"],
                       input="\n".join(users) + "\n", capture_output=True, text=True, check=True,
                       timeout=timeout(120))
    results = collections.Counter(line.split()[3] for line in p.stdout.splitlines())
    assert results == {"ok": len(users)}, f"not every login was answered: {dict(results)}"
    assert sorted(str(u) for u, *_ in sb.manager().ListNamespaces()) == ["alice", "bob", "carol", "dave"]
