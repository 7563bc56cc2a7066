"""test_cli_errors.py - every kind of bad input to the convolve CLI exits with
the documented code (1 bad input or usage, 2 resource or write failure),
prints a `convolve: ...` message naming the problem on standard error, and
leaves a pre-existing output file byte-identical.
Run by CTest; skipped (77) without numpy/scipy unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import os

from cli_support import CliCase, PHOTO, main, read_file, run, write_file

import numpy as np

OLD = b"old output: must survive a failed run\n"


class BadInputs(CliCase):
    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(0)
        self.x1 = rng.standard_normal(20)
        self.x2 = rng.standard_normal((8, 9))
        self.x3 = rng.standard_normal((4, 5, 6))
        np.save(self.path("x1.npy"), self.x1)
        np.save(self.path("x2.npy"), self.x2)
        np.save(self.path("x3.npy"), self.x3)
        np.save(self.path("w2.npy"), np.ones((3, 3)))
        np.save(self.path("w1.npy"), np.ones(3))

    def expect(self, args, code, *needles, out="out.npy", cwd=None):
        """Runs with a pre-existing output file; checks code, message, file."""
        out_path = self.path(out) if out else None
        if out_path and os.path.isdir(os.path.dirname(out_path)) and not os.path.isdir(out_path):
            write_file(out_path, OLD)
        r = run(args, cwd=cwd)
        what = "convolve %s" % " ".join(map(str, args))
        self.assertEqual(r.returncode, code, "%s\nstderr: %s" % (what, r.stderr))
        self.assertTrue(r.stderr.startswith("convolve: "), "%s\nstderr: %r" % (what, r.stderr))
        self.assertEqual(r.stderr.count("\n"), 1, "%s: one line expected: %r" % (what, r.stderr))
        for n in needles:
            self.assertIn(n, r.stderr, what)
        if out_path and os.path.isfile(out_path):
            self.assertEqual(read_file(out_path), OLD, "%s changed the old output" % what)
        leftovers = [f for f in os.listdir(os.path.dirname(out_path) if out_path else self.tmp)
                     if f.startswith(".")]
        self.assertEqual(leftovers, [], "%s left temporary files" % what)
        return r

    def base(self, inp="x2.npy", out="out.npy"):
        return [self.path(inp), self.path(out)]

    def test_missing_and_unreadable_inputs(self):
        self.expect(self.base("nope.npy") + ["--filter", "box:1"], 1, "nope.npy",
                    "No such file")
        self.expect([self.tmp, self.path("out.npy"), "--filter", "box:1"], 1, "directory")
        self.expect(self.base() + ["--weights", self.path("nope.txt")], 1, "nope.txt")

    def test_usage(self):
        self.expect(self.base() + ["--filter", "box:1", "--frobnicate"], 1,
                    "unknown option '--frobnicate'")
        self.expect(self.base() + ["--filter", "box:1", "-x"], 1, "unknown option '-x'")
        self.expect(self.base() + ["--filter", "box:1", "extra.npy"], 1, "extra.npy")
        self.expect([self.path("x2.npy"), "--filter", "box:1"], 1, "no OUTPUT", out=None)
        self.expect(self.base() + ["--filter"], 1, "needs a value")
        self.expect(self.base() + ["--filter", "box:1", "--correlate=yes"], 1, "takes no value")
        self.expect(self.base(), 1, "no filter")
        self.expect(self.base() + ["--filter", "box:1", "--weights", self.path("w2.npy")], 1,
                    "not both")

    def test_bad_option_values(self):
        f = ["--filter", "box:1"]
        self.expect(self.base() + f + ["--mode", "reflective"], 1, "unknown mode 'reflective'")
        self.expect(self.base() + f + ["--cval", "abc"], 1, "--cval 'abc'")
        self.expect(self.base() + f + ["--cval", "nan"], 1, "--cval")
        self.expect(self.base() + f + ["--threads", "-1"], 1, "--threads")
        self.expect(self.base() + f + ["--repeat", "0"], 1, "--repeat")
        self.expect(self.base() + f + ["--warmup", "-1"], 1, "--warmup")
        self.expect(self.base() + f + ["--quality", "101"], 1, "--quality")
        self.expect(self.base() + f + ["--backend", "gpu"], 1, "unknown backend 'gpu'")
        self.expect(self.base() + f + ["--output-dtype", "int32"], 1, "int32")
        self.expect(self.base() + f + ["--origin", "1,x"], 1, "'x' is not an integer")
        self.expect(self.base() + f + ["--origin", "1,1,1,1"], 1, "--origin")
        self.expect(self.base() + f + ["--strategy", "warp-speed"], 1, "warp-speed")

    def test_filters_and_origins(self):
        self.expect(self.base() + ["--filter", "blur:3"], 1, "unknown filter 'blur:3'")
        self.expect(self.base() + ["--filter", "gaussian:-1"], 1, "gaussian")
        self.expect(self.base("x3.npy") + ["--filter", "sobel-x"], 1, "sobel-x")
        self.expect(self.base() + ["--filter", "box:1", "--origin", "2"], 1, "origin 2")
        self.expect(self.base() + ["--weights", self.path("w2.npy"), "--origin", "-2,0"], 1,
                    "origin -2")
        self.expect(self.base("x3.npy") + ["--filter", "box:1", "--origin", "0,1"], 1,
                    "--origin has 2 values")

    def test_weights_mismatch_and_malformed(self):
        self.expect(self.base("x1.npy") + ["--weights", self.path("w2.npy")], 1,
                    "2 dimensions and the input 1")
        self.expect(self.base("x3.npy") + ["--weights", self.path("w2.npy")], 1,
                    "2 dimensions and the input 3")
        write_file(self.path("w3.txt"), "1 2\n3 4\n\n5 6\n7 8\n")
        self.expect(self.base() + ["--weights", self.path("w3.txt")], 1,
                    "3 dimensions and the input 2")
        write_file(self.path("ragged.txt"), "1 2 3\n4 5\n")
        self.expect(self.base() + ["--weights", self.path("ragged.txt")], 1, "line 2")
        write_file(self.path("nan.txt"), "1 nan 1\n")
        self.expect(self.base() + ["--weights", self.path("nan.txt")], 1, "NaN")
        write_file(self.path("bad.npy"), b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}    \n")
        self.expect(self.base() + ["--weights", self.path("bad.npy")], 1, "bad.npy")
        self.expect(self.base() + ["--weights", PHOTO], 1, "image")

    def test_malformed_inputs(self):
        good = read_file(self.path("x2.npy"))
        write_file(self.path("trunc.npy"), good[:-8])
        self.expect(self.base("trunc.npy") + ["--filter", "box:1"], 1, "trunc.npy", "truncated")
        write_file(self.path("garbage.npy"), b"this is not numpy")
        self.expect(self.base("garbage.npy") + ["--filter", "box:1"], 1, "not a .npy file")
        np.save(self.path("i8.npy"), np.arange(6, dtype=np.int64))
        self.expect(self.base("i8.npy") + ["--filter", "box:1"], 1, "'<i8' is not supported")
        # (Fortran-order arrays load since the reader transposes them: test_cli_formats.py)
        np.save(self.path("x4.npy"), np.zeros((2, 2, 2, 2)))
        self.expect(self.base("x4.npy") + ["--filter", "box:1"], 1, "4 dimensions")
        # truncated images
        self.assertEqual(run([PHOTO, self.path("ok.png"), "--filter", "identity"]).returncode, 0)
        png = read_file(self.path("ok.png"))
        write_file(self.path("cut.png"), png[: len(png) // 2])
        self.expect(self.base("cut.png", "out.png") + ["--filter", "box:1"], 1, "cut.png",
                    "PNG", out="out.png")
        jpg = read_file(PHOTO)
        write_file(self.path("cut.jpg"), jpg[: len(jpg) * 2 // 3])
        self.expect(self.base("cut.jpg", "out.png") + ["--filter", "box:1"], 1, "cut.jpg",
                    "JPEG", out="out.png")
        write_file(self.path("empty.png"), b"")
        self.expect(self.base("empty.png", "out.png") + ["--filter", "box:1"], 1, "empty",
                    out="out.png")

    def test_output_problems(self):
        f = ["--filter", "box:1"]
        # same file as the input: by name, by another path, through a link
        self.expect(self.base("x2.npy", "x2.npy") + f, 1, "is the input file", out=None)
        self.assertEqual(np.load(self.path("x2.npy")).tolist(), self.x2.tolist())
        self.expect(["x2.npy", "./x2.npy"] + f, 1, "is the input file", out=None, cwd=self.tmp)
        os.link(self.path("x2.npy"), self.path("hard.npy"))
        self.expect(self.base("x2.npy", "hard.npy") + f, 1, "is the input file", out=None)
        self.assertEqual(np.load(self.path("x2.npy")).tolist(), self.x2.tolist())
        # formats that cannot hold the result
        self.expect(self.base("x3.npy", "out.png") + f, 1, "2-D", out="out.png")
        self.expect(self.base("x2.npy", "out.jpg") + f + ["--output-dtype", "uint16"], 1,
                    "JPEG holds uint8", out="out.jpg")
        self.expect(self.base("x2.npy", "out.pgm") + f + ["--output-dtype", "float32"], 1,
                    "uint8 or uint16", out="out.pgm")
        self.expect(self.base("x2.npy", "out.xyz") + f, 1, "extension", out="out.xyz")
        self.expect(self.base("x2.npy", "out.txt") + f + ["--output-dtype", "uint8"], 1,
                    "text", out="out.txt")
        # unwritable places: exit 2, the old file untouched
        self.expect([self.path("x2.npy"), self.path("no/such/dir/out.npy")] + f, 2, "no/such/dir",
                    out=None)
        self.expect([self.path("x2.npy"), self.path("x1.npy") + "/out.npy"] + f, 2, "out.npy",
                    out=None)
        # a folder as OUTPUT: a usage error before any work (--output-dir is the
        # way to write into a folder); a device: refused when saving
        os.mkdir(self.path("adir.npy"))
        self.expect(self.base("x2.npy", "adir.npy") + f, 1, "is a folder", "--output-dir",
                    out="adir.npy")
        self.assertTrue(os.path.isdir(self.path("adir.npy")))
        os.symlink("/dev/null", self.path("null.npy"))
        self.expect([self.path("x2.npy"), self.path("null.npy")] + f, 2, "not a regular file",
                    out=None)
        if os.geteuid() != 0:
            os.mkdir(self.path("ro"))
            write_file(self.path("ro/out.npy"), OLD)
            os.chmod(self.path("ro"), 0o555)
            self.expect(self.base("x2.npy", "ro/out.npy") + f, 2, "ro/out.npy", out="ro/out.npy")
        else:
            self.expect([self.path("x2.npy"), "/proc/convolve_test_out.npy"] + f, 2,
                        "/proc/convolve_test_out.npy", out=None)

    def test_backend_unavailable(self):
        info = run(["info"]).stdout
        if "gpu: none" not in info:
            self.skipTest("a GPU is usable here")
        code = 1 if "cuda (not built)" in info else 2
        self.expect(self.base() + ["--filter", "box:1", "--backend", "cuda"], code, "CUDA")
        if code == 2:
            # a CUDA build on a host without a usable GPU says what is missing
            # in plain words (the CUDA runtime calls a missing driver an
            # "insufficient" one) and that auto runs on the CPU
            self.assertIn("--backend auto runs on the CPU", info)
            self.assertNotIn("driver version is insufficient", info)
            r = run(self.base() + ["--filter", "box:1", "--backend", "cuda"])
            self.assertNotIn("driver version is insufficient", r.stderr)
            self.assertRegex(r.stderr, r"no NVIDIA (driver|GPU) was found|NVIDIA driver supports")


if __name__ == "__main__":
    main()
