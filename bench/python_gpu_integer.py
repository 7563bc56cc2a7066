#!/usr/bin/env python3
"""python_gpu_integer.py - integer images with scipy's semantics on a GPU
host: gaussian_filter(uint8 4096^2 x 3, (2, 2, 0)) by the convolve package
on a CuPy array against cupyx.scipy.ndimage, and on a numpy array (backend
auto, cpu and cuda) against scipy.ndimage; median of --runs calls after one
untimed call, CUDA calls synchronised; results compared bit for bit.

  PYTHONPATH=build-gpu/python /opt/torch/.venv/bin/python3 bench/python_gpu_integer.py
"""
import argparse
import statistics
import time

import numpy as np
import scipy.ndimage as ndi

import convolve


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


if __name__ == "__main__":
    main()
