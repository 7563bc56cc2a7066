/*
 * filter.c - filter objects: dense weights, separable per-axis taps, the
 * named filters of the CLI (box, gaussian, sobel, ...), and the rank-one test
 * that finds separable structure in dense weights.
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A dense filter whose rank-one residual (max |w - outer product| over
 * max |w|) is at most this counts as separable. */
#define CVI_RANK1_TOLERANCE 1e-12

static convolve_status check_shape(convolve_context *ctx, int ndim, const size_t *shape,
                                   size_t *count)
{
    if (ndim < 1 || ndim > CONVOLVE_MAX_DIMS)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "filter has %d dimensions; 1 to 3 are supported", ndim);
    size_t n = 1;
    for (int a = 0; a < ndim; a++) {
        if (shape[a] == 0)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER, "filter axis %d has extent 0", a);
        if (shape[a] > (size_t)PTRDIFF_MAX / 2 || !cvi_mul_size(n, shape[a], &n) ||
            n > SIZE_MAX / sizeof(double))
            return cvi_error(ctx, CONVOLVE_ERROR_SIZE_OVERFLOW, "filter is too large");
    }
    *count = n;
    return CONVOLVE_OK;
}

static convolve_status check_finite(convolve_context *ctx, const double *w, size_t n,
                                    const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(w[i]))
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                             "%s weight %zu is %s; weights must be finite numbers", what, i,
                             isnan(w[i]) ? "NaN" : "infinite");
    return CONVOLVE_OK;
}

/* A filter of that shape; with dense, room for its count dense weights. */
static convolve_filter *filter_alloc(int ndim, const size_t *shape, size_t count, int dense)
{
    convolve_filter *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->ndim = ndim;
    for (int a = 0; a < ndim; a++)
        f->shape[a] = shape[a];
    f->count = count;
    if (!dense)
        return f;
    f->dense = malloc(count * sizeof(double));
    if (!f->dense) {
        free(f);
        return NULL;
    }
    return f;
}

void convolve_filter_free(convolve_filter *f)
{
    if (!f)
        return;
    for (int a = 0; a < CONVOLVE_MAX_DIMS; a++)
        free(f->taps[a]);
    free(f->dense);
    free(f);
}

/* Looks for w = a (x) b (x) c: picks the largest weight as pivot, reads the
 * factors off the lines through it, and keeps them if the outer product
 * reproduces every weight within CVI_RANK1_TOLERANCE. One factor (the
 * carrier) is its line through the pivot as given; the others are their
 * lines divided by the pivot. The carrier is the axis that leaves the fewest
 * inexact divisions, so weights that factor exactly (quarters, integers, a
 * row times a power of two) get exact factors, and integer data then sums as
 * exactly through the separable paths as through the dense ones (ties
 * included: [[0.75, 0.5]] must not become 0.75 * [1, 0.666...]). */
static void detect_rank_one(convolve_filter *f)
{
    if (f->ndim < 2)
        return;
    size_t n0 = f->ndim == 3 ? f->shape[0] : 1;
    size_t n1 = f->shape[f->ndim - 2], n2 = f->shape[f->ndim - 1];
    size_t pivot = 0;
    double big = 0.0;
    for (size_t i = 0; i < f->count; i++)
        if (fabs(f->dense[i]) > big) {
            big = fabs(f->dense[i]);
            pivot = i;
        }
    if (big == 0.0)
        return; /* all zero: nothing gained */
    size_t p0 = pivot / (n1 * n2), p1 = pivot / n2 % n1, p2 = pivot % n2;
    double wp = f->dense[pivot];
    double *t[3];
    size_t len[3] = {n0, n1, n2};
    for (int a = 0; a < 3; a++)
        if (!(t[a] = malloc(len[a] * sizeof(double)))) {
            for (int b = 0; b < a; b++)
                free(t[b]);
            return;
        }
    /* the lines through the pivot, as given */
    for (size_t i = 0; i < n0; i++)
        t[0][i] = f->dense[(i * n1 + p1) * n2 + p2];
    for (size_t j = 0; j < n1; j++)
        t[1][j] = f->dense[(p0 * n1 + j) * n2 + p2];
    for (size_t k = 0; k < n2; k++)
        t[2][k] = f->dense[(p0 * n1 + p1) * n2 + k];
    /* inexact[a]: how many of line a's weights do not divide exactly by the
     * pivot (the residual of the rounded quotient is not zero) */
    size_t inexact[3] = {0, 0, 0};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < len[a]; i++)
            inexact[a] += fma(t[a][i] / wp, wp, -t[a][i]) != 0.0;
    /* the carrier: the line with the most inexact quotients keeps them all */
    int first = f->ndim == 3 ? 0 : 1, carrier = first;
    for (int a = first + 1; a < 3; a++)
        if (inexact[a] > inexact[carrier])
            carrier = a;
    for (int a = first; a < 3; a++)
        if (a != carrier)
            for (size_t i = 0; i < len[a]; i++)
                t[a][i] /= wp;
    double worst = 0.0;
    for (size_t i = 0; i < n0; i++)
        for (size_t j = 0; j < n1; j++)
            for (size_t k = 0; k < n2; k++) {
                double prod = (f->ndim == 2 ? 1.0 : t[0][i]) * t[1][j] * t[2][k];
                double d = fabs(prod - f->dense[(i * n1 + j) * n2 + k]);
                if (d > worst)
                    worst = d;
            }
    if (worst <= CVI_RANK1_TOLERANCE * big) {
        f->separable = 1;
        if (f->ndim == 2) {
            f->taps[0] = t[1];
            f->taps[1] = t[2];
            free(t[0]);
        } else {
            for (int a = 0; a < 3; a++)
                f->taps[a] = t[a];
        }
    } else {
        for (int a = 0; a < 3; a++)
            free(t[a]);
    }
}

convolve_status convolve_filter_create(convolve_context *ctx, convolve_filter **filter, int ndim,
                                       const size_t *shape, const double *weights)
{
    if (!filter || !shape || !weights)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_filter_create: NULL argument");
    *filter = NULL;
    size_t count = 0;
    convolve_status st = check_shape(ctx, ndim, shape, &count);
    if (st != CONVOLVE_OK)
        return st;
    if ((st = check_finite(ctx, weights, count, "filter")) != CONVOLVE_OK)
        return st;
    convolve_filter *f = filter_alloc(ndim, shape, count, 1);
    if (!f)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a %zu-weight filter",
                         count);
    memcpy(f->dense, weights, count * sizeof(double));
    detect_rank_one(f);
    *filter = f;
    return cvi_ok(ctx);
}

convolve_status convolve_filter_create_separable(convolve_context *ctx, convolve_filter **filter,
                                                 int ndim, const size_t *lengths,
                                                 const double *const *taps)
{
    if (!filter || !lengths || !taps)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_filter_create_separable: NULL argument");
    *filter = NULL;
    size_t count = 0;
    convolve_status st = check_shape(ctx, ndim, lengths, &count);
    if (st != CONVOLVE_OK)
        return st;
    for (int a = 0; a < ndim; a++) {
        if (!taps[a])
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "convolve_filter_create_separable: taps[%d] is NULL", a);
        char what[32];
        snprintf(what, sizeof what, "axis-%d", a);
        if ((st = check_finite(ctx, taps[a], lengths[a], what)) != CONVOLVE_OK)
            return st;
    }
    /* no dense weights: their outer product can be far larger than the taps
     * (plans fold long taps onto the array first; convolve_filter_weights
     * computes the product) */
    convolve_filter *f = filter_alloc(ndim, lengths, count, 0);
    if (!f)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a filter");
    f->separable = 1;
    f->given_separable = 1;
    for (int a = 0; a < ndim; a++) {
        if (!(f->taps[a] = malloc(lengths[a] * sizeof(double)))) {
            convolve_filter_free(f);
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for %zu filter taps",
                             lengths[a]);
        }
        memcpy(f->taps[a], taps[a], lengths[a] * sizeof(double));
    }
    *filter = f;
    return cvi_ok(ctx);
}

int convolve_filter_ndim(const convolve_filter *f)
{
    return f ? f->ndim : 0;
}

size_t convolve_filter_extent(const convolve_filter *f, int axis)
{
    if (!f || axis < 0 || axis >= f->ndim)
        return 0;
    return f->shape[axis];
}

int convolve_filter_is_separable(const convolve_filter *f)
{
    return f ? f->separable : 0;
}

convolve_status convolve_filter_weights(const convolve_filter *f, double *out, size_t count)
{
    if (!f || !out || count < f->count)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    if (f->dense) {
        memcpy(out, f->dense, f->count * sizeof(double));
        return CONVOLVE_OK;
    }
    /* separable: the outer product, C order */
    const int nd = f->ndim;
    size_t n0 = nd == 3 ? f->shape[0] : 1, n1 = nd >= 2 ? f->shape[nd - 2] : 1,
           n2 = f->shape[nd - 1];
    for (size_t i = 0; i < n0; i++)
        for (size_t j = 0; j < n1; j++)
            for (size_t k = 0; k < n2; k++) {
                double w = f->taps[nd - 1][k];
                if (nd >= 2)
                    w *= f->taps[nd - 2][j];
                if (nd == 3)
                    w *= f->taps[0][i];
                out[(i * n1 + j) * n2 + k] = w;
            }
    return CONVOLVE_OK;
}
