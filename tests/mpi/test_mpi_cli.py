"""test_mpi_cli.py - `mpiexec -n N convolve-mpi IN.npy OUT.npy [options]`
writes the very bytes `convolve IN.npy OUT.npy [options]` writes.

Cases: 1-D to 3-D; float32, float64, uint8, uint16 and big-endian float32
inputs; output dtypes; every mode, cval, origins, convolve and correlate;
named filters, .npy and text weights, filters longer than the array;
slabs and --grid; 1 to 4 ranks. Dense weights of 64 taps or more name
--strategy direct for both commands: convolve's `fast` may pick its FFT
there, which convolve-mpi never does (docs/scale.md). Failures: bad options, a missing input, an
unwritable output place, a write failing on one rank (injected with
CONVOLVE_MPI_CLI_FAIL_WRITE): the exit code is convolve's, an existing
OUTPUT is left as it was, and no temporary file stays behind; a replaced
OUTPUT keeps its mode (and owner, as root).
Run by CTest (label mpi) with CONVOLVE_CLI, CONVOLVE_MPI_CLI, MPIEXEC and
MPIEXEC_FLAGS set; skipped (77) without numpy unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import os
import shlex
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("test_mpi_cli: skipped (no numpy)")
    sys.exit(1 if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1" else 77)

CLI = os.environ["CONVOLVE_CLI"]
MPI_CLI = os.environ["CONVOLVE_MPI_CLI"]
MPIEXEC = [os.environ.get("MPIEXEC", "mpiexec")] + shlex.split(
    os.environ.get("MPIEXEC_FLAGS", "").replace(";", " "))
SEED = int(os.environ.get("CONVOLVE_TEST_SEED", "0")) or int.from_bytes(os.urandom(4), "little")
print("test_mpi_cli: seed %d (replay with CONVOLVE_TEST_SEED=%d)" % (SEED, SEED), flush=True)
rng = np.random.default_rng(SEED)
failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print("FAIL: " + what, flush=True)


def mpi_run(n, args, env=None):
    return subprocess.run(MPIEXEC + ["-n", str(n), MPI_CLI] + args, capture_output=True,
                          text=True, env=env)


def leftovers(d):
    return [f for f in os.listdir(d) if ".tmp-" in f]


def same_bytes(d, n, x, opts, mpi_opts=(), what=""):
    """convolve with opts and convolve-mpi with opts + mpi_opts on x (saved as in.npy)."""
    inp, ref, out = (os.path.join(d, f) for f in ("in.npy", "ref.npy", "out.npy"))
    np.save(inp, x)
    for f in (ref, out):
        if os.path.exists(f):
            os.remove(f)
    single = subprocess.run([CLI, inp, ref] + opts, capture_output=True, text=True)
    multi = mpi_run(n, [inp, out] + opts + list(mpi_opts))
    desc = "%d ranks, %s %s %s: %s" % (n, x.dtype, "x".join(map(str, x.shape)),
                                       " ".join(opts + list(mpi_opts)), what)
    check(single.returncode == 0, "convolve failed: %s: %s" % (desc, single.stderr))
    check(multi.returncode == 0, "convolve-mpi failed: %s: %s" % (desc, multi.stderr))
    if single.returncode == 0 and multi.returncode == 0:
        a, b = open(ref, "rb").read(), open(out, "rb").read()
        check(a == b, "bytes differ (%d and %d bytes): %s" % (len(a), len(b), desc))
    check(not leftovers(d), "temporary files left: %s" % leftovers(d))


def random_case(d, n, ndim, dtype):
    shape = tuple(int(rng.integers(max(1, n), {1: 300, 2: 40, 3: 14}[ndim])) for _ in range(ndim))
    if np.dtype(dtype).kind == "u":
        x = rng.integers(0, np.iinfo(dtype).max, size=shape).astype(dtype)
    else:
        x = (rng.standard_normal(shape) * 10).astype(dtype)
    mode = ["reflect", "constant", "nearest", "mirror", "wrap"][int(rng.integers(0, 5))]
    opts = ["--mode", mode, "--backend", "cpu", "--threads", "1"]
    if mode == "constant":
        opts += ["--cval", repr(float(np.round(rng.uniform(-5, 5), 3)))]
    kind = int(rng.integers(0, 3))
    if kind == 0:
        opts += ["--filter", ["gaussian:1.5", "box:2", "identity", "laplacian"][int(rng.integers(0, 4))]]
        kshape = (9,) * ndim
    else:
        kshape = tuple(int(rng.integers(1, 6)) for _ in range(ndim))
        if rng.integers(0, 4) == 0:  # longer than the whole array along axis 0
            kshape = (shape[0] + int(rng.integers(1, 5)),) + kshape[1:]
        w = rng.standard_normal(kshape)
        if kind == 1 or ndim == 3:
            np.save(os.path.join(d, "w.npy"), w)
            opts += ["--weights", os.path.join(d, "w.npy")]
        else:
            np.savetxt(os.path.join(d, "w.txt"), w.reshape(kshape[0], -1) if ndim == 2 else w[None])
            opts += ["--weights", os.path.join(d, "w.txt")]
    if kind != 0 and np.prod(kshape) >= 64:
        # convolve's `fast` may pick the FFT for dense filters of 64 taps or
        # more; convolve-mpi never does (its tiles would not be exact): name it
        opts += ["--strategy", "direct"]
    if kind != 0 and rng.integers(0, 2):
        origin = [int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in kshape]
        opts += ["--origin=" + ",".join(map(str, origin))]
    if rng.integers(0, 2):
        opts += ["--correlate"]
    if rng.integers(0, 3) == 0:
        opts += ["--output-dtype", ["float32", "float64", "uint8", "uint16"][int(rng.integers(0, 4))]]
    mpi_opts = []
    if ndim >= 2 and n == 4 and rng.integers(0, 2) and min(shape[:2]) >= 2:
        mpi_opts = ["--grid", "2x2"]
    return x, opts, mpi_opts


def main():
    with tempfile.TemporaryDirectory() as d:
        # the acceptance: 4 ranks, a .npy volume, the same bytes
        vol = (rng.standard_normal((29, 17, 13)) * 3).astype(np.float32)
        same_bytes(d, 4, vol, ["--filter", "gaussian:1", "--mode", "wrap"], what="acceptance")
        same_bytes(d, 4, vol.astype(">f4"), ["--filter", "box:1", "--backend", "cpu"],
                   what="big-endian input")
        same_bytes(d, 4, vol, ["--filter", "laplacian", "--mode", "mirror"], ["--grid", "1x2x2"],
                   what="a process grid")
        cases = [(4, 3, np.float32), (4, 2, np.uint8), (4, 1, np.float64), (3, 3, np.uint16),
                 (2, 2, np.float32), (1, 1, np.float32), (4, 3, np.float64), (3, 2, np.float32)]
        for n, ndim, dtype in cases:
            x, opts, mpi_opts = random_case(d, n, ndim, dtype)
            same_bytes(d, n, x, opts, mpi_opts)

        # failures: convolve's exit codes, OUTPUT left as it was, no temporary file
        inp, out = os.path.join(d, "in.npy"), os.path.join(d, "out.npy")
        np.save(inp, vol)
        with open(out, "wb") as f:
            f.write(b"old output")
        r = mpi_run(2, [inp, out, "--filter", "box:1", "--origin", "5"])
        check(r.returncode == 1 and "origin" in r.stderr, "bad origin: %d %s" % (r.returncode, r.stderr))
        r = mpi_run(2, [inp, out, "--filter", "nonsense"])
        check(r.returncode == 1, "unknown filter: %d %s" % (r.returncode, r.stderr))
        r = mpi_run(2, [os.path.join(d, "missing.npy"), out, "--filter", "box:1"])
        check(r.returncode == 1 and "missing.npy" in r.stderr, "missing input: %d %s" % (r.returncode, r.stderr))
        r = mpi_run(2, [inp, os.path.join(d, "no", "such", "dir.npy"), "--filter", "box:1"])
        check(r.returncode == 2, "unwritable output: %d %s" % (r.returncode, r.stderr))
        env = dict(os.environ, CONVOLVE_MPI_CLI_FAIL_WRITE="2")
        r = mpi_run(3, [inp, out, "--filter", "box:1"], env=env)
        check(r.returncode == 2 and "rank 2" in r.stderr,
              "write failing on rank 2: %d %s" % (r.returncode, r.stderr))
        check(open(out, "rb").read() == b"old output", "OUTPUT changed by a failed run")
        check(not leftovers(d), "temporary files left after failures: %s" % leftovers(d))
        # a replaced OUTPUT keeps its mode (and owner, where permitted: as root)
        os.chmod(out, 0o600)
        if os.geteuid() == 0:
            os.chown(out, 12345, 23456)
        r = mpi_run(2, [inp, out, "--filter", "box:1"])
        st = os.stat(out)
        check(r.returncode == 0 and st.st_mode & 0o7777 == 0o600,
              "replaced OUTPUT: exit %d, mode %o, not 600" % (r.returncode, st.st_mode & 0o7777))
        check(os.geteuid() != 0 or (st.st_uid, st.st_gid) == (12345, 23456),
              "replaced OUTPUT: owner %d:%d, not 12345:23456" % (st.st_uid, st.st_gid))
        r = mpi_run(2, [inp, inp, "--filter", "box:1"])
        check(r.returncode == 1 and "input file" in r.stderr, "OUTPUT = INPUT: %d %s" % (r.returncode, r.stderr))
        r = mpi_run(1, ["--help"])
        check(r.returncode == 0 and "usage: mpirun" in r.stdout, "--help")
    print("test_mpi_cli: %d checks, %d failures" % (checks, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
