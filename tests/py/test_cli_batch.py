"""test_cli_batch.py - `convolve INPUT... --output-dir DIR`: many files at once.

Each batch result is compared byte for byte with the single-file run
(`convolve INPUT OUTPUT` with the same options) and, for .npy data, with
scipy.ndimage; over .npy arrays of 1 to 3 dimensions and four element types,
PNG (8/16-bit gray, RGB, RGBA), JPEG, PGM and the bundled photo. Also: the
same bytes for any --jobs; one plan per distinct layout; the naming rules
(--suffix, --format, folders, names without extension); failing members (a
corrupt file, a missing or unreadable one, an output that cannot be written,
a result the format cannot hold, a filter the input cannot take) reported
one line each without stopping or corrupting the others, with the right exit
code, no partial or temporary files and old outputs untouched; the command's
own mistakes (colliding outputs, an output replacing an input, '-', a folder
as OUTPUT of the single-file form, ...) refused before any work;
--inputs-from; --wisdom shared by the workers; --backend cuda.
Run by CTest; skipped (77) without numpy/scipy unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import os
import re
import shutil
import struct
import zlib

from cli_support import CliCase, PHOTO, main, read_file, run, write_file

import numpy as np
import scipy.ndimage as ndi

SEED = int(os.environ.get("CONVOLVE_TEST_SEED", "0")) or np.random.SeedSequence().entropy % 2**32
print("test_cli_batch: seed %d (replay with CONVOLVE_TEST_SEED=%d)" % (SEED, SEED))

SUMMARY = re.compile(r"^convolve: (\d+) files?: (\d+) done, (\d+) failed; (\d+) plans?; "
                     r"[0-9]+\.[0-9]+ s$")


def png_rgba(a):
    """A minimal 8-bit RGBA PNG of a (H, W, 4) uint8 array."""
    h, w, _ = a.shape
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def summary(stderr):
    """(files, done, failed, plans) from the last line of stderr."""
    last = stderr.rstrip("\n").split("\n")[-1]
    m = SUMMARY.match(last)
    assert m, "no summary line in %r" % stderr
    return tuple(int(g) for g in m.groups())


class BatchCase(CliCase):
    def setUp(self):
        super().setUp()
        self.rng = np.random.default_rng(SEED + int.from_bytes(self.id().encode()[-4:], "little"))
        os.mkdir(self.path("in"))
        os.mkdir(self.path("out"))
        os.mkdir(self.path("single"))

    def inp(self, name):
        return self.path(os.path.join("in", name))

    def make_inputs(self):
        """Arrays and images of several layouts (two of one layout); returns
        the input paths and, for .npy ones, the arrays."""
        r = self.rng
        arrays = {
            "f64_a.npy": r.standard_normal((37, 41)) * 10,
            "f64_b.npy": r.standard_normal((37, 41)) * 10,      # the layout of f64_a
            "f32.npy": (r.standard_normal((37, 41)) * 10).astype(np.float32),
            "vol.npy": r.standard_normal((5, 6, 7)),
            "sig.npy": r.standard_normal(101),
            "u8.npy": r.integers(0, 256, (30, 20)).astype(np.uint8),
            "u16.npy": r.integers(0, 65536, (25, 26)).astype(np.uint16),
        }
        for name, a in arrays.items():
            np.save(self.inp(name), a)
        # images, made by the single-file form from arrays and the photo
        self.run_ok([self.inp("u8.npy"), self.inp("gray.png"), "--filter", "identity"])
        self.run_ok([self.inp("u16.npy"), self.inp("gray16.png"), "--filter", "identity"])
        self.run_ok([self.inp("u8.npy"), self.inp("gray.jpg"), "--filter", "identity"])
        self.run_ok([self.inp("u8.npy"), self.inp("gray.pgm"), "--filter", "identity"])
        write_file(self.inp("rgba.png"), png_rgba(r.integers(0, 256, (13, 17, 4))
                                                  .astype(np.uint8)))
        shutil.copy(PHOTO, self.inp("photo.jpg"))
        self.run_ok([PHOTO, self.inp("photo.png"), "--filter", "identity"])
        names = sorted(os.listdir(self.path("in")))
        return [self.inp(n) for n in names], arrays

    def single(self, inputs, args, out_name=lambda base: base):
        """Single-file runs of each input into single/; returns {name: bytes}."""
        got = {}
        for p in inputs:
            name = out_name(os.path.basename(p))
            self.run_ok([p, self.path(os.path.join("single", name))] + args)
            got[name] = read_file(self.path(os.path.join("single", name)))
        return got

    def batch(self, inputs, args, out="out", code=0):
        r = run(list(inputs) + ["--output-dir", self.path(out)] + args)
        self.assertEqual(r.returncode, code, "stderr: %s" % r.stderr)
        return r

    def outputs(self, out="out"):
        d = self.path(out)
        return {n: read_file(os.path.join(d, n)) for n in sorted(os.listdir(d))}


class SameAsSingleFile(BatchCase):
    def check(self, extra, batch_only=()):
        inputs, arrays = self.make_inputs()
        w = np.round(self.rng.uniform(-2, 2, 3), 3)
        write_file(self.path("w.txt"), " ".join(repr(float(v)) for v in w) + "\n")
        args = ["--weights", self.path("w.txt"), "--mode", "constant", "--cval", "1.5"] + extra
        r = self.batch(inputs, args + list(batch_only))
        n = len(inputs)
        self.assertEqual(summary(r.stderr)[:3], (n, n, 0))
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertEqual(r.stdout, "")
        got = self.outputs()
        self.assertEqual(sorted(got), sorted(os.path.basename(p) for p in inputs))
        want = self.single(inputs, args)
        for name in want:
            self.assertEqual(got[name], want[name], name)
        # and the arithmetic is scipy's (text weights get leading axes of 1)
        for name, x in arrays.items():
            out = np.load(self.path(os.path.join("out", name)))
            k = w.reshape((1,) * (x.ndim - 1) + (3,))
            ref = ndi.convolve(x.astype(np.float64), k, mode="constant", cval=1.5)
            if x.dtype.kind == "u":  # rounded once, from sums that may be float32
                ref = np.clip(np.rint(ref), 0, np.iinfo(x.dtype).max)
                self.assertEqual(out.dtype, x.dtype, name)
                self.assertLessEqual(int(np.abs(out.astype(np.int64) - ref).max()), 1, name)
            else:
                self.assertEqual(out.dtype, x.dtype, name)
                eps = 1e-12 if x.dtype == np.float64 else 4 * np.finfo(np.float32).eps
                scale = np.abs(w).sum() * max(np.abs(x).max(), 1.5)
                self.assertLessEqual(float(np.abs(out - ref).max()), eps * scale, name)

    def test_auto_backend(self):
        self.check([])

    def test_cpu_backend_one_thread_each(self):
        self.check(["--backend", "cpu", "--threads", "1"], ["--jobs", "3"])

    def test_parallel_jobs_give_the_same_bytes(self):
        inputs, _ = self.make_inputs()
        args = ["--filter", "gaussian:1.5", "--mode", "mirror"]
        results = []
        for i, jobs in enumerate(([], ["--jobs", "1"], ["-j", "2"], ["--jobs=5"], ["--jobs", "0"],
                                  ["--jobs", "64"])):
            out = "out%d" % i
            os.mkdir(self.path(out))
            r = self.batch(inputs, args + jobs, out=out)
            files, done, failed, plans = summary(r.stderr)
            self.assertEqual((files, done, failed), (len(inputs), len(inputs), 0))
            if jobs == ["--jobs", "1"]:
                # one plan per distinct layout: f64_a and f64_b share one;
                # u8.npy, gray.png, gray.jpg and gray.pgm one; u16.npy and
                # gray16.png one; photo.jpg and photo.png one
                self.assertEqual(plans, len(inputs) - 6, r.stderr)
            results.append(self.outputs(out))
        for other in results[1:]:
            self.assertEqual(other, results[0])

    def test_photo_png_and_jpeg(self):
        shutil.copy(PHOTO, self.inp("hopper.jpg"))
        self.run_ok([PHOTO, self.inp("hopper_png.png"), "--filter", "identity"])
        self.run_ok([PHOTO, self.inp("hopper_q60.jpg"), "--filter", "identity",
                     "--quality", "60"])
        inputs = [self.inp(n) for n in ("hopper.jpg", "hopper_png.png", "hopper_q60.jpg")]
        args = ["--filter", "gaussian:2"]
        # JPEG and PNG outputs, each as the input's own format
        self.batch(inputs, args + ["--jobs", "3"])
        self.assertEqual(self.outputs(), self.single(inputs, args))
        # all as PNG, with a suffix
        shutil.rmtree(self.path("out"))
        os.mkdir(self.path("out"))
        r = self.batch(inputs, args + ["--format", "png", "--suffix", "_blur"])
        self.assertEqual(summary(r.stderr)[:3], (3, 3, 0))
        want = self.single(inputs, args, lambda b: os.path.splitext(b)[0] + "_blur.png")
        self.assertEqual(self.outputs(), want)
        try:
            import cv2
        except ImportError:
            return
        ours = cv2.imread(self.path("out/hopper_blur.png"), cv2.IMREAD_UNCHANGED)
        img = cv2.imread(PHOTO, cv2.IMREAD_UNCHANGED)
        self.assertEqual(ours.shape, img.shape)
        t = np.arange(-8, 9, dtype=np.float64)
        g = np.exp(-0.5 * t * t / 4.0)
        k = np.outer(g, g) / g.sum() ** 2
        for c in range(3):
            ref = np.rint(cv2.filter2D(img[:, :, c].astype(np.float64), cv2.CV_64F, k,
                                       borderType=cv2.BORDER_REFLECT))
            self.assertLessEqual(int(np.abs(ours[:, :, c] - ref).max()), 1, "channel %d" % c)


class Naming(BatchCase):
    def test_names(self):
        x = self.rng.standard_normal((9, 8))
        os.mkdir(self.path("in/sub"))
        for name in ("a.npy", "sub/b.npy", ".hidden.npy", "noext", "two.dots.npy"):
            np.save(self.inp(name), x)
            if not name.endswith(".npy"):  # np.save appends .npy
                os.rename(self.inp(name) + ".npy", self.inp(name))
        inputs = [self.inp(n) for n in ("a.npy", "sub/b.npy", ".hidden.npy", "noext",
                                        "two.dots.npy")]
        # a name without extension needs --format
        r = self.batch(inputs, ["--filter", "box:1"], code=1)
        self.assertIn("cannot tell the output format for INPUT '%s'" % inputs[3], r.stderr)
        self.assertEqual(os.listdir(self.path("out")), [])
        self.batch(inputs, ["--filter", "box:1", "--format", "npy", "--suffix", "-s"])
        self.assertEqual(sorted(os.listdir(self.path("out"))),
                         sorted(["a-s.npy", "b-s.npy", ".hidden-s.npy", "noext-s.npy",
                                 "two.dots-s.npy"]))
        ref = ndi.convolve(x, np.full((3, 3), 1 / 9))
        for name in os.listdir(self.path("out")):
            np.testing.assert_allclose(np.load(self.path("out/" + name)), ref, rtol=0,
                                       atol=1e-12)
        # --format with a dot and in capitals; DIR with a trailing slash
        r = run([self.inp("a.npy"), "--output-dir", self.path("out") + "/", "--filter", "box:1",
                 "--format", ".TXT"])
        self.assertEqual(r.returncode, 0, r.stderr)
        np.testing.assert_allclose(np.loadtxt(self.path("out/a.TXT")), ref, rtol=0, atol=1e-9)


class FailingMembers(BatchCase):
    def setUp(self):
        super().setUp()
        r = self.rng
        self.good = {"g1.npy": r.standard_normal((20, 30)), "g2.npy": r.standard_normal((20, 30)),
                     "g3.npy": r.standard_normal((8, 9, 10)), "g4.npy": r.standard_normal(50)}
        for name, a in self.good.items():
            np.save(self.inp(name), a)
        self.run_ok([self.inp("g1.npy"), self.inp("img.png"), "--filter", "identity",
                     "--output-dtype", "uint8"])
        png = read_file(self.inp("img.png"))
        write_file(self.inp("truncated.png"), png[:len(png) // 2])
        write_file(self.inp("corrupt.npy"), b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}\n")
        self.old = b"an old output: must survive\n"

    def good_names(self):
        return sorted(self.good) + ["img.png"]

    def run_with(self, bad, extra_args, code):
        """Runs good and bad inputs; checks the good outputs equal single-file
        runs, one line per bad one, the summary, and no other file in out/."""
        good = [self.inp(n) for n in self.good_names()]
        inputs = good[:2] + bad + good[2:]  # failures in the middle
        before = set(os.listdir(self.path("out")))
        args = ["--filter", "gaussian:1", "--jobs", "3"] + extra_args
        r = self.batch(inputs, args, code=code)
        lines = r.stderr.rstrip("\n").split("\n")
        self.assertEqual(summary(r.stderr)[:3], (len(inputs), len(good), len(bad)))
        self.assertEqual(len(lines), len(bad) + 1, r.stderr)
        for p in bad:
            self.assertEqual(sum(ln.startswith("convolve: %s: " % p) for ln in lines), 1,
                             "%s: %s" % (p, r.stderr))
        want = self.single(good, args[:2])
        got = self.outputs()
        for name in want:
            self.assertEqual(got[name], want[name], name)
        self.assertEqual(set(got), set(want) | before, "files left in out/")
        return r

    def test_bad_files(self):
        # an old output of a failing member stays byte-identical
        write_file(self.path("out/truncated.png"), self.old)
        bad = [self.inp("truncated.png"), self.inp("corrupt.npy"), self.inp("missing.npy")]
        r = self.run_with(bad, [], 1)
        self.assertIn("malformed PNG", r.stderr)
        self.assertIn("No such file or directory", r.stderr)
        self.assertEqual(read_file(self.path("out/truncated.png")), self.old)

    def test_unwritable_output_is_exit_2(self):
        # an output path taken by a folder cannot be written; a bad file too:
        # the worst code (2) is the exit status
        os.mkdir(self.path("out/g2.npy"))
        good = [self.inp(n) for n in self.good_names()]
        r = self.batch(good + [self.inp("corrupt.npy")], ["--filter", "gaussian:1"], code=2)
        self.assertEqual(summary(r.stderr)[:3], (len(good) + 1, len(good) - 1, 2))
        self.assertRegex(r.stderr, r"convolve: %s: .*not a regular file" % re.escape(good[1]))
        self.assertTrue(os.path.isdir(self.path("out/g2.npy")))
        self.assertEqual(sorted(os.listdir(self.path("out"))), self.good_names())

    def test_results_the_format_or_filter_cannot_take(self):
        # 1-D and 3-D results as PNG; sobel-x on 1-D and 3-D inputs: those
        # fail, the 2-D ones go on
        good = [self.inp(n) for n in ("g1.npy", "g2.npy", "img.png")]
        bad = [self.inp("g3.npy"), self.inp("g4.npy")]
        r = self.batch(good + bad, ["--filter", "box:1", "--format", "png"], code=1)
        self.assertEqual(summary(r.stderr)[:3], (5, 3, 2))
        self.assertIn("image files hold 2-D images", r.stderr)
        r = self.batch(good + bad, ["--filter", "sobel-x", "--format", "npy", "--suffix", "_s"],
                       code=1)
        self.assertEqual(summary(r.stderr)[:3], (5, 3, 2))
        self.assertIn("is 2-D", r.stderr)
        self.assertEqual(sorted(os.listdir(self.path("out"))),
                         ["g1.png", "g1_s.npy", "g2.png", "g2_s.npy", "img.png", "img_s.npy"])


class Unreadable(BatchCase):
    def test_unreadable_member(self):
        x = self.rng.standard_normal((6, 7))
        np.save(self.inp("ok.npy"), x)
        np.save(self.inp("secret.npy"), x)
        os.chmod(self.inp("secret.npy"), 0)
        kw = {}
        if os.geteuid() == 0:  # root reads any file: run the CLI as nobody
            for d in (self.tmp, self.path("in"), self.path("out")):
                os.chmod(d, 0o777)
            os.chmod(self.inp("ok.npy"), 0o644)
            import subprocess
            from cli_support import CLI, NOBODY, nobody_cannot_run
            why = nobody_cannot_run()
            if why:
                self.skipTest("running as root, and " + why)
            kw = dict(user=NOBODY, group=NOBODY, extra_groups=[])
            r = subprocess.run([CLI, self.inp("secret.npy"), self.inp("ok.npy"), "--output-dir",
                                self.path("out"), "--filter", "box:1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, **kw)
        else:
            r = run([self.inp("secret.npy"), self.inp("ok.npy"), "--output-dir",
                     self.path("out"), "--filter", "box:1"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"convolve: %s: .*Permission denied"
                         % re.escape(self.inp("secret.npy")))
        self.assertEqual(summary(r.stderr)[:3], (2, 1, 1))
        self.assertEqual(os.listdir(self.path("out")), ["ok.npy"])


class Replacing(BatchCase):
    """What replacing an output keeps, and the links it does not follow."""

    def test_mode_kept_and_dangling_link_refused(self):
        x = self.rng.standard_normal((6, 7))
        np.save(self.inp("a.npy"), x)
        np.save(self.inp("b.npy"), x)
        write_file(self.path("out/a.npy"), b"old")
        os.chmod(self.path("out/a.npy"), 0o600)
        os.symlink("nothere.npy", self.path("out/b.npy"))
        r = self.batch([self.inp("a.npy"), self.inp("b.npy")], ["--filter", "box:1"], code=2)
        self.assertEqual(summary(r.stderr)[:3], (2, 1, 1))
        self.assertIn("convolve: %s: cannot save '%s': it is a symbolic link to 'nothere.npy', "
                      "which does not exist" % (self.inp("b.npy"), self.path("out/b.npy")),
                      r.stderr)
        self.assertEqual(os.stat(self.path("out/a.npy")).st_mode & 0o7777, 0o600)
        self.assertNotEqual(read_file(self.path("out/a.npy")), b"old")
        self.assertTrue(os.path.islink(self.path("out/b.npy")))
        self.assertEqual(sorted(os.listdir(self.path("out"))), ["a.npy", "b.npy"])


class CommandRefused(BatchCase):
    """Mistakes of the command itself: one line, nothing written, no summary."""

    def refused(self, args, code, needle, cwd=None):
        before = sorted(os.listdir(self.path("out")))
        r = run(args, cwd=cwd)
        self.assertEqual(r.returncode, code, "%s\nstderr: %s" % (args, r.stderr))
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("convolve: "), r.stderr)
        self.assertIn(needle, r.stderr)
        self.assertEqual(sorted(os.listdir(self.path("out"))), before, args)

    def test_refused(self):
        x = self.rng.standard_normal((6, 7))
        for n in ("a.npy", "b.npy", "a_x.npy"):
            np.save(self.inp(n), x)
        os.mkdir(self.path("in/sub"))
        np.save(self.inp("sub/a.npy"), x)
        a, b = self.inp("a.npy"), self.inp("b.npy")
        out = self.path("out")
        f = ["--filter", "box:1"]
        c = self.refused
        c([a, b, self.inp("a_x.npy")] + f, 1, "to convolve many files, give --output-dir")
        c([a, out] + f, 1, "is a folder")
        c([a, out + "/"] + f, 1, "is a folder")
        c([a, b, "--suffix", "_x"] + f, 1, "--suffix applies to many files")
        c([a, b, "--jobs", "2"] + f, 1, "--jobs applies to many files")
        c([a, "--output-dir", out, "--time"] + f, 1, "--time")
        c([a, "--output-dir", out, "--repeat", "3"] + f, 1, "--repeat")
        c([a, "--output-dir", out, "--warmup", "3"] + f, 1, "--warmup")
        c([a, "--output-dir", self.path("nope")] + f, 2, "No such file or directory")
        c([a, "--output-dir", b] + f, 2, "Not a directory")
        c([a, a, "--output-dir", out] + f, 1, "is given twice")
        c([a, self.inp("sub/a.npy"), "--output-dir", out] + f, 1, "would both be written")
        c([a, "--output-dir", self.path("in")] + f, 1, "would replace it")
        c(["a.npy", "--output-dir", "."] + f, 1, "would replace it", cwd=self.path("in"))
        c([a, self.inp("a_x.npy"), "--output-dir", self.path("in"), "--suffix", "_x", "--force"]
          + f, 1, "would replace the INPUT")
        os.remove(self.inp("a_x.npy"))  # also when that input does not exist (yet)
        c([a, self.inp("a_x.npy"), "--output-dir", self.path("in"), "--suffix", "_x"] + f, 1,
          "would replace the INPUT")
        np.save(self.inp("w.npy"), np.ones((3, 3)))
        c([self.inp("w.npy"), "--output-dir", out, "--format", "npy", "--weights",
           out + "/w.npy"], 1, "would replace the weights file")
        c([a, "-", "--output-dir", out] + f, 1, "'-' cannot be one of many INPUTs")
        c(["--output-dir", out] + f, 1, "no INPUT given")
        c([a, "--output-dir", out], 1, "no filter")
        c([a, "--output-dir", out, "--filter", "blur:3"], 1, "unknown filter 'blur:3'")
        c([a, "--output-dir", out, "--weights", self.path("nope.txt")], 1, "cannot open weights")
        c([a, "--output-dir", out, "--format", "xyz"] + f, 1, "unknown --format 'xyz'")
        c([a, "--output-dir", out, "--suffix", "x/y"] + f, 1, "holds a '/'")
        c([a, "--output-dir", out, "--jobs", "-1"] + f, 1, "--jobs '-1'")
        c([a, "--output-dir", out, "--inputs-from", self.path("nope.txt")] + f, 1,
          "No such file or directory")
        # --force: each result replaces its own input, read whole first
        single = self.path("single/a.npy")
        self.run_ok([a, single] + f)
        r = run([a, b, "--output-dir", self.path("in"), "--force"] + f)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read_file(a), read_file(single))
        self.assertEqual(read_file(b), read_file(single))  # b held the same data

    def test_outputs_one_file_through_a_link(self):
        """Two outputs of other names that are one file (a symbolic link in
        the output folder, a dangling one too) are refused before any work,
        naming both inputs; so are one name from two folders and two
        extensions made one by --format."""
        x = self.rng.standard_normal((6, 7))
        np.save(self.inp("a.npy"), x)
        np.save(self.inp("b.npy"), x)
        os.mkdir(self.path("in/sub"))
        np.save(self.inp("sub/a.npy"), x)
        a, b, out, f = self.inp("a.npy"), self.inp("b.npy"), self.path("out"), ["--filter",
                                                                              "box:1"]
        self.run_ok([a, self.inp("a.png"), "--filter", "identity", "--output-dtype", "uint8"])
        os.symlink("a.npy", self.path("out/b.npy"))  # dangling until a.npy is written
        want = ("INPUTs '%s' and '%s' would both be written to '%s' ('%s' and '%s' are one "
                "file, through a symbolic link)" % (a, b, os.path.realpath(out) + "/a.npy",
                                                    out + "/a.npy", out + "/b.npy"))
        self.refused([a, b, "--output-dir", out] + f, 1, want)
        self.refused([b, a, "--output-dir", out] + f, 1, "INPUTs '%s' and '%s'" % (b, a))
        write_file(self.path("out/a.npy"), b"old")
        self.refused([a, b, "--output-dir", out] + f, 1, want)
        self.assertEqual(read_file(self.path("out/a.npy")), b"old")
        self.refused([a, self.inp("sub/a.npy"), "--output-dir", out, "--suffix", ""] + f, 1,
                     "INPUTs '%s' and '%s' would both be written to '%s/a.npy'"
                     % (a, self.inp("sub/a.npy"), out))
        self.refused([a, self.inp("a.png"), "--output-dir", out, "--format", "npy"] + f, 1,
                     "INPUTs '%s' and '%s' would both be written" % (a, self.inp("a.png")))

    def test_cuda_backend(self):
        x = self.rng.standard_normal((40, 50)).astype(np.float32)
        for n in ("a.npy", "b.npy"):
            np.save(self.inp(n), x)
        info = run(["info"]).stdout
        inputs = [self.inp("a.npy"), self.inp("b.npy")]
        args = ["--filter", "gaussian:2", "--backend", "cuda"]
        if "\ngpu: none" in info:
            built = "cuda (built)" in info
            self.refused(inputs + ["--output-dir", self.path("out")] + args, 2 if built else 1,
                         "no GPU can be used" if built else "built without CUDA")
            return
        # one GPU context: the same bytes as the single-file runs
        r = self.batch(inputs, args + ["--jobs", "2"])
        self.assertEqual(summary(r.stderr), (2, 2, 0, 1))
        self.assertEqual(self.outputs(), self.single(inputs, args))


class InputsFrom(BatchCase):
    def test_lists(self):
        x = self.rng.standard_normal((6, 7))
        names = ["a.npy", "b c.npy", "d.npy"]
        for n in names:
            np.save(self.inp(n), x)
        self.run_ok([self.inp("a.npy"), self.path("single/a.npy"), "--filter", "box:1"])
        want = read_file(self.path("single/a.npy"))
        # a file of lines, with an empty line; names relative to the current folder
        write_file(self.path("list.txt"), "in/a.npy\n\nin/b c.npy\n")
        r = run(["--inputs-from", "list.txt", "--output-dir", "out", "--filter", "box:1",
                 "in/d.npy"], cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(summary(r.stderr)[:3], (3, 3, 0))
        self.assertEqual(self.outputs(), {n: want for n in names})
        # NUL-separated names on standard input
        import subprocess
        from cli_support import CLI
        shutil.rmtree(self.path("out"))
        os.mkdir(self.path("out"))
        r = subprocess.run([CLI, "--inputs-from", "-", "--output-dir", self.path("out"),
                            "--filter", "box:1", "--suffix", "_b"],
                           input=b"".join(self.inp(n).encode() + b"\0" for n in names),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.outputs(), {n[:-4] + "_b.npy": want for n in names})
        # an empty list is nothing to do
        r = subprocess.run([CLI, "--inputs-from", "-", "--output-dir", self.path("out"),
                            "--filter", "box:1"], input=b"", stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120, text=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(summary(r.stderr.decode()), (0, 0, 0, 0))


class Wisdom(BatchCase):
    def test_workers_share_a_wisdom_file(self):
        r = self.rng
        shapes = [(30, 31), (60, 70), (9, 10, 11), (200,)]
        arrays = {}
        for i, s in enumerate(shapes * 2):
            arrays["x%d.npy" % i] = r.standard_normal(s)
            np.save(self.inp("x%d.npy" % i), arrays["x%d.npy" % i])
        inputs = [self.inp(n) for n in sorted(arrays)]
        wisdom = self.path("wisdom.txt")
        res = self.batch(inputs, ["--filter", "box:2", "--wisdom", wisdom, "--jobs", "3",
                                  "--backend", "cpu", "--threads", "1"])
        self.assertEqual(summary(res.stderr)[:3], (8, 8, 0))
        lines = [ln for ln in read_file(wisdom).decode().split("\n")[1:] if ln]
        self.assertEqual(len(lines), len(shapes), lines)   # one class per shape, merged
        for name, x in arrays.items():
            ref = ndi.convolve(x, np.full((5,) * x.ndim, 1.0 / 5 ** x.ndim))
            np.testing.assert_allclose(np.load(self.path("out/" + name)), ref, rtol=0,
                                       atol=1e-12 * 5 ** x.ndim * np.abs(x).max())
        # a second run finds everything there and leaves the file as it was
        before = read_file(wisdom)
        self.batch(inputs, ["--filter", "box:2", "--wisdom", wisdom, "--jobs", "2",
                            "--backend", "cpu", "--threads", "1"])
        self.assertEqual(read_file(wisdom), before)


if __name__ == "__main__":
    main()
