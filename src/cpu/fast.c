/*
 * fast.c - the `fast` CPU strategy's choice among direct, separable, FFT and
 * (box filters along one axis) running sums for a problem: the cheapest by a cost model of each, in nanoseconds per
 * output element, fitted to measurements on 4096 x 4096 float32 images
 * (2 threads, AVX-512): direct costs about 15 ps per tap plus the memory
 * traffic, a separable pass about 25 ps per tap, and the FFT about 0.27 ns
 * per unit of its own work model (cvcpu_fft_cost) plus its gathers and stores.
 * Measured crossings: separable beats direct from 3x3 on; the FFT beats
 * direct from about 15x15 (2-D) on.
 * Only the ratios matter, and they hold for double and other instruction
 * sets within the accuracy of such a model.
 */
#include "fast.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* The largest magnitude of the input's elements (and of cval, where it is
 * read): infinity when one is NaN or infinite; for integer inputs, the
 * type's largest value. */
static double input_magnitude(const cvi_problem *p, int threads, const void *in)
{
    if (p->mode == CVI_MODE_CONSTANT && !isfinite(p->cval))
        return INFINITY;
    if (p->in_type == CONVOLVE_UINT8)
        return 255.0;
    if (p->in_type == CONVOLVE_UINT16)
        return 65535.0;
    const ptrdiff_t rows = (ptrdiff_t)(p->shape[0] * p->shape[1] * p->channels);
    unsigned bad = 0;
    double big = 0.0;
    if ((double)rows * (double)p->shape[2] < 4e6)
        threads = 1;
CVCPU_OMP(omp parallel for schedule(static) num_threads(threads) reduction(| : bad) reduction(max : big))
for (ptrdiff_t r = 0; r < rows; r++) {
    size_t c = (size_t)r % p->channels, i = (size_t)r / p->channels;
    const char *row = (const char *)in + (ptrdiff_t)(i / p->shape[1]) * p->in_strides[0] +
                      (ptrdiff_t)(i % p->shape[1]) * p->in_strides[1] +
                      (ptrdiff_t)c * p->in_cstride;
    const ptrdiff_t st = p->in_strides[2];
    unsigned b = 0; /* an exponent of all ones: infinity or NaN */
    if (p->in_type == CONVOLVE_FLOAT32) {
        float m = 0.0f;
        for (size_t k = 0; k < p->shape[2]; k++) {
            uint32_t u;
            float v;
            memcpy(&u, row + (ptrdiff_t)k * st, sizeof u);
            b |= (u & 0x7f800000u) == 0x7f800000u;
            u &= 0x7fffffffu;
            memcpy(&v, &u, sizeof v);
            m = v > m ? v : m;
        }
        big = (double)m > big ? (double)m : big;
    } else {
        double m = 0.0;
        for (size_t k = 0; k < p->shape[2]; k++) {
            uint64_t u;
            double v;
            memcpy(&u, row + (ptrdiff_t)k * st, sizeof u);
            b |= (u & 0x7ff0000000000000u) == 0x7ff0000000000000u;
            u &= 0x7fffffffffffffffu;
            memcpy(&v, &u, sizeof v);
            m = v > m ? v : m;
        }
        big = m > big ? m : big;
    }
    bad |= b;
}
if (bad)
    return INFINITY;
if (p->mode == CVI_MODE_CONSTANT && fabs(p->cval) > big)
    big = fabs(p->cval);
return big;
}

/* Box filters of at least this many taps run as running sums even where
 * direct's float sums would be faster: those lose digits that scipy's
 * double sums keep (a float32 uniform filter of 2001 was 2e-6 off). */
#define BOX_MIN_TAPS 16

/* The cheapest of the three by the cost model: *ns receives its cost per
 * output element (2 threads); the FFT only where its sums stay in range,
 * for the data at `in` (finite) when given, else for any input. */
static int cheapest(const cvi_problem *p, int threads, const void *in, double *ns)
{
    const double taps = (double)p->kcount;
    const int axes = (p->ksize[0] > 1) + (p->ksize[1] > 1) + (p->ksize[2] > 1);
    double best = 0.82 + 0.015 * taps;
    int pick = CVCPU_DIRECT;
    /* with one axis of extent > 1, separable is the same work as direct */
    if (p->separable && axes >= 2) {
        double sep = 0.72 + 0.025 * (double)(p->ksize[0] + p->ksize[1] + p->ksize[2]);
        if (sep < best) {
            best = sep;
            pick = CVCPU_SEPARABLE;
        }
    }
    if (cvcpu_box_serves(p)) {
        /* running sums: about 3 ns an output across rows, 5 along them
         * (1 thread, 1024^2 float32); direct's taps cost about 3 times the
         * model's in double (CVCPU_DOUBLE_TAPS) */
        int a = p->ksize[2] > 1 ? 2 : p->ksize[1] > 1 ? 1 : 0;
        double box = a == 2 ? 5.0 : 3.0;
        if (cvcpu_compute_double(p) && p->in_type != CONVOLVE_FLOAT64 &&
            p->out_type != CONVOLVE_FLOAT64)
            best *= 3.0;
        if (box < best || p->ksize[a] >= BOX_MIN_TAPS) {
            best = box;
            pick = CVCPU_BOX;
        }
    }
    /* the FFT cannot give scipy's cast */
    if (taps >= 64 && pick != CVCPU_BOX && !cvi_truncates(p)) {
        double work = cvcpu_fft_cost(p);
        if (work > 0 && 1.0 + 0.27 * work < best &&
            cvcpu_fft_range(p, in ? input_magnitude(p, threads, in) : -1.0, NULL, 0) ==
                CONVOLVE_OK) {
            best = 1.0 + 0.27 * work;
            pick = CVCPU_FFT;
        }
    }
    *ns = best;
    return pick;
}

int cvcpu_choose(const cvi_problem *p, int threads, const void *in)
{
    double ns;
    return cheapest(p, threads, in, &ns);
}

/* Milliseconds for p at ns per output (the model's 2 threads) on `threads`. */
static double ms_of(const cvi_problem *p, int threads, double ns)
{
    const double outputs = (double)p->shape[0] * (double)p->shape[1] * (double)p->shape[2] *
                           (double)p->channels;
    return outputs * ns * 1e-6 * 2.0 / (double)(threads > 0 ? threads : 1);
}

double cvcpu_estimate_ms(const cvi_problem *p, int threads)
{
    double ns;
    cheapest(p, threads, NULL, &ns);
    return ms_of(p, threads, ns);
}

double cvcpu_estimate_method_ms(const cvi_problem *p, int threads, int method)
{
    const double taps = (double)p->kcount;
    double ns;
    if (method == CVCPU_SEPARABLE && p->separable)
        ns = 0.72 + 0.025 * (double)(p->ksize[0] + p->ksize[1] + p->ksize[2]);
    else if (method == CVCPU_FFT && cvcpu_fft_cost(p) > 0)
        ns = 1.0 + 0.27 * cvcpu_fft_cost(p);
    else if (method == -1) /* scalar: 4 to 8 ns a tap a thread (512^2, 15x15) */
        ns = 2.0 + 2.0 * taps;
    else
        ns = 0.82 + 0.015 * taps;
    return ms_of(p, threads, ns);
}
