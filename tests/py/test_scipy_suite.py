"""test_scipy_suite.py - scipy's own filter tests, run against the convolve package.

Runs scipy.ndimage's tests/test_filters.py (shipped by Debian's python3-scipy)
under pytest with the test module's `ndimage` rebound to a copy of
scipy.ndimage whose convolution-family functions are convolve's. A test
counts as exercising convolve when it called one of them; each such test
must pass, or be listed in KNOWN_DIFFERENCES (and in docs/python.md) with
the reason. Prints the counts and exits 0 (all pass), 1, or 77 (skipped:
no scipy, pytest or convolve package, unless CONVOLVE_REQUIRE_PYTHON=1).

Array kinds (CONVOLVE_SCIPY_SUITE_ARRAYS, or --arrays):
  numpy  (default) the tests' own numpy arrays
  cupy   each call's input and output arrays become CuPy arrays on the GPU
         (the results are copied back for the test's assertions)
  torch  the same with PyTorch CUDA tensors

Run by hand: PYTHONPATH=build/python python3 tests/py/test_scipy_suite.py
[--arrays cupy] [-- extra pytest arguments, e.g. -k gauss -x].
"""
import argparse
import inspect
import os
import sys
import threading
import types

FAMILY = ["correlate", "convolve", "correlate1d", "convolve1d", "gaussian_filter",
          "gaussian_filter1d", "uniform_filter", "uniform_filter1d", "sobel", "prewitt",
          "laplace", "gaussian_laplace", "gaussian_gradient_magnitude", "generic_laplace",
          "generic_gradient_magnitude"]

# called with the tests' own numpy arrays in every mode: the tests' derivative
# callbacks given to them call numpy.asarray on their input
HOST_ONLY = {"generic_laplace", "generic_gradient_magnitude"}

# test name (without parameters) -> why convolve differs on purpose (docs/python.md)
KNOWN_DIFFERENCES = {
    "test_gaussian_filter": "float16 input: scipy raises RuntimeError, convolve computes "
                            "(in float32) as the issue asks for every numpy dtype",
}


# test name -> why it cannot pass in this environment whichever functions it
# calls (it fails with scipy.ndimage's own too): applies when numpy >= 2
NUMPY2_INCOMPATIBLE = {
    "test_gaussian_truncate": "the copied Debian test calls ndarray.ptp(), which numpy 2.0 "
                              "removed (AttributeError after convolve's results were computed)",
}


def skip(msg):
    print("skipped: " + msg)
    sys.exit(1 if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1" else 77)


def import_package():
    build = os.environ.get("CONVOLVE_BUILD_DIR")
    if build:
        sys.path.insert(0, os.path.join(build, "python"))
    try:
        import convolve  # noqa: F401
    except ImportError as e:
        skip("the convolve package is not built (%s)" % e)
    return convolve


class Converter:
    """Moves a call's input and output arrays to the device and back."""

    def __init__(self, kind):
        import numpy as np
        self.np = np
        self.kind = kind
        if kind == "cupy":
            import cupy
            self.to_dev = cupy.asarray
            self.to_host = cupy.asnumpy
            self.is_dev = lambda x: isinstance(x, cupy.ndarray)
        else:
            import torch
            self.to_dev = lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda()
            self.to_host = lambda t: t.cpu().numpy()
            self.is_dev = lambda x: isinstance(x, torch.Tensor)

    def call(self, f, sig, args, kwargs):
        np = self.np
        bound = sig.bind(*args, **kwargs)
        a = bound.arguments
        host_in = np.asarray(a["input"])
        if host_in.dtype == object:
            return f(*args, **kwargs)
        dev_in = self.to_dev(host_in)
        a["input"] = dev_in
        host_out = a.get("output")
        if isinstance(host_out, np.ndarray):
            a["output"] = dev_in if host_out is a_input(args, kwargs) else self.to_dev(host_out)
        elif host_out is not None and self.kind == "torch" and not isinstance(host_out, str):
            from convolve._arrays import torch_ops
            a["output"] = torch_ops().tdtype(host_out)
        res = f(*bound.args, **bound.kwargs)
        if isinstance(host_out, np.ndarray):
            host_out[...] = self.to_host(a["output"])
            if host_out is a_input(args, kwargs):
                return host_out
            return host_out
        return self.to_host(res) if self.is_dev(res) else res


def a_input(args, kwargs):
    return args[0] if args else kwargs.get("input")


def make_shim(convolve, scipy_ndimage, kind, state):
    shim = types.ModuleType("ndimage_shim")
    shim.__dict__.update({k: v for k, v in vars(scipy_ndimage).items()
                          if not k.startswith("__")})
    conv = Converter(kind) if kind != "numpy" else None

    def wrap(name):
        f = getattr(convolve, name)
        sig = inspect.signature(f.__wrapped__ if hasattr(f, "__wrapped__") else f)

        def wrapper(*args, **kwargs):
            state["called"] = True
            depth = getattr(state["local"], "depth", 0)  # per thread (TestThreading)
            if conv is None or depth or name in HOST_ONLY:
                return f(*args, **kwargs)
            state["local"].depth = depth + 1
            try:
                return conv.call(f, sig, args, kwargs)
            finally:
                state["local"].depth = depth
        wrapper.__name__ = name
        return wrapper

    for name in FAMILY:
        setattr(shim, name, wrap(name))
    return shim


class Recorder:
    """pytest plugin: per test, its outcome and whether convolve ran."""

    def __init__(self, state):
        self.state = state
        self.results = {}

    def pytest_runtest_setup(self, item):
        self.state["called"] = False

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.results[report.nodeid] = (report.outcome, self.state["called"],
                                           str(report.longrepr)[-2000:] if report.failed else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arrays", default=os.environ.get("CONVOLVE_SCIPY_SUITE_ARRAYS", "numpy"),
                    choices=["numpy", "cupy", "torch"])
    ap.add_argument("--tests-dir", default=os.environ.get("CONVOLVE_SCIPY_TESTS_DIR"),
                    help="a copy of Debian's scipy/ndimage/tests folder to run instead of the "
                         "installed scipy's (the GPU machine's scipy is newer; its tests need "
                         "scipy's array-API fixtures)")
    ap.add_argument("pytest_args", nargs="*")
    opts = ap.parse_args()
    try:
        import numpy  # noqa: F401
        import pytest
        import scipy.ndimage
        if opts.tests_dir:
            import importlib
            tests = os.path.abspath(opts.tests_dir)
            sys.path.insert(0, os.path.dirname(tests))
            suite = importlib.import_module(os.path.basename(tests) + ".test_filters")
        else:
            import scipy.ndimage.tests.test_filters as suite
    except ImportError as e:
        skip("scipy's filter tests cannot be imported (%s)" % e)
    convolve = import_package()
    if opts.arrays != "numpy":
        try:
            __import__(opts.arrays)
        except ImportError:
            skip("%s is not installed" % opts.arrays)
        if not convolve.backend_available("cuda"):
            skip("no usable GPU for %s arrays: %s" % (opts.arrays,
                                                     convolve.device_info()["reason"]))
    state = {"called": False, "local": threading.local()}
    suite.ndimage = make_shim(convolve, scipy.ndimage, opts.arrays, state)
    rec = Recorder(state)
    args = ["-q", "-p", "no:cacheprovider", "--disable-warnings", "-o", "addopts=",
            "--rootdir", os.path.dirname(suite.__file__), suite.__file__] + opts.pytest_args
    print("scipy %s, %s arrays: %s" % (scipy.__version__, opts.arrays, suite.__file__))
    sys.stdout.flush()
    pytest.main(args, plugins=[rec])

    import numpy
    incompatible = NUMPY2_INCOMPATIBLE if int(numpy.__version__.split(".")[0]) >= 2 else {}
    passed = failed = known = other = env = 0
    failures = []
    for nodeid, (outcome, called, text) in sorted(rec.results.items()):
        if not called:
            if outcome == "failed":  # an error before convolve was reached (setup)
                failed += 1
                failures.append((nodeid, text))
            else:
                other += 1
            continue
        base = nodeid.split("::")[-1].split("[")[0]
        if outcome == "passed":
            passed += 1
        elif base in KNOWN_DIFFERENCES:
            known += 1
        elif base in incompatible and outcome == "failed" and "ptp" in text:
            env += 1
        elif outcome == "skipped":
            other += 1
        else:
            failed += 1
            failures.append((nodeid, text))
    for nodeid, text in failures:
        print("FAILED %s\n%s\n" % (nodeid, text))
    for name, why in KNOWN_DIFFERENCES.items():
        print("documented difference: %s: %s" % (name, why))
    for name, why in incompatible.items():
        print("not passable with numpy %s: %s: %s" % (numpy.__version__, name, why))
    print("tests not exercising convolve's functions (run on scipy's own): %d" % other)
    if env:
        print("failed for the environment (numpy %s), not convolve: %d" % (numpy.__version__, env))
    print("scipy suite (%s arrays): %d passed, %d failed, %d documented differences"
          % (opts.arrays, passed, failed, known))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
