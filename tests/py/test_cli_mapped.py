"""test_cli_mapped.py - `convolve IN.npy OUT.npy` on files larger than memory
(docs/cli.md, "Files larger than memory" and "Progress, Ctrl-C and several
GPUs"): the mapped path gives the same bytes as loading (--mmap off) in every
mode, for every element type, 1-D to 3-D, cut into slabs shorter than the
filter (CONVOLVE_CPU_SLAB_BYTES forces the CPU's slabs small); inputs that
need converting fall back to loading; failures and Ctrl-C (SIGINT, SIGTERM)
leave no file and an old OUTPUT intact; progress appears only when asked
for or on a terminal; --devices is accepted where it applies; and the peak
resident memory (ru_maxrss) of a run on a file 4x the bound stays under it.
Run by CTest; skipped (77) without numpy/scipy unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import fcntl
import os
import re
import signal
import subprocess
import time
import unittest

from cli_support import CLI, CliCase, read_file, run, write_file

import numpy as np
import scipy.ndimage as ndi

MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
OLD = b"old output: must survive\n"
SANITIZED = os.environ.get("CONVOLVE_SANITIZED") == "1"
TIME = "/usr/bin/time"
PROGRESS = re.compile(r"^convolve: +(\d+)% \((\d+)/(\d+) slabs\)")


def random_array(rng, shape, dtype):
    if dtype in (np.uint8, np.uint16):
        return rng.integers(1, np.iinfo(dtype).max, size=shape, dtype=dtype)
    return (rng.standard_normal(shape) * 10).astype(dtype)


class Mapped(CliCase):
    def setUp(self):
        super().setUp()
        self.rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))

    def p(self, name):
        return os.path.join(self.tmp, name)

    def ok(self, args, env=None):
        r = run(args, env=env)
        self.assertEqual(r.returncode, 0, "convolve %s\n%s" % (" ".join(map(str, args)), r.stderr))
        return r

    def no_temporaries(self):
        left = [f for f in os.listdir(self.tmp) if f.startswith(".")]
        self.assertEqual(left, [], "temporary files left behind")

    def test_same_bytes_as_loading(self):
        """Mapped (--mmap on) and loaded (--mmap off) results are byte-identical,
        in slabs of a few rows (shorter than the filter) and in one piece."""
        shapes = [(601,), (23, 17), (7, 6, 5)]
        dtypes = [np.float32, np.float64, np.uint8, np.uint16]
        for shape in shapes:
            for dtype in dtypes:
                x = random_array(self.rng, shape, dtype)
                np.save(self.p("in.npy"), x)
                nd = len(shape)
                w = self.rng.standard_normal((9,) + (3,) * (nd - 1)) / 9
                np.save(self.p("w.npy"), w)
                row = x.itemsize * (1 if nd == 1 else int(np.prod(shape[1:])))
                for mode in MODES:
                    for slab in (None, 3 * row):
                        extra = ["--mode", mode, "--weights", self.p("w.npy"), "--cval", "2.5"]
                        if mode == "wrap":
                            extra += ["--correlate", "--origin", "-1"]
                        if dtype == np.uint8:
                            extra += ["--output-dtype", "float32"]
                        env = {"CONVOLVE_CPU_SLAB_BYTES": str(slab)} if slab else None
                        what = "%s %s %s slab %s" % (shape, np.dtype(dtype).name, mode, slab)
                        with self.subTest(what):
                            write_file(self.p("mapped.npy"), OLD)
                            self.ok([self.p("in.npy"), self.p("mapped.npy"), "--mmap", "on",
                                     "--progress"] + extra, env)
                            self.ok([self.p("in.npy"), self.p("loaded.npy"), "--mmap", "off"] +
                                    extra, env)
                            self.assertEqual(read_file(self.p("mapped.npy")),
                                             read_file(self.p("loaded.npy")), what)
                            if dtype in (np.float32, np.float64) and mode != "wrap":
                                ref = ndi.convolve(x.astype(np.float64), w, mode=mode, cval=2.5)
                                got = np.load(self.p("mapped.npy"))
                                tol = 1e-4 if dtype == np.float32 else 1e-10
                                self.assertTrue(np.all(np.abs(got - ref) <= tol + tol *
                                                       np.abs(ref)), what)
        self.no_temporaries()

    def test_inputs_that_need_converting(self):
        """Big-endian and Fortran-order inputs are loaded (auto) with the same
        result; --mmap on refuses them."""
        x = random_array(self.rng, (31, 29), np.float32)
        np.save(self.p("plain.npy"), x)
        np.save(self.p("big.npy"), x.astype(">f4"))
        np.save(self.p("fortran.npy"), np.asfortranarray(x))
        self.ok([self.p("plain.npy"), self.p("want.npy"), "--filter", "gaussian:1.5"])
        for name, needle in (("big.npy", "other byte order"), ("fortran.npy", "Fortran order")):
            with self.subTest(name):
                self.ok([self.p(name), self.p("got.npy"), "--filter", "gaussian:1.5"],
                        {"CONVOLVE_CPU_SLAB_BYTES": "1000"})
                self.assertEqual(read_file(self.p("got.npy")), read_file(self.p("want.npy")))
                r = run([self.p(name), self.p("got2.npy"), "--filter", "box:1", "--mmap", "on"])
                self.assertEqual(r.returncode, 1)
                self.assertIn(needle, r.stderr)
                self.assertFalse(os.path.exists(self.p("got2.npy")))
        self.no_temporaries()

    def test_output_only_mapped_and_links(self):
        """A PNG to .npy maps the output alone; a symbolic link OUTPUT has its
        file replaced; --force replaces the input it maps."""
        img = self.rng.integers(0, 255, (40, 30), dtype=np.uint8)
        np.save(self.p("img.npy"), img)
        self.ok([self.p("img.npy"), self.p("img.png"), "--filter", "identity"])
        self.ok([self.p("img.png"), self.p("a.npy"), "--filter", "box:1"])
        self.ok([self.p("img.png"), self.p("b.npy"), "--filter", "box:1", "--mmap", "off"])
        self.assertEqual(read_file(self.p("a.npy")), read_file(self.p("b.npy")))
        write_file(self.p("target.npy"), OLD)
        os.symlink("target.npy", self.p("link.npy"))
        self.ok([self.p("img.npy"), self.p("link.npy"), "--filter", "box:1"])
        self.assertTrue(os.path.islink(self.p("link.npy")))
        self.assertEqual(read_file(self.p("target.npy")), read_file(self.p("b.npy")))
        self.ok([self.p("img.npy"), self.p("img.npy"), "--filter", "box:1", "--force"],
                {"CONVOLVE_CPU_SLAB_BYTES": "300"})
        self.assertEqual(read_file(self.p("img.npy")), read_file(self.p("b.npy")))
        self.no_temporaries()

    def test_failures_leave_nothing(self):
        """A failure after the output was mapped (planning) or while creating
        it leaves the old OUTPUT and no temporary file."""
        np.save(self.p("x.npy"), random_array(self.rng, (20, 20), np.float32))
        write_file(self.p("out.npy"), OLD)
        r = run([self.p("x.npy"), self.p("out.npy"), "--filter", "laplacian", "--strategy",
                 "separable"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("not separable", r.stderr)
        self.assertEqual(read_file(self.p("out.npy")), OLD)
        r = run([self.p("x.npy"), self.p("nodir/out.npy"), "--filter", "box:1"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("cannot create a file in its directory", r.stderr)
        os.mkfifo(self.p("fifo.npy"))
        r = run([self.p("x.npy"), self.p("fifo.npy"), "--filter", "box:1"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not a regular file", r.stderr)
        self.no_temporaries()

    def interrupted(self, sig):
        """Starts a run of many slabs whose progress lines go into a pipe of
        one page, so that it blocks writing them until read; signals it then:
        it must cancel, write nothing and end of the signal."""
        np.save(self.p("x.npy"), random_array(self.rng, (3000, 16), np.float32))
        write_file(self.p("out.npy"), OLD)
        rfd, wfd = os.pipe()
        fcntl.fcntl(wfd, 1031, 4096)  # F_SETPIPE_SZ: one page
        env = dict(os.environ, CONVOLVE_CPU_SLAB_BYTES="64")  # one row a slab
        proc = subprocess.Popen([CLI, self.p("x.npy"), self.p("out.npy"), "--filter", "box:2",
                                 "--progress"], stdout=subprocess.DEVNULL, stderr=wfd, env=env)
        os.close(wfd)
        with os.fdopen(rfd, "r") as err:
            first = err.readline()
            self.assertRegex(first, PROGRESS)
            # the pipe is full again soon: the run is blocked in a progress line
            time.sleep(0.3)
            proc.send_signal(sig)
            rest = err.read()
        code = proc.wait(timeout=60)
        self.assertEqual(code, -sig, rest[-500:])
        self.assertIn("convolve: interrupted: '%s' not written" % self.p("out.npy"), rest)
        done = [int(m.group(2)) for m in map(PROGRESS.match, rest.splitlines()) if m]
        self.assertTrue(done and max(done) < 3000, "the run was not cut short")
        self.assertEqual(read_file(self.p("out.npy")), OLD)
        self.no_temporaries()

    def test_ctrl_c(self):
        self.interrupted(signal.SIGINT)

    def test_sigterm(self):
        self.interrupted(signal.SIGTERM)

    def test_progress_only_when_asked(self):
        np.save(self.p("x.npy"), random_array(self.rng, (200, 10), np.float32))
        env = {"CONVOLVE_CPU_SLAB_BYTES": "400"}
        base = [self.p("x.npy"), self.p("o.npy"), "--filter", "box:1"]
        self.assertEqual(self.ok(base, env).stderr, "")  # a pipe: nothing
        self.assertEqual(self.ok(base + ["--progress", "--quiet"], env).stderr, "")
        lines = self.ok(base + ["--progress"], env).stderr.splitlines()
        got = [PROGRESS.match(line) for line in lines]
        self.assertTrue(all(got), lines)
        self.assertEqual([int(m.group(2)) for m in got], list(range(0, 21)))
        self.assertEqual(got[-1].group(1), "100")
        self.assertEqual(self.ok(base + ["--progress", "--mmap", "off"]).stderr.count("\n"), 2)

    def test_devices(self):
        """--devices is ignored by the CPU backend, and `all` needs no GPU
        with backend auto; convolve info lists the devices."""
        np.save(self.p("x.npy"), random_array(self.rng, (30, 20), np.float32))
        self.ok([self.p("x.npy"), self.p("a.npy"), "--filter", "box:1"])
        for dev in (["--devices", "2", "--backend", "cpu"], ["--devices", "0,5,", "--backend",
                                                             "cpu"], ["--devices=all"]):
            with self.subTest(dev):
                self.ok([self.p("x.npy"), self.p("b.npy"), "--filter", "box:1"] + dev)
                self.assertEqual(read_file(self.p("a.npy")), read_file(self.p("b.npy")))
        info = self.ok(["info"]).stdout
        m = re.search(r"\ndevices: (\d+)\n", info)
        self.assertIsNotNone(m, info)
        listed = re.findall(r"^  (\d+): ", info[m.end():], re.M)
        self.assertEqual(listed, [str(i) for i in range(int(m.group(1)))])

    @unittest.skipUnless(os.access(TIME, os.X_OK), "no %s (Debian package time)" % TIME)
    def test_peak_memory_bounded(self):
        """A 256 MiB float32 file (a quarter of that under the sanitizers) in
        4 MiB slabs: peak RSS under 64 MiB, a quarter of the file; the
        result matches scipy on rows spread over the array."""
        rows = 8192 if not SANITIZED else 2048
        shape = (rows, 8192)
        x = np.lib.format.open_memmap(self.p("big.npy"), mode="w+", dtype=np.float32,
                                      shape=shape)
        for r in range(0, rows, 512):
            x[r:r + 512] = self.rng.standard_normal((512, shape[1]), dtype=np.float32)
        x.flush()
        del x
        # GNU time's ru_maxrss: a child forked from this python would count
        # python's own peak (Linux keeps it across fork and exec)
        env = dict(os.environ, CONVOLVE_CPU_SLAB_BYTES="4M")
        r = subprocess.run([TIME, "-f", "%M", "-o", self.p("rss.txt"), CLI, self.p("big.npy"),
                            self.p("out.npy"), "--filter", "box:1", "--mode", "wrap"], env=env,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        maxrss_kib = int(read_file(self.p("rss.txt")).split()[-1])
        peak_mib = maxrss_kib / 1024.0
        file_mib = os.path.getsize(self.p("big.npy")) / 2.0 ** 20
        print("peak RSS %.1f MiB for a %.0f MiB file (4 MiB slabs)" % (peak_mib, file_mib))
        if not SANITIZED:
            self.assertLess(peak_mib, 64, "peak RSS %.1f MiB" % peak_mib)
        x = np.load(self.p("big.npy"), mmap_mode="r")
        y = np.load(self.p("out.npy"), mmap_mode="r")
        k = np.ones((3, 3)) / 9
        for r in (0, 1, rows // 3, rows // 2 + 7, rows - 2, rows - 1):
            idx = [(r + d) % rows for d in (-2, -1, 0, 1, 2)]
            ref = ndi.convolve(x[idx].astype(np.float64), k, mode="wrap")[2]
            self.assertTrue(np.allclose(y[r], ref, rtol=1e-5, atol=1e-5), "row %d" % r)
        self.no_temporaries()


if __name__ == "__main__":
    unittest.main(verbosity=2)
