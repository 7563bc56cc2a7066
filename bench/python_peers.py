#!/usr/bin/env python3
"""python_peers.py - the convolve Python package against scipy.ndimage (CPU)
and cupyx.scipy.ndimage (GPU), on the same arrays, in one run.

CPU (numpy arrays, --cpu):
  - call overhead on small arrays: 64 x 64 float32, 3 x 3 filters and their
    kin (correlate, convolve, correlate1d, gaussian_filter sigma 1,
    uniform_filter 3, sobel, laplace): microseconds per call, each a best of
    --rounds medians of a batch of calls; the issue's target is at most 2x
    scipy's time for correlate 64 x 64 float32 3 x 3;
  - large arrays (--size, default 2048 x 2048 float32; a uint8 RGB image):
    scipy, convolve through the package (output= preallocated, as the C
    call), and the C library alone (the same cached plan's execute on the
    same arrays): package / C shows what the Python layer costs.
GPU (CuPy arrays, --gpu; PyTorch CUDA tensors too when installed):
  - the same small-array calls, wall time per call with the stream
    synchronised at the end of each batch;
  - large arrays (--gpu-size, default 8192 x 8192 float32): cupyx.scipy.ndimage,
    convolve on CuPy arrays, on PyTorch tensors, and the C library's plan
    (execute_device), timed with CUDA events.

On a shared machine other work only adds time: measurements alternate
(peer, ours, peer, ours, ...) and each side keeps its best median.
Results agree with the peer's (checked, max relative error printed).

  PYTHONPATH=build/python /usr/bin/python3 bench/python_peers.py --cpu
  PYTHONPATH=build/python python3 bench/python_peers.py --gpu     (GPU machine)
"""
import argparse
import datetime
import functools
import os
import platform
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("CONVOLVE_BUILD_DIR",
                                               os.path.join(here, "..", "build")), "python"))
import convolve as cv  # noqa: E402
from convolve import _engine  # noqa: E402


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def timed(fn, calls, sync=None):
    """Seconds per call over a batch of calls (sync() at the end, if given)."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    if sync:
        sync()
    return (time.perf_counter() - t0) / calls


def alternate(fns, calls, rounds, sync=None):
    """Best (over rounds) of the median of 5 batches, for each fn, taken in turn."""
    for f in fns:
        f()
    if sync:
        sync()
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, f in enumerate(fns):
            m = median([timed(f, calls, sync) for _ in range(5)])
            best[i] = min(best[i], m)
    return best


def rel_err(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def small_cases(lib, asarray=np.asarray):
    """The small calls; asarray puts the weights where lib wants them (CuPy's
    functions take device weights only)."""
    w = asarray(np.random.default_rng(1).normal(size=(3, 3)))
    return [
        ("correlate 3x3", lambda x: lib.correlate(x, w)),
        ("convolve 3x3", lambda x: lib.convolve(x, w)),
        ("correlate1d 3", lambda x: lib.correlate1d(x, asarray([1.0, 2.0, 1.0]))),
        ("gaussian_filter s=1", lambda x: lib.gaussian_filter(x, 1.0)),
        ("uniform_filter 3", lambda x: lib.uniform_filter(x, 3)),
        ("sobel", lambda x: lib.sobel(x, 0)),
        ("laplace", lambda x: lib.laplace(x)),
    ]


def large_cases(lib, rng, asarray=np.asarray):
    w3 = asarray(rng.normal(size=(3, 3)))
    w7 = asarray(rng.normal(size=(7, 7)))
    return [
        ("correlate 3x3", lambda x, **k: lib.correlate(x, w3, **k)),
        ("correlate 7x7", lambda x, **k: lib.correlate(x, w7, **k)),
        ("gaussian_filter s=2", lambda x, **k: lib.gaussian_filter(x, 2.0, **k)),
        ("gaussian_filter s=5", lambda x, **k: lib.gaussian_filter(x, 5.0, **k)),
        ("uniform_filter 9", lambda x, **k: lib.uniform_filter(x, 9, **k)),
        ("sobel", lambda x, **k: lib.sobel(x, 0, **k)),
    ]


def last_plan():
    """The plan the package used last (the cache's most recent entry)."""
    key = list(_engine._cache)[-1]
    return _engine._cache[key][-1]


def run_cpu(args):
    import scipy
    import scipy.ndimage as ndi
    rng = np.random.default_rng(0)
    print("## CPU: convolve %s against scipy %s (numpy %s), %s, %d cores" %
          (cv.__version__, scipy.__version__, np.__version__, platform.processor() or
           platform.machine(), os.cpu_count()))
    print()
    print("Call overhead, 64 x 64 float32 (microseconds per call):")
    print()
    print("| call | scipy.ndimage | convolve | convolve / scipy |")
    print("|---|---|---|---|")
    x = rng.random((64, 64), dtype=np.float32)
    for (name, fs), (_, fc) in zip(small_cases(ndi), small_cases(cv)):
        err = rel_err(fc(x), fs(x))
        ts, tc = alternate([lambda: fs(x), lambda: fc(x)], args.calls, args.rounds)
        print("| %s | %.1f | %.1f | %.2f |%s" % (name, ts * 1e6, tc * 1e6, tc / ts,
                                                "" if err < 1e-5 else " (error %.1e!)" % err))
    print()
    n = args.size
    print("Large arrays, %d x %d float32 (ms per call; package = the public function "
          "with output= given; C = the same plan's execute alone; convolve with %s "
          "threads, scipy with one):" % (n, n, args.threads or "all"))
    print()
    print("| call | scipy.ndimage | convolve package | C library | package / C | "
          "scipy / package |")
    print("|---|---|---|---|---|---|")
    x = rng.random((n, n), dtype=np.float32)
    y = np.empty_like(x)
    th = {"threads": args.threads} if args.threads else {}
    cases = [(name, functools.partial(f, **th)) for name, f in
             large_cases(cv, np.random.default_rng(2))]
    peers = large_cases(ndi, np.random.default_rng(2))
    for (name, fc), (_, fs) in zip(cases, peers):
        ref = fs(x)
        fc(x, output=y)
        err = rel_err(y, ref)
        single = name.startswith("correlate")
        plan = last_plan() if single else None
        fns = [lambda: fs(x, output=y), lambda: fc(x, output=y)]
        if plan is not None:
            fns.append(lambda: plan.execute(x, y))
        t = alternate(fns, 1, args.rounds)
        c = "%.1f" % (t[2] * 1e3) if plan is not None else "-"
        ratio = "%.3f" % (t[1] / t[2]) if plan is not None else "-"
        print("| %s | %.1f | %.1f | %s | %s | %.1f |%s" % (
            name, t[0] * 1e3, t[1] * 1e3, c, ratio, t[0] / t[1],
            "" if err < 1e-5 else " (error %.1e!)" % err))
    img = rng.integers(0, 256, size=(n, n, 3), dtype=np.uint8)
    out = np.empty_like(img)
    fs = lambda: ndi.gaussian_filter(img, (2.0, 2.0, 0), output=out)  # noqa: E731
    fc = lambda: cv.gaussian_filter(img, (2.0, 2.0, 0), output=out,  # noqa: E731
                                    saturate=True, **th)
    t = alternate([fs, fc], 1, args.rounds)
    print("| gaussian_filter s=2, uint8 RGB %dx%dx3 (convolve: saturate=True) | %.1f | %.1f "
          "| - | - | %.1f |" % (n, n, t[0] * 1e3, t[1] * 1e3, t[0] / t[1]))
    print()


def run_gpu(args):
    try:
        import cupy
        import cupyx.scipy.ndimage as cndi
    except ImportError as e:
        print("GPU part skipped: %s" % e)
        return
    if not cv.backend_available("cuda"):
        print("GPU part skipped: %s" % cv.device_info()["reason"])
        return
    try:
        import torch
    except ImportError:
        torch = None
    info = cv.device_info()
    print("## GPU: %s; convolve %s, CuPy %s%s" % (info["name"], cv.__version__,
                                                  cupy.__version__,
                                                  ", torch %s" % torch.__version__
                                                  if torch else ""))
    print()
    sync = cupy.cuda.get_current_stream().synchronize
    print("Call overhead, 64 x 64 float32 device arrays (microseconds per call, "
          "synchronised per batch):")
    print()
    print("| call | cupyx.scipy.ndimage | convolve (CuPy) | convolve (torch) | "
          "convolve / cupyx |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    xh = rng.random((64, 64), dtype=np.float32)
    xd = cupy.asarray(xh)
    xt = torch.from_numpy(xh).cuda() if torch else None
    tsync = (lambda: (sync(), torch.cuda.synchronize())) if torch else sync
    for (name, fs), (_, fc) in zip(small_cases(cndi, cupy.asarray), small_cases(cv)):
        err = rel_err(cupy.asnumpy(fc(xd)), cupy.asnumpy(fs(xd)))
        fns = [lambda: fs(xd), lambda: fc(xd)]
        if xt is not None:
            fns.append(lambda: fc(xt))
        t = alternate(fns, args.calls, args.rounds, tsync)
        print("| %s | %.1f | %.1f | %s | %.2f |%s" % (
            name, t[0] * 1e6, t[1] * 1e6, "%.1f" % (t[2] * 1e6) if xt is not None else "-",
            t[1] / t[0], "" if err < 1e-5 else " (error %.1e!)" % err))
    print()
    n = args.gpu_size
    print("Large arrays, %d x %d float32 on the device (ms per call: 10 calls back to back "
          "between CUDA events, median of "
          "%d):" % (n, n, args.runs))
    print()
    print("| call | cupyx.scipy.ndimage | convolve (CuPy) | convolve (torch) | C plan | "
          "cupyx / convolve |")
    print("|---|---|---|---|---|---|")
    x = cupy.asarray(rng.random((n, n), dtype=np.float32))
    y = cupy.empty_like(x)
    xt = torch.as_tensor(x, device="cuda") if torch else None
    yt = torch.empty_like(xt) if torch else None

    def events(fn, after=None, batch=10):
        # `batch` calls back to back between two events, as a program
        # calling the function in a loop runs them: each call's host work
        # overlaps the previous call's kernels (one call alone between two
        # events would count its Python time as GPU time)
        fn()
        sync()
        ts = []
        for _ in range(args.runs):
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record()
            for _ in range(batch):
                fn()
            if after:
                after()
            b.record()
            b.synchronize()
            ts.append(cupy.cuda.get_elapsed_time(a, b) / batch)
        return median(ts)

    for (name, fc), (_, fs) in zip(large_cases(cv, np.random.default_rng(2)),
                                   large_cases(cndi, np.random.default_rng(2),
                                               cupy.asarray)):
        ref = cupy.asnumpy(fs(x))
        fc(x, output=y)
        err = rel_err(cupy.asnumpy(y), ref)
        plan = last_plan() if name.startswith("correlate") else None
        tp = tc = tt = tpl = float("inf")
        for _ in range(args.rounds):
            tp = min(tp, events(lambda: fs(x, output=y)))
            tc = min(tc, events(lambda: fc(x, output=y)))
            if xt is not None:
                # torch runs on its own current stream: synchronise it into the events
                tt = min(tt, events(lambda: fc(xt, output=yt), after=torch.cuda.synchronize))
            if plan is not None:
                s = cupy.cuda.get_current_stream().ptr
                tpl = min(tpl, events(lambda: plan.execute_device(x.data.ptr, y.data.ptr, s)))
        print("| %s | %.3f | %.3f | %s | %s | %.2f |%s" % (
            name, tp, tc, "%.3f" % tt if xt is not None else "-",
            "%.3f" % tpl if plan is not None else "-", tp / tc,
            "" if err < 1e-4 else " (error %.1e!)" % err))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu", action="store_true", help="the CPU part (default: both)")
    ap.add_argument("--gpu", action="store_true", help="the GPU part")
    ap.add_argument("--size", type=int, default=2048, help="CPU large arrays: N x N")
    ap.add_argument("--gpu-size", type=int, default=8192, help="GPU large arrays: N x N")
    ap.add_argument("--calls", type=int, default=200, help="calls per small-array batch")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; best kept")
    ap.add_argument("--runs", type=int, default=20, help="GPU timed runs per median")
    ap.add_argument("--threads", type=int, default=0,
                    help="CPU threads for convolve's large arrays (default 0: all)")
    args = ap.parse_args()
    both = not (args.cpu or args.gpu)
    print("python_peers.py, %s, %s" % (datetime.date.today().isoformat(), " ".join(sys.argv)))
    print()
    if args.cpu or both:
        run_cpu(args)
    if args.gpu or both:
        run_gpu(args)


if __name__ == "__main__":
    main()
