"""test_cli.py - the convolve CLI's successful paths, against scipy and OpenCV.

Acceptance 1: `convolve in.npy out.npy --weights w.npy --mode M --cval C
--origin O [--correlate] --backend cpu` equals scipy.ndimage.correlate/convolve
for every mode, dims 1-3, odd and even weights, random origins and weights
longer than the input (float64 to 1e-12 of the terms' magnitude, float32 to
float32 rounding); integer outputs equal numpy's rint + clip.
Acceptance 2: `convolve photo.jpg out.png --filter gaussian:2` equals OpenCV's
filter2D (17x17 Gaussian, BORDER_REFLECT) per channel within 1 grey level.
Also: images per channel, text weights, named filters, format round trips,
--time, --help/--version/info/demo, GNU option forms.
Run by CTest; skipped (77) without numpy/scipy unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import os
import re
import unittest

from cli_support import CLI, CliCase, PHOTO, DATA_DIR, main, read_file, run, write_file

import numpy as np
import scipy.ndimage as ndi

MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
SEED = int(os.environ.get("CONVOLVE_TEST_SEED", "0")) or np.random.SeedSequence().entropy % 2**32
print("test_cli: seed %d (replay with CONVOLVE_TEST_SEED=%d)" % (SEED, SEED))


def scipy_ref(x, w, mode, cval, origin, correlate):
    f = ndi.correlate if correlate else ndi.convolve
    return f(x, w, mode=mode, cval=cval, origin=origin)


class Acceptance(CliCase):
    """scipy.ndimage, case by case, through files."""

    def one(self, rng, ndim, dtype, mode, correlate, long_weights=False, parity=None):
        """One random case; parity 1 or 0 makes every filter extent odd or even."""
        shape = tuple(int(rng.integers(1, {1: 40, 2: 13, 3: 7}[ndim])) for _ in range(ndim))
        if long_weights:
            kshape = tuple(int(s + rng.integers(1, 6)) for s in shape)
        elif parity is None:
            kshape = tuple(int(rng.integers(1, 8)) for _ in range(ndim))
        else:
            kshape = tuple(int(2 * rng.integers(0 if parity else 1, 4) + parity)
                           for _ in range(ndim))
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        w = rng.standard_normal(kshape)
        origin = [int(rng.integers(-(k // 2), (k - 1) // 2 + 1)) for k in kshape]
        cval = float(np.round(rng.uniform(-5, 5), 3))
        np.save(self.path("in.npy"), x)
        np.save(self.path("w.npy"), w)
        args = [self.path("in.npy"), self.path("out.npy"), "--weights", self.path("w.npy"),
                "--mode", mode, "--cval", repr(cval),
                "--origin", ",".join(str(o) for o in origin), "--backend", "cpu"]
        if correlate:
            args.append("--correlate")
        self.run_ok(args)
        out = np.load(self.path("out.npy"))
        ref = scipy_ref(x, w, mode, cval, origin, correlate)
        what = "%s %s %s %s x%s w%s origin %s cval %g" % (
            "correlate" if correlate else "convolve", mode, np.dtype(dtype).name, ndim, shape,
            kshape, origin, cval)
        self.assertEqual(out.dtype, x.dtype, what)
        self.assertEqual(out.shape, x.shape, what)
        scale = np.abs(w).sum() * max(np.abs(x).max(), abs(cval), 1e-300)
        eps = 1e-12 if dtype == np.float64 else 4 * np.finfo(np.float32).eps
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64)).max()
        self.assertLessEqual(err, eps * scale, what)

    def test_every_mode_dims_dtype_and_parity(self):
        rng = np.random.default_rng(SEED)
        for mode in MODES:
            for ndim in (1, 2, 3):
                for dtype in (np.float64, np.float32):
                    for correlate in (False, True):
                        for parity in (1, 0):
                            self.one(rng, ndim, dtype, mode, correlate, parity=parity)

    def test_weights_longer_than_the_input(self):
        rng = np.random.default_rng(SEED + 1)
        for mode in MODES:
            for ndim in (1, 2, 3):
                self.one(rng, ndim, np.float64, mode, bool(rng.integers(2)), long_weights=True)

    def test_random_cases(self):
        rng = np.random.default_rng(SEED + 2)
        for _ in range(40):
            self.one(rng, int(rng.integers(1, 4)), np.float64, MODES[rng.integers(5)],
                     bool(rng.integers(2)))

    def test_integer_outputs_round_like_numpy(self):
        # integer data and weights in quarters: every sum is exact, ties included
        rng = np.random.default_rng(SEED + 3)
        for mode in MODES:
            for out_dtype, hi in (("uint8", 255), ("uint16", 65535)):
                shape = (int(rng.integers(3, 12)), int(rng.integers(3, 12)))
                scale = 1 if out_dtype == "uint8" else 256
                x = rng.integers(-40, 300, shape).astype(np.float64) * scale
                w = rng.integers(-2, 5, (int(rng.integers(1, 5)), int(rng.integers(1, 5)))) / 4.0
                np.save(self.path("in.npy"), x)
                np.save(self.path("w.npy"), w)
                self.run_ok([self.path("in.npy"), self.path("out.npy"), "--weights",
                             self.path("w.npy"), "--mode", mode, "--cval", "3.5",
                             "--output-dtype", out_dtype, "--backend", "cpu"])
                out = np.load(self.path("out.npy"))
                ref = np.clip(np.rint(ndi.convolve(x, w, mode=mode, cval=3.5)), 0, hi)
                self.assertEqual(out.dtype, np.dtype(out_dtype))
                np.testing.assert_array_equal(out, ref.astype(out_dtype), "%s %s" % (mode,
                                                                                     out_dtype))
        # uint8 in, uint8 out (the default output type is the input's)
        x = rng.integers(0, 256, (9, 10)).astype(np.uint8)
        np.save(self.path("in.npy"), x)
        w = np.array([[0.5, 0.5]])
        np.save(self.path("w.npy"), w)
        self.run_ok([self.path("in.npy"), self.path("out.npy"), "--weights", self.path("w.npy"),
                     "--correlate"])
        out = np.load(self.path("out.npy"))
        ref = np.clip(np.rint(ndi.correlate(x.astype(np.float64), w)), 0, 255)
        self.assertEqual(out.dtype, np.uint8)
        np.testing.assert_array_equal(out, ref)


class OpenCV(CliCase):
    def test_gaussian_on_the_photo_matches_opencv(self):
        try:
            import cv2
        except ImportError:
            self.skipTest("OpenCV (cv2) is not installed in this python")
        self.assertTrue(os.path.exists(PHOTO), PHOTO)
        out = self.path("out.png")
        self.run_ok([PHOTO, out, "--filter", "gaussian:2"])
        ours = cv2.imread(out, cv2.IMREAD_UNCHANGED)
        img = cv2.imread(PHOTO, cv2.IMREAD_UNCHANGED)
        self.assertEqual(ours.shape, img.shape)
        self.assertEqual(ours.dtype, np.uint8)
        sigma, radius = 2.0, int(4 * 2.0 + 0.5)
        t = np.arange(-radius, radius + 1, dtype=np.float64)
        g = np.exp(-0.5 * t * t / sigma ** 2)
        g /= g.sum()
        k = np.outer(g, g)
        self.assertEqual(k.shape, (17, 17))
        for c in range(img.shape[2]):
            ref = cv2.filter2D(img[:, :, c].astype(np.float64), cv2.CV_64F, k,
                               borderType=cv2.BORDER_REFLECT)
            ref = np.clip(np.rint(ref), 0, 255)
            diff = np.abs(ours[:, :, c].astype(np.int32) - ref.astype(np.int32))
            self.assertLessEqual(int(diff.max()), 1, "channel %d: max difference %d at %s" % (
                c, diff.max(), np.unravel_index(diff.argmax(), diff.shape)))


class Images(CliCase):
    def test_png_channels_each_filtered(self):
        rng = np.random.default_rng(SEED + 4)
        import zlib
        import struct

        def png(path, a):  # minimal RGBA writer, so the test does not need cv2
            h, w, c = a.shape
            raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))

            def chunk(t, d):
                return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
            data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0,
                                                                      0, 0))
            data += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
            write_file(path, data)
        a = rng.integers(0, 256, (11, 14, 4)).astype(np.uint8)
        png(self.path("in.png"), a)
        self.run_ok([self.path("in.png"), self.path("out.npy"), "--filter", "box:1",
                     "--output-dtype", "float64", "--mode", "nearest"])
        out = np.load(self.path("out.npy"))
        self.assertEqual(out.shape, (11, 14, 4))
        for c in range(4):
            ref = ndi.convolve(a[:, :, c].astype(np.float64), np.full((3, 3), 1 / 9), mode="nearest")
            np.testing.assert_allclose(out[:, :, c], ref, rtol=0, atol=1e-12)
        # PNG out keeps 4 channels, rounded
        self.run_ok([self.path("in.png"), self.path("out.png"), "--filter", "box:1"])
        self.run_ok([self.path("out.png"), self.path("back.npy"), "--filter", "identity"])
        back = np.load(self.path("back.npy"))
        np.testing.assert_array_equal(back, np.clip(np.rint(out), 0, 255).astype(np.uint8))

    def test_pnm_round_trips(self):
        rng = np.random.default_rng(SEED + 5)
        for name, shape, maxval in (("g.pgm", (7, 9), 255), ("c.ppm", (5, 6, 3), 255),
                                    ("g16.pgm", (4, 5), 65535)):
            a = rng.integers(0, maxval + 1, shape)
            kind = "P5" if len(shape) == 2 else "P6"
            raw = a.astype(">u2" if maxval > 255 else np.uint8).tobytes()
            data = ("%s\n# made by test_cli\n%d %d\n%d\n" % (kind, shape[1], shape[0], maxval)
                    ).encode() + raw
            write_file(self.path(name), data)
            out = self.path("out_" + name)
            self.run_ok([self.path(name), out, "--filter", "identity"])
            self.assertEqual(read_file(out)[-len(raw):], raw, name)
            self.run_ok([out, self.path("back.npy"), "--filter", "identity"])
            back = np.load(self.path("back.npy"))
            np.testing.assert_array_equal(back, a, name)
            self.assertEqual(back.dtype, np.uint16 if maxval > 255 else np.uint8)
        # ASCII P2 in, P5 out
        write_file(self.path("a.pgm"), "P2\n3 2\n# c\n255\n1 2 3\n4 5 6\n")
        self.run_ok([self.path("a.pgm"), self.path("b.pgm"), "--filter", "identity"])
        self.assertEqual(read_file(self.path("b.pgm")), b"P5\n3 2\n255\n\x01\x02\x03\x04\x05\x06")

    def test_png_round_trip_and_jpeg(self):
        rng = np.random.default_rng(SEED + 6)
        x = rng.integers(0, 256, (20, 30)).astype(np.uint8)
        np.save(self.path("g.npy"), x)
        self.run_ok([self.path("g.npy"), self.path("g.png"), "--filter", "identity"])
        self.run_ok([self.path("g.png"), self.path("g2.npy"), "--filter", "identity"])
        np.testing.assert_array_equal(np.load(self.path("g2.npy")), x)
        x16 = rng.integers(0, 65536, (6, 7)).astype(np.uint16)
        np.save(self.path("h.npy"), x16)
        self.run_ok([self.path("h.npy"), self.path("h.png"), "--filter", "identity"])
        self.run_ok([self.path("h.png"), self.path("h2.npy"), "--filter", "identity"])
        np.testing.assert_array_equal(np.load(self.path("h2.npy")), x16)
        # the photo through JPEG: 3 channels, the photo's size
        self.run_ok([PHOTO, self.path("p.npy"), "--filter", "identity"])
        p = np.load(self.path("p.npy"))
        self.assertEqual(p.dtype, np.uint8)
        self.assertEqual(p.ndim, 3)
        self.assertEqual(p.shape[2], 3)
        self.run_ok([PHOTO, self.path("p.jpg"), "--filter", "gaussian:1", "--quality", "80"])
        self.assertEqual(read_file(self.path("p.jpg"))[:3], b"\xff\xd8\xff")

    def test_float_to_image_defaults_to_uint8(self):
        x = np.linspace(-20, 280, 5 * 7).reshape(5, 7)
        np.save(self.path("f.npy"), x)
        self.run_ok([self.path("f.npy"), self.path("f.png"), "--filter", "identity"])
        self.run_ok([self.path("f.png"), self.path("f2.npy"), "--filter", "identity"])
        np.testing.assert_array_equal(np.load(self.path("f2.npy")),
                                      np.clip(np.rint(x), 0, 255).astype(np.uint8))


class Weights(CliCase):
    def test_text_weights_get_leading_axes(self):
        rng = np.random.default_rng(SEED + 7)
        x = rng.standard_normal((8, 9))
        np.save(self.path("x.npy"), x)
        write_file(self.path("w.txt"), "# a row\n1 2.5 -1\n")
        self.run_ok([self.path("x.npy"), self.path("o.npy"), "--weights", self.path("w.txt"),
                     "--mode", "wrap"])
        ref = ndi.convolve(x, np.array([[1, 2.5, -1]]), mode="wrap")
        np.testing.assert_allclose(np.load(self.path("o.npy")), ref, rtol=0, atol=1e-12)
        # 2-D text weights on a 3-D volume; a file name without extension
        v = rng.standard_normal((4, 5, 6))
        np.save(self.path("v.npy"), v)
        write_file(self.path("kernel"), "1 2\n3 4\n\n")
        self.run_ok([self.path("v.npy"), self.path("o.npy"), "--weights", self.path("kernel"),
                     "--correlate", "--mode", "mirror"])
        ref = ndi.correlate(v, np.array([[[1, 2], [3, 4]]], float), mode="mirror")
        np.testing.assert_allclose(np.load(self.path("o.npy")), ref, rtol=0, atol=1e-12)
        # 3-D text weights (planes)
        write_file(self.path("k3.txt"), "1 0\n0 1\n\n2 0\n0 -1\n")
        self.run_ok([self.path("v.npy"), self.path("o.npy"), "--weights", self.path("k3.txt")])
        k3 = np.array([[[1, 0], [0, 1]], [[2, 0], [0, -1]]], float)
        np.testing.assert_allclose(np.load(self.path("o.npy")), ndi.convolve(v, k3),
                                   rtol=0, atol=1e-12)

    def test_weights_through_a_pipe_or_fifo(self):
        """Weights read from /dev/stdin, a FIFO or a process substitution's
        pipe are the file's weights: they are read once (a reader that
        looked at the head, closed and opened again lost the first 4096
        bytes, or hung on a FIFO)."""
        import subprocess
        import threading
        rng = np.random.default_rng(SEED + 9)
        x = rng.standard_normal((40, 30))
        np.save(self.path("x.npy"), x)
        w = rng.standard_normal((128, 3))   # 128 rows of text: past 4096 bytes
        text = "".join("%.17g %.17g %.17g\n" % tuple(r) for r in w)
        self.assertGreater(len(text), 4096)
        ref = ndi.convolve(x, w, mode="reflect")
        base = [self.path("x.npy"), self.path("o.npy"), "--weights"]
        # standard input as /dev/stdin
        r = subprocess.run([CLI] + base + ["/dev/stdin"], input=text, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        np.testing.assert_allclose(np.load(self.path("o.npy")), ref, rtol=1e-12, atol=1e-10)
        # a FIFO, written by another thread (a second open would block for ever)
        fifo = self.path("w.fifo")
        os.mkfifo(fifo)

        def feed():
            with open(fifo, "w") as f:
                f.write(text)
        t = threading.Thread(target=feed, daemon=True)
        t.start()
        r = run(base + [fifo], timeout=60)
        t.join(10)
        self.assertEqual(r.returncode, 0, r.stderr)
        np.testing.assert_allclose(np.load(self.path("o.npy")), ref, rtol=1e-12, atol=1e-10)
        # a short pipe through /dev/fd (bash's <(...)): three taps, one line
        rd, wr = os.pipe()
        os.write(wr, b"1 2 1\n")
        os.close(wr)
        r = subprocess.run([CLI] + base + ["/dev/fd/%d" % rd], pass_fds=(rd,), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        os.close(rd)
        self.assertEqual(r.returncode, 0, r.stderr)
        np.testing.assert_allclose(np.load(self.path("o.npy")),
                                   ndi.convolve(x, np.array([[1.0, 2, 1]])), rtol=1e-12,
                                   atol=1e-12)

    def test_integer_npy_weights(self):
        x = np.arange(10.0)
        np.save(self.path("x.npy"), x)
        np.save(self.path("w.npy"), np.array([1, 2, 1], np.uint8))
        self.run_ok([self.path("x.npy"), self.path("o.npy"), "--weights", self.path("w.npy")])
        np.testing.assert_array_equal(np.load(self.path("o.npy")),
                                      ndi.convolve(x, np.array([1.0, 2, 1])))

    def test_named_filters(self):
        rng = np.random.default_rng(SEED + 8)
        x = rng.standard_normal(50)
        np.save(self.path("x.npy"), x)
        self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "gaussian:1.5"])
        np.testing.assert_allclose(np.load(self.path("o.npy")),
                                   ndi.gaussian_filter1d(x, 1.5), rtol=0, atol=1e-12)
        img = rng.standard_normal((12, 13))
        np.save(self.path("i.npy"), img)
        self.run_ok([self.path("i.npy"), self.path("o.npy"), "--filter", "box:2",
                     "--mode", "constant", "--cval", "0.5"])
        np.testing.assert_allclose(np.load(self.path("o.npy")),
                                   ndi.uniform_filter(img, 5, mode="constant", cval=0.5),
                                   rtol=0, atol=1e-12)
        for name in ("sobel-x", "sobel-y", "laplacian", "sharpen", "emboss", "identity"):
            self.run_ok([self.path("i.npy"), self.path("o.npy"), "--filter", name])
            self.assertEqual(np.load(self.path("o.npy")).shape, img.shape)
        # sobel-x on a ramp along x: +8 per unit slope (convolution form)
        ramp = np.tile(np.arange(9.0), (6, 1))
        np.save(self.path("r.npy"), ramp)
        self.run_ok([self.path("r.npy"), self.path("o.npy"), "--filter", "sobel-x"])
        self.assertEqual(np.load(self.path("o.npy"))[3, 4], 8.0)


class Options(CliCase):
    def setUp(self):
        super().setUp()
        self.x = np.random.default_rng(SEED + 9).standard_normal((6, 7))
        np.save(self.path("x.npy"), self.x)

    def test_gnu_forms(self):
        ref = ndi.correlate(self.x, np.full((3, 3), 1 / 9.0), mode="constant", cval=-1.5,
                            origin=[-1, 1])
        for form in (["--mode", "constant", "--cval", "-1.5", "--origin", "-1,1"],
                     ["--mode=constant", "--cval=-1.5", "--origin=-1,1"]):
            self.run_ok(["--filter", "box:1", self.path("x.npy")] + form +
                        [self.path("o.npy"), "--correlate", "--threads", "1"])
            np.testing.assert_allclose(np.load(self.path("o.npy")), ref, rtol=0, atol=1e-12)
        # one origin applies to every axis
        self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "box:1", "--origin",
                     "1", "--correlate"])
        np.testing.assert_allclose(np.load(self.path("o.npy")),
                                   ndi.correlate(self.x, np.full((3, 3), 1 / 9.0), origin=1),
                                   rtol=0, atol=1e-12)
        # -- ends the options: a file whose name starts with '-'
        np.save(self.path("-x.npy"), self.x)
        self.run_ok(["--filter", "identity", "--", "-x.npy", "-o.npy"], cwd=self.tmp)
        np.testing.assert_array_equal(np.load(self.path("-o.npy")), self.x)
        # --force allows writing over the input
        self.run_ok([self.path("x.npy"), self.path("x.npy"), "--filter", "box:1", "--force"])
        np.testing.assert_allclose(np.load(self.path("x.npy")), ndi.convolve(
            self.x, np.full((3, 3), 1 / 9.0)), rtol=0, atol=1e-12)

    def test_strategy_and_backend(self):
        self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "box:1",
                     "--strategy", "reference", "--backend", "cpu"])
        self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "box:1",
                     "--backend", "auto", "--strategy", "auto", "--output-dtype", "float32"])
        self.assertEqual(np.load(self.path("o.npy")).dtype, np.float32)

    def test_time(self):
        r = self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "box:1", "--time",
                         "--repeat", "5"])
        self.assertRegex(r.stderr, r"\Atime_ms: [0-9]+\.[0-9]+ \(n=5\)\n\Z")
        self.assertEqual(r.stdout, "")
        r = self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "box:1", "--time"])
        self.assertRegex(r.stderr, r"\Atime_ms: [0-9]+\.[0-9]+ \(n=1\)\n\Z")
        r = self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "box:1"])
        self.assertEqual(r.stderr, "")
        once = np.load(self.path("o.npy"))
        # untimed runs first: n counts the timed ones, the result is the same
        r = self.run_ok([self.path("x.npy"), self.path("o.npy"), "--filter", "box:1", "--time",
                         "--warmup", "3", "--repeat", "2"])
        self.assertRegex(r.stderr, r"\Atime_ms: [0-9]+\.[0-9]+ \(n=2\)\n\Z")
        np.testing.assert_array_equal(np.load(self.path("o.npy")), once)

    def test_phases(self):
        """--phases: one line, each step's wall time, the steps adding up to the
        total; the result as without it; mapped and read paths; not in batches."""
        self.run_ok([self.path("x.npy"), self.path("ref.npy"), "--filter", "box:1"])
        ref = np.load(self.path("ref.npy"))
        for extra in ([], ["--mmap", "off"], ["--time"]):
            out = self.path("p%d.npy" % len(extra))
            r = self.run_ok([self.path("x.npy"), out, "--filter", "box:1", "--phases"] + extra)
            lines = [l for l in r.stderr.splitlines() if l.startswith("phases_ms:")]
            self.assertEqual(len(lines), 1, r.stderr)
            m = re.fullmatch(r"phases_ms: open ([0-9.]+) plan ([0-9.]+) filter ([0-9.]+) "
                             r"save ([0-9.]+) total ([0-9.]+)", lines[0])
            self.assertIsNotNone(m, lines[0])
            v = [float(x) for x in m.groups()]
            self.assertAlmostEqual(sum(v[:4]), v[4], delta=0.3)
            np.testing.assert_array_equal(np.load(out), ref)
        r = run([self.path("x.npy"), "--filter", "box:1", "--phases",
                          "--output-dir", self.path("d")])
        self.assertEqual(r.returncode, 1)  # bad input
        self.assertIn("--phases times one file's convolution", r.stderr)

    def test_help_version_info(self):
        r = self.run_ok(["--help"])
        for s in ("usage: convolve", "Exit codes", "--weights", "--filter", "Examples"):
            self.assertIn(s, r.stdout)
        self.assertEqual(self.run_ok(["-h"]).stdout, r.stdout)
        self.assertEqual(self.run_ok(["help"]).stdout, r.stdout)
        r = self.run_ok(["--version"])
        self.assertRegex(r.stdout, r"\Aconvolve \d+\.\d+\.\d+\n\Z")
        r = self.run_ok(["info"])
        self.assertIn("reference", r.stdout)
        self.assertRegex(r.stdout, r"backends: cpu")
        self.assertRegex(r.stdout, r"\ngpu: ")
        r = run([])
        self.assertEqual(r.returncode, 1)
        self.assertIn("usage", r.stderr)

    def test_demo(self):
        r = self.run_ok(["demo"], cwd=self.tmp, env={"CONVOLVE_DATA_DIR": DATA_DIR})
        self.assertIn("grace_hopper_blurred.png", r.stdout)
        self.assertTrue(os.path.exists(self.path("grace_hopper_blurred.png")))
        r = self.run_ok(["demo", "mine.png", "--backend", "cpu"], cwd=self.tmp)
        self.assertIn("mine.png", r.stdout)
        # the default backend may be the GPU, which sums in float: the same
        # picture within one grey level
        for name in ("mine", "grace_hopper_blurred"):  # decoded by our own reader
            self.run_ok([f"{name}.png", f"{name}.npy", "--filter", "identity"], cwd=self.tmp)
        a = np.load(self.path("mine.npy")).astype(int)
        b = np.load(self.path("grace_hopper_blurred.npy")).astype(int)
        self.assertEqual(a.shape, b.shape)
        self.assertLessEqual(int(np.abs(a - b).max()), 1)
        # a data folder without the photo is the first place looked, and the
        # built-in folders are looked in after it
        r = self.run_ok(["demo", "third.png"], cwd=self.tmp, env={"CONVOLVE_DATA_DIR": self.tmp})


if __name__ == "__main__":
    main()
