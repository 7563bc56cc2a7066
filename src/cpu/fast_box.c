/*
 * fast_box.c - box filters as running sums: a separable problem with one
 * axis of more than one tap, all of them equal (a uniform filter, or a sum of
 * ones), costs a few operations per output whatever its length, and sums in
 * double as scipy's uniform_filter1d does: exact for integer data (up to
 * 2^53), float results rounded once.
 *
 * Lines run along the filter's axis; BOX_W of them are filtered together
 * (independent sums that pipeline, and for the outer axes adjacent memory).
 * A line's first window sum is counted, not summed tap by tap: how many times
 * the window reads each input element (every mode repeats the input
 * periodically, or reads the edge element or cval outside), so it costs
 * O(n) for any K; each next sum adds the element that enters and subtracts
 * the one that leaves (while a sum is not finite, each window is counted
 * again: an infinity or NaN spoils the windows that read it, no others).
 */
#include "fast.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Lines filtered together. */
#define BOX_W 16

typedef struct {
    const cvi_problem *p;
    const char *in;
    char *out;
    int axis;               /* the filter's axis */
    double scale;           /* the tap times the other axes' single taps */
    size_t n;               /* the line's length */
    ptrdiff_t is, os;       /* byte strides along the line */
    ptrdiff_t dlo, dhi;     /* window offsets: [i + dlo, i + dhi] */
    size_t lo, hi;          /* the outputs computed along the line */
    int ax[2];              /* the other two axes */
    size_t olo[2], ocnt[2]; /* their outputs computed */
    size_t lines;           /* ocnt[0] * ocnt[1] * channels */
} boxp;

int cvcpu_box_serves(const cvi_problem *p)
{
    if (!p->separable)
        return 0;
    int axis = -1;
    for (int a = 0; a < 3; a++)
        if (p->ksize[a] > 1) {
            if (axis >= 0)
                return 0;
            axis = a;
        }
    if (axis < 0)
        return 0;
    const double *t = p->taps[axis];
    for (size_t k = 1; k < p->ksize[axis]; k++)
        if (memcmp(&t[k], &t[0], sizeof t[0]) != 0)
            return 0;
    return 1;
}

/* Loads the elements at index j (CONSTANT outside: cval) of the m lines
 * whose element 0 lies at base[0..m) into v. */
static void load_at(const boxp *b, const char *const *base, size_t m, ptrdiff_t j, double *v)
{
    const cvi_problem *p = b->p;
    ptrdiff_t idx = cvi_boundary_index(j, (ptrdiff_t)b->n, p->mode);
    if (idx < 0) {
        for (size_t w = 0; w < m; w++)
            v[w] = p->cval;
        return;
    }
    const ptrdiff_t off = idx * b->is;
    switch (p->in_type) {
    case CONVOLVE_FLOAT32:
        for (size_t w = 0; w < m; w++)
            v[w] = (double)*(const float *)(const void *)(base[w] + off);
        break;
    case CONVOLVE_FLOAT64:
        for (size_t w = 0; w < m; w++)
            v[w] = *(const double *)(const void *)(base[w] + off);
        break;
    case CONVOLVE_UINT8:
        for (size_t w = 0; w < m; w++)
            v[w] = (double)*(const unsigned char *)(base[w] + off);
        break;
    default:
        for (size_t w = 0; w < m; w++)
            v[w] = (double)*(const unsigned short *)(const void *)(base[w] + off);
        break;
    }
}

/* Floor division of a by a positive b. */
static ptrdiff_t floor_div(ptrdiff_t a, ptrdiff_t b)
{
    ptrdiff_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* s[w] = the sum of the extended line w over indices [j0, j1], counted:
 * each input element (or cval) times the number of indices that read it. */
static void window_sum(const boxp *b, const char *const *base, size_t m, ptrdiff_t j0, ptrdiff_t j1,
                       double *s, double *v)
{
    const cvi_problem *p = b->p;
    const ptrdiff_t n = (ptrdiff_t)b->n;
    for (size_t w = 0; w < m; w++)
        s[w] = 0.0;
    if (j1 - j0 < 2 * n) { /* no longer than counting: element by element */
        for (ptrdiff_t j = j0; j <= j1; j++) {
            load_at(b, base, m, j, v);
            for (size_t w = 0; w < m; w++)
                s[w] += v[w];
        }
        return;
    }
    ptrdiff_t P = 0;
    switch (p->mode) {
    case CVI_MODE_WRAP: P = n; break;
    case CVI_MODE_REFLECT: P = 2 * n; break;
    case CVI_MODE_MIRROR: P = n == 1 ? 1 : 2 * n - 2; break;
    default: break;
    }
    if (P) {
        /* residue r of the period is read floor((j1 - r) / P) -
         * floor((j0 - 1 - r) / P) times */
        for (ptrdiff_t r = 0; r < P; r++) {
            ptrdiff_t c = floor_div(j1 - r, P) - floor_div(j0 - 1 - r, P);
            if (c == 0)
                continue;
            load_at(b, base, m, r, v);
            for (size_t w = 0; w < m; w++)
                s[w] += (double)c * v[w];
        }
        return;
    }
    /* NEAREST, CONSTANT: below 0 and above n - 1 one value each */
    ptrdiff_t below = (j1 < 0 ? j1 : -1) - j0 + 1;
    ptrdiff_t above = j1 - (j0 > n - 1 ? j0 : n) + 1;
    if (below > 0) {
        load_at(b, base, m, -1, v);
        for (size_t w = 0; w < m; w++)
            s[w] += (double)below * v[w];
    }
    for (ptrdiff_t j = j0 > 0 ? j0 : 0; j <= j1 && j < n; j++) {
        load_at(b, base, m, j, v);
        for (size_t w = 0; w < m; w++)
            s[w] += v[w];
    }
    if (above > 0) {
        load_at(b, base, m, n, v);
        for (size_t w = 0; w < m; w++)
            s[w] += (double)above * v[w];
    }
}

/* Stores scale * s[w] at index i of the m output lines at obase. */
static void store_at(const boxp *b, char *const *obase, size_t m, size_t i, const double *s)
{
    const ptrdiff_t off = (ptrdiff_t)i * b->os;
    const double k = b->scale;
    switch (b->p->out_type) {
    case CONVOLVE_FLOAT32:
        for (size_t w = 0; w < m; w++)
            *(float *)(void *)(obase[w] + off) = (float)(s[w] * k);
        break;
    case CONVOLVE_FLOAT64:
        for (size_t w = 0; w < m; w++)
            *(double *)(void *)(obase[w] + off) = s[w] * k;
        break;
    default: /* integers: rounded and saturated, or scipy's cast */
        for (size_t w = 0; w < m; w++)
            cvi_store_cast((int)b->p->out_type, b->p->cast, b->p->divisor, b->p->snap,
                           obase[w] + off, s[w] * k);
        break;
    }
}

/* Lines [l0, l0 + m) (m <= BOX_W): line l is (channel, other axes) in that
 * order, the channel fastest. */
static void box_lines(const boxp *b, size_t l0, size_t m)
{
    const cvi_problem *p = b->p;
    const char *base[BOX_W];
    char *obase[BOX_W];
    double s[BOX_W], vin[BOX_W], vout[BOX_W];
    for (size_t w = 0; w < m; w++) {
        size_t l = l0 + w;
        size_t c = l % p->channels;
        l /= p->channels;
        size_t i1 = b->olo[1] + l % b->ocnt[1];
        size_t i0 = b->olo[0] + l / b->ocnt[1];
        ptrdiff_t ioff = (ptrdiff_t)i0 * p->in_strides[b->ax[0]] +
                         (ptrdiff_t)i1 * p->in_strides[b->ax[1]] + (ptrdiff_t)c * p->in_cstride;
        ptrdiff_t ooff = (ptrdiff_t)i0 * p->out_strides[b->ax[0]] +
                         (ptrdiff_t)i1 * p->out_strides[b->ax[1]] + (ptrdiff_t)c * p->out_cstride;
        base[w] = b->in + ioff;
        obase[w] = b->out + ooff;
    }
    ptrdiff_t i = (ptrdiff_t)b->lo;
    window_sum(b, base, m, i + b->dlo, i + b->dhi, s, vin);
    store_at(b, obase, m, (size_t)i, s);
    for (i++; i < (ptrdiff_t)b->hi; i++) {
        load_at(b, base, m, i + b->dhi, vin);
        load_at(b, base, m, i - 1 + b->dlo, vout);
        for (size_t w = 0; w < m; w++) {
            if (isfinite(s[w]))
                s[w] += vin[w] - vout[w];
            else /* an infinity or NaN left or stays: count this window again */
                window_sum(b, &base[w], 1, i + b->dlo, i + b->dhi, &s[w], &vout[w]);
        }
        store_at(b, obase, m, (size_t)i, s);
    }
}

/* Group g of the run: its BOX_W lines (fewer in the last group). */
static void box_group(const boxp *b, size_t g)
{
    const size_t l0 = g * BOX_W;
    box_lines(b, l0, b->lines - l0 < BOX_W ? b->lines - l0 : BOX_W);
}

convolve_status cvcpu_box(const cvi_problem *p, int threads, const void *in, void *out)
{
    boxp b;
    memset(&b, 0, sizeof b);
    b.p = p;
    b.in = in;
    b.out = out;
    b.axis = 0;
    for (int a = 0; a < 3; a++)
        if (p->ksize[a] > 1)
            b.axis = a;
    const int A = b.axis;
    b.scale = p->taps[A][0];
    for (int a = 0, k = 0; a < 3; a++)
        if (a != A) {
            b.scale *= p->taps[a][0];
            b.ax[k] = a;
            size_t hi;
            cvi_window_range(p, a, &b.olo[k], &hi);
            b.ocnt[k] = hi - b.olo[k];
            k++;
        }
    b.n = p->shape[A];
    b.is = p->in_strides[A];
    b.os = p->out_strides[A];
    b.dlo = -p->koff[A];
    b.dhi = (ptrdiff_t)p->ksize[A] - 1 - p->koff[A];
    cvi_window_range(p, A, &b.lo, &b.hi);
    b.lines = b.ocnt[0] * b.ocnt[1] * p->channels;
    if (b.hi <= b.lo || b.lines == 0)
        return CONVOLVE_OK;
    const size_t groups = cvcpu_div_up(b.lines, BOX_W);
    double work = (double)b.lines * (double)(b.hi - b.lo + 2 * b.n) * 4.0;
    int nt = work < 4e6 ? 1 : threads;
    if ((size_t)nt > groups)
        nt = (int)groups;
    /* one thread: no OpenMP region (libgomp wakes a futex at each barrier,
     * even in a team of one) */
    if (nt == 1) {
        for (size_t g = 0; g < groups; g++)
            box_group(&b, g);
        return CONVOLVE_OK;
    }
CVCPU_OMP(omp parallel for schedule(dynamic, 1) num_threads(nt))
for (ptrdiff_t g = 0; g < (ptrdiff_t)groups; g++)
    box_group(&b, (size_t)g);
return CONVOLVE_OK;
}
