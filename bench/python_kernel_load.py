#!/usr/bin/env python3
"""python_kernel_load.py - what the first CUDA launch of a kernel in a
process costs a Python call: correlate 7x7 on a float32 512^2 numpy array,
backend 'cuda', in a process warmed up by a 64^2 Gaussian (CUDA started),
its first call against the median of 5 later ones, after one of: nothing
('none'), a 5x5 correlate at 512^2 (another kernel of the same module,
'5x5'), a 7x7 correlate at 300^2 ('7x7other'). One line a run; run it
with CUDA_MODULE_LOADING=EAGER to compare with every module loaded at
CUDA's start.

  PYTHONPATH=build/python python3 bench/python_kernel_load.py [none|5x5|7x7other]
"""
import sys
import time

import numpy as np

import convolve as cv


def timed(f):
    t0 = time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1e3


def main():
    before = sys.argv[1] if len(sys.argv) > 1 else "none"
    rng = np.random.default_rng(0)
    cv.gaussian_filter(rng.random((64, 64), dtype=np.float32), 1, backend="cuda")
    a = rng.random((512, 512), dtype=np.float32)
    w7, w5 = rng.random((7, 7)), rng.random((5, 5))
    pre = 0.0
    if before == "5x5":
        pre = timed(lambda: cv.correlate(a, w5, backend="cuda"))
    elif before == "7x7other":
        pre = timed(lambda: cv.correlate(rng.random((300, 300), dtype=np.float32), w7,
                                         backend="cuda"))
    first = timed(lambda: cv.correlate(a, w7, backend="cuda"))
    later = sorted(timed(lambda: cv.correlate(a, w7, backend="cuda")) for _ in range(5))[2]
    print("corr7 512 after %-9s: that call %.2f ms, first %.2f ms, later %.2f ms, "
          "first/later %.2f" % (before, pre, first, later, first / later))


if __name__ == "__main__":
    main()
