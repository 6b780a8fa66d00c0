# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the benchmarks share: the sandbox (tests/sandbox.py), the helper programs built in
bench/, order statistics, and a small SVG line chart (no plotting library needed)."""

from __future__ import annotations

import html
import math
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import sandbox as sbx  # noqa: E402,F401  (re-exported for the benchmarks)


def require_root(script: str) -> None:
    if os.geteuid() != 0:
        sys.exit(f"{script} must run as root (it builds a sandbox with mount namespaces)")


def tool(name: str) -> Path:
    """A helper program of bench/ in the build directory."""
    p = sbx.build_dir() / "bench" / name
    if not p.exists():
        sys.exit(f"{p} does not exist: build first (meson setup build && ninja -C build)")
    return p


def add_users(sb: "sbx.Sandbox", names: list[str]) -> None:
    """Test users (and their groups) for the sandbox's passwd, after those it has, in order:
    NSS's "files" backend reads passwd from the top, so order is lookup cost."""
    for name in names:
        n = 30000 + len(sb.users)
        sb.users[name] = sbx.TestUser(name, n, n)


def floor_us(mode: str, iterations: int = 100) -> float:
    """bench/nsm-floor's median, in µs: mode "forked" or "inproc"."""
    out = subprocess.run([str(tool("nsm-floor")), mode, str(iterations)], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


class Floors:
    """bench/nsm-floor serve: one iteration of a floor at a time, so that a benchmark can
    interleave the floors with what it compares them to, and all see the same load."""

    def __init__(self):
        self._p = subprocess.Popen([str(tool("nsm-floor")), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)

    def ms(self, mode: str) -> float:
        """One iteration of "forked" or "inproc", in ms."""
        self._p.stdin.write(mode + "\n")
        self._p.stdin.flush()
        line = self._p.stdout.readline()
        if not line:
            raise RuntimeError(f"nsm-floor serve ended (status {self._p.wait()})")
        return float(line) / 1000

    def close(self) -> None:
        self._p.stdin.close()
        self._p.wait()


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def daemon_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# ---- an SVG line chart ----

def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt(v: float) -> str:
    if v >= 1000 and v == int(v):
        return f"{int(v):,}"
    return f"{v:g}"


def svg_line_chart(title: str, x_label: str, y_label: str, series: list[dict], log_x: bool = True,
                   notes: list[str] = ()) -> str:
    """series: dicts with label, points [(x, y)], and optionally color, dashed. Returns the SVG
    text: x on a log scale (decades) or linear, y linear from 0."""
    width = 760
    left, right, top, bottom = 70, 24, 48, 64 + 18 * len(series) + 16 * len(notes)
    height = 440 + 18 * len(series) + 16 * len(notes)
    pw, ph = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in s["points"]]
    ys = [y for s in series for _, y in s["points"]]
    if log_x:
        x_lo, x_hi = 10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs)))
        fx = lambda x: left + pw * (math.log10(x) - math.log10(x_lo)) / max(math.log10(x_hi) - math.log10(x_lo), 1e-9)  # noqa: E731
        x_ticks = [10 ** k for k in range(round(math.log10(x_lo)), round(math.log10(x_hi)) + 1)]
    else:
        x_lo, x_hi = 0, max(xs) or 1
        step = _nice_step(x_hi)
        x_hi = math.ceil(x_hi / step) * step
        fx = lambda x: left + pw * x / x_hi  # noqa: E731
        x_ticks = [i * step for i in range(int(round(x_hi / step)) + 1)]
    y_step = _nice_step(max(ys) * 1.05 or 1)
    y_hi = math.ceil(max(ys) * 1.05 / y_step) * y_step or y_step
    fy = lambda y: top + ph * (1 - y / y_hi)  # noqa: E731
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="15">{html.escape(title)}</text>']
    for t in x_ticks:
        x = fx(t)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{_fmt(t)}</text>')
    for i in range(int(round(y_hi / y_step)) + 1):
        v = i * y_step
        y = fy(v)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(round(v, 6))}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{left + pw / 2}" y="{top + ph + 36}" text-anchor="middle">{html.escape(x_label)}</text>')
    out.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" text-anchor="middle">'
               f'{html.escape(y_label)}</text>')
    for i, s in enumerate(series):
        color = s.get("color") or palette[i % len(palette)]
        pts = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in s["points"])
        dash = ' stroke-dasharray="6 4"' if s.get("dashed") else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for x, y in s["points"]:
            out.append(f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3" fill="{color}"/>')
        ly = top + ph + 62 + 18 * i
        out.append(f'<line x1="{left}" y1="{ly - 4}" x2="{left + 24}" y2="{ly - 4}" stroke="{color}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{left + 30}" y="{ly}">{html.escape(s["label"])}</text>')
    for i, note in enumerate(notes):
        ny = top + ph + 66 + 18 * len(series) + 16 * i
        out.append(f'<text x="{left}" y="{ny}" fill="#555">{html.escape(note)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def plot_note(script: str, what: str) -> str:
    """The line under a plot that says where it comes from."""
    return (f"bench/{script}, {what}, {time.strftime('%Y-%m-%d')}, Linux {os.uname().release}, "
            f"{os.cpu_count()} CPUs")


def write_svg(path: str | Path, text: str) -> None:
    Path(path).write_text(text)
    print(f"plot written to {path}")
