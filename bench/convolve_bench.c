/*
 * convolve_bench.c - `convolve bench` as a program of its own
 * (build/bench/convolve_bench ARGS runs what `convolve bench ARGS` runs), for
 * builds without the CLI (tools/convolve.c) and for scripts/gpu_check.sh. The
 * command itself is tools/bench.c, in the tools library.
 */
#include "bench.h"

int main(int argc, char **argv)
{
    static char name[] = "bench";
    argv[0] = name;
    return cli_bench_main(argc, argv);
}
