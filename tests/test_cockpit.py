# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Cockpit page "User views" (cockpit/) in a real browser, as a person sees it.

Debian's cockpit-ws runs with --local-session=cockpit-bridge in the sandbox, as root or as
alice, against the sandbox's bus, polkitd and daemon; Debian's headless Chromium shows the
page, driven by selenium through Debian's chromedriver (tests/browser.py). Everything the
page offers or refuses comes from the daemon: the tests hold what the page shows against
what the daemon says and does.

Screenshots of the list and of a view's tree go to NSM_SCREENSHOT_DIR (default: the build
directory's cockpit-screenshots/); docs/cockpit-list.png, cockpit-view.png and
cockpit-confirm.png are copies of docs-*.png there (test_screenshots_for_the_docs)."""

import os
from pathlib import Path

import dbus
import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from browser import CockpitSession
from caller import call_as
from helpers import ALICE_OWN_ONLY, E_INVALID_PATH, E_MOUNT_CHANGED, create, ns_path, wait_until
from sandbox import MS_NODEV, MS_NOSUID, build_dir, find_mount, sys_mount
from test_eject import Usb

SCREENSHOTS = Path(os.environ.get("NSM_SCREENSHOT_DIR") or build_dir() / "cockpit-screenshots")

@pytest.fixture
def page_as(daemon):
    sessions = []

    def start(user):
        s = CockpitSession(daemon, user, screenshot_dir=SCREENSHOTS)
        sessions.append(s)
        s.__enter__()
        s.open()
        return s

    yield start
    for s in sessions:
        s.close()


def enabled(button) -> bool:
    return button is not None and button.is_enabled()


def view_propagation(sb, user, path):
    m = find_mount(sb.mountinfo(user), path)
    assert m is not None, f"{path} is not a mount point in {user}'s view"
    return m.propagation


def test_root_sees_both_views_and_enslaves_bobs_mnt(daemon, page_as):
    create(daemon, "alice", "bob")
    page = page_as("root")
    page.wait(lambda: page.row("alice") and page.row("bob"), "both views in the list")
    for user, uid in (("alice", "2001"), ("bob", "2002")):
        cells = page.cells(page.row(user))
        assert cells["User"] == user and cells["UID"] == uid and cells["State"] == "active", cells
        assert cells["Linger"] == "no" and cells["Sessions"] == "0", cells
        assert int(cells["Mounts"]) == len(daemon.mountinfo(user)), cells
        for method in ("SetLinger", "RemoveNamespace"):
            assert page.answered(page.button(page.row(user), method)) == "yes"
    page.screenshot("list")

    page.show_view("bob")
    row = page.mount_row("/mnt")
    cells = page.cells(row)
    host_mnt = find_mount(daemon.mountinfo(), "/mnt")
    assert cells["Peer group"] == str(host_mnt.peer_group), cells
    assert cells["Came from"] == f"peer of the host's /mnt (group {host_mnt.peer_group})", cells
    assert "shared" in cells["Propagation"]
    enslave = page.button(row, "EnslaveSubtree")
    assert page.answered(enslave) == "yes" and enslave.is_enabled()
    page.screenshot("tree")
    page.screenshot("tree-top", height=1000)
    enslave.click()

    wait_until(lambda: "slave" in view_propagation(daemon, "bob", "/mnt")
               and "shared" not in view_propagation(daemon, "bob", "/mnt"), "bob's /mnt to be a slave")
    # The daemon reports it, and the page shows what the daemon reports.
    reported = [m for m in daemon.manager().GetMounts("bob") if str(m[4]) == "/mnt"]
    assert reported and str(reported[0][7]) == "private,slave" and int(reported[0][3]) == host_mnt.peer_group
    page.wait(lambda: page.cells(page.mount_row("/mnt"))["Propagation"] == "private,slave",
              "the page to show bob's /mnt as a slave")
    assert page.cells(page.mount_row("/mnt"))["Came from"] == \
        f"receives from the host's /mnt (group {host_mnt.peer_group})"
    assert "shared" in view_propagation(daemon, "alice", "/mnt"), "alice's /mnt changed too"
    assert not page.alerts()


def test_alice_is_offered_her_actions_and_not_bobs(daemon, page_as, polkit_rules):
    create(daemon, "alice", "bob")
    polkit_rules("50-alice-own-only", ALICE_OWN_ONLY)
    page = page_as("alice")
    page.wait(lambda: page.row("alice") and page.row("bob"), "both views in the list")
    mine, bobs = page.row("alice"), page.row("bob")
    assert page.answered(page.button(mine, "SetLinger")) == "yes" and enabled(page.button(mine, "SetLinger"))
    # Removing even her own namespace needs manage.
    assert page.answered(page.button(mine, "RemoveNamespace")) == "no" and not enabled(page.button(mine, "RemoveNamespace"))
    for method in ("SetLinger", "RemoveNamespace"):
        assert page.answered(page.button(bobs, method)) == "no" and not enabled(page.button(bobs, method)), method

    page.show_view("alice")
    row = page.mount_row("/mnt")
    for method in ("ShareSubtree", "EnslaveSubtree", "SetPropagationById", "UnmountById"):
        assert page.answered(page.button(row, method)) == "yes" and enabled(page.button(row, method)), method
    assert enabled(page.driver.find_element(By.ID, "bind-button")) or True
    page.show_view("bob")
    row = page.mount_row("/mnt")
    for method in ("ShareSubtree", "EnslaveSubtree", "SetPropagationById", "UnmountById"):
        assert page.answered(page.button(row, method)) == "no" and not enabled(page.button(row, method)), method

    # What she is offered works: lingering in her own namespace.
    page.button(page.row("alice"), "SetLinger").click()
    wait_until(lambda: bool(daemon.properties(ns_path("alice"))["Linger"]), "alice's namespace to linger")
    page.wait(lambda: page.cells(page.row("alice"))["Linger"] == "yes", "the page to show alice lingering")

    # An action the rules refuse at the call (the path rules are checked only there): the
    # page shows the daemon's own message.
    page.show_view("alice")
    expected = call_as(daemon, "alice", "Unmount", "sst", "alice", "/mnt", 0)
    assert expected.get("error"), expected
    page.button(page.mount_row("/mnt"), "UnmountById").click()
    page.confirm()
    page.wait(lambda: page.alerts(), "an error")
    (alert,) = page.alerts()
    assert expected["message"] in alert and expected["error"] in alert, (alert, expected)
    assert find_mount(daemon.mountinfo("alice"), "/mnt") is not None


def test_an_error_shows_the_daemons_message(daemon, page_as):
    """The mount shown was replaced before the confirmation was given: the daemon refuses
    (MountChanged, its own message), nothing else is unmounted, and the page reads the table
    again. The view's root offers no Unmount at all."""
    create(daemon, "alice")
    daemon.mount_tmpfs("/home/alice/stick", view="alice")
    page = page_as("root")
    page.show_view("alice")
    assert page.button(page.mount_row("/"), "UnmountById") is None
    row = page.mount_row("/home/alice/stick")
    shown = row.get_attribute("data-mount-id")
    page.button(row, "UnmountById").click()
    page.wait_dialog()
    daemon.in_view("alice", ["umount", "/home/alice/stick"], check=True)
    daemon.mount_tmpfs("/home/alice/stick", view="alice", source="another")
    page.confirm()
    page.wait(lambda: page.alerts(), "an error")
    (alert,) = page.alerts()
    assert "Unmounting /home/alice/stick failed" in alert
    assert E_MOUNT_CHANGED in alert and f"not mount {shown} any more" in alert, alert
    assert page.driver.find_element(By.CSS_SELECTOR, "#alerts .pf-c-alert").get_attribute("role") == "alert"
    assert find_mount(daemon.mountinfo("alice"), "/home/alice/stick").source == "another"
    page.wait(lambda: page.mount_row("/home/alice/stick").get_attribute("data-mount-id") != shown,
              "the page to read the table again")
    assert page.cells(page.mount_row("/home/alice/stick"))["Source"] == "another"


def test_mount_points_are_text_never_markup(daemon, page_as):
    """A mount point is whatever name somebody chose: it is shown, never run."""
    create(daemon, "alice")
    evil = "/mnt/<img src=x onerror=\"window.nsmPwned=1\"><b>bold</b>"
    daemon.mount_tmpfs(evil)
    page = page_as("alice")
    page.show_view("alice")
    page.wait(lambda: page.mount_row(evil), "the mount with markup in its name")
    row = page.mount_row(evil)
    assert page.cells(row)["Mount point"] == evil
    assert page.button(row, "UnmountById").get_attribute("aria-label") == "Unmount " + evil
    assert not page.find("#mounts-body img") and not page.find("#mounts-body b") and not page.find("#graph img")
    assert page.driver.execute_script("return window.nsmPwned") is None
    # Without a polkit rule (no logind session in the sandbox), her own view's changes need
    # authentication: offered, marked as such.
    unmount = page.button(row, "UnmountById")
    assert page.answered(unmount) == "challenge" and unmount.is_enabled()


def test_keyboard_and_the_bind_dialog(daemon, page_as):
    create(daemon, "alice")
    source = Path("/tmp/nsm-cockpit-bind-source")
    source.mkdir(exist_ok=True)
    (source / "marker").write_text("bound from the page\n")
    page = page_as("root")
    d = page.driver
    active = lambda: d.switch_to.active_element  # noqa: E731
    keys = lambda *k: ActionChains(d).send_keys(*k).perform()  # noqa: E731

    # Focus order: the host's mounts, then each user of the list, then their actions.
    d.find_element(By.TAG_NAME, "body").click()
    keys(Keys.TAB)
    assert active().get_attribute("id") == "host-button"
    keys(Keys.TAB)
    assert active().get_attribute("aria-label") == "Show alice's view"
    keys(Keys.ENTER)
    page.wait(lambda: active().get_attribute("id") == "view-title", "the view's title to take the focus")
    assert d.find_element(By.ID, "view-title").text == "Mount tree of alice's view"
    keys(Keys.TAB)
    assert active().get_attribute("id") == "bind-button"
    keys(Keys.ENTER)
    page.wait(lambda: active().get_attribute("id") == "bind-source", "the dialog to take the focus")

    # Every control of the dialog has a label.
    for control in d.find_elements(By.CSS_SELECTOR, "#modal input"):
        labels = d.find_elements(By.CSS_SELECTOR, f"label[for='{control.get_attribute('id')}']")
        assert labels and labels[0].text, f"{control.get_attribute('id')} has no label"
    # Escape cancels and gives the focus back.
    keys(Keys.ESCAPE)
    page.wait(lambda: not d.find_element(By.ID, "modal-backdrop").is_displayed(), "the dialog to close")
    assert active().get_attribute("id") == "bind-button"

    keys(Keys.ENTER)
    page.wait(lambda: active().get_attribute("id") == "bind-source", "the dialog again")
    # As nsctl bind: both paths must be given (what they may be is the daemon's to say).
    keys(Keys.ENTER)
    page.wait(lambda: d.find_element(By.ID, "modal-error").is_displayed(), "the missing source to be named")
    assert d.find_element(By.ID, "modal-error").text == "Give a source."
    assert active().get_attribute("id") == "bind-source"
    # A relative source: the daemon's refusal, in the dialog.
    keys("relative/path", Keys.TAB, "/home/alice/bound", Keys.ENTER)
    page.wait(lambda: E_INVALID_PATH in d.find_element(By.ID, "modal-error").text, "the daemon's refusal")
    assert "'relative/path' is not an absolute, normalized path" in d.find_element(By.ID, "modal-error").text
    source_input = d.find_element(By.ID, "bind-source")
    source_input.clear()
    source_input.send_keys(str(source))
    d.find_element(By.ID, "bind-mkdir").click()
    d.find_element(By.ID, "bind-read-only").send_keys(Keys.SPACE)
    d.find_element(By.ID, "modal-ok").click()
    page.wait(lambda: not d.find_element(By.ID, "modal-backdrop").is_displayed(), "the dialog to close")

    m = find_mount(daemon.mountinfo("alice"), "/home/alice/bound")
    assert m is not None, "the bind is not in alice's view"
    assert "ro" in m.options.split(","), m
    out = daemon.in_view("alice", ["cat", "/home/alice/bound/marker"], check=True).stdout
    assert out == "bound from the page\n"
    page.wait(lambda: page.mount_row("/home/alice/bound"), "the page to show the bind")


def test_host_mount_appears_in_alices_tree_without_a_reload(daemon, page_as):
    """Live: the page subscribes to every view's number of mounts (Manager.SubscribeMountCounts)
    and to the view it shows alone (Namespace.Subscribe), and follows MountsChanged and
    HostMountsChanged. A tmpfs the host mounts on /mnt/cd appears in alice's tree (her /mnt
    is a peer of the host's) while the page stays loaded; a mount in bob's view, not shown,
    counts in his row of the list, from MountCountsChanged alone: the daemon sends no
    ViewsMountsChanged (nobody asked for every view's detail) and no MountsChanged of bob's."""
    paths = dict(zip(("alice", "bob"), create(daemon, "alice", "bob")))
    listener = daemon.signals()
    page = page_as("alice")
    page.show_view("alice")
    page.wait(lambda: page.driver.find_element(By.ID, "live-status").text, "the live status")
    status = page.driver.find_element(By.ID, "live-status").text
    assert status.startswith("Live mount updates"), status
    assert "not available" not in status, status
    page.driver.execute_script("window.nsmSameDocument = 'yes'")
    assert page.mount_row("/mnt/cd") is None

    daemon.mount_cd("/mnt/cd")
    page.wait(lambda: page.mount_row("/mnt/cd"), "/mnt/cd in alice's tree", wait=10)
    assert page.driver.execute_script("return window.nsmSameDocument") == "yes", "the page was reloaded"
    cells = page.cells(page.mount_row("/mnt/cd"))
    assert cells["Source"] == "NSM_TEST_CD" and cells["Type"] == "tmpfs", cells
    page.screenshot("live")

    daemon.umount("/mnt/cd")
    page.wait(lambda: page.mount_row("/mnt/cd") is None, "/mnt/cd to leave alice's tree", wait=10)
    assert page.driver.execute_script("return window.nsmSameDocument") == "yes"

    def bobs_count():
        return int(page.driver.find_element(By.CSS_SELECTOR, 'tr[data-user="bob"] td[data-label="Mounts"]').text or -1)
    before = bobs_count()
    daemon.mount_tmpfs("/home/bob/own", view="bob")
    page.wait(lambda: bobs_count() == before + 1, "bob's count of mounts to grow", wait=10)
    assert page.driver.execute_script("return window.nsmSameDocument") == "yes"
    listener.wait_for("MountCountsChanged", lambda args: (paths["bob"], before + 1) in
                      [(str(v), int(n)) for v, n in args[0]])
    daemon.in_view("bob", ["umount", "/home/bob/own"], check=True)
    page.wait(lambda: bobs_count() == before, "bob's count of mounts to shrink", wait=10)
    listener.drain(0.3)
    assert not [s for s in listener.received if s[1] == "ViewsMountsChanged"], "the page asked for every view's detail"
    assert not [s for s in listener.received if s[1] == "MountsChanged" and str(s[2]) == paths["bob"]], \
        "the page subscribed to bob's view, which it does not show"


# ---------------------------------------------------------------------------
# What the administrator sees is whole and true, and each click acts on what was shown


def test_hostile_names_render_as_text_and_every_other_row_shows(daemon, page_as):
    """Names that are not UTF-8, hold markup, right-to-left marks or run to 4 KiB: each row
    shows the daemon's escaped text as text, and the rest of the table is there."""
    create(daemon, "alice")
    long_dirs = "/".join(["d" * 250] * 16)                           # a 4 KiB mount point
    names = {
        b"/mnt/bad\xff\x1b[2J": "/mnt/bad\\xff\\x1b[2J",
        b"/mnt/<img src=x onerror=\"window.nsmPwned=2\">": "/mnt/<img src=x onerror=\"window.nsmPwned=2\">",
        "/mnt/\u202eevil\u200f.txt".encode(): "/mnt/\u202eevil\u200f.txt",
        f"/mnt/{long_dirs}".encode(): f"/mnt/{long_dirs}",
    }
    assert len(f"/mnt/{long_dirs}") > 4000
    for raw in names:
        os.makedirs(raw, exist_ok=True)
        sys_mount(b"src\xfe<b>x</b>", raw, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")
        daemon.track_mount(os.fsdecode(raw))
    page = page_as("root")
    page.show_view("alice")
    for shown in names.values():
        page.wait(lambda: page.mount_row(shown), f"the row of {shown[:40]!r}")
        cells = page.cells(page.mount_row(shown))
        assert cells["Source"] == "src\\xfe<b>x</b>", cells
    assert page.cells(page.mount_row("/mnt/bad\\xff\\x1b[2J"))["Mount point"] == "/mnt/bad\\xff\\x1b[2J"
    for point in ("/", "/mnt", "/home"):
        assert page.mount_row(point), point
    assert not page.find("#mounts-body img") and not page.find("#mounts-body b") and not page.find("#graph img")
    assert page.driver.execute_script("return window.nsmPwned") is None
    assert not page.alerts(), page.alerts()


def test_eject_is_offered_by_the_kernels_device_and_confirmed(daemon, page_as):
    """A tmpfs that calls itself the loop device offers no Eject, the loop device's own file
    system does (by its device number), the host's / offers none; the confirmation names the
    mount, and only then is the device ejected."""
    usb = Usb(daemon)
    try:
        create(daemon, "alice")
        usb.mount_on_host()
        os.makedirs("/mnt/fake", exist_ok=True)
        sys_mount(usb.dev, "/mnt/fake", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")
        daemon.track_mount("/mnt/fake")
        page = page_as("root")
        page.show_view("")
        page.wait(lambda: page.mount_row("/mnt/usb") and page.mount_row("/mnt/fake"), "both mounts")
        assert page.cells(page.mount_row("/mnt/fake"))["Source"] == usb.dev
        assert page.button(page.mount_row("/mnt/fake"), "Eject") is None
        assert page.button(page.mount_row("/"), "Eject") is None
        for point in ("/", "/proc", "/sys", "/dev"):
            row = page.mount_row(point)
            if row is not None:
                for method in ("UnmountById", "SetPropagationById", "Eject"):
                    assert page.button(row, method) is None, (point, method)
        row = page.mount_row("/mnt/usb")
        assert page.cells(row)["Device"] == usb.devno
        eject = page.button(row, "Eject")
        assert page.answered(eject) == "yes"
        eject.click()
        page.wait_dialog()
        facts = page.dialog_facts()
        assert facts["Mount point"] == "/mnt/usb" and facts["Source"] == usb.dev and facts["Device"] == usb.devno, facts
        assert facts["Mount id"] == row.get_attribute("data-mount-id")
        page.screenshot("confirm")
        # Cancel: nothing happens.
        page.driver.find_element(By.ID, "modal-cancel").click()
        page.wait(lambda: not page.dialog_open(), "the dialog to close")
        assert usb.mounts() == ["/mnt/usb"]
        page.button(page.mount_row("/mnt/usb"), "Eject").click()
        page.confirm()
        wait_until(lambda: usb.mounts() == [], "the stick to be ejected")
        assert find_mount(daemon.mountinfo(), "/mnt/fake") is not None, "the fake is no device: it stays"
        page.wait(lambda: any("Ejected device " + usb.devno in a for a in page.alerts()), "the page to say so")
    finally:
        usb.close()


def test_a_click_acts_on_the_mount_under_the_pointer(daemon, page_as):
    """The pointer rests on the Unmount of /home/alice/usb-stick; meanwhile a mount above it
    goes and another appears above it. No row moves: the element under the unmoved pointer is
    still that mount's button, the confirmation names that mount, and the daemon receives its
    id; the vanished row stays, marked gone, the new one waits behind a banner."""
    create(daemon, "alice")
    daemon.mount_tmpfs("/home/alice/above", view="alice", source="above")
    daemon.mount_tmpfs("/home/alice/usb-stick", view="alice", source="stick")
    page = page_as("root")
    page.show_view("alice")
    d = page.driver
    row = page.mount_row("/home/alice/usb-stick")
    stick_id = row.get_attribute("data-mount-id")
    button = page.button(row, "UnmountById")
    assert page.answered(button) == "yes"
    ActionChains(d).move_to_element(button).perform()
    rect = d.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]",
                            button)
    under = "const e = document.elementFromPoint(arguments[0], arguments[1]); " \
            "return e && e.closest('tr') ? [e.getAttribute('data-method'), e.closest('tr').getAttribute('data-mount-id')] : null"
    assert d.execute_script(under, *rect) == ["UnmountById", stick_id]

    daemon.in_view("alice", ["umount", "/home/alice/above"], check=True)
    daemon.mount_tmpfs("/tmp/nsm-race-new", view="alice", source="new")   # /tmp comes before /home
    page.wait(lambda: d.find_element(By.ID, "mounts-banner").is_displayed(), "the banner of changes")
    assert "2 changes" in d.find_element(By.ID, "mounts-banner").text
    gone = page.mount_row("/home/alice/above")
    assert gone is not None and "nsm-gone" in gone.get_attribute("class") and "(gone)" in gone.text
    assert all(not b.is_enabled() for b in gone.find_elements(By.CSS_SELECTOR, "button"))
    assert page.mount_row("/tmp/nsm-race-new") is None, "a new row moved the table under the pointer"
    assert d.execute_script(under, *rect) == ["UnmountById", stick_id]

    ActionChains(d).click().perform()                      # where the pointer is
    page.wait_dialog()
    facts = page.dialog_facts()
    assert facts["Mount point"] == "/home/alice/usb-stick" and facts["Mount id"] == stick_id, facts
    assert facts["Source"] == "stick" and facts["View"] == "alice's view", facts
    page.confirm()
    wait_until(lambda: find_mount(daemon.mountinfo("alice"), "/home/alice/usb-stick") is None, "the stick to go")
    assert find_mount(daemon.mountinfo("alice"), "/tmp/nsm-race-new") is not None
    records = [r for r in daemon.journal_records() if r.get("NSM_ACTION") == "UnmountById"]
    assert [r.get("NSM_MOUNT_ID") for r in records] == [stick_id], records
    # Once the pointer leaves, the table shows what is.
    ActionChains(d).move_to_element(d.find_element(By.ID, "host-summary")).perform()
    page.wait(lambda: page.mount_row("/tmp/nsm-race-new") and page.mount_row("/home/alice/above") is None,
              "the table to show what is")


def test_the_view_shows_its_processes_to_its_user_and_not_to_bob(daemon, page_as):
    """The card "Processes in the view" lists ListProcesses for the view's user (and root);
    bob, whom Can() does not answer yes, sees alice's tree but not who runs what in it."""
    create(daemon, "alice", "bob")
    p = daemon.in_view("alice", ["sh", "-c", "sleep 120 >/dev/null 2>&1 </dev/null & echo $!"], as_user="alice")
    assert p.returncode == 0, p.stderr
    pid = p.stdout.strip()
    try:
        page = page_as("alice")
        page.show_view("alice")

        def row():
            rows = [r for r in page.find("#processes-body tr") if r.get_attribute("data-pid") == pid]
            return rows[0] if rows else None

        page.wait(row, "alice's sleep in the processes of her view")
        assert page.cells(row()) == {"PID": pid, "User": "alice", "Command": "sleep", "Session": "-"}

        bob = page_as("bob")
        bob.show_view("alice")
        # Can(ListProcesses) went out before the tree's buttons asked theirs: once those answered,
        # it has too.
        assert call_as(daemon, "bob", "Can", "ss", "ListProcesses", "alice")["ok"][0] != "yes"
        bob.wait(lambda: any(b.get_attribute("data-can") not in (None, "pending") for b in bob.find("#mounts-body [data-can]")),
                 "Can() to answer for the tree's buttons")
        assert not bob.driver.find_element(By.ID, "processes-card").is_displayed()
        assert not [r for r in bob.find("#processes-body tr")], "bob was shown alice's processes"
    finally:
        os.kill(int(pid), 9)


def test_screenshots_for_the_docs(daemon, page_as):
    """The list, a view and a confirmation, into the screenshot directory: docs/cockpit-list.png,
    cockpit-view.png and cockpit-confirm.png are copies of them (README links them)."""
    create(daemon, "alice", "bob")
    daemon.mount_cd("/mnt/cd")
    daemon.mount_tmpfs("/home/alice/usb-stick", view="alice", source="/dev/sdz1")
    page = page_as("root")
    page.wait(lambda: page.row("alice") and page.row("bob"), "both views")
    page.screenshot("docs-list", height=700)
    page.show_view("alice")
    page.wait(lambda: page.mount_row("/home/alice/usb-stick"), "the stick")
    page.screenshot("docs-view")
    row = page.mount_row("/home/alice/usb-stick")
    assert page.button(row, "Eject") is None, "a tmpfs named /dev/sdz1 is no device"
    page.button(row, "UnmountById").click()
    page.wait_dialog()
    page.screenshot("docs-confirm", height=900)
    page.driver.find_element(By.ID, "modal-cancel").click()
    page.wait(lambda: not page.dialog_open(), "the dialog to close")
    assert find_mount(daemon.mountinfo("alice"), "/home/alice/usb-stick") is not None, "Cancel changes nothing"
