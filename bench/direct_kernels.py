#!/usr/bin/env python3
"""direct_kernels.py - the CUDA `direct` strategy on dense square float32
filters, each plan timed twice: with the kernel the library picks, and with
the generated tile (CONVOLVE_DIRECT_KERNELS=generated, read when a plan is
made). Device arrays (torch), CUDA events, the median of --runs calls for
each of --rounds rounds; prints one table line per filter, mode and kernel.

  /opt/torch/.venv/bin/python3 bench/direct_kernels.py --build build-gpu \\
      [--sizes 2,4,6] [--modes reflect,constant] [--shape 8192] [--runs 30] [--rounds 2]

Uses bench/generality.py's driver (Ours, Case, device_arrays, median_ms);
needs a GPU, torch and cupy, as that script does.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import generality as G  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="2,4,6", help="filter extents K (K x K), comma-separated")
    ap.add_argument("--modes", default="reflect,constant")
    ap.add_argument("--shape", type=int, default=8192, help="image side (N x N)")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    G.gpu_imports()
    ours = G.Ours(os.path.abspath(a.build))
    rng = np.random.default_rng(7)
    res = {}
    for _ in range(a.rounds):
        for K in (int(k) for k in a.sizes.split(",")):
            for mode in a.modes.split(","):
                w = rng.uniform(0.1, 1.0, (K, K))
                w /= w.sum()
                case = G.Case(f"f32 {a.shape}^2 {K}x{K} {mode}", (a.shape, a.shape), 1,
                              np.float32, mode, dense=w)
                _, _, xt, _, yt = G.device_arrays(case)
                for gen in (0, 1):
                    if gen:
                        os.environ["CONVOLVE_DIRECT_KERNELS"] = "generated"
                    else:
                        os.environ.pop("CONVOLVE_DIRECT_KERNELS", None)
                    plan, ran = ours.plan(case, "direct")
                    if plan is None:
                        print(f"{case.name}: no plan: {ran}", file=sys.stderr)
                        continue
                    t = G.median_ms(lambda: ours.run(plan, xt, yt), a.runs)
                    ours.free(plan)
                    res.setdefault((K, mode, gen), []).append(t)
    os.environ.pop("CONVOLVE_DIRECT_KERNELS", None)
    print("| filter | mode | kernel | ms (each round) |")
    print("|---|---|---|---|")
    for (K, mode, gen), ts in sorted(res.items()):
        kern = "generated tile" if gen else "library's pick"
        print(f"| {K}x{K} | {mode} | {kern} | " + " / ".join(f"{t:.4f}" for t in ts) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
