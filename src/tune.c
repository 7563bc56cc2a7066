/*
 * tune.c - the measured autotune: with options.autotune, plan creation
 * times every strategy of the chosen backend that serves the case (each
 * prepared and benchmarked through the backend's table, on the problem the
 * plan already has) and keeps the fastest; the context's wisdom (wisdom.c)
 * remembers the choice per problem class: device, dimensionality, element
 * types, channels, filter extents and kind, mode, extents rounded up to
 * powers of two.
 */
#include "tune.h"
#include "internal.h"
#include "wisdom.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Timed runs per strategy, after one warm-up run. */
#define CVI_TUNE_RUNS 5

static size_t pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n && p <= (SIZE_MAX >> 1))
        p <<= 1;
    return p;
}

/* The problem's class on backend b, as printable text without tabs. */
static void make_key(const convolve_context *ctx, const cvi_problem *p, const cvi_backend *b,
                     char *key, size_t size)
{
    char dev[300];
    b->device_key(&ctx->cuda, p, dev, sizeof dev);
    for (char *c = dev; *c; c++)
        if (*c == '\t' || *c == '\n' || *c == '\r' || (unsigned char)*c < 32)
            *c = ' ';
    const int pad = 3 - p->ndim;
    char shape[96] = "", kern[64] = "";
    for (int a = pad; a < 3; a++) {
        size_t n = strlen(shape), m = strlen(kern);
        snprintf(shape + n, sizeof shape - n, "%s%zu", a > pad ? "x" : "",
                 pow2_at_least(p->shape[a]));
        snprintf(kern + m, sizeof kern - m, "%s%zu", a > pad ? "x" : "", p->ksize[a]);
    }
    snprintf(key, size, "%s;%dd;%s>%s;c%zu;k%s;%s;%s;s%s", dev, p->ndim,
             convolve_dtype_name(p->in_type), convolve_dtype_name(p->out_type), p->channels, kern,
             p->separable ? "separable" : "dense", convolve_mode_name((convolve_mode)p->mode),
             shape);
}

/* 1 if s serves p (on the context's device). */
static int serves(convolve_context *ctx, const cvi_strategy *s, const cvi_problem *p)
{
    return cvi_strategy_check(ctx, s, p, &ctx->cuda) == CONVOLVE_OK;
}

/* The median time (ms) of strategy s on p: prepared, one warm-up run, then
 * CVI_TUNE_RUNS timed runs. 0 when it cannot run (then *ms is unset). */
static int time_strategy(convolve_context *ctx, const cvi_backend *b, const cvi_strategy *s,
                         const cvi_problem *p, double *ms)
{
    double times[CVI_TUNE_RUNS];
    void *state = NULL;
    int ok = b->prepare(ctx, &ctx->cuda, s, p, &state) == CONVOLVE_OK &&
             b->benchmark(ctx, state, 1, CVI_TUNE_RUNS, times) == CONVOLVE_OK;
    b->release(state);
    if (ok) {
        convolve_timing t;
        cvi_summarise_times(times, CVI_TUNE_RUNS, &t);
        *ms = t.median_ms;
    }
    return ok;
}

convolve_status cvi_tune(convolve_context *ctx, const cvi_problem *p, const cvi_backend *b,
                         const cvi_strategy **chosen)
{
    char key[CVI_WISDOM_KEY_SIZE];
    *chosen = NULL;
    make_key(ctx, p, b, key, sizeof key);
    const char *known = cvi_wisdom_lookup(ctx, key);
    if (known) {
        const cvi_strategy *s = cvi_strategy_find(b->id, known);
        if (s && serves(ctx, s, p)) {
            *chosen = s;
            return CONVOLVE_OK;
        }
    }
    /* time each strategy that serves, on data where the backend computes */
    double best = 0;
    for (size_t i = 0; i < b->strategy_count; i++) {
        const cvi_strategy *s = &b->strategies[i];
        double ms;
        if (strcmp(s->name, "reference") != 0 && serves(ctx, s, p) &&
            time_strategy(ctx, b, s, p, &ms) && (!*chosen || ms < best)) {
            *chosen = s;
            best = ms;
        }
    }
    cvi_ok(ctx);
    if (*chosen && !cvi_wisdom_remember(ctx, key, (*chosen)->name, best))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for wisdom");
    return CONVOLVE_OK;
}
