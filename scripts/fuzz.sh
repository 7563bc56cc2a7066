#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer harnesses of tests/fuzz with clang, ASan and
# UBSan (no CUDA) in a separate build directory, then runs each for a bounded
# time on a scratch copy of its seed corpus (the repository's corpus is never
# written). Prints one line per fuzzer and exits 1 on any finding, whose
# input is kept under the build directory. See docs/fuzzing.md.
#
# Environment:
#   FUZZ_SECONDS  seconds per fuzzer (default 20)
#   FUZZ_BUILD    build directory (default build-fuzz)
#   FUZZ_JOBS     fuzzers run at once (default: the CPU count)
#   FUZZ_ONLY     space-separated harness names to run (default: all)
#   CC            the compiler (default clang)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-20}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
harnesses=(${FUZZ_ONLY:-npy png jpeg pnm text tiff filter_named load_memory})
start=$(date +%s)

echo "fuzz: building the harnesses in $build"
mkdir -p "$build"
if ! { CC=${CC:-clang} cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
           -DCONVOLVE_WITH_CUDA=OFF -DCONVOLVE_FUZZ=ON &&
       cmake --build "$build" --target fuzzers -j "$jobs"; } >"$build/fuzz-build.log" 2>&1; then
    tail -30 "$build/fuzz-build.log"
    echo "fuzz: build failed (log: $build/fuzz-build.log)"
    exit 2
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/convolve-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
results="$build/fuzz-results"
rm -rf "$results"
mkdir -p "$results"

# Runs one harness; its output goes to $results/NAME.log, its crash input to
# $results/NAME/.
run_one() {
    local name=$1 dict=() corpus="$scratch/$1"
    cp -R "tests/fuzz/corpus/$name" "$corpus"
    mkdir -p "$results/$name"
    if [ "$name" = load_memory ]; then   # the image formats' words together
        cat tests/fuzz/{npy,png,jpeg,pnm,tiff}.dict >"$scratch/load_memory.dict"
        dict=(-dict="$scratch/load_memory.dict")
    elif [ -f "tests/fuzz/$name.dict" ]; then
        dict=(-dict="tests/fuzz/$name.dict")
    fi
    local rc=0
    "$build/fuzz/fuzz_$name" "$corpus" "${dict[@]}" -max_total_time="$seconds" \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$results/$name/" >"$results/$name.log" 2>&1 || rc=$?
    echo "$rc" >"$results/$name.rc"
}

for name in "${harnesses[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do
        wait -n || true
    done
    run_one "$name" &
done
wait

findings=0
for name in "${harnesses[@]}"; do
    rc=$(cat "$results/$name.rc")
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$results/$name.log" | tail -1)
    found=$(find "$results/$name" -type f | sort)
    if [ "$rc" = 0 ] && [ -z "$found" ]; then
        printf 'fuzz_%-12s PASS     %10s runs in %ss\n' "$name" "${runs:-?}" "$seconds"
    else
        findings=$((findings + 1))
        printf 'fuzz_%-12s FINDING  %10s runs (exit %s); log %s\n' "$name" "${runs:-?}" "$rc" \
            "$results/$name.log"
        grep -m1 -E '^(==[0-9]+==ERROR|SUMMARY)|fuzz check failed|runtime error' \
            "$results/$name.log" | sed 's/^/    /' || true
        for f in $found; do
            echo "    input: $f"
        done
    fi
done
echo "fuzz: ${#harnesses[@]} fuzzers in $(($(date +%s) - start))s"
# the closing line in the plain form CI reads: fuzzers without and with a finding
echo "fuzz: $((${#harnesses[@]} - findings)) passed, $findings failed"
[ "$findings" -eq 0 ] || exit 1
