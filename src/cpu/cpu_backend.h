/*
 * cpu_backend.h - what the core asks of the CPU backend (src/cpu/).
 */
#ifndef CONVOLVE_CPU_BACKEND_H
#define CONVOLVE_CPU_BACKEND_H

#include "../internal.h"

/* The CPU strategies; *count receives their number. */
const cvi_strategy *cvi_cpu_strategies(size_t *count);

/* The strategy "auto" picks on the CPU for problem p. */
const cvi_strategy *cvi_cpu_pick(const cvi_problem *p);

/* Runs CPU strategy s on host memory laid out as p says. */
convolve_status cvi_cpu_execute(convolve_context *ctx, const cvi_strategy *s, const cvi_problem *p,
                                const void *in, void *out);

/* The exact double-precision reference: obviously-correct loops, the oracle
 * every other strategy is tested against. Serves every problem.
 * Errors: OUT_OF_MEMORY (index tables). */
convolve_status cvi_cpu_reference(const cvi_problem *p, const void *in, void *out);

/* The number of threads to use for p: its own setting, else all there are. */
int cvi_cpu_threads(const cvi_problem *p);

/* Caps the instruction set of the fast strategies: 0 portable C, 1 AVX2+FMA,
 * 2 AVX-512F; -1 removes the cap. For tests of every path on one machine;
 * not thread-safe (set it before planning). */
void cvi_cpu_fast_limit_isa(int isa);

#endif
