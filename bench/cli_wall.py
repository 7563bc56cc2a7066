#!/usr/bin/env python3
"""cli_wall.py - wall time of whole CLI runs on the bundled photo, by backend.

Runs `convolve data/grace_hopper.jpg OUT.png --filter gaussian:2 --backend B`
for each backend given (default: cpu and auto; cuda too when asked), the
backends alternating round after round, and prints each one's median and
best wall time (process start to exit: library load, CUDA start-up where it
happens, decode, filter, encode, write). Issue 15's acceptance: auto takes
no more wall time than cpu.

  python3 bench/cli_wall.py --cli build/convolve --runs 11 --backends cpu,auto,cuda
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "convolve"))
    ap.add_argument("--input", default=os.path.join(ROOT, "data", "grace_hopper.jpg"))
    ap.add_argument("--filter", default="gaussian:2")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--backends", default="cpu,auto")
    args = ap.parse_args()
    backends = args.backends.split(",")
    times = {b: [] for b in backends}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.runs + 1):  # the first round warms the page cache
            for b in backends:
                out = os.path.join(tmp, "out_%s.png" % b)
                cmd = [args.cli, args.input, out, "--filter", args.filter, "--backend", b,
                       "--force"]
                t0 = time.perf_counter()
                p = subprocess.run(cmd, capture_output=True, text=True)
                dt = time.perf_counter() - t0
                if p.returncode != 0:
                    print("FAIL: %s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                     p.stderr.strip()), file=sys.stderr)
                    return 1
                if r > 0:
                    times[b].append(dt)
        same = None
        for b in backends:  # the outputs of every backend, byte for byte
            with open(os.path.join(tmp, "out_%s.png" % b), "rb") as f:
                data = f.read()
            same = data if same is None else same
            if data != same:
                print("note: the %s output differs from the %s one" % (b, backends[0]))
    print("| backend | median wall s | best wall s | runs |")
    print("|---|---|---|---|")
    for b in backends:
        print("| %s | %.3f | %.3f | %d |" % (b, statistics.median(times[b]), min(times[b]),
                                            len(times[b])))
    if "cpu" in times and "auto" in times:
        ratio = statistics.median(times["auto"]) / statistics.median(times["cpu"])
        print("auto / cpu (medians): %.2f" % ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
