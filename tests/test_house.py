# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shape of the code: each program in its own folder, and no circle in the daemon.

tools/include-graph reads src/'s #include lines and which module's functions call which
other module's functions, and prints the circles: modules whose functions call each other in
a loop, none of which can be understood, changed or tested without the others.
docs/design.md ("The include and call graph") shows the picture.

- A folder of src/ reaches only the folders REACHES names: a child or the builder never the
  daemon's, the daemon never theirs but for the entry points of the processes it forks
  (docs/design.md, "Folders"). Each meson target has the same folders on its include path,
  so a new crossing by #include fails to build; this test also catches a call or a type.
- src/ has no circle at all.
- The tool itself, on made-up trees: it finds a circle that is planted, and none where the
  loop is only of includes, of types, of a function handed over at file scope, of a name in
  a comment or a string, of a member that bears a function's name, of a function a header
  declares and a macro of another file defines, or of a static namesake; and draws it.

Needs no sandbox: the made-up trees are written on a tmpfs of the test's own, in the
private mount namespace that conftest.py enters.
"""

import json
import re
import subprocess
import tempfile
from pathlib import Path
import xml.etree.ElementTree as ET

import pytest

from sandbox import REPO, sys_mount, sys_umount, timeout

TOOL = REPO / "tools/include-graph"
MNT_DETACH = 2

def include_graph(*args, root=None) -> subprocess.CompletedProcess:
    argv = ["/usr/bin/python3", str(TOOL), *(["--root", str(root)] if root else []), *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode == 0, p.stderr
    return p


def circles(root=None, *paths) -> list[set[str]]:
    return [set(c) for c in json.loads(include_graph("--json", *paths, root=root).stdout)["circles"]]


def check_no_circle(where: str, found: list[set[str]]) -> None:
    """No circle in found; the message names each one, and the calls that tie it."""
    assert not found, (f"{len(found)} circle(s) in {where}: "
                       + "; ".join(" ".join(sorted(c)) for c in found)
                       + "\n\ntools/include-graph says:\n" + include_graph().stdout)


# What the modules of each folder of src/ may name (include, call, use a type of): their own
# folder's and these. src/fuzz is the fuzz targets', which test whatever they like.
REACHES = {
    "src/shared": {"src/shared"},
    "src/config": {"src/shared"},
    "src/protocol": {"src/config", "src/shared"},
    "src/builder": {"src/protocol", "src/shared"},
    "src/children": {"src/protocol", "src/config", "src/shared"},
    "src/mount-reader": {"src/protocol", "src/shared"},
    "src/nsmanagerd": {"src/protocol", "src/config", "src/shared"},
    "src/nsctl": {"src/config", "src/shared"},
    "src/pam": {"src/shared"},
    "src/attach-exec": set(),
}
# The daemon forks the builder, the mount readers and the killable children and names where each starts: these,
# declared by src/protocol's headers, defined in the process's own folder. Neither side
# includes the other's headers.
ENTRY_POINTS = {"builder_main", "mount_reader_main", "view_ops_interface", "attach_status_interface",
                "eject_scan_interface", "fd_release_interface", "mount_points_remove_interface",
                "user_lookup_interface", "group_lookup_interface"}


def folder(module: str) -> str:
    return module.rsplit("/", 1)[0]


def crossings(graph: dict) -> list[str]:
    """The arrows from a folder of REACHES to one it may not reach, as text."""
    found = []
    for a in graph["arrows"]:
        src, dst = folder(a["from"]), folder(a["to"])
        if src == dst or src not in REACHES or dst in REACHES[src]:
            continue
        named = set(a["calls"]) | set(a["names"]) | set(a["file_scope"])
        if src in {"src/nsmanagerd", "src/protocol"} and dst in {"src/builder", "src/mount-reader", "src/children"} \
                and not a["includes"] and named <= ENTRY_POINTS:
            continue
        found.append(f"{a['from']} -> {a['to']}: includes {a['includes']}, names {sorted(named)}")
    return found


def test_each_folder_reaches_only_its_own_and_the_shared_ones():
    graph = json.loads(include_graph("--json").stdout)
    assert set(REACHES) | {"src/fuzz"} == {folder(m) for m in graph["modules"]}, "a folder REACHES does not know"
    found = crossings(graph)
    assert not found, "crossings:\n" + "\n".join(found)


def test_a_crossing_is_seen(tree):
    """The check above on a made-up tree: a child that calls the daemon, the daemon that uses
    a child's type, and the daemon that names a child's entry point (allowed), which
    src/protocol declares extern: the name is the child's, who defines it."""
    tree("src/nsmanagerd/host.h", "#pragma once\nint host_share(void);\ntypedef int Manager;\n")
    tree("src/nsmanagerd/host.c", '#include "host.h"\nint host_share(void) {\n        return 0;\n}\n')
    tree("src/children/view-ops.h", "#pragma once\ntypedef struct ViewOp { int x; } ViewOp;\n")
    tree("src/children/view-ops.c", '#include "view-ops.h"\n#include "../nsmanagerd/host.h"\n'
                                    "extern const int view_ops_interface;\nconst int view_ops_interface = 1;\n"
                                    "int view_ops(void);\nint view_ops(void) {\n        return host_share();\n}\n")
    tree("src/protocol/view-ops-message.h", "#pragma once\nextern const int view_ops_interface;\n")
    tree("src/nsmanagerd/job.c", '#include "../protocol/view-ops-message.h"\nconst int *job(void);\n'
                                 "const int *job(void) {\n        return &view_ops_interface;\n}\n")
    tree("src/nsmanagerd/state.c", '#include "../children/view-ops.h"\nint state(ViewOp *op);\n'
                                   "int state(ViewOp *op) {\n        return op->x;\n}\n")
    graph = json.loads(include_graph("--json", root=tree.root).stdout)
    named = {(a["from"], a["to"]): a["names"] for a in graph["arrows"]}
    assert named.get(("src/nsmanagerd/job.c", "src/children/view-ops.c")) == ["view_ops_interface"], graph["arrows"]
    found = crossings(graph)
    assert len(found) == 2, found
    assert found[0].startswith("src/children/view-ops.c -> src/nsmanagerd/host.c: "), found
    assert "host_share" in found[0]
    assert found[1].startswith("src/nsmanagerd/state.c -> src/children/view-ops.c: "), found


def test_no_circle_in_src():
    """Not in the daemon's core, attach, the builder, the children, nsctl (whose bus client
    reports errors itself and reads its settings from one struct), src/shared or the PAM
    module."""
    check_no_circle("src/", circles())


def test_the_graph_of_src_is_read_whole():
    """The tests above would pass on a graph read from nothing: every .c file of src/ is a
    module of it, and the calls that tie the daemon together are arrows (nsmanagerd.c runs the
    Manager; the bus glue calls it)."""
    graph = json.loads(include_graph("--json").stdout)
    modules = set(graph["modules"])
    sources = {str(p.relative_to(REPO)) for p in (REPO / "src").rglob("*.c")}
    assert sources <= modules, f"not read: {sorted(sources - modules)}"
    calls = {(a["from"], a["to"]): set(a["calls"]) for a in graph["arrows"]}
    assert "manager_startup" in calls.get(("src/nsmanagerd/nsmanagerd.c", "src/nsmanagerd/manager.c"), set())
    assert calls.get(("src/nsmanagerd/manager-dbus.c", "src/nsmanagerd/manager.c")), "the bus glue calls the Manager"


@pytest.fixture
def tree():
    """A directory on a tmpfs of the test's own; write(path, text) puts a file in it. Its
    mount point is made in the build directory, not with tmp_path: a static test may run
    before the sandbox has put its tmpfs on /tmp, and pytest's base directory made there
    first would be on the machine's /tmp, then hidden from the tests after it."""
    from sandbox import build_dir
    tmp_path = Path(tempfile.mkdtemp(prefix="house-tree.", dir=build_dir()))
    sys_mount("tmpfs", str(tmp_path), "tmpfs", 0, "mode=0755,size=1m")

    def write(path, text):
        f = tmp_path / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)

    write.root = tmp_path
    yield write
    sys_umount(str(tmp_path), MNT_DETACH)
    tmp_path.rmdir()


def plant(write, call_back: bool) -> None:
    """Four modules in two folders; core/b.c calls back into core/a.c only if call_back.
    Everything else that names a.c from b.c must draw no call: an include loop, a type, a
    function handed over in a table at file scope, a comment, a string, a member, a function
    that a.h declares and a macro in core/c.c defines. And a.c's call of log_oom(), a function
    from outside the tree, is no call of b.c's static namesake."""
    write("src/core/a.h", '#pragma once\n#include "b.h"\ntypedef struct A { int x; } A;\nint a_run(int n);\n'
                          'const char *c_color(void);\n')
    write("src/core/a.c", '#include "a.h"\n#include "../util/u.h"\n'
                          'int a_run(int n) {\n        return b_step(n) + u_len("x") + log_oom();\n}\n')
    write("src/core/b.h", '#pragma once\n#include "a.h"\nint b_step(int n);\n')
    body = "        return a_run(n - 1);\n" if call_back else "        return n;\n"
    write("src/core/b.c", '#include "b.h"\n'
                          'static int log_oom(void);\n'
                          'static int log_oom(void) { return -12; }\n'
                          'typedef struct Ops { int (*a_run)(int); } Ops;\n'
                          'static const Ops ops = { .a_run = a_run };   /* handed over: a_run() */\n'
                          'int b_step(int n) {\n'
                          '        A a = { .x = n };\n'
                          '        /* a_run(n) would be a circle */\n'
                          '        const char *s = "a_run(n)";\n'
                          '        (void) s, (void) ops, (void) c_color();\n'
                          '        if (a.x > 0)\n        ' + body +
                          '        return ops.a_run(a.x) + ops.a_run (0) + log_oom();\n}\n')
    write("src/core/c.c", '#include "a.h"\n'
                          '#define DEFINE_COLOR(name, s) const char *name(void) { return s; }\n'
                          'DEFINE_COLOR(c_color, "red")\n')
    write("src/util/u.h", '#pragma once\n#include <stddef.h>\nsize_t u_len(const char *s);\n')
    write("src/util/u.c", '#include <string.h>\n#include "u.h"\nsize_t u_len(const char *s) {\n        return strlen(s);\n}\n')


def test_include_graph_finds_a_planted_circle(tree):
    plant(tree, call_back=True)
    assert circles(tree.root) == [{"src/core/a.c", "src/core/b.c"}]
    assert circles(tree.root, "src/core") == [{"src/core/a.c", "src/core/b.c"}], "a folder named alone"
    assert circles(tree.root, "src/util", "src/core/a.c", "src/core/a.h", "src/core/c.c") == [], "without b.c, no circle"
    text = include_graph(root=tree.root).stdout
    assert "src/core/b.c -> src/core/a.c: " in text and "a_run()" in text, text
    assert "src/core/a.c -> src/core/b.c: " in text and "b_step()" in text, text


def test_include_graph_finds_no_circle_where_there_is_none(tree):
    plant(tree, call_back=False)
    graph = json.loads(include_graph("--json", root=tree.root).stdout)
    assert graph["circles"] == []
    arrows = {(a["from"], a["to"]): a for a in graph["arrows"]}
    # What is there is seen, and drawn for what it is.
    back = arrows["src/core/b.c", "src/core/a.c"]
    assert back["includes"] == ["a.h"] and back["calls"] == [], back
    assert back["names"] == ["A"] and back["file_scope"] == ["a_run"], back
    assert arrows["src/core/b.c", "src/core/c.c"]["calls"] == ["c_color"]
    assert arrows["src/core/c.c", "src/core/a.c"]["includes"] == ["a.h"]
    assert arrows["src/core/a.c", "src/core/b.c"]["includes"] == ["b.h"]
    assert arrows["src/core/a.c", "src/core/b.c"]["calls"] == ["b_step"], "log_oom() is no call of b.c's static one"
    assert arrows["src/core/a.c", "src/util/u.c"] == {"from": "src/core/a.c", "to": "src/util/u.c", "includes": ["../util/u.h"],
                                                      "calls": ["u_len"], "names": [], "file_scope": []}
    assert ("src/util/u.c", "src/core/a.c") not in arrows
    assert set(graph["modules"]) == {"src/core/a.c", "src/core/b.c", "src/core/c.c", "src/util/u.c"}


def test_include_graph_draws(tree):
    """--svg: a box per module inside the box of its folder, the modules and calls of a circle
    in red."""
    plant(tree, call_back=True)
    include_graph("--svg", str(tree.root / "graph.svg"), root=tree.root)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    svg = ET.parse(tree.root / "graph.svg").getroot()

    def shapes(kind):
        """{title or label: (bounding box of the outline, the text, the outline's stroke)}"""
        found = {}
        for g in svg.iterfind(f".//svg:g[@class='{kind}']", ns):
            outline = g.find("svg:path", ns) if g.find("svg:path", ns) is not None else g.find("svg:polygon", ns)
            points = [float(v) for v in re.findall(r"-?[\d.]+", outline.get("d") or outline.get("points"))]
            box = (min(points[0::2]), min(points[1::2]), max(points[0::2]), max(points[1::2]))
            text = " ".join(t.text for t in g.iterfind("svg:text", ns))
            key = text if kind == "cluster" else g.findtext("svg:title", namespaces=ns)
            found[key] = (box, text, outline.get("stroke"))
        return found

    clusters, nodes, edges = shapes("cluster"), shapes("node"), shapes("edge")
    assert sorted(clusters) == ["src/core/", "src/util/"], clusters
    assert {k: v[1] for k, v in nodes.items()} == {"src/core/a": "a.c circle 1", "src/core/b": "b.c circle 1",
                                                   "src/core/c": "c.c", "src/util/u": "u.c"}, nodes
    for key, (box, _, _) in nodes.items():
        outer = clusters[key.rsplit("/", 1)[0] + "/"][0]
        assert outer[0] <= box[0] and outer[1] <= box[1] and box[2] <= outer[2] and box[3] <= outer[3], (key, box, outer)
    red = sorted(k for k, v in edges.items() if v[2] == "#c00000")
    assert red == ["src/core/a->src/core/b", "src/core/b->src/core/a"], edges
    assert nodes["src/core/a"][2] == "#c00000" and nodes["src/util/u"][2] != "#c00000"


def test_include_graph_refuses_a_path_it_cannot_read(tree):
    p = subprocess.run(["/usr/bin/python3", str(TOOL), "--root", str(tree.root), "src/none"],
                       capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode == 1 and "src/none: no such file or folder" in p.stderr, (p.returncode, p.stderr)
