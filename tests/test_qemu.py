# SPDX-License-Identifier: LGPL-2.1-or-later
"""The kernel matrix: the project's .deb on Debian 12 booted under qemu (TCG, no KVM needed)
with Debian's own kernels, each check of tests/qemu-checks.sh a test.

Kernels (tools/qemu-image builds the image with both, tools/qemu-image --kernels lists them):
  debian12  linux-image-cloud-amd64 of bookworm: 6.1, Debian 12's own. No statmount(2) or
            listmount(2), no unique mount ids (6.8), no MOVE_MOUNT_BENEATH (6.5), no
            fanotify mount events or FUSE request timeouts (6.15): every fallback runs.
  debian13  linux-image-cloud-amd64 of bookworm-backports: 6.12, Debian 13's series. Unique
            ids, statmount, listmount and MOVE_MOUNT_BENEATH; no fanotify mount events.

Each kernel boots once for the module, all of them at once (the fixture `guest_runs`;
`guest_run` is one kernel's): the package is installed
with dpkg, alice and bob are added, pam-auth-update enables the module, and the checks run
in order inside the booted system: the ones tests/test_nspawn.py and
tests/test_nspawn_attach.py make in a container (the unit, su -l, sudo -u, ssh, cron and
systemd --user sessions in the view, a host mount on /mnt reaching it, attach as the user in
her slice with her loginuid, nsctl's verbs, SIGKILL and an upgrade in place keeping the
namespace, the unit's exposure), plus what only another kernel shows: a replacing bind with
a reader looping on the destination (and, to show the reader would see a gap, an unmount and
mount by hand), an earlier bind with mounts below it, the own-view refusals of a user, and
the daemon's records when mount ids are reused (before 6.8); and the desktop, for real:
udisks2 mounting a stick for alice (udisksctl loop-setup and mount, allowed by a test polkit
rule) that is in every view, `nsctl eject` naming her process that holds an administrator's
bind of part of it, the desktop's unmount (udisksctl unmount) freeing the device with that
bind released; a systemd automount on /mnt triggered from inside her view, mounted and
expired for everyone (the nspawn layer cannot: udisks needs udev, which a container lacks,
and this machine's kernel has no autofs). A failed check fails its test
with what the check printed and the guest's journal. The guest's console and the checks' log
are kept in the test's temporary directory.

Cost: the image is built once (tools/qemu-image, about 70 s with a near mirror, 540 MB in
/var/cache/nsmanager-qemu); the .deb once for the module (test_deb.py's fixture); each
kernel boots in about 20 s of TCG and runs its checks in about 2 minutes on an idle machine;
both side by side took 5 minutes for the module with the 2 cores shared with other builds.

test_graphical_login boots the desktop image (tools/qemu-image --desktop: about 2 minutes to
build, 1.1 GB) once more, alone: about 90 s (README, "Kernels").
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import qemu
import sandbox as sandbox_module
from test_deb import deb  # noqa: F401  (the package, built once for this module)

CHECKS_SCRIPT = Path(__file__).with_name("qemu-checks.sh")
KERNELS = ["debian12", "debian13"]
# In the order qemu-checks.sh runs them.
CHECKS = [
    "kernel", "install", "unit_active", "cron_scheduled", "su_login", "sudo", "ssh", "user_manager",
    "host_mount_reaches_view", "attach_as_user", "nsctl_verbs", "reader_sees_a_gap", "replace_bind",
    "replace_own_bind", "replace_bind_with_mounts_below", "own_view_refusals", "reused_mount_id_of_a_bind",
    "reused_mount_id_of_a_policy_mount", "verify", "mount_events", "eject", "desktop_stick", "automount", "kill9_restart", "upgrade_in_place", "cron", "exposure",
    "no_errors_logged",
]
# What the whole run may take (boot, install, checks, poweroff), stretched by NSM_TIMEOUT_SCALE.
RUN_WAIT = 900


class Run:
    """One boot of one kernel with the checks: their verdicts and what they printed."""

    def __init__(self, guest: qemu.Guest, status: int | None):
        self.guest = guest
        self.status = status
        self.verdicts: dict[str, tuple[str, str]] = {}
        self.output: dict[str, list[str]] = {}
        current = None
        for line in guest.checks_text().splitlines():
            if line.startswith("---- "):
                current = line[5:].strip()
                self.output[current] = []
            found = re.match(r"CHECK (\S+) (ok|FAIL|skip)(?::? ?)(.*)", line)
            if found:
                self.verdicts[found.group(1)] = (found.group(2), found.group(3).strip())
            elif current and line.startswith("  "):
                self.output[current].append(line[2:])
        self.journal = (guest.out("journal.txt") or "") if status is not None else ""

    def diag(self, name: str | None = None) -> str:
        parts = []
        if name:
            parts.append(f"--- what the check {name} printed ---\n" + "\n".join(self.output.get(name, ["(nothing)"])))
        daemon = [line for line in self.journal.splitlines() if "nsmanagerd" in line or "nsctl" in line]
        parts.append("--- the guest's journal, nsmanagerd (last 60 lines) ---\n" + "\n".join(daemon[-60:]))
        parts.append("--- the guest's journal (last 40 lines) ---\n" + "\n".join(self.journal.splitlines()[-40:]))
        if self.status is None or not self.journal:
            parts.append(f"--- the guest's console (last 60 lines) ---\n{self.guest.console_text(60)}")
            parts.append("--- the checks' log (last 40 lines) ---\n" + "\n".join(self.guest.checks_text().splitlines()[-40:]))
        return "\n".join(parts)


@pytest.fixture(scope="module")
def image(sandbox):
    if sandbox_module._entered_namespace != sandbox_module.mntns_id():
        pytest.fail("the pytest process is not in the sandbox's mount namespace (conftest.py)", pytrace=False)
    path, took = qemu.build_image()
    print(f"tools/qemu-image: {took:.1f} s")
    return path


@pytest.fixture(scope="module")
def guest_runs(image, deb, tmp_path_factory):  # noqa: F811
    """Every kernel booted with the checks, all at once (each guest mostly waits on one
    emulated CPU: side by side they take little longer than one): kernel name -> Run."""
    kernels = qemu.kernels(image)
    missing = [k for k in KERNELS if k not in kernels]
    if missing:
        pytest.fail(f"the image has no kernel {missing}: {sorted(kernels)}", pytrace=False)

    def boot(kernel: qemu.Kernel) -> Run:
        logdir = tmp_path_factory.mktemp(f"qemu-{kernel.name}")
        with qemu.Guest(image, kernel, logdir) as guest:
            status = guest.boot({"run": CHECKS_SCRIPT, "nsmanager.deb": deb.path}, wait=RUN_WAIT)
            run = Run(guest, status)
        print(f"{kernel.name} ({kernel.version}): " + ", ".join(f"{k} {v:.1f} s" for k, v in guest.timings.items()))
        return run

    # pytest makes its base directory at the first mktemp(): not from two threads at once
    # (the second one's mkdir fails with FileExistsError).
    tmp_path_factory.getbasetemp()
    with ThreadPoolExecutor(len(KERNELS)) as pool:
        runs = dict(zip(KERNELS, pool.map(boot, [kernels[k] for k in KERNELS])))
    return runs


@pytest.fixture(params=KERNELS)
def guest_run(request, guest_runs):
    return guest_runs[request.param]


@pytest.mark.parametrize("check", CHECKS)
def test_check(guest_run, check):
    """One check of qemu-checks.sh in the booted guest of one kernel."""
    run = guest_run
    kernel = f"{run.guest.kernel.name} ({run.guest.kernel.version})"
    if check not in run.verdicts:
        why = "the guest did not finish within the time" if run.status is None else \
              f"qemu exited with {run.status} before the check ran"
        pytest.fail(f"{kernel}: no verdict for {check}: {why}\n{run.diag(check)}", pytrace=False)
    verdict, message = run.verdicts[check]
    if verdict == "skip":
        pytest.skip(f"{kernel}: {message}")
    assert verdict == "ok", f"{kernel}: {check}: {message}\n{run.diag(check)}"


def test_guest_powered_off(guest_run):
    """Every check ran and the guest powered off by itself."""
    run = guest_run
    assert "CHECKS DONE" in run.guest.checks_text() and run.status == 0, \
        f"qemu exit status {run.status}\n{run.diag()}"


# The graphical login: its own image (tools/qemu-image --desktop: LightDM, Xorg and Debian 12's
# generic 6.1 kernel, whose bochs-drm drives qemu's emulated VGA; the cloud kernels have no DRM
# driver, so no seat could be graphical), booted once, for this test alone.
DESKTOP_CHECKS = ["kernel", "install", "unit_active", "graphical_login", "policy_mount_points", "no_errors_logged"]


@pytest.fixture(scope="module")
def desktop_image(sandbox):
    if sandbox_module._entered_namespace != sandbox_module.mntns_id():
        pytest.fail("the pytest process is not in the sandbox's mount namespace (conftest.py)", pytrace=False)
    path, took = qemu.build_image(desktop=True)
    print(f"tools/qemu-image --desktop: {took:.1f} s")
    return path


def test_graphical_login(desktop_image, deb, tmp_path):  # noqa: F811
    """LightDM logs alice in automatically on seat0 (Xorg on the emulated VGA) into an X
    session: logind shows a Type=x11 session on seat0 opened by lightdm-autologin (its PAM
    stack as Debian ships it, with pam_nsmanager as the package's pam-auth-update profile adds
    it), and the session's processes (lightdm's session child, Xsession's script and its
    child) and her systemd --user are all in her view; `nsctl status alice` lists them. Then,
    under the shipped unit, the mount point her [View] policy made in her real home
    (TemporaryFileSystem=%h/nsm-made/x) is hers, and gone once her view is."""
    kernel = qemu.kernels(desktop_image).get("generic")
    if kernel is None:
        pytest.fail(f"the desktop image has no kernel 'generic': {sorted(qemu.kernels(desktop_image))}", pytrace=False)
    with qemu.Guest(desktop_image, kernel, tmp_path, vga=True) as guest:
        status = guest.boot({"run": CHECKS_SCRIPT, "nsmanager.deb": deb.path, "desktop": ""}, wait=RUN_WAIT)
        run = Run(guest, status)
    print(f"desktop ({kernel.version}): " + ", ".join(f"{k} {v:.1f} s" for k, v in guest.timings.items()))
    for check in ("graphical_login", "policy_mount_points"):
        print("\n".join(run.output.get(check, [])))
    for check in DESKTOP_CHECKS:
        if check not in run.verdicts:
            why = "the guest did not finish within the time" if status is None else \
                  f"qemu exited with {status} before the check ran"
            pytest.fail(f"no verdict for {check}: {why}\n{run.diag(check)}", pytrace=False)
        verdict, message = run.verdicts[check]
        assert verdict == "ok", f"{check}: {verdict} {message}\n{run.diag(check)}"
    assert "CHECKS DONE" in guest.checks_text() and status == 0, f"qemu exit status {status}\n{run.diag()}"
