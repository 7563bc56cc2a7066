#!/usr/bin/env python3
"""test_python_package.py - the convolve Python package against scipy.ndimage.

Random data (never zeros), poisoned outputs, every boundary mode, odd and
even filters, origins, 1-D to 5-D arrays (filters of extent 1 on the extra
axes), element types native and converted, output arrays and dtypes,
views (strided, negatively strided, transposed, broadcast) without copies,
overlapping input and output, the memory of a run in place, 0-d and empty
arrays, saturate=True, the plan cache, threads, and errors (each must
raise, never crash). Each
comparison: |got - ref| <= tol + |ref| * eps per element (relative L2
reported on failure). Environment: CONVOLVE_BUILD_DIR (the package is in
its python/ folder), CONVOLVE_TEST_SEED.
"""
import os
import sys
import threading
import time

try:
    import numpy as np
    import scipy.ndimage as ndi
except ImportError as e:  # pragma: no cover
    if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1":
        print("test_python_package: FAILED: %s (numpy and scipy are required here)" % e)
        sys.exit(1)
    print("test_python_package: SKIPPED: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.environ.get("CONVOLVE_BUILD_DIR", "build"), "python"))
try:
    import convolve as cv
    from convolve import _engine
except ImportError as e:  # pragma: no cover
    if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1":
        print("test_python_package: FAILED: the package cannot be imported: %s" % e)
        sys.exit(1)
    print("test_python_package: SKIPPED: the package is not built (%s)" % e)
    sys.exit(77)

SEED = int(os.environ.get("CONVOLVE_TEST_SEED", time.time_ns() % 2**31))
RNG = np.random.default_rng(SEED)
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
FAILS = []
COUNT = [0]


def eps_of(dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        dt = np.dtype(dt.char.lower()) if False else np.empty(0, dt).real.dtype
    if dt == np.float32:
        return 2e-6
    if dt == np.float16:
        return 2e-3
    return 1e-12


def check(name, got, ref, eps=None, tol=None):
    """Per element |got - ref| <= tol + |ref| * eps."""
    COUNT[0] += 1
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        FAILS.append("%s: shape/dtype %s %s, expected %s %s" % (name, got.shape, got.dtype,
                                                               ref.shape, ref.dtype))
        return False
    if got.size == 0:
        return True
    if eps is None:
        eps = eps_of(ref.dtype) if ref.dtype.kind in "fc" else 0.0
    g = got.astype(np.complex128 if ref.dtype.kind == "c" else np.float64)
    r = ref.astype(g.dtype)
    fin = np.abs(r)[np.isfinite(r)]
    scale = (fin.max() if fin.size else 0.0) if tol is None else 0.0
    limit = (tol if tol is not None else eps * scale) + np.abs(r) * eps
    err = np.abs(g - r)
    bad = ~(err <= limit) & ~(np.isnan(g) & np.isnan(r))
    if bad.any():
        l2 = np.linalg.norm((g - r)[np.isfinite(r)]) / max(np.linalg.norm(r[np.isfinite(r)]),
                                                            1e-300)
        i = np.argwhere(bad)[0]
        FAILS.append("%s: %d of %d elements off (first at %s: %r, expected %r); relative L2 "
                     "%.3g" % (name, bad.sum(), bad.size, tuple(i), g[tuple(i)], r[tuple(i)], l2))
        return False
    return True


def data(shape, dtype=np.float64):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (RNG.random(shape) * 4 - 1).astype(dtype)
    if dtype.kind == "c":
        return (RNG.random(shape) - 0.5 + 1j * RNG.random(shape)).astype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) > 0.5
    info = np.iinfo(dtype)
    hi = min(int(info.max), 200)
    lo = max(int(info.min), -100)
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def poisoned(shape, dtype):
    out = np.empty(shape, dtype)
    if out.dtype.kind in "fc":
        out.fill(np.nan)
    else:
        out.fill(123 if out.dtype.kind != "b" else True)
    return out


def raises(name, exc, f, *a, **k):
    COUNT[0] += 1
    try:
        f(*a, **k)
    except exc:
        return
    except Exception as e:  # wrong type
        FAILS.append("%s: raised %s: %s, expected %s" % (name, type(e).__name__, e, exc))
        return
    FAILS.append("%s: did not raise %s" % (name, exc))


# ---- the functions against scipy, every mode --------------------------------------------------


def test_functions_modes():
    for nd in (1, 2, 3):
        shape = tuple(int(s) for s in RNG.integers(6, 20, size=nd))
        for dt in (np.float32, np.float64):
            x = data(shape, dt)
            for mode in MODES:
                cval = float(RNG.normal())
                for op in ("correlate", "convolve"):
                    ksh = tuple(int(k) for k in RNG.integers(1, 6, size=nd))
                    w = RNG.normal(size=ksh)
                    org = [int(RNG.integers(-(k // 2), (k - 1) // 2 + 1)) for k in ksh]
                    ref = getattr(ndi, op)(x, w, mode=mode, cval=cval, origin=org)
                    out = poisoned(shape, dt)
                    got = getattr(cv, op)(x, w, output=out, mode=mode, cval=cval, origin=org)
                    check("%s %s %s %s w%s o%s" % (op, shape, np.dtype(dt), mode, ksh, org), got,
                          ref)
                for op in ("correlate1d", "convolve1d"):
                    axis = int(RNG.integers(-nd, nd))
                    K = int(RNG.integers(1, 8))
                    w = RNG.normal(size=K)
                    o = int(RNG.integers(-(K // 2), (K - 1) // 2 + 1))
                    ref = getattr(ndi, op)(x, w, axis=axis, mode=mode, cval=cval, origin=o)
                    got = getattr(cv, op)(x, w, axis=axis, mode=mode, cval=cval, origin=o)
                    check("%s %s %s axis %d K %d o %d" % (op, shape, mode, axis, K, o), got, ref)
                sig = [float(s) for s in RNG.uniform(0.3, 2.5, size=nd)]
                order = [int(o) for o in RNG.integers(0, 4, size=nd)]
                check("gaussian_filter %s %s s%s o%s" % (shape, mode, sig, order),
                      cv.gaussian_filter(x, sig, order=order, mode=mode, cval=cval),
                      ndi.gaussian_filter(x, sig, order=order, mode=mode, cval=cval))
                check("gaussian_filter1d %s %s" % (shape, mode),
                      cv.gaussian_filter1d(x, 1.7, axis=0, order=1, mode=mode, cval=cval,
                                           truncate=3.0),
                      ndi.gaussian_filter1d(x, 1.7, axis=0, order=1, mode=mode, cval=cval,
                                            truncate=3.0))
                size = [int(s) for s in RNG.integers(1, 6, size=nd)]
                check("uniform_filter %s %s %s" % (shape, mode, size),
                      cv.uniform_filter(x, size, mode=mode, cval=cval),
                      ndi.uniform_filter(x, size, mode=mode, cval=cval))
                check("uniform_filter1d %s %s" % (shape, mode),
                      cv.uniform_filter1d(x, 4, axis=-1, mode=mode, cval=cval, origin=-1),
                      ndi.uniform_filter1d(x, 4, axis=-1, mode=mode, cval=cval, origin=-1))
                for f in ("sobel", "prewitt"):
                    for axis in range(nd):
                        check("%s %s %s axis %d" % (f, shape, mode, axis),
                              getattr(cv, f)(x, axis, mode=mode, cval=cval),
                              getattr(ndi, f)(x, axis, mode=mode, cval=cval))
                check("laplace %s %s" % (shape, mode), cv.laplace(x, mode=mode, cval=cval),
                      ndi.laplace(x, mode=mode, cval=cval))
                check("gaussian_laplace %s %s" % (shape, mode),
                      cv.gaussian_laplace(x, 1.3, mode=mode, cval=cval),
                      ndi.gaussian_laplace(x, 1.3, mode=mode, cval=cval))
                check("gaussian_gradient_magnitude %s %s" % (shape, mode),
                      cv.gaussian_gradient_magnitude(x, [1.1, 0.8, 1.4][:nd], mode=mode,
                                                     cval=cval),
                      ndi.gaussian_gradient_magnitude(x, [1.1, 0.8, 1.4][:nd], mode=mode,
                                                      cval=cval))


def test_mode_per_axis():
    x = data((9, 11, 7))
    modes = ["wrap", "constant", "mirror"]
    for f, args in (("gaussian_filter", (1.2,)), ("uniform_filter", (4,)), ("sobel", (1,)),
                    ("prewitt", (0,)), ("laplace", ()), ("gaussian_laplace", (0.9,)),
                    ("gaussian_gradient_magnitude", (1.0,))):
        check("%s modes %s" % (f, modes), getattr(cv, f)(x, *args, mode=modes, cval=0.7),
              getattr(ndi, f)(x, *args, mode=modes, cval=0.7))


# ---- element types ------------------------------------------------------------------------------


def test_dtypes():
    types = [np.float32, np.float64, np.uint8, np.uint16, np.int8, np.int16, np.int32, np.int64,
             np.uint32, np.uint64]
    w = np.array([[1, 2, 0], [0, 3, 1], [2, 0, 1]], float)
    for ti in types:
        x = data((7, 9), ti)
        for to in types:
            if np.dtype(to).kind == "u":  # negative to unsigned: undefined in scipy's C
                x = np.abs(x)
            ref = ndi.correlate(x, w, output=to, mode="nearest")
            got = cv.correlate(x, w, output=to, mode="nearest")
            check("correlate %s -> %s" % (np.dtype(ti), np.dtype(to)), got, ref)
            out = poisoned(x.shape, to)
            cv.uniform_filter(x, 3, output=out)
            check("uniform_filter %s -> %s" % (np.dtype(ti), np.dtype(to)), out,
                  ndi.uniform_filter(x, 3, output=to))
        check("gaussian_filter %s" % np.dtype(ti), cv.gaussian_filter(x, 1.5),
              ndi.gaussian_filter(x, 1.5), eps=1e-5)
        check("sobel %s" % np.dtype(ti), cv.sobel(x, 0), ndi.sobel(x, 0))
    # float16 (scipy refuses it): computed in float32, compared with scipy on float32
    x = data((8, 8), np.float16)
    check("float16 gaussian", cv.gaussian_filter(x, 1.0),
          ndi.gaussian_filter(x.astype(np.float32), 1.0).astype(np.float16), eps=2e-3, tol=2e-3)
    # bool input
    x = data((6, 7), np.bool_)
    check("bool correlate", cv.correlate(x, np.ones((2, 2)), output=np.float64),
          ndi.correlate(x, np.ones((2, 2)), output=np.float64))
    # complex input, weights, both
    x = data((6, 8), np.complex128)
    wc = RNG.normal(size=(3, 2)) + 1j * RNG.normal(size=(3, 2))
    for a, b in ((x, w), (x.real.copy(), wc), (x, wc)):
        check("complex correlate %s %s" % (a.dtype, b.dtype),
              cv.correlate(a, b, mode="constant", cval=0.5),
              ndi.correlate(a, b, mode="constant", cval=0.5))
        check("complex convolve %s %s" % (a.dtype, b.dtype), cv.convolve(a, b),
              ndi.convolve(a, b))
    check("complex gaussian", cv.gaussian_filter(x.astype(np.complex64), 1.0),
          ndi.gaussian_filter(x.astype(np.complex64), 1.0))
    check("complex uniform1d", cv.uniform_filter1d(x, 3, axis=0), ndi.uniform_filter1d(x, 3, axis=0))
    # big-endian input
    x = data((9, 10)).astype(">f8")
    check("big-endian", cv.correlate(x, w), ndi.correlate(x, w))


def test_bool():
    """bool in and out as scipy: its C cast to npy_bool (an unsigned char)
    truncates and keeps the low byte (a Gaussian of a mask is 0 below 1; a
    3x3 sum of ones stores a byte of 9), and a later pass reads those bytes."""
    modes = ["reflect", "constant", "nearest", "mirror", "wrap"]
    for shape in [(23, 31), (9, 8, 7)]:
        m = data(shape, bool)
        mode = modes[int(RNG.integers(0, len(modes)))]
        w = RNG.random((3,) * len(shape)) * 3 - 1
        calls = [("gaussian_filter", (1.5,)), ("uniform_filter", (3,)), ("sobel", (0,)),
                 ("prewitt", (-1,)), ("laplace", ()), ("gaussian_laplace", (1.0,)),
                 ("gaussian_gradient_magnitude", (1.0,)), ("correlate", (w,)),
                 ("convolve", (np.ones((3,) * len(shape)),)),
                 ("correlate1d", (np.array([1.0, -2.0, 3.5]),))]
        for name, args in calls:
            ref = getattr(ndi, name)(m, *args, mode=mode)
            got = getattr(cv, name)(m, *args, mode=mode)
            COUNT[0] += 1
            if got.dtype != ref.dtype or not np.array_equal(got.view(np.uint8),
                                                            ref.view(np.uint8)):
                FAILS.append("bool %s %s %s: %d of %d bytes differ (sums %d, scipy %d)"
                             % (name, shape, mode,
                                int((got.view(np.uint8) != ref.view(np.uint8)).sum()), m.size,
                                int(got.sum()), int(ref.sum())))


def test_saturate():
    x = data((12, 13), np.uint8)
    w = np.full((3, 3), 1.0 / 7.0)
    ref = ndi.correlate(x.astype(np.float64), w, mode="reflect")
    for to in (np.uint8, np.uint16, np.int8):
        info = np.iinfo(to)
        exp = np.clip(np.rint(ref * 3 - 150), info.min, info.max).astype(to)
        got = cv.correlate(x, w * 3, output=to, saturate=True, cval=0) + 0
        got = cv.correlate(x, w * 3, output=to, saturate=True)
        exp = np.clip(np.rint(ref * 3), info.min, info.max).astype(to)
        check("saturate -> %s" % np.dtype(to), got, exp, tol=1)  # float sums: ties may differ
    y = np.array([200, 250], np.uint8)
    check("saturate clamps", cv.correlate1d(y, [1, 1], mode="nearest", saturate=True),
          np.array([255, 255], np.uint8))
    check("scipy wraps", cv.correlate1d(y, [1, 1], mode="nearest"),
          ndi.correlate1d(y, [1, 1], mode="nearest"))


# ---- layouts: dimensions, views, overlap ------------------------------------------------------------


def test_layouts():
    before = dict(_engine.stats)
    w3 = RNG.normal(size=(3, 4))
    base = data((20, 30, 4), np.float32)
    views = {
        "strided": base[::2, 1::3, 0],
        "negative": base[::-1, ::-2, 1],
        "transposed": base[:, :, 2].T,
        "channel-last": base[:, :, :3].transpose(2, 0, 1),
        "broadcast": np.broadcast_to(base[0, :, 0], (20, 30)),
    }
    for name, v in views.items():
        if v.ndim == 3:
            ref = ndi.correlate(v, w3[None], mode="mirror")
            got = cv.correlate(v, w3[None], mode="mirror")
        else:
            ref = ndi.correlate(v, w3, mode="mirror")
            got = cv.correlate(v, w3, mode="mirror")
        check("view %s" % name, got, ref)
        check("view %s gaussian" % name, cv.gaussian_filter(v, 1.3), ndi.gaussian_filter(v, 1.3))
    COUNT[0] += 1
    if _engine.stats["input_copies"] != before["input_copies"]:
        FAILS.append("views were copied: %d input copies" %
                     (_engine.stats["input_copies"] - before["input_copies"]))
    # output views
    out = poisoned((40, 60), np.float64)
    v = base[:, :, 0]
    cv.correlate(v, w3, output=out[::2, ::-2])
    check("output view", out[::2, ::-2], ndi.correlate(v, w3, output=np.float64))
    COUNT[0] += 1
    if not np.isnan(out[1::2]).all():
        FAILS.append("output view: elements outside the view were written")
    # 4-D and 5-D arrays, filters of extent 1 on the extra axes
    for shape, wsh in (((3, 10, 12, 3), (1, 3, 5, 1)), ((2, 3, 9, 8, 2), (1, 1, 4, 3, 1)),
                       ((5, 2, 7, 6), (1, 2, 3, 1)), ((4, 6, 5, 3), (2, 3, 1, 1))):
        x = data(shape, np.float32)
        w = RNG.normal(size=wsh)
        check("%d-D %s w%s" % (len(shape), shape, wsh), cv.correlate(x, w, mode="wrap"),
              ndi.correlate(x, w, mode="wrap"))
        check("%d-D gaussian axes" % len(shape),
              cv.gaussian_filter(x, [0, 1.2, 0.8] + [0] * (len(shape) - 3)),
              ndi.gaussian_filter(x, [0, 1.2, 0.8] + [0] * (len(shape) - 3)))
    # a dense filter over 4 and 5 axes (split along its first axis)
    for shape, wsh in (((5, 6, 4, 7), (3, 2, 3, 2)), ((4, 3, 5, 4, 3), (2, 3, 2, 3, 2))):
        x = data(shape)
        for mode in MODES:
            w = RNG.normal(size=wsh)
            check("%d-axis filter %s" % (len(wsh), mode),
                  cv.convolve(x, w, mode=mode, cval=0.3, origin=-1 if mode == "wrap" else 0),
                  ndi.convolve(x, w, mode=mode, cval=0.3, origin=-1 if mode == "wrap" else 0))
    x = data((6, 5, 4, 5), np.float32)
    check("4-D sobel", cv.sobel(x, 2), ndi.sobel(x, 2))
    check("4-D laplace", cv.laplace(x), ndi.laplace(x))
    check("4-D gaussian", cv.gaussian_filter(x, 1.0, mode="nearest"),
          ndi.gaussian_filter(x, 1.0, mode="nearest"))
    # overlap: output is the input (filtered in place, no buffer), or a view
    # of it that is not the same elements (computed into a buffer)
    x = data((16, 16))
    ref = ndi.gaussian_filter(x, 1.0)
    buffers = _engine.stats["output_buffers"]
    y = x.copy()
    cv.gaussian_filter(y, 1.0, output=y)
    check("in place gaussian", y, ref)
    y = x.copy()
    cv.correlate(y, w3, output=y)
    check("in place correlate", y, ndi.correlate(x, w3))
    y = x.copy()
    cv.correlate1d(y[:, ::-1], [1, 2, 3], output=y[:, ::-1])
    check("in place reversed", y, ndi.correlate1d(x[:, ::-1], [1, 2, 3])[:, ::-1])
    COUNT[0] += 1
    if _engine.stats["output_buffers"] != buffers:
        FAILS.append("in place: %d output buffers made for outputs that are their inputs" %
                     (_engine.stats["output_buffers"] - buffers))
    y = x.copy()
    cv.correlate1d(y[:, 1:], [1, 2, 3], output=y[:, :-1])
    check("overlapping, shifted", y[:, :-1], ndi.correlate1d(x[:, 1:], [1, 2, 3]))
    COUNT[0] += 1
    if _engine.stats["output_buffers"] != buffers + 1:
        FAILS.append("overlapping output: %d output buffers, not 1" %
                     (_engine.stats["output_buffers"] - buffers))
    # 0-d and empty
    check("0-d", cv.correlate(np.array(3.0), np.array(2.0)), ndi.correlate(np.array(3.0),
                                                                           np.array(2.0)))
    check("empty", cv.correlate(np.zeros((0, 4)), np.ones((1, 2))),
          ndi.correlate(np.zeros((0, 4)), np.ones((1, 2))))
    check("lists", cv.correlate1d([2, 8, 0, 4, 1, 9, 9, 0], [1, 3]),
          ndi.correlate1d([2, 8, 0, 4, 1, 9, 9, 0], [1, 3]))
    # filters longer than the axis follow correlate1d's periodic extension
    x = data((3,))
    for mode in MODES:
        check("long 1-D %s" % mode, cv.correlate(x, np.arange(1.0, 10.0), mode=mode),
              ndi.correlate1d(x, np.arange(1.0, 10.0), mode=mode))


# ---- plan cache, threads ----------------------------------------------------------------------


def test_cache_and_threads():
    x = data((64, 64), np.float32)
    w = RNG.normal(size=(3, 3))
    cv.correlate(x, w)
    hits = _engine.stats["hits"]
    misses = _engine.stats["misses"]
    for _ in range(5):
        cv.correlate(x, w)
    COUNT[0] += 1
    if _engine.stats["misses"] != misses or _engine.stats["hits"] != hits + 5:
        FAILS.append("plan cache: repeated calls re-planned (%d misses)" %
                     (_engine.stats["misses"] - misses))
    big = data((300, 400), np.float32)
    ref = [ndi.gaussian_filter(big, s) for s in (1.0, 2.0, 1.0, 2.0)]
    outs = [None] * 8
    errs = []

    def work(i):
        try:
            for _ in range(3):
                outs[i] = cv.gaussian_filter(big, (1.0, 2.0)[i % 2])
        except Exception as e:  # pragma: no cover
            errs.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    COUNT[0] += 1
    if errs:
        FAILS.append("threads: %r" % errs[0])
    for i in range(8):
        check("thread %d" % i, outs[i], ref[i % 2])
    check("threads=1", cv.gaussian_filter(big, 2.0, threads=1), ref[1])
    w1 = np.outer(RNG.normal(size=3), RNG.normal(size=5))  # rank one: every strategy serves
    x8 = RNG.integers(0, 256, size=(64, 64), dtype=np.uint8)
    for name, _, _ in cv.strategies("cpu"):
        if name == "image":  # 8- and 16-bit images only
            check("strategy image", cv.correlate(x8, w1, output=np.float32, strategy=name),
                  ndi.correlate(x8.astype(np.float32), w1))
            raises("image on float data", cv.ConvolveError, cv.correlate, x, w1, strategy=name)
            continue
        check("strategy %s" % name, cv.correlate(x, w1, strategy=name), ndi.correlate(x, w1))
    raises("strategy that cannot serve", cv.ConvolveError, cv.correlate, x, w,
           strategy="separable")


# ---- errors ----------------------------------------------------------------------------------


def test_errors():
    x = data((5, 6))
    raises("bad mode", RuntimeError, cv.correlate, x, np.ones((2, 2)), mode="bogus")
    raises("bad mode is ValueError too", ValueError, cv.gaussian_filter, x, 1, mode="bogus")
    raises("mode sequence", RuntimeError, cv.correlate, x, np.ones((2, 2)),
           mode=["wrap", "wrap"])
    raises("bad origin", ValueError, cv.correlate, x, np.ones((3, 3)), origin=2)
    raises("bad origin 1d", ValueError, cv.correlate1d, x, [1, 1, 1], origin=-2)
    raises("weights rank", RuntimeError, cv.correlate, x, np.ones(3))
    raises("output shape", RuntimeError, cv.correlate, x, np.ones((2, 2)), output=np.empty((5, 5)))
    raises("read-only output", ValueError, cv.correlate, x, np.ones((2, 2)),
           output=np.broadcast_to(np.zeros(6), (5, 6)))
    raises("axis", (ValueError, IndexError), cv.correlate1d, x, [1, 2], axis=3)
    raises("sequence length", RuntimeError, cv.gaussian_filter, x, [1, 2, 3])
    raises("negative order", ValueError, cv.gaussian_filter, x, 1, order=-1)
    raises("radius", ValueError, cv.gaussian_filter1d, x, 1, radius=1.5)
    raises("uniform size", RuntimeError, cv.uniform_filter1d, x, 0)
    raises("uniform origin", ValueError, cv.uniform_filter, x, 3, origin=2)
    raises("nan weight", ValueError, cv.correlate, x, np.array([[1, np.nan]]))
    raises("complex cval", ValueError, cv.correlate, x, np.ones((2, 2)) * 1j,
           mode="constant", cval=1 + 1j)
    raises("object array", (TypeError, ValueError), cv.correlate, np.array([[None]]),
           np.ones((1, 1)))
    raises("unknown backend", ValueError, cv.correlate, x, np.ones((2, 2)), backend="tpu")
    raises("unknown strategy", ValueError, cv.correlate, x, np.ones((2, 2)), strategy="nope")
    raises("unknown keyword", TypeError, cv.correlate, x, np.ones((2, 2)), colour=1)
    if not cv.backend_available("cuda"):
        raises("cuda unavailable", cv.ConvolveError, cv.correlate, x, np.ones((2, 2)),
               backend="cuda")
    check("a NaN cval", cv.correlate(x, np.ones((2, 2)), mode="constant", cval=np.nan),
          ndi.correlate(x, np.ones((2, 2)), mode="constant", cval=np.nan))


def test_pinned_pool_without_gpu():
    """Without a usable GPU (CUDA not built, no device, or not started) the
    pinned pool gives nothing and takes nothing: host_alloc returns None,
    host_reserve is quiet, and calls with backend 'auto' on arrays past the
    pool's 8 MiB make ordinary arrays with the CPU's numbers."""
    from convolve import _core
    if cv.backend_available("cuda"):
        return  # the GPU's own test covers the pool (tests/py/test_gpu_python.py)
    COUNT[0] += 2
    if _core.host_alloc(16 << 20) is not None:
        FAILS.append("pinned pool: host_alloc gave memory without a GPU")
    _core.host_reserve(16 << 20)
    if _core.host_alloc(16 << 20) is not None:
        FAILS.append("pinned pool: host_reserve pinned memory without a GPU")
    x = data((1100, 1000), np.float32)  # 4.4 MB in, an 8.8 MB float64 output
    got = cv.gaussian_filter(x, 1.5, output=np.float64, backend="auto")
    check("pinned pool: auto without a GPU", got, ndi.gaussian_filter(x, 1.5, output=np.float64))
    COUNT[0] += 1
    base = got
    while isinstance(base, np.ndarray):
        base = base.base
    if base is not None:
        FAILS.append("pinned pool: the output is not an ordinary array (%r)" % type(base))


def test_docstrings_and_axes():
    """The docstrings' examples run and print what they say; axes= of
    gaussian_filter and uniform_filter (scipy >= 1.11) match sigma 0 / size 1
    on the other axes."""
    import doctest
    import convolve._ndimage
    for mod in (convolve, convolve._ndimage):
        r = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        COUNT[0] += r.attempted
        if r.failed:
            FAILS.append("%s: %d docstring examples failed" % (mod.__name__, r.failed))
    x = data((7, 8, 9))
    check("gaussian axes", cv.gaussian_filter(x, [1.0, 2.0], axes=(2, 0), order=[0, 1]),
          ndi.gaussian_filter(x, [2.0, 0, 1.0], order=[1, 0, 0]))
    w = RNG.normal(size=(3, 2))
    check("correlate axes", cv.correlate(x, w, axes=(2, 0), origin=(1, 0), mode="mirror"),
          ndi.correlate(x, w.T[:, None, :], origin=(0, 0, 1), mode="mirror"))
    check("convolve axes", cv.convolve(x, w, axes=(1, 2)), ndi.convolve(x, w[None]))
    check("uniform axes", cv.uniform_filter(x, 4, axes=(-1,), mode="wrap"),
          ndi.uniform_filter(x, [1, 1, 4], mode="wrap"))


def test_in_place_memory():
    """output=input with a filter 130 times longer than the axis, in a
    process of its own: the peak resident set grows by about one copy of
    the array (at most it and 2 MiB), not by the filter's extent in rows
    ((3, 1e6) float64, 401 taps: 23.9 GB before)."""
    import subprocess
    pkg = os.path.join(os.environ.get("CONVOLVE_BUILD_DIR", "build"), "python")
    code = """
import resource, sys
import numpy as np
sys.path.insert(0, %r)
import convolve as cv
x = np.arange(3 * 16384, dtype=np.float64).reshape(3, 16384) %% 97
w = np.linspace(-1.0, 1.0, 401)
ref = cv.correlate1d(x, w, axis=0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cv.correlate1d(x, w, axis=0, output=x)
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(grew, x.nbytes, int(np.array_equal(x, ref)))
""" % os.path.abspath(pkg)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    COUNT[0] += 1
    try:
        grew, nbytes, same = (int(v) for v in r.stdout.split())
    except ValueError:
        FAILS.append("in place memory: %s%s" % (r.stdout[-1000:], r.stderr[-1000:]))
        return
    if grew > nbytes + (2 << 20) or not same:
        FAILS.append("in place memory: (3, 16384) float64, 401 taps along axis 0: the peak "
                     "resident set grew by %d bytes for an array of %d; equal to out of "
                     "place: %d" % (grew, nbytes, same))


def test_install():
    """make install-python's step, into a staging directory (DESTDIR): the
    installed package imports from there, alone, and computes."""
    import shutil
    import subprocess
    import tempfile
    build = os.path.abspath(os.environ.get("CONVOLVE_BUILD_DIR", "build"))
    if not shutil.which("cmake") or not os.path.exists(os.path.join(build, "cmake_install.cmake")):
        print("test_install: skipped (no cmake or no build tree)")
        return
    with tempfile.TemporaryDirectory() as stage:
        env = dict(os.environ, DESTDIR=stage)
        r = subprocess.run(["cmake", "--install", build, "--component", "python"], env=env,
                           capture_output=True, text=True)
        COUNT[0] += 1
        if r.returncode != 0:
            FAILS.append("install: %s%s" % (r.stdout[-1000:], r.stderr[-1000:]))
            return
        sites = [d for d, _, files in os.walk(stage) if "__init__.py" in files and
                 os.path.basename(d) == "convolve"]
        COUNT[0] += 1
        if len(sites) != 1:
            FAILS.append("install: the package is not where expected: %s" % sites)
            return
        env = dict(os.environ, PYTHONPATH=os.path.dirname(sites[0]))
        code = ("import convolve, numpy as np; assert convolve.__file__.startswith(%r); "
                "print(convolve.correlate1d([2, 8, 0, 4, 1, 9, 9, 0], [1, 3]).tolist())"
                % stage)
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=stage,
                           capture_output=True, text=True)
        COUNT[0] += 1
        if r.returncode != 0 or r.stdout.strip() != "[8, 26, 8, 12, 7, 28, 36, 9]":
            FAILS.append("installed package: %s%s" % (r.stdout[-1000:], r.stderr[-1000:]))


def main():
    print("test_python_package: seed %d (CONVOLVE_TEST_SEED replays it)" % SEED)
    tests = [test_functions_modes, test_mode_per_axis, test_dtypes, test_bool, test_saturate,
             test_layouts, test_cache_and_threads, test_errors, test_pinned_pool_without_gpu,
             test_docstrings_and_axes, test_in_place_memory, test_install]
    for t in tests:
        n0, f0 = COUNT[0], len(FAILS)
        try:
            t()
        except Exception as e:
            import traceback
            traceback.print_exc()
            FAILS.append("%s raised %s: %s" % (t.__name__, type(e).__name__, e))
        print("%-24s %4d checks, %d failed" % (t.__name__, COUNT[0] - n0, len(FAILS) - f0))
    for f in FAILS[:40]:
        print("FAIL " + f)
    print("%d passed, %d failed" % (COUNT[0] - len(FAILS), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
