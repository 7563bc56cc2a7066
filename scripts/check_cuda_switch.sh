#!/usr/bin/env bash
# check_cuda_switch.sh CLI LIBRARY CUDA_BUILT - the switch that leaves the
# CUDA backend out (CTest check_cuda_switch):
# 1. `make CUDA=OFF` and `make CUDA=ON` hand -DCONVOLVE_WITH_CUDA to CMake,
#    also beside CMAKE_FLAGS; plain `make` hands none, nor does an
#    environment variable CUDA of another value; `make CUDA=yes` is refused
#    (make -n: nothing is built);
# 2. this build's library holds CUDA exactly when CMake built the backend
#    (CUDA_BUILT: ON or OFF): without it (make test-sanitize's build, made
#    with CONVOLVE_WITH_CUDA=OFF where nvcc is installed), the CLI says
#    "cuda (not built)", and the library has no GPU code (.nv_fatbin), no
#    CUDA runtime inside and needs no CUDA library.
# Exits 1 and says what differs.
set -uo pipefail
cd "$(dirname "$0")/.."
cli=$1 lib=$2 built=$3
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if ! command -v make >/dev/null; then
    echo "skipped: no make"
    exit 77
fi
# as a user types it: not inside another make's variables (make test CUDA=OFF)
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES CUDA CMAKE_FLAGS PYTHON
configure_line() { make -n --no-print-directory build BUILD=build-check "$@" 2>&1 | grep -m1 -E '^cmake -S|\*\*\*'; }
for v in OFF ON; do
    line=$(configure_line CUDA=$v)
    echo "make CUDA=$v: $line"
    [[ $line == *" -DCONVOLVE_WITH_CUDA=$v"* ]] || bad "make CUDA=$v does not pass -DCONVOLVE_WITH_CUDA=$v"
done
line=$(configure_line CUDA=OFF CMAKE_FLAGS=-DCONVOLVE_TIFF=AUTO)
echo "make CUDA=OFF CMAKE_FLAGS=...: $line"
[[ $line == *" -DCONVOLVE_WITH_CUDA=OFF"* && $line == *" -DCONVOLVE_TIFF=AUTO"* ]] ||
    bad "make CUDA=OFF CMAKE_FLAGS=... loses one of them"
line=$(configure_line)
echo "make: $line"
[[ $line != *CONVOLVE_WITH_CUDA* ]] || bad "plain make passes CONVOLVE_WITH_CUDA"
line=$(CUDA=/usr/local/cuda configure_line)
echo "CUDA=/usr/local/cuda in the environment, make: $line"
[[ $line == "cmake -S"* && $line != *CONVOLVE_WITH_CUDA* ]] ||
    bad "an environment variable CUDA of another value reaches CMake"
line=$(configure_line CUDA=yes)
echo "make CUDA=yes: $line"
[[ $line == *"give ON or OFF"* ]] || bad "make CUDA=yes is not refused"

backends=$("$cli" info | grep -m1 '^backends:')
fatbin=$(readelf -S -W "$lib" | grep -c '\.nv_fatbin')
needed=$(readelf -d "$lib" | grep NEEDED | grep -c -E 'libcu(dart|fft|da)')
runtime=$(grep -c -a 'libcuda\.so' "$lib")
size=$(stat -L -c %s "$lib")
echo "built with CUDA: $built; $backends; .nv_fatbin sections: $fatbin; CUDA libraries needed:" \
     "$needed; CUDA runtime inside: $runtime; $(basename "$lib"): $size bytes"
if [ "$built" = ON ]; then
    [[ $backends == *"cuda (built)"* ]] || bad "the CLI does not report the CUDA backend"
    [ "$fatbin" -gt 0 ] || bad "no GPU code in the library"
else
    [[ $backends == *"cuda (not built)"* ]] || bad "the CLI reports a CUDA backend"
    [ "$fatbin" -eq 0 ] || bad "GPU code in a library built without CUDA"
    [ "$needed" -eq 0 ] || bad "a library built without CUDA needs a CUDA library"
    [ "$runtime" -eq 0 ] || bad "the CUDA runtime in a library built without CUDA"
fi
[ $fail -eq 0 ] && echo "check_cuda_switch: passed"
exit $fail
