#!/usr/bin/env python3
"""big_filters.py - separable filters far longer than the array (issue 24,
item 2): convolve against scipy.ndimage, each call in a fresh process, its
time and the process's peak RSS.

Cases: gaussian_filter(31 x 40 float64, sigma 3000), gaussian_filter(31 x 40
float64, sigma 1e4), uniform_filter(200 x 300 float32, 20001),
uniform_filter(200 x 300 float32, 2001) (also its error against scipy's
result in float64: scipy's own float32 error beside ours), and
uniform_filter(200 x 300 float32, 10**9) (convolve: a ValueError at once).
Each process builds its array (fixed seed), calls once to warm up (plans,
imports) unless --cold, then times --repeat calls and reports the best;
peak RSS is ru_maxrss of that process (the array, the interpreter and
numpy/scipy included). Runs alternate scipy and convolve.

  PYTHONPATH=build/python /usr/bin/python3 bench/big_filters.py [--repeat 5] [--rounds 3]
  [--cold] [--skip NAME]
"""
import argparse
import json
import subprocess
import sys

CASES = [
    ("gaussian_filter 31x40 f64 sigma=3000", "gaussian_filter", (31, 40), "float64", 3000.0),
    ("gaussian_filter 31x40 f64 sigma=1e4", "gaussian_filter", (31, 40), "float64", 1e4),
    ("uniform_filter 200x300 f32 size=20001", "uniform_filter", (200, 300), "float32", 20001),
    ("uniform_filter 200x300 f32 size=2001", "uniform_filter", (200, 300), "float32", 2001),
    ("uniform_filter 200x300 f32 size=1e9", "uniform_filter", (200, 300), "float32", 10 ** 9),
]

CHILD = r"""
import json, resource, sys, time
import numpy as np
lib, func, shape, dtype, arg, repeat, cold, skip = json.loads(sys.argv[1])
if lib == "scipy":
    import scipy.ndimage as m
else:
    import convolve as m
x = np.random.default_rng(7).random(shape).astype(dtype)
f = getattr(m, func)
res = {"lib": lib}
try:
    if not cold:
        f(x, arg)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        y = f(x, arg)
        best = min(best, time.perf_counter() - t)
    res["ms"] = best * 1e3
    if dtype == "float32" and not skip:
        import scipy.ndimage as s
        ref = getattr(s, func)(x.astype(np.float64), arg)
        res["err"] = float(np.abs(y.astype(np.float64) - ref).max() / np.abs(ref).max())
except (ValueError, MemoryError) as e:
    res["error"] = "%s: %s" % (type(e).__name__, e)
    res["ms"] = (time.perf_counter() - t) * 1e3
res["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps(res))
"""


def run(lib, case, args):
    _, func, shape, dtype, arg = case
    huge = arg == 10 ** 9
    if lib == "scipy" and huge:
        return {"lib": lib, "skipped": "scipy allocates n + size doubles per line (8 GB)"}
    spec = json.dumps([lib, func, shape, dtype, arg, 1 if huge else args.repeat,
                       args.cold or huge, huge])
    out = subprocess.run([sys.executable, "-c", CHILD, spec], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        return {"lib": lib, "failed": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3, help="alternating scipy/convolve rounds")
    ap.add_argument("--cold", action="store_true", help="time the first call")
    ap.add_argument("--skip", action="append", default=[],
                    help="leave out the cases whose name contains this (repeatable; "
                         "an older build: --skip 1e9, which it would try to allocate)")
    args = ap.parse_args()
    print("| case | scipy ms | convolve ms | ratio | scipy RSS MiB | convolve RSS MiB | "
          "error vs float64 (scipy / convolve) |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        if any(k in case[0] for k in args.skip):
            continue
        best = {}
        for _ in range(args.rounds):
            for lib in ("scipy", "convolve"):
                r = run(lib, case, args)
                b = best.get(lib)
                if b is None or ("ms" in r and r["ms"] < b.get("ms", float("inf"))):
                    best[lib] = r
        s, c = best["scipy"], best["convolve"]
        if "ms" not in c or "error" in c:
            print("| %s | %s | %s | - | - | %.0f | - |" % (
                case[0], s.get("skipped", s.get("ms")), c.get("error", c.get("failed")),
                c.get("rss_mib", float("nan"))))
            continue
        err = "-"
        if "err" in s and "err" in c:
            err = "%.1e / %.1e" % (s["err"], c["err"])
        print("| %s | %.1f | %.1f | %.2f | %.0f | %.0f | %s |" % (
            case[0], s["ms"], c["ms"], c["ms"] / s["ms"], s["rss_mib"], c["rss_mib"], err))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
