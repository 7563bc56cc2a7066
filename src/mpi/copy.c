/*
 * copy.c - moving elements: packing a sender's elements into a message,
 * unpacking a message into the receiver's piece boxes, copying a rank's own
 * elements into its piece boxes, and storing a piece's outputs into the
 * caller's output box. Elements are copied whole (all channels), as bytes.
 *
 * Piece boxes are contiguous C-order arrays with interleaved channels; the
 * caller's boxes may have any strides (a view). A run along the last axis
 * is one memcpy when the view is contiguous there. Copies of 2 MB and more
 * share their rows among `threads` OpenMP threads (the plan's CPU threads).
 */
#include "mpi_internal.h"

#include <string.h>

/* 1 if elements follow one another along axis 2 with interleaved channels. */
static int packed_rows(const cvmpi_view *v)
{
    return v->stride[2] == (ptrdiff_t)(v->channels * v->esize) &&
           (v->channels == 1 || v->cstride == (ptrdiff_t)v->esize);
}

/* Copies n elements from the view at src (step elements apart along axis 2)
 * to contiguous dst. */
static void gather_row(unsigned char *dst, const unsigned char *src, const cvmpi_view *v, size_t n,
                       int step)
{
    const size_t elem = v->channels * v->esize;
    if (step == 1 && packed_rows(v)) {
        memcpy(dst, src, n * elem);
        return;
    }
    const ptrdiff_t st = step * v->stride[2];
    for (size_t i = 0; i < n; i++, src += st)
        for (size_t c = 0; c < v->channels; c++, dst += v->esize)
            memcpy(dst, src + (ptrdiff_t)c * v->cstride, v->esize);
}

/* Copies n contiguous elements from src to the view at dst. */
static void scatter_row(unsigned char *dst, const unsigned char *src, const cvmpi_view *v, size_t n)
{
    if (packed_rows(v)) {
        memcpy(dst, src, n * v->channels * v->esize);
        return;
    }
    for (size_t i = 0; i < n; i++, dst += v->stride[2])
        for (size_t c = 0; c < v->channels; c++, src += v->esize)
            memcpy(dst + (ptrdiff_t)c * v->cstride, src, v->esize);
}

static void box_extents(const cvmpi_piece *pc, size_t *e)
{
    for (int a = 0; a < 3; a++)
        e[a] = (size_t)(pc->in[a].hi - pc->in[a].lo);
}

/*
 * The rows of a transfer: every pair (j0, j1) of positions along axes 0 and
 * 1 (the lists expanded: pos and src per position) is one row of the axis-2
 * runs; row k = j0 * n1 + j1 holds the packed elements [k * n2, (k+1) * n2).
 * Rows are independent: threads share them out (copies of 2 MB and up).
 */
static int threads_for(size_t bytes, int threads)
{
    return bytes < ((size_t)1 << 21) ? 1 : threads;
}

void cvmpi_pack_transfer(const cvmpi_transfer *t, const unsigned char *base, const cvmpi_view *v,
                         const size_t *lo, unsigned char *dst, int threads)
{
    const size_t elem = v->channels * v->esize;
    const cvmpi_list *l = t->axis;
    const ptrdiff_t n0 = (ptrdiff_t)l[0].count, n1 = (ptrdiff_t)l[1].count;
    const size_t n2 = l[2].count;
    CVMPI_OMP(omp parallel for collapse(2) schedule(static)
              num_threads(threads_for(t->count * elem, threads)))
    for (ptrdiff_t j0 = 0; j0 < n0; j0++)
        for (ptrdiff_t j1 = 0; j1 < n1; j1++) {
            const unsigned char *row = base + (ptrdiff_t)(l[0].src[j0] - lo[0]) * v->stride[0] +
                                       (ptrdiff_t)(l[1].src[j1] - lo[1]) * v->stride[1];
            unsigned char *d = dst + (size_t)(j0 * n1 + j1) * n2 * elem;
            for (size_t r = 0; r < l[2].nruns; r++) {
                const cvmpi_run *u = &l[2].runs[r];
                gather_row(d, row + (ptrdiff_t)(u->src - lo[2]) * v->stride[2], v, u->len, u->step);
                d += u->len * elem;
            }
        }
}

void cvmpi_pack(const cvmpi_link *link, const unsigned char *base, const cvmpi_view *v,
                unsigned char *dst, int threads)
{
    static const size_t zero[3] = {0, 0, 0};
    const size_t elem = v->channels * v->esize;
    for (int k = 0; k < link->nt; k++) {
        cvmpi_pack_transfer(&link->t[k], base, v, zero, dst, threads);
        dst += link->t[k].count * elem;
    }
}

void cvmpi_unpack(const cvmpi_link *link, const unsigned char *src, cvmpi_piece_run *pr,
                  const cvmpi_work *w, int threads)
{
    for (int k = 0; k < link->nt; k++) {
        const cvmpi_transfer *t = &link->t[k];
        const cvmpi_list *l = t->axis;
        size_t e[3];
        box_extents(&w->piece[t->piece], e);
        unsigned char *box = pr[t->piece].in;
        const size_t elem = pr[t->piece].in_view.channels * pr[t->piece].in_view.esize;
        const ptrdiff_t n0 = (ptrdiff_t)l[0].count, n1 = (ptrdiff_t)l[1].count;
        const size_t n2 = l[2].count;
        CVMPI_OMP(omp parallel for collapse(2) schedule(static)
                  num_threads(threads_for(t->count * elem, threads)))
        for (ptrdiff_t j0 = 0; j0 < n0; j0++)
            for (ptrdiff_t j1 = 0; j1 < n1; j1++) {
                const unsigned char *from = src + (size_t)(j0 * n1 + j1) * n2 * elem;
                unsigned char *row = box + (l[0].pos[j0] * e[1] + l[1].pos[j1]) * e[2] * elem;
                for (size_t r = 0; r < l[2].nruns; r++) {
                    const cvmpi_run *u = &l[2].runs[r];
                    memcpy(row + u->pos * elem, from, u->len * elem);
                    from += u->len * elem;
                }
            }
        src += t->count * elem;
    }
}

void cvmpi_copy_self_transfer(const cvmpi_transfer *t, const unsigned char *base,
                              const cvmpi_view *v, const size_t *lo, cvmpi_piece_run *pr,
                              const cvmpi_work *w, int threads)
{
    const size_t elem = v->channels * v->esize;
    const cvmpi_list *l = t->axis;
    size_t e[3];
    box_extents(&w->piece[t->piece], e);
    unsigned char *box = pr[t->piece].in;
    const ptrdiff_t n0 = (ptrdiff_t)l[0].count, n1 = (ptrdiff_t)l[1].count;
    CVMPI_OMP(omp parallel for collapse(2) schedule(static)
              num_threads(threads_for(t->count * elem, threads)))
    for (ptrdiff_t j0 = 0; j0 < n0; j0++)
        for (ptrdiff_t j1 = 0; j1 < n1; j1++) {
            const unsigned char *from = base + (ptrdiff_t)(l[0].src[j0] - lo[0]) * v->stride[0] +
                                        (ptrdiff_t)(l[1].src[j1] - lo[1]) * v->stride[1];
            unsigned char *row = box + (l[0].pos[j0] * e[1] + l[1].pos[j1]) * e[2] * elem;
            for (size_t r = 0; r < l[2].nruns; r++) {
                const cvmpi_run *u = &l[2].runs[r];
                gather_row(row + u->pos * elem, from + (ptrdiff_t)(u->src - lo[2]) * v->stride[2],
                           v, u->len, u->step);
            }
        }
}

void cvmpi_copy_self(const cvmpi_link *link, const unsigned char *base, const cvmpi_view *v,
                     cvmpi_piece_run *pr, const cvmpi_work *w, int threads)
{
    static const size_t zero[3] = {0, 0, 0};
    for (int k = 0; k < link->nt; k++)
        cvmpi_copy_self_transfer(&link->t[k], base, v, zero, pr, w, threads);
}

void cvmpi_store_piece(const cvmpi_piece *pc, const cvmpi_piece_run *r, unsigned char *base,
                       const cvmpi_view *v, const cvmpi_work *w, int threads)
{
    size_t e[3];
    box_extents(pc, e);
    const size_t elem = v->channels * v->esize;
    const size_t n2 = (size_t)(pc->out[2].hi - pc->out[2].lo);
    const ptrdiff_t lo0 = pc->out[0].lo, hi0 = pc->out[0].hi, lo1 = pc->out[1].lo,
                    hi1 = pc->out[1].hi;
    const size_t bytes = (size_t)(hi0 - lo0) * (size_t)(hi1 - lo1) * n2 * elem;
    CVMPI_OMP(omp parallel for collapse(2) schedule(static)
              num_threads(threads_for(bytes, threads)))
    for (ptrdiff_t o0 = lo0; o0 < hi0; o0++)
        for (ptrdiff_t o1 = lo1; o1 < hi1; o1++) {
            size_t at = ((size_t)(o0 - pc->in[0].lo) * e[1] + (size_t)(o1 - pc->in[1].lo)) * e[2] +
                        (size_t)(pc->out[2].lo - pc->in[2].lo);
            unsigned char *dst = base + (o0 - w->box[0].lo) * v->stride[0] +
                                 (o1 - w->box[1].lo) * v->stride[1] +
                                 (pc->out[2].lo - w->box[2].lo) * v->stride[2];
            scatter_row(dst, (const unsigned char *)r->out + at * elem, v, n2);
        }
}
