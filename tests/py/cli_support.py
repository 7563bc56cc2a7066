"""cli_support.py - what the CLI tests (tests/py/test_cli*.py) share: finding
the binary and the data folder, skipping (exit 77) when numpy/scipy are
missing unless CONVOLVE_REQUIRE_PYTHON=1, running the CLI, and a scratch
directory per test case.

Environment: CONVOLVE_CLI (path to the convolve binary; else
CONVOLVE_BUILD_DIR/convolve), CONVOLVE_DATA_DIR (folder of grace_hopper.jpg).

Root reads any file, so the cases about unreadable files run the CLI as user
nobody (NOBODY) when the tests run as root; nobody_cannot_run() says whether
that user can run it here (not when a folder above the binary is closed to
other users, as a home directory or `mktemp -d` is), and why not.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SKIP = 77


def _give_up(why):
    """Skips (exit 77), or fails when CONVOLVE_REQUIRE_PYTHON=1."""
    if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1":
        print("FAIL: %s (CONVOLVE_REQUIRE_PYTHON=1)" % why, file=sys.stderr)
        sys.exit(1)
    print("skipped: %s" % why)
    sys.exit(SKIP)


try:
    import numpy as np  # noqa: F401
    import scipy.ndimage  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the machine
    _give_up("this python (%s) lacks numpy or scipy: %s" % (sys.executable, e))


def cli_path():
    p = os.environ.get("CONVOLVE_CLI")
    if not p and os.environ.get("CONVOLVE_BUILD_DIR"):
        p = os.path.join(os.environ["CONVOLVE_BUILD_DIR"], "convolve")
    if not p or not os.access(p, os.X_OK):
        _give_up("the convolve binary was not found (set CONVOLVE_CLI; got %r)" % p)
    return os.path.abspath(p)


CLI = cli_path()
HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.environ.get("CONVOLVE_DATA_DIR") or os.path.join(HERE, "..", "..", "data")
PHOTO = os.path.join(DATA_DIR, "grace_hopper.jpg")


NOBODY = 65534  # uid and gid of user nobody


def nobody_cannot_run(cli=None):
    """None when user nobody can run the CLI (cli, else CLI); otherwise why
    not, for a skipTest or a kept row. The exec fails (PermissionError) when
    a folder above the binary is closed to other users (mode 0700)."""
    cli = cli or CLI
    try:
        r = subprocess.run([cli, "--version"], user=NOBODY, group=NOBODY, extra_groups=[],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    except OSError as e:
        return ("user nobody (uid %d) cannot run %s: %s (a folder above it is closed to "
                "other users, e.g. mode 0700)" % (NOBODY, cli, e.strerror or e))
    if r.returncode != 0:
        return ("user nobody (uid %d) cannot run %s: exit %d: %s"
                % (NOBODY, cli, r.returncode, r.stderr.strip()[-300:]))
    return None


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def write_file(path, data):
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def run(args, cwd=None, env=None, timeout=120):
    """Runs the CLI with args; returns CompletedProcess (text stdout/stderr)."""
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([CLI] + [str(a) for a in args], cwd=cwd, env=e, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class CliCase(unittest.TestCase):
    """A test case with a scratch directory self.tmp (removed afterwards)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="convolve_cli_")

    def tearDown(self):
        for root, dirs, _ in os.walk(self.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run_ok(self, args, **kw):
        r = run(args, **kw)
        self.assertEqual(r.returncode, 0, "convolve %s\nstderr: %s" % (" ".join(map(str, args)),
                                                                       r.stderr))
        return r


def main():
    """unittest.main, then a line per skipped case saying why (on stderr)."""
    prog = unittest.main(verbosity=1, exit=False)
    for case, why in prog.result.skipped:
        print("skipped %s: %s" % (case.id(), why), file=sys.stderr)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
