/*
 * reference.c - the exact CPU reference: for every output element, a plain
 * loop over the filter box accumulating in double, with the boundary mode
 * applied per axis through cvi_boundary_index (only the outputs of the
 * problem's window, if it has one). It is the oracle every other backend
 * and strategy is tested against; clarity comes before speed.
 */
#include "cpu_backend.h"

#include <stdlib.h>

/* For each axis, with the outputs computed along it [lo, hi),
 * map[t] = cvi_boundary_index(lo + t - koff, n, mode) for
 * t in [0, hi - lo + K - 1): output i and tap k read index map[i - lo + k]. */
static ptrdiff_t *axis_map(const cvi_problem *p, int a, size_t lo, size_t hi)
{
    size_t len = hi - lo + p->ksize[a] - 1;
    ptrdiff_t *map = malloc(len * sizeof *map);
    if (map)
        for (size_t t = 0; t < len; t++)
            map[t] = cvi_boundary_index((ptrdiff_t)(lo + t) - p->koff[a], (ptrdiff_t)p->shape[a],
                                        p->mode);
    return map;
}

convolve_status cvcpu_reference(const cvi_problem *p, int threads, const void *in, void *out)
{
    size_t lo[3], hi[3]; /* the outputs computed: the window's */
    ptrdiff_t *map[3];
    for (int a = 0; a < 3; a++) {
        cvi_window_range(p, a, &lo[a], &hi[a]);
        map[a] = axis_map(p, a, lo[a], hi[a]);
    }
    if (!map[0] || !map[1] || !map[2]) {
        for (int a = 0; a < 3; a++)
            free(map[a]);
        return CONVOLVE_ERROR_OUT_OF_MEMORY;
    }
    const char *src = in;
    char *dst = out;
    const size_t m1 = hi[1] - lo[1];
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2];
    const ptrdiff_t rows = (ptrdiff_t)((hi[0] - lo[0]) * m1);
    (void)threads;

#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (ptrdiff_t r = 0; r < rows; r++) {
        size_t i0 = lo[0] + (size_t)r / m1, i1 = lo[1] + (size_t)r % m1;
        for (size_t i2 = lo[2]; i2 < hi[2]; i2++) {
            for (size_t c = 0; c < p->channels; c++) {
                double acc = 0.0;
                const double *w = p->weights;
                for (size_t k0 = 0; k0 < K0; k0++) {
                    ptrdiff_t j0 = map[0][i0 - lo[0] + k0];
                    for (size_t k1 = 0; k1 < K1; k1++) {
                        ptrdiff_t j1 = map[1][i1 - lo[1] + k1];
                        for (size_t k2 = 0; k2 < K2; k2++, w++) {
                            ptrdiff_t j2 = map[2][i2 - lo[2] + k2];
                            double v;
                            if (j0 < 0 || j1 < 0 || j2 < 0)
                                v = p->cval;
                            else
                                v = cvi_load_double(p->in_type, src + j0 * p->in_strides[0] +
                                                                    j1 * p->in_strides[1] +
                                                                    j2 * p->in_strides[2] +
                                                                    (ptrdiff_t)c * p->in_cstride);
                            acc += *w * v;
                        }
                    }
                }
                cvi_store_cast(
                    p->out_type, p->cast, p->divisor, p->snap,
                    dst + (ptrdiff_t)i0 * p->out_strides[0] + (ptrdiff_t)i1 * p->out_strides[1] +
                        (ptrdiff_t)i2 * p->out_strides[2] + (ptrdiff_t)c * p->out_cstride,
                    acc);
            }
        }
    }
    for (int a = 0; a < 3; a++)
        free(map[a]);
    return CONVOLVE_OK;
}
