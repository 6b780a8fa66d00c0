# SPDX-License-Identifier: LGPL-2.1-or-later
"""Attacks on a user's own view, tried after the rules of own-view-rules.h landed.

Each test is an attack by alice (manage-own granted by a polkit rule standing in for an
active session), by bob or dave (without it), or by a user with a FUSE mount of their own,
through the real polkitd and the real kernel; it asserts the safe outcome. What each one
found is told in its docstring.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest

from caller import call_as
from sandbox import TEST_USERS, find_mount
from test_own_view import (SECRET_POLICY, alice_file, as_user, is_mount_point, own,  # noqa: F401 (fixtures)
                           refused, srv)

ALICE = TEST_USERS["alice"]


# ---- /proc: files a user "owns" that setuid programs trust ----

WAIT_THEN_EXEC = 'while [ ! -e "$1" ]; do sleep 0.05; done; shift; exec "$@"'


def alice_process_in_view(sb, go, argv):
    """A process of alice's in her view that waits for the file `go`, then execs argv (a
    setuid program keeps the pid, and /proc/PID stays the same directory)."""
    fd = sb.open_view_fd("alice")
    p = subprocess.Popen(sb.view_argv(fd, ["sh", "-c", WAIT_THEN_EXEC, "sh", str(go), *argv], as_user="alice"),
                         pass_fds=(fd,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=sb.user_env("alice"))
    os.close(fd)
    return p


def fusermount_unmounts(sb, target):
    """alice binds a file of hers over /proc/PID/mounts of her own process (the file is hers
    while the process is), which then execs the setuid fusermount3 -u TARGET: /etc/mtab is a
    link to /proc/self/mounts, and fusermount3 unmounts what mtab says is her FUSE mount.
    Returns the outcome of the BindMount call."""
    fake = alice_file(sb, "mounts", f"fake {target} fuse.fake rw,nosuid,nodev,user_id={ALICE.uid},"
                                    f"group_id={ALICE.gid} 0 0\n")
    go = sb.scratch["alice"] / "go"
    p = alice_process_in_view(sb, go, ["/usr/bin/fusermount3", "-u", "-z", target])
    try:
        result = call_as(sb, "alice", "BindMount", "ssst", "alice", fake, f"/proc/{p.pid}/mounts", 0)
        as_user(sb, "alice", "touch", str(go))
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return result


@pytest.mark.daemon_config(files=SECRET_POLICY)
def test_bind_over_proc_pid_mounts_cannot_undo_the_policy(srv, own):
    """fusermount3 refuses to mount over procfs: some of its files are the user's without
    being theirs to fake (issue 10's reference). A bind over /proc/PID/mounts lets the setuid
    fusermount3 unmount the [View] policy's InaccessiblePaths= cover."""
    sb = own
    result = fusermount_unmounts(sb, "/srv/secret")
    refused(result, "alice binds over /proc/PID/mounts")
    p = sb.in_view("alice", ["cat", "/srv/secret/file"], as_user="alice")
    assert "secret" not in p.stdout, "the policy's cover is gone: alice reads /srv/secret"


def test_bind_over_proc_pid_mounts_cannot_unmount_the_hosts_mounts(own):
    """The same trick on root's /mnt/data: an unmount under the shared /mnt propagates to
    the host and every view."""
    sb = own
    sb.mount_tmpfs("/mnt/data", files={"backup.sh": "root's\n"})
    result = fusermount_unmounts(sb, "/mnt/data")
    refused(result, "alice binds over /proc/PID/mounts")
    assert is_mount_point(sb, None, "/mnt/data"), "root's /mnt/data was unmounted on the host"
    assert is_mount_point(sb, "bob", "/mnt/data")
