#!/usr/bin/env bash
# bench/cli_phases.sh - where the wall time of `convolve IN.npy OUT.npy` goes
# (docs/cli.md, "Where the wall time goes"): makes a float32 square .npy of
# MIB MiB (default 1024; kept between runs, in the page cache after the
# first), then runs the CLI ROUNDS times a backend, alternating, each run
# with --phases under GNU time, the previous output removed and the disks
# synced first. Prints a table row a run: backend, the phases line, wall
# seconds and peak RSS.
#
#   bench/cli_phases.sh [BUILD] [MIB] [ROUNDS]      (defaults: build 1024 3)
#
# Environment: BACKENDS (default "cpu cuda"), FILTER (gaussian:2), DIR (where
# the files go; default /tmp), PYTHON (the python3 with numpy that makes the
# input; default python3), EXTRA (more options for every run, e.g.
# "--mmap off" to read the input whole and write the output whole).
set -euo pipefail
BUILD=${1:-build}
MIB=${2:-1024}
ROUNDS=${3:-3}
DIR=${DIR:-/tmp}
IN=$DIR/cli_phases_in_$MIB.npy
OUT=$DIR/cli_phases_out.npy
if [ ! -f "$IN" ]; then
    "${PYTHON:-python3}" - "$IN" "$MIB" <<'PY'
import sys
import numpy as np
path, mib = sys.argv[1], int(sys.argv[2])
n = int((mib * 1048576 / 4) ** 0.5)
a = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, n))
rng = np.random.default_rng(1)
for r in range(0, n, 1024):
    a[r:r + 1024] = rng.random((min(1024, n - r), n), dtype=np.float32)
a.flush()
PY
fi
echo "| backend | phases (ms) | wall s, peak RSS KiB |"
echo "|---|---|---|"
for ((r = 0; r < ROUNDS; r++)); do
    for be in ${BACKENDS:-cpu cuda}; do
        rm -f "$OUT"
        sync
        if /usr/bin/time -f "wall %e rss_kib %M" -o "$DIR/cli_phases_time.txt" "$BUILD/convolve" \
            "$IN" "$OUT" --filter "${FILTER:-gaussian:2}" --backend "$be" --phases ${EXTRA:-} \
            2>"$DIR/cli_phases_err.txt"; then
            echo "| $be | $(grep phases_ms "$DIR/cli_phases_err.txt" | cut -d' ' -f2-) |" \
                "$(tr '\n' ' ' <"$DIR/cli_phases_time.txt")|"
        else
            echo "| $be | failed: $(tail -1 "$DIR/cli_phases_err.txt") | |"
        fi
    done
done
rm -f "$OUT" "$DIR/cli_phases_time.txt" "$DIR/cli_phases_err.txt"
