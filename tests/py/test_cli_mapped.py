"""test_cli_mapped.py - `convolve IN.npy OUT.npy` on files larger than memory
(docs/cli.md, "Files larger than memory" and "Progress, Ctrl-C and several
GPUs"): the mapped path gives the same bytes as loading (--mmap off) in every
mode, for every element type, 1-D to 3-D, cut into slabs shorter than the
filter (CONVOLVE_CPU_SLAB_BYTES forces the CPU's slabs small); inputs that
need converting fall back to loading; failures, Ctrl-C (SIGINT, SIGTERM,
SIGHUP, SIGPIPE), SIGKILL (where O_TMPFILE works) and a truncated INPUT or
temporary file (SIGBUS) leave no file and an old OUTPUT intact; a replaced
OUTPUT keeps its mode and owner, a dangling link is refused; progress
appears only when asked for or on a terminal; --devices is accepted where it applies; a CUDA run
(whose output the CLI faults in while CUDA starts) gives the CPU's result, or without a GPU fails
leaving nothing; the peak resident memory (ru_maxrss) of a run on a file 4x the bound stays under
it; and an input that fits in memory stays in the page cache after the run.
Run by CTest; skipped (77) without numpy/scipy unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import ctypes
import fcntl
import mmap
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

    def start_blocked(self, rows=3000):
        """Starts a mapped run of one row a slab (rows x 16 float32) whose
        progress lines go into a pipe of one page, so that it blocks writing
        them until they are read: it cannot end before the pipe is read.
        Returns the process and the pipe's reading end (a text file), once
        the first line was read and the pipe had time to fill again."""
        np.save(self.p("x.npy"), random_array(self.rng, (rows, 16), np.float32))
        write_file(self.p("out.npy"), OLD)
        rfd, wfd = os.pipe()
        fcntl.fcntl(wfd, 1031, 4096)  # F_SETPIPE_SZ: one page
        env = dict(os.environ, CONVOLVE_CPU_SLAB_BYTES="64")  # one row a slab
        proc = subprocess.Popen([CLI, self.p("x.npy"), self.p("out.npy"), "--filter", "box:2",
                                 "--progress"], stdout=subprocess.DEVNULL, stderr=wfd, env=env)
        os.close(wfd)
        err = os.fdopen(rfd, "r")
        self.addCleanup(err.close)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        first = err.readline()
        self.assertRegex(first, PROGRESS)
        # the pipe is full again soon: the run is blocked in a progress line
        time.sleep(0.3)
        return proc, err

    def temp_fd(self, proc, missing_ok=False):
        """The descriptor of proc (pid) open on its temporary output file:
        a file of the scratch folder that is neither x.npy nor out.npy."""
        fds = "/proc/%d/fd" % proc.pid
        try:
            names = os.listdir(fds)
        except OSError:
            names = []
        for fd in names:
            try:
                target = os.readlink(os.path.join(fds, fd))
            except OSError:
                continue
            if (target.startswith(self.tmp + "/") and
                    os.path.basename(target) not in ("x.npy", "out.npy")):
                return os.path.join(fds, fd)
        if not missing_ok:
            self.fail("no temporary output file open in %s" % fds)
        return None

    def require_o_tmpfile(self):
        try:
            fd = os.open(self.tmp, os.O_TMPFILE | os.O_RDWR, 0o600)
            os.close(fd)
        except (AttributeError, OSError) as e:
            self.skipTest("the scratch folder's file system has no O_TMPFILE (%s): the "
                          "temporary file has a name there" % e)

    def interrupted(self, sig):
        """A blocked run, signalled: it must cancel, write nothing and end of
        the signal."""
        proc, err = self.start_blocked()
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

    def sighup_as(self, disposition):
        """SIGHUP's disposition in the runs this test starts (they inherit it)."""
        old = signal.signal(signal.SIGHUP, disposition)
        self.addCleanup(signal.signal, signal.SIGHUP, old)

    def test_sighup(self):
        """A closed terminal (SIGHUP) cancels as Ctrl-C does."""
        self.sighup_as(signal.SIG_DFL)
        self.interrupted(signal.SIGHUP)

    def test_sighup_ignored_under_nohup(self):
        """Started with SIGHUP ignored (nohup), the run goes on to the end."""
        self.sighup_as(signal.SIG_IGN)
        proc, err = self.start_blocked()
        proc.send_signal(signal.SIGHUP)
        rest = err.read()
        self.assertEqual(proc.wait(timeout=60), 0, rest[-500:])
        self.assertNotEqual(read_file(self.p("out.npy")), OLD)
        self.no_temporaries()

    def test_sigpipe(self):
        """Standard error a pipe closed by its reader (SIGPIPE when the next
        progress line is written): the run is cancelled, nothing written,
        and the process ends of SIGPIPE."""
        proc, err = self.start_blocked()
        err.close()
        code = proc.wait(timeout=60)
        self.assertEqual(code, -signal.SIGPIPE)
        self.assertEqual(read_file(self.p("out.npy")), OLD)
        self.no_temporaries()

    def test_sigkill_leaves_no_file(self):
        """SIGKILL cannot be caught: the output is written to a file without
        a name (O_TMPFILE) until it is complete, so that a killed run leaves
        nothing in OUTPUT's folder."""
        self.require_o_tmpfile()
        proc, err = self.start_blocked()
        self.temp_fd(proc)  # the run has its temporary file open
        proc.kill()
        self.assertEqual(proc.wait(timeout=60), -signal.SIGKILL)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["out.npy", "x.npy"])
        self.assertEqual(read_file(self.p("out.npy")), OLD)

    def test_sigkill_while_saving_loaded(self):
        """--mmap off: convolve_array_save writes a file without a name until
        it is complete too; a run killed while its temporary file is open
        (watched in /proc/PID/fd) leaves nothing."""
        self.require_o_tmpfile()
        np.save(self.p("x.npy"), np.ones((4096, 4096), np.float32))  # 64 MiB
        write_file(self.p("out.npy"), OLD)
        for _ in range(20):
            proc = subprocess.Popen([CLI, self.p("x.npy"), self.p("out.npy"), "--filter",
                                     "identity", "--mmap", "off"], stderr=subprocess.DEVNULL)
            caught = False
            while not caught and proc.poll() is None:
                caught = self.temp_fd(proc, missing_ok=True) is not None
            if caught:
                proc.kill()
            code = proc.wait(timeout=120)
            if caught and code == -signal.SIGKILL:
                self.assertEqual(sorted(os.listdir(self.tmp)), ["out.npy", "x.npy"])
                self.assertEqual(read_file(self.p("out.npy")), OLD)
                return
            write_file(self.p("out.npy"), OLD)
            self.no_temporaries()
        self.skipTest("no run was caught while saving (20 tries)")

    def test_input_truncated(self):
        """Another program truncates INPUT while it is mapped and read: the
        pages past the new end fail (SIGBUS), which ends the run with a
        message and exit 1; nothing written, no temporary file."""
        proc, err = self.start_blocked()
        size = os.path.getsize(self.p("x.npy"))
        os.truncate(self.p("x.npy"), 128)  # the header alone
        rest = err.read()
        code = proc.wait(timeout=60)
        self.assertEqual(code, 1, rest[-500:])
        self.assertIn("convolve: '%s' shrank while it was being read (128 bytes now, %d "
                      "expected): '%s' not written" % (self.p("x.npy"), size, self.p("out.npy")),
                      rest)
        self.assertEqual(rest.count("convolve: '"), 1, rest[-500:])
        self.assertEqual(read_file(self.p("out.npy")), OLD)
        self.no_temporaries()

    def test_output_pages_lost(self):
        """The temporary output file truncated while the result is written
        through its mapping (as a full disk would fail its pages): SIGBUS is
        caught, the run ends with exit 2, nothing written."""
        proc, err = self.start_blocked()
        fd = os.open(self.temp_fd(proc), os.O_WRONLY)
        os.ftruncate(fd, 0)
        os.close(fd)
        rest = err.read()
        code = proc.wait(timeout=60)
        self.assertEqual(code, 2, rest[-500:])
        self.assertIn("convolve: cannot save '%s': a page of its temporary file could not be "
                      "written through the mapping" % self.p("out.npy"), rest)
        self.assertEqual(read_file(self.p("out.npy")), OLD)
        self.no_temporaries()

    def test_replacing_keeps_mode_and_owner(self):
        """A replaced OUTPUT keeps its mode, and its owner and group where
        permitted (as root: any)."""
        np.save(self.p("x.npy"), random_array(self.rng, (30, 20), np.float32))
        write_file(self.p("out.npy"), OLD)
        os.chmod(self.p("out.npy"), 0o600)
        root = os.geteuid() == 0
        if root:
            os.chown(self.p("out.npy"), 12345, 23456)
        for mmap in ("on", "off"):
            with self.subTest(mmap=mmap):
                self.ok([self.p("x.npy"), self.p("out.npy"), "--filter", "box:1", "--mmap", mmap])
                st = os.stat(self.p("out.npy"))
                self.assertNotEqual(read_file(self.p("out.npy")), OLD)
                self.assertEqual(st.st_mode & 0o7777, 0o600)
                if root:
                    self.assertEqual((st.st_uid, st.st_gid), (12345, 23456))
        self.ok([self.p("x.npy"), self.p("new.npy"), "--filter", "box:1"])
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(os.stat(self.p("new.npy")).st_mode & 0o777, 0o644 & ~mask)
        self.no_temporaries()

    def test_dangling_link_refused(self):
        """As cp, a symbolic link OUTPUT to nothing is not written through:
        refused before any work (exit 1), the link left as it is."""
        np.save(self.p("x.npy"), random_array(self.rng, (30, 20), np.float32))
        os.symlink("nothere.npy", self.p("link.npy"))
        for mmap in ("on", "off"):
            with self.subTest(mmap=mmap):
                r = run([self.p("x.npy"), self.p("link.npy"), "--filter", "box:1", "--mmap",
                         mmap])
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn("is a symbolic link to 'nothere.npy', which does not exist",
                              r.stderr)
                self.assertTrue(os.path.islink(self.p("link.npy")))
                self.assertFalse(os.path.exists(self.p("nothere.npy")))
        self.no_temporaries()

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

    def test_cuda_run_populated_ahead(self):
        """--backend cuda on mapped files: the output's pages are faulted in
        by threads of the CLI while CUDA starts. With a GPU the result is the
        CPU backend's (to float32 rounding); without one the run fails as it
        would have, at once, and leaves no OUTPUT and no temporary file."""
        x = random_array(self.rng, (1031, 1024), np.float32)
        np.save(self.p("x.npy"), x)
        self.ok([self.p("x.npy"), self.p("cpu.npy"), "--filter", "gaussian:1.5", "--backend",
                 "cpu"])
        r = run([self.p("x.npy"), self.p("cuda.npy"), "--filter", "gaussian:1.5", "--backend",
                 "cuda"])
        m = re.search(r"\ndevices: (\d+)\n", self.ok(["info"]).stdout)
        gpus = int(m.group(1)) if m else 0
        if gpus and r.returncode == 0:
            np.testing.assert_allclose(np.load(self.p("cuda.npy")), np.load(self.p("cpu.npy")),
                                       rtol=1e-5, atol=1e-5)
        else:
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("CUDA", r.stderr)
            self.assertFalse(os.path.exists(self.p("cuda.npy")))
        self.no_temporaries()

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

    def test_input_stays_cached(self):
        """The pages given back as slabs finish leave the process, not the
        page cache: a 16 MiB input read in 4 MiB slabs is still cached after
        the run (mincore), so the next run or program does not read the disk
        again. (Only an input larger than half the memory leaves it.) The
        bound on resident memory holds with the file cached
        (test_peak_memory_bounded's file is)."""
        x = random_array(self.rng, (2048, 2048), np.float32)
        with open(self.p("in.npy"), "wb") as f:  # written back: clean pages (a dirty
            np.save(f, x)                            # page is never dropped)
            f.flush()
            os.fsync(f.fileno())
        with open(self.p("in.npy"), "rb") as f:  # in the page cache before the run
            while f.read(1 << 20):
                pass
        self.ok([self.p("in.npy"), self.p("out.npy"), "--filter", "box:1"],
                env=dict(os.environ, CONVOLVE_CPU_SLAB_BYTES="4M"))
        size = os.path.getsize(self.p("in.npy"))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        with open(self.p("in.npy"), "rb") as f:
            m = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)
            try:
                page = mmap.PAGESIZE
                vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
                addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
                rc = libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec)
                self.assertEqual(rc, 0, os.strerror(ctypes.get_errno()))
                cached = sum(v & 1 for v in vec) / len(vec)
                del addr
            finally:
                m.close()
        print("input pages in the page cache after the run: %.0f%%" % (100 * cached))
        self.assertGreater(cached, 0.9)
        ref = ndi.uniform_filter(x.astype(np.float64), 3, mode="reflect")
        np.testing.assert_allclose(np.load(self.p("out.npy")), ref, rtol=1e-5, atol=1e-4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
