/*
 * tune.h - the measured autotune (src/tune.c).
 */
#ifndef CONVOLVE_TUNE_H
#define CONVOLVE_TUNE_H

#include "backend.h"

/* *chosen = the fastest strategy of backend b serving p: the one the
 * context's wisdom remembers for p's class, or else the fastest of those
 * timed now (each prepared and benchmarked on p; then remembered). NULL if
 * none serves. Errors: OUT_OF_MEMORY. */
convolve_status cvi_tune(convolve_context *ctx, const cvi_problem *p, const cvi_backend *b,
                         const cvi_strategy **chosen);

#endif
