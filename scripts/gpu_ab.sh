#!/usr/bin/env bash
# scripts/gpu_ab.sh - times two versions of the library in one call on the
# GPU machine, alternating, so that the machine's drift between calls (the
# 2 x H100 host's aggregate copy rate moved from 1.45x to 1.83x one device's
# within a session) does not decide. A is a reference tree extracted under
# .ab/ref (ignored by git, taken along with the run's `carry`); B is the
# working tree.
#
#   here:        rm -rf .ab && mkdir -p .ab/ref && git archive main | tar -x -C .ab/ref
#   GPU machine: AB_CMDS='bench/stream_bench --skip-2d --size3 640 --k3 15' \
#                bash scripts/gpu_ab.sh            (run with carry [".ab"])
#
# AB_CMDS holds one command a line, run from the tree's root with @BUILD@
# replaced by that tree's build directory; a command that starts with bench/
# or tests/ runs that program of the build (bench/stream_bench means
# @BUILD@/bench/stream_bench).
# Each command runs AB_ROUNDS times (default 2) for A, then B, then A, ...
# Output: $OUT/ab.txt (every run's output, A and B labelled); the lines that
# start with "|" of each run are printed last, A's above B's. AB_REF names
# another reference tree. Builds with each tree's own scripts/gpu_check.sh
# (Release, sm_90); changes no GPU setting.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/build-gpu/ab}
REF=${AB_REF:-$ROOT/.ab/ref}
ROUNDS=${AB_ROUNDS:-2}
mkdir -p "$OUT"
: >"$OUT/ab.txt"

if [ ! -f "$REF/CMakeLists.txt" ]; then
    echo "gpu_ab: no reference tree in $REF (see the script's opening comment)" >&2
    exit 2
fi
if [ -z "${AB_CMDS:-}" ]; then
    echo "gpu_ab: AB_CMDS is empty: nothing to time" >&2
    exit 2
fi

# build TREE LABEL: the tree's own gpu_check.sh, build step only
build() {
    (cd "$1" && BUILD="$1/build-gpu" OUT="$OUT/build-$2" GPU_CHECK_ONLY=none \
        bash scripts/gpu_check.sh >/dev/null 2>&1)
    if [ ! -e "$1/build-gpu/libconvolve.so" ]; then
        echo "gpu_ab: the $2 build failed: $OUT/build-$2/build.log" >&2
        tail -20 "$OUT/build-$2/build.log" >&2
        exit 1
    fi
}
build "$REF" A
build "$ROOT" B

# run TREE LABEL COMMAND: one run, labelled, its output appended to ab.txt
run() {
    local tree=$1 label=$2 cmd=$3
    cmd=${cmd//@BUILD@/$tree/build-gpu}
    case "$cmd" in
        bench/* | tests/*) cmd="$tree/build-gpu/$cmd" ;;
    esac
    {
        echo "=== $label: $cmd"
        (cd "$tree" && bash -c "$cmd") 2>&1
        echo "=== $label: rc $?"
    } >>"$OUT/ab.txt"
}

while IFS= read -r cmd; do
    [ -z "$cmd" ] && continue
    for ((r = 0; r < ROUNDS; r++)); do
        run "$REF" "A round $r" "$cmd"
        run "$ROOT" "B round $r" "$cmd"
    done
done <<<"$AB_CMDS"

# the tables, A's runs above B's
for side in A B; do
    echo "## $side ($([ $side = A ] && echo "$REF" || echo "$ROOT"))"
    awk -v side="$side" '/^=== /{on = ($2 == side && $3 == "round")} on && /^\|/' "$OUT/ab.txt"
done
