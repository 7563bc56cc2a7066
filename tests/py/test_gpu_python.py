#!/usr/bin/env python3
"""test_gpu_python.py - the convolve package on CuPy arrays and PyTorch tensors.

For each array library that is installed (CuPy; PyTorch, CUDA and CPU
tensors): every function on device arrays of several element types and
modes must return the same kind of array, on the same device, with the
numbers the numpy (CPU) call gives, to float rounding, and scipy's;
output= device arrays, views (strided, transposed, negatively strided for
CuPy), 4-D batches, in-place calls, a non-default stream, dtypes as
output=, the plan cache; numpy arrays with backend 'cuda' taking their
outputs from the pinned pool. Reports "skipped" (exit 77) without a usable GPU
or without either library. Environment: CONVOLVE_BUILD_DIR, CONVOLVE_TEST_SEED.
"""
import os
import sys
import time

try:
    import numpy as np
    import scipy.ndimage as ndi
except ImportError as e:  # pragma: no cover
    print("test_gpu_python: SKIPPED: %s" % e)
    sys.exit(77)

sys.path.insert(0, os.path.join(os.environ.get("CONVOLVE_BUILD_DIR", "build"), "python"))
try:
    import convolve as cv
    from convolve import _engine
except ImportError as e:  # pragma: no cover
    print("test_gpu_python: SKIPPED: the package is not built (%s)" % e)
    sys.exit(77)

SEED = int(os.environ.get("CONVOLVE_TEST_SEED", time.time_ns() % 2**31))
RNG = np.random.default_rng(SEED)
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
FAILS = []
COUNT = [0]


def check(name, got, ref, eps=None):
    COUNT[0] += 1
    got = np.asarray(got)
    ref = np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        FAILS.append("%s: %s %s, expected %s %s" % (name, got.shape, got.dtype, ref.shape,
                                                    ref.dtype))
        return
    if eps is None:
        eps = {"f": 2e-6 if ref.dtype.itemsize == 4 else 1e-12,
               "c": 2e-6 if ref.dtype.itemsize == 8 else 1e-12}.get(ref.dtype.kind, 0.0)
    g = got.astype(np.complex128 if ref.dtype.kind == "c" else np.float64)
    r = ref.astype(g.dtype)
    scale = float(np.abs(r).max()) if r.size else 0.0
    bad = ~(np.abs(g - r) <= eps * scale + np.abs(r) * eps)
    if ref.dtype.kind in "iu":  # integer outputs: float sums on the GPU may round the other way
        bad = np.abs(g - r) > 1
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        FAILS.append("%s: %d of %d off (first at %s: %r, expected %r)" %
                     (name, bad.sum(), bad.size, i, g[i], r[i]))


def data(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (RNG.random(shape) * 4 - 1).astype(dtype)
    if dtype.kind == "c":
        return (RNG.random(shape) - 0.5 + 1j * RNG.random(shape)).astype(dtype)
    return RNG.integers(0, 200, size=shape).astype(dtype)


CALLS = [
    ("correlate", lambda m, x, **k: m.correlate(x, W2, **k)),
    ("convolve", lambda m, x, **k: m.convolve(x, W2, origin=(0, -1), **k)),
    ("correlate1d", lambda m, x, **k: m.correlate1d(x, [1.5, -2.0, 0.5, 1.0], axis=0, **k)),
    ("convolve1d", lambda m, x, **k: m.convolve1d(x, [1.5, -2.0, 0.5], axis=1, **k)),
    ("gaussian_filter", lambda m, x, **k: m.gaussian_filter(x, (1.5, 0.8), order=(0, 1), **k)),
    ("gaussian_filter1d", lambda m, x, **k: m.gaussian_filter1d(x, 2.0, axis=0, **k)),
    ("uniform_filter", lambda m, x, **k: m.uniform_filter(x, (3, 4), **k)),
    ("uniform_filter1d", lambda m, x, **k: m.uniform_filter1d(x, 5, axis=1, **k)),
    ("sobel", lambda m, x, **k: m.sobel(x, 0, **k)),
    ("prewitt", lambda m, x, **k: m.prewitt(x, 1, **k)),
    ("laplace", lambda m, x, **k: m.laplace(x, **k)),
    ("gaussian_laplace", lambda m, x, **k: m.gaussian_laplace(x, 1.2, **k)),
    ("gaussian_gradient_magnitude",
     lambda m, x, **k: m.gaussian_gradient_magnitude(x, 1.1, **k)),
]
W2 = RNG.normal(size=(3, 4))


class Lib:
    """One device array library: to/from device, its array type, streams."""

    def __init__(self, name):
        self.name = name
        if name == "cupy":
            import cupy
            self.m = cupy
            self.dev = cupy.asarray
            self.host = cupy.asnumpy
            self.type = cupy.ndarray
        else:
            import torch
            self.m = torch
            self.dev = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()
            self.host = lambda t: t.cpu().numpy()
            self.type = torch.Tensor

    def sync(self):
        if self.name == "cupy":
            self.m.cuda.get_current_stream().synchronize()
        else:
            self.m.cuda.synchronize()

    def is_dev(self, a):
        return isinstance(a, self.type) and (self.name == "cupy" or a.is_cuda)


def run_lib(lib):
    types = [np.float32, np.float64, np.uint8, np.int16]
    if lib.name == "cupy":  # PyTorch has few operations on uint16 (docs/python.md)
        types.append(np.uint16)
    for dt in types:
        x = data((37, 53), dt)
        xd = lib.dev(x)
        for name, call in CALLS:
            for mode in (MODES if dt == np.float32 else ["reflect", "constant"]):
                kw = dict(mode=mode, cval=0.75)
                ref = call(cv, x, **kw)
                got = call(cv, xd, **kw)
                COUNT[0] += 1
                if not lib.is_dev(got):
                    FAILS.append("%s %s: returned %s, not a device array" % (lib.name, name,
                                                                            type(got)))
                    continue
                lib.sync()
                check("%s %s %s %s vs numpy" % (lib.name, name, np.dtype(dt), mode),
                      lib.host(got), ref)
                if dt == np.float64:
                    check("%s %s %s vs scipy" % (lib.name, name, mode), lib.host(got),
                          call(ndi, x, **kw))
    # output= arrays and dtypes, views, 4-D, in place, complex
    x = data((40, 60), np.float32)
    xd = lib.dev(x)
    out = lib.dev(np.full((40, 60), np.nan, np.float64))
    r = cv.gaussian_filter(xd, 2.0, output=out)
    lib.sync()
    COUNT[0] += 1
    if r is not out:
        FAILS.append("%s: output= array not returned" % lib.name)
    check("%s output float64" % lib.name, lib.host(out), cv.gaussian_filter(x, 2.0,
                                                                           output=np.float64))
    dt_arg = np.float64 if lib.name == "cupy" else lib.m.float64
    check("%s output dtype" % lib.name, lib.host(cv.sobel(xd, 1, output=dt_arg)),
          cv.sobel(x, 1, output=np.float64))
    if lib.name == "cupy":
        views = {"strided": (xd[::2, 1::3], x[::2, 1::3]), "negative": (xd[::-1, ::-2],
                                                                     x[::-1, ::-2]),
                 "transposed": (xd.T, x.T)}
    else:
        views = {"strided": (xd[::2, 1::3], x[::2, 1::3]), "transposed": (xd.t(), x.T)}
    for vname, (vd, vh) in views.items():
        check("%s view %s" % (lib.name, vname), lib.host(cv.correlate(vd, W2, mode="mirror")),
              cv.correlate(vh, W2, mode="mirror"))
    x4 = data((3, 20, 24, 3), np.float32)
    check("%s 4-D batch" % lib.name,
          lib.host(cv.gaussian_filter(lib.dev(x4), (0, 1.3, 1.3, 0), mode="wrap")),
          cv.gaussian_filter(x4, (0, 1.3, 1.3, 0), mode="wrap"))
    y = lib.dev(x)
    cv.correlate(y, W2, output=y)
    lib.sync()
    check("%s in place" % lib.name, lib.host(y), cv.correlate(x, W2))
    xc = data((20, 30), np.complex64)
    check("%s complex" % lib.name, lib.host(cv.correlate(lib.dev(xc), W2)), cv.correlate(xc, W2))
    # a stream of its own
    if lib.name == "cupy":
        s = lib.m.cuda.Stream(non_blocking=True)
        with s:
            r = cv.gaussian_filter(xd, 3.0)
        s.synchronize()
    else:
        s = lib.m.cuda.Stream()
        with lib.m.cuda.stream(s):
            r = cv.gaussian_filter(xd, 3.0)
        s.synchronize()
    check("%s own stream" % lib.name, lib.host(r), cv.gaussian_filter(x, 3.0))
    # the plan cache
    cv.correlate(xd, W2)
    misses = _engine.stats["misses"]
    for _ in range(4):
        cv.correlate(xd, W2)
    lib.sync()
    COUNT[0] += 1
    if _engine.stats["misses"] != misses:
        FAILS.append("%s: repeated calls re-planned" % lib.name)
    # the CPU backend is refused for device arrays
    COUNT[0] += 1
    try:
        cv.correlate(xd, W2, backend="cpu")
        FAILS.append("%s: backend='cpu' accepted a device array" % lib.name)
    except ValueError:
        pass


def run_torch_cpu():
    import torch
    x = data((30, 40), np.float32)
    t = torch.from_numpy(x.copy())
    r = cv.gaussian_filter(t, 1.5)
    COUNT[0] += 1
    if not isinstance(r, torch.Tensor) or r.is_cuda:
        FAILS.append("torch CPU: returned %s" % type(r))
        return
    check("torch CPU gaussian", r.numpy(), cv.gaussian_filter(x, 1.5))
    out = torch.empty((30, 40), dtype=torch.float64)
    r = cv.sobel(t, 0, output=out)
    COUNT[0] += 1
    if r is not out:
        FAILS.append("torch CPU: output= tensor not returned")
    check("torch CPU output", out.numpy(), cv.sobel(x, 0, output=np.float64))


def _pooled(a):
    """True if numpy array a lies in a buffer of the pinned pool."""
    b = a
    while isinstance(b, np.ndarray):
        b = b.base
    return type(b).__name__ == "HostBuffer"


def _wait_pool(nbytes):
    """Waits (at most 10 s) until the pinned pool holds a free buffer of
    nbytes (pinned in the background after a call); True if it does."""
    from convolve import _core
    t0 = time.time()
    while time.time() - t0 < 10:
        b = _core.host_alloc(nbytes)
        if b is not None:
            return True
        time.sleep(0.01)
    return False


def run_numpy_pinned():
    """numpy arrays with backend 'cuda' and 'auto': new arrays of 8 MiB or
    more come from the pinned pool once it holds their size (pinned in the
    background after a call that ran on CUDA), with the numbers of the
    first call (float32) and of the CPU (scipy's integer cast); outputs held
    at once never share memory; backend 'cpu' never takes pooled memory."""
    x = data((1536, 1500), np.float32)  # 9.2 MB: streamed on the GPU
    ref = cv.gaussian_filter(x, 2, backend="cpu")
    first = cv.gaussian_filter(x, 2, backend="cuda")
    check("numpy pinned: first call", first, ref)
    COUNT[0] += 1
    if not _wait_pool(first.nbytes):
        FAILS.append("numpy pinned: no pooled buffer of the output's size after a call")
        return
    outs = [cv.gaussian_filter(x, 2, backend="cuda") for _ in range(3)]
    COUNT[0] += 2
    if not _pooled(outs[0]):
        FAILS.append("numpy pinned: the output is not pooled once the pool holds its size")
    if len({o.__array_interface__["data"][0] for o in outs}) != 3:
        FAILS.append("numpy pinned: outputs held at once share memory")
    for i, o in enumerate(outs):
        COUNT[0] += 1
        if not np.array_equal(o, first):
            FAILS.append("numpy pinned: call %d differs from the first call" % i)
    out_auto = cv.gaussian_filter(x, 2, backend="auto")
    check("numpy pinned: auto", out_auto, ref)
    COUNT[0] += 1
    if _pooled(cv.gaussian_filter(x, 2, backend="cpu")):
        FAILS.append("numpy pinned: backend='cpu' took pooled memory")
    del outs, out_auto
    # scipy's integer cast (float64 buffers and a uint8 output, 12.6 MB)
    u = RNG.integers(0, 256, (2048, 2048, 3), dtype=np.uint8)
    uref = cv.gaussian_filter(u, (2, 2, 0), backend="cpu")
    u1 = cv.gaussian_filter(u, (2, 2, 0), backend="cuda")
    check("numpy pinned: uint8 first call", u1, uref)
    _wait_pool(u1.nbytes)
    u2 = cv.gaussian_filter(u, (2, 2, 0), backend="cuda")
    check("numpy pinned: uint8 pooled", u2, uref)
    COUNT[0] += 1
    if not _pooled(u2):
        FAILS.append("numpy pinned: the uint8 output is not pooled")


def main():
    libs = []
    for name in ("cupy", "torch"):
        try:
            __import__(name)
            libs.append(name)
        except ImportError:
            pass
    if not libs:
        print("test_gpu_python: SKIPPED: neither CuPy nor PyTorch is installed")
        return 77
    print("test_gpu_python: seed %d; %s" % (SEED, ", ".join(libs)))
    if "torch" in libs:
        run_torch_cpu()
    if not cv.backend_available("cuda"):
        print("test_gpu_python: GPU part SKIPPED: %s" % cv.device_info()["reason"])
        print("%d passed, %d failed" % (COUNT[0] - len(FAILS), len(FAILS)))
        return 1 if FAILS else 77
    n0, f0 = COUNT[0], len(FAILS)
    run_numpy_pinned()
    print("%-6s %4d checks, %d failed" % ("numpy", COUNT[0] - n0, len(FAILS) - f0))
    for name in libs:
        n0, f0 = COUNT[0], len(FAILS)
        try:
            run_lib(Lib(name))
        except Exception as e:
            import traceback
            traceback.print_exc()
            FAILS.append("%s raised %s: %s" % (name, type(e).__name__, e))
        print("%-6s %4d checks, %d failed" % (name, COUNT[0] - n0, len(FAILS) - f0))
    for f in FAILS[:40]:
        print("FAIL " + f)
    print("%d passed, %d failed" % (COUNT[0] - len(FAILS), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
