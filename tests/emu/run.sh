#!/usr/bin/env bash
# tests/emu/run.sh - builds libconvolve with its CUDA backend for the CPU
# emulation of tests/emu/ (the .cu files compiled as C++ by g++, the CUDA
# runtime replaced by emu_runtime.cpp, AddressSanitizer and UBSan on) and
# runs test_gpu_strategies on it, so kernel indexing, the host runtime and
# the test itself can be checked on a machine with no GPU. Grid extents are
# capped low (3 blocks along x, 2 along y and z) so the kernels' grid-stride
# loops run. Slow: one host thread per CUDA thread; use --small or --medium.
#
#   bash tests/emu/run.sh [test_gpu_strategies options]   (default --small)
#   bash tests/emu/run.sh --bench     convolve bench on tiny shapes instead
#   bash tests/emu/run.sh --fast [..] test_gpu_fast (default --small)
#   bash tests/emu/run.sh --direct [..] test_gpu_direct (default --small)
#   EMU_BUILD=dir   build directory (default build-emu)
# shellcheck disable=SC2086  # $flags, $defs and $inc are word lists on purpose
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${EMU_BUILD:-$root/build-emu}
rm -rf "$out/obj"
mkdir -p "$out/obj"
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
defs="-DCVK_EMULATE -DCVK_GRID_X_MAX=3LL -DCVK_GRID_YZ_MAX=2LL -DCONVOLVE_WITH_CUDA -D_POSIX_C_SOURCE=200809L"
inc="-I$root/tests/emu -I$root/include -I$root/src -I$root/src/cuda -I$root/tests -I$root/tools"
cmake -DROOT="$root" -DOUT="$out/obj/gen_source.c" \
      -DFILES=gen_kernels.cuh,gen_params.h,../kernel_math.h -P "$root/cmake/embed_sources.cmake"

jobs=()
for f in "$root"/src/cuda/*.cu "$root"/tests/emu/emu_runtime.cpp "$root"/tests/emu/emu_cufft.cpp; do
    jobs+=("g++ -std=c++17 $flags $defs $inc -x c++ -c $f -o $out/obj/$(basename "$(dirname "$f")")_$(basename "$f").o")
done
for f in "$root"/src/*.c "$root"/src/cpu/*.c "$root"/src/io/*.c "$root"/src/cuda/*.c "$out/obj/gen_source.c"; do
    [ -e "$f" ] || continue
    case "$f" in */unavailable.c) continue ;; esac
    jobs+=("gcc -std=c11 -fopenmp -Wall -Wextra $flags $defs $inc -c $f -o $out/obj/$(basename "$(dirname "$f")")_$(basename "$f").o")
done
for f in "$root"/tests/test_gpu_strategies.c "$root"/tests/test_gpu_fast.c "$root"/tests/test_gpu_direct.c "$root"/bench/convolve_bench.c; do
    jobs+=("gcc -std=c11 -fopenmp -Wall -Wextra $flags $defs $inc -c $f -o $out/$(basename "$f").o")
done
for f in "$root"/tools/cli_common.c "$root"/tools/cli_options.c "$root"/tools/bench.c; do
    # the part of the tools library (tools/cli.h) convolve_bench uses
    jobs+=("gcc -std=c11 -Wall -Wextra -Wno-unused-parameter $flags -D_POSIX_C_SOURCE=200809L $inc -c $f -o $out/tools_$(basename "$f").o")
done
printf '%s\n' "${jobs[@]}" | xargs -P "${JOBS:-2}" -I{} sh -c '{}'
libs=(-lpng -ljpeg -lz -lm -lpthread -ldl)
g++ $flags -fopenmp -o "$out/test_gpu_strategies" "$out"/test_gpu_strategies.c.o "$out"/obj/*.o "${libs[@]}"
g++ $flags -fopenmp -o "$out/test_gpu_fast" "$out"/test_gpu_fast.c.o "$out"/obj/*.o "${libs[@]}"
g++ $flags -fopenmp -o "$out/test_gpu_direct" "$out"/test_gpu_direct.c.o "$out"/obj/*.o "${libs[@]}"
g++ $flags -fopenmp -o "$out/convolve_bench" "$out"/convolve_bench.c.o "$out"/tools_*.o "$out"/obj/*.o "${libs[@]}"
export ASAN_OPTIONS=detect_leaks=1
export CONVOLVE_JIT=0 # nothing compiled at run time can load here: the precompiled kernels run
if [ "${1:-}" = "--bench" ]; then
    # the benchmark and copy-bandwidth paths, on tiny shapes (timings mean nothing)
    "$out/convolve_bench" --shape 48x40 --radius 1,2,16 --runs 20
    "$out/convolve_bench" --shape 300 --radius 1,40 --runs 20 --json
    "$out/convolve_bench" --shape 6x7x9 --radius 1 --runs 20 --dtype uint8
    exit
fi
if [ "${1:-}" = "--direct" ]; then
    # the generated direct kernels' test (tests/test_gpu_direct.c), small cases by default
    shift
    args=("$@")
    [ ${#args[@]} -gt 0 ] || args=(--small)
    "$out/test_gpu_direct" "${args[@]}"
    exit
fi
if [ "${1:-}" = "--fast" ]; then
    # the fast strategies' test (tests/test_gpu_fast.c), small cases by default
    shift
    args=("$@")
    [ ${#args[@]} -gt 0 ] || args=(--small)
    "$out/test_gpu_fast" "${args[@]}"
    exit
fi
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--small)
"$out/test_gpu_strategies" "${args[@]}"
