#!/usr/bin/env python3
"""python_host_outputs.py - where a Python GPU call on host arrays spends its
time, by where its input and output live: gaussian_filter(a, 2) on a numpy
n x n float32 array, backend cpu and cuda, into a new output each call, into
a pageable output= array written before, into a pinned output= array
(PyTorch's pinned memory), with the input pinned as well; and what pinning
costs (cudaHostRegister of touched memory, through CuPy) against numpy's
first touch of a new array. Median of --runs calls after one untimed call.
Needs PyTorch (pinned arrays) and CuPy (registering); prints one line a
variant.

  PYTHONPATH=build/python python3 bench/python_host_outputs.py [--size N] [--runs R]
"""
import argparse
import time

import numpy as np

import convolve as cv


def med(f, runs):
    f()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[runs // 2], t[0], t[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    import torch
    import cupy
    n, runs = args.size, args.runs
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)

    def pinned():
        t = torch.empty(a.shape, dtype=torch.float32, pin_memory=True)
        return t, t.numpy()
    out_pg = np.empty_like(a)
    out_pg.fill(1)
    keep_out, out_pin = pinned()
    out_pin.fill(1)
    keep_in, a_pin = pinned()
    a_pin[...] = a
    g = cv.gaussian_filter
    rows = [
        ("cpu, new output", lambda: g(a, 2, backend="cpu")),
        ("cpu, pageable output=", lambda: g(a, 2, output=out_pg, backend="cpu")),
        ("cuda, new output", lambda: g(a, 2, backend="cuda")),
        ("cuda, pageable output=", lambda: g(a, 2, output=out_pg, backend="cuda")),
        ("cuda, pinned output=", lambda: g(a, 2, output=out_pin, backend="cuda")),
        ("cuda, pinned input, new output", lambda: g(a_pin, 2, backend="cuda")),
        ("cuda, pinned input and output=", lambda: g(a_pin, 2, output=out_pin, backend="cuda")),
    ]
    print("gaussian_filter(a, 2), numpy %dx%d float32, median (min-max) of %d, ms:"
          % (n, n, runs))
    for name, f in rows:
        m, lo, hi = med(f, runs)
        print("  %-34s %8.2f  (%.2f-%.2f)" % (name, m, lo, hi))

    def register():
        b = np.empty_like(a)
        b.fill(0)
        t0 = time.perf_counter()
        cupy.cuda.runtime.hostRegister(b.ctypes.data, b.nbytes, 0)
        t1 = time.perf_counter()
        cupy.cuda.runtime.hostUnregister(b.ctypes.data)
        return (t1 - t0) * 1e3
    r = sorted(register() for _ in range(5))
    print("  %-34s %8.2f  (%.2f-%.2f)" % ("cudaHostRegister, touched memory", r[2], r[0], r[-1]))

    def touch():
        b = np.empty_like(a)
        b.fill(0)
    m, lo, hi = med(touch, runs)
    print("  %-34s %8.2f  (%.2f-%.2f)" % ("np.empty + fill (one thread)", m, lo, hi))
    del keep_in, keep_out


if __name__ == "__main__":
    main()
