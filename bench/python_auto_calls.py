#!/usr/bin/env python3
"""python_auto_calls.py - backend 'auto' over many calls in a fresh process.

Each backend (auto, cpu, cuda) runs in a process of its own that has not
started CUDA: --calls calls of one filter on the same numpy array, every
call timed (the first included, with whatever start-up it pays). Prints,
per backend, the total, the first call, the median of the last ten calls,
and for auto every call's time and the call that started CUDA (its
slowest after the first). Results are compared with the CPU backend's, bit for bit
for integer images.

  CONVOLVE_BUILD_DIR=build-gpu python3 bench/python_auto_calls.py --calls 60
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CASES = {
    "u8rgb": "gaussian_filter(uint8 4096^2 x 3, (2, 2, 0))",
    "f32": "gaussian_filter(float32 2048^2, 2)",
    "u8gray": "uniform_filter(uint8 4096^2, 9)",
}

CHILD = r"""
import hashlib, json, os, sys, time
import numpy as np
sys.path.insert(0, os.path.join(os.environ["CONVOLVE_BUILD_DIR"], "python"))
import convolve
case, backend, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(3)
if case == "u8rgb":
    x = rng.integers(0, 256, (4096, 4096, 3), dtype=np.uint8)
    f = lambda: convolve.gaussian_filter(x, (2, 2, 0), backend=backend)
elif case == "f32":
    x = rng.standard_normal((2048, 2048), dtype=np.float32)
    f = lambda: convolve.gaussian_filter(x, 2, backend=backend)
else:
    x = rng.integers(0, 256, (4096, 4096), dtype=np.uint8)
    f = lambda: convolve.uniform_filter(x, 9, backend=backend)
ts = []
for _ in range(calls):
    t = time.perf_counter()
    y = f()
    ts.append((time.perf_counter() - t) * 1e3)
print(json.dumps({"ms": ts, "digest": hashlib.sha256(y.tobytes()).hexdigest()}))
"""


def run(case, backend, calls, env):
    r = subprocess.run([sys.executable, "-c", CHILD, case, backend, str(calls)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"  {backend}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--cases", default="u8rgb,f32,u8gray")
    a = ap.parse_args()
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(__file__))
    env.setdefault("CONVOLVE_BUILD_DIR", os.path.join(here, "..", "build"))
    for case in a.cases.split(","):
        print(f"{CASES[case]}, {a.calls} calls, each backend in a fresh process (ms)")
        res = {b: run(case, b, a.calls, env) for b in ("auto", "cpu", "cuda")}
        if None in res.values():
            continue
        cpu_tail = statistics.median(res["cpu"]["ms"][-10:])
        for b, r in res.items():
            ms = r["ms"]
            tail = statistics.median(ms[-10:])
            note = ""
            if b == "auto":
                # the call that started CUDA: the slowest after the first,
                # where it stands out (a call that moved a plan while CUDA
                # ran already costs little more than the GPU's)
                rest = ms[1:]
                on = 1 + rest.index(max(rest)) if rest and max(rest) > 3 * cpu_tail else None
                if on is None:
                    note = "  the CPU throughout"
                else:
                    after = ms[on + 1:]
                    note = (f"  CUDA started at call {on + 1} ({ms[on]:.1f} ms)" +
                            (f", median after it {statistics.median(after):.2f}" if after else ""))
                print("    auto, every call (ms): " + " ".join(f"{t:.1f}" for t in ms))
            same = r["digest"] == res["cpu"]["digest"]
            print(f"  {b:5s} total {sum(ms):9.1f}  first {ms[0]:8.1f}  last-10 median "
                  f"{tail:7.2f}  same bytes as cpu {same}{note}")
        best = min(sum(res["cpu"]["ms"]), sum(res["cuda"]["ms"]))
        print(f"  auto / better backend (totals): {sum(res['auto']['ms']) / best:.2f}")


if __name__ == "__main__":
    main()
