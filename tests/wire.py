# SPDX-License-Identifier: LGPL-2.1-or-later
"""A login's side of nsmanagerd's private socket, as pam_nsmanager speaks it
(src/pam/direct-call.c, src/shared/bus-wire.c), written again independently: the
authentication and the first call in one write, the connection kept afterwards. The tests use
it to hold many kept connections without as many login processes, and to send on a kept
connection what a login never would."""

import array
import socket
import struct

from sandbox import MANAGER_IFACE, MANAGER_PATH, NSM_PRIVATE_SOCKET

AUTH_ROOT = b"\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n"


def _pad(buf: bytearray, n: int):
    while len(buf) % n:
        buf.append(0)


def _string(buf: bytearray, s: str):
    _pad(buf, 4)
    b = s.encode()
    buf += struct.pack("<I", len(b)) + b + b"\0"


def method_call(serial: int, member: str, *args: str, reply: bool = True, path: str = MANAGER_PATH,
                interface: str = MANAGER_IFACE, unix_fds: int = 0) -> bytes:
    """A little-endian method call with string arguments (and a UNIX_FDS header field saying
    that many fds come with it, where unix_fds is not 0)."""
    fields = bytearray()
    wanted = [(1, "o", path), (2, "s", interface), (3, "s", member), (8, "g", "s" * len(args))]
    if unix_fds:
        wanted.append((9, "u", unix_fds))
    for code, sig, value in wanted:
        _pad(fields, 8)
        fields += bytes([code, 1, ord(sig), 0])
        if sig == "g":
            fields += bytes([len(value)]) + value.encode() + b"\0"
        elif sig == "u":
            _pad(fields, 4)
            fields += struct.pack("<I", value)
        else:
            # Aligned from the fields' start: they start at 16, a multiple of 8.
            _string(fields, value)
    body = bytearray()
    for a in args:
        _string(body, a)
    flags = 0x2 | (0 if reply else 0x1)
    header = struct.pack("<cBBBIII", b"l", 1, flags, 1, len(body), serial, len(fields)) + bytes(fields)
    header = bytearray(header)
    _pad(header, 8)
    return bytes(header + body)


class Connection:
    """A root connection to the private socket."""

    def __init__(self, path: str = NSM_PRIVATE_SOCKET, pipelined: bool = True):
        """pipelined=False: the authentication first, alone, and its answer awaited before the
        first call is written, as libsystemd's client does (and the module, where the daemon
        does not say PIPELINED_CALLS=1)."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.sock.connect(path)
        self.buf = b""
        self.fds: list[int] = []
        self.serial = 0
        self.authenticated = False
        if not pipelined:
            self.sock.sendall(AUTH_ROOT)
            self._authenticate(10)

    def close(self):
        for fd in self.fds:
            socket.close(fd)
        self.fds = []
        self.sock.close()

    def send(self, member: str, *args: str, reply: bool = True, **kw) -> int:
        """Writes a call (behind the authentication, on the first one); returns its serial."""
        self.serial += 1
        data = method_call(self.serial, member, *args, reply=reply, **kw)
        if self.serial == 1 and not self.authenticated:
            data = AUTH_ROOT + data
        self.sock.sendall(data)
        return self.serial

    def _read(self, timeout: float):
        self.sock.settimeout(timeout)
        data, fds, _, _ = socket.recv_fds(self.sock, 65536, 8)
        if not data:
            raise ConnectionResetError("nsmanagerd closed the connection")
        self.buf += data
        self.fds += fds

    def _authenticate(self, timeout: float):
        while not self.authenticated:
            if self.buf.count(b"\r\n") >= 2:
                ok, agree, self.buf = self.buf.split(b"\r\n", 2)
                assert ok.startswith(b"OK ") and agree == b"AGREE_UNIX_FD", (ok, agree)
                self.authenticated = True
            else:
                self._read(timeout)

    def reply(self, serial: int, timeout: float = 10) -> tuple[int, dict, bytes]:
        """Reads until the answer to 'serial': (type, header fields, body); 2 = return, 3 = error."""
        self._authenticate(timeout)
        while True:
            if len(self.buf) >= 16:
                _, mtype, _, _, body_len, _, fields_len = struct.unpack_from("<cBBBIII", self.buf)
                start = (16 + fields_len + 7) & ~7
                if len(self.buf) >= start + body_len:
                    fields = _fields(self.buf[16:16 + fields_len])
                    body = self.buf[start:start + body_len]
                    self.buf = self.buf[start + body_len:]
                    if fields.get(5) == serial:
                        return mtype, fields, body
                    continue
            self._read(timeout)

    def call(self, member: str, *args: str, timeout: float = 10, **kw) -> tuple[int, dict, bytes]:
        return self.reply(self.send(member, *args, **kw), timeout)

    def take_fd(self) -> int:
        return self.fds.pop(0)


def _fields(raw: bytes) -> dict:
    """The header fields of basic types a reply of nsmanagerd has: code → value."""
    out, i = {}, 0
    while i < len(raw):
        i = (i + 7) & ~7
        code, siglen = raw[i], raw[i + 1]
        sig = raw[i + 2:i + 2 + siglen].decode()
        i += 3 + siglen
        if sig in ("s", "o"):
            i = (i + 3) & ~3
            n = struct.unpack_from("<I", raw, i)[0]
            out[code] = raw[i + 4:i + 4 + n].decode()
            i += 5 + n
        elif sig == "g":
            n = raw[i]
            out[code] = raw[i + 1:i + 1 + n].decode()
            i += 2 + n
        elif sig == "u":
            i = (i + 3) & ~3
            out[code] = struct.unpack_from("<I", raw, i)[0]
            i += 4
        else:
            raise ValueError(f"header field of type {sig!r}")
    return out


def error_name(fields: dict) -> str | None:
    return fields.get(4)
