/*
 * mpi_internal.h - what the MPI layer's files share: the grid of boxes, the
 * edge pieces a rank computes after its halos arrive, the lists of elements
 * exchanged with each peer, the plan object, and error reporting.
 *
 * Internally every array has three axes (1-D and 2-D get leading axes of
 * extent 1), as libconvolve's canonical problem does. Positions along an
 * axis are global indices into the array *extended* by the boundary mode:
 * position t holds the element cvi_boundary_index(t, N, mode).
 */
#ifndef CONVOLVE_MPI_INTERNAL_H
#define CONVOLVE_MPI_INTERNAL_H

#include "convolve_mpi.h"

#include <stddef.h>

#define CVMPI_MSG_SIZE 1024
/* OpenMP directives that vanish when OpenMP is off: CVMPI_OMP(omp parallel ...). */
#ifdef _OPENMP
#define CVMPI_OMP(directive) _Pragma(#directive)
#else
#define CVMPI_OMP(directive)
#endif

/* One MPI message carries at most this many bytes (counts are ints). */
#define CVMPI_CHUNK_BYTES ((size_t)1 << 30)

/* ---- errors (errors.c) ---------------------------------------------------- */

/* Records a message for ctx and returns st (st may be CONVOLVE_OK: clears). */
convolve_status cvmpi_fail(const convolve_context *ctx, convolve_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Clears ctx's message; returns CONVOLVE_OK. */
convolve_status cvmpi_ok(const convolve_context *ctx);
/* Records libconvolve's last error for ctx, prefixed by `what`; returns st. */
convolve_status cvmpi_fail_core(convolve_context *ctx, convolve_status st, const char *what);
/* Records "MPI: <what> failed: <MPI's text>" and returns CONVOLVE_ERROR_IO. */
convolve_status cvmpi_fail_mpi(const convolve_context *ctx, int err, const char *what);
/* The recorded message ("" if none). */
const char *cvmpi_message(const convolve_context *ctx);

/*
 * Collective: every rank of comm brings its local status; all return the
 * status of the lowest-numbered failing rank (OK if none), and the ranks that
 * did not fail record "rank R: <its message>". An MPI failure here returns IO.
 */
convolve_status cvmpi_agree(const convolve_context *ctx, MPI_Comm comm, convolve_status local);

/* ---- the grid (grid.c) ------------------------------------------------------ */

typedef struct {
    ptrdiff_t lo, hi; /* [lo, hi) */
} cvmpi_range;

typedef struct cvmpi_grid {
    int nranks;
    int parts[3];    /* ranks along each axis */
    size_t *cuts[3]; /* parts[a] + 1 boundaries along axis a: part p is [cuts[p], cuts[p+1]) */
    int *coord;      /* nranks * 3: each rank's part along each axis */
    int *rank_at;    /* parts[0]*parts[1]*parts[2]: the rank holding a combination */
} cvmpi_grid;

/*
 * Builds the grid from every rank's box (starts and extents, 3 axes each,
 * rank-major) over an array of extents n[3]. Fails with BAD_LAYOUT (message
 * in why) when the boxes leave the array, overlap, leave gaps, or do not form
 * a Cartesian grid.
 */
convolve_status cvmpi_grid_build(cvmpi_grid *g, const size_t *n, int nranks,
                                 const unsigned long long *boxes, char *why, size_t why_size);
void cvmpi_grid_free(cvmpi_grid *g);
/* The part along axis a that holds index i (0 <= i < n[a]). */
int cvmpi_grid_part(const cvmpi_grid *g, int a, size_t i);
/* Rank r's box along axis a. */
static inline cvmpi_range cvmpi_grid_box(const cvmpi_grid *g, int r, int a)
{
    int p = g->coord[3 * r + a];
    cvmpi_range x = {(ptrdiff_t)g->cuts[a][p], (ptrdiff_t)g->cuts[a][p + 1]};
    return x;
}

/* ---- geometry of a rank's work (halo.c) ------------------------------------- */

/* What every rank knows of the problem: enough to compute any rank's pieces. */
typedef struct cvmpi_geometry {
    size_t n[3];      /* global extents */
    size_t before[3]; /* reach of the filter below an output position */
    size_t after[3];  /* and above it */
    int mode;         /* convolve_mode */
    const cvmpi_grid *grid;
} cvmpi_geometry;

/*
 * A box whose outputs need halos: `out` along each axis, computed from the
 * input box `in` (out extended by the filter's reach, clipped to what the
 * rank's extended range holds). Pieces are numbered in a fixed order that
 * every rank computes alike.
 */
typedef struct cvmpi_piece {
    cvmpi_range out[3], in[3];
} cvmpi_piece;

/* Rank r's work: its box, the inner box it can compute without halos, its
 * extended range, and its pieces (at most 6). */
typedef struct cvmpi_work {
    cvmpi_range box[3], inner[3], ext[3];
    int npieces;
    cvmpi_piece piece[6];
} cvmpi_work;

void cvmpi_work_of(const cvmpi_geometry *geo, int r, cvmpi_work *w);

/* Consecutive positions [pos, pos + len) of a box that take the sender's
 * local indices src, src + step, ... (step +1 or -1). */
typedef struct cvmpi_run {
    size_t pos, src, len;
    int step;
} cvmpi_run;

/* The positions of one piece box along one axis that one sender owns: as
 * runs, and expanded (position and source index of each, in order). */
typedef struct cvmpi_list {
    cvmpi_run *runs;
    size_t nruns, count;
    size_t *pos, *src;
} cvmpi_list;

/* The elements of one of the receiver's pieces that one sender owns: the
 * product of three lists, in C order. */
typedef struct cvmpi_transfer {
    int piece;
    cvmpi_list axis[3];
    size_t count;
} cvmpi_transfer;

/* All transfers between a sender and a receiver, in piece order. */
typedef struct cvmpi_link {
    int rank; /* the other rank */
    cvmpi_transfer *t;
    int nt;
    size_t bytes;       /* elements * element bytes */
    unsigned char *buf; /* packed elements (NULL for the rank itself) */
    int nreq;           /* MPI messages (chunks) */
} cvmpi_link;

/* Computes what `sender` sends to `receiver` for the receiver's pieces (wr).
 * Returns 0 when out of memory; *link has nt == 0 when nothing. */
int cvmpi_link_build(const cvmpi_geometry *geo, const cvmpi_work *wr, int sender, cvmpi_link *link);
void cvmpi_link_free(cvmpi_link *link);

/* ---- the plan (plan.c, execute.c) ------------------------------------------- */

/* Element addressing of a box in memory: base + sum idx[a] * stride[a] +
 * c * cstride, idx relative to the box's first element. */
typedef struct cvmpi_view {
    ptrdiff_t stride[3];
    ptrdiff_t cstride;
    size_t esize; /* bytes per value */
    size_t channels;
} cvmpi_view;

typedef struct cvmpi_piece_run {
    convolve_plan *plan;
    void *in, *out; /* contiguous boxes of piece.in's shape */
    int pinned;     /* in and out from convolve_host_alloc (the plan runs on CUDA) */
    cvmpi_view in_view, out_view;
} cvmpi_piece_run;

/* The device-resident path's buffers (device_exec.c), made at its first call. */
typedef struct cvmpi_device_state cvmpi_device_state;

struct convolve_mpi_plan {
    convolve_context *ctx;
    MPI_Comm comm;
    int rank, nranks;
    int ndim;
    cvmpi_grid grid;
    cvmpi_geometry geo;
    cvmpi_work work;
    cvmpi_view user_in, user_out; /* the caller's boxes */
    convolve_plan *interior;      /* over the caller's boxes */
    int run_interior;             /* the inner box is not empty */
    cvmpi_piece_run pr[6];
    cvmpi_link *sends, *recvs; /* peers other than this rank */
    int nsends, nrecvs;
    cvmpi_link self; /* own elements into own pieces */
    MPI_Request *req;
    int nreq;
    int progress_thread;      /* MPI allows a thread to test requests meanwhile */
    int threads;              /* for copies: options.threads, or all (0) */
    convolve_backend backend; /* what the local plans run */
    char strategy[64];
    char gpu_choice[64]; /* one process's GPU strategy, preferred ("": none) */
    int device;
    convolve_mpi_stats stats;
    cvmpi_device_state *dev; /* NULL until convolve_mpi_execute_device runs */
};

/* Packs the elements of `link` read from the sender's box at `base` (view
 * v) into dst. The copies below use up to `threads` OpenMP threads. */
void cvmpi_pack(const cvmpi_link *link, const unsigned char *base, const cvmpi_view *v,
                unsigned char *dst, int threads);
/* The same for one transfer read from a copy of the sender's box that
 * starts at its element lo[0..2] (base points at that element, view v). */
void cvmpi_pack_transfer(const cvmpi_transfer *t, const unsigned char *base, const cvmpi_view *v,
                         const size_t *lo, unsigned char *dst, int threads);
/* Unpacks a link's packed elements into the receiver's piece input boxes. */
void cvmpi_unpack(const cvmpi_link *link, const unsigned char *src, cvmpi_piece_run *pr,
                  const cvmpi_work *w, int threads);
/* Copies own elements straight from the caller's box into own piece boxes. */
void cvmpi_copy_self(const cvmpi_link *link, const unsigned char *base, const cvmpi_view *v,
                     cvmpi_piece_run *pr, const cvmpi_work *w, int threads);
/* The same for one transfer of the own link, read from a copy of the box
 * that starts at its element lo[0..2] (as cvmpi_pack_transfer). */
void cvmpi_copy_self_transfer(const cvmpi_transfer *t, const unsigned char *base,
                              const cvmpi_view *v, const size_t *lo, cvmpi_piece_run *pr,
                              const cvmpi_work *w, int threads);
/* Copies the region piece.out from a piece's output box into the caller's
 * output box (view v, box w->box). */
void cvmpi_store_piece(const cvmpi_piece *piece, const cvmpi_piece_run *r, unsigned char *base,
                       const cvmpi_view *v, const cvmpi_work *w, int threads);

/* Posts a link's receives (send 0) or sends (send 1): chunks of at most
 * CVMPI_CHUNK_BYTES under one tag into req[0..link->nreq-1]. */
int cvmpi_post(int send, cvmpi_link *l, MPI_Comm comm, MPI_Request *req);
/* 1 if the byte spans of the caller's boxes at in and out overlap. */
int cvmpi_boxes_overlap(const convolve_mpi_plan *p, const void *in, const void *out);

/* ---- GPU choice (device.c) and device-resident runs (device_exec.c) ----------- */

/* Frees the device-resident path's buffers (NULL state accepted). */
void cvmpi_device_release(convolve_mpi_plan *p);
/* For the host path of a plan on a GPU: CONVOLVE_OK, or INVALID_ARGUMENT
 * (message recorded) when in or out is device memory. */
convolve_status cvmpi_check_host_pointers(const convolve_mpi_plan *p, const void *in,
                                          const void *out);

/* ---- GPU choice (device.c) ---------------------------------------------------- */

/* Collective over comm. With want, makes device (rank within its node) %
 * (device count) current for the calling thread and returns it; -1 without
 * want, CUDA or devices. */
int cvmpi_select_device(MPI_Comm comm, int want);

#endif
