#!/usr/bin/env python3
"""test_python_device_layer.py - the package's CuPy adapter, without a GPU.

The code that serves CuPy arrays (convolve/_arrays.py's CupyOps: allocation,
casts, views, complex parts, strides and pointers, the plan cache's device
and stream keys, the device scopes) is run here on a stand-in for CuPy
whose arrays live in host memory, with one substitution: the plan runs on
the host (convolve_execute) where a GPU would run it on device pointers
(convolve_execute_device). Over it runs scipy's own filter suite in the
shim's CuPy mode (tests/py/test_scipy_suite.py --arrays cupy), which
converts each call's arrays to "CuPy" arrays and back. The real thing runs
on a GPU machine (docs/python.md); this keeps the adapter honest in CI.
Skipped (77) without scipy or pytest, unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import contextlib
import os
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def make_fake_cupy():
    """A module named cupy with the subset of CuPy's API convolve uses."""
    cp = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")

    class Device(contextlib.AbstractContextManager):
        def __init__(self, i=0):
            self.id = i

        def __exit__(self, *exc):
            return False

    class Stream:
        ptr = 0

        def synchronize(self):
            pass

    cuda.Device = Device
    cuda.get_current_stream = lambda: Stream()

    class Memory:
        def __init__(self, a):
            self.ptr = a.__array_interface__["data"][0]

    class ndarray(np.ndarray):
        @property
        def device(self):
            return Device(0)

        @property
        def data(self):
            return Memory(self)

        def get(self):
            return np.array(self.view(np.ndarray))

    ndarray.__module__ = "cupy"

    def wrap(a):
        return a.view(ndarray) if isinstance(a, np.ndarray) else a

    cp.ndarray = ndarray
    cp.cuda = cuda
    cp.asarray = lambda a, dtype=None: np.array(a, dtype=dtype).view(ndarray)
    cp.asnumpy = lambda a: np.array(np.asarray(a).view(np.ndarray))
    cp.empty = lambda shape, dtype=float: np.empty(shape, dtype).view(ndarray)
    cp.zeros = lambda shape, dtype=float: np.zeros(shape, dtype).view(ndarray)
    cp.copyto = lambda dst, src, casting="same_kind", where=True: np.copyto(
        dst, src, casting=casting, where=where)
    cp.take = lambda a, idx, axis=None: wrap(np.take(a, idx, axis=axis))
    for name in ("rint", "clip", "sqrt", "multiply", "abs", "maximum"):
        setattr(cp, name, getattr(np, name))
    cp.__version__ = "host stand-in"
    sys.modules["cupy"] = cp
    sys.modules["cupy.cuda"] = cuda
    return cp


def main():
    try:
        import pytest  # noqa: F401
        import scipy.ndimage  # noqa: F401
    except ImportError as e:
        print("skipped: %s" % e)
        return 1 if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1" else 77
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(os.environ.get("CONVOLVE_BUILD_DIR", "build"), "python"))
    make_fake_cupy()
    try:
        import convolve
        from convolve import _arrays, _engine
    except ImportError as e:
        print("skipped: the package is not built (%s)" % e)
        return 1 if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1" else 77

    used = {"device_calls": 0}
    make_plan = _engine._make_plan

    def host_plan(*args):  # the plan a GPU would run, made for the host
        args = list(args)
        args[-1] = False
        return make_plan(*args)

    def host_execute(self, plan, inp, out):
        used["device_calls"] += 1
        assert isinstance(inp, sys.modules["cupy"].ndarray)
        assert isinstance(out, sys.modules["cupy"].ndarray)
        plan.execute(inp.view(np.ndarray), out.view(np.ndarray))

    _engine._make_plan = host_plan
    _arrays.CupyOps.execute = host_execute
    convolve.backend_available = lambda backend: True

    import test_scipy_suite
    sys.argv = [sys.argv[0], "--arrays", "cupy"]
    rc = test_scipy_suite.main()
    print("calls through the CuPy adapter: %d" % used["device_calls"])
    if used["device_calls"] == 0:
        print("FAILED: no call went through the CuPy adapter")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
