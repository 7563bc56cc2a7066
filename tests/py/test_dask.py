#!/usr/bin/env python3
"""test_dask.py - convolve.dask against scipy.ndimage on the whole array.

Random data (never zeros), 1-D to 4-D arrays of random shapes, many
chunkings (regular, uneven, random cuts, chunks of one sample, thinner than
the filter's halo, one chunk), every boundary mode (and per-axis modes where
scipy takes them), cval, origins, odd and even extents, convolve against
correlate, filters longer than a chunk and than the whole array, float and
integer types, on dask's synchronous and threaded schedulers and on a
distributed.LocalCluster of two worker processes. Each result must keep the
input's chunks, be lazy (nothing computed before compute()), and equal
scipy's (|got - ref| <= tol + |ref| * eps per element; relative L2 reported
on failure). Errors raise when the graph is built. Environment:
CONVOLVE_BUILD_DIR (the package is in its python/ folder), CONVOLVE_TEST_SEED.
"""
import logging
import os
import sys
import time
import warnings

REQUIRED = os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1"
try:
    import numpy as np
    import scipy.ndimage as ndi
    import dask
    import dask.array as da
    import distributed
except ImportError as e:  # pragma: no cover
    if REQUIRED:
        print("test_dask: FAILED: %s (numpy, scipy, dask and distributed are required here)" % e)
        sys.exit(1)
    print("test_dask: SKIPPED: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.environ.get("CONVOLVE_BUILD_DIR", "build"), "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scipy_nd_ref import scipy_nd  # noqa: E402
try:
    import convolve as cv
    import convolve.dask as cvd
except ImportError as e:  # pragma: no cover
    if REQUIRED:
        print("test_dask: FAILED: the package cannot be imported: %s" % e)
        sys.exit(1)
    print("test_dask: SKIPPED: the package is not built (%s)" % e)
    sys.exit(77)

SEED = int(os.environ.get("CONVOLVE_TEST_SEED", time.time_ns() % 2**31))
RNG = np.random.default_rng(SEED)
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
FAILS = []
COUNT = [0]


def check(name, got, ref, eps=None, tol=None, scale=0.0, exact=None):
    """Per element |got - ref| <= tol + |ref| * eps; tol: eps times the
    larger of max |ref| and `scale` (max |input| times the filter's L1 norm,
    where the filter's taps cancel: derivatives), unless given. exact: the
    same computed in float64 from the same input, for a float32 ref: ref's
    own largest rounding error (max |ref - exact|, which for derivatives of
    Gaussians chained over four axes can pass eps * scale) is allowed 8
    times over too, so that the comparison asks for scipy's float32
    accuracy, not more. got must be
    a dask array; it is computed here (or already computed: given as a
    tuple (dask array, numpy result))."""
    COUNT[0] += 1
    if isinstance(got, tuple):
        lazy, got = got
    else:
        lazy = got
    if not isinstance(lazy, da.Array):
        FAILS.append("%s: not a dask array but %s" % (name, type(lazy).__name__))
        return False
    if got is lazy:
        got = got.compute()
    ref = np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        FAILS.append("%s: shape/dtype %s %s, expected %s %s" % (name, got.shape, got.dtype,
                                                               ref.shape, ref.dtype))
        return False
    if got.size == 0:
        return True
    real = np.empty(0, ref.dtype).real.dtype
    if eps is None:
        eps = {4: 2e-6, 8: 1e-12}[real.itemsize] if real.kind == "f" else 0.0
    wide = np.complex128 if ref.dtype.kind == "c" else np.float64
    g = got.astype(wide)
    r = ref.astype(wide)
    limit = (eps * max(np.abs(r).max(), scale) if tol is None else tol) + np.abs(r) * eps
    if exact is not None:
        limit = limit + 8 * np.abs(r - np.asarray(exact, np.float64)).max()
    bad = ~(np.abs(g - r) <= limit)
    if bad.any():
        l2 = np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-300)
        i = tuple(np.argwhere(bad)[0])
        FAILS.append("%s: %d of %d elements off (first at %s: %r, expected %r); relative L2 "
                     "%.3g" % (name, bad.sum(), bad.size, i, g[i], r[i], l2))
        return False
    return True


def data(shape, dtype=np.float64):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (RNG.random(shape) * 4 - 1).astype(dtype)
    return RNG.integers(1, 200, size=shape).astype(dtype)


def chunking(n):
    """A random chunking of an axis of n samples: one chunk, regular chunks,
    chunks of one sample, or random cuts (uneven, some thin)."""
    style = RNG.integers(0, 4)
    if style == 0 or n <= 1:
        return (n,)
    if style == 1:
        return int(RNG.integers(1, n + 1))
    if style == 2 and n <= 12:
        return (1,) * n
    cuts = sorted(set(int(c) for c in RNG.integers(1, n, size=int(RNG.integers(1, 5)))))
    edges = [0] + cuts + [n]
    return tuple(b - a for a, b in zip(edges[:-1], edges[1:]))


def dask_of(x):
    """x as a dask array of a random chunking (at most 100 chunks)."""
    d = da.from_array(x, chunks=tuple(chunking(n) for n in x.shape))
    while d.npartitions > 100:
        a = int(np.argmax(d.numblocks))
        d = d.rechunk({a: chunking(x.shape[a])})
    return d


def describe(d):
    return "shape %s chunks %s" % (d.shape, tuple(tuple(c) for c in d.chunks))


def l1(f, nd, reach):
    """The L1 norm of filter f's weights: of its response to an impulse."""
    impulse = np.zeros((2 * reach + 1,) * nd)
    impulse[(reach,) * nd] = 1.0
    return float(np.abs(f(impulse)).sum())


def gauss_l1(sigmas, orders):
    """The L1 norm of a Gaussian (derivative) filter: the product of its
    1-D filters' norms."""
    return float(np.prod([l1(lambda a: ndi.gaussian_filter1d(a, s, 0, o, mode="constant"), 1,
                             int(4 * s + 0.5)) for s, o in zip(sigmas, orders)]))


def amax(x, cval=0.0):
    return max(float(np.abs(x).max()), abs(cval))


def random_shape(nd, lo=1, hi=None):
    hi = hi or {1: 60, 2: 24, 3: 11, 4: 6}[nd]
    return tuple(int(s) for s in RNG.integers(lo, hi, size=nd))


# ---- the functions against scipy ------------------------------------------------------------


def test_correlate_convolve():
    """Dense filters: every mode, cval, origins, odd and even extents, filters
    longer than chunks and than the array."""
    for nd in (1, 2, 3):
        for _ in range(4):
            x = data(random_shape(nd), RNG.choice([np.float32, np.float64]))
            for mode in MODES:
                d = dask_of(x)
                ksh = tuple(int(k) for k in RNG.integers(1, {1: 13, 2: 8, 3: 5}[nd], size=nd))
                w = RNG.normal(size=ksh)
                org = [int(RNG.integers(-(k // 2), (k - 1) // 2 + 1)) for k in ksh]
                cval = float(RNG.normal())
                for op in ("correlate", "convolve"):
                    ref = scipy_nd(getattr(ndi, op), x, w, mode, cval, org)
                    got = getattr(cvd, op)(d, w, mode=mode, cval=cval, origin=org)
                    check("%s %s %s w%s o%s" % (op, describe(d), mode, ksh, org), got, ref,
                          scale=amax(x, cval) * np.abs(w).sum())
    # the long filter of one axis: K = 25 over 3 samples in 1-sample chunks
    x = data((3, 17))
    d = da.from_array(x, chunks=(1, 4))
    for mode in MODES:
        w = RNG.normal(size=(25, 4))
        check("correlate long %s" % mode, cvd.correlate(d, w, mode=mode, cval=0.5, origin=(3, 1)),
              scipy_nd(ndi.correlate, x, w, mode, 0.5, (3, 1)), scale=amax(x) * np.abs(w).sum())


def test_one_dimensional():
    """correlate1d, convolve1d, gaussian_filter1d, uniform_filter1d along each axis."""
    for nd in (1, 2, 3):
        for _ in range(3):
            x = data(random_shape(nd), RNG.choice([np.float32, np.float64]))
            for mode in MODES:
                d = dask_of(x)
                axis = int(RNG.integers(-nd, nd))
                cval = float(RNG.normal())
                k = int(RNG.integers(1, 30))
                w = RNG.normal(size=k)
                o = int(RNG.integers(-(k // 2), (k - 1) // 2 + 1))
                tag = "%s %s axis %d" % (describe(d), mode, axis)
                for op in ("correlate1d", "convolve1d"):
                    check("%s k%d o%d %s" % (op, k, o, tag),
                          getattr(cvd, op)(d, w, axis, mode=mode, cval=cval, origin=o),
                          getattr(ndi, op)(x, w, axis, mode=mode, cval=cval, origin=o),
                          scale=amax(x, cval) * np.abs(w).sum())
                sigma = float(RNG.uniform(0.3, 5))
                order = int(RNG.integers(0, 3))
                check("gaussian_filter1d s%.2f order %d %s" % (sigma, order, tag),
                      cvd.gaussian_filter1d(d, sigma, axis, order, mode=mode, cval=cval),
                      ndi.gaussian_filter1d(x, sigma, axis, order, mode=mode, cval=cval),
                      scale=amax(x, cval) * l1(lambda a: ndi.gaussian_filter1d(
                          a, sigma, 0, order, mode="constant"), 1, int(4 * sigma + 0.5)))
                size = int(RNG.integers(1, 20))
                o = int(RNG.integers(-(size // 2), (size - 1) // 2 + 1))
                check("uniform_filter1d size %d o%d %s" % (size, o, tag),
                      cvd.uniform_filter1d(d, size, axis, mode=mode, cval=cval, origin=o),
                      ndi.uniform_filter1d(x, size, axis, mode=mode, cval=cval, origin=o),
                      scale=amax(x, cval))


def test_separable():
    """gaussian_filter, uniform_filter, sobel, prewitt, laplace,
    gaussian_laplace, gaussian_gradient_magnitude: one mode for all axes and
    one per axis (constant with cval on some, the others reflecting: scipy's
    passes one after another)."""
    for nd in (1, 2, 3, 4):
        for _ in range(2 if nd < 4 else 1):
            x = data(random_shape(nd), RNG.choice([np.float32, np.float64]))
            for per_axis in (False, True):
                for mode in (MODES if not per_axis else MODES[:3]):
                    d = dask_of(x)
                    m = list(RNG.choice(MODES, size=nd)) if per_axis else mode
                    cval = float(RNG.normal())
                    big = amax(x, cval)
                    tag = "%s mode %s" % (describe(d), m)
                    sig = [float(s) for s in RNG.uniform(0.2, 4, size=nd)]
                    order = [int(o) for o in RNG.integers(0, 3, size=nd)]
                    check("gaussian_filter s%s order %s %s" % (sig, order, tag),
                          cvd.gaussian_filter(d, sig, order, mode=m, cval=cval),
                          ndi.gaussian_filter(x, sig, order, mode=m, cval=cval),
                          scale=big * gauss_l1(sig, order),
                          exact=ndi.gaussian_filter(x.astype(np.float64), sig, order, mode=m,
                                                    cval=cval))
                    size = [int(s) for s in RNG.integers(1, 12, size=nd)]
                    org = [int(RNG.integers(-(s // 2), (s - 1) // 2 + 1)) for s in size]
                    check("uniform_filter size %s o%s %s" % (size, org, tag),
                          cvd.uniform_filter(d, size, mode=m, cval=cval, origin=org),
                          ndi.uniform_filter(x, size, mode=m, cval=cval, origin=org), scale=big)
                    axis = int(RNG.integers(0, nd))
                    for f in ("sobel", "prewitt"):
                        check("%s axis %d %s" % (f, axis, tag),
                              getattr(cvd, f)(d, axis, mode=m, cval=cval),
                              getattr(ndi, f)(x, axis, mode=m, cval=cval),
                              scale=big * 2 * (4 if f == "sobel" else 3) ** (nd - 1))
                    check("laplace %s" % tag, cvd.laplace(d, mode=m, cval=cval),
                          ndi.laplace(x, mode=m, cval=cval), scale=big * 4 * nd)
                    s = float(RNG.uniform(0.5, 2.5))
                    for f, o in (("gaussian_laplace", 2), ("gaussian_gradient_magnitude", 1)):
                        # each term's error counts: the sum of the terms' L1 norms
                        terms = sum(gauss_l1([s] * nd, [o if b == i else 0 for b in range(nd)])
                                    for i in range(nd))
                        check("%s s%.2f %s" % (f, s, tag),
                              getattr(cvd, f)(d, s, mode=m, cval=cval),
                              getattr(ndi, f)(x, s, mode=m, cval=cval), scale=big * terms)
    # axes=, radius=, truncate= (scipy 1.10 has no axes=: its 1-D passes)
    x = data((20, 9, 13))
    d = da.from_array(x, chunks=(3, 2, 5))
    ref = ndi.gaussian_filter1d(x, 1.5, 0, mode="wrap", radius=5)
    ref = ndi.gaussian_filter1d(ref, 0.7, 2, mode="mirror", radius=2)
    check("gaussian_filter axes (0, 2) radius", cvd.gaussian_filter(
        d, [1.5, 0.7], mode=["wrap", "mirror"], radius=[5, 2], axes=(0, 2)), ref)
    check("uniform_filter axes (1,)", cvd.uniform_filter(d, 4, mode="nearest", axes=(1,)),
          ndi.uniform_filter1d(x, 4, 1, mode="nearest"))
    check("gaussian_filter truncate 2", cvd.gaussian_filter(d, 2.0, truncate=2.0, mode="wrap"),
          ndi.gaussian_filter(x, 2.0, truncate=2.0, mode="wrap"))


def test_filters_longer_than_array():
    """Filters that reach several times around an axis in several chunks."""
    x = data((7, 40))
    for mode in MODES:
        for chunks in ((1, 40), (2, 7), (3, 40)):
            d = da.from_array(x, chunks=chunks)
            check("gaussian_filter1d s9 axis 0 %s %s" % (mode, chunks),
                  cvd.gaussian_filter1d(d, 9.0, 0, mode=mode, cval=0.25),
                  ndi.gaussian_filter1d(x, 9.0, 0, mode=mode, cval=0.25), scale=amax(x, 0.25))
            check("uniform_filter size (31, 81) %s %s" % (mode, chunks),
                  cvd.uniform_filter(d, (31, 81), mode=mode, cval=-2.0, origin=(4, -30)),
                  ndi.uniform_filter(x, (31, 81), mode=mode, cval=-2.0, origin=(4, -30)),
                  scale=amax(x, -2.0))
            w = RNG.normal(size=22)
            check("convolve1d K22 %s %s" % (mode, chunks),
                  cvd.convolve1d(d, w, 0, mode=mode, cval=1.5, origin=-5),
                  ndi.convolve1d(x, w, 0, mode=mode, cval=1.5, origin=-5),
                  scale=amax(x, 1.5) * np.abs(w).sum())


def test_types():
    """Integer data (scipy's truncation, passes in the output's type),
    float outputs, output dtypes, numpy input."""
    x = data((30, 21), np.uint8)
    for mode in MODES:
        d = dask_of(x)
        tag = "%s %s" % (describe(d), mode)
        check("gaussian_filter uint8 %s" % tag, cvd.gaussian_filter(d, 1.7, mode=mode, cval=3),
              ndi.gaussian_filter(x, 1.7, mode=mode, cval=3), tol=1)
        check("uniform_filter uint8 %s" % tag, cvd.uniform_filter(d, 5, mode=mode, cval=7),
              ndi.uniform_filter(x, 5, mode=mode, cval=7))
        check("sobel uint8 -> float32 %s" % tag,
              cvd.sobel(d, 0, output=np.float32, mode=mode),
              ndi.sobel(x, 0, output=np.float32, mode=mode))
        check("correlate uint16 -> float64 %s" % tag,
              cvd.correlate(d.astype(np.uint16), np.arange(12.0).reshape(3, 4), np.float64,
                            mode=mode, cval=2.5),
              ndi.correlate(x.astype(np.uint16), np.arange(12.0).reshape(3, 4), np.float64,
                            mode=mode, cval=2.5))
    xf = data((25, 8))
    got = cvd.gaussian_filter(xf, 2.0)   # numpy in: a dask array out
    check("numpy input", got, ndi.gaussian_filter(xf, 2.0))
    # complex data and weights (scipy: real and imaginary parts)
    xc = data((19, 14)) + 1j * data((19, 14))
    wc = RNG.normal(size=(3, 4)) + 1j * RNG.normal(size=(3, 4))
    for mode in ("wrap", "constant"):
        dc = da.from_array(xc, chunks=(4, (2, 5, 7)))
        check("correlate complex %s" % mode, cvd.correlate(dc, wc, mode=mode, cval=1.0),
              ndi.correlate(xc, wc, mode=mode, cval=1.0), scale=amax(xc) * 2 * np.abs(wc).sum())
    # axes= of correlate (scipy 1.15's; 1.10 has weights of every axis instead)
    x3 = data((12, 7, 15))
    w2 = RNG.normal(size=(4, 5))
    d3 = da.from_array(x3, chunks=(3, 7, (1, 4, 10)))
    for mode in MODES:
        check("correlate axes (0, 2) %s" % mode,
              cvd.correlate(d3, w2, mode=mode, cval=0.5, origin=(1, -2), axes=(0, 2)),
              ndi.correlate(x3, w2.reshape(4, 1, 5), mode=mode, cval=0.5, origin=(1, 0, -2)),
              scale=amax(x3, 0.5) * np.abs(w2).sum())


def test_graph():
    """The result keeps the input's chunks, nothing runs before compute(),
    the other schedulers agree, arguments are checked when the graph is built."""
    calls = [0]

    def source(block):
        calls[0] += block.size > 0   # dask calls it on an empty array for its type
        return block

    x = data((40, 33))
    d = da.from_array(x, chunks=(7, (1, 2, 30))).map_blocks(source, dtype=x.dtype)
    y = cvd.gaussian_filter(d, 3.0, mode="mirror")
    COUNT[0] += 1
    if calls[0] != 0:
        FAILS.append("graph: the input was computed %d times before compute()" % calls[0])
    COUNT[0] += 1
    if y.chunks != d.chunks:
        FAILS.append("graph: chunks %s, expected the input's %s" % (y.chunks, d.chunks))
    with dask.config.set(scheduler="threads", num_workers=2):
        check("threaded scheduler", y, ndi.gaussian_filter(x, 3.0, mode="mirror"))
    big = da.from_array(data((300, 200), np.float32), chunks=(64, 50))
    COUNT[0] += 1
    before = len(dict(big.dask))
    g = cvd.uniform_filter(big, 9, mode="wrap")
    tasks = len(dict(g.dask)) - before
    blocks = big.npartitions
    if tasks > 40 * blocks:   # a bounded number of tasks per chunk, not per sample
        FAILS.append("graph: %d tasks for %d chunks" % (tasks, blocks))

    def raises(name, exc, f, *a, **k):
        COUNT[0] += 1
        try:
            f(*a, **k)
        except exc:
            return
        except Exception as e:
            FAILS.append("%s: raised %s: %s, expected %s" % (name, type(e).__name__, e, exc))
            return
        FAILS.append("%s: did not raise %s" % (name, exc))

    raises("output array", TypeError, cvd.gaussian_filter, d, 1.0, output=np.empty(x.shape))
    raises("bad mode", RuntimeError, cvd.uniform_filter, d, 3, mode="bogus")
    raises("bad origin", ValueError, cvd.correlate, d, np.ones((3, 3)), origin=2)
    raises("bad weights", RuntimeError, cvd.convolve, d, np.ones(3))
    raises("bad sigma count", RuntimeError, cvd.gaussian_filter, d, [1.0, 2.0, 3.0])
    unknown = d[d[:, 0] > 0.5]   # rows not known until computed
    raises("unknown chunks", ValueError, cvd.uniform_filter, unknown, 3)


def test_distributed():
    """A distributed.LocalCluster of two worker processes (one thread each;
    in the sanitized build each worker's python3 preloads ASan too) computes
    the same results, and shuts down cleanly."""
    logging.getLogger("distributed").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="Port .* is already in use")
    processes = True
    from distributed import Client, LocalCluster
    x = data((96, 80, 6), np.float32)
    t0 = time.time()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        COUNT[0] += 1
        if len(client.scheduler_info()["workers"]) != 2:
            FAILS.append("distributed: %d workers" % len(client.scheduler_info()["workers"]))
        d = da.from_array(x, chunks=(48, (3, 37, 40), 6))
        w = RNG.normal(size=(5, 4, 3))
        sig = (2.0, 1.0, 0.8)
        cases = [("gaussian_filter %s" % m, cvd.gaussian_filter(d, sig, mode=m, cval=0.5),
                  ndi.gaussian_filter(x, sig, mode=m, cval=0.5)) for m in MODES]
        cases += [("convolve %s" % m, cvd.convolve(d, w, mode=m, cval=-1.0, origin=(1, -1, 0)),
                   ndi.convolve(x, w, mode=m, cval=-1.0, origin=(1, -1, 0)))
                  for m in ("constant", "wrap")]
        results = client.compute([c[1] for c in cases], sync=True)
        for (name, lazy, ref), got in zip(cases, results):
            check("distributed " + name, (lazy, got), ref, scale=amax(x) * np.abs(w).sum())
    import multiprocessing
    COUNT[0] += 1
    alive = multiprocessing.active_children()
    if alive or str(cluster.status) != "Status.closed":
        FAILS.append("distributed: after close, cluster %s, %d worker processes alive"
                     % (cluster.status, len(alive)))
    print("  LocalCluster(processes=%s): %.1f s, closed" % (processes, time.time() - t0))


def main():
    print("test_dask: seed %d (CONVOLVE_TEST_SEED replays it); dask %s, distributed %s, "
          "convolve %s" % (SEED, dask.__version__, distributed.__version__, cv.__version__))
    tests = [test_correlate_convolve, test_one_dimensional, test_separable,
             test_filters_longer_than_array, test_types, test_graph, test_distributed]
    with dask.config.set(scheduler="synchronous"):
        for t in tests:
            n0, f0, t0 = COUNT[0], len(FAILS), time.time()
            try:
                t()
            except Exception as e:
                import traceback
                traceback.print_exc()
                FAILS.append("%s raised %s: %s" % (t.__name__, type(e).__name__, e))
            print("%-30s %4d checks, %d failed (%.1f s)" % (t.__name__, COUNT[0] - n0,
                                                          len(FAILS) - f0, time.time() - t0))
    for f in FAILS[:40]:
        print("FAIL " + f)
    print("%d passed, %d failed" % (COUNT[0] - len(FAILS), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
