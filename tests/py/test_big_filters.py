#!/usr/bin/env python3
"""test_big_filters.py - separable filters longer than the array, in the
Python package, against scipy.ndimage (issue 24, item 2).

Fresh random data (float32 and float64, uint8 for the exact integer path),
every boundary mode with a non-zero cval, origins, filters from a little
longer than the array to many times it (uniform sizes from 16, Gaussian
sigmas from 16 to 1e4), the 1-D functions, gaussian_laplace and gaussian_gradient_magnitude.
float64 results must match scipy's to 1e-10 of the data's scale; float32
ones must lie as close to scipy's float64 result as scipy's own float32
result does (twice its largest error, plus an ulp of the scale); integer
results must equal scipy's. Sizes that cannot be done (uniform size 1e9, a
Gaussian of sigma 1e9) must raise ValueError at once, before allocating
(checked in a fresh process by its peak RSS); gaussian_filter(31 x 40,
sigma 3000) must run in a fresh process within 100 MiB of what importing
took. Environment: CONVOLVE_BUILD_DIR, CONVOLVE_TEST_SEED.
"""
import subprocess
import sys

from pkg_support import Checks, load, package_dir

np, ndi, cv = load("test_big_filters")
CHECKS = Checks("test_big_filters")
SEED = CHECKS.seed
BUILD_PY = package_dir()
RNG = np.random.default_rng(SEED)
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


def compare(name, x, ours, theirs, inter=0.0):
    """ours (from x in x's type) against scipy: float64 to 1e-10 of the
    scale; float32 within twice scipy's own float32 error (against scipy on
    x in float64) plus an ulp of the scale, and for calls of several passes
    an ulp of `inter`, the scale of the float32 values between the passes
    (a short pass is a float sum, within an ulp or so of each value, and a
    long pass after it can cancel down to a far smaller scale: seed
    172770668 had 2 x 1.5e-9 + 5.0e-9 against 8.07e-9 at scale 0.042);
    integers equal."""
    CHECKS.count()
    got = ours(x)
    if x.dtype.kind in "ui":
        ref = theirs(x)
        if got.dtype != ref.dtype or not np.array_equal(got, ref):
            CHECKS.fail("%s: %s: %d of %d differ from scipy's" % (
                name, x.dtype, int(np.count_nonzero(got != ref)), ref.size))
        return
    ref = theirs(x.astype(np.float64))
    scale = max(float(np.abs(ref).max()), 1e-300)
    err = float(np.abs(got.astype(np.float64) - ref).max())
    if got.dtype != x.dtype:
        CHECKS.fail("%s: dtype %s from %s" % (name, got.dtype, x.dtype))
    if x.dtype == np.float64:
        limit = 1e-10 * scale
        theirs_err = None
    else:
        theirs_err = float(np.abs(theirs(x).astype(np.float64) - ref).max())
        limit = 2 * theirs_err + 1.2e-7 * scale + 2.0 ** -23 * inter
    if not err <= limit:
        CHECKS.fail("%s: %s: error %.3g (scale %.3g), limit %.3g (scipy's float32: %s)" % (
            name, x.dtype, err, scale, limit, theirs_err))


def data(shape, dtype):
    if np.dtype(dtype).kind == "u":
        return RNG.integers(0, 256, size=shape).astype(dtype)
    return (RNG.random(shape) * 4 - 1).astype(dtype)


def test_uniform():
    for shape in [(31, 40), (7,), (5, 1, 6), (1, 9)]:
        n = max(shape)
        for dt in (np.float64, np.float32, np.uint8):
            x = data(shape, dt)
            for mode in MODES:
                cval = float(RNG.uniform(-2, 2)) if dt != np.uint8 else 3.0
                # (from 16 on: shorter uniform filters are float sums, as before)
                for size in (max(2 * n + 3, 16), max(7 * n + 2, 16), 20001,
                             int(RNG.integers(max(2 * n, 16), max(60 * n, 17)))):
                    org = int(RNG.integers(-(size // 2), (size - 1) // 2 + 1))
                    kw = dict(mode=mode, cval=cval, origin=org)
                    compare("uniform_filter %s size %d %s" % (shape, size, kw), x,
                            lambda a: cv.uniform_filter(a, size, **kw),
                            lambda a: ndi.uniform_filter(a, size, **kw))
                    ax = int(RNG.integers(0, len(shape)))
                    compare("uniform_filter1d %s size %d axis %d %s" % (shape, size, ax, kw), x,
                            lambda a: cv.uniform_filter1d(a, size, ax, **kw),
                            lambda a: ndi.uniform_filter1d(a, size, ax, **kw))
            # mixed: a long size on one axis, a short one on the other
            if len(shape) == 2:
                kw = dict(mode=MODES[int(RNG.integers(0, 5))], cval=0.5)
                compare("uniform_filter %s sizes (3, 2001) %s" % (shape, kw), x,
                        lambda a: cv.uniform_filter(a, (3, 2001), **kw),
                        lambda a: ndi.uniform_filter(a, (3, 2001), **kw),
                        inter=float(np.abs(x).max()))


def test_gaussian():
    for shape in [(31, 40), (11,), (4, 5, 6)]:
        for dt in (np.float64, np.float32):
            x = data(shape, dt)
            for mode in MODES:
                cval = float(RNG.uniform(-2, 2))
                # (sigma 16 on: 129 taps or more, summed in double; shorter
                # filters are float sums, as before)
                sigmas = (float(max(shape + (16,))), 300.0, (3000.0, 16.0, 40.0)[:len(shape)])
                for sigma in sigmas:
                    kw = dict(mode=mode, cval=cval)
                    compare("gaussian_filter %s sigma %s %s" % (shape, sigma, kw), x,
                            lambda a: cv.gaussian_filter(a, sigma, **kw),
                            lambda a: ndi.gaussian_filter(a, sigma, **kw))
                order = int(RNG.integers(0, 3))
                compare("gaussian_filter1d %s sigma 50 order %d %s" % (shape, order, mode), x,
                        lambda a: cv.gaussian_filter1d(a, 50.0, -1, order, mode=mode, cval=cval),
                        lambda a: ndi.gaussian_filter1d(a, 50.0, -1, order, mode=mode,
                                                        cval=cval))
            mode = MODES[int(RNG.integers(0, 5))]
            compare("gaussian_laplace %s sigma 100 %s" % (shape, mode), x,
                    lambda a: cv.gaussian_laplace(a, 100.0, mode=mode),
                    lambda a: ndi.gaussian_laplace(a, 100.0, mode=mode))
            compare("gaussian_gradient_magnitude %s sigma 100 %s" % (shape, mode), x,
                    lambda a: cv.gaussian_gradient_magnitude(a, 100.0, mode=mode),
                    lambda a: ndi.gaussian_gradient_magnitude(a, 100.0, mode=mode))
    # sigma 1e4 (80001 taps): scipy succeeds, so must we
    x = data((31, 40), np.float64)
    compare("gaussian_filter (31, 40) sigma 1e4", x, lambda a: cv.gaussian_filter(a, 1e4),
            lambda a: ndi.gaussian_filter(a, 1e4))


CHILD = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, convolve as cv
x = np.random.default_rng(1).random((200, 300)).astype(np.float32)
cv.uniform_filter(x, 3)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
what = sys.argv[2]
try:
    if what == "uniform":
        cv.uniform_filter(x, 10 ** 9)
    elif what == "gaussian":
        cv.gaussian_filter(x, 1e9)
    elif what == "uniform1d":
        cv.uniform_filter1d(x, 10 ** 9, axis=0)
    else:
        y = cv.gaussian_filter(np.random.default_rng(2).random((31, 40)), 3000.0)
        assert np.isfinite(y).all()
        print("ran")
except ValueError as e:
    print("ValueError", str(e).replace(" ", "_"))
print("seconds", time.perf_counter() - t)
print("rss_growth_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_refused_and_memory():
    for what in ("uniform", "gaussian", "uniform1d", "sigma3000"):
        CHECKS.count()
        r = subprocess.run([sys.executable, "-c", CHILD, BUILD_PY, what], capture_output=True,
                           text=True, timeout=300)
        out = dict(line.split(" ", 1) for line in r.stdout.split("\n") if " " in line)
        if r.returncode != 0 or "rss_growth_kib" not in out:
            CHECKS.fail("%s: the process failed: %s" % (what, (r.stdout + r.stderr)[-800:]))
            continue
        growth = int(out["rss_growth_kib"]) / 1024.0
        if what == "sigma3000":
            if "ran" not in r.stdout or growth > 100:
                CHECKS.fail("gaussian_filter (31, 40) sigma 3000: peak RSS grew %.0f MiB "
                             "(at most 100), output: %s" % (growth, r.stdout[-300:]))
            continue
        msg = out.get("ValueError", "")
        if not msg or ("1000000000" not in msg and "1e+09" not in msg):
            CHECKS.fail("%s of 1e9: no ValueError naming the size: %r" % (what, r.stdout))
        if growth > 50 or float(out["seconds"]) > 5:
            CHECKS.fail("%s of 1e9: peak RSS grew %.0f MiB (at most 50) in %s s before the "
                         "error" % (what, growth, out["seconds"]))


def main():
    return CHECKS.run([test_uniform, test_gaussian, test_refused_and_memory])


if __name__ == "__main__":
    sys.exit(main())
