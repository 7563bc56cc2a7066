#!/usr/bin/env bash
# tests/emu/run.sh - a convenience wrapper around the CUDA emulation's CMake
# build (-DCONVOLVE_CUDA_EMULATOR=ON: the .cu files compiled as C++ by the
# host compiler, the CUDA runtime and cuFFT replaced by emu_runtime.cpp and
# emu_cufft.cpp, AddressSanitizer and UBSan on, grid extents capped low so
# the kernels' grid-stride loops run). It configures and builds that in a
# directory of its own and runs one program there, so kernel indexing, the
# host runtime and the tests can be checked on a machine with no GPU.
# `ctest -L emu` in that directory runs the small cases CI runs.
#
#   bash tests/emu/run.sh [test_gpu_strategies options]   (default --small)
#   bash tests/emu/run.sh --fast [..]  test_gpu_fast (default --small)
#   bash tests/emu/run.sh --direct [..] test_gpu_direct (default --small)
#   bash tests/emu/run.sh --stream [..] test_gpu_stream (default --small; CVK_EMU_DEVICES=2)
#   bash tests/emu/run.sh --bench      convolve_bench on tiny shapes
#   EMU_BUILD=dir   build directory (default build-emu); JOBS=n   build jobs (default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${EMU_BUILD:-$root/build-emu}
mkdir -p "$out"
cmake -S "$root" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONVOLVE_CUDA_EMULATOR=ON \
    >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 2; }
cmake --build "$out" -j "${JOBS:-2}" --target test_gpu_strategies test_gpu_fast \
    test_gpu_direct test_gpu_stream convolve_bench
export ASAN_OPTIONS=detect_leaks=1
export CONVOLVE_JIT=0 # nothing compiled at run time can load here: the precompiled kernels run
case "${1:-}" in
--bench)
    # the benchmark and copy-bandwidth paths, on tiny shapes (timings mean nothing)
    "$out/bench/convolve_bench" --shape 48x40 --radius 1,2,16 --runs 20
    "$out/bench/convolve_bench" --shape 300 --radius 1,40 --runs 20 --json
    "$out/bench/convolve_bench" --shape 6x7x9 --radius 1 --runs 20 --dtype uint8
    ;;
--fast | --direct | --stream)
    [ "$1" = --stream ] && export CVK_EMU_DEVICES=${CVK_EMU_DEVICES:-2}
    test=test_gpu_${1#--}
    shift
    args=("$@")
    [ ${#args[@]} -gt 0 ] || args=(--small)
    "$out/tests/$test" "${args[@]}"
    ;;
*)
    args=("$@")
    [ ${#args[@]} -gt 0 ] || args=(--small)
    "$out/tests/test_gpu_strategies" "${args[@]}"
    ;;
esac
