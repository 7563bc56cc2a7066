"""test_gpu_photo.py - the running example on the GPU: for every 2-D CUDA
strategy S, `convolve photo.jpg out.png --filter gaussian:2 --backend cuda
--strategy S` must give the CPU reference's image (`--backend cpu --strategy
reference`), every pixel within one grey level (the reference rounds a double
sum, the GPU a float32 one; ties may round apart). A fast strategy that
cannot serve this case (uint8 RGB with a 17-tap filter) must refuse with
exit 1 and say so; the chapter's strategies and fft must serve it.
Prints, per strategy, the pixels that differ and the largest difference.
Without a usable GPU it reports skipped (exit 77).
"""
import os
import sys

from cli_support import PHOTO, CliCase, main, run

try:
    import cv2
except ImportError:  # pragma: no cover - depends on the machine
    cv2 = None

import numpy as np

MUST_SERVE = ["basic", "constant", "tiled-in", "tiled-out", "cached", "fft"]
MAY_REFUSE = ["direct", "separable"]


def gpu_reason():
    """None when the CLI can use a GPU, else why not."""
    r = run(["info"])
    for line in r.stdout.splitlines():
        if line.startswith("gpu:"):
            return None if "none" not in line.split(":", 1)[1][:6] else line
    return "convolve info printed no gpu line"


class PhotoOnGpu(CliCase):
    def load(self, path):
        img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
        self.assertIsNotNone(img, path)
        return img.astype(np.int32)

    def test_every_2d_strategy_gives_the_reference_image(self):
        ref_path = self.path("ref.png")
        self.run_ok([PHOTO, ref_path, "--filter", "gaussian:2", "--backend", "cpu",
                     "--strategy", "reference"])
        ref = self.load(ref_path)
        for s in MUST_SERVE + MAY_REFUSE:
            out = self.path("out-%s.png" % s)
            r = run([PHOTO, out, "--filter", "gaussian:2", "--backend", "cuda", "--strategy", s])
            if s in MAY_REFUSE and r.returncode == 1:
                self.assertIn("cannot serve", r.stderr, s)
                print("test_gpu_photo: %-10s refuses, as documented: %s"
                      % (s, r.stderr.strip()[:150]))
                continue
            self.assertEqual(r.returncode, 0, "%s: %s" % (s, r.stderr))
            got = self.load(out)
            self.assertEqual(got.shape, ref.shape, s)
            diff = np.abs(got - ref)
            print("test_gpu_photo: %-10s %dx%dx%d, %d of %d values differ, max %d"
                  % (s, got.shape[0], got.shape[1], got.shape[2], int((diff > 0).sum()),
                     diff.size, int(diff.max())))
            self.assertLessEqual(int(diff.max()), 1, s)


if __name__ == "__main__":
    if cv2 is None:
        if os.environ.get("CONVOLVE_REQUIRE_PYTHON") == "1":
            print("FAIL: no cv2 (python3-opencv)", file=sys.stderr)
            sys.exit(1)
        print("skipped: no cv2 (python3-opencv)")
        sys.exit(77)
    why = gpu_reason()
    if why:
        print("test_gpu_photo: SKIPPED: no usable GPU (%s)" % why)
        sys.exit(77)
    main()
