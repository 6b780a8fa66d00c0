# SPDX-License-Identifier: LGPL-2.1-or-later
"""Calling the daemon as a test user, the way a user's own program would: one D-Bus call in a
process of its own, running with the user's uid, gid and groups (setpriv), so the daemon
knows the caller only from the bus. Shared by the authorization tests.

    call_as(sb, "alice", "BindMount", "ssst", "alice", src, dst, 0) -> {"ok": [...]} or
        {"error": name, "message": text}
    An argument {"fd": N} is passed as a Unix fd: N must be one of pass_fds=.
    assert_ok(result, what), assert_refused(result, what)
"""

import json


from helpers import E_ACCESS_DENIED, E_INTERACTIVE_AUTHORIZATION_REQUIRED
from sandbox import BUS_NAME, MANAGER_IFACE, MANAGER_PATH

REFUSED = (E_ACCESS_DENIED, E_INTERACTIVE_AUTHORIZATION_REQUIRED)

# One D-Bus call in a process of its own (run as the test user), printing the outcome as
# JSON. A low-level message, so the test decides ALLOW_INTERACTIVE_AUTHORIZATION.
CLIENT = r"""
import json, sys
import dbus, dbus.lowlevel

def plain(v):
    if isinstance(v, dbus.types.UnixFd):
        return "<fd>"
    if isinstance(v, (dbus.Boolean, bool)):
        return bool(v)
    if isinstance(v, (int,)):
        return int(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return repr(v)

def arg(v):
    return dbus.types.UnixFd(v["fd"]) if isinstance(v, dict) and set(v) == {"fd"} else v

dest, path, iface, method, signature, args, interactive, wait = sys.argv[1:9]
msg = dbus.lowlevel.MethodCallMessage(dest, path, iface, method)
if signature:
    msg.append(*map(arg, json.loads(args)), signature=signature)
msg.set_allow_interactive_authorization(interactive == "yes")
try:
    reply = dbus.SystemBus().send_message_with_reply_and_block(msg, float(wait))
    print(json.dumps({"ok": plain(reply.get_args_list())}))
except dbus.exceptions.DBusException as e:
    print(json.dumps({"error": e.get_dbus_name(), "message": e.get_dbus_message()}))
"""


def client_argv(method, signature="", args=(), interactive=False, path=MANAGER_PATH, iface=MANAGER_IFACE,
                call_timeout=60):
    return ["/usr/bin/python3", "-c", CLIENT, BUS_NAME, path, iface, method, signature,
            json.dumps(list(args)), "yes" if interactive else "no", str(call_timeout)]


def parse_result(p):
    assert p.returncode == 0, f"client failed ({p.returncode}): {p.stderr}"
    return json.loads(p.stdout)


def call_as(sb, user, method, signature="", *args, interactive=False, path=MANAGER_PATH,
            iface=MANAGER_IFACE, pass_fds=(), call_timeout=60):
    """Call a method as `user` ("root" for root) from a separate process, which inherits
    pass_fds; returns {"ok": [results]} or {"error": name, "message": text} (NoReply after
    call_timeout seconds)."""
    argv = client_argv(method, signature, args, interactive, path, iface, call_timeout)
    if user == "root":
        return parse_result(sb.run(argv, wait=90, pass_fds=pass_fds))
    return parse_result(sb.run_as(user, argv, wait=90, pass_fds=pass_fds))


def assert_refused(result, what):
    assert "error" in result, f"{what} was allowed: {result}"
    assert result["error"] in REFUSED, f"{what}: expected AccessDenied or InteractiveAuthorizationRequired, got {result}"
    assert result["message"], f"{what}: refusal without a message"


def assert_ok(result, what):
    assert "ok" in result, f"{what} failed: {result.get('error')}: {result.get('message')}"
    return result["ok"]
