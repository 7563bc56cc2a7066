/*
 * halo.c - which outputs of a rank's box need halos, which input each edge
 * piece reads, and which of those elements each rank sends to each other.
 *
 * Along an axis split into several parts, a side of a rank's box is *dirty*
 * when its outputs read positions outside the box that the rank's own plan
 * could not form: a neighbour's elements, or the boundary mode's extension at
 * the global edge (wrap reads the opposite end; reflect, mirror and nearest
 * read the array's own elements, periodically: cvi_boundary_index). In
 * CONSTANT mode the global edge is *clean*: the local plan's own cval
 * handling there is exactly the global one (its input box starts at the
 * global edge), and so is an axis that is not split at all (the box spans it).
 *
 * The outputs within the filter's reach of a dirty side are computed after
 * the halos arrive, in pieces (the shell of the box, cut as an onion: the
 * pieces of axis a take the inner range along earlier axes and the whole box
 * along later ones); every other output is computed by one plan over the
 * box while halos travel. A piece's input box is its outputs extended by the
 * reach, clipped to the rank's extended range, so that each output is
 * computed from the very values, in the same place relative to its taps, that
 * one process would use.
 */
#include "mpi_internal.h"
#include "kernel_math.h" /* cvi_boundary_index: the one definition of every mode's extension */

#include <stdlib.h>
#include <string.h>

static ptrdiff_t pmax(ptrdiff_t a, ptrdiff_t b)
{
    return a > b ? a : b;
}

static ptrdiff_t pmin(ptrdiff_t a, ptrdiff_t b)
{
    return a < b ? a : b;
}

void cvmpi_work_of(const cvmpi_geometry *geo, int r, cvmpi_work *w)
{
    memset(w, 0, sizeof *w);
    const int constant = geo->mode == CVI_MODE_CONSTANT;
    for (int a = 0; a < 3; a++) {
        const ptrdiff_t N = (ptrdiff_t)geo->n[a], B = (ptrdiff_t)geo->before[a],
                        A = (ptrdiff_t)geo->after[a];
        const cvmpi_range box = cvmpi_grid_box(geo->grid, r, a);
        const int split = geo->grid->parts[a] > 1;
        const int dirty_lo = split && B > 0 && !(constant && box.lo == 0);
        const int dirty_hi = split && A > 0 && !(constant && box.hi == N);
        w->box[a] = box;
        w->ext[a].lo = !dirty_lo ? box.lo : constant ? pmax(box.lo - B, 0) : box.lo - B;
        w->ext[a].hi = !dirty_hi ? box.hi : constant ? pmin(box.hi + A, N) : box.hi + A;
        const ptrdiff_t n = box.hi - box.lo;
        const ptrdiff_t dl = dirty_lo ? pmin(B, n) : 0;
        const ptrdiff_t dh = dirty_hi ? pmin(A, n - dl) : 0;
        w->inner[a].lo = box.lo + dl;
        w->inner[a].hi = box.hi - dh;
    }
    for (int a = 0; a < 3; a++) {
        for (int side = 0; side < 2; side++) {
            cvmpi_piece pc;
            if (side == 0) {
                pc.out[a].lo = w->box[a].lo;
                pc.out[a].hi = w->inner[a].lo;
            } else {
                pc.out[a].lo = w->inner[a].hi;
                pc.out[a].hi = w->box[a].hi;
            }
            int empty = pc.out[a].hi <= pc.out[a].lo;
            for (int b = 0; b < 3; b++) {
                if (b != a)
                    pc.out[b] = b < a ? w->inner[b] : w->box[b];
                empty |= pc.out[b].hi <= pc.out[b].lo;
            }
            if (empty)
                continue;
            for (int b = 0; b < 3; b++) {
                pc.in[b].lo = pmax(pc.out[b].lo - (ptrdiff_t)geo->before[b], w->ext[b].lo);
                pc.in[b].hi = pmin(pc.out[b].hi + (ptrdiff_t)geo->after[b], w->ext[b].hi);
            }
            w->piece[w->npieces++] = pc;
        }
    }
}

/* Appends position pos taking source index src to the list, joining runs. */
static int list_add(cvmpi_list *l, size_t *cap, size_t pos, size_t src)
{
    if (l->nruns) {
        cvmpi_run *last = &l->runs[l->nruns - 1];
        if (last->pos + last->len == pos) {
            if (last->len == 1 && (src == last->src + 1 || src + 1 == last->src)) {
                last->step = src > last->src ? 1 : -1;
                last->len++;
                l->count++;
                return 1;
            }
            if (last->len > 1 &&
                (ptrdiff_t)src == (ptrdiff_t)last->src + last->step * (ptrdiff_t)last->len) {
                last->len++;
                l->count++;
                return 1;
            }
        }
    }
    if (l->nruns == *cap) {
        size_t c = *cap ? 2 * *cap : 4;
        cvmpi_run *t = realloc(l->runs, c * sizeof *t);
        if (!t)
            return 0;
        l->runs = t;
        *cap = c;
    }
    cvmpi_run run = {pos, src, 1, 1};
    l->runs[l->nruns++] = run;
    l->count++;
    return 1;
}

/* The positions of range `in` along axis a whose elements the part `part`
 * holds, as runs of (position in the box, index in that part's box). */
static int list_build(const cvmpi_geometry *geo, int a, cvmpi_range in, int part, cvmpi_list *l)
{
    memset(l, 0, sizeof *l);
    size_t cap = 0;
    const size_t lo = geo->grid->cuts[a][part], hi = geo->grid->cuts[a][part + 1];
    for (ptrdiff_t t = in.lo; t < in.hi; t++) {
        ptrdiff_t g = cvi_boundary_index(t, (ptrdiff_t)geo->n[a], geo->mode);
        /* CONSTANT never extends past the edges here: ext is clipped to them */
        if (g < 0 || (size_t)g < lo || (size_t)g >= hi)
            continue;
        if (!list_add(l, &cap, (size_t)(t - in.lo), (size_t)g - lo))
            return 0;
    }
    if (!l->count)
        return 1;
    l->pos = malloc(l->count * sizeof *l->pos);
    l->src = malloc(l->count * sizeof *l->src);
    if (!l->pos || !l->src)
        return 0;
    size_t k = 0;
    for (size_t r = 0; r < l->nruns; r++)
        for (size_t i = 0; i < l->runs[r].len; i++, k++) {
            l->pos[k] = l->runs[r].pos + i;
            l->src[k] = (size_t)((ptrdiff_t)l->runs[r].src + l->runs[r].step * (ptrdiff_t)i);
        }
    return 1;
}

static void list_free(cvmpi_list *l)
{
    free(l->runs);
    free(l->pos);
    free(l->src);
}

void cvmpi_link_free(cvmpi_link *link)
{
    if (!link)
        return;
    for (int i = 0; i < link->nt; i++)
        for (int a = 0; a < 3; a++)
            list_free(&link->t[i].axis[a]);
    free(link->t);
    free(link->buf);
    memset(link, 0, sizeof *link);
}

int cvmpi_link_build(const cvmpi_geometry *geo, const cvmpi_work *wr, int sender, cvmpi_link *link)
{
    memset(link, 0, sizeof *link);
    link->rank = sender;
    link->t = calloc(6, sizeof *link->t);
    if (!link->t)
        return 0;
    const int *coord = &geo->grid->coord[3 * sender];
    for (int k = 0; k < wr->npieces; k++) {
        cvmpi_transfer *t = &link->t[link->nt];
        memset(t, 0, sizeof *t);
        t->piece = k;
        int ok = 1, empty = 0;
        for (int a = 0; a < 3 && ok && !empty; a++) {
            ok = list_build(geo, a, wr->piece[k].in[a], coord[a], &t->axis[a]);
            empty = t->axis[a].count == 0;
        }
        if (ok && !empty) {
            t->count = t->axis[0].count * t->axis[1].count * t->axis[2].count;
            link->nt++;
            continue;
        }
        for (int a = 0; a < 3; a++)
            list_free(&t->axis[a]);
        if (!ok) {
            cvmpi_link_free(link);
            return 0;
        }
    }
    return 1;
}
