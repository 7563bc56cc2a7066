#!/usr/bin/python3
"""cpu_peers.py - convolve's CPU backend against OpenCV and scipy, in one run.

Times, on the same 4096 x 4096 float32 image (reflect border, correlation):
  - convolve (the CLI: IN.npy OUT.npy --weights W.npy --mode reflect --correlate
    --backend cpu --time --repeat N; it reports `time_ms: <median> (n=<N>)`),
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

On a shared machine other work only ever adds time, and it comes and goes:
each measurement (a median of --repeat runs) is taken --rounds times,
interleaved (ours, peer, ours, peer, ...), and each side's best median is
used; the spread over the rounds is printed as the noise.

Use Debian's /usr/bin/python3 (numpy, scipy, cv2). Example:
  /usr/bin/python3 bench/cpu_peers.py --cli build/convolve --repeat 10
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import cv2
except ImportError:  # pragma: no cover
    cv2 = None
try:
    import scipy.ndimage as ndi
except ImportError:  # pragma: no cover
    ndi = None


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
           "--backend", "cpu", "--time", "--repeat", str(repeat)]
    if threads:
        cmd += ["--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    m = re.search(r"time_ms:\s*([0-9.eE+-]+)\s*\(n=(\d+)\)", r.stderr)
    if not m:
        raise RuntimeError("no time_ms in the CLI's output: %r" % r.stderr)
    return float(m.group(1)), np.load(out)


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
    args = ap.parse_args()

    if cv2 is None:
        sys.exit("cv2 is missing: use Debian's /usr/bin/python3")
    if not os.access(args.cli, os.X_OK):
        sys.exit("no convolve CLI at %s (give --cli PATH)" % args.cli)
    cv2.setNumThreads(args.threads)
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
