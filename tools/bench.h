/*
 * bench.h - `convolve bench`: times strategies on a chosen shape and prints
 * what each idea buys (tools/bench.c). Called by the CLI's dispatcher.
 */
#ifndef CONVOLVE_TOOLS_BENCH_H
#define CONVOLVE_TOOLS_BENCH_H

/* argv[0] is "bench"; returns the process exit code. */
int convolve_bench_main(int argc, char **argv);

#endif
