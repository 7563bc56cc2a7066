#!/usr/bin/env python3
"""host_paths.py - what users run on host memory, end to end, by backend:
the Python package on a numpy array (gaussian_filter(a, 2), float32, default
8192 x 8192: cpu, cuda, auto; the median of --runs calls after one warm-up
call), and the CLI on a .npy file (--filter gaussian:2, a float32 array of
--cli-mib MiB: wall time of the whole command and the --time of its
convolution, cpu and cuda). Ratios are against the CPU backend of the same
run. Prints a table; the numbers go to BENCHMARKS.md with the device.

  PYTHONPATH=build/python python3 bench/host_paths.py --build build [--size N]
      [--runs R] [--cli-mib M] [--skip-cli] [--skip-python]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def python_part(size, runs):
    import convolve
    rng = np.random.default_rng(0)
    a = rng.random((size, size), dtype=np.float32)
    rows = []
    ref = None
    for backend in ("cpu", "cuda", "auto"):
        try:
            out = convolve.gaussian_filter(a, 2, backend=backend)   # warm-up: plan, start CUDA
        except Exception as e:  # noqa: BLE001 - a backend that cannot run is reported
            rows.append((backend, None, str(e).splitlines()[0]))
            continue
        if ref is None:
            ref = out
        err = float(np.max(np.abs(out.astype(np.float64) - ref)))
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            convolve.gaussian_filter(a, 2, backend=backend)
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        rows.append((backend, times[len(times) // 2], "max |diff| vs cpu %.2g" % err))
    return rows


def cli_part(build, mib):
    cli = os.path.join(build, "convolve")
    n = int((mib * 1048576 / 4) ** 0.5)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.npy"), os.path.join(d, "out.npy")
        np.save(src, np.random.default_rng(1).random((n, n), dtype=np.float32))
        for backend in ("cpu", "cuda", "auto"):
            for timed in (False, True):
                args = [cli, src, dst, "--filter", "gaussian:2", "--backend", backend]
                if timed:
                    args.append("--time")
                t0 = time.perf_counter()
                r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb %M"] + args,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                wall = (time.perf_counter() - t0) * 1e3
                if r.returncode != 0:
                    rows.append((backend, timed, None, None, None, r.stderr.strip()[-120:]))
                    continue
                m = re.search(r"time_ms: ([0-9.]+)", r.stderr)
                rss = re.search(r"maxrss_kb (\d+)", r.stderr)
                rows.append((backend, timed, wall, float(m.group(1)) if m else None,
                             int(rss.group(1)) / 1024 if rss else None, ""))
    return n, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--cli-mib", type=int, default=1024)
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--skip-python", action="store_true")
    a = ap.parse_args()
    if not a.skip_python:
        rows = python_part(a.size, a.runs)
        cpu = next((r[1] for r in rows if r[0] == "cpu" and r[1]), None)
        print("python gaussian_filter(a, 2), numpy %dx%d float32, median of %d:"
              % (a.size, a.size, a.runs))
        for backend, ms, note in rows:
            if ms is None:
                print("  %-5s failed: %s" % (backend, note))
            else:
                print("  %-5s %9.2f ms  %5.2fx cpu  %s" % (backend, ms, ms / cpu if cpu else 0,
                                                          note))
        sys.stdout.flush()
    if not a.skip_cli:
        n, rows = cli_part(a.build, a.cli_mib)
        print("CLI %dx%d float32 .npy (%d MiB) --filter gaussian:2: wall ms, --time ms, peak RSS"
              % (n, n, a.cli_mib))
        for backend, timed, wall, tms, rss, err in rows:
            if wall is None:
                print("  %-5s %s failed: %s" % (backend, "--time" if timed else "", err))
            else:
                print("  %-5s %-7s wall %8.1f ms  time_ms %8s  rss %7.0f MiB"
                      % (backend, "--time" if timed else "", wall,
                         "%.1f" % tms if tms is not None else "-", rss or 0))


if __name__ == "__main__":
    main()
