/*
 * bench.h - `convolve bench`: times strategies on a chosen shape and prints
 * what each idea buys (tools/bench.c, in the tools library). Called by the
 * CLI's dispatcher and by build/bench/convolve_bench.
 */
#ifndef CONVOLVE_TOOLS_BENCH_H
#define CONVOLVE_TOOLS_BENCH_H

#include "cli.h"

/* `convolve bench` described: its options and usage text. */
extern const cli_command cli_bench_command;

/* argv[0] is "bench"; returns the process exit code. */
int cli_bench_main(int argc, char **argv);

#endif
