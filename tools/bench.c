/*
 * bench.c - `convolve bench` (placeholder until the CUDA strategies land).
 */
#include "bench.h"

#include <stdio.h>

int convolve_bench_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "convolve bench: not built yet\n");
    return 2;
}
