/*
 * strategy.c - the backends' tables and the registry of named strategies:
 * the CPU backend's strategies followed by the CUDA backend's (none when
 * CUDA is not built); and the range check the backends' FFT strategies
 * share.
 */
#include "backend.h"
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const cvi_backend *cvi_backend_of(convolve_backend id)
{
    return id == CONVOLVE_BACKEND_CUDA ? &cvcu_backend : &cvcpu_backend;
}

int convolve_backend_built(convolve_backend backend)
{
    switch (backend) {
    case CONVOLVE_BACKEND_AUTO:
    case CONVOLVE_BACKEND_CPU:
        return 1;
    case CONVOLVE_BACKEND_CUDA:
        return cvcu_backend.prepare != NULL;
    }
    return 0;
}

/* The registry: the CPU strategies, then the CUDA ones. */
static size_t strategy_total(void)
{
    return cvcpu_backend.strategy_count + cvcu_backend.strategy_count;
}

static const cvi_strategy *strategy_at(size_t i)
{
    if (i < cvcpu_backend.strategy_count)
        return &cvcpu_backend.strategies[i];
    i -= cvcpu_backend.strategy_count;
    if (i < cvcu_backend.strategy_count)
        return &cvcu_backend.strategies[i];
    return NULL;
}

const cvi_strategy *cvi_strategy_find(convolve_backend backend, const char *name)
{
    if (backend != CONVOLVE_BACKEND_CPU && backend != CONVOLVE_BACKEND_CUDA)
        return NULL;
    const cvi_backend *b = cvi_backend_of(backend);
    for (size_t i = 0; i < b->strategy_count; i++)
        if (strcmp(b->strategies[i].name, name) == 0)
            return &b->strategies[i];
    return NULL;
}

size_t convolve_strategy_count(void)
{
    return strategy_total();
}

convolve_status convolve_strategy_get(size_t index, convolve_strategy_info *info)
{
    const cvi_strategy *s = strategy_at(index);
    if (!s || !info)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    info->name = s->name;
    info->backend = s->backend;
    info->dims = s->dims;
    info->summary = s->summary;
    for (int a = 0; a < 3; a++)
        info->tile[a] = s->tile[a];
    return CONVOLVE_OK;
}

/* ---- the FFT's range ------------------------------------------------------ */

/* Writes 2^l2 (which may lie past a double) as "4.27e+310". */
static void format_pow2(char *buf, size_t size, double l2)
{
    const double d = l2 * 0.30102999566398120; /* log10(2) */
    const double e = floor(d);
    snprintf(buf, size, "%.3ge%+d", pow(10.0, d - e), (int)e);
}

convolve_status cvi_fft_range(const cvi_problem *p, int dbl, double points, double xmax,
                              char *why, size_t why_size)
{
    if (why_size)
        why[0] = '\0';
    double wmax = 0.0, rel = 0.0; /* sum|w| = wmax x rel, which may lie past a double */
    for (size_t i = 0; i < p->kcount; i++)
        wmax = fabs(p->weights[i]) > wmax ? fabs(p->weights[i]) : wmax;
    if (wmax == 0.0)
        return CONVOLVE_OK;
    for (size_t i = 0; i < p->kcount; i++)
        rel += fabs(p->weights[i]) / wmax;
    const double top = dbl ? DBL_MAX : FLT_MAX;
    double x = xmax;
    if (x < 0) {
        switch (p->in_type) {
        case CONVOLVE_UINT8: x = 255.0; break;
        case CONVOLVE_UINT16: x = 65535.0; break;
        case CONVOLVE_FLOAT32: x = FLT_MAX; break;
        default: x = DBL_MAX; break;
        }
        x = x < sqrt(top) ? x : sqrt(top);
    }
    if (p->mode == CVI_MODE_CONSTANT && isfinite(p->cval) && fabs(p->cval) > x)
        x = fabs(p->cval);
    /* log2 of the largest magnitude allowed in, times 2 x points x sum|w| */
    const double room = log2(top) - 1.0 - log2(points) - log2(wmax) - log2(rel);
    if (x == 0.0 || log2(x) <= room)
        return CONVOLVE_OK;
    if (why_size) {
        char sum[32], most[32], want[32];
        format_pow2(sum, sizeof sum, log2(wmax) + log2(rel));
        format_pow2(most, sizeof most, room);
        format_pow2(want, sizeof want, log2(x));
        snprintf(why, why_size,
                 "with sum |w| = %s its %s transforms could overflow for inputs beyond %s (it "
                 "must serve inputs up to %s); use 'direct' (it overflows only where the "
                 "result does) or smaller weights",
                 sum, dbl ? "float64" : "float32", most, want);
    }
    return CONVOLVE_ERROR_UNSUPPORTED;
}
