#!/usr/bin/env bash
# scripts/gpu_check.sh - the one script to run on the GPU machine, from the
# repository root:  OUT=/some/dir bash scripts/gpu_check.sh   (OUT defaults to
# build-gpu/check; BUILD, the build directory, to build-gpu)
#
# Configures and builds (Release, sm_90), runs the GPU tests (the chapter's
# strategies and the fast path), compute-sanitizer (memcheck, racecheck,
# initcheck) on `test_gpu_strategies --small` and `test_gpu_fast --small`
# (memcheck and racecheck also on test_gpu_direct and test_gpu_cast),
# `convolve bench` for every 2-D strategy on 8192x8192 float32 at radii
# 1,2,3,7, bench/peers.py (cuDNN and CuPy against the fast path on the
# issue's target shapes), the CPU tests, short 1-D and 3-D benches (3-D
# uint16 dense too), the arrays past 2^31 elements (`--large`), and a scan
# of the kernels' SASS.
# Steps run in order of importance, each whatever happened before it, each
# with a time limit, so the whole stays under GPU_CHECK_BUDGET seconds
# (default 530); what does not fit is reported SKIPPED. GPU_CHECK_PROFILE=1
# adds Nsight Compute profiles of the fast kernels and an FFT size probe;
# GPU_CHECK_GENERALITY_NCU=1 passes --ncu to the generality suite (Nsight
# Compute's limiter of each case in its targets table; minutes of profiling:
# raise GPU_CHECK_BUDGET, e.g. with GPU_CHECK_ONLY=generality);
# GPU_CHECK_SKIP_LARGE=1 leaves out the arrays past 2^31 elements.
# GPU_CHECK_ONLY="tests sanitize generality ..." runs only the named groups
# (build always runs): tests (ctest gpu; the generated kernels without NVRTC;
# test_gpu_fast on the generated kernels), sanitize (memcheck, racecheck),
# bench (convolve bench), peers (bench/peers.py), generality
# (bench/generality.py, and generated against legacy kernels), cpu (ctest
# cpu), initcheck, large, sass, python (scipy's tests on CuPy/torch arrays,
# python_peers --gpu), tune, lazy (bench/cli_wall.py: the CLI's wall time on
# the photo by backend), mpi (bench/mpi/gpu_scaling.sh; mpi.txt), stream
# (issue 12: test_gpu_stream, memcheck on its small cases, and
# bench/stream_bench with the 2-D case at GPU_CHECK_STREAM_SIZE^2 float32,
# default 32768 (8 GiB in and out; "small" = 8192) and the 3-D 7x7x7 and
# 15x15x15 cases at GPU_CHECK_STREAM_SIZE3^3, default 640; stream.txt and
# stream_timeline.csv (every streamed configuration);
# GPU_CHECK_STREAM_HUGE=BYTES|auto adds an array of BYTES (auto: 1.5x the
# device's memory) in and out, larger than the device (in place with
# GPU_CHECK_STREAM_HUGE_IN_PLACE=1);
# GPU_CHECK_STREAM_TESTS=0 leaves out the test and memcheck),
# link (bench/link_bench: pinned, pageable and staged copies, cudaHostRegister
# by size; bench/host_paths.py: Python on numpy and the CLI on a 1 GiB .npy
# by backend; link.txt), outofcore (bench/outofcore.sh: the CLI on a .npy of
# GPU_CHECK_OUTOFCORE_GIB, default 8, with every device). Logs go to $OUT
# (build.log, tests.log, sanitizer.log, bench.txt, peers.txt, peers.json,
# sass.txt, summary.txt); the summary and the 2-D bench table are printed
# last. Changes no GPU setting.
set -u
ROOT=$(pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
OUT=${OUT:-$BUILD/check}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-530}    # seconds for all steps
STEPS=()
RESULTS=()
LAST_RC=0

elapsed() { echo $(($(date +%s) - START)); }

# want GROUP: is the step group selected (GPU_CHECK_ONLY, default all)?
want() {
    [ -z "${GPU_CHECK_ONLY:-}" ] && return 0
    case " $GPU_CHECK_ONLY " in *" $1 "*) return 0 ;; esac
    return 1
}

# step NAME LOGFILE LIMIT_SECONDS COMMAND...: runs COMMAND with its output
# appended to LOGFILE, under min(LIMIT, time left); records PASS, FAIL (rc),
# TIMEOUT or SKIPPED (no time left).
step() {
    local name=$1 log=$2 limit=$3
    shift 3
    local left=$((BUDGET - $(elapsed)))
    if [ "$left" -lt 15 ]; then
        LAST_RC=124
        STEPS+=("$name")
        RESULTS+=("SKIPPED (no time left)")
        echo "=== $name: SKIPPED (no time left)" >>"$log"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "=== $name ($(date -u +%H:%M:%S), limit ${limit}s): $*" >>"$log"
    local t0 rc
    t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" >"$OUT/.step" 2>&1
    rc=$?
    cat "$OUT/.step" >>"$log"
    local dt=$(($(date +%s) - t0))
    STEPS+=("$name")
    LAST_RC=$rc
    if [ $rc -eq 0 ] && grep -q '\*\*\*Skipped' "$OUT/.step"; then
        RESULTS+=("PASS, but $(grep -c '\*\*\*Skipped' "$OUT/.step") test(s) skipped (${dt}s)")
    elif [ $rc -eq 0 ]; then
        RESULTS+=("PASS (${dt}s)")
    elif [ $rc -eq 77 ]; then
        RESULTS+=("SKIPPED (exit 77: $(grep -m1 -o 'SKIPPED.*' "$OUT/.step" | cut -c1-60))")
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        RESULTS+=("TIMEOUT after ${dt}s")
    else
        RESULTS+=("FAIL rc=$rc (${dt}s)")
    fi
    echo "=== $name: ${RESULTS[-1]}" >>"$log"
}

: >"$OUT/build.log"
: >"$OUT/tests.log"
: >"$OUT/sanitizer.log"
: >"$OUT/bench.txt"
: >"$OUT/sass.txt"
: >"$OUT/peers.txt"
: >"$OUT/generality.txt"
: >"$OUT/tune.txt"
: >"$OUT/python.txt"
: >"$OUT/stream.txt"

{
    echo "date: $(date -u)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
        --format=csv 2>&1 | head -3
    nvcc --version 2>&1 | tail -2
    echo "cores: $(nproc)"
} >"$OUT/summary.txt"

# ---- build ------------------------------------------------------------------
GEN=()
JOBS=()
if command -v ninja >/dev/null 2>&1; then
    GEN=(-G Ninja)
else
    JOBS=(-j 16)
fi
PYARG=()
[ -x /opt/torch/.venv/bin/python3 ] && PYARG=(-DCONVOLVE_PYTHON=/opt/torch/.venv/bin/python3)
step configure "$OUT/build.log" 120 \
    cmake -S "$ROOT" -B "$BUILD" ${GEN[@]+"${GEN[@]}"} -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 ${PYARG[@]+"${PYARG[@]}"}
CMAKE_OK=0
[ -n "${GPU_CHECK_NO_CMAKE:-}" ] && LAST_RC=1   # to try the manual build
if [ "$LAST_RC" -eq 0 ]; then
    step build "$OUT/build.log" 300 cmake --build "$BUILD" ${JOBS[@]+"${JOBS[@]}"}
    [ "$LAST_RC" -eq 0 ] && CMAKE_OK=1
fi

# Without CMake (say the image lacks a library CMake requires): build the
# library, the tests and the bench driver by hand with nvcc and gcc.
fallback_build() {
    set -e
    local cuda=${CUDA_HOME:-/usr/local/cuda} obj=$BUILD/manual
    local nvcc
    nvcc=$(command -v nvcc || echo "$cuda/bin/nvcc")
    local flags=(-I"$ROOT/include" -I"$ROOT/src" -I"$ROOT/src/cuda" -I"$ROOT/tests" -I"$ROOT/tools"
        -I"$cuda/include"
        -DCONVOLVE_WITH_CUDA -D_POSIX_C_SOURCE=200809L -DCONVOLVE_DATA_DIR="\"$ROOT/data\"")
    mkdir -p "$obj" "$BUILD/tests" "$BUILD/bench"
    # the generated kernels' source, embedded for NVRTC (as CMake does)
    cmake -DROOT="$ROOT" -DOUT="$obj/gen_source.c" \
          -DFILES=gen_kernels.cuh,gen_params.h,../kernel_math.h -P "$ROOT/cmake/embed_sources.cmake"
    # objects are named by folder and file (src/plan.c and src/cuda/plan.c differ)
    local pids=() f
    for f in "$ROOT"/src/cuda/*.cu; do
        "$nvcc" -O3 -arch=sm_90 -lineinfo -std=c++17 "${flags[@]}" -c "$f" \
            -o "$obj/cuda_$(basename "$f").o" &
        pids+=($!)
    done
    for f in "$ROOT"/src/*.c "$ROOT"/src/cpu/*.c "$ROOT"/src/cuda/*.c "$ROOT"/src/io/*.c \
        "$obj/gen_source.c"; do
        if [ ! -e "$f" ] || [ "$(basename "$f")" = unavailable.c ]; then
            continue
        fi
        gcc -O2 -std=c11 -fopenmp -Wall "${flags[@]}" -c "$f" \
            -o "$obj/$(basename "$(dirname "$f")")_$(basename "$f").o" &
        pids+=($!)
    done
    for f in "${pids[@]}"; do wait "$f"; done
    for f in cli_common cli_options bench; do # the tools library's part bench uses
        gcc -O2 -std=c11 "${flags[@]}" -c "$ROOT/tools/$f.c" -o "$obj/tools_$f.o"
    done
    for t in test_gpu_strategies test_gpu_fast test_semantics test_bench; do
        gcc -O2 -std=c11 -fopenmp "${flags[@]}" -c "$ROOT/tests/$t.c" -o "$obj/$t.main.o"
        "$nvcc" -arch=sm_90 -o "$BUILD/tests/$t" "$obj/$t.main.o" "$obj"/tools_*.o "$obj"/*.c.o \
            "$obj"/*.cu.o -Xcompiler -fopenmp -lcufft -lm -ldl -lpthread
    done
    gcc -O2 -std=c11 "${flags[@]}" -c "$ROOT/bench/convolve_bench.c" -o "$obj/bench.main.o"
    "$nvcc" -arch=sm_90 -o "$BUILD/bench/convolve_bench" "$obj/bench.main.o" "$obj"/tools_*.o \
        "$obj"/*.c.o "$obj"/*.cu.o -Xcompiler -fopenmp -lcufft -lm -ldl -lpthread
}
if [ "$CMAKE_OK" -eq 0 ]; then
    export -f fallback_build
    export ROOT BUILD
    step "manual build (no CMake)" "$OUT/build.log" 240 bash -c fallback_build
fi
grep -E "convolve: CUDA backend|warning|Could NOT find|CMake Error" "$OUT/build.log" |
    head -20 >>"$OUT/summary.txt"

TEST=$BUILD/tests/test_gpu_strategies
FAST=$BUILD/tests/test_gpu_fast
PY=python3
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
BENCH=$BUILD/convolve
BENCH_ARGS=(bench)
if [ ! -x "$BENCH" ]; then
    BENCH=$BUILD/bench/convolve_bench
    BENCH_ARGS=()
fi

# ---- tests, sanitizers, benches: most important first -------------------------
DIRECT=$BUILD/tests/test_gpu_direct
if want tests; then
    if [ "$CMAKE_OK" -eq 1 ]; then
        # shellcheck disable=SC2016 # $0 is expanded by the inner bash
        # two at a time (the tests share the GPU; test_gpu_faults runs alone)
        step "ctest gpu" "$OUT/tests.log" 300 \
            bash -c 'cd "$0" && ctest -L gpu -j 2 --output-on-failure --timeout 290' "$BUILD"
    else
        step "test_gpu_strategies" "$OUT/tests.log" 180 "$TEST"
    fi
    [ -x "$DIRECT" ] && step "direct, generic kernels (no NVRTC)" "$OUT/tests.log" 90 \
        env CONVOLVE_JIT=0 "$DIRECT" --small --cases 80
    [ -x "$FAST" ] && step "test_gpu_fast, generated kernels" "$OUT/tests.log" 90 \
        env CONVOLVE_DIRECT_KERNELS=generated "$FAST"
fi
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if want sanitize; then
    for tool in memcheck racecheck; do
        step "sanitizer $tool strategies" "$OUT/sanitizer.log" 100 \
            "$CS" --tool "$tool" --error-exitcode 99 --print-limit 20 "$TEST" --small
        [ -x "$FAST" ] && step "sanitizer $tool fast" "$OUT/sanitizer.log" 100 \
            "$CS" --tool "$tool" --error-exitcode 99 --print-limit 20 "$FAST" --small
        [ -x "$DIRECT" ] && step "sanitizer $tool direct" "$OUT/sanitizer.log" 120 \
            "$CS" --tool "$tool" --error-exitcode 99 --print-limit 20 "$DIRECT" --small --cases 12
        # scipy's cast: the integer-image kernel (src/cuda/fast_cast.cu)
        [ -x "$BUILD/tests/test_gpu_cast" ] && step "sanitizer $tool cast" "$OUT/sanitizer.log" 120 \
            "$CS" --tool "$tool" --error-exitcode 99 --print-limit 20 "$BUILD/tests/test_gpu_cast" --small
    done
fi
want bench && step "bench 2-D 8192x8192 f32" "$OUT/bench.txt" 120 \
    "$BENCH" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} --shape 8192x8192 --radius 1,2,3,7 --dtype float32 \
    --mode constant --runs 20
if want peers && [ -x "$BUILD/convolve" ]; then
    step "peers (cuDNN, CuPy)" "$OUT/peers.txt" 200 \
        env PYTHONUNBUFFERED=1 "$PY" "$ROOT/bench/peers.py" --build "$BUILD" --runs 20 \
        --json "$OUT/peers.json"
fi
if want generality; then
    GEN_STRATS=()
    [ -n "${GPU_CHECK_FAST_STRATEGIES:-}" ] && GEN_STRATS=(--strategies direct,separable,fft)
    GEN_LIMIT=300
    if [ "${GPU_CHECK_GENERALITY_NCU:-0}" = 1 ]; then
        GEN_STRATS+=(--ncu --ncu-timeout 120)
        GEN_LIMIT=3000  # ncu runs each case in a child; the budget still caps it
    fi
    step "generality suite" "$OUT/generality.txt" "$GEN_LIMIT" \
        env PYTHONUNBUFFERED=1 "$PY" "$ROOT/bench/generality.py" --build "$BUILD" --runs 15 \
        ${GEN_STRATS[@]+"${GEN_STRATS[@]}"} --json "$OUT/generality.json"
    [ -n "${GPU_CHECK_GEN_ONLY:-}" ] && step "generality, generated kernels only" "$OUT/generality.txt" 120 \
        env PYTHONUNBUFFERED=1 CONVOLVE_DIRECT_KERNELS=generated "$PY" \
        "$ROOT/bench/generality.py" --build "$BUILD" --runs 15 --no-strategies --only "f32"
fi
if want python; then
    # the Python package on device arrays: scipy's own filter tests with CuPy
    # arrays and PyTorch tensors in place of numpy ones, and its benchmark
    # (the GPU machine's scipy is newer than Debian's, and its tests need
    # scipy's array-API fixtures: a copy of Debian's tests folder carried in
    # .scipytests/, not committed, runs the same tests as on the CPU)
    SUITE_ARGS=()
    [ -d "$ROOT/.scipytests/scipy_ndimage_tests" ] &&
        SUITE_ARGS=(--tests-dir "$ROOT/.scipytests/scipy_ndimage_tests")
    for arrays in cupy torch; do
        step "scipy suite on $arrays" "$OUT/python.txt" 150 env PYTHONUNBUFFERED=1 \
            CONVOLVE_BUILD_DIR="$BUILD" "$PY" "$ROOT/tests/py/test_scipy_suite.py" \
            --arrays "$arrays" ${SUITE_ARGS[@]+"${SUITE_ARGS[@]}"}
    done
    step "python peers (GPU)" "$OUT/python.txt" 120 env PYTHONUNBUFFERED=1 \
        CONVOLVE_BUILD_DIR="$BUILD" "$PY" "$ROOT/bench/python_peers.py" --gpu
    # integer images with scipy's cast: CuPy arrays against cupyx, numpy against scipy
    step "python integer images (GPU)" "$OUT/python.txt" 150 env PYTHONUNBUFFERED=1 \
        CONVOLVE_BUILD_DIR="$BUILD" "$PY" "$ROOT/bench/python_gpu_integer.py" --runs 7
fi
if want lazy && [ -x "$BUILD/convolve" ]; then
    # issue 15: the CLI on the bundled photo, whole-process wall time by
    # backend (auto must not pay for CUDA's start-up on a photo)
    step "cli wall time (photo)" "$OUT/lazy.txt" 90 "$PY" "$ROOT/bench/cli_wall.py" \
        --cli "$BUILD/convolve" --runs 11 --backends cpu,auto,cuda
fi
if want mpi; then
    # the MPI layer on the GPUs (bench/mpi/gpu_scaling.sh: tests, exactness
    # on the GPUs, scaling); meant for the 2-GPU machine
    step "mpi gpu scaling" "$OUT/mpi.txt" 420 bash "$ROOT/bench/mpi/gpu_scaling.sh" "$BUILD"
fi
if want tune; then
    # the generated kernels under NVRTC options (GPU_CHECK_TUNE_VARIANTS, one
    # per line) on a few cases, each variant compiled and timed alone
    TUNE_CASES=${GPU_CHECK_TUNE_CASES:-"dense 3x3 zero|dense 9x9 zero|u8 RGB 4096^2 gaussian:2.5|gaussian:2 (17|u16 8192^2 dense 5x5|3-D 512^3 3x3x3|1-D 2^28 31|u8 gray"}
    while IFS= read -r variant; do
        step "tune [$variant]" "$OUT/tune.txt" 100 env PYTHONUNBUFFERED=1 \
            CONVOLVE_DIRECT_KERNELS=generated CONVOLVE_JIT_DEFINES="$variant" "$PY" \
            "$ROOT/bench/generality.py" --build "$BUILD" --runs 10 --no-strategies \
            --only "$TUNE_CASES"
    done <<<"${GPU_CHECK_TUNE_VARIANTS:-$(printf '%s\n' "" "-DCVK_GEN_MIN_BLOCKS=3" "-DCVK_GEN_MIN_BLOCKS=4" "-DCVK_GEN_MAX_UNITS=0")}"
fi
if want cpu; then
    if [ "$CMAKE_OK" -eq 1 ]; then
        # shellcheck disable=SC2016
        step "ctest cpu" "$OUT/tests.log" 120 \
            bash -c 'cd "$0" && ctest -L cpu --output-on-failure --timeout 110' "$BUILD"
    else
        step "test_semantics" "$OUT/tests.log" 60 "$BUILD/tests/test_semantics"
        step "test_bench" "$OUT/tests.log" 60 "$BUILD/tests/test_bench"
    fi
fi
if want initcheck; then
    step "sanitizer initcheck strategies" "$OUT/sanitizer.log" 100 \
        "$CS" --tool initcheck --error-exitcode 99 --print-limit 20 "$TEST" --small
    [ -x "$FAST" ] && step "sanitizer initcheck fast" "$OUT/sanitizer.log" 100 \
        "$CS" --tool initcheck --error-exitcode 99 --print-limit 20 "$FAST" --small
fi
if want bench; then
    step "bench 1-D 2^26 f32" "$OUT/bench.txt" 60 \
        "$BENCH" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} --shape 67108864 --radius 1,3,15 --runs 20
    step "bench 3-D 256^3 f32" "$OUT/bench.txt" 60 \
        "$BENCH" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} --shape 256x256x256 --radius 1,2,3 --runs 20
    step "bench 3-D 256^3 u16 direct" "$OUT/bench.txt" 60 \
        "$BENCH" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} --shape 256x256x256 --dtype uint16 \
        --radius 1,2,4 --mode mirror --strategy direct --runs 20
    step "bench 2-D reflect direct" "$OUT/bench.txt" 60 \
        "$BENCH" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} --shape 8192x8192 --radius 1,2,3 --mode reflect \
        --strategy direct --runs 20
    step "bench 2-D gaussian separable" "$OUT/bench.txt" 60 \
        "$BENCH" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} --shape 8192x8192 --radius 2,4,8,16 \
        --filter gaussian --strategy separable --runs 20
fi
if want stream; then
    # streamed host-memory plans (issue 12): the test, memcheck on its small
    # cases, and the bench (its tables are printed at the end)
    SSIZE=${GPU_CHECK_STREAM_SIZE:-32768}
    [ "$SSIZE" = small ] && SSIZE=8192
    [ "$SSIZE" = large ] && SSIZE=32768
    SSIZE3=${GPU_CHECK_STREAM_SIZE3:-640}
    # (GPU_CHECK_STREAM_TESTS=0: only the benches, when ctest gpu ran the test)
    if [ "${GPU_CHECK_STREAM_TESTS:-1}" != 0 ]; then
        step "test_gpu_stream" "$OUT/tests.log" 150 "$BUILD/tests/test_gpu_stream" --cases 200
        # the test calls cudaHostRegister/Unregister wrongly on purpose (its
        # error paths): API errors are not reported, memory errors are
        step "sanitizer memcheck stream" "$OUT/sanitizer.log" 90 \
            "$CS" --tool memcheck --report-api-errors no --error-exitcode 99 --print-limit 20 \
            "$BUILD/tests/test_gpu_stream" --small --cases 20
    fi
    rm -f "$OUT/stream_timeline.csv"
    step "stream bench ${SSIZE}^2, ${SSIZE3}^3" "$OUT/stream.txt" 150 \
        "$BUILD/bench/stream_bench" --size "$SSIZE" --size3 "$SSIZE3" --runs 5 \
        --timeline "$OUT/stream_timeline.csv"
    # the compute-bound 3-D case: 15x15x15
    step "stream bench ${SSIZE3}^3 15^3" "$OUT/stream.txt" 120 \
        "$BUILD/bench/stream_bench" --skip-2d --size3 "$SSIZE3" --k3 15 --runs 5 \
        --timeline "$OUT/stream_timeline.csv"
    # an array larger than the device (in and out of GPU_CHECK_STREAM_HUGE
    # bytes each, e.g. 220G on an H200 host with 512 GiB), when asked for
    # (GPU_CHECK_STREAM_HUGE_IN_PLACE=1: one array, filtered in place, so
    # that an H200's 1.5x, 210 GiB, fits a host of 251 GiB)
    HUGE_ARGS=(--huge "${GPU_CHECK_STREAM_HUGE:-}")
    [ "${GPU_CHECK_STREAM_HUGE_IN_PLACE:-0}" = 1 ] && HUGE_ARGS+=(--in-place)
    [ -n "${GPU_CHECK_STREAM_HUGE:-}" ] && step "stream bench ${HUGE_ARGS[*]}" \
        "$OUT/stream.txt" 400 "$BUILD/bench/stream_bench" "${HUGE_ARGS[@]}"
fi
if want link; then
    # host arrays on the GPU (issue 23): what each way of moving them costs
    # (bench/link_bench), then the users' paths by backend (bench/host_paths.py:
    # Python on numpy, the CLI on a 1 GiB .npy); link.txt
    : >"$OUT/link.txt"
    step "link bench" "$OUT/link.txt" 120 "$BUILD/bench/link_bench" --mib 256 --runs 5
    step "host paths" "$OUT/link.txt" 200 env PYTHONUNBUFFERED=1 \
        PYTHONPATH="$BUILD/python" "$PY" "$ROOT/bench/host_paths.py" --build "$BUILD"
fi
if want outofcore; then
    # the CLI on a .npy file of GPU_CHECK_OUTOFCORE_GIB (default 8) with every
    # device: wall time, peak resident memory by kind, rows checked
    step "outofcore ${GPU_CHECK_OUTOFCORE_GIB:-8} GiB, all devices" "$OUT/stream.txt" 240 \
        env BUILD="$BUILD" PYTHON="$PY" SIZE_GIB="${GPU_CHECK_OUTOFCORE_GIB:-8}" DEVICES=all \
        bash "$ROOT/bench/outofcore.sh"
fi
want large && [ -z "${GPU_CHECK_SKIP_LARGE:-}" ] &&
    step "test --large (>2^31 elements)" "$OUT/tests.log" 200 "$TEST" --large
if [ -n "${GPU_CHECK_PROFILE:-}" ]; then
    # Nsight Compute on the fast kernels (clocks left alone), into bench.txt
    NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    # each: LABEL|KERNEL REGEX|bench options (the shapes of the issue's targets);
    # GPU_CHECK_PROFILE=gen profiles the generated kernels only
    [ "$GPU_CHECK_PROFILE" = gen ] || for spec in "direct 2-D r=1|fd_kernel|--shape 8192x8192 --radius 1 --strategy direct" \
        "direct 2-D r=3|fd_kernel|--shape 8192x8192 --radius 3 --strategy direct" \
        "direct 2-D r=4|fd_kernel|--shape 8192x8192 --radius 4 --strategy direct" \
        "direct 2-D r=7|fd_kernel|--shape 8192x8192 --radius 7 --strategy direct" \
        "separable r=2|fd_kernel|--shape 8192x8192 --radius 2 --strategy separable --filter gaussian" \
        "separable r=16|fd_kernel|--shape 8192x8192 --radius 16 --strategy separable --filter gaussian" \
        "u8 RGB r=1|fd_kernel|--shape 8192x8192 --radius 1 --strategy direct --dtype uint8 --channels 3" \
        "direct 3-D r=1|f3_kernel|--shape 512x512x512 --radius 1 --strategy direct"; do
        IFS='|' read -r label regex opts <<<"$spec"
        # shellcheck disable=SC2086 # the options split on purpose
        step "ncu $label" "$OUT/bench.txt" 90 "$NCU" --clock-control none -k "regex:$regex" \
            --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
            --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
            "$BENCH" ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} --runs 20 $opts
    done
    # the generated kernels, run by bench/generality.py (one case each)
    for spec in "gen tile f32 4x4|f32 8192^2 even 4x4" "gen tile f64 3x3|f64 8192^2 dense 3x3" \
        "gen strip u8 RGB|u8 RGB 4096^2 gaussian:2.5" "gen strip f32 65|gaussian:8 (65" \
        "gen 3-D separable|3-D 512^3 gaussian:1.5" "gen tile u16 5x5|u16 8192^2 dense 5x5" \
        "gen tile u8 gray 3x3|u8 gray 8192^2 dense 3x3" "gen tile u8 RGBA box:2|u8 RGBA 4096^2 box:2" \
        "gen tile f32 9x9|dense 9x9 zero" "gen tile 1-D 65 taps|1-D 2^28 gaussian:8"; do
        IFS='|' read -r label only <<<"$spec"
        step "ncu $label" "$OUT/bench.txt" 90 "$NCU" --clock-control none -k "regex:cvk_gen" \
            --launch-skip 4 --launch-count 1 --section SpeedOfLight --section Occupancy \
            --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
            --section LaunchStats "$PY" "$ROOT/bench/generality.py" --build "$BUILD" --runs 3 \
            --no-strategies --only "$only"
    done
    [ "$GPU_CHECK_PROFILE" = gen ] || step "fft sizes" "$OUT/bench.txt" 60 "$PY" "$ROOT/bench/fft_sizes.py"
fi

# ---- registers and spills from the SASS -------------------------------------
sass_scan() {
    local o
    for o in "$BUILD"/CMakeFiles/convolve_objects.dir/src/cuda/*.cu.o \
        "$BUILD"/manual/*.cu.o; do
        [ -e "$o" ] || continue
        echo "## $(basename "$o")"
        cuobjdump -res-usage "$o" 2>&1 | grep -E "Function|REG" | paste - - |
            sed -E 's/^ *Function ([^ ]+):.*REG:([0-9]+).*STACK:([0-9]+).*SHARED:([0-9]+).*LOCAL:([0-9]+).*/\1 REG=\2 STACK=\3 SHARED=\4 LOCAL=\5/' |
            c++filt
        echo "instructions per kernel: local (LDL/STL, want 0), constant-bank (LDC),"
        echo "shared (LDS), global (LDG) loads; global stores of 16, 8, 4 and 1-2 bytes"
        echo "(a kernel that writes whole vectors but shows only 4-byte stores had its"
        echo "vector stores split by the compiler, as fast_direct3d.cu's were):"
        cuobjdump -sass "$o" 2>/dev/null | awk '
            function out() { if (name != "") printf "local %3d  LDC %3d  LDS %3d  LDG %3d  STG 16/8/4/1-2 %3d %3d %3d %3d  %s\n", l, c, s, g, s16, s8, s4, s1, name }
            /Function :/ { out(); name = $3; l = c = s = g = s16 = s8 = s4 = s1 = 0 }
            /LDL|STL/ { l++ }
            /LDC/ { c++ }
            /LDS/ { s++ }
            /LDG/ { g++ }
            /[^A-Z]STG\./ { if ($0 ~ /STG\.[A-Z.]*128/) s16++; else if ($0 ~ /STG\.[A-Z.]*64/) s8++;
                           else if ($0 ~ /STG\.[A-Z.]*[US](8|16)/) s1++; else s4++ }
            END { out() }' | c++filt | sort -k2,2nr | head -60
    done
}
export -f sass_scan
export BUILD
want sass && step "sass scan" "$OUT/sass.txt" 60 bash -c sass_scan

# ---- summary ----------------------------------------------------------------
{
    echo
    echo "elapsed: $(elapsed)s"
    grep -hE "^test_gpu_(strategies|fast|direct): [0-9]+ cases|checks, [0-9]+ failures|^FAIL|^ERROR|Error:|tests passed|tests failed|\((Failed|Timeout|SEGFAULT|Subprocess aborted)\)|Exception" \
        "$OUT/tests.log" | head -40
    grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|========= (Invalid|Uninitialized|Race|Error)" \
        "$OUT/sanitizer.log" | sort | uniq -c | head -20
    echo
    printf '%-32s %s\n' STEP RESULT
    for i in "${!STEPS[@]}"; do
        printf '%-32s %s\n' "${STEPS[$i]}" "${RESULTS[$i]}"
    done
    echo
    echo "2-D bench (bench.txt has the 1-D and 3-D ones):"
    awk '/^=== bench 2-D/ {on = 1; next} /^=== / {on = 0} on' "$OUT/bench.txt"
    echo
    echo "peers (peers.txt has the details):"
    grep -E "^\|" "$OUT/peers.txt"
    echo
    echo "generality (generality.txt has the details):"
    grep -E "^\|" "$OUT/generality.txt"
    echo
    echo "cli wall time (lazy.txt):"
    grep -E "^\||^auto" "$OUT/lazy.txt"
    echo
    echo "tuning variants (tune.txt):"
    grep -E "^=== tune|^\| [a-z0-9]" "$OUT/tune.txt" | grep -v "^| case"
    if [ -s "$OUT/link.txt" ]; then
        echo
        echo "host arrays on the GPU (link.txt):"
        grep -vE "^=== " "$OUT/link.txt"
    fi
    if [ -s "$OUT/stream.txt" ]; then
        echo
        echo "streamed host-memory plans (stream.txt; per-slab timeline: stream_timeline.csv):"
        grep -E "^#|^\||^ideal|stream_bench|^outofcore|filled" "$OUT/stream.txt"
    fi
} >>"$OUT/summary.txt"
rm -f "$OUT/.step"
# at most 8 files come back from the GPU machine: the small logs go into one
for f in build.log sanitizer.log sass.txt peers.txt python.txt tune.txt lazy.txt mpi.txt; do
    [ -s "$OUT/$f" ] && { echo "##### $f"; cat "$OUT/$f"; } >>"$OUT/logs.txt"
    rm -f "$OUT/$f"
done
cat "$OUT/summary.txt"
