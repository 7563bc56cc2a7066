#!/usr/bin/env bash
# The MPI layer on the GPU machine (2 GPUs, OpenMPI, 32 cores), for
# docs/scale.md: builds; runs the MPI tests (CPU); runs the exactness test
# on the GPUs (distributed against one process, both on GPUs); shows which
# GPU each rank's process holds; measures weak and strong scaling at 1-2
# ranks on the GPUs (boxes from malloc, then pinned from convolve_host_alloc)
# and 1-16 ranks on the CPUs. Prints everything.
# usage: bash bench/mpi/gpu_scaling.sh [BUILD_DIR]   (about 5 minutes)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
step() { printf '\n== %s\n' "$*"; }

step "build"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$BUILD" -j"$(nproc)" >/dev/null ||
    { echo "build failed"; exit 1; }
nvidia-smi -L; mpirun --version | head -1; nproc; git log --oneline -1

step "MPI tests (CPU)"
(cd "$BUILD" && ctest -L mpi -j4 --output-on-failure) | tail -12

step "exactness on the GPUs: 2 ranks against one process (informational)"
CONVOLVE_TEST_BACKEND=cuda mpirun -n 2 --bind-to none "$BUILD/tests/mpi/test_mpi_exact" 60 2>&1 | tail -15

step "which GPU each rank holds (nvidia-smi while 2 ranks run)"
mpirun -n 2 --bind-to none "$BUILD/bench/mpi_scaling" --backend cuda -n 384 --runs 400 --threads 8 &
bench=$!
sleep 6
nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv
nvidia-smi --query-gpu=index,pci.bus_id --format=csv
wait $bench

step "GPU scaling, 1-2 ranks, 512^3 float32 (per rank for weak)"
python3 bench/mpi/mpi_scaling.py --build "$BUILD" --ranks 1,2 --size 512 --backend cuda \
    --threads 8 --rounds 3 --runs 10 --mpirun "mpirun --bind-to none"

step "the same with pinned boxes (convolve_host_alloc)"
python3 bench/mpi/mpi_scaling.py --build "$BUILD" --ranks 1,2 --size 512 --backend cuda \
    --threads 8 --rounds 3 --runs 10 --mpirun "mpirun --bind-to none" --pinned

step "CPU scaling, 1-16 ranks, one core each, 256^3 float32 (per rank for weak)"
python3 bench/mpi/mpi_scaling.py --build "$BUILD" --ranks 1,2,4,8,16 --size 256 --backend cpu \
    --threads 1 --rounds 2 --runs 5 --mpirun "mpirun --bind-to core"
