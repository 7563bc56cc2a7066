#!/usr/bin/env python3
"""dask_scaling.py - convolve.dask on a large chunked array, on 1 and 2
workers, against scipy.ndimage and the convolve package on the whole array.

Cases (float32, reflect unless said):
  - gaussian_filter sigma 4 (radius 16) on a 2-D array (--size2d, default
    8192 x 8192, 256 MiB) in --chunk2d chunks (default 2048 x 2048);
  - correlate with a 3 x 3 x 3 filter, wrap mode, on a 3-D array (--size3d,
    default 512 x 256 x 256, 128 MiB) in slabs of --slab3d planes (default 128).
For each: scipy.ndimage on the whole array (one thread, as scipy is),
convolve's package on the whole array (threads=1 and threads=2), and
convolve.dask (chunks on threads=1 each) on dask's threaded scheduler with 1
and 2 workers and on a distributed.LocalCluster of 1 and 2 worker processes
(one thread each; the input persisted on the workers first, the result
persisted there: what a cluster user keeps; a new client each round, so
that no result is found already computed). The threaded runs store into a
preallocated numpy array (da.store). The runs alternate, round after
round, and each figure is the best of --rounds.
Results are checked against scipy's (max relative error printed). The
"halo work" column: the share of extra samples each chunk filters (its halo).

  PYTHONPATH=build/python /usr/bin/python3 bench/dask_scaling.py
"""
import argparse
import datetime
import logging
import os
import platform
import sys
import time
import warnings

import numpy as np
import scipy.ndimage as ndi
import dask
import dask.array as da
import distributed

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("CONVOLVE_BUILD_DIR",
                                               os.path.join(here, "..", "build")), "python"))
import convolve as cv  # noqa: E402
import convolve.dask as cvd  # noqa: E402


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def rel_err(got, ref):
    return float(np.abs(got.astype(np.float64) - ref).max() / np.abs(ref).max())


def halo_share(shape, chunks, halos):
    """Extra samples an interior chunk filters for its halo (h on both sides
    of each axis of several chunks), relative to the chunk."""
    work = 1.0
    for n, c, h in zip(shape, chunks, halos):
        if c < n:
            work *= (c + 2 * h) / c
    return work - 1.0


def run_case(name, x, chunks, halos, scipy_fn, cv_fn, cvd_fn, rounds, clusters):
    print("\n%s: %s %s, chunks %s (%d), halo work +%.1f%%" % (
        name, "x".join(map(str, x.shape)), x.dtype, "x".join(map(str, chunks)),
        int(np.prod([-(-n // c) for n, c in zip(x.shape, chunks)])),
        100 * halo_share(x.shape, chunks, halos)), flush=True)
    ref = scipy_fn(x)
    d = da.from_array(x, chunks=chunks)
    out = np.empty_like(x)
    results = {}   # label -> (best seconds, max rel. error)

    def note(label, t, got):
        old = results.get(label)
        results[label] = (min(t, old[0]) if old else t, rel_err(got, ref))

    def scipy_run():
        t0 = time.perf_counter()
        got = scipy_fn(x)
        note("scipy.ndimage, whole array", time.perf_counter() - t0, got)

    def whole(threads):
        t0 = time.perf_counter()
        got = cv_fn(x, threads)
        note("convolve, whole array, threads=%d" % threads, time.perf_counter() - t0, got)

    def threaded(workers):
        with dask.config.set(scheduler="threads", num_workers=workers):
            y = cvd_fn(d)
            t0 = time.perf_counter()
            da.store(y, out, lock=False)
            note("convolve.dask, threaded scheduler, %d worker%s"
                 % (workers, "s" if workers > 1 else ""), time.perf_counter() - t0, out)

    def cluster_run(cluster):
        workers = len(cluster.workers)
        with distributed.Client(cluster) as client:
            xd = client.persist(d)
            distributed.wait(xd)
            t0 = time.perf_counter()
            r = client.persist(cvd_fn(xd))
            distributed.wait(r)
            t = time.perf_counter() - t0
            note("convolve.dask, LocalCluster, %d worker process%s"
                 % (workers, "es" if workers > 1 else ""), t, r.compute())

    runs = [scipy_run, lambda: whole(1), lambda: whole(2), lambda: threaded(1),
            lambda: threaded(2)] + [lambda c=c: cluster_run(c) for c in clusters]
    for _ in range(rounds):   # round after round, so that each sees the same load
        for run in runs:
            run()
    t_scipy = results["scipy.ndimage, whole array"][0]
    rows = [(label, t, err) for label, (t, err) in results.items()]
    print("| run | seconds | scipy / run | max rel. error vs scipy |")
    print("|---|---|---|---|")
    for label, t, err in rows:
        print("| %s | %.3f | %.2f | %.1e |" % (label, t, t_scipy / t, err))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size2d", type=int, default=8192)
    ap.add_argument("--chunk2d", type=int, default=2048)
    ap.add_argument("--size3d", type=int, nargs=3, default=[512, 256, 256])
    ap.add_argument("--slab3d", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-cluster", action="store_true", help="skip the LocalCluster runs")
    a = ap.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Port .* is already in use")
    print("convolve.dask scaling: %s, %d cores, %s; Python %s, numpy %s, scipy %s, dask %s, "
          "distributed %s, convolve %s; load average %s" % (
              datetime.date.today(), os.cpu_count(), cpu_name(), platform.python_version(),
              np.__version__, __import__("scipy").__version__, dask.__version__,
              distributed.__version__, cv.__version__,
              " ".join("%.1f" % v for v in os.getloadavg())))
    rng = np.random.default_rng(1)
    x2 = rng.random((a.size2d, a.size2d), dtype=np.float32)
    x3 = rng.random(tuple(a.size3d), dtype=np.float32)
    w3 = rng.random((3, 3, 3))
    clusters = []
    if not a.no_cluster:
        for workers in (1, 2):
            clusters.append(distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True,
                dashboard_address=None, memory_limit=0))
    try:
        run_case("gaussian_filter sigma 4, reflect", x2, (a.chunk2d, a.chunk2d), (16, 16),
                 lambda x: ndi.gaussian_filter(x, 4.0),
                 lambda x, t: cv.gaussian_filter(x, 4.0, threads=t),
                 lambda d: cvd.gaussian_filter(d, 4.0), a.rounds, clusters)
        run_case("correlate 3x3x3, wrap", x3, (a.slab3d,) + tuple(a.size3d[1:]), (1, 1, 1),
                 lambda x: ndi.correlate(x, w3, mode="wrap"),
                 lambda x, t: cv.correlate(x, w3, mode="wrap", threads=t),
                 lambda d: cvd.correlate(d, w3, mode="wrap"), a.rounds, clusters)
    finally:
        for cl in clusters:
            cl.close()
    print("\nload average at the end: %s" % " ".join("%.1f" % v for v in os.getloadavg()))


if __name__ == "__main__":
    main()
