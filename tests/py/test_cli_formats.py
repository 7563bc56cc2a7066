"""test_cli_formats.py - the formats users hold, through the CLI, against
numpy/scipy and against OpenCV's own TIFF and PNG code:

- TIFF stacks: a 3-D .npy volume written as a multi-page TIFF (OpenCV reads
  the pages back) and read back; a multi-page TIFF written by OpenCV filtered
  in 3-D and compared with scipy.ndimage; float32 TIFF in, float32 TIFF out;
  RGB and 16-bit TIFFs; planar, tiled, big-endian and predictor files made
  byte by byte (tests/py/tiff_build.py).
- Output type follows the input where the format holds it: 16-bit PNG in,
  16-bit PNG out (and 16-bit PGM, TIFF); float TIFF stays float; JPEG (and
  float data to PNG) gives 8 bits.
- .npy made by numpy in big-endian byte order and in Fortran order.
Without TIFF in the build, only the refusal is checked; CONVOLVE_REQUIRE_TIFF=1
(CI) makes that a failure. Run by CTest; skipped (77) without numpy/scipy
unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import os
import unittest

from cli_support import CliCase, PHOTO, main, run

import numpy as np
import scipy.ndimage as ndi

import tiff_build as tb

try:
    import cv2
except ImportError:  # pragma: no cover - Debian's python3-opencv is a test dependency
    cv2 = None

HAVE_TIFF = os.environ.get("CONVOLVE_HAVE_TIFF", "1") == "1"
SEED = int(os.environ.get("CONVOLVE_TEST_SEED", "0")) or np.random.SeedSequence().entropy % 2**32
print("test_cli_formats: seed %d (replay with CONVOLVE_TEST_SEED=%d)" % (SEED, SEED))


def quarters(rng, shape):
    """Weights in quarters: integer data then sums exactly, ties included."""
    return rng.integers(-2, 5, shape) / 4.0


def round_like_numpy(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(x), info.min, info.max).astype(dtype)


def read_pages(path):
    ok, pages = cv2.imreadmulti(path, flags=cv2.IMREAD_UNCHANGED)
    assert ok, path
    return pages


class WithoutTiff(CliCase):
    @unittest.skipIf(HAVE_TIFF, "this build has TIFF")
    def test_refused_clearly(self):
        if os.environ.get("CONVOLVE_REQUIRE_TIFF") == "1":
            self.fail("built without TIFF, but CONVOLVE_REQUIRE_TIFF=1")
        np.save(self.path("x.npy"), np.ones((4, 5), np.float32))
        r = run([self.path("x.npy"), self.path("x.tif"), "--filter", "identity"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("built without TIFF", r.stderr)


@unittest.skipUnless(HAVE_TIFF, "this build has no TIFF")
@unittest.skipIf(cv2 is None, "OpenCV (cv2) is not installed in this python")
class TiffStacks(CliCase):
    def test_npy_volume_to_multipage_tiff_and_back(self):
        rng = np.random.default_rng(SEED)
        for dtype in (np.float32, np.uint16, np.uint8, np.float64):
            v = (rng.random((5, 9, 13)) * 1000).astype(dtype)
            np.save(self.path("v.npy"), v)
            self.run_ok([self.path("v.npy"), self.path("v.tif"), "--filter", "identity"])
            if dtype != np.float64:  # OpenCV reads no float64 TIFF
                pages = read_pages(self.path("v.tif"))
                self.assertEqual(len(pages), 5)
                for k, p in enumerate(pages):
                    self.assertEqual(p.dtype, v.dtype)
                    np.testing.assert_array_equal(p, v[k])
            self.run_ok([self.path("v.tif"), self.path("back.npy"), "--filter", "identity"])
            back = np.load(self.path("back.npy"))
            self.assertEqual(back.dtype, v.dtype)
            np.testing.assert_array_equal(back, v)

    def test_opencv_stack_filtered_in_3d(self):
        rng = np.random.default_rng(SEED + 1)
        for dtype in (np.uint16, np.uint8):
            hi = np.iinfo(dtype).max
            stack = rng.integers(0, hi + 1, (6, 11, 14)).astype(dtype)
            self.assertTrue(cv2.imwritemulti(self.path("s.tif"), list(stack)))
            w = quarters(rng, (3, 3, 2))
            np.save(self.path("w.npy"), w)
            for mode in ("reflect", "wrap", "constant"):
                self.run_ok([self.path("s.tif"), self.path("out.tif"), "--weights",
                             self.path("w.npy"), "--mode", mode, "--cval", "7"])
                pages = read_pages(self.path("out.tif"))
                out = np.stack(pages)
                ref = round_like_numpy(ndi.convolve(stack.astype(np.float64), w, mode=mode,
                                                    cval=7), dtype)
                self.assertEqual(out.dtype, stack.dtype, "%s %s" % (dtype, mode))
                np.testing.assert_array_equal(out, ref, "%s %s" % (dtype, mode))
        # a named filter in 3-D on a float stack, to .npy
        stack = rng.random((4, 10, 12)).astype(np.float32)
        self.assertTrue(cv2.imwritemulti(self.path("f.tif"), list(stack)))
        self.run_ok([self.path("f.tif"), self.path("g.npy"), "--filter", "gaussian:1"])
        out = np.load(self.path("g.npy"))
        self.assertEqual(out.shape, stack.shape)
        ref = ndi.gaussian_filter(stack.astype(np.float64), 1.0, mode="reflect")
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)

    def test_float32_tiff_stays_float32(self):
        rng = np.random.default_rng(SEED + 2)
        x = (rng.standard_normal((17, 23)) * 50).astype(np.float32)
        self.assertTrue(cv2.imwrite(self.path("f.tif"), x))
        w = rng.standard_normal((3, 4))
        np.save(self.path("w.npy"), w)
        self.run_ok([self.path("f.tif"), self.path("out.tif"), "--weights", self.path("w.npy"),
                     "--mode", "mirror"])
        out = cv2.imread(self.path("out.tif"), cv2.IMREAD_UNCHANGED)
        self.assertEqual(out.dtype, np.float32)
        ref = ndi.convolve(x.astype(np.float64), w, mode="mirror")
        scale = np.abs(w).sum() * np.abs(x).max()
        self.assertLessEqual(np.abs(out - ref).max(), 4 * np.finfo(np.float32).eps * scale)
        # float TIFF to PNG: 8 bits (PNG holds no floats), as for any float data
        self.run_ok([self.path("f.tif"), self.path("out.png"), "--filter", "identity"])
        png = cv2.imread(self.path("out.png"), cv2.IMREAD_UNCHANGED)
        self.assertEqual(png.dtype, np.uint8)
        np.testing.assert_array_equal(png, round_like_numpy(x, np.uint8))

    def test_rgb_and_16_bit_tiff(self):
        rng = np.random.default_rng(SEED + 3)
        for dtype, ch in ((np.uint8, 3), (np.uint16, 3), (np.uint16, 4), (np.uint8, 1)):
            hi = np.iinfo(dtype).max
            bgr = rng.integers(0, hi + 1, (13, 16, ch)).astype(dtype)
            self.assertTrue(cv2.imwrite(self.path("c.tif"), bgr if ch > 1 else bgr[:, :, 0]))
            w = quarters(rng, (3, 3))
            np.save(self.path("w.npy"), w)
            self.run_ok([self.path("c.tif"), self.path("out.tif"), "--weights",
                         self.path("w.npy")])
            out = cv2.imread(self.path("out.tif"), cv2.IMREAD_UNCHANGED)
            self.assertEqual(out.dtype, bgr.dtype)
            out = out.reshape(bgr.shape)
            for c in range(ch):  # the weights apply to each channel alone
                ref = round_like_numpy(ndi.convolve(bgr[:, :, c].astype(np.float64), w), dtype)
                np.testing.assert_array_equal(out[:, :, c], ref, "%s %d ch" % (dtype, ch))

    def test_hand_made_layouts(self):
        """Planar, tiled, big-endian, Deflate and TN3-predictor files, written
        byte by byte (independent of libtiff), load exactly."""
        rng = np.random.default_rng(SEED + 4)
        f32 = rng.standard_normal((9, 20, 3)).astype(np.float32)
        u16 = rng.integers(0, 65536, (19, 21, 2)).astype(np.uint16)
        f64 = rng.standard_normal((7, 11)).astype(np.float64)
        cases = [
            ("planar strips", f32, dict(planar=True, rows_per_strip=4), "<"),
            ("planar tiles", u16, dict(planar=True, tile=(16, 16)), ">"),
            ("chunky tiles deflate", u16, dict(tile=(16, 32), compression=8), "<"),
            ("big-endian float predictor", f32,
             dict(compression=8, predictor=3, rows_per_strip=3), ">"),
            ("little-endian float predictor", f64, dict(compression=8, predictor=3), "<"),
        ]
        for what, a, kw, order in cases:
            data = tb.tiff([tb.page(a, order=order, **kw)], order=order)
            with open(self.path("h.tif"), "wb") as f:
                f.write(data)
            self.run_ok([self.path("h.tif"), self.path("h.npy"), "--filter", "identity"])
            got = np.load(self.path("h.npy"))
            np.testing.assert_array_equal(got, a, what)
        # a stack whose pages disagree is refused, naming the page
        data = tb.tiff([tb.page(u16[:, :, 0]), tb.page(u16[:8, :, 0])])
        with open(self.path("bad.tif"), "wb") as f:
            f.write(data)
        r = run([self.path("bad.tif"), self.path("o.npy"), "--filter", "identity"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("TIFF page 2", r.stderr)
        self.assertFalse(os.path.exists(self.path("o.npy")))

    def test_tiff_weights(self):
        """A float PSF stored as a TIFF stack serves as 3-D weights."""
        rng = np.random.default_rng(SEED + 5)
        x = rng.standard_normal((6, 7, 8))
        psf = rng.random((3, 3, 2)).astype(np.float32)
        np.save(self.path("x.npy"), x)
        np.save(self.path("psf.npy"), psf)
        self.run_ok([self.path("psf.npy"), self.path("psf.tif"), "--filter", "identity"])
        self.run_ok([self.path("x.npy"), self.path("y.npy"), "--weights", self.path("psf.tif")])
        ref = ndi.convolve(x, psf.astype(np.float64))
        np.testing.assert_allclose(np.load(self.path("y.npy")), ref, rtol=0, atol=1e-12)


@unittest.skipIf(cv2 is None, "OpenCV (cv2) is not installed in this python")
class OutputTypeFollowsInput(CliCase):
    def test_16_bit_png_in_and_out(self):
        rng = np.random.default_rng(SEED + 6)
        for ch in (1, 3, 4):
            x = rng.integers(0, 65536, (15, 18, ch)).astype(np.uint16)
            self.assertTrue(cv2.imwrite(self.path("in.png"), x if ch > 1 else x[:, :, 0]))
            w = quarters(rng, (2, 3))
            np.save(self.path("w.npy"), w)
            for out in ("out.png", "out.ppm" if ch == 3 else "out.pgm", "out.tif"):
                if out.endswith(".pgm") and ch != 1:
                    continue
                if HAVE_TIFF is False and out.endswith(".tif"):
                    continue
                self.run_ok([self.path("in.png"), self.path(out), "--weights",
                             self.path("w.npy"), "--mode", "nearest"])
                got = cv2.imread(self.path(out), cv2.IMREAD_UNCHANGED)
                self.assertEqual(got.dtype, np.uint16, "%d channels to %s" % (ch, out))
                got = got.reshape(x.shape)
                for c in range(ch):
                    ref = round_like_numpy(ndi.convolve(x[:, :, c].astype(np.float64), w,
                                                        mode="nearest"), np.uint16)
                    np.testing.assert_array_equal(got[:, :, c], ref, "%d ch %s" % (ch, out))

    def test_png_compression_and_pixel_limit(self):
        """--png-compression changes the size, never the pixels (OpenCV reads
        them back); --max-pixels refuses larger images and 0 lifts it."""
        y, x = np.mgrid[0:120, 0:160]
        img = np.dstack([(x + y) % 256, (2 * x) % 256, (3 * y) % 256]).astype(np.uint8)
        self.assertTrue(cv2.imwrite(self.path("in.png"), img))
        sizes = {}
        for level in ("0", "1", "9"):
            out = self.path("out%s.png" % level)
            self.run_ok([self.path("in.png"), out, "--filter", "identity",
                         "--png-compression", level])
            np.testing.assert_array_equal(cv2.imread(out, cv2.IMREAD_UNCHANGED), img)
            sizes[level] = os.path.getsize(out)
        self.assertGreater(sizes["0"], img.size)
        self.assertLess(sizes["9"], sizes["1"])
        self.assertLess(sizes["1"], sizes["0"])
        r = run([self.path("in.png"), self.path("o.png"), "--filter", "identity",
                 "--max-pixels", str(120 * 160 - 1)])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("160x120 pixels are more than the limit of 19199", r.stderr)
        for limit in (str(120 * 160), "0"):
            self.run_ok([self.path("in.png"), self.path("o.png"), "--filter", "identity",
                         "--max-pixels", limit])

    def test_jpeg_stays_8_bit(self):
        for out in ("out.png", "out.tif") if HAVE_TIFF else ("out.png",):
            self.run_ok([PHOTO, self.path(out), "--filter", "box:1"])
            got = cv2.imread(self.path(out), cv2.IMREAD_UNCHANGED)
            self.assertEqual(got.dtype, np.uint8, out)
            self.assertEqual(got.shape, cv2.imread(PHOTO).shape, out)


class NpyByteOrderAndFortran(CliCase):
    def test_numpy_big_endian_and_fortran_files(self):
        rng = np.random.default_rng(SEED + 7)
        for dtype in (">f4", ">f8", ">u2", "<u2", "|u1", "<f4"):
            for shape in ((7,), (5, 6), (3, 4, 5)):
                x = (rng.random(shape) * 200).astype(dtype)
                for fortran in (False, True):
                    a = np.asfortranarray(x) if fortran else np.ascontiguousarray(x)
                    np.save(self.path("x.npy"), a)
                    self.run_ok([self.path("x.npy"), self.path("y.npy"), "--filter",
                                 "identity"])
                    y = np.load(self.path("y.npy"))
                    what = "%s %s %s" % (dtype, shape, "F" if fortran else "C")
                    self.assertEqual(y.dtype, x.dtype.newbyteorder("="), what)
                    self.assertEqual(y.shape, x.shape, what)
                    np.testing.assert_array_equal(y, x, what)
        # and a filter sees the right neighbours in a Fortran-order volume
        x = np.asfortranarray(rng.standard_normal((4, 5, 6)))
        w = rng.standard_normal((3, 2, 3))
        np.save(self.path("x.npy"), x)
        np.save(self.path("w.npy"), np.asfortranarray(w))
        self.run_ok([self.path("x.npy"), self.path("y.npy"), "--weights", self.path("w.npy"),
                     "--mode", "wrap"])
        np.testing.assert_allclose(np.load(self.path("y.npy")), ndi.convolve(x, w, mode="wrap"),
                                   rtol=0, atol=1e-12)


if __name__ == "__main__":
    main()
