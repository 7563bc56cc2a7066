/*
 * copy.c - moving elements: packing a sender's elements into a message,
 * unpacking a message into the receiver's piece boxes, copying a rank's own
 * elements into its piece boxes, and storing a piece's outputs into the
 * caller's output box. Elements are copied whole (all channels), as bytes.
 *
 * Piece boxes are contiguous C-order arrays with interleaved channels; the
 * caller's boxes may have any strides (a view). A run along the last axis
 * is one memcpy when the view is contiguous there.
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
static void gather_row(unsigned char *dst, const unsigned char *src, const cvmpi_view *v,
                       size_t n, int step)
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
static void scatter_row(unsigned char *dst, const unsigned char *src, const cvmpi_view *v,
                        size_t n)
{
    if (packed_rows(v)) {
        memcpy(dst, src, n * v->channels * v->esize);
        return;
    }
    for (size_t i = 0; i < n; i++, dst += v->stride[2])
        for (size_t c = 0; c < v->channels; c++, src += v->esize)
            memcpy(dst + (ptrdiff_t)c * v->cstride, src, v->esize);
}

/* One run along axis 2 of a transfer: the byte offset of its first source
 * element in the sender's view, the element index of its first position in
 * the receiver's piece box, its length and the source's step. */
typedef void (*row_fn)(void *arg, ptrdiff_t src_off, size_t dst_index, size_t len, int step);

/* Calls fn for every run along axis 2 of transfer t, in packing order (C
 * order of the box positions): sender view strides st, box extents e. */
static void for_each_row(const cvmpi_transfer *t, const ptrdiff_t *st, const size_t *e, row_fn fn,
                         void *arg)
{
    const cvmpi_list *l = t->axis;
    for (size_t r0 = 0; r0 < l[0].nruns; r0++) {
        const cvmpi_run *u0 = &l[0].runs[r0];
        for (size_t i0 = 0; i0 < u0->len; i0++) {
            const ptrdiff_t s0 = ((ptrdiff_t)u0->src + u0->step * (ptrdiff_t)i0) * st[0];
            const size_t p0 = u0->pos + i0;
            for (size_t r1 = 0; r1 < l[1].nruns; r1++) {
                const cvmpi_run *u1 = &l[1].runs[r1];
                for (size_t i1 = 0; i1 < u1->len; i1++) {
                    const ptrdiff_t s1 =
                        s0 + ((ptrdiff_t)u1->src + u1->step * (ptrdiff_t)i1) * st[1];
                    const size_t p1 = p0 * e[1] + u1->pos + i1;
                    for (size_t r2 = 0; r2 < l[2].nruns; r2++) {
                        const cvmpi_run *u2 = &l[2].runs[r2];
                        fn(arg, s1 + (ptrdiff_t)u2->src * st[2], p1 * e[2] + u2->pos, u2->len,
                           u2->step);
                    }
                }
            }
        }
    }
}

static void box_extents(const cvmpi_piece *pc, size_t *e)
{
    for (int a = 0; a < 3; a++)
        e[a] = (size_t)(pc->in[a].hi - pc->in[a].lo);
}

typedef struct {
    const unsigned char *base; /* the sender's view */
    const cvmpi_view *v;
    unsigned char *dst;        /* packed: the next element; box: its first element */
    size_t elem;
} copy_arg;

static void pack_row(void *p, ptrdiff_t src_off, size_t dst_index, size_t len, int step)
{
    copy_arg *c = p;
    (void)dst_index;
    gather_row(c->dst, c->base + src_off, c->v, len, step);
    c->dst += len * c->elem;
}

void cvmpi_pack(const cvmpi_link *link, const unsigned char *base, const cvmpi_view *v,
                unsigned char *dst)
{
    const size_t e[3] = {0, 0, 0}; /* box positions are not needed */
    copy_arg c = {base, v, dst, v->channels * v->esize};
    for (int k = 0; k < link->nt; k++)
        for_each_row(&link->t[k], v->stride, e, pack_row, &c);
}

static void unpack_row(void *p, ptrdiff_t src_off, size_t dst_index, size_t len, int step)
{
    copy_arg *c = p; /* base: the packed elements, advancing */
    (void)src_off;
    (void)step;
    memcpy(c->dst + dst_index * c->elem, c->base, len * c->elem);
    c->base += len * c->elem;
}

void cvmpi_unpack(const cvmpi_link *link, const unsigned char *src, cvmpi_piece_run *pr,
                  const cvmpi_work *w)
{
    const ptrdiff_t none[3] = {0, 0, 0}; /* source offsets are not needed */
    copy_arg c = {src, NULL, NULL, 0};
    for (int k = 0; k < link->nt; k++) {
        const cvmpi_transfer *t = &link->t[k];
        size_t e[3];
        box_extents(&w->piece[t->piece], e);
        c.dst = pr[t->piece].in;
        c.elem = pr[t->piece].in_view.channels * pr[t->piece].in_view.esize;
        for_each_row(t, none, e, unpack_row, &c);
    }
}

static void self_row(void *p, ptrdiff_t src_off, size_t dst_index, size_t len, int step)
{
    copy_arg *c = p;
    gather_row(c->dst + dst_index * c->elem, c->base + src_off, c->v, len, step);
}

void cvmpi_copy_self(const cvmpi_link *link, const unsigned char *base, const cvmpi_view *v,
                     cvmpi_piece_run *pr, const cvmpi_work *w)
{
    copy_arg c = {base, v, NULL, v->channels * v->esize};
    for (int k = 0; k < link->nt; k++) {
        const cvmpi_transfer *t = &link->t[k];
        size_t e[3];
        box_extents(&w->piece[t->piece], e);
        c.dst = pr[t->piece].in;
        for_each_row(t, v->stride, e, self_row, &c);
    }
}

void cvmpi_store_piece(const cvmpi_piece *pc, const cvmpi_piece_run *r, unsigned char *base,
                       const cvmpi_view *v, const cvmpi_work *w)
{
    size_t e[3];
    box_extents(pc, e);
    const size_t elem = v->channels * v->esize;
    const size_t n2 = (size_t)(pc->out[2].hi - pc->out[2].lo);
    for (ptrdiff_t o0 = pc->out[0].lo; o0 < pc->out[0].hi; o0++)
        for (ptrdiff_t o1 = pc->out[1].lo; o1 < pc->out[1].hi; o1++) {
            size_t at = ((size_t)(o0 - pc->in[0].lo) * e[1] + (size_t)(o1 - pc->in[1].lo)) * e[2] +
                        (size_t)(pc->out[2].lo - pc->in[2].lo);
            unsigned char *dst = base + (o0 - w->box[0].lo) * v->stride[0] +
                                 (o1 - w->box[1].lo) * v->stride[1] +
                                 (pc->out[2].lo - w->box[2].lo) * v->stride[2];
            scatter_row(dst, (const unsigned char *)r->out + at * elem, v, n2);
        }
}
