# SPDX-License-Identifier: LGPL-2.1-or-later
"""Debian's sshd on a loopback port of the sandbox, for the tests that log in over ssh:
test_pam.py (the PAM session of an ssh login) and test_nsctl.py (nsctl -H, which runs
`ssh HOST systemd-stdio-bridge` and so reaches the sandbox's own system bus).

    with Sshd(["alice"]) as server:
        subprocess.run(server.ssh_argv("alice", "id -u"))

Its files (host key, a client key per user, authorized_keys, sshd_config, known_hosts,
the log) live in BASE/sshd; the machine's /etc/ssh is only read. sshd listens on
127.0.0.1 on a free port (the network namespace is the machine's: port 22 may be taken)
and is a child of the test: leaving the `with` stops it and waits for its per-connection
processes, which the sandbox would otherwise find as strays.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from sandbox import BASE, child_processes, timeout


def _our_processes(exe: str) -> list[int]:
    """Running (not zombie) children of this process whose executable is exe."""
    found = []
    for pid, state in child_processes():
        with contextlib.suppress(OSError):
            if state != "Z" and os.readlink(f"/proc/{pid}/exe") == exe:
                found.append(pid)
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SshdError(RuntimeError):
    pass


class Sshd:
    """sshd accepting key logins of `users` (root too, if listed), each with a key of
    their own (key(user)). use_pam: sshd's PAM session (the sandbox's /etc/pam.d/sshd)."""

    BINARY = "/usr/sbin/sshd"

    def __init__(self, users, use_pam: bool = True):
        self.users = list(users)
        self.use_pam = use_pam
        self.dir = BASE / "sshd"
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def log(self) -> Path:
        return self.dir / "sshd.log"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def key(self, user: str) -> Path:
        return self.dir / f"{user}_key"

    def _keygen(self, path: Path) -> None:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", path],
                       check=True, timeout=timeout(30))

    def start(self) -> "Sshd":
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(mode=0o755)
        self._keygen(self.dir / "host_key")
        for user in self.users:
            self._keygen(self.key(user))
            (self.dir / f"authorized_keys_{user}").write_text(Path(f"{self.key(user)}.pub").read_text())
            os.chmod(self.dir / f"authorized_keys_{user}", 0o644)
        self.port = _free_port()
        (self.dir / "sshd_config").write_text(f"""\
Port {self.port}
ListenAddress 127.0.0.1
HostKey {self.dir}/host_key
PidFile {self.dir}/sshd.pid
UsePAM {"yes" if self.use_pam else "no"}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile {self.dir}/authorized_keys_%u
StrictModes no
PermitRootLogin {"prohibit-password" if "root" in self.users else "no"}
PrintMotd no
LogLevel VERBOSE
Subsystem sftp internal-sftp
""")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self._log = open(self.log, "wb")
        self.proc = subprocess.Popen([self.BINARY, "-D", "-e", "-f", self.dir / "sshd_config"],
                                     stdout=self._log, stderr=self._log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout(10)
        while True:
            if self.proc.poll() is not None:
                raise SshdError(f"sshd exited with {self.proc.returncode}:\n{self.log_text()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if time.monotonic() > deadline:
                raise SshdError(f"sshd did not listen on 127.0.0.1:{self.port}:\n{self.log_text()}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout(10))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        # Per-connection sshd processes outlive the listener briefly (they are reparented
        # to the sandbox, a subreaper): let them finish before the daemon fixture looks
        # for strays.
        deadline = time.monotonic() + timeout(10)
        while _our_processes(self.BINARY):
            if time.monotonic() > deadline:
                raise SshdError(f"sshd's connection processes did not exit:\n{self.log_text()}")
            time.sleep(0.02)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "Sshd":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def ssh_argv(self, user: str, command: str) -> list:
        """ssh as user to this server, running command; nothing of ~/.ssh is used."""
        return ["ssh", "-F", "/dev/null", "-p", str(self.port), "-i", self.key(user), "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", f"{user}@127.0.0.1", command]

    def client_config(self, alias: str) -> str:
        """An ssh_config(5) block that makes `ssh [USER@]ALIAS` reach this server, with
        every user's key and the server's host key known: for programs that run ssh
        themselves and give it no options, as sd_bus_open_system_remote() does."""
        known_hosts = self.dir / "known_hosts"
        host_key = (self.dir / "host_key.pub").read_text().split()
        known_hosts.write_text(f"{alias} {host_key[0]} {host_key[1]}\n")
        identities = "".join(f"    IdentityFile {self.key(u)}\n" for u in self.users)
        return f"""\
Host {alias}
    HostName 127.0.0.1
    Port {self.port}
{identities}    IdentitiesOnly yes
    HostKeyAlias {alias}
    UserKnownHostsFile {known_hosts}
    StrictHostKeyChecking yes
    BatchMode yes
    LogLevel ERROR
"""
