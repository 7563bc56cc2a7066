#!/usr/bin/env python3
"""python_integer.py - integer images with scipy's semantics (the default
cast: truncation, wrap-around): the convolve package against
scipy.ndimage, each call in a process of its own, time and peak memory.

Cases (issue 24's): uniform_filter(uint8 8192^2, 9), gaussian_filter(uint8
2048^2 x 3, (2, 2, 0)), sobel(uint16 2048^2, axis 0). For each case and
side a fresh python3 makes the array (seeded random data), calls the filter
--calls times (the first call plans; the best of the others is the time)
and reports its peak RSS (getrusage); the sides alternate, --rounds times,
and each keeps its best time and its lowest peak. A last process per case
runs both and checks that the results are equal bit for bit.

  PYTHONPATH=build/python /usr/bin/python3 bench/python_integer.py [--rounds 3]
  (--markdown prints the table for BENCHMARKS.md)
"""
import argparse
import json
import os
import subprocess
import sys

CASES = {
    "uniform_filter(u8 8192^2, 9)": ("uint8", (8192, 8192), "uniform_filter", "(a, 9)"),
    "gaussian_filter(u8 2048^2x3, (2,2,0))": ("uint8", (2048, 2048, 3), "gaussian_filter",
                                              "(a, (2, 2, 0))"),
    "sobel(u16 2048^2, 0)": ("uint16", (2048, 2048), "sobel", "(a, 0)"),
}

CHILD = r"""
import json, resource, sys, time
import numpy as np
side, dtype, shape, func, args, calls = sys.argv[1:7]
shape = tuple(json.loads(shape))
rng = np.random.default_rng(24)
a = rng.integers(0, np.iinfo(dtype).max + 1, size=shape, dtype=dtype)
if side == "scipy":
    import scipy.ndimage as m
    kw = {}
else:
    import convolve as m
    kw = {}
f = getattr(m, func)
times = []
for _ in range(int(calls)):
    t0 = time.perf_counter()
    r = eval("f" + args, {"f": f, "a": a})
    times.append(time.perf_counter() - t0)
    del r
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps({"first": times[0], "best": min(times[1:] or times), "rss": rss}))
"""

CHECK = r"""
import json, sys
import numpy as np
import scipy.ndimage as s
import convolve as c
dtype, shape, func, args = sys.argv[1:5]
rng = np.random.default_rng(24)
a = rng.integers(0, np.iinfo(dtype).max + 1, size=tuple(json.loads(shape)), dtype=dtype)
want = eval("f" + args, {"f": getattr(s, func), "a": a})
got = eval("f" + args, {"f": getattr(c, func), "a": a})
print(json.dumps({"equal": bool(got.dtype == want.dtype and np.array_equal(got, want)),
                  "differ": int(np.count_nonzero(got != want))}))
"""


def child(code, *args):
    out = subprocess.run([sys.executable, "-c", code] + [str(x) for x in args], check=True,
                         stdout=subprocess.PIPE, env=os.environ).stdout
    return json.loads(out.decode().strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", help="run the cases whose name contains this")
    a = ap.parse_args()
    rows = []
    for name, (dtype, shape, func, args) in CASES.items():
        if a.only and a.only not in name:
            continue
        best = {"scipy": None, "convolve": None}
        for _ in range(a.rounds):
            for side in ("scipy", "convolve"):
                r = child(CHILD, side, dtype, json.dumps(shape), func, args, a.calls)
                b = best[side]
                best[side] = r if b is None else {"first": min(b["first"], r["first"]),
                                                  "best": min(b["best"], r["best"]),
                                                  "rss": min(b["rss"], r["rss"])}
        chk = child(CHECK, dtype, json.dumps(shape), func, args)
        s, c = best["scipy"], best["convolve"]
        rows.append((name, s, c, chk))
        print("%s: scipy %.0f ms %.0f MiB; convolve %.0f ms (first call %.0f) %.0f MiB; "
              "time %.2fx, memory %.2fx; equal %s (%d differ)" % (
                  name, s["best"] * 1e3, s["rss"], c["best"] * 1e3, c["first"] * 1e3, c["rss"],
                  c["best"] / s["best"], c["rss"] / s["rss"], chk["equal"], chk["differ"]),
              flush=True)
    if a.markdown:
        print("\n| call | scipy ms | scipy peak MiB | convolve ms (first call) | convolve peak "
              "MiB | time / scipy | peak / scipy | equal |")
        print("|---|---|---|---|---|---|---|---|")
        for name, s, c, chk in rows:
            print("| %s | %.0f | %.0f | %.0f (%.0f) | %.0f | %.2f | %.2f | %s |" % (
                name, s["best"] * 1e3, s["rss"], c["best"] * 1e3, c["first"] * 1e3, c["rss"],
                c["best"] / s["best"], c["rss"] / s["rss"], "yes" if chk["equal"] else "NO"))


if __name__ == "__main__":
    main()
