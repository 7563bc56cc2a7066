/*
 * dispatch.c - the CPU backend's strategy table, its "auto" choice, and the
 * dispatch of a plan to the chosen strategy.
 */
#include "cpu_backend.h"
#include "fast.h"
#include "image.h"

#include <stdio.h>

#ifdef _OPENMP
#include <omp.h>
#endif

enum { CPU_REFERENCE = 0, CPU_FAST, CPU_DIRECT, CPU_SEPARABLE, CPU_FFT, CPU_IMAGE };

static convolve_status check_separable(const cvi_strategy *s, const cvi_problem *p,
                                       const convolve_context *ctx, char *why, size_t why_size)
{
    (void)s;
    (void)ctx;
    if (p->separable)
        return CONVOLVE_OK;
    snprintf(why, why_size, "the filter is not separable (give one 1-D filter per axis, or "
                            "dense weights of rank one)");
    return CONVOLVE_ERROR_UNSUPPORTED;
}

static convolve_status check_fft(const cvi_strategy *s, const cvi_problem *p,
                                 const convolve_context *ctx, char *why, size_t why_size)
{
    (void)s;
    (void)ctx;
    return cvf_fft_check(p, why, why_size);
}

static convolve_status check_image(const cvi_strategy *s, const cvi_problem *p,
                                   const convolve_context *ctx, char *why, size_t why_size)
{
    (void)s;
    (void)ctx;
    return cvcpu_image_check(p, why, why_size);
}

static const cvi_strategy k_cpu_strategies[] = {
    {"reference", CONVOLVE_BACKEND_CPU, 7u, CPU_REFERENCE,
     "exact loops accumulating in double: the oracle every strategy is tested against", NULL,
     {0, 0, 0}},
    {"fast", CONVOLVE_BACKEND_CPU, 7u, CPU_FAST,
     "picks image (uint8/uint16 images), else direct, separable or fft by cost; threaded and "
     "vectorised (AVX2/AVX-512)",
     NULL,
     {0, 0, 0}},
    {"direct", CONVOLVE_BACKEND_CPU, 7u, CPU_DIRECT,
     "dense taps over rings of gathered rows, register-blocked SIMD, threads over tiles", NULL,
     {0, 0, 0}},
    {"separable", CONVOLVE_BACKEND_CPU, 7u, CPU_SEPARABLE,
     "one 1-D pass per axis, strip-mined through rings of rows that stay in cache",
     check_separable, {0, 0, 0}},
    {"fft", CONVOLVE_BACKEND_CPU, 7u, CPU_FFT,
     "overlap-save FFT tiles: cost nearly independent of the filter size", check_fft,
     {0, 0, 0}},
    {"image", CONVOLVE_BACKEND_CPU, 3u, CPU_IMAGE,
     "uint8/uint16 images, channels interleaved in place: integer running sums for box "
     "filters, float taps (folded when symmetric) otherwise",
     check_image, {0, 0, 0}},
};

const cvi_strategy *cvi_cpu_strategies(size_t *count)
{
    *count = sizeof k_cpu_strategies / sizeof k_cpu_strategies[0];
    return k_cpu_strategies;
}

const cvi_strategy *cvi_cpu_pick(const cvi_problem *p)
{
    (void)p;
    return &k_cpu_strategies[CPU_FAST];
}

int cvi_cpu_threads(const cvi_problem *p)
{
    if (p->threads > 0)
        return p->threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

convolve_status cvi_cpu_execute(convolve_context *ctx, const cvi_strategy *s, const cvi_problem *p,
                                const void *in, void *out)
{
    convolve_status st;
    switch (s->id) {
    case CPU_REFERENCE:
        st = cvi_cpu_reference(p, in, out);
        break;
    case CPU_FAST:
        if (cvcpu_image_check(p, NULL, 0) == CONVOLVE_OK) {
            st = cvcpu_image(p, in, out);
            break;
        }
        switch (cvf_choose(p, in)) {
        case CVF_SEPARABLE: st = cvf_separable(p, in, out); break;
        case CVF_FFT: st = cvf_fft(p, in, out); break;
        default: st = cvf_direct(p, in, out); break;
        }
        break;
    case CPU_DIRECT:
        st = cvf_direct(p, in, out);
        break;
    case CPU_SEPARABLE:
        st = cvf_separable(p, in, out);
        break;
    case CPU_FFT:
        st = cvf_fft(p, in, out);
        break;
    case CPU_IMAGE:
        st = cvcpu_image(p, in, out);
        break;
    default:
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "unknown CPU strategy %d", s->id);
    }
    if (st == CONVOLVE_ERROR_OUT_OF_MEMORY)
        return cvi_error(ctx, st, "out of memory in CPU strategy '%s'", s->name);
    return st;
}
