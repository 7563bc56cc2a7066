#!/usr/bin/env python3
"""test_integer_cast.py - uint8 and uint16 outputs with scipy's semantics
(the default: float64 sums, truncation toward zero, wrap-around) computed
by the library's cast (CONVOLVE_CAST_TRUNCATE): equal to scipy.ndimage bit
for bit, and made without float64 buffers or input copies.

Random data (integers over the type's range, and floats whose sums land on
integers and beside them), every boundary mode, odd sizes, 1 to 4
interleaved channels; gaussian_filter (per-axis sigmas, a channel axis of
sigma 0), uniform_filter and uniform_filter1d (sums of ones divided by the
size), sobel, prewitt, laplace (negative sums: wrap-around), correlate1d
and convolve1d with integer and fractional weights, correlate with integer
weights (sums past the type's range). Environment: CONVOLVE_BUILD_DIR,
CONVOLVE_TEST_SEED.
"""
import sys

from pkg_support import Checks, load

np, ndi, cv = load("test_integer_cast")
from convolve import _engine  # noqa: E402 (after load: the built package)
CHECKS = Checks("test_integer_cast")
SEED = CHECKS.seed
RNG = np.random.default_rng(SEED)
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


def same(name, got, ref):
    CHECKS.count()
    if got.dtype != ref.dtype or got.shape != ref.shape:
        CHECKS.fail("%s: %s %s, scipy %s %s" % (name, got.dtype, got.shape, ref.dtype, ref.shape))
    elif not np.array_equal(got, ref):
        bad = np.argwhere(got != ref)
        i = tuple(bad[0])
        CHECKS.fail("%s: %d of %d differ, first at %s: %d, scipy %d" % (
            name, len(bad), got.size, i, got[i], ref[i]))


def data(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        return RNG.integers(0, np.iinfo(dtype).max + 1, size=shape, dtype=dtype)
    # floats: integers (sums land on integers) and halves, some negative
    return (RNG.integers(-600, 70000, size=shape) / RNG.choice([1.0, 2.0, 4.0])).astype(dtype)


def no_buffers(name, f):
    """Runs f, failing when it made an output buffer or an input copy."""
    b, c = _engine.stats["output_buffers"], _engine.stats["input_copies"]
    r = f()
    CHECKS.count()
    if _engine.stats["output_buffers"] != b or _engine.stats["input_copies"] != c:
        CHECKS.fail("%s: %d output buffers, %d input copies" % (
            name, _engine.stats["output_buffers"] - b, _engine.stats["input_copies"] - c))
    return r


def test_filters():
    for dt in (np.uint8, np.uint16):
        for shape in [(37,), (23, 41), (19, 27, 3), (9, 11, 13), (31, 17, 4)]:
            x = data(shape, dt)
            for mode in MODES:
                cval = float(RNG.integers(0, 300))
                kw = dict(mode=mode, cval=cval)
                tag = "%s %s %s" % (np.dtype(dt), shape, mode)
                chan = len(shape) == 3 and shape[2] <= 4
                sig = (1.5, 2.0, 0) if chan else 1.3
                same("gaussian %s" % tag,
                     no_buffers(tag, lambda: cv.gaussian_filter(x, sig, **kw)),
                     ndi.gaussian_filter(x, sig, **kw))
                same("gaussian order 1 %s" % tag, cv.gaussian_filter(x, 1.0, order=1, **kw),
                     ndi.gaussian_filter(x, 1.0, order=1, **kw))
                size = (3, 4, 1) if chan else 5
                same("uniform %s" % tag,
                     no_buffers(tag, lambda: cv.uniform_filter(x, size, **kw)),
                     ndi.uniform_filter(x, size, **kw))
                same("uniform1d %s" % tag, cv.uniform_filter1d(x, 6, axis=0, **kw),
                     ndi.uniform_filter1d(x, 6, axis=0, **kw))
                for ax in range(len(shape)):
                    same("sobel %d %s" % (ax, tag),
                         no_buffers(tag, lambda: cv.sobel(x, ax, **kw)),
                         ndi.sobel(x, ax, **kw))
                    same("prewitt %d %s" % (ax, tag), cv.prewitt(x, ax, **kw),
                         ndi.prewitt(x, ax, **kw))
                same("laplace %s" % tag, no_buffers(tag, lambda: cv.laplace(x, **kw)),
                     ndi.laplace(x, **kw))
                w = RNG.integers(-3, 4, size=4).astype(float)
                same("correlate1d int %s" % tag,
                     no_buffers(tag, lambda: cv.correlate1d(x, w, axis=-1, **kw)),
                     ndi.correlate1d(x, w, axis=-1, **kw))
                wf = RNG.uniform(-1.5, 1.5, size=5)
                same("correlate1d frac %s" % tag, cv.correlate1d(x, wf, axis=0, **kw),
                     ndi.correlate1d(x, wf, axis=0, **kw))
                same("convolve1d frac %s" % tag, cv.convolve1d(x, wf, axis=-1, **kw),
                     ndi.convolve1d(x, wf, axis=-1, **kw))
                wd = RNG.integers(-2, 5, size=(3,) * min(len(shape), 2) + (1,) *
                                  max(len(shape) - 2, 0)).astype(float)
                same("correlate int %s" % tag,
                     no_buffers(tag, lambda: cv.correlate(x, wd, **kw)),
                     ndi.correlate(x, wd, **kw))


def test_types():
    """Other inputs into uint8/uint16 outputs, and float data whose sums are
    exact integers or halves (truncation at the boundary)."""
    for src in (np.float32, np.float64, np.uint8, np.int16):
        x = data((29, 33), src)
        for out in (np.uint8, np.uint16):
            tag = "%s -> %s" % (np.dtype(src), np.dtype(out))
            f = (lambda: cv.gaussian_filter(x, 2.0, output=out)) if src != np.int16 else None
            if f is not None:
                same("gaussian " + tag, no_buffers(tag, f), ndi.gaussian_filter(x, 2.0, output=out))
            else:
                same("gaussian " + tag, cv.gaussian_filter(x, 2.0, output=out),
                     ndi.gaussian_filter(x, 2.0, output=out))
            same("uniform " + tag, cv.uniform_filter(x, 4, output=out),
                 ndi.uniform_filter(x, 4, output=out))
            same("correlate1d halves " + tag, cv.correlate1d(x, [0.5, 0.25, 0.25], output=out),
                 ndi.correlate1d(x, [0.5, 0.25, 0.25], output=out))
    # a sum 1e-12 below an integer truncates as scipy's (not rounding noise)
    x = np.full(9, 5, np.uint8)
    same("just below", cv.correlate1d(x, [1 - 1e-12]), ndi.correlate1d(x, [1 - 1e-12]))
    # a dense rank-one filter of integers: summed as given, as scipy
    x = data((30, 31), np.uint8)
    wd = np.outer([1, -3, 2], [2, 1, -1]).astype(float)
    same("dense rank one", cv.correlate(x, wd), ndi.correlate(x, wd))
    # in place, and saturate=True unchanged (rounding and clamping)
    x = data((40, 30), np.uint8)
    y = x.copy()
    cv.gaussian_filter(y, 1.7, output=y)
    same("in place", y, ndi.gaussian_filter(x, 1.7))
    got = cv.laplace(x, saturate=True)
    ref = np.clip(np.rint(ndi.laplace(x.astype(np.float64))), 0, 255).astype(np.uint8)
    same("saturate", got, ref)


def main():
    return CHECKS.run([test_filters, test_types])


if __name__ == "__main__":
    sys.exit(main())
