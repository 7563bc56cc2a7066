#!/usr/bin/env python3
"""fft_sizes.py - times a cuFFT real 2-D round trip (rfft2 + irfft2 through
CuPy, float32) for the transform extents the FFT path could choose around
one size, so the choice of extents rests on measurement. Prints a table.

  python3 bench/fft_sizes.py [--need 8222] [--runs 10]
"""
import argparse

import cupy as cp
import numpy as np


def factors(n):
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def smooth(n, primes):
    for p in primes:
        while n % p == 0:
            n //= p
    return n == 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--need", type=int, default=8222)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    cands = []
    for primes in ((2,), (2, 3), (2, 3, 5), (2, 3, 5, 7)):
        n = a.need
        while not smooth(n, primes):
            n += 1
        if n not in cands:
            cands.append(n)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    print(f"fft_sizes: cuFFT rfft2+irfft2 float32 round trip, need >= {a.need}")
    for n in sorted(cands):
        x = cp.random.random((n, n), dtype=cp.float32)
        for _ in range(2):
            cp.fft.irfft2(cp.fft.rfft2(x), s=(n, n))
        times = []
        for _ in range(a.runs):
            start.record()
            cp.fft.irfft2(cp.fft.rfft2(x), s=(n, n))
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop))
        print(f"  n={n:6d} factors {'x'.join(map(str, factors(n))):24s} "
              f"{np.median(times):8.3f} ms  ({np.median(times) / n / n * 1e6:.3f} ns/element)")
        del x
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
