"""pkg_support.py - what the Python package's newer tests share: numpy,
scipy.ndimage and the built package imported (or the test skipped: exit
77, or FAILED under CONVOLVE_REQUIRE_PYTHON=1), the seed
(CONVOLVE_TEST_SEED replays one), and a runner that counts checks and
failures by test function.

    from pkg_support import load, Checks
    np, ndi, cv = load("test_name")
    checks = Checks("test_name")
    ... checks.count(); checks.fail("message") ...
    sys.exit(checks.run([test_a, test_b]))
"""
import os
import sys
import time


def _unavailable(name, what):
    if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1":
        print("%s: FAILED: %s" % (name, what))
        sys.exit(1)
    print("%s: SKIPPED: %s" % (name, what))
    sys.exit(77)


def package_dir():
    """The built package's folder: $CONVOLVE_BUILD_DIR (default build)/python."""
    return os.path.join(os.path.abspath(os.environ.get("CONVOLVE_BUILD_DIR", "build")), "python")


def load(name):
    """(numpy, scipy.ndimage, convolve) for test `name`, or exits."""
    try:
        import numpy
        import scipy.ndimage
    except ImportError as e:  # pragma: no cover
        _unavailable(name, "%s (numpy and scipy are required here)" % e)
    sys.path.insert(0, package_dir())
    try:
        import convolve
    except ImportError as e:  # pragma: no cover
        _unavailable(name, "the package is not built (%s)" % e)
    return numpy, scipy.ndimage, convolve


class Checks:
    """Counts a test's checks and collects its failures."""

    def __init__(self, name):
        self.name = name
        self.seed = int(os.environ.get("CONVOLVE_TEST_SEED", time.time_ns() % 2**31))
        self.checks = 0
        self.fails = []

    def count(self, n=1):
        self.checks += n

    def fail(self, message):
        self.fails.append(message)

    def run(self, tests):
        """Runs each test function (an exception is a failure), prints the
        counts and the first 40 failures; the exit status: 1 if any failed."""
        print("%s: seed %d (CONVOLVE_TEST_SEED replays it)" % (self.name, self.seed))
        width = max(len(t.__name__) for t in tests)
        for t in tests:
            n0, f0 = self.checks, len(self.fails)
            try:
                t()
            except Exception as e:
                import traceback
                traceback.print_exc()
                self.fail("%s raised %s: %s" % (t.__name__, type(e).__name__, e))
            print("%-*s %4d checks, %d failed" % (width, t.__name__, self.checks - n0,
                                                 len(self.fails) - f0))
        for f in self.fails[:40]:
            print("FAIL " + f)
        print("%d passed, %d failed" % (self.checks - len(self.fails), len(self.fails)))
        return 1 if self.fails else 0
