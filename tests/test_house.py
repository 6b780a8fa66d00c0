# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shape of the code: no circle in the daemon.

tools/include-graph reads src/'s #include lines and which module's functions call which
other module's functions, and prints the circles: modules whose functions call each other in
a loop, none of which can be understood, changed or tested without the others.
docs/design.md ("The include and call graph") shows the picture.

- src/ has no circle but the one named in ALLOWED (nsctl's main file and its bus client).
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
import xml.etree.ElementTree as ET

import pytest

from sandbox import REPO, sys_mount, sys_umount, timeout

TOOL = REPO / "tools/include-graph"
MNT_DETACH = 2

# Circles that may stay, each as the set of its modules. nsctl.c (the verbs) and nsctl-bus.c
# (its bus client) call each other: the client reports errors through nsctl's one error
# printer. Small, and outside the daemon.
ALLOWED = [{"src/nsctl/nsctl.c", "src/nsctl/nsctl-bus.c"}]


def include_graph(*args, root=None) -> subprocess.CompletedProcess:
    argv = ["/usr/bin/python3", str(TOOL), *(["--root", str(root)] if root else []), *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout(60))
    assert p.returncode == 0, p.stderr
    return p


def circles(root=None, *paths) -> list[set[str]]:
    return [set(c) for c in json.loads(include_graph("--json", *paths, root=root).stdout)["circles"]]


def check_no_circle(where: str, found: list[set[str]]) -> None:
    """No circle in found but the ALLOWED ones (which may shrink or go, not grow); the message
    names each one, and the calls that tie it."""
    unwanted = [c for c in found if not any(c <= allowed for allowed in ALLOWED)]
    assert not unwanted, (f"{len(unwanted)} circle(s) in {where}: "
                          + "; ".join(" ".join(sorted(c)) for c in unwanted)
                          + "\n\ntools/include-graph says:\n" + include_graph().stdout)


def test_no_circle_in_the_daemon():
    """No circle with a module outside src/nsctl/: not in the daemon's core, not in attach,
    not in the builder or the children, not in src/shared or the PAM module."""
    check_no_circle("src/ outside src/nsctl/",
                    [c for c in circles() if any(not m.startswith("src/nsctl/") for m in c)])


def test_no_circle_in_nsctl_but_the_allowed_one():
    check_no_circle("src/nsctl/", [c for c in circles() if all(m.startswith("src/nsctl/") for m in c)])


def test_the_graph_of_src_is_read_whole():
    """The two tests above would pass on a graph read from nothing: every .c file of src/ is a
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
def tree(tmp_path):
    """A directory on a tmpfs of the test's own; write(path, text) puts a file in it."""
    sys_mount("tmpfs", str(tmp_path), "tmpfs", 0, "mode=0755,size=1m")

    def write(path, text):
        f = tmp_path / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)

    write.root = tmp_path
    yield write
    sys_umount(str(tmp_path), MNT_DETACH)


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
