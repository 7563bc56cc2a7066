/*
 * fast_fft.c - the `fft` CPU strategy: overlap-save convolution by FFT, for
 * large filters (its cost hardly grows with the filter).
 *
 * The output is cut into tiles. Along each axis whose filter has more than
 * one tap (a transformed axis) a tile is T (a power of two) input samples
 * and V = T - K + 1 outputs; the T samples are the extended input (every
 * boundary mode, gathered like the other strategies), so the circular
 * correlation of the tile with the filter is exact on its first V outputs.
 * Along the other axes tiles are plain batches: with axis 1 untransformed,
 * a tile's rows are "slots", each one row of one column tile, so that 1-D
 * problems also get enough rows to vectorise across.
 *
 * Two tiles share one complex transform (one as the real part, one as the
 * imaginary part): the filter is real, so the results separate again. The
 * transform runs along axis 0, then 1 (vectorised across the contiguous
 * elements after the axis), then along axis 2 after transposing each plane;
 * the spectrum stays in bit-reversed order, multiplied by the filter's
 * spectrum (conjugated, for correlation, and scaled by 1/N) in the same
 * layout, and the inverse transform undoes the steps in reverse.
 *
 * With a window (cvi_problem.win_lo/win_hi) the tiles stay those of the
 * whole array, and only the pairs that write in the window run, storing
 * only the window's outputs: each has the bytes of the whole run.
 * The windows of one execution share the twiddles, the filter's spectrum
 * and the threads' blocks (cvcpu_fft_keep).
 */
#include "fast.h"
#include "fft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Largest block (elements of one tile) the strategy accepts at all; blocks
 * whose four arrays (two blocks, re and im) exceed the cache size cost twice
 * as much in the model. */
#define CVCPU_FFT_MAX_BLOCK ((size_t)1 << 22)
#define CVCPU_FFT_CACHE_BYTES ((size_t)1 << 19)
/* Batch extents for untransformed axes. */
#define CVCPU_FFT_SLOTS 16
#define CVCPU_FFT_COLS 256

typedef struct {
    int f[3];          /* axis a is transformed */
    size_t T[3], V[3]; /* tile extent and valid outputs along each axis */
    size_t nt0, nt2;   /* tiles along axis 0 (planes when untransformed) and axis 2 */
    size_t n12;        /* tiles of axes 1 and 2 per plane tile (groups of slots when batched) */
    size_t nslots;     /* batched axis 1: n1 * nt2 slots */
    size_t jobs;       /* channels * nt0 * n12 */
    size_t block;      /* T0 * T1 * T2 */
    double cost;       /* model: work per output */
} ftiles;

static size_t pow2_at_least(size_t n)
{
    size_t t = 1;
    while (t < n)
        t *= 2;
    return t;
}

static size_t log2_of(size_t t)
{
    size_t l = 0;
    while (t > 1)
        t /= 2, l++;
    return l;
}

/* Fills the derived counts of t (its f and T set) and its cost. */
static void tiles_count(const cvi_problem *p, size_t es, ftiles *t)
{
    for (int a = 0; a < 3; a++)
        t->V[a] = t->f[a] ? t->T[a] - p->ksize[a] + 1 : t->T[a];
    t->nt0 = cvcpu_div_up(p->shape[0], t->V[0]);
    t->nt2 = cvcpu_div_up(p->shape[2], t->V[2]);
    if (t->f[1]) {
        t->nslots = 0;
        t->n12 = cvcpu_div_up(p->shape[1], t->V[1]) * t->nt2;
    } else {
        t->nslots = p->shape[1] * t->nt2;
        t->n12 = cvcpu_div_up(t->nslots, t->T[1]);
    }
    t->jobs = p->channels * t->nt0 * t->n12;
    t->block = t->T[0] * t->T[1] * t->T[2];
    /* butterfly passes, transposes, product, gather and store; halved by
     * the pairing of tiles, spread over the outputs */
    double passes = 0;
    for (int a = 0; a < 3; a++)
        if (t->f[a])
            passes += (double)log2_of(t->T[a]);
    double per_block = (double)t->block * (passes + (t->f[2] ? 1.0 : 0.0) + 1.5);
    double outputs = (double)(p->shape[0] * p->shape[1] * p->shape[2] * p->channels);
    if (4 * t->block * es > CVCPU_FFT_CACHE_BYTES)
        per_block *= 2.0;
    t->cost = (double)t->jobs * per_block / 2.0 / outputs;
}

/* Chooses tile extents by the cost model; 0 if even the smallest tiles are
 * too large. */
static int choose_tiles(const cvi_problem *p, size_t es, ftiles *best)
{
    ftiles t;
    memset(&t, 0, sizeof t);
    size_t lo[3], hi[3];
    for (int a = 0; a < 3; a++) {
        t.f[a] = p->ksize[a] > 1;
        if (t.f[a]) {
            lo[a] = pow2_at_least(p->ksize[a]);
            hi[a] = pow2_at_least(p->shape[a] + p->ksize[a] - 1);
            if (hi[a] < lo[a])
                hi[a] = lo[a];
        } else {
            lo[a] = hi[a] = 1;
        }
    }
    if (!t.f[0])
        t.T[0] = 1;
    if (!t.f[2])
        t.T[2] = p->shape[2] < CVCPU_FFT_COLS ? p->shape[2] : CVCPU_FFT_COLS;
    int found = 0;
    for (size_t t0 = lo[0]; t0 <= hi[0]; t0 *= 2)
        for (size_t t1 = lo[1]; t1 <= hi[1]; t1 *= 2)
            for (size_t t2 = lo[2]; t2 <= hi[2]; t2 *= 2) {
                if (t.f[0])
                    t.T[0] = t0;
                if (t.f[1])
                    t.T[1] = t1;
                if (t.f[2])
                    t.T[2] = t2;
                if (!t.f[1]) {
                    size_t nt2 = cvcpu_div_up(p->shape[2], t.f[2] ? t2 - p->ksize[2] + 1 : t.T[2]);
                    size_t slots = p->shape[1] * nt2;
                    t.T[1] = slots < CVCPU_FFT_SLOTS ? slots : CVCPU_FFT_SLOTS;
                }
                size_t block = t.T[0] * t.T[1] * t.T[2];
                if (block > CVCPU_FFT_MAX_BLOCK)
                    continue;
                tiles_count(p, es, &t);
                if (!found || t.cost < best->cost)
                    *best = t;
                found = 1;
            }
    return found;
}

convolve_status cvcpu_fft_range(const cvi_problem *p, double xmax, char *why, size_t why_size)
{
    const int dbl = cvcpu_compute_double(p);
    return cvi_fft_range(p, dbl, (double)CVCPU_FFT_MAX_BLOCK, xmax, why, why_size);
}

convolve_status cvcpu_fft_check(const cvi_problem *p, char *why, size_t why_size)
{
    ftiles t;
    if (why && why_size)
        why[0] = '\0';
    if (cvi_truncates(p)) {
        if (why && why_size)
            snprintf(why, why_size,
                     "scipy's cast (CONVOLVE_CAST_TRUNCATE) needs each sum to "
                     "double precision, and the FFT's rounding grows with the whole filter's "
                     "sum (an exact integer can come out just below it and truncate)");
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (!choose_tiles(p, sizeof(double), &t)) {
        if (why && why_size)
            snprintf(why, why_size,
                     "the filter (%zu x %zu x %zu) needs FFT tiles of more "
                     "than %zu elements",
                     p->ksize[0], p->ksize[1], p->ksize[2], (size_t)CVCPU_FFT_MAX_BLOCK);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return cvcpu_fft_range(p, -1.0, why, why ? why_size : 0);
}

double cvcpu_fft_cost(const cvi_problem *p)
{
    ftiles t;
    int dbl = cvcpu_compute_double(p);
    return choose_tiles(p, dbl ? sizeof(double) : sizeof(float), &t) ? t.cost : -1.0;
}

size_t cvcpu_fft_window_align(const cvi_problem *p)
{
    ftiles t;
    int dbl = cvcpu_compute_double(p);
    if (!choose_tiles(p, dbl ? sizeof(double) : sizeof(float), &t))
        return 1;
    const int ax = cvi_slow_axis(p);
    if (ax == 0 || (ax == 1 && t.f[1]))
        return t.V[ax];
    return ax == 2 ? t.T[1] * t.V[2] : 1; /* 1-D: a job's slots; 2-D: slots are rows */
}

typedef struct {
    cvcpu_exec e;
    ftiles t;
    const cvcpu_fft_ops *ops;
    cvcpu_twiddles tw[3];
    void *gre, *gim; /* the filter's spectrum, in the transformed layout */
} fplan;

typedef struct {
    void *re, *im;   /* a block: tile A in re, tile B in im */
    void *re2, *im2; /* the block with planes transposed */
} fthread;

/* Where job `job` lies: channel, plane tile and tile of axes 1-2. */
static void job_decode(const fplan *d, size_t job, size_t *c, size_t *t0, size_t *t12)
{
    *c = job % d->e.p->channels;
    job /= d->e.p->channels;
    *t12 = job % d->t.n12;
    *t0 = job / d->t.n12;
}

/* Row s of tile t12 (axis 1 index, may be outside for transformed tiles) and
 * its first output column; 0 when the slot is empty. */
static int job_row(const fplan *d, size_t t12, size_t s, ptrdiff_t *y, size_t *o2)
{
    const ftiles *t = &d->t;
    if (!t->f[1]) {
        size_t slot = t12 * t->T[1] + s;
        if (slot >= t->nslots)
            return 0;
        *y = (ptrdiff_t)(slot / t->nt2);
        *o2 = slot % t->nt2 * t->V[2];
        return 1;
    }
    *y = (ptrdiff_t)(t12 / t->nt2 * t->V[1] + s);
    *o2 = t12 % t->nt2 * t->V[2];
    return 1;
}

/* Gathers the input of job into dst (a T0 x T1 x T2 array). */
static void job_gather(const fplan *d, size_t job, char *dst)
{
    const cvcpu_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const ftiles *t = &d->t;
    size_t c, t0, t12, es = e->es, rowbytes = t->T[2] * es;
    job_decode(d, job, &c, &t0, &t12);
    for (size_t p0 = 0; p0 < t->T[0]; p0++) {
        ptrdiff_t j0 = t->f[0] ? cvi_boundary_index((ptrdiff_t)(t0 * t->V[0] + p0) - p->koff[0],
                                                    (ptrdiff_t)p->shape[0], p->mode)
                               : (ptrdiff_t)t0;
        for (size_t s = 0; s < t->T[1]; s++) {
            char *to = dst + (p0 * t->T[1] + s) * rowbytes;
            ptrdiff_t y;
            size_t o2;
            if (!job_row(d, t12, s, &y, &o2)) {
                memset(to, 0, rowbytes);
                continue;
            }
            ptrdiff_t j1 = t->f[1]
                               ? cvi_boundary_index(y - p->koff[1], (ptrdiff_t)p->shape[1], p->mode)
                               : y;
            cvcpu_gather(e, cvcpu_in_row(e, c, j0, j1), (ptrdiff_t)o2 - p->koff[2], t->T[2], to);
        }
    }
}

/* Stores the valid outputs of job from src (a T0 x T1 x T2 array): those
 * the problem computes (its window's, if any). */
static void job_store(const fplan *d, size_t job, const char *src)
{
    const cvcpu_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const ftiles *t = &d->t;
    size_t c, t0, t12, es = e->es, rowbytes = t->T[2] * es;
    size_t lo[3], hi[3];
    for (int a = 0; a < 3; a++)
        cvi_window_range(p, a, &lo[a], &hi[a]);
    job_decode(d, job, &c, &t0, &t12);
    size_t planes = t->f[0] ? p->shape[0] - t0 * t->V[0] : 1;
    if (planes > t->V[0])
        planes = t->V[0];
    for (size_t p0 = 0; p0 < planes; p0++) {
        size_t i0 = t->f[0] ? t0 * t->V[0] + p0 : t0;
        if (i0 < lo[0] || i0 >= hi[0])
            continue;
        for (size_t s = 0; s < t->T[1]; s++) {
            ptrdiff_t y;
            size_t o2;
            if (!job_row(d, t12, s, &y, &o2))
                break;
            if (t->f[1] && (s >= t->V[1] || (size_t)y >= p->shape[1]))
                break;
            if ((size_t)y < lo[1] || (size_t)y >= hi[1])
                continue;
            size_t x0 = o2 > lo[2] ? o2 : lo[2], x1 = o2 + t->V[2];
            x1 = x1 < hi[2] ? x1 : hi[2];
            if (x0 < x1)
                cvcpu_store(e, cvcpu_out_row(e, c, i0, (size_t)y, x0), x1 - x0,
                            src + (p0 * t->T[1] + s) * rowbytes + (x0 - o2) * es);
        }
    }
}

/* 1 if job writes outputs along the slowest axis in the problem's window
 * (always without one). */
static int job_in_window(const fplan *d, size_t job)
{
    const cvi_problem *p = d->e.p;
    const ftiles *t = &d->t;
    const int ax = cvi_slow_axis(p);
    if (!p->win_hi)
        return 1;
    size_t c, t0, t12, a, b; /* the job's outputs [a, b) along the axis */
    job_decode(d, job, &c, &t0, &t12);
    if (ax == 0) {
        a = t0 * t->V[0];
        b = a + t->V[0];
    } else if (ax == 1 && t->f[1]) {
        a = t12 / t->nt2 * t->V[1];
        b = a + t->V[1];
    } else { /* slots: rows (2-D), or column tiles of the one row (1-D) */
        size_t s0 = t12 * t->T[1], s1 = s0 + t->T[1];
        s1 = s1 < t->nslots ? s1 : t->nslots;
        if (ax == 1) {
            a = s0 / t->nt2;
            b = (s1 - 1) / t->nt2 + 1;
        } else {
            a = s0 * t->V[2];
            b = s1 * t->V[2];
        }
    }
    return a < p->win_hi && p->win_lo < b;
}

/* Forward transform of the block in s; returns where the spectrum lies. */
static void block_forward(const fplan *d, fthread *s, void **re, void **im)
{
    const ftiles *t = &d->t;
    const size_t T0 = t->T[0], T1 = t->T[1], T2 = t->T[2], plane = T1 * T2;
    if (t->f[0])
        d->ops->forward(s->re, s->im, 1, T0, plane, &d->tw[0]);
    if (t->f[1])
        d->ops->forward(s->re, s->im, T0, T1, T2, &d->tw[1]);
    *re = s->re;
    *im = s->im;
    if (t->f[2]) {
        size_t es = d->e.es;
        for (size_t p0 = 0; p0 < T0; p0++)
            d->ops->transpose((char *)s->re2 + p0 * plane * es, (char *)s->im2 + p0 * plane * es,
                              (char *)s->re + p0 * plane * es, (char *)s->im + p0 * plane * es, T1,
                              T2);
        d->ops->forward(s->re2, s->im2, T0, T2, T1, &d->tw[2]);
        *re = s->re2;
        *im = s->im2;
    }
}

/* Inverse of block_forward: the result ends in s->re, s->im. */
static void block_inverse(const fplan *d, fthread *s)
{
    const ftiles *t = &d->t;
    const size_t T0 = t->T[0], T1 = t->T[1], T2 = t->T[2], plane = T1 * T2;
    if (t->f[2]) {
        size_t es = d->e.es;
        d->ops->inverse(s->re2, s->im2, T0, T2, T1, &d->tw[2]);
        for (size_t p0 = 0; p0 < T0; p0++)
            d->ops->transpose((char *)s->re + p0 * plane * es, (char *)s->im + p0 * plane * es,
                              (char *)s->re2 + p0 * plane * es, (char *)s->im2 + p0 * plane * es,
                              T2, T1);
    }
    if (t->f[1])
        d->ops->inverse(s->re, s->im, T0, T1, T2, &d->tw[1]);
    if (t->f[0])
        d->ops->inverse(s->re, s->im, 1, T0, plane, &d->tw[0]);
}

/* The filter's spectrum, using thread block s as scratch. */
static void make_spectrum(fplan *d, fthread *s)
{
    const cvi_problem *p = d->e.p;
    const ftiles *t = &d->t;
    const size_t es = d->e.es, n = t->block;
    memset(s->im, 0, n * es);
    /* w at [k0][k1][k2], repeated along the untransformed axes */
    for (size_t p0 = 0; p0 < t->T[0]; p0++)
        for (size_t p1 = 0; p1 < t->T[1]; p1++)
            for (size_t p2 = 0; p2 < t->T[2]; p2++) {
                size_t k0 = t->f[0] ? p0 : 0, k1 = t->f[1] ? p1 : 0, k2 = t->f[2] ? p2 : 0;
                double v = 0.0;
                if (k0 < p->ksize[0] && k1 < p->ksize[1] && k2 < p->ksize[2])
                    v = p->weights[(k0 * p->ksize[1] + k1) * p->ksize[2] + k2];
                size_t i = (p0 * t->T[1] + p1) * t->T[2] + p2;
                if (d->e.dbl)
                    ((double *)s->re)[i] = v;
                else
                    ((float *)s->re)[i] = (float)v;
            }
    void *re, *im;
    block_forward(d, s, &re, &im);
    double scale = 1.0;
    for (int a = 0; a < 3; a++)
        if (t->f[a])
            scale /= (double)t->T[a];
    for (size_t i = 0; i < n; i++) {
        if (d->e.dbl) {
            ((double *)d->gre)[i] = ((double *)re)[i] * scale;
            ((double *)d->gim)[i] = -((double *)im)[i] * scale;
        } else {
            ((float *)d->gre)[i] = (float)(((float *)re)[i] * scale);
            ((float *)d->gim)[i] = (float)(-((float *)im)[i] * scale);
        }
    }
}

/* What a run makes before its tiles, kept from one window to the next
 * (cvcpu_fft_keep): the twiddles, the filter's spectrum and the threads'
 * blocks, and what they were made for. */
typedef struct fkept {
    size_t T[3], block;
    int dbl, isa, nt;
    void *twmem, *gmem;
    cvcpu_twiddles tw[3];
    fthread *th;
} fkept;

static void kept_free(fkept *k)
{
    if (!k)
        return;
    if (k->th)
        for (int t = 0; t < k->nt; t++)
            cvcpu_free(k->th[t].re);
    free(k->th);
    cvcpu_free(k->twmem);
    cvcpu_free(k->gmem);
    free(k);
}

void cvcpu_fft_keep_free(cvcpu_fft_keep *k)
{
    if (k) {
        kept_free(k->held);
        k->held = NULL;
    }
}

/* The twiddles, spectrum and nt blocks for d's tiles; NULL when out of
 * memory. */
static fkept *kept_make(fplan *d, int nt)
{
    const cvcpu_exec *e = &d->e;
    const size_t n = d->t.block;
    fkept *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    memcpy(k->T, d->t.T, sizeof k->T);
    k->block = n;
    k->dbl = e->dbl;
    k->isa = e->isa;
    k->nt = nt;
    k->twmem = cvcpu_alloc(2 * (d->t.T[0] + d->t.T[1] + d->t.T[2]), e->es);
    k->gmem = cvcpu_alloc(2 * n, e->es);
    k->th = calloc((size_t)nt, sizeof *k->th);
    if (!k->twmem || !k->gmem || !k->th) {
        kept_free(k);
        return NULL;
    }
    for (int t = 0; t < nt; t++) {
        char *b = cvcpu_alloc(4 * n, e->es);
        if (!b) {
            kept_free(k);
            return NULL;
        }
        k->th[t].re = b;
        k->th[t].im = b + n * e->es;
        k->th[t].re2 = b + 2 * n * e->es;
        k->th[t].im2 = b + 3 * n * e->es;
    }
    char *twp = k->twmem;
    for (int a = 0; a < 3; a++) {
        k->tw[a].T = d->t.T[a];
        k->tw[a].re = twp;
        k->tw[a].im = twp + d->t.T[a] * e->es;
        twp += 2 * d->t.T[a] * e->es;
        if (d->t.f[a])
            cvcpu_twiddles_fill(&k->tw[a], e->es);
    }
    memcpy(d->tw, k->tw, sizeof d->tw);
    d->gre = k->gmem;
    d->gim = (char *)k->gmem + n * e->es;
    make_spectrum(d, &k->th[0]);
    return k;
}

convolve_status cvcpu_fft(const cvi_problem *p, int threads, const void *in, void *out,
                          cvcpu_fft_keep *keep)
{
    fplan d;
    memset(&d, 0, sizeof d);
    cvcpu_exec_init(&d.e, p, threads, in, out);
    d.e.stream = 0; /* tile rows are short: plain stores measured faster */
    const cvcpu_exec *e = &d.e;
    if (!choose_tiles(p, e->es, &d.t))
        return CONVOLVE_ERROR_UNSUPPORTED;
    cvcpu_limit_threads(&d.e, (double)(p->shape[0] * p->shape[1] * p->shape[2] * p->channels) *
                                  d.t.cost * 4.0);
    d.ops = cvcpu_fft_get(e->dbl, e->isa);
    const size_t n = d.t.block, pairs = cvcpu_div_up(d.t.jobs, 2);
    int nt = e->threads;
    if ((size_t)nt > pairs)
        nt = (int)pairs;

    /* the kept twiddles, spectrum and blocks if they were made for these
     * tiles (an earlier window of the execution), else new ones */
    fkept *k = keep ? keep->held : NULL;
    if (keep)
        keep->held = NULL;
    if (k && (memcmp(k->T, d.t.T, sizeof k->T) || k->block != n || k->dbl != e->dbl ||
              k->isa != e->isa || k->nt < nt)) {
        kept_free(k);
        k = NULL;
    }
    if (k) {
        memcpy(d.tw, k->tw, sizeof d.tw);
        d.gre = k->gmem;
        d.gim = (char *)k->gmem + n * e->es;
    } else if (!(k = kept_make(&d, nt))) {
        return CONVOLVE_ERROR_OUT_OF_MEMORY;
    }
    fthread *th = k->th;

    CVCPU_OMP(omp parallel num_threads(nt))
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        fthread *s = &th[tid];
CVCPU_OMP(omp for schedule(dynamic, 1))
for (ptrdiff_t it = 0; it < (ptrdiff_t)pairs; it++) {
    size_t a = 2 * (size_t)it, b = a + 1;
    /* a window: the pairs that write in it, each paired as in the
             * whole run (a pair's two tiles share rounding) */
    if (!job_in_window(&d, a) && !(b < d.t.jobs && job_in_window(&d, b)))
        continue;
    job_gather(&d, a, s->re);
    if (b < d.t.jobs)
        job_gather(&d, b, s->im);
    else
        memset(s->im, 0, n * e->es);
    void *re, *im;
    block_forward(&d, s, &re, &im);
    d.ops->multiply(re, im, d.gre, d.gim, n);
    block_inverse(&d, s);
    job_store(&d, a, s->re);
    if (b < d.t.jobs)
        job_store(&d, b, s->im);
}
cvcpu_store_done(e);
    }
    if (keep)
        keep->held = k;
    else
        kept_free(k);
    return CONVOLVE_OK;
}
