/*
 * cpu_backend.h - inside the CPU backend (src/cpu/): the reference, and the
 * instruction-set cap the tests use. The core reaches the backend through
 * its table, cvcpu_backend (src/backend.h, defined in dispatch.c).
 */
#ifndef CONVOLVE_CPU_BACKEND_H
#define CONVOLVE_CPU_BACKEND_H

#include "../backend.h"

/* The exact double-precision reference: obviously-correct loops, the oracle
 * every other strategy is tested against. Serves every problem; `threads`
 * threads (at least 1). Errors: OUT_OF_MEMORY (index tables). */
convolve_status cvcpu_reference(const cvi_problem *p, int threads, const void *in, void *out);

/* Caps the instruction set of the fast and image strategies (cvcpu_isa):
 * 0 portable C, 1 AVX2+FMA, 2 AVX-512F; -1 removes the cap (CONVOLVE_CPU_ISA
 * still applies). For tests of every path on one machine: set it before
 * planning, not while a plan runs. */
void cvcpu_fast_limit_isa(int isa);

#endif
