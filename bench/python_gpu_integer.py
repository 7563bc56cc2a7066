#!/usr/bin/env python3
"""python_gpu_integer.py - integer images with scipy's semantics on a GPU
host: gaussian_filter(uint8 4096^2 x 3, (2, 2, 0)) by the convolve package
on a CuPy array against cupyx.scipy.ndimage, and on a numpy array (backend
auto, cpu and cuda) against scipy.ndimage; then (unless --only-first) more
integer images on CuPy arrays against cupyx: uint16 RGB gaussian (3, 3, 0),
uint8 gray uniform_filter 9, uint16 sobel, uint8 RGBA gaussian (1, 1, 0).
Median of --runs calls after one untimed call, CUDA calls synchronised;
results compared bit for bit with scipy's.

  CONVOLVE_BUILD_DIR=build-gpu /opt/torch/.venv/bin/python3 bench/python_gpu_integer.py
  (or PYTHONPATH=build-gpu/python; CONVOLVE_BUILD_DIR defaults to build)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import scipy.ndimage as ndi

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("CONVOLVE_BUILD_DIR",
                                               os.path.join(HERE, "..", "build")), "python"))
import convolve  # noqa: E402


def timed(f, runs, sync=None):
    f()
    if sync:
        sync()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        r = f()
        if sync:
            sync()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--only-first", action="store_true",
                    help="only gaussian_filter(uint8 RGB, (2, 2, 0))")
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, (a.size, a.size, 3), dtype=np.uint8)
    sig = (2, 2, 0)
    print(f"gaussian_filter(uint8 {a.size}^2 x 3, {sig}), median of {a.runs} ms")
    ts, want = timed(lambda: ndi.gaussian_filter(x, sig), max(3, a.runs // 2))
    print(f"  scipy (numpy)              {ts:9.2f}")
    for b in ("auto", "cpu", "cuda"):
        try:
            t, got = timed(lambda: convolve.gaussian_filter(x, sig, backend=b), a.runs)
        except convolve.ConvolveError as e:
            print(f"  convolve numpy {b:5s}       {e}")
            continue
        print(f"  convolve numpy {b:5s}       {t:9.2f}  {t / ts:5.2f}x scipy  "
              f"equal {bool(np.array_equal(got, want))}")
    try:
        import cupy as cp
        import cupyx.scipy.ndimage as cndi
    except ImportError:
        print("  (no CuPy)")
        return
    xd = cp.asarray(x)
    sync = cp.cuda.Device().synchronize
    tc, wc = timed(lambda: cndi.gaussian_filter(xd, sig), a.runs, sync)
    t, got = timed(lambda: convolve.gaussian_filter(xd, sig), a.runs, sync)
    print(f"  cupyx (CuPy)               {tc:9.2f}")
    print(f"  convolve CuPy              {t:9.2f}  {tc / t:5.2f}x faster than cupyx  "
          f"equal to cupyx {bool((got == wc).all())}, to scipy "
          f"{bool(np.array_equal(cp.asnumpy(got), want))}")
    if a.only_first:
        return
    n = a.size
    more = [
        ("gaussian_filter(uint16 RGB, (3, 3, 0))",
         rng.integers(0, 65536, (n, n, 3), dtype=np.uint16), "gaussian_filter", ((3, 3, 0),)),
        ("uniform_filter(uint8 gray 2n^2, 9)",
         rng.integers(0, 256, (2 * n, 2 * n), dtype=np.uint8), "uniform_filter", (9,)),
        ("sobel(uint16 gray 2n^2, 0)",
         rng.integers(0, 65536, (2 * n, 2 * n), dtype=np.uint16), "sobel", (0,)),
        ("gaussian_filter(uint8 RGBA, (1, 1, 0))",
         rng.integers(0, 256, (n, n, 4), dtype=np.uint8), "gaussian_filter", ((1, 1, 0),)),
    ]
    print(f"CuPy arrays, n = {n}, median of {a.runs} ms")
    for label, xh, fn, args in more:
        xd = cp.asarray(xh)
        tc, wc = timed(lambda: getattr(cndi, fn)(xd, *args), a.runs, sync)
        t, got = timed(lambda: getattr(convolve, fn)(xd, *args), a.runs, sync)
        want = getattr(ndi, fn)(xh, *args)
        print(f"  {label:40s} cupyx {tc:8.2f}  convolve {t:8.2f}  {tc / t:5.2f}x  "
              f"equal to scipy {bool(np.array_equal(cp.asnumpy(got), want))}")


if __name__ == "__main__":
    main()
