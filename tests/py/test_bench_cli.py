"""test_bench_cli.py - `convolve bench` through the CLI: the CPU backend on a
small shape gives a JSON object whose rows carry the timing fields and the
chapter's reduction table. Skipped (77) until the CLI (tools/convolve.c) is
built, i.e. when CONVOLVE_CLI is not set."""
import json
import os
import subprocess
import sys


def main():
    cli = os.environ.get("CONVOLVE_CLI")
    if not cli or not os.path.exists(cli):
        print("test_bench_cli: SKIPPED: the convolve CLI is not built")
        return 77
    cmd = [cli, "bench", "--backend", "cpu", "--shape", "64x64", "--radius", "1",
           "--strategy", "reference", "--runs", "20", "--json"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        print("test_bench_cli: FAIL: exit %d\n%s%s" % (run.returncode, run.stdout, run.stderr))
        return 1
    doc = json.loads(run.stdout)
    rows = doc["results"]
    ok = (len(rows) == 1 and rows[0]["strategy"] == "reference" and rows[0]["supported"]
          and rows[0]["median_ms"] > 0 and rows[0]["runs"] == 20 and rows[0]["taps"] == 9)
    table = {(r["mask"], r["tile"]): r["ratio"] for r in doc["tiled_reduction"]}
    for (mask, tile), ratio in table.items():
        want = tile * tile * mask * mask / float((tile + mask - 1) ** 2)
        ok = ok and abs(ratio - want) < 0.01
    ok = ok and len(table) == 8
    print("test_bench_cli: %s" % ("1 passed, 0 failed" if ok else "0 passed, 1 failed"))
    if not ok:
        print(run.stdout)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
