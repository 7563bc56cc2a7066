/*
 * fast_direct.c - the `direct` CPU strategy: the dense filter applied tap by
 * tap, vectorised and threaded.
 *
 * Work is cut into items (channel, plane, band of rows, tile of columns).
 * An item keeps, for each filter plane k0, a ring of K1 extended input rows
 * (each gathered once per item from the strided, typed input with the
 * boundary mode applied, then held in cache), and computes each output row
 * as the weighted sum of the K0*K1 ring rows shifted by 0..K2-1 (the row
 * kernels of fast_kernels.c); the result is stored with conversion. Rows
 * outside the input in CONSTANT mode point at one shared row of cval, so
 * borders cost no more than the interior.
 */
#include "fast.h"

#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    void *ring;         /* K0*K1 rows of lpad elements, then the output row */
    void *orow;
    void **slot;        /* K0*K1: where each ring entry's row lies (or the cval row) */
    const void **rows;  /* K0*K1: the rows of one output row, in weight order */
    ptrdiff_t *j0;      /* K0: input plane of each filter plane (-1: outside) */
    void *blk4[CVF_RB]; /* output rows of the 4-row kernel */
} dthread;

typedef struct {
    cvf_exec e;
    const void *w;      /* weights in the compute type */
    const void *crow;   /* a row of cval (CONSTANT mode), else NULL */
    size_t tw, rb, ntw, nrb, lpad;
} dplan;

static void direct_item(const dplan *d, dthread *s, size_t c, size_t i0, size_t ra, size_t rz,
                        size_t xa, size_t wdt)
{
    const cvf_exec *e = &d->e;
    const cvi_problem *p = e->p;
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2], P = K0 * K1;
    const ptrdiff_t q0 = (ptrdiff_t)xa - p->koff[2];
    const size_t L = wdt + K2 - 1, rowbytes = d->lpad * e->es;
    for (size_t k0 = 0; k0 < K0; k0++)
        s->j0[k0] = cvi_boundary_index((ptrdiff_t)(i0 + k0) - p->koff[0], (ptrdiff_t)p->shape[0],
                                       p->mode);
    const size_t steps = rz - ra + K1 - 1;
    for (size_t t = 0; t < steps; t++) {
        ptrdiff_t j1 = cvi_boundary_index((ptrdiff_t)(ra + t) - p->koff[1],
                                          (ptrdiff_t)p->shape[1], p->mode);
        size_t slot = t % K1;
        for (size_t k0 = 0; k0 < K0; k0++) {
            const char *row = cvf_in_row(e, c, s->j0[k0], j1);
            size_t at = k0 * K1 + slot;
            if (!row) {
                s->slot[at] = (void *)d->crow;
            } else {
                void *dst = (char *)s->ring + at * rowbytes;
                cvf_gather(e, row, q0, L, dst);
                s->slot[at] = dst;
            }
        }
        if (t + 1 < K1)
            continue;
        size_t first = t + 1 - K1, i1 = ra + first;
        for (size_t k0 = 0; k0 < K0; k0++)
            for (size_t k1 = 0; k1 < K1; k1++)
                s->rows[k0 * K1 + k1] = s->slot[k0 * K1 + (first + k1) % K1];
        e->corr(s->orow, wdt, s->rows, P, d->w, K2);
        cvf_store(e, cvf_out_row(e, c, i0, i1, xa), wdt, s->orow);
    }
}

static void free_threads(dthread *th, int nt)
{
    if (!th)
        return;
    for (int t = 0; t < nt; t++) {
        cvf_free(th[t].ring);
        free(th[t].slot);
        free(th[t].rows);
        free(th[t].j0);
    }
    free(th);
}

convolve_status cvf_direct(const cvi_problem *p, const void *in, void *out)
{
    dplan d;
    cvf_exec_init(&d.e, p, in, out);
    const cvf_exec *e = &d.e;
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2], P = K0 * K1;
    cvf_plan_tiles(p, e->es, e->threads, P, p->channels * p->shape[0], 0, &d.tw, &d.rb);
    d.ntw = cvf_div_up(p->shape[2], d.tw);
    d.nrb = cvf_div_up(p->shape[1], d.rb);
    d.lpad = cvf_round16(CVF_ROUND(d.tw) + K2 - 1);
    const size_t items = p->channels * p->shape[0] * d.nrb * d.ntw;
    int nt = e->threads;
    if ((size_t)nt > items)
        nt = (int)items;

    convolve_status st = CONVOLVE_OK;
    void *w = cvf_alloc(p->kcount, e->es), *crow = NULL;
    dthread *th = calloc((size_t)nt, sizeof *th);
    if (!w || !th)
        goto oom;
    cvf_convert_weights(e, w, p->weights, p->kcount, 1.0);
    d.w = w;
    if (p->mode == CVI_MODE_CONSTANT) {
        if (!(crow = cvf_alloc(d.lpad, e->es)))
            goto oom;
        cvf_fill(e, crow, d.lpad, p->cval);
    }
    d.crow = crow;
    for (int t = 0; t < nt; t++) {
        th[t].ring = cvf_alloc(P * d.lpad + CVF_ROUND(d.tw), e->es);
        th[t].slot = malloc(P * sizeof(void *));
        th[t].rows = malloc(P * sizeof(void *));
        th[t].j0 = malloc(K0 * sizeof(ptrdiff_t));
        if (!th[t].ring || !th[t].slot || !th[t].rows || !th[t].j0)
            goto oom;
        th[t].orow = (char *)th[t].ring + P * d.lpad * e->es;
    }

#pragma omp parallel num_threads(nt)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        dthread *s = &th[tid];
#pragma omp for schedule(dynamic, 1)
        for (ptrdiff_t it = 0; it < (ptrdiff_t)items; it++) {
            size_t r = (size_t)it;
            size_t c = r % p->channels;
            r /= p->channels;
            size_t x = r % d.ntw;
            r /= d.ntw;
            size_t b = r % d.nrb;
            size_t i0 = r / d.nrb;
            size_t xa = x * d.tw, wdt = p->shape[2] - xa < d.tw ? p->shape[2] - xa : d.tw;
            size_t ra = b * d.rb, rz = ra + d.rb < p->shape[1] ? ra + d.rb : p->shape[1];
            direct_item(&d, s, c, i0, ra, rz, xa, wdt);
        }
        cvf_store_done(e);
    }
    goto done;
oom:
    st = CONVOLVE_ERROR_OUT_OF_MEMORY;
done:
    free_threads(th, nt);
    cvf_free(w);
    cvf_free(crow);
    return st;
}
