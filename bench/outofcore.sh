#!/usr/bin/env bash
# bench/outofcore.sh - the CLI on a .npy file larger than memory (issue 12):
# makes a float32 2-D file of SIZE_GIB (written in pieces, never held whole),
# runs `convolve IN.npy OUT.npy` on it under GNU time and prints the file
# size, the wall time and the peak resident memory (RSS), then checks rows
# spread over the result against scipy. Run it on the GPU machine:
#
#   bench/outofcore.sh                      # 16 GiB, --backend cuda, automatic budget
#   SIZE_GIB=24 BUDGET=2G bench/outofcore.sh   # force streaming in a 2 GiB device budget
#   BACKEND=cpu SIZE_GIB=8 bench/outofcore.sh
#   DEVICES=all bench/outofcore.sh          # every GPU of the host
#
# Environment: BUILD (default build), SIZE_GIB (16), BACKEND (cuda), BUDGET
# (CONVOLVE_DEVICE_BUDGET, e.g. 2G; unset: automatic), DEVICES (--devices),
# FILTER (gaussian:2), DIR (where the two files go; default a folder under
# BUILD: it needs 2 x SIZE_GIB free). The files are removed at the end
# unless KEEP=1. Prints one summary line starting "outofcore:".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SIZE_GIB=${SIZE_GIB:-16}
BACKEND=${BACKEND:-cuda}
FILTER=${FILTER:-gaussian:2}
DIR=${DIR:-$BUILD/outofcore}
PY=${PYTHON:-/usr/bin/python3}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "outofcore: needs GNU time ($TIME; Debian package time)" >&2; exit 1; }
[ -x "$BUILD/convolve" ] || { echo "outofcore: build first ($BUILD/convolve)" >&2; exit 1; }
mkdir -p "$DIR"
IN=$DIR/in.npy
OUT=$DIR/out.npy
trap '[ "${KEEP:-0}" = 1 ] || rm -f "$IN" "$OUT"' EXIT

echo "outofcore: host memory $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)," \
     "free $(awk '/MemAvailable/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo);" \
     "disk free $(df -h --output=avail "$DIR" | tail -1 | tr -d ' ')"
"$PY" - "$IN" "$SIZE_GIB" <<'EOF'
import sys, numpy as np
path, gib = sys.argv[1], float(sys.argv[2])
width = 32768
rows = int(gib * 2**30 / (4 * width))
a = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, width))
rng = np.random.default_rng(12)
step = 1024
block = rng.standard_normal((step, width), dtype=np.float32)
for r in range(0, rows, step):  # random rows, cheap to make: a block rolled
    n = min(step, rows - r)
    a[r:r + n] = np.roll(block, r // step, axis=1)[:n]
    if r % (64 * step) == 0:
        a.flush()
a.flush()
print("outofcore: wrote %s, %d x %d float32, %.2f GiB" % (path, rows, width, rows * width * 4 / 2**30))
EOF
# the input's pages written above are in the page cache; drop them where we may
sync
[ -w /proc/sys/vm/drop_caches ] && echo 1 > /proc/sys/vm/drop_caches || true

args=("$IN" "$OUT" --filter "$FILTER" --backend "$BACKEND" --progress)
[ -n "${DEVICES:-}" ] && args+=(--devices "$DEVICES")
env_budget=()
[ -n "${BUDGET:-}" ] && env_budget=(CONVOLVE_DEVICE_BUDGET="$BUDGET")
echo "outofcore: ${env_budget[*]:-} $BUILD/convolve ${args[*]}"
env "${env_budget[@]}" "$TIME" -f "%e %M" -o "$DIR/time.txt" "$BUILD/convolve" "${args[@]}" \
    2>"$DIR/progress.txt" &
# the resident memory by kind while it runs (anonymous: buffers, pinned
# staging, CUDA; file: mapped pages of the two .npy files)
peak_anon=0 peak_file=0 peak_shmem=0
sleep 0.2
while pid=$(pgrep -n -f "$BUILD/convolve $IN") && [ -n "$pid" ]; do
    read -r a f m < <(awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} /^RssShmem/ {m = $2}
                            END {print a + 0, f + 0, m + 0}' "/proc/$pid/status" 2>/dev/null ||
                      echo 0 0 0)
    ((a > peak_anon)) && peak_anon=$a
    ((f > peak_file)) && peak_file=$f
    ((m > peak_shmem)) && peak_shmem=$m
    sleep 0.2
done
wait
awk 'NR % 10 == 1 || /100%/ || !/slabs/' "$DIR/progress.txt"
echo "outofcore: $(grep -c slabs "$DIR/progress.txt") progress lines; sampled peaks: anonymous" \
     "$((peak_anon / 1024)) MiB, file pages $((peak_file / 1024)) MiB, shared $((peak_shmem / 1024)) MiB"
read -r wall rss_kib < <(tail -1 "$DIR/time.txt")
size=$(stat -c %s "$IN")

"$PY" - "$IN" "$OUT" "$FILTER" <<'EOF'
import sys, numpy as np, scipy.ndimage as ndi
x = np.load(sys.argv[1], mmap_mode="r")
y = np.load(sys.argv[2], mmap_mode="r")
sigma = float(sys.argv[3].split(":")[1]) if sys.argv[3].startswith("gaussian:") else None
rows = x.shape[0]
worst = 0.0
if sigma is not None:  # rows whose window lies inside a block of 33 rows around them
    for r in np.linspace(16, rows - 17, 9).astype(int):
        ref = ndi.gaussian_filter(x[r - 16:r + 17].astype(np.float64), sigma, mode="reflect")[16]
        worst = max(worst, float(np.max(np.abs(y[r] - ref) / (1 + np.abs(ref)))))
print("outofcore: checked 9 rows against scipy: worst relative error %.2e" % worst)
sys.exit(0 if worst < 1e-4 else 1)
EOF
awk -v s="$size" -v w="$wall" -v m="$rss_kib" -v b="$BACKEND" -v g="${BUDGET:-auto}" \
    'BEGIN { printf "outofcore: backend %s, budget %s: file %.2f GiB, wall %.1f s (%.2f GB/s in+out), peak RSS %.0f MiB (%.1f%% of the file)\n", b, g, s / 2^30, w, 2 * s / w / 1e9, m / 1024, 100 * m * 1024 / s }'
