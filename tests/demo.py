#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""nsmanager demonstration (run by tools/demo, as root).

Builds a throwaway machine (tests/sandbox.py: its own mount namespace, test users,
a private system bus, polkitd), starts nsmanagerd, creates the views of alice and
bob the way an administrator would with busctl, inserts a "CD" on the host's /mnt
and shows it in both views, shows alice's own /mnt mount reaching bob while her
home mount stays hers, compares mount counts, and cleans everything up."""

import os
import shlex
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sandbox  # noqa: E402

BUSCTL = ["busctl", "call", sandbox.BUS_NAME, sandbox.MANAGER_PATH, sandbox.MANAGER_IFACE]
FINDMNT_COLUMNS = "TARGET,SOURCE,FSTYPE,PROPAGATION"
BOLD = "\033[1m" if sys.stdout.isatty() else ""
PLAIN = "\033[0m" if sys.stdout.isatty() else ""


def heading(text):
    print(f"\n{BOLD}== {text}{PLAIN}")


def note(text):
    print(textwrap.fill(text, 88))


def show(argv, result):
    print(f"$ {shlex.join(argv)}")
    out = (result.stdout + result.stderr).rstrip("\n")
    if out:
        print(textwrap.indent(out, "  "))
    if result.returncode != 0:
        raise SystemExit(f"demo: {argv[0]} failed with {result.returncode}")


def run(sb, argv):
    show(argv, sb.run(argv))


def in_view(sb, user, argv):
    """Run argv in user's view; shown the way root would type it with the fd the
    daemon hands out for OpenMountNamespace."""
    r = sb.in_view(user, argv)
    print(f"[{user}'s view] $ {shlex.join(argv)}")
    out = (r.stdout + r.stderr).rstrip("\n")
    if out:
        print(textwrap.indent(out, "  "))
    if r.returncode != 0:
        print(f"  (exit {r.returncode})")
    return r


def interesting_tree(sb, view, subtree_root):
    """findmnt's columns for what the story is about (/, /home, /mnt and below, the
    subtree root), as a tree; mounts covered by later ones are left out."""
    def wanted(target):
        return (target in ("/", "/home", "/mnt", str(subtree_root))
                or target.startswith(("/mnt/", "/home/alice/", str(subtree_root) + "/")))
    argv = ["findmnt", "-o", FINDMNT_COLUMNS]
    mounts = [m for m in sandbox.visible_mounts(sb.mountinfo(view)) if wanted(m.target)]
    ids = {m.id for m in mounts}
    by_id = {m.id: m for m in sb.mountinfo(view)}

    def shown_parent(m):
        seen, p = {m.id}, by_id.get(m.parent)
        while p is not None and p.id not in ids and p.id not in seen:
            seen.add(p.id)
            p = by_id.get(p.parent)
        return p.id if p is not None and p.id in ids and p.id != m.id else None
    children, roots = {}, []
    for m in mounts:
        parent = shown_parent(m)
        (children.setdefault(parent, []) if parent else roots).append(m)

    def walk(m, depth):
        yield m, depth
        for c in children.get(m.id, []):
            yield from walk(c, depth + 1)
    tree = [x for r in roots for x in walk(r, 0)]
    rows = [("TARGET", "SOURCE", "FSTYPE", "PROPAGATION")]
    rows += [("  " * d + m.target, m.source, m.fstype, m.propagation) for m, d in tree]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    who = "host" if view is None else f"{view}'s view"
    print(f"[{who}] $ {shlex.join(argv)}   (only /, /home, /mnt, the subtree root)")
    for r in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths + [0])).rstrip())


def table_now(baseline: int) -> str:
    """The last line's count, from the table as it is, against the first line's."""
    now = sandbox.host_mountinfo()
    if len(now) == baseline:
        return f"the mount table is back to its {baseline} entries."
    gone = sorted({m.target for m in sandbox.namespace_baseline()} - {m.target for m in now})
    if not gone:
        return f"the mount table has {len(now)} entries, {baseline} at the start."
    return (f"the mount table has {len(now)} entries, {baseline} at the start less what the sandbox set aside "
            f"under /mnt and /media ({', '.join(gone)}), which the machine itself keeps.")


def main():
    if os.geteuid() != 0:
        raise SystemExit("demo: run as root (a fresh Debian 12 has no sudo: log in as root, or su -)")
    binary = sandbox.daemon_binary()
    if not binary.exists():
        raise SystemExit(f"demo: {binary} is missing; build first (tools/build)")

    sb = sandbox.Sandbox()
    heading("A throwaway machine")
    baseline = sandbox.enter_private_mount_namespace()
    sb.setup()
    note("This process now runs in a mount namespace of its own, so nothing below touches the "
         "real machine. In it: users alice and bob (in a copy of /etc/passwd), /home and /mnt on "
         "tmpfs, a real dbus-daemon --system with the project's bus policy, and polkitd. "
         f"The machine's mount table has {baseline} entries; the sandbox adds "
         f"{len(sandbox.host_mountinfo()) - baseline}.")
    try:
        demo(sb)
    except sandbox.DaemonError as e:
        print(f"\ndemo: nsmanagerd failed: {e}", file=sys.stderr)
        return_code = 1
    except SystemExit as e:
        print(e, file=sys.stderr)
        if sb.instance is not None:
            print("---- nsmanagerd log ----\n" + sb.daemon_log_text(), file=sys.stderr)
        return_code = 1
    else:
        return_code = 0
    heading("Clean-up")
    try:
        problems = sb.cleanup_instance()
        sb.teardown()
    except sandbox.SandboxLeak as e:
        print(f"demo: {e}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"demo: {p}", file=sys.stderr)
    note("Namespaces removed, nsmanagerd stopped (SIGTERM), bus and polkitd stopped, every "
         f"sandbox mount undone: {table_now(baseline)}")
    return 1 if problems else return_code


def demo(sb):
    heading("Start nsmanagerd")
    sb.start_daemon()
    print(f"$ {sandbox.daemon_binary()} --config={sb.config_file}")
    print(textwrap.indent(sb.config_file.read_text().rstrip("\n"), "  "))
    note(f"nsmanagerd owns {sandbox.BUS_NAME} on the system bus. It made {sb.subtree_root} "
         "(SubtreeRoot) an unbindable mount, /mnt a shared one, and / shared.")
    run(sb, ["busctl", "introspect", sandbox.BUS_NAME, sandbox.MANAGER_PATH, sandbox.MANAGER_IFACE])

    heading("Create the views of alice and bob (as an administrator would)")
    run(sb, BUSCTL + ["CreateNamespace", "s", "alice"])
    run(sb, BUSCTL + ["CreateNamespace", "s", "bob"])
    run(sb, BUSCTL + ["ListNamespaces"])
    run(sb, ["busctl", "get-property", sandbox.BUS_NAME, f"{sandbox.MANAGER_PATH}/user/_2001",
             sandbox.NAMESPACE_IFACE, "Name", "Root", "MountNamespaceId", "NMounts"])
    for user in ("alice", "bob"):
        in_view(sb, user, ["readlink", "/proc/self/ns/mnt"])
    note("Each view is a mount namespace of its own (root enters one with the fd that "
         "OpenMountNamespace returns, as nsenter --mount does; PAM does it at login).")

    heading("Insert a CD on the host: a mount on /mnt/cd")
    marker, _ = sb.mount_cd("/mnt/cd", label="DEMO_CD")
    print("$ mount -t tmpfs DEMO_CD /mnt/cd    (a small tmpfs with README.txt plays the CD)")
    interesting_tree(sb, None, sb.subtree_root)

    heading("The CD appears in both views")
    for user in ("alice", "bob"):
        interesting_tree(sb, user, sb.subtree_root)
        in_view(sb, user, ["cat", marker])
    note("Neither view contains the subtree root or the other's tree: it is unbindable, so the "
         "recursive copy of / that became each view left it out.")

    heading("alice plugs in a USB stick: her mount on /mnt/usb reaches bob and the host")
    sb.mount_tmpfs("/mnt/usb", source="ALICE_USB", files={"photo.txt": "alice's holiday photo\n"},
                   view="alice")
    print("[alice's view] $ mount -t tmpfs ALICE_USB /mnt/usb")
    in_view(sb, "bob", ["findmnt", "-o", FINDMNT_COLUMNS, "/mnt/usb"])
    in_view(sb, "bob", ["cat", "/mnt/usb/photo.txt"])
    run(sb, ["findmnt", "-o", FINDMNT_COLUMNS, "/mnt/usb"])

    heading("alice mounts something in her home: it stays in her view")
    sb.mount_tmpfs("/home/alice/private", source="ALICE_FUSE", view="alice")
    print("[alice's view] $ mount -t tmpfs ALICE_FUSE /home/alice/private")
    in_view(sb, "alice", ["findmnt", "-o", FINDMNT_COLUMNS, "/home/alice/private"])
    r = in_view(sb, "bob", ["findmnt", "-o", FINDMNT_COLUMNS, "/home/alice/private"])
    r2 = sb.run(["findmnt", "/home/alice/private"])
    print(f"[host] $ findmnt /home/alice/private\n  (exit {r2.returncode}: not a mount point)")
    if r.returncode == 0 or r2.returncode == 0:
        raise SystemExit("demo: alice's home mount leaked out of her view")
    sb.umount("/home/alice/private", view="alice")
    sb.umount("/mnt/usb", view="alice")

    heading("Mount counts")
    host = sb.mount_count()
    views = {u: sb.mount_count(u) for u in ("alice", "bob")}
    print(f"  host: {host} mounts; alice's view: {views['alice']}; bob's view: {views['bob']}")
    note("A view holds the host's mounts minus the pruned subtree root and nsmanagerd's state "
         "directory; the host does not grow with the number of views (each copy lives in its "
         "own namespace).")

    heading("Remove the views")
    run(sb, BUSCTL + ["RemoveNamespace", "s", "alice"])
    run(sb, BUSCTL + ["RemoveNamespace", "s", "bob"])
    print(f"  host: {sb.mount_count()} mounts (unchanged: the views never were in the host's table)")


if __name__ == "__main__":
    sys.exit(main())
