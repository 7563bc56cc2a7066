/*
 * problem.c - what problem.h offers every module besides errors (error.c)
 * and spans (layout.c): whether a strategy serves a problem (its check,
 * run here once for a plan), the range check the backends' FFT strategies
 * share, and the clock of timings and progress.
 */
#include "problem.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

double cvi_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- strategies ------------------------------------------------------------ */

convolve_status cvi_strategy_check(convolve_context *ctx, const cvi_strategy *s,
                                   const cvi_problem *p, const cvi_device *dev)
{
    char why[CVI_REASON_SIZE] = "";
    if (!cvi_strategy_serves_ndim(s, p->ndim))
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "strategy '%s' does not serve %d-D arrays", s->name, p->ndim);
    if (s->check && s->check(s, p, dev, why, sizeof why) != CONVOLVE_OK)
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "strategy '%s' cannot serve this case: %s", s->name, why);
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

convolve_status cvi_fft_range(const cvi_problem *p, int dbl, double points, double xmax, char *why,
                              size_t why_size)
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
