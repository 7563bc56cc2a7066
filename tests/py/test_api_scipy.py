#!/usr/bin/env python3
"""test_api_scipy.py - the library's API against scipy.ndimage, through ctypes.

For random cases over dims 1-3, odd/even/long filters, every mode, random
cval and origin, convolve and correlate, float and integer types, channels
and strided (sliced, negative-stride) numpy views, every strategy of every
usable backend must reproduce scipy.ndimage.correlate / convolve:
  float64 to 1e-12 relative, float32 to float32 rounding, integer outputs to
  numpy.rint + clip of scipy's float64 result (within 1 on the GPU).
CUDA strategies are checked when a GPU is usable; otherwise that part says it
was skipped. Environment: CONVOLVE_BUILD_DIR (holds libconvolve.so),
CONVOLVE_TEST_SEED (replays a run), CONVOLVE_TEST_ROUNDS (cases per strategy).
"""
import ctypes as C
import os
import sys
import time

try:
    import numpy as np
    import scipy.ndimage as ndi
except ImportError as e:  # pragma: no cover
    if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1":
        print(f"test_api_scipy: FAILED: {e} (numpy and scipy are required here)")
        sys.exit(1)
    print(f"test_api_scipy: SKIPPED: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scipy_nd_ref import scipy_nd  # noqa: E402
from convolve_ctypes import (  # noqa: E402
    BACKEND_CUDA, DTYPES, MODES, OK, UNSUPPORTED, DeviceInfo, Layout, Options, StrategyInfo,
    load_library)

LIB = load_library()
CTX = C.c_void_p()
assert LIB.convolve_context_create(C.byref(CTX)) == OK


def layout_of(a, channels):
    """Layout of numpy array a; with channels > 1 its last axis is the channel."""
    lay = Layout()
    lay.dtype = DTYPES[a.dtype]
    nd = a.ndim - (1 if channels > 1 else 0)
    lay.ndim = nd
    for i in range(nd):
        lay.shape[i] = a.shape[i]
        lay.strides[i] = a.strides[i]
    lay.channels = channels
    lay.channel_stride = a.strides[-1] if channels > 1 else a.itemsize
    return lay


def run(x, w, out_dtype, mode, cval, origin, correlate, backend, strategy, channels=1,
        out=None):
    """Returns (status, output array, strategy run, message)."""
    f = C.c_void_p()
    wk = np.ascontiguousarray(w, dtype=np.float64)
    shape = (C.c_size_t * w.ndim)(*w.shape)
    st = LIB.convolve_filter_create(CTX, C.byref(f), w.ndim, shape,
                                    wk.ctypes.data_as(C.POINTER(C.c_double)))
    assert st == OK, LIB.convolve_last_error(CTX)
    if out is None:
        out = np.empty(x.shape, dtype=out_dtype)
    if out.dtype.kind == "f":
        out.fill(np.nan)  # poisoned
    else:
        out.fill(0xAB)
    opt = Options()
    LIB.convolve_options_init_size(C.byref(opt), C.sizeof(opt))
    opt.operation = 1 if correlate else 0
    opt.mode = MODES.index(mode)
    opt.cval = cval
    for i, o in enumerate(origin):
        opt.origin[i] = o
    opt.backend = backend
    opt.strategy = strategy.encode() if strategy else None
    lin, lout = layout_of(x, channels), layout_of(out, channels)
    plan = C.c_void_p()
    st = LIB.convolve_plan_create(CTX, C.byref(plan), C.byref(lin), C.byref(lout), f,
                                  C.byref(opt))
    LIB.convolve_filter_free(f)
    if st != OK:
        return st, None, None, LIB.convolve_last_error(CTX).decode()
    ran = LIB.convolve_plan_strategy(plan).decode()
    st = LIB.convolve_execute(plan, C.c_void_p(x.ctypes.data), C.c_void_p(out.ctypes.data))
    msg = LIB.convolve_last_error(CTX).decode()
    LIB.convolve_plan_free(plan)
    return st, out, ran, msg


def scipy_result(x, w, mode, cval, origin, correlate, channels):
    fn = ndi.correlate if correlate else ndi.convolve
    xd = x.astype(np.float64)
    if channels > 1:
        return np.stack([scipy_nd(fn, xd[..., c], w, mode, cval, origin)
                         for c in range(channels)], axis=-1)
    return scipy_nd(fn, xd, w, mode, cval, origin)


def random_case(rng, ndim):
    maxn = {1: 50, 2: 17, 3: 8}[ndim]
    maxk = {1: 12, 2: 7, 3: 5}[ndim]
    shape = tuple(int(rng.integers(1, maxn + 1)) for _ in range(ndim))
    kshape = tuple(int(rng.integers(1, maxk + 1)) for _ in range(ndim))
    origin = tuple(int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in kshape)
    return shape, kshape, origin


def make_input(rng, shape, dtype, channels, view):
    """Random data of the given dtype; `view` picks a contiguous array, a
    sliced (strided) view of a larger one, or a reversed (negative stride) view."""
    full = tuple(s * 2 + 1 for s in shape) if view == "sliced" else shape
    if channels > 1:
        full = full + (channels,)
    if dtype.kind == "f":
        base = rng.uniform(-1, 1, size=full).astype(dtype)
    else:
        base = rng.integers(0, np.iinfo(dtype).max + 1, size=full).astype(dtype)
    if view == "sliced":
        sl = tuple(slice(1, 1 + 2 * s, 2) for s in shape)
        return base[sl]
    if view == "reversed":
        return base[tuple(slice(None, None, -1) for _ in shape)]
    return base


def check(rng, backend, strategy, dims, rounds):
    failures, unsupported, ran_cases = [], 0, 0
    for r in range(rounds):
        ndim = int(rng.choice([d for d in (1, 2, 3) if dims >> (d - 1) & 1]))
        shape, kshape, origin = random_case(rng, ndim)
        mode = MODES[int(rng.integers(0, 5))]
        cval = float(rng.uniform(-2, 2))
        correlate = bool(rng.integers(0, 2))
        in_dt = np.dtype([np.float32, np.float64, np.uint8, np.uint16][int(rng.integers(0, 4))])
        out_dt = in_dt if rng.random() < 0.6 else np.dtype(
            [np.float32, np.float64, np.uint8, np.uint16][int(rng.integers(0, 4))])
        channels = int(rng.choice([1, 1, 1, 3, 4]))
        view = ["contiguous", "sliced", "reversed"][int(rng.integers(0, 3))]
        x = make_input(rng, shape, in_dt, channels, view)
        w = rng.uniform(-1, 1, size=kshape)
        if in_dt.kind == "u" and out_dt.kind == "u":
            w = np.abs(w) / max(np.abs(w).sum(), 1e-9)  # keep sums in range mostly
        st, out, ran, msg = run(x, w, out_dt, mode, cval, origin, correlate, backend, strategy,
                                channels)
        tag = (f"{strategy or 'auto'} {ndim}D {shape} k={kshape} origin={origin} {mode} "
               f"cval={cval:.3f} {'correlate' if correlate else 'convolve'} "
               f"{in_dt}->{out_dt} ch={channels} {view}")
        if st == UNSUPPORTED:
            unsupported += 1
            continue
        if st != OK:
            failures.append(f"{tag}: status {st}: {msg}")
            continue
        ran_cases += 1
        ref = scipy_result(x, w, mode, cval, origin, correlate, channels)
        # The reference accumulates in double like scipy; other strategies
        # accumulate float32 (and uint8/uint16) data in float.
        exact = strategy == "reference" or in_dt == np.float64
        got = out.astype(np.float64)
        if out_dt.kind == "u":
            info = np.iinfo(out_dt)
            want = np.clip(np.rint(ref), info.min, info.max)
            bad = np.abs(got - want) > (0 if strategy == "reference" else 1)
        else:
            if exact:
                eps = 1e-12 if out_dt == np.float64 else 1e-6
            else:
                eps = 1e-6 * max(1.0, np.sqrt(w.size))
            scale = (np.abs(x.astype(np.float64)).max() + abs(cval)) * np.abs(w).sum()
            bad = ~(np.abs(got - ref) <= eps * scale + np.abs(ref) * eps)
        if bad.any():
            i = np.argwhere(bad)[0]
            failures.append(f"{tag}: {int(bad.sum())} elements differ, first at {tuple(i)}: "
                            f"got {out[tuple(i)]!r} want {ref[tuple(i)]!r}")
        if len(failures) > 10:
            break
    return failures, unsupported, ran_cases


def strategies():
    out = []
    for i in range(LIB.convolve_strategy_count()):
        info = StrategyInfo()
        assert LIB.convolve_strategy_get(i, C.byref(info)) == OK
        out.append((info.name.decode(), info.backend, info.dims))
    return out


def main():
    seed = int(os.environ.get("CONVOLVE_TEST_SEED", time.time_ns() % 2**32))
    rounds = int(os.environ.get("CONVOLVE_TEST_ROUNDS", "150"))
    print(f"test_api_scipy: seed {seed} (replay with CONVOLVE_TEST_SEED={seed})")
    rng = np.random.default_rng(seed)
    dev = DeviceInfo()
    LIB.convolve_device_query(CTX, C.byref(dev))
    gpu = bool(dev.available)
    total_fail = 0
    for name, backend, dims in strategies():
        if backend == BACKEND_CUDA and not gpu:
            continue
        fails, unsup, n = check(rng, backend, name, dims, rounds)
        where = "cuda" if backend == BACKEND_CUDA else "cpu"
        print(f"  {where}/{name}: {n} cases match scipy, {unsup} unsupported, "
              f"{len(fails)} failed")
        for f in fails:
            print("    FAIL", f)
        total_fail += len(fails)
    if not gpu:
        reason = dev.reason.decode()
        print(f"test_api_scipy: CUDA strategies skipped: no usable GPU ({reason})")
    print(f"test_api_scipy: {'FAILED' if total_fail else 'passed'}")
    return 1 if total_fail else 0


if __name__ == "__main__":
    sys.exit(main())
