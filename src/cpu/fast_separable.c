/*
 * fast_separable.c - the `separable` CPU strategy: a separable filter
 * (p->taps) as one 1-D pass per axis, strip-mined so the intermediate
 * results stay in cache.
 *
 * Passes: H along axis 2 (the rows), V along axis 1, Z along axis 0. Axes
 * whose filter has one tap are no pass: their tap is folded into H's taps.
 * An item (channel, band of rows, tile of columns; and plane unless Z runs)
 * keeps a ring of K1 H-filtered rows and computes each output row of a plane
 * from it (V); with Z, it streams through the planes keeping a ring of K0
 * such V-filtered bands, and each output plane is their weighted sum.
 * Items cover the outputs computed: all, or the problem's window (with Z
 * and a window of planes, the K0 - 1 planes before it are filtered again).
 *
 * CONSTANT mode means the dense outer product: where V reads a row outside
 * the input it sees H of a row of cval, cval * sum(H taps), and where Z
 * reads a plane outside it sees cval * sum(H taps) * sum(V taps).
 */
#include "fast.h"

#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* The Z pass's ring of bands is kept within this many bytes per thread. */
#define CVCPU_ZRING_BYTES ((size_t)512 << 10)

typedef struct {
    cvcpu_exec e;
    int vpass, zpass;
    const void *th, *tv, *tz; /* taps of H (scaled by folded taps), V, Z */
    const void *hconst;       /* a row of cval * sum(th) */
    double hc;                /* that value */
    const void *vconst;       /* a row of cval * sum(th) * sum(tv) (or sum(th) alone) */
    size_t tw, rb, ntw, nrb;
    size_t lpad; /* extended input row */
    size_t tpad; /* filtered row */
} splan;

typedef struct {
    void *ext;         /* extended input row (lpad) */
    void *edge;        /* two border rows (cvcpu_edge_pad(K2) each) */
    void *hring;       /* K1 rows (tpad) */
    void *orow;        /* tpad */
    void *zring;       /* K0 bands of rb rows (tpad), with Z */
    const void **hptr; /* K1 */
    const void **rows; /* max(K0, K1) */
    const void **zptr; /* K0: each band's base, NULL for a plane outside */
} sthread;

/* Rows [ra, rz) of input plane j0 filtered by H then V (if it runs), tile
 * [xa, xa + wdt). Each row goes to dst + (i - ra) * pitch bytes, or, with
 * dst NULL, is stored as output row (i0, i). */
static void sep_rows(const splan *d, sthread *s, size_t c, ptrdiff_t j0, size_t ra, size_t rz,
                     size_t xa, size_t wdt, char *dst, size_t pitch, size_t i0)
{
    const cvcpu_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const size_t K1 = d->vpass ? p->ksize[1] : 1, K2 = p->ksize[2];
    const size_t rowbytes = d->tpad * e->es;
    const ptrdiff_t koff1 = d->vpass ? p->koff[1] : 0;
    size_t xl, xr;
    cvcpu_split_columns(e, xa, wdt, &xl, &xr);
    const size_t steps = rz - ra + K1 - 1;
    for (size_t t = 0; t < steps; t++) {
        ptrdiff_t j1 = cvi_boundary_index((ptrdiff_t)(ra + t) - koff1, (ptrdiff_t)p->shape[1],
                                          p->mode);
        const char *row = cvcpu_in_row(e, c, j0, j1);
        size_t slot = t % K1;
        if (!d->vpass) {
            void *to = dst ? dst + t * pitch : s->orow;
            if (row)
                cvcpu_filter_row(e, row, xa, wdt, xl, xr, s->edge, s->ext, to, d->th, K2);
            else
                cvcpu_fill(e, to, CVCPU_ROUND(wdt), d->hc);
            if (!dst)
                cvcpu_store(e, cvcpu_out_row(e, c, i0, ra + t, xa), wdt, s->orow);
            continue;
        }
        if (!row) {
            s->hptr[slot] = d->hconst;
        } else {
            void *h = (char *)s->hring + slot * rowbytes;
            cvcpu_filter_row(e, row, xa, wdt, xl, xr, s->edge, s->ext, h, d->th, K2);
            s->hptr[slot] = h;
        }
        if (t + 1 < K1)
            continue;
        size_t first = t + 1 - K1;
        for (size_t k1 = 0; k1 < K1; k1++)
            s->rows[k1] = s->hptr[(first + k1) % K1];
        void *to = dst ? dst + first * pitch : s->orow;
        e->corr(to, wdt, s->rows, K1, d->tv, 1);
        if (!dst)
            cvcpu_store(e, cvcpu_out_row(e, c, i0, ra + first, xa), wdt, s->orow);
    }
}

/* Output rows [ra, rz) of planes [z0, z1), streaming along axis 0 with a
 * ring of K0 filtered bands (the K0 - 1 planes before z0's band are
 * filtered first). */
static void sep_stream(const splan *d, sthread *s, size_t c, size_t z0, size_t z1, size_t ra,
                       size_t rz, size_t xa, size_t wdt)
{
    const cvcpu_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const size_t K0 = p->ksize[0], n0 = p->shape[0], pitch = d->tpad * e->es;
    const size_t bandbytes = d->rb * pitch;
    for (size_t t = z0; t < z1 + K0 - 1; t++) {
        ptrdiff_t j0 = cvi_boundary_index((ptrdiff_t)t - p->koff[0], (ptrdiff_t)n0, p->mode);
        size_t slot = t % K0;
        if (j0 < 0) {
            s->zptr[slot] = NULL;
        } else {
            char *band = (char *)s->zring + slot * bandbytes;
            sep_rows(d, s, c, j0, ra, rz, xa, wdt, band, pitch, 0);
            s->zptr[slot] = band;
        }
        if (t + 1 < z0 + K0)
            continue;
        size_t i0 = t + 1 - K0;
        for (size_t r = 0; r < rz - ra; r++) {
            for (size_t k0 = 0; k0 < K0; k0++) {
                const char *b = s->zptr[(i0 + k0) % K0];
                s->rows[k0] = b ? b + r * pitch : d->vconst;
            }
            e->corr(s->orow, wdt, s->rows, K0, d->tz, 1);
            cvcpu_store(e, cvcpu_out_row(e, c, i0, ra + r, xa), wdt, s->orow);
        }
    }
}

static double sum_of(const double *t, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += t[i];
    return s;
}

static void free_threads(sthread *th, int nt)
{
    if (!th)
        return;
    for (int t = 0; t < nt; t++) {
        cvcpu_free(th[t].ext);
        free(th[t].hptr);
        free(th[t].rows);
        free(th[t].zptr);
    }
    free(th);
}

/* Tiles of the outputs computed (tp: the problem with their extents) whose
 * rings of H rows (and of Z bands) stay in cache: d->tw, rb, ntw, nrb, lpad
 * and tpad. Returns the number of work items. */
static size_t plan_tiles(splan *d, const cvi_problem *tp)
{
    const cvcpu_exec *e = &d->e;
    const size_t K0 = tp->ksize[0], K1 = tp->ksize[1], K2 = tp->ksize[2];
    size_t ring = (d->vpass ? K1 : 0) + 2;
    if (d->zpass) {
        cvcpu_plan_tiles(tp, e->es, e->threads, ring, 1, 0, &d->tw, &d->rb);
        size_t maxrb = CVCPU_ZRING_BYTES / (K0 * cvcpu_round16(CVCPU_ROUND(d->tw)) * e->es);
        if (maxrb < 8)
            maxrb = 8;
        cvcpu_plan_tiles(tp, e->es, e->threads, ring, 1, maxrb, &d->tw, &d->rb);
    } else {
        cvcpu_plan_tiles(tp, e->es, e->threads, ring, tp->shape[0], 0, &d->tw, &d->rb);
    }
    d->ntw = cvcpu_div_up(tp->shape[2], d->tw);
    d->nrb = cvcpu_div_up(tp->shape[1], d->rb);
    d->lpad = cvcpu_round16(CVCPU_ROUND(d->tw) + K2 - 1);
    d->tpad = cvcpu_round16(CVCPU_ROUND(d->tw));
    return d->nrb * d->ntw * (d->zpass ? 1 : tp->shape[0]);
}

/* Each thread's buffers: the extended row, its edges, the ring of H rows,
 * an output row and (Z pass) the ring of bands. 0 when out of memory. */
static int alloc_threads(const splan *d, sthread *th, int nt)
{
    const cvcpu_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2];
    const size_t epad = cvcpu_edge_pad(K2);
    const size_t per = d->lpad + 2 * epad + (K1 + 1) * d->tpad +
                       (d->zpass ? K0 * d->rb * d->tpad : 0);
    const size_t nrows = K0 > K1 ? K0 : K1;
    for (int t = 0; t < nt; t++) {
        sthread *s = &th[t];
        s->ext = cvcpu_alloc(per, e->es);
        s->hptr = malloc(K1 * sizeof(void *));
        s->rows = malloc(nrows * sizeof(void *));
        s->zptr = malloc(K0 * sizeof(void *));
        if (!s->ext || !s->hptr || !s->rows || !s->zptr)
            return 0;
        s->edge = (char *)s->ext + d->lpad * e->es;
        s->hring = (char *)s->edge + 2 * epad * e->es;
        s->orow = (char *)s->hring + K1 * d->tpad * e->es;
        s->zring = (char *)s->orow + d->tpad * e->es;
    }
    return 1;
}

/* Item `it` of the run (a tile of output rows and columns), every channel
 * of it: interleaved channels share cache lines, which two threads must not
 * write at once. */
static void sep_tile(const splan *d, sthread *s, size_t it, const size_t *lo, const size_t *m)
{
    const cvcpu_tile t = cvcpu_tile_of(it, d->ntw, d->nrb, d->tw, d->rb, lo, m);
    for (size_t c = 0; c < d->e.p->channels; c++) {
        if (d->zpass)
            sep_stream(d, s, c, lo[0], lo[0] + m[0], t.ra, t.rz, t.xa, t.wdt);
        else
            sep_rows(d, s, c, (ptrdiff_t)t.i0, t.ra, t.rz, t.xa, t.wdt, NULL, 0, t.i0);
    }
}

convolve_status cvcpu_separable(const cvi_problem *p, int threads, const void *in, void *out)
{
    splan d;
    cvcpu_exec_init(&d.e, p, threads, in, out);
    const double outputs = (double)(p->shape[0] * p->shape[1] * p->shape[2] * p->channels);
    cvcpu_limit_threads(&d.e, outputs * (double)(p->ksize[0] + p->ksize[1] + p->ksize[2] + 4));
    const cvcpu_exec *e = &d.e;
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2];
    d.vpass = K1 > 1;
    d.zpass = K0 > 1;
    double scale = (d.vpass ? 1.0 : p->taps[1][0]) * (d.zpass ? 1.0 : p->taps[0][0]);

    /* items over the outputs computed (the window's, if any) */
    size_t lo[3], m[3];
    cvi_problem tp;
    cvcpu_outputs(p, lo, m, &tp);
    const size_t items = plan_tiles(&d, &tp);
    int nt = e->threads;
    if ((size_t)nt > items)
        nt = (int)items;

    convolve_status st = CONVOLVE_OK;
    char *taps = cvcpu_alloc(K0 + K1 + K2 + 3 * 16, e->es);
    char *consts = cvcpu_alloc(2 * d.tpad, e->es);
    sthread *th = calloc((size_t)nt, sizeof *th);
    if (!taps || !consts || !th)
        goto oom;
    d.th = taps;
    d.tv = taps + cvcpu_round16(K2) * e->es;
    d.tz = taps + (cvcpu_round16(K2) + cvcpu_round16(K1)) * e->es;
    cvcpu_convert_weights(e, (void *)d.th, p->taps[2], K2, scale);
    cvcpu_convert_weights(e, (void *)d.tv, p->taps[1], K1, 1.0);
    cvcpu_convert_weights(e, (void *)d.tz, p->taps[0], K0, 1.0);
    double hc = p->cval * sum_of(p->taps[2], K2) * scale;
    double vc = d.vpass ? hc * sum_of(p->taps[1], K1) : hc;
    d.hc = hc;
    cvcpu_fill(e, consts, d.tpad, hc);
    cvcpu_fill(e, consts + d.tpad * e->es, d.tpad, vc);
    d.hconst = consts;
    d.vconst = consts + d.tpad * e->es;

    if (!alloc_threads(&d, th, nt))
        goto oom;

    /* one thread: no OpenMP region (libgomp wakes a futex at each barrier,
     * even in a team of one) */
    if (nt == 1) {
        for (size_t it = 0; it < items; it++)
            sep_tile(&d, &th[0], it, lo, m);
        cvcpu_store_done(e);
        goto done;
    }
    CVCPU_OMP(omp parallel num_threads(nt))
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        sthread *s = &th[tid];
CVCPU_OMP(omp for schedule(dynamic, 1))
for (ptrdiff_t it = 0; it < (ptrdiff_t)items; it++)
    sep_tile(&d, s, (size_t)it, lo, m);
cvcpu_store_done(e);
    }
    goto done;
oom:
    st = CONVOLVE_ERROR_OUT_OF_MEMORY;
done:
    free_threads(th, nt);
    cvcpu_free(taps);
    cvcpu_free(consts);
    return st;
}
