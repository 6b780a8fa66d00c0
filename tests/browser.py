# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Cockpit page (cockpit/) in a real browser, inside the sandbox of tests/sandbox.py.

    with CockpitSession(sb, "alice") as page:      # cockpit-ws + headless Chromium
        page.open()                                  # the page, loaded
        page.row("alice")                            # <tr> of alice in the namespace list

cockpit-ws runs as `user` with --local-session=cockpit-bridge (which implies --no-tls): no
login, its bridge runs as that user and talks to the sandbox's system bus, so the daemon
sees that user (root or alice) through the bus credentials and asks the sandbox's polkitd,
exactly as for a Cockpit login. It listens on 127.0.0.1 and a free port only. The page comes
from the checkout: a copy of cockpit/ in a data directory of its own, which the bridge finds
through XDG_DATA_DIRS (the installed package puts it in /usr/share/cockpit/nsmanager).

Chromium is Debian's, driven through Debian's /usr/bin/chromedriver named explicitly (no
driver download), headless, --no-sandbox (it runs as root), with a fresh profile and every
background service that would reach the network switched off."""

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from sandbox import SYSTEM_BUS_ADDRESS, timeout

SOURCE = Path(__file__).resolve().parent.parent
PAGE_DIR = SOURCE / "cockpit"
COCKPIT_WS = "/usr/lib/cockpit/cockpit-ws"
COCKPIT_BRIDGE = "/usr/bin/cockpit-bridge"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# Off the network: no updates, no sync, no safe-browsing lists, no field trials, no first-run
# pings; a profile of its own, gone after the test.
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--disable-features=Translate,OptimizationHints,MediaRouter",
    "--no-first-run", "--no-default-browser-check", "--metrics-recording-only", "--no-pings",
    "--password-store=basic", "--window-size=1280,900", "--lang=en-US",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CockpitSession:
    def __init__(self, sb, user: str, screenshot_dir: Path | None = None):
        self.sb = sb
        self.user = user
        self.port = free_port()
        self.ws = None
        self.driver = None
        self.tmp = Path(tempfile.mkdtemp(prefix=f"nsm-cockpit-{user}-", dir="/tmp"))
        os.chmod(self.tmp, 0o755)
        self.screenshot_dir = screenshot_dir

    # -- start and stop ----------------------------------------------------------

    def __enter__(self):
        try:
            self._start_ws()
            self._start_browser()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _start_ws(self):
        data = self.tmp / "share"
        shutil.copytree(PAGE_DIR, data / "cockpit" / "nsmanager")
        for d in (data, data / "cockpit"):
            os.chmod(d, 0o755)
        pw = pwd.getpwnam(self.user)
        home = self.tmp / "home"
        home.mkdir(mode=0o700)
        os.chown(home, pw.pw_uid, pw.pw_gid)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "USER": self.user, "LOGNAME": self.user,
               "LANG": "C.UTF-8", "XDG_DATA_DIRS": f"{data}:/usr/share", "XDG_DATA_HOME": str(home / ".local/share"),
               "XDG_CONFIG_DIRS": "/etc", "DBUS_SYSTEM_BUS_ADDRESS": SYSTEM_BUS_ADDRESS}
        argv = [COCKPIT_WS, f"--local-session={COCKPIT_BRIDGE}", "--address=127.0.0.1", f"--port={self.port}"]
        if self.user != "root":
            argv = self.sb._setpriv(self.user) + argv
        self.ws_log = self.tmp / "cockpit-ws.log"
        self.ws = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=open(self.ws_log, "wb"),
                                   stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout(20)
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.5):
                return
            if self.ws.poll() is not None:
                raise RuntimeError(f"cockpit-ws exited with {self.ws.returncode}:\n{self.ws_log.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"cockpit-ws does not listen on port {self.port}:\n{self.ws_log.read_text()}")
            time.sleep(0.05)

    def _start_browser(self):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.tmp / 'chromium-profile'}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=CHROMEDRIVER, log_path=str(self.tmp / "chromedriver.log"))
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_page_load_timeout(timeout(30))

    def close(self):
        if self.driver is not None:
            with contextlib.suppress(Exception):
                self.driver.quit()
            self.driver = None
        if self.ws is not None:
            # cockpit-ws and the bridge it started, as a group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.ws.pid, 15)
            try:
                self.ws.wait(timeout(10))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.ws.pid, 9)
                self.ws.wait()
            # The bridge may outlive cockpit-ws a moment; then it is ours to reap (pytest is
            # the sandbox's subreaper): wait until nothing of the group is left.
            deadline = time.monotonic() + timeout(10)
            while time.monotonic() < deadline:
                try:
                    pid, _ = os.waitpid(-self.ws.pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    time.sleep(0.05)
            self.ws = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def diagnostics(self) -> str:
        parts = []
        with contextlib.suppress(Exception):
            parts.append("browser console:\n" + "\n".join(str(e) for e in self.driver.get_log("browser")))
        with contextlib.suppress(Exception):
            parts.append("cockpit-ws:\n" + self.ws_log.read_text(errors="replace")[-4000:])
        return "\n".join(parts)

    # -- the page ----------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/cockpit/@localhost/nsmanager/index.html"

    def open(self):
        self.driver.get(self.url)
        self.wait(lambda: self.driver.execute_script("return document.body.getAttribute('data-loaded')") == "true",
                  "the page to load")

    def wait(self, predicate, what: str, wait: float = 15):
        deadline = time.monotonic() + timeout(wait)
        last = None
        while True:
            try:
                value = predicate()
                if value:
                    return value
            except (StaleElementReferenceException, WebDriverException) as e:
                last = e
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what} (last error: {last})\n{self.diagnostics()}")
            time.sleep(0.05)

    def find(self, css: str):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def row(self, user: str):
        rows = [r for r in self.find("#namespaces-body tr") if r.get_attribute("data-user") == user]
        return rows[0] if rows else None

    def mount_row(self, point: str):
        rows = [r for r in self.find("#mounts-body tr") if r.get_attribute("data-mount-point") == point]
        return rows[0] if rows else None

    def cells(self, row) -> dict:
        return {c.get_attribute("data-label"): c.text for c in row.find_elements(By.CSS_SELECTOR, "th, td")
                if c.get_attribute("data-label")}

    def button(self, row, method: str):
        found = [b for b in row.find_elements(By.CSS_SELECTOR, "button") if b.get_attribute("data-method") == method]
        return found[0] if found else None

    def answered(self, button) -> str:
        """Can()'s answer for the button, once it came."""
        self.wait(lambda: button.get_attribute("data-can") != "pending", "Can() to answer")
        return button.get_attribute("data-can")

    def show_view(self, user: str):
        """Click the user's name (or the host's button for "") and wait for the tree."""
        if user == "":
            self.driver.find_element(By.ID, "host-button").click()
            title = "Mounts of the host"
        else:
            self.wait(lambda: self.row(user), f"{user} in the list")
            self.row(user).find_element(By.CSS_SELECTOR, "th button").click()
            title = f"Mount tree of {user}'s view"
        self.wait(lambda: self.driver.find_element(By.ID, "view-title").text == title and self.find("#mounts-body tr"),
                  f"the tree of {user or 'the host'}")

    def dialog_open(self) -> bool:
        return self.driver.find_element(By.ID, "modal-backdrop").is_displayed()

    def wait_dialog(self):
        self.wait(self.dialog_open, "the confirmation")
        return self.driver.find_element(By.ID, "modal")

    def dialog_facts(self) -> dict:
        """What the confirmation names: its fact list, label → text."""
        return {d.get_attribute("data-fact"): d.text for d in self.find("#modal dd[data-fact]")}

    def confirm(self):
        """Click the open confirmation's button and wait for it to close."""
        self.wait_dialog()
        self.driver.find_element(By.ID, "modal-ok").click()
        self.wait(lambda: not self.dialog_open(), "the confirmation to close")

    def alerts(self) -> list[str]:
        return [a.text for a in self.find("#alerts .pf-c-alert")]

    def screenshot(self, name: str, height: int | None = None) -> Path | None:
        """The page, as tall as its content (at most 2400 pixels) or `height`."""
        if self.screenshot_dir is None:
            return None
        self.screenshot_dir.mkdir(parents=True, exist_ok=True)
        path = self.screenshot_dir / f"{name}.png"
        if height is None:
            height = int(self.driver.execute_script("return document.documentElement.scrollHeight")) + 20
        self.driver.set_window_size(1280, max(700, min(height, 2400)))
        self.driver.save_screenshot(str(path))
        return path
