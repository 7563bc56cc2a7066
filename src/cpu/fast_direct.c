/*
 * fast_direct.c - the `direct` CPU strategy: the dense filter applied tap by
 * tap, vectorised and threaded.
 *
 * Work is cut into items (channel, plane, band of rows, tile of columns) of
 * the outputs computed (all, or the problem's window).
 * An item keeps, for each filter plane k0, a ring of K1 + 3 extended input
 * rows (each gathered once per item from the strided, typed input with the
 * boundary mode applied, then held in cache), and computes output rows, four
 * at a time for larger filters, as weighted sums of the ring rows shifted by
 * 0..K2-1 (the kernels of fast_kernels.c); results are stored with
 * conversion. Rows outside the input in CONSTANT mode point at one shared
 * row of cval.
 *
 * When the input is already contiguous in the compute type (float32, or
 * float64 computed in double) and the filter has one plane, nothing is
 * copied for the interior: a tile's columns split into a left border, a
 * middle whose taps all fall inside the row (read in place; the kernel's
 * loads then stream from memory while it computes) and a right border;
 * only the border columns are gathered, into small buffers, so borders
 * cost no more than the interior.
 */
#include "fast.h"

#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* One ring entry: its extended row for each column part of a tile (left
 * border, middle, right border), each pointer at the part's first column
 * minus koff2. */
typedef struct {
    const void *part[3];
} rowref;

typedef struct {
    void *ring;           /* K0 * Q rows of lpad elements */
    void *edges;          /* K0 * Q pairs of border rows of epad elements */
    void *orow[CVCPU_RB]; /* output rows (CVCPU_ROUND(tw) elements each) */
    rowref *slot;         /* K0 * Q ring entries */
    const void **rows;    /* K0 * Q: the rows of one kernel call */
    ptrdiff_t *j0;        /* K0: input plane of each filter plane (-1: outside) */
} dthread;

typedef struct {
    cvcpu_exec e;
    cvcpu_corr4_fn corr4; /* 4-row kernel, NULL when unused */
    size_t R;             /* output rows per kernel call: CVCPU_RB with corr4, else 1 */
    size_t Q;             /* ring rows per filter plane: K1 + R - 1 */
    const void *w;        /* weights in the compute type */
    const void *crow;     /* a row of cval (CONSTANT mode), else NULL */
    size_t tw, rb, ntw, nrb, lpad, epad;
} dplan;

/* Fills the ring entries of input row j1 (ring position pos) of every filter
 * plane for the tile [xa, xa + wdt) with parts split at xl and xr. */
static void fill_slots(const dplan *d, dthread *s, size_t c, ptrdiff_t j1, size_t pos, size_t xa,
                       size_t wdt, size_t xl, size_t xr)
{
    const cvcpu_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const size_t K0 = p->ksize[0], K2 = p->ksize[2], es = e->es;
    const ptrdiff_t koff2 = p->koff[2];
    const int middle = xr > xl;
    for (size_t k0 = 0; k0 < K0; k0++) {
        const char *row = cvcpu_in_row(e, c, s->j0[k0], j1);
        size_t at = k0 * d->Q + pos % d->Q;
        rowref *r = &s->slot[at];
        if (!row) {
            r->part[0] = r->part[1] = r->part[2] = d->crow;
        } else if (e->in_place && middle) {
            char *edge = (char *)s->edges + 2 * at * d->epad * es;
            r->part[1] = row + ((ptrdiff_t)xl - koff2) * p->in_strides[2];
            if (xl > xa)
                cvcpu_gather(e, row, (ptrdiff_t)xa - koff2, xl - xa + K2 - 1, edge);
            if (xr < xa + wdt)
                cvcpu_gather(e, row, (ptrdiff_t)xr - koff2, xa + wdt - xr + K2 - 1,
                             edge + d->epad * es);
            r->part[0] = edge;
            r->part[2] = edge + d->epad * es;
        } else {
            char *buf = (char *)s->ring + at * d->lpad * es;
            cvcpu_gather(e, row, (ptrdiff_t)xa - koff2, wdt + K2 - 1, buf);
            r->part[0] = buf;
            r->part[1] = buf + (xl - xa) * es;
            r->part[2] = buf + (xr - xa) * es;
        }
    }
}

static void direct_item(const dplan *d, dthread *s, size_t c, size_t i0, size_t ra, size_t rz,
                        size_t xa, size_t wdt)
{
    const cvcpu_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2], Q = d->Q, es = e->es;
    const size_t nrows = rz - ra;
    const ptrdiff_t koff2 = p->koff[2];
    for (size_t k0 = 0; k0 < K0; k0++)
        s->j0[k0] = cvi_boundary_index((ptrdiff_t)(i0 + k0) - p->koff[0], (ptrdiff_t)p->shape[0],
                                       p->mode);
    /* column parts: [xa, xl) left border, [xl, xr) middle read in place,
     * [xr, xa + wdt) right border */
    size_t xl, xr;
    cvcpu_split_columns(e, xa, wdt, &xl, &xr);
    const size_t pn[3] = {xl - xa, xr - xl, xa + wdt - xr}, po[3] = {0, xl - xa, xr - xa};
    size_t filled = 0; /* input rows ra - koff1 + [0, filled) are in the rings */
    for (size_t g = 0; g < nrows;) {
        size_t cnt = d->R > 1 && nrows - g >= d->R ? d->R : 1;
        for (; filled < g + cnt + K1 - 1; filled++)
            fill_slots(d, s, c,
                       cvi_boundary_index((ptrdiff_t)(ra + filled) - p->koff[1],
                                          (ptrdiff_t)p->shape[1], p->mode),
                       filled, xa, wdt, xl, xr);
        /* the next input row streams in while these outputs are computed
         * (measured: pays for larger filters, costs at 3x3 where memory is the
         * limit and the in-place interior already streams) */
        if (filled < nrows + K1 - 1 && p->kcount >= 16) {
            ptrdiff_t j1 = cvi_boundary_index((ptrdiff_t)(ra + filled) - p->koff[1],
                                              (ptrdiff_t)p->shape[1], p->mode);
            for (size_t k0 = 0; k0 < K0; k0++)
                cvcpu_prefetch(e, cvcpu_in_row(e, c, s->j0[k0], j1), (ptrdiff_t)xa - koff2,
                               wdt + K2 - 1);
        }
        for (int part = 0; part < 3; part++) {
            if (!pn[part])
                continue;
            if (cnt > 1) {
                const size_t J = cnt + K1 - 1;
                void *outs[CVCPU_RB];
                for (size_t r = 0; r < cnt; r++)
                    outs[r] = (char *)s->orow[r] + po[part] * es;
                for (size_t k0 = 0; k0 < K0; k0++)
                    for (size_t j = 0; j < J; j++)
                        s->rows[k0 * J + j] = s->slot[k0 * Q + (g + j) % Q].part[part];
                d->corr4(outs, pn[part], s->rows, K0, K1, d->w, K2);
            } else {
                for (size_t k0 = 0; k0 < K0; k0++)
                    for (size_t k1 = 0; k1 < K1; k1++)
                        s->rows[k0 * K1 + k1] = s->slot[k0 * Q + (g + k1) % Q].part[part];
                e->corr((char *)s->orow[0] + po[part] * es, pn[part], s->rows, K0 * K1, d->w, K2);
            }
        }
        for (size_t r = 0; r < cnt; r++)
            cvcpu_store(e, cvcpu_out_row(e, c, i0, ra + g + r, xa), wdt, s->orow[r]);
        g += cnt;
    }
}

static void free_threads(dthread *th, int nt)
{
    if (!th)
        return;
    for (int t = 0; t < nt; t++) {
        cvcpu_free(th[t].ring);
        cvcpu_free(th[t].edges);
        free(th[t].slot);
        free(th[t].rows);
        free(th[t].j0);
    }
    free(th);
}

/* Item `it` of the run (a tile of output rows and columns), every channel
 * of it: interleaved channels share cache lines, which two threads must not
 * write at once. */
static void direct_tile(const dplan *d, dthread *s, size_t it, const size_t *lo, const size_t *m)
{
    const cvcpu_tile t = cvcpu_tile_of(it, d->ntw, d->nrb, d->tw, d->rb, lo, m);
    for (size_t c = 0; c < d->e.p->channels; c++)
        direct_item(d, s, c, t.i0, t.ra, t.rz, t.xa, t.wdt);
}

convolve_status cvcpu_direct(const cvi_problem *p, int threads, const void *in, void *out)
{
    dplan d;
    cvcpu_exec_init(&d.e, p, threads, in, out);
    /* filters of several planes read gathered rows: in place, their K0 K1
     * rows a call stream from K0 planes at once (docs/architecture.md,
     * "Measured choices") */
    if (p->ksize[0] > 1)
        d.e.in_place = 0;
    const double outputs = (double)(p->shape[0] * p->shape[1] * p->shape[2] * p->channels);
    cvcpu_limit_threads(&d.e, outputs * (double)p->kcount);
    const cvcpu_exec *e = &d.e;
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2];
    /* the 4-row kernel pays once rows are long enough to share (measured) */
    d.corr4 = K1 >= (e->isa >= CVCPU_ISA_AVX512 ? 5u : 9u) ? cvcpu_corr4_kernel(e->dbl, e->isa)
                                                           : NULL;
    d.R = d.corr4 ? CVCPU_RB : 1;
    d.Q = K1 + d.R - 1;
    const size_t P = K0 * d.Q;
    /* items over the outputs computed (the window's, if any) */
    size_t lo[3], m[3];
    cvi_problem tp;
    cvcpu_outputs(p, lo, m, &tp);
    cvcpu_plan_tiles(&tp, e->es, e->threads, P + d.R, m[0], 0, &d.tw, &d.rb);
    d.ntw = cvcpu_div_up(m[2], d.tw);
    d.nrb = cvcpu_div_up(m[1], d.rb);
    d.lpad = cvcpu_round16(CVCPU_ROUND(d.tw) + K2 - 1);
    d.epad = cvcpu_edge_pad(K2);
    const size_t items = m[0] * d.nrb * d.ntw;
    int nt = e->threads;
    if ((size_t)nt > items)
        nt = (int)items;

    convolve_status st = CONVOLVE_OK;
    void *w = cvcpu_alloc(p->kcount, e->es), *crow = NULL;
    dthread *th = calloc((size_t)nt, sizeof *th);
    if (!w || !th)
        goto oom;
    cvcpu_convert_weights(e, w, p->weights, p->kcount, 1.0);
    d.w = w;
    if (p->mode == CVI_MODE_CONSTANT) {
        if (!(crow = cvcpu_alloc(d.lpad, e->es)))
            goto oom;
        cvcpu_fill(e, crow, d.lpad, p->cval);
    }
    d.crow = crow;
    for (int t = 0; t < nt; t++) {
        th[t].ring = cvcpu_alloc(P * d.lpad + d.R * cvcpu_round16(CVCPU_ROUND(d.tw)), e->es);
        th[t].edges = cvcpu_alloc(2 * P * d.epad, e->es);
        th[t].slot = malloc(P * sizeof(rowref));
        th[t].rows = malloc(P * sizeof(void *));
        th[t].j0 = malloc(K0 * sizeof(ptrdiff_t));
        if (!th[t].ring || !th[t].edges || !th[t].slot || !th[t].rows || !th[t].j0)
            goto oom;
        for (size_t r = 0; r < d.R; r++)
            th[t].orow[r] = (char *)th[t].ring +
                            (P * d.lpad + r * cvcpu_round16(CVCPU_ROUND(d.tw))) * e->es;
    }

    /* one thread: no OpenMP region (libgomp wakes a futex at each barrier,
     * even in a team of one) */
    if (nt == 1) {
        for (size_t it = 0; it < items; it++)
            direct_tile(&d, &th[0], it, lo, m);
        cvcpu_store_done(e);
        goto done;
    }
    CVCPU_OMP(omp parallel num_threads(nt))
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        dthread *s = &th[tid];
CVCPU_OMP(omp for schedule(dynamic, 1))
for (ptrdiff_t it = 0; it < (ptrdiff_t)items; it++)
    direct_tile(&d, s, (size_t)it, lo, m);
cvcpu_store_done(e);
    }
    goto done;
oom:
    st = CONVOLVE_ERROR_OUT_OF_MEMORY;
done:
    free_threads(th, nt);
    cvcpu_free(w);
    cvcpu_free(crow);
    return st;
}
