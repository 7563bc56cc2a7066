#!/usr/bin/python3
"""cpu_peers.py - convolve's CPU backend against OpenCV and scipy, in one run.

Times, on the same 4096 x 4096 float32 image (reflect border, correlation):
  - convolve (the CLI: IN.npy OUT.npy --weights W.npy --mode reflect --correlate
    --backend cpu --time --repeat N --warmup 5; it reports `time_ms: <median>
    (n=<N>)` of the N runs after 5 untimed ones: each CLI process starts cold
    (the output's pages untouched, no threads, the clock not yet ramped up:
    4096^2 uint8 runs 2-5 took 1.2-1.3x the steady time), while the peers
    run in this warm process after one warm-up call),
  - OpenCV cv2.filter2D (dense random filter) and cv2.sepFilter2D (Gaussian),
    BORDER_REFLECT (= our "reflect"), cv2.setNumThreads(THREADS),
  - scipy.ndimage.correlate (single-threaded, as scipy is),
  - a memory copy of the same array (numpy copyto into a preallocated array;
    the copy with allocation, x.copy(), is printed too),
for radii 1, 2, 3, 7, 15: a dense random (2r+1)^2 filter, and a Gaussian of
radius r given to convolve as its dense outer product (which the library
finds to be rank one) and to sepFilter2D as its taps. Checks that convolve's
output agrees with the peers', and prints the ratios ours / filter2D,
ours / sepFilter2D and ours / copy.

The uint8 image matrix (--part uint8 or all): gray, RGB and RGBA 4096 x
4096 uint8 images (random), reflect, against cv2.GaussianBlur at sigma 0.5,
1, 2, 4, 8 (given the same support as ours: ksize 2 * int(4 sigma + 0.5) + 1,
scipy's radius) and cv2.blur (= normalised cv2.boxFilter) at radius 1, 2, 4,
8, 15, BORDER_REFLECT. convolve reads the image as PNG (channels
interleaved) with --filter gaussian:SIGMA or box:R and writes .npy. Each of
our outputs is checked against the exact result (scipy.ndimage's
gaussian_filter / uniform_filter in float64 of the same image): integer
outputs must be the exact result rounded to nearest, ties to even, except
within the documented bound of a half-integer (docs/cpu-fast.md); the
count of those off-by-one outputs and the largest difference from OpenCV
(which rounds its fixed-point sums) are printed.

On a shared machine other work only ever adds time, and it comes and goes:
each measurement (a median of --repeat runs) is taken --rounds times,
interleaved (ours, peer, ours, peer, ...), and each side's best median is
used; the spread over the rounds is printed as the noise.

Use Debian's /usr/bin/python3 (numpy, scipy, cv2). Example:
  /usr/bin/python3 bench/cpu_peers.py --cli build/convolve --repeat 10
  /usr/bin/python3 bench/cpu_peers.py --part uint8 --rounds 3 --repeat 10
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

try:
    import cv2
except ImportError:  # pragma: no cover
    cv2 = None
try:
    import scipy.ndimage as ndi
except ImportError:  # pragma: no cover
    ndi = None


# untimed runs of the CLI before its timed ones (see above)
WARMUP = 5


def median_ms(fn, repeat, warmup=1):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    n = len(times)
    return times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])


def run_cli(cli, inp, out, weights, repeat, threads):
    cmd = [cli, inp, out, "--weights", weights, "--mode", "reflect", "--correlate",
           "--backend", "cpu", "--time", "--repeat", str(repeat), "--warmup", str(WARMUP)]
    if threads:
        cmd += ["--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    m = re.search(r"time_ms:\s*([0-9.eE+-]+)\s*\(n=(\d+)\)", r.stderr)
    if not m:
        raise RuntimeError("no time_ms in the CLI's output: %r" % r.stderr)
    return float(m.group(1)), np.load(out)


def run_cli_filter(cli, inp, out, spec, repeat, threads):
    """Times the CLI on an image with a named filter; returns (ms, output array)."""
    cmd = [cli, inp, out, "--filter", spec, "--mode", "reflect", "--backend", "cpu", "--time",
           "--repeat", str(repeat), "--warmup", str(WARMUP)]
    if threads:
        cmd += ["--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    m = re.search(r"time_ms:\s*([0-9.eE+-]+)\s*\(n=(\d+)\)", r.stderr)
    if not m:
        raise RuntimeError("no time_ms in the CLI's output: %r" % r.stderr)
    return float(m.group(1)), np.load(out)


def write_png(path, img):
    """An 8-bit PNG of img (H, W) or (H, W, C), channels in the array's order."""
    h, w = img.shape[:2]
    c = 1 if img.ndim == 2 else img.shape[2]
    kind = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = np.empty((h, 1 + w * c), dtype=np.uint8)
    rows[:, 0] = 0
    rows[:, 1:] = img.reshape(h, w * c)

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data +
                struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, kind, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)))
        f.write(chunk(b"IEND", b""))


def rel_err(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def gaussian_taps(r):
    """Sampled Gaussian of radius r (sigma = r / 4, so int(4 sigma + 0.5) = r), normalised."""
    sigma = max(r / 4.0, 1e-3)
    k = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-0.5 * (k / sigma) ** 2)
    return (g / g.sum()).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.environ.get("CONVOLVE_CLI", "build/convolve"),
                    help="path of the convolve CLI (default $CONVOLVE_CLI or build/convolve)")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--radii", default="1,2,3,7,15")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per measurement")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds of every measurement; the best median counts")
    ap.add_argument("--threads", type=int, default=2, help="threads for convolve and OpenCV")
    ap.add_argument("--scipy-max-radius", type=int, default=15,
                    help="time scipy only up to this radius (it is slow); -1 for never")
    ap.add_argument("--scipy-repeat", type=int, default=3)
    ap.add_argument("--no-separable", action="store_true", help="skip the Gaussian cases")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--part", choices=("float", "uint8", "all"), default="all",
                    help="the float32 cases, the uint8 image matrix, or both")
    ap.add_argument("--sigmas", default="0.5,1,2,4,8", help="uint8: Gaussian sigmas")
    ap.add_argument("--box-radii", default="1,2,4,8,15", help="uint8: box radii")
    ap.add_argument("--channels", default="1,3,4", help="uint8: channel counts")
    ap.add_argument("--no-check", action="store_true",
                    help="uint8: skip the comparison with the exact result")
    args = ap.parse_args()

    if cv2 is None:
        sys.exit("cv2 is missing: use Debian's /usr/bin/python3")
    if not os.access(args.cli, os.X_OK):
        sys.exit("no convolve CLI at %s (give --cli PATH)" % args.cli)
    cv2.setNumThreads(args.threads)
    ok = True
    if args.part in ("float", "all"):
        ok &= float_part(args)
    if args.part in ("uint8", "all"):
        ok &= uint8_part(args)
    return 0 if ok else 1


def float_part(args):
    """The float32 cases: dense and Gaussian against filter2D and sepFilter2D."""
    radii = [int(r) for r in args.radii.split(",") if r]
    rng = np.random.default_rng(args.seed)
    n = args.size
    x = rng.random((n, n), dtype=np.float32)
    out = np.empty_like(x)

    tmp = tempfile.mkdtemp(prefix="convolve_peers_")
    inp = os.path.join(tmp, "in.npy")
    res = os.path.join(tmp, "out.npy")
    np.save(inp, x)

    print("convolve CPU vs peers: %dx%d float32, reflect, correlate, %d threads; best of %d "
          "rounds of a median of %d" % (n, n, args.threads, args.rounds, args.repeat))
    print("numpy %s, OpenCV %s, scipy %s" % (np.__version__, cv2.__version__,
                                             __import__("scipy").__version__ if ndi else "-"))
    copies = []
    alloc_ms = median_ms(lambda: x.copy(), args.repeat)

    def spread(v):
        return "%.2f-%.2f" % (min(v), max(v))

    rows = []
    worst = 0.0
    for r in radii:
        K = 2 * r + 1
        w = (rng.random((K, K), dtype=np.float32) / (K * K)).astype(np.float32)
        g = gaussian_taps(r)
        wdense = os.path.join(tmp, "w%d.npy" % r)
        wsep = os.path.join(tmp, "g%d.npy" % r)
        np.save(wdense, w)
        np.save(wsep, np.outer(g.astype(np.float64), g.astype(np.float64)))
        t = {"ours": [], "f2d": [], "ours_s": [], "sep": []}
        for _ in range(max(1, args.rounds)):
            copies.append(median_ms(lambda: np.copyto(out, x), args.repeat))
            ms, y = run_cli(args.cli, inp, res, wdense, args.repeat, args.threads)
            t["ours"].append(ms)
            t["f2d"].append(median_ms(lambda: cv2.filter2D(x, -1, w, dst=out,
                                                           borderType=cv2.BORDER_REFLECT),
                                      args.repeat))
            if not args.no_separable:
                ms, ys = run_cli(args.cli, inp, res, wsep, args.repeat, args.threads)
                t["ours_s"].append(ms)
                t["sep"].append(median_ms(lambda: cv2.sepFilter2D(x, -1, g, g, dst=out,
                                                                  borderType=cv2.BORDER_REFLECT),
                                          args.repeat))
        ref = cv2.filter2D(x, -1, w, borderType=cv2.BORDER_REFLECT)
        err = rel_err(y, ref)
        worst = max(worst, err)
        sp = None
        if ndi is not None and 0 <= r <= args.scipy_max_radius:
            sp = median_ms(lambda: ndi.correlate(x, w, output=out, mode="reflect"),
                           args.scipy_repeat, warmup=0)
            err_sp = rel_err(y, ndi.correlate(x, w, mode="reflect"))
            worst = max(worst, err_sp)
        row = {"r": r, "ours": min(t["ours"]), "f2d": min(t["f2d"]), "err": err, "scipy": sp,
               "noise": "ours %s, filter2D %s" % (spread(t["ours"]), spread(t["f2d"]))}
        if not args.no_separable:
            ref_s = cv2.sepFilter2D(x, -1, g, g, borderType=cv2.BORDER_REFLECT)
            err_s = rel_err(ys, ref_s)
            worst = max(worst, err_s)
            row.update({"ours_s": min(t["ours_s"]), "sep": min(t["sep"]), "err_s": err_s})
            row["noise"] += "; Gaussian ours %s, sepFilter2D %s" % (spread(t["ours_s"]),
                                                                    spread(t["sep"]))
        rows.append(row)
        print("r=%2d medians over %d rounds (ms): %s" % (r, args.rounds, row["noise"]), flush=True)

    copy_ms = min(copies)
    print("memory copy: %.2f ms (np.copyto, %.1f GB/s read+write; rounds %s); x.copy() with "
          "allocation %.2f ms" % (copy_ms, 2 * x.nbytes / copy_ms * 1e-6, spread(copies), alloc_ms))
    print()
    head = ("  r | ours dense | filter2D | ours/f2D | ours Gauss | sepFilter2D | ours/sep |"
            " scipy      | ours/copy | rel.err vs OpenCV")
    print(head)
    print("-" * len(head))
    for row in rows:
        sep = ("%10.2f | %11.2f | %8.2f" % (row["ours_s"], row["sep"], row["ours_s"] / row["sep"])
               if "sep" in row else "%10s | %11s | %8s" % ("-", "-", "-"))
        sp = "%10.1f" % row["scipy"] if row["scipy"] is not None else "%10s" % "-"
        errs = "%.1e" % row["err"] + (" / %.1e" % row["err_s"] if "err_s" in row else "")
        print(" %2d | %10.2f | %8.2f | %8.2f | %s | %s | %9.2f | %s" % (
            row["r"], row["ours"], row["f2d"], row["ours"] / row["f2d"], sep, sp,
            row["ours"] / copy_ms, errs))
    print("(times in ms; copy %.2f ms; ratios < 1 mean convolve is faster)" % copy_ms)
    ok = worst <= 1e-5
    print("agreement with the peers: worst relative L2 error %.2e (%s)"
          % (worst, "ok" if ok else "TOO LARGE"))
    return ok


def exact_result(x, kind, arg):
    """The exact (float64) Gaussian or box filter of x, as scipy.ndimage computes it."""
    xf = x.astype(np.float64)
    if kind == "gaussian":
        sig = (arg, arg) + ((0,) if x.ndim == 3 else ())
        return ndi.gaussian_filter(xf, sig, mode="reflect", truncate=4.0)
    size = (2 * arg + 1, 2 * arg + 1) + ((1,) if x.ndim == 3 else ())
    return ndi.uniform_filter(xf, size, mode="reflect")


def rounding_check(ours, exact, K1, K2, wsum):
    """(off_by_one, bad): outputs off the exact rounding within the bound of
    docs/cpu-fast.md ((K1 + K2 + 8) 2^-24 sum|tv| sum|th| 255 for the float
    path), and outputs off it further (must be 0)."""
    want = np.clip(np.rint(exact), 0, 255)
    diff = ours.astype(np.float64) - want
    off = diff != 0
    if not off.any():
        return 0, 0
    bound = (K1 + K2 + 8) * 2.0 ** -24 * wsum * 255 + 1e-9
    half = want + 0.5 * diff
    allowed = (np.abs(diff) == 1) & (np.abs(exact - half) <= bound)
    return int(np.count_nonzero(off & allowed)), int(np.count_nonzero(off & ~allowed))


def uint8_part(args):
    """The uint8 matrix: gray/RGB/RGBA x GaussianBlur sigmas x blur radii."""
    sigmas = [float(v) for v in args.sigmas.split(",") if v]
    boxes = [int(v) for v in args.box_radii.split(",") if v]
    chans = [int(v) for v in args.channels.split(",") if v]
    rng = np.random.default_rng(args.seed)
    n = args.size
    tmp = tempfile.mkdtemp(prefix="convolve_peers_u8_")
    res = os.path.join(tmp, "out.npy")
    print()
    print("convolve CPU vs OpenCV, uint8 images: %dx%d, reflect, %d threads; best of %d rounds "
          "of a median of %d" % (n, n, args.threads, args.rounds, args.repeat))
    print("(OpenCV: cv2.GaussianBlur with ksize 2*int(4*sigma+0.5)+1 = our support, cv2.blur; "
          "BORDER_REFLECT)")
    rows = []
    ok = True
    for c in chans:
        shape = (n, n) if c == 1 else (n, n, c)
        x = rng.integers(0, 256, size=shape, dtype=np.uint8)
        out = np.empty_like(x)
        inp = os.path.join(tmp, "in%d.png" % c)
        write_png(inp, x)
        copies = [median_ms(lambda: np.copyto(out, x), args.repeat)]
        cases = [("gaussian", s) for s in sigmas] + [("box", r) for r in boxes]
        for kind, arg in cases:
            if kind == "gaussian":
                r = int(4.0 * arg + 0.5)
                K = 2 * r + 1
                spec = "gaussian:%g" % arg

                def peer():
                    return cv2.GaussianBlur(x, (K, K), arg, dst=out, sigmaY=arg,
                                            borderType=cv2.BORDER_REFLECT)
                name = "gauss %g" % arg
            else:
                K = 2 * arg + 1
                spec = "box:%d" % arg

                def peer():
                    return cv2.blur(x, (K, K), dst=out, borderType=cv2.BORDER_REFLECT)
                name = "box r=%d" % arg
            t_ours, t_peer = [], []
            for _ in range(max(1, args.rounds)):
                ms, y = run_cli_filter(args.cli, inp, res, spec, args.repeat, args.threads)
                t_ours.append(ms)
                t_peer.append(median_ms(peer, args.repeat))
            copies.append(median_ms(lambda: np.copyto(out, x), args.repeat))
            y = y.reshape(x.shape)
            ref_cv = peer().copy()
            d_cv = int(np.max(np.abs(y.astype(np.int16) - ref_cv.astype(np.int16))))
            off = bad = -1
            if not args.no_check and ndi is not None:
                exact = exact_result(x, kind, arg)
                off, bad = rounding_check(y, exact, K, K, 1.0)
                ok &= bad == 0
            row = {"c": c, "name": name, "ours": min(t_ours), "peer": min(t_peer), "off": off,
                   "bad": bad, "dcv": d_cv,
                   "noise": "ours %.2f-%.2f, OpenCV %.2f-%.2f" % (min(t_ours), max(t_ours),
                                                                 min(t_peer), max(t_peer))}
            rows.append(row)
            print("C=%d %-10s medians over %d rounds (ms): %s" % (c, name, args.rounds,
                                                                  row["noise"]), flush=True)
        for row in rows:
            if row["c"] == c:
                row["copy"] = min(copies)
    print()
    head = (" C | filter     | ours ms | OpenCV ms | ours/OpenCV | ours/copy | off by one "
            "| worse | max |ours-OpenCV|")
    print(head)
    print("-" * len(head))
    worst = 0.0
    for row in rows:
        ratio = row["ours"] / row["peer"]
        worst = max(worst, ratio)
        print(" %d | %-10s | %7.2f | %9.2f | %11.2f | %9.2f | %10s | %5s | %d" % (
            row["c"], row["name"], row["ours"], row["peer"], ratio, row["ours"] / row["copy"],
            "-" if row["off"] < 0 else str(row["off"]),
            "-" if row["bad"] < 0 else str(row["bad"]), row["dcv"]))
    print("(times in ms; copy: np.copyto of the image; 'off by one': of the %d x %d x C "
          "outputs, those that differ\n from the exact rounding by one within the documented "
          "bound of a half-integer; 'worse': any other\n difference, must be 0)" % (n, n))
    print("largest ratio ours/OpenCV: %.2f" % worst)
    return ok


if __name__ == "__main__":
    sys.exit(main())
