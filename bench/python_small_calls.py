#!/usr/bin/env python3
"""python_small_calls.py - what a call on a small array costs, default
options (backend 'cpu'), against scipy.ndimage: 64 x 64 float64
correlate1d (3 taps), uniform_filter1d (5), gaussian_filter (sigma 1),
correlate (3x3), and the cached plan's execute alone (correlate1d's, into
a given output); then two 2048^2 float32 calls of the multi-threaded path
(uniform_filter1d 9 along axis 0 into a given output, uniform_filter 9).
Each figure is the best of 5 batches, in microseconds a call. One line
a run: alternate the trees to compare two builds.

  PYTHONPATH=build/python python3 bench/python_small_calls.py [--no-scipy]
"""
import sys
import time

import numpy as np

import convolve as cv
from convolve import _engine


def best_of(f, calls, batches=5):
    for _ in range(max(3, calls // 20)):
        f()
    best = float("inf")
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main():
    rng = np.random.default_rng(0)
    a = rng.random((64, 64))
    w = np.array([1.0, 2.0, 1.0])
    o = np.empty_like(a)
    big = rng.random((2048, 2048)).astype(np.float32)
    bo = np.empty_like(big)
    _engine.clear_plan_cache()
    cv.correlate1d(a, w, output=o)
    plan = next(iter(_engine._cache.values()))[0]
    box = np.ones((3, 3))
    rows = [
        ("execute correlate1d", lambda: plan.execute(a, o), None, 20000),
        ("correlate1d 3", lambda: cv.correlate1d(a, w), "correlate1d", 20000),
        ("uniform_filter1d 5", lambda: cv.uniform_filter1d(a, 5), "uniform_filter1d", 20000),
        ("gaussian_filter 1", lambda: cv.gaussian_filter(a, 1), "gaussian_filter", 5000),
        ("correlate 3x3", lambda: cv.correlate(a, box), "correlate", 10000),
        ("2048^2 uniform_filter1d 9 axis 0",
         lambda: cv.uniform_filter1d(big, 9, axis=0, output=bo), None, 20),
        ("2048^2 uniform_filter 9", lambda: cv.uniform_filter(big, 9), None, 20),
    ]
    scipy = None
    if "--no-scipy" not in sys.argv:
        import scipy.ndimage as scipy
    out = []
    for name, f, sp_name, calls in rows:
        text = "%s %.2f" % (name, best_of(f, calls))
        if scipy is not None and sp_name:
            args = {"correlate1d": (a, w), "uniform_filter1d": (a, 5),
                    "gaussian_filter": (a, 1), "correlate": (a, box)}[sp_name]
            g = getattr(scipy, sp_name)
            text += " (scipy %.2f)" % best_of(lambda: g(*args), calls)
        out.append(text)
    print(" | ".join(out))


if __name__ == "__main__":
    main()
