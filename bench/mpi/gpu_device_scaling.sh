#!/usr/bin/env bash
# The MPI layer with boxes in GPU memory (convolve_mpi_execute_device) on a
# machine of 4 GPUs (OpenMPI), for docs/scale.md: builds; runs the
# device-resident exactness tests (1-4 ranks, every mode, bit for bit against
# one process on the GPU); measures weak scaling 1-4 ranks at 512^3 float32 a
# rank and strong scaling of a 1024^3 volume at 1, 2 and 4 ranks, box:1 and a
# dense 3x3x3, each rank's time beside its single-GPU kernel time and its
# halo exchange time. Prints everything.
# usage: bash bench/mpi/gpu_device_scaling.sh [BUILD_DIR]   (about 10 minutes)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step() { printf '\n== %s\n' "$*"; }

step "build"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$BUILD" -j"$(nproc)" >/dev/null ||
    { echo "build failed"; exit 1; }
nvidia-smi -L; mpirun --version | head -1; nproc; git log --oneline -1

step "device-resident exactness: ctest -L mpi-device (1-4 ranks)"
(cd "$BUILD" && ctest -L mpi-device --output-on-failure) | tail -12

step "device-resident exactness, 4 ranks, 200 cases (informational)"
CONVOLVE_TEST_DEVICE=1 mpirun -n 4 --bind-to none "$BUILD/tests/mpi/test_mpi_exact" 200 2>&1 | tail -6

step "device-resident scaling: weak 1-4 ranks x 512^3, strong 1024^3 at 1, 2, 4 ranks"
python3 bench/mpi/mpi_device_scaling.py --build "$BUILD" --ranks 1,2,3,4 --strong-ranks 1,2,4 \
    --weak-size 512 --strong-size 1024 --filters box:1,dense:3 --rounds 3 --runs 20 \
    --mpirun "mpirun --bind-to none"
