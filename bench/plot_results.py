#!/usr/bin/env python3
"""Draws BENCHMARKS.md's plots as SVG from the measured numbers in
bench/results/*.csv (Python's standard library only):

  roofline_h100.svg  the generality suite's cases on the H100: achieved
                     TFLOP/s against arithmetic intensity (flop a byte moved,
                     input read once and output written once), under the
                     run's copy bandwidth and the FP32 FMA peak;
  scaling.svg        speedup on two GPUs or two MPI ranks against one.

Usage: python3 bench/plot_results.py [--results DIR] [--out DIR] [--check]
--check writes nothing and exits 1 if the SVGs in --out differ from what
the CSVs give (so the committed plots follow the numbers).
"""
import argparse
import csv
import math
import os
import sys
from html import escape

HERE = os.path.dirname(os.path.abspath(__file__))

# One colour a series (readable on white, distinct in grey too).
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
           "#7f7f7f", "#bcbd22", "#e377c2"]
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'


def read_csv(path):
    """Rows of a CSV whose comment lines start with '#', and the key=value
    pairs found in those comments."""
    meta, lines = {}, []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("#"):
                for word in line[1:].split():
                    if "=" in word:
                        k, v = word.split("=", 1)
                        meta[k] = v
            elif line.strip():
                lines.append(line)
    return list(csv.DictReader(lines)), meta


class Svg:
    def __init__(self, width, height):
        self.w, self.h, self.items = width, height, []

    def add(self, s):
        self.items.append(s)

    def line(self, x1, y1, x2, y2, colour="#000", width=1.0, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                 f'stroke="{colour}" stroke-width="{width}"{d}/>')

    def polyline(self, pts, colour, width=1.5, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        p = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        self.add(f'<polyline points="{p}" fill="none" stroke="{colour}" '
                 f'stroke-width="{width}"{d}/>')

    def text(self, x, y, s, size=12, anchor="start", colour="#000", rotate=None, bold=False):
        r = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        b = ' font-weight="bold"' if bold else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                 f'fill="{colour}" {FONT}{b}{r}>{escape(s)}</text>')

    def marker(self, x, y, shape, colour, r=4.5):
        if shape == "square":
            self.add(f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" '
                     f'height="{2 * r:.1f}" fill="{colour}" stroke="#000" stroke-width="0.5"/>')
        elif shape == "triangle":
            self.add(f'<polygon points="{x:.1f},{y - r * 1.2:.1f} {x - r:.1f},{y + r * 0.8:.1f} '
                     f'{x + r:.1f},{y + r * 0.8:.1f}" fill="{colour}" stroke="#000" '
                     f'stroke-width="0.5"/>')
        elif shape == "diamond":
            self.add(f'<polygon points="{x:.1f},{y - r * 1.3:.1f} {x + r:.1f},{y:.1f} '
                     f'{x:.1f},{y + r * 1.3:.1f} {x - r:.1f},{y:.1f}" fill="{colour}" '
                     f'stroke="#000" stroke-width="0.5"/>')
        else:
            self.add(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colour}" '
                     f'stroke="#000" stroke-width="0.5"/>')

    def render(self):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
                f'viewBox="0 0 {self.w} {self.h}">\n'
                f'<rect x="0" y="0" width="{self.w}" height="{self.h}" fill="#fff"/>\n')
        return head + "\n".join(self.items) + "\n</svg>\n"


def decades(lo, hi):
    return [10.0 ** e for e in range(int(math.floor(math.log10(lo))),
                                     int(math.ceil(math.log10(hi))) + 1)]


def tick_label(v):
    return f"{v:g}" if v < 1e4 else f"1e{int(round(math.log10(v)))}"


def group_of(case):
    """The legend group of a generality case (by element type and shape)."""
    if case.startswith(("u8", "u16")):
        return "uint8 / uint16"
    if case.startswith("f64"):
        return "float64 2-D"
    if "1-D" in case:
        return "float32 1-D"
    if "3-D" in case:
        return "float32 3-D"
    if "gaussian" in case:
        return "float32 2-D separable"
    return "float32 2-D dense"


def roofline(rows, meta, title):
    bw = float(meta["copy_gbps"]) / 1e3          # TB/s
    peak = float(meta["fma_tflops"])             # TFLOP/s
    pts = []
    for r in rows:
        n = int(r["elements"]) * int(r["channels"])
        nbytes = n * (int(r["in_bytes"]) + int(r["out_bytes"]))
        flops = n * int(r["flops_per_output"])
        sec = float(r["ms"]) * 1e-3
        pts.append((flops / nbytes, flops / sec / 1e12, r))

    W, H = 980, 600
    left, top, pw, ph = 80, 50, 520, 470
    x_lo, x_hi, y_lo, y_hi = 0.5, 500.0, 1.0, 100.0
    svg = Svg(W, H)

    def X(v):
        return left + pw * (math.log10(v) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def Y(v):
        return top + ph - ph * (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo))

    svg.text(left + pw / 2, 28, title, 15, "middle", bold=True)
    # grid and ticks (decades, with 2 and 5 as minor lines)
    for d in decades(x_lo, x_hi):
        for m in (1, 2, 5):
            v = d * m
            if x_lo <= v <= x_hi:
                svg.line(X(v), top, X(v), top + ph, "#ddd" if m > 1 else "#bbb", 0.8)
                svg.text(X(v), top + ph + 16, tick_label(v), 11, "middle")
    for d in decades(y_lo, y_hi):
        for m in (1, 2, 5):
            v = d * m
            if y_lo <= v <= y_hi:
                svg.line(left, Y(v), left + pw, Y(v), "#ddd" if m > 1 else "#bbb", 0.8)
                svg.text(left - 6, Y(v) + 4, tick_label(v), 11, "end")
    svg.add(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#000"/>')
    svg.text(left + pw / 2, top + ph + 38,
             "arithmetic intensity (flop per byte read + written)", 12, "middle")
    svg.text(left - 50, top + ph / 2, "achieved TFLOP/s (2 flop a tap an output)", 12, "middle",
             rotate=-90)

    # the roofs: copy bandwidth (slope 1) and FMA peak (flat), dashed past the ridge
    ridge = peak / bw
    svg.polyline([(X(x_lo), Y(max(y_lo, x_lo * bw))), (X(ridge), Y(peak))], "#000", 2)
    svg.polyline([(X(ridge), Y(peak)), (X(x_hi), Y(peak))], "#000", 2)
    svg.polyline([(X(ridge), Y(peak)), (X(y_hi / bw), Y(y_hi))], "#000", 1, "5,4")
    svg.text(X(x_hi) - 4, Y(peak) - 6, f"FP32 FMA peak {peak:g} TFLOP/s", 11, "end")
    xb = 1.2
    svg.text(X(xb) + 4, Y(xb * bw) - 8, f"copy bandwidth {bw * 1e3:.0f} GB/s", 11, "start",
             rotate=-math.degrees(math.atan2(Y(xb) - Y(xb * 10), X(xb * 10) - X(xb))))

    groups = []
    for _, _, r in pts:
        g = group_of(r["case"])
        if g not in groups:
            groups.append(g)
    shapes = ["circle", "square", "triangle", "diamond", "circle", "square"]
    style = {g: (COLOURS[i % len(COLOURS)], shapes[i % len(shapes)]) for i, g in enumerate(groups)}

    # points, numbered; the numbers are listed on the right
    for i, (ai, tf, r) in enumerate(pts, 1):
        c, s = style[group_of(r["case"])]
        svg.marker(X(ai), Y(tf), s, c)
        svg.text(X(ai) + 6, Y(tf) - 5, str(i), 9, "start", "#333")

    lx, ly = left + pw + 25, top
    svg.text(lx, ly + 4, "groups", 12, bold=True)
    for j, g in enumerate(groups):
        c, s = style[g]
        svg.marker(lx + 6, ly + 22 + j * 17, s, c)
        svg.text(lx + 18, ly + 26 + j * 17, g, 11)
    ly += 30 + len(groups) * 17
    svg.text(lx, ly, "cases (auto's strategy, % of copy / % of FMA)", 12, bold=True)
    for i, (_, _, r) in enumerate(pts, 1):
        svg.text(lx, ly + 16 + (i - 1) * 12.6,
                 f"{i:2d} {r['case']} ({r['auto_picks']}, {r['pct_copy']}% / {r['pct_fma']}%)", 10)
    return svg.render()


def scaling(rows, title):
    series = {}
    for r in rows:
        series.setdefault(r["series"], dict(kind=r["kind"], pts={}, meta=r))["pts"][int(r["n"])] = \
            float(r["value"])
    W, H = 980, 470
    left, top, pw, ph = 70, 50, 420, 360
    n_max = max(n for s in series.values() for n in s["pts"])
    y_lo, y_hi = 0.8, max(2.2, n_max + 0.2)
    svg = Svg(W, H)

    def X(n):
        return left + pw * (n - 1) / (n_max - 1 if n_max > 1 else 1)

    def Y(v):
        return top + ph - ph * (v - y_lo) / (y_hi - y_lo)

    svg.text(left + pw / 2, 28, title, 15, "middle", bold=True)
    v = y_lo
    while v <= y_hi + 1e-9:
        svg.line(left, Y(v), left + pw, Y(v), "#ddd", 0.8)
        svg.text(left - 6, Y(v) + 4, f"{v:.1f}", 11, "end")
        v += 0.2
    for n in range(1, n_max + 1):
        svg.line(X(n), top, X(n), top + ph, "#bbb", 0.8)
        svg.text(X(n), top + ph + 16, str(n), 11, "middle")
    svg.add(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#000"/>')
    svg.text(left + pw / 2, top + ph + 38, "GPUs (streamed plans) or MPI ranks (one GPU each)",
             12, "middle")
    svg.text(left - 44, top + ph / 2, "speedup over one", 12, "middle", rotate=-90)
    svg.polyline([(X(1), Y(1)), (X(n_max), Y(n_max))], "#000", 1, "5,4")
    svg.text(X(1 + (n_max - 1) * 0.45) - 4, Y(1 + (n_max - 1) * 0.45) - 6, "ideal", 11, "end")

    lx, ly = left + pw + 25, top + 4
    svg.text(lx, ly, "series (speedup at the largest count)", 12, bold=True)
    shapes = ["circle", "square", "triangle", "diamond"]
    for j, (name, s) in enumerate(series.items()):
        c, shape = COLOURS[j % len(COLOURS)], shapes[j % len(shapes)]
        p = s["pts"]
        one = p[1]
        if s["kind"] == "strong":
            sp = {n: one / t for n, t in p.items()}
        elif s["kind"] == "weak":
            sp = {n: n * one / t for n, t in p.items()}
        else:
            sp = {n: r / one for n, r in p.items()}
        xy = [(X(n), Y(sp[n])) for n in sorted(sp)]
        svg.polyline(xy, c, 1.8, "2,3" if s["kind"] == "rate" else None)
        for x, y in xy:
            svg.marker(x, y, shape, c, 4)
        m = s["meta"]
        how = {"strong": "", "weak": ", scaled", "rate": ", throughput"}[s["kind"]]
        svg.marker(lx + 6, ly + 20 + j * 30, shape, c, 4)
        svg.text(lx + 18, ly + 24 + j * 30, f"{name}: {sp[max(sp)]:.2f}x{how}", 11)
        svg.text(lx + 18, ly + 37 + j * 30, f"{m['commit']}, {m['device']}, {m['date']}", 10,
                 colour="#555")
    return svg.render()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"),
                    help="folder of the CSV files (default: bench/results)")
    ap.add_argument("--out", default=None, help="folder for the SVGs (default: --results)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the SVGs there differ from what the CSVs give")
    a = ap.parse_args()
    out = a.out or a.results

    rows, meta = read_csv(os.path.join(a.results, "generality_h100.csv"))
    svgs = {"roofline_h100.svg": roofline(
        rows, meta, "Generality suite, H100 (7cfbca8, 2026-11-25): roofline")}
    rows, _ = read_csv(os.path.join(a.results, "scaling.csv"))
    svgs["scaling.svg"] = scaling(rows, "Two GPUs or two MPI ranks against one")

    stale = []
    for name, text in svgs.items():
        path = os.path.join(out, name)
        if a.check:
            try:
                with open(path) as f:
                    same = f.read() == text
            except OSError:
                same = False
            if not same:
                stale.append(path)
        else:
            os.makedirs(out, exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            print(f"plot_results: wrote {path}")
    if stale:
        print("plot_results: out of date (run python3 bench/plot_results.py): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
