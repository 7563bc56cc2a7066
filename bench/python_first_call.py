#!/usr/bin/env python3
"""python_first_call.py - what the first call of a new shape costs in the
Python package, against later calls of that shape, and where it goes.

In one warm process (the package imported, a small call made on each
backend, so that OpenMP's threads and CUDA have started), for each case a
new shape is called `--calls` times: the first call, the median of the
later ones, their ratio (issue 24's target: at most 2 for arrays of at
least 512^2), and of the first call the time spent making the plan
(_engine._make_plan: the Python layer and convolve_plan_create) and in the
plan's executions. Then a fresh process per case gives the first call of
the process (CUDA's start-up included). Cases: gaussian_filter on float32
n^2 (sigma 2), uint8 n^2 x 3 RGB ((2, 2, 0), scipy's integer semantics and
saturate=True), correlate 7x7 float32.

The small warm-up calls do not stream (host arrays stream on the GPU from
8 MiB of input and output on, src/stream.h CVI_STREAM_MIN_BYTES), so by
default the first streamed case also pays the process's first streamed
execution (its pinned staging, its worker threads). --warm-streamed also
makes one streamed call a backend at other shapes (float32 1536^2, 18 MiB
in and out, and uint8 1536^2 x 3 RGB, 13.5 MiB) before the cases: the
first call is then that of a new shape in a process that has streamed
before. --warm-cases calls every case once at 1536^2 before the table
(streamed on the GPU): the first call is then that of a new shape of a
filter the process has run, its kernels loaded (CUDA loads a kernel at
its first launch in a process). The line above the table names the
warm-up used.

--given-output makes every call write into an output array made and
written before the first call (`output=`), so that no call faults in a new
array's pages: the first call's cost beyond that of a later one is then
the new shape's own (its plan, its scratch), not the first touch of new
memory that later calls avoid by reusing what the allocator freed.

--fresh-inputs gives every call of a case its own input array, made and
written just before the call (untimed), instead of one array for all:
every call then reads an input as the first call does, written but not
read since (on the H200 host, a 512^2 float32 input copied to the GPU
took 0.066-0.090 ms when the call before had read it, 0.114-0.124 ms when
it had not). (Until 2026-11-29 the arrays were all made before the first
call, so that the first call read the one written longest ago.)

--shapes K takes each size at K new shapes (n + 8 i along both axes, i
< K; default 1) and reports the medians of their first calls, of their
later calls' medians and of their ratios, with the ratios' range: one
first call is one sample, and on the H200 host a 512^2 case's ratio moved
by 0.3-0.5 between two runs of the same library.

    PYTHONPATH=build/python python3 bench/python_first_call.py [--backend cpu,cuda,auto]
        [--sizes 512,2048,4096] [--calls 5] [--shapes 1] [--warm-streamed] [--warm-cases]
        [--given-output] [--fresh-inputs]
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

import convolve as cv
from convolve import _engine

CASES = ("f32", "u8", "u8sat", "corr7")


def make(kind, n, rng):
    if kind in ("f32", "corr7"):
        return rng.random((n, n), dtype=np.float32)
    return rng.integers(0, 256, (n, n, 3), dtype=np.uint8)


def shapes(kind, n, backend, args, rng, w):
    """The case at args.shapes new shapes from n: (median first, median of
    the later medians, median ratio, least ratio, largest ratio, the first
    shape's plan and executions times (s))."""
    firsts, laters, ratios, spent0 = [], [], [], None
    for i in range(args.shapes):
        f, later, spent = one(kind, n + 8 * i, backend, args.calls, rng, w, args.given_output,
                              args.fresh_inputs)
        firsts.append(f), laters.append(later), ratios.append(f / later)
        spent0 = spent0 or spent
    return (float(np.median(firsts)), float(np.median(laters)), float(np.median(ratios)),
            min(ratios), max(ratios), spent0)


def call(kind, a, backend, w, out=None):
    if kind == "f32":
        return cv.gaussian_filter(a, 2, output=out, backend=backend)
    if kind == "corr7":
        return cv.correlate(a, w, output=out, backend=backend)
    return cv.gaussian_filter(a, (2, 2, 0), output=out, backend=backend,
                              saturate=kind == "u8sat")


def timed(args):
    """(seconds in _make_plan, seconds in executions) of the calls in between."""
    spent = {"plan": 0.0, "exec": 0.0}
    make_plan, run = _engine._make_plan, _engine._run

    def mp(*a, **k):
        t = time.perf_counter()
        try:
            return make_plan(*a, **k)
        finally:
            spent["plan"] += time.perf_counter() - t

    def rn(*a, **k):
        t = time.perf_counter()
        try:
            return run(*a, **k)
        finally:
            spent["exec"] += time.perf_counter() - t

    _engine._make_plan, _engine._run = mp, rn
    return spent, lambda: (setattr(_engine, "_make_plan", make_plan),
                           setattr(_engine, "_run", run))


def one(kind, n, backend, calls, rng, w, given=False, fresh=False):
    a = make(kind, n, rng)
    out = np.ones_like(a) if given else None  # written: its pages are in memory
    times, first = [], None
    for i in range(calls):
        if fresh and i > 0:  # made just before the call, as the first call's
            a = make(kind, n, rng)
        spent, undo = timed(None)
        t = time.perf_counter()
        call(kind, a, backend, w, out)
        times.append(time.perf_counter() - t)
        undo()
        if i == 0:
            first = dict(spent)
    later = float(np.median(times[1:]))
    return times[0], later, first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--sizes", default="512,2048")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--shapes", type=int, default=1,
                    help="each size at this many new shapes (n + 8 i): medians reported")
    ap.add_argument("--warm-streamed", action="store_true",
                    help="also warm up with one streamed call a backend (float32 1536^2, "
                         "uint8 1536^2 x 3) before the cases")
    ap.add_argument("--warm-cases", action="store_true",
                    help="also call every case once a backend at 1536^2 (streamed on the GPU) "
                         "before the table: the first call is then that of a new shape of a "
                         "filter the process has run (its kernels loaded)")
    ap.add_argument("--fresh-inputs", action="store_true",
                    help="every call of a case reads its own input array, made before the first")
    ap.add_argument("--given-output", action="store_true",
                    help="every call writes into one output array made before the first")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    w = rng.random((7, 7))
    if args.child:  # a fresh process: its first call
        kind, n, backend = args.child[0], int(args.child[1]), args.child[2]
        f, later, spent = one(kind, n, backend, args.calls, rng, w, args.given_output,
                              args.fresh_inputs)
        print("%.2f %.2f %.2f %.2f" % (f * 1e3, later * 1e3, spent["plan"] * 1e3,
                                       spent["exec"] * 1e3))
        return
    backends = [b for b in args.backend.split(",") if b == "cpu" or cv.backend_available("cuda")]
    warm = [64] + ([1536] if args.warm_streamed else [])
    for b in backends:  # warm: threads and CUDA started (and a streamed execution made)
        for n in warm:
            call("f32", make("f32", n, rng), b, w)
            call("u8", make("u8", n, rng), b, w)
        if args.warm_cases:
            for kind in CASES:
                call(kind, make(kind, 1536, rng), b, w)
    print("warm-up: float32 64^2 and uint8 64^2 x 3 calls a backend%s%s"
          % (", then float32 1536^2 and uint8 1536^2 x 3 (streamed on the GPU)"
             if args.warm_streamed else "" if args.warm_cases else " (none streamed)",
             ", then every case at 1536^2 (streamed on the GPU)" if args.warm_cases else "")
          + ("; outputs given (made and written before the first call)"
             if args.given_output else "; a new output array each call")
          + ("; an input array a call" if args.fresh_inputs else "; one input array a case"))
    if args.shapes > 1:
        print("%d shapes a size (n + 8 i): medians of the first calls, of the later calls' "
              "medians and of the ratios (least-largest); plan and executions: the first "
              "shape's first call" % args.shapes)
    print("| backend | case | n | first (ms) | later (ms) | first / later | plan (ms) | "
          "executions (ms) | fresh process: first | later |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for b in backends:
        for n in (int(s) for s in args.sizes.split(",")):
            for kind in CASES:
                f, later, ratio, lo, hi, spent = shapes(kind, n, b, args, rng, w)
                r = subprocess.run([sys.executable, __file__, "--calls", str(args.calls)]
                                   + (["--given-output"] if args.given_output else [])
                                   + (["--fresh-inputs"] if args.fresh_inputs else [])
                                   + ["--child", kind, str(n), b], capture_output=True,
                                   text=True, env=os.environ)
                fresh = r.stdout.split() if r.returncode == 0 else ["-", "-"]
                span = " (%.2f-%.2f)" % (lo, hi) if args.shapes > 1 else ""
                print("| %s | %s | %d | %.2f | %.2f | %.2f%s | %.2f | %.2f | %s | %s |"
                      % (b, kind, n, f * 1e3, later * 1e3, ratio, span, spent["plan"] * 1e3,
                         spent["exec"] * 1e3, fresh[0], fresh[1]), flush=True)


if __name__ == "__main__":
    main()
