/*
 * convolve_bench.c - `convolve bench` as a program of its own
 * (build/bench/convolve_bench ARGS runs what `convolve bench ARGS` runs), for
 * builds without the CLI (tools/convolve.c) and for scripts/gpu_check.sh. It
 * compiles tools/bench.c into itself: that file uses the public API only.
 */
#include "../tools/bench.c"

int main(int argc, char **argv)
{
    static char name[] = "bench";
    argv[0] = name;
    return convolve_bench_main(argc, argv);
}
