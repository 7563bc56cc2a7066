/*
 * device_exec.c - convolve_mpi_execute_device: each rank's boxes stay in its
 * GPU's memory, and the work runs on the caller's stream.
 *
 * The exchange is the host path's (the same lists, pieces and local plans),
 * staged through pinned host memory, on a stream of the plan's (`side`)
 * that starts where the caller's stream is and runs beside it:
 *   1. on `side`: every sub-box of the input box that a transfer reads (the
 *      faces a neighbour needs, the own elements of the edge pieces: its
 *      bounding box, a few planes thick) is copied to pinned host memory
 *      (cudaMemcpyAsync / cudaMemcpy2DAsync), and an event is recorded;
 *   2. on the caller's stream: the interior plan over the whole box. It runs
 *      while the host waits for the faces, packs them (the boundary modes'
 *      reversed and wrapped runs are resolved here, by the same code as on
 *      the host path), sends them and receives the peers';
 *   3. on `side`: each edge piece's input box, assembled in pinned host
 *      memory, is copied to the device and its plan launched (beside the
 *      interior); then, on the caller's stream after both, the pieces'
 *      outputs are copied over the interior's in the output box (device to
 *      device), and an event closes the call.
 * So the pieces' outputs overwrite the interior plan's (wrong) shell, and the
 * caller's stream, once past the call, has everything of it behind it. The
 * call returns once the last of it is enqueued.
 *
 * GPU to GPU (ipc_setup, ipc_call): when every rank is on one node with a
 * GPU of its own and every face a rank sends or receives is a sub-box on
 * both sides, each rank copies its faces from its input box straight into
 * its receivers' device buffers (CUDA IPC handles, traded once), ordered
 * by interprocess events; per call the ranks trade only two small MPI
 * messages a link (the receiver's buffer is free; the sender's copies are
 * queued), and the host never waits for a GPU. Own elements reflected or
 * wrapped into a piece still go through the host as above.
 *
 * No kernel lives here (CUDA code is src/cuda's): packing on the device would
 * need one for the reversed runs of reflect and mirror; such faces are
 * packed by the host (staged path).
 */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef CONVOLVE_MPI_WITH_CUDA
#include <cuda_runtime_api.h>

/* One transfer read from this rank's input box, staged in pinned memory. */
typedef struct {
    const cvmpi_transfer *t;
    int link;     /* index into p->sends; -1: the own link */
    size_t lo[3]; /* the sub-box of the input box it reads */
    size_t shape[3];
    size_t offset; /* bytes into the staging block */
} cvmpi_stage;

/* Bytes of faces a host thread packs (or unpacks) in the device path. */
#define CVMPI_DEVICE_COPY_BYTES ((size_t)8 << 20)

struct cvmpi_device_state {
    int nstage;
    cvmpi_stage *stage;
    unsigned char *staging;    /* pinned: every stage's sub-box, packed C order */
    int copy_threads;          /* host threads for packing and unpacking the faces */
    unsigned char *host_in[6]; /* pinned: the pieces' input boxes, assembled */
    void *din[6], *dout[6];    /* device: the pieces' input and output boxes */
    size_t in_bytes[6];
    size_t ext[6][3];  /* piece k's input box extents */
    int direct[6];     /* piece k's transfers are all sub-boxes: its own
                                 elements copied on the device, only its halos
                                 uploaded */
    cudaStream_t side; /* the faces' copies and the pieces */
    cudaEvent_t ev[4]; /* start, faces, pieces, done */
    int have_side, nev, done_recorded;
    /* GPU to GPU (CUDA IPC, ranks of one node): ipc -1 not decided yet, 0
     * staged through host memory, 1 GPU to GPU. Each rank receives every
     * link's elements, packed as the MPI message would carry them, in its
     * own device buffer `rbuf` (link i at roff[i]); each sender writes them
     * there itself (peer_buf[j]: the receiver's rbuf at this rank's offset,
     * opened from its handle) */
    int ipc;
    void *rbuf;
    size_t *roff;               /* per receive link */
    void **peer_base;           /* per send link: the opened buffer (to close) */
    unsigned char **peer_buf;   /* per send link: where this rank's elements go */
    cudaEvent_t consumed;       /* interprocess: this rank's side stream has read rbuf */
    cudaEvent_t written;        /* interprocess: this rank's elements are in its peers' rbuf */
    cudaEvent_t *peer_consumed; /* per send link: the receiver's `consumed` */
    cudaEvent_t *peer_written;  /* per receive link: the sender's `written` */
    int *tokens;                /* each call's tokens (ipc_call) */
    MPI_Request *treq;          /* and their requests */
    int have_consumed, have_written;
    unsigned calls; /* device-resident calls made: the tokens' contents */
};

enum { EV_START, EV_FACES, EV_PIECES, EV_DONE };

static convolve_status cuda_fail(const convolve_context *ctx, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return cvmpi_fail(ctx,
                      e == cudaErrorMemoryAllocation ? CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY
                                                     : CONVOLVE_ERROR_DEVICE,
                      "CUDA: %s failed: %s", what, cudaGetErrorString(e));
}

/* Copies a sub-box of shape[3] elements of `elem` bytes between two views
 * with rows of packed elements and non-negative strides (bytes): one copy
 * when rows (or planes) follow one another in both, else one 2-D copy per
 * index along the shorter of axes 0 and 1. */
static cudaError_t copy_box(unsigned char *dst, const ptrdiff_t *ds, const unsigned char *src,
                            const ptrdiff_t *ss, const size_t *shape, size_t elem,
                            enum cudaMemcpyKind kind, cudaStream_t s)
{
    if (!shape[0] || !shape[1] || !shape[2])
        return cudaSuccess;
    const size_t w = shape[2] * elem;
    if (shape[1] == 1 || (ds[1] == (ptrdiff_t)w && ss[1] == (ptrdiff_t)w)) {
        const size_t plane = w * shape[1];
        if (shape[0] == 1 || (ds[0] == (ptrdiff_t)plane && ss[0] == (ptrdiff_t)plane))
            return cudaMemcpyAsync(dst, src, plane * shape[0], kind, s);
        return cudaMemcpy2DAsync(dst, (size_t)ds[0], src, (size_t)ss[0], plane, shape[0], kind, s);
    }
    cudaError_t e = cudaSuccess;
    if (shape[0] <= shape[1] || shape[0] == 1) {
        for (size_t i = 0; i < shape[0] && e == cudaSuccess; i++)
            e = cudaMemcpy2DAsync(dst + (ptrdiff_t)i * ds[0], (size_t)ds[1],
                                  src + (ptrdiff_t)i * ss[0], (size_t)ss[1], w, shape[1], kind, s);
    } else {
        for (size_t i = 0; i < shape[1] && e == cudaSuccess; i++)
            e = cudaMemcpy2DAsync(dst + (ptrdiff_t)i * ds[1], (size_t)ds[0],
                                  src + (ptrdiff_t)i * ss[1], (size_t)ss[0], w, shape[0], kind, s);
    }
    return e;
}

/* A packed C-order view of a box of shape[3] elements like v's. */
static void packed_view(const cvmpi_view *v, const size_t *shape, cvmpi_view *out)
{
    const size_t elem = v->channels * v->esize;
    out->stride[2] = (ptrdiff_t)elem;
    out->stride[1] = (ptrdiff_t)(shape[2] * elem);
    out->stride[0] = (ptrdiff_t)(shape[1] * shape[2] * elem);
    out->cstride = (ptrdiff_t)v->esize;
    out->esize = v->esize;
    out->channels = v->channels;
}

static ptrdiff_t offset_of(const cvmpi_view *v, const size_t *idx)
{
    return (ptrdiff_t)idx[0] * v->stride[0] + (ptrdiff_t)idx[1] * v->stride[1] +
           (ptrdiff_t)idx[2] * v->stride[2];
}

/* Elements one after another along the last axis (channels interleaved),
 * no negative stride: what the copies above take. */
static int device_view_ok(const cvmpi_view *v)
{
    return v->stride[2] == (ptrdiff_t)(v->channels * v->esize) &&
           (v->channels == 1 || v->cstride == (ptrdiff_t)v->esize) && v->stride[0] >= 0 &&
           v->stride[1] >= 0;
}

/* 1 if a transfer's elements are a sub-box on both sides: one run along
 * each axis, in order (positions always are consecutive within a run). */
static int box_like(const cvmpi_transfer *t)
{
    for (int a = 0; a < 3; a++)
        if (t->axis[a].nruns != 1 || (t->axis[a].runs[0].len > 1 && t->axis[a].runs[0].step != 1))
            return 0;
    return 1;
}

/* The sub-box of a box-like transfer: its first position and source index
 * along each axis, and its extents. */
static void transfer_box(const cvmpi_transfer *t, size_t *pos, size_t *src, size_t *shape)
{
    for (int a = 0; a < 3; a++) {
        pos[a] = t->axis[a].runs[0].pos;
        src[a] = t->axis[a].runs[0].src;
        shape[a] = t->axis[a].runs[0].len;
    }
}

static int add_stages(cvmpi_device_state *d, const cvmpi_link *l, int link, size_t *bytes,
                      size_t elem)
{
    for (int k = 0; k < l->nt; k++) {
        if (link < 0 && d->direct[l->t[k].piece])
            continue; /* copied on the device */
        cvmpi_stage *g = &d->stage[d->nstage++];
        g->t = &l->t[k];
        g->link = link;
        size_t n = 1;
        for (int a = 0; a < 3; a++) {
            const cvmpi_list *x = &l->t[k].axis[a];
            size_t lo = x->src[0], hi = x->src[0];
            for (size_t i = 1; i < x->count; i++) {
                lo = x->src[i] < lo ? x->src[i] : lo;
                hi = x->src[i] > hi ? x->src[i] : hi;
            }
            g->lo[a] = lo;
            g->shape[a] = hi - lo + 1;
            n *= g->shape[a];
        }
        g->offset = *bytes;
        *bytes += (n * elem + 63) / 64 * 64;
    }
    return 1;
}

/* The buffers of the device-resident path, with the plan's device current. */
static convolve_status setup(convolve_mpi_plan *p)
{
    convolve_context *ctx = p->ctx;
    cvmpi_device_state *d = calloc(1, sizeof *d);
    if (!d)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a plan");
    p->dev = d;
    int n = p->self.nt;
    for (int i = 0; i < p->nsends; i++)
        n += p->sends[i].nt;
    d->stage = calloc((size_t)n + 1, sizeof *d->stage);
    if (!d->stage)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a plan");
    const size_t elem = p->user_in.channels * p->user_in.esize;
    for (int k = 0; k < p->work.npieces; k++)
        d->direct[k] = 1;
    for (int i = 0; i <= p->nrecvs; i++) {
        const cvmpi_link *l = i < p->nrecvs ? &p->recvs[i] : &p->self;
        for (int k = 0; k < l->nt; k++)
            d->direct[l->t[k].piece] &= box_like(&l->t[k]);
    }
    size_t bytes = 0;
    for (int i = 0; i < p->nsends; i++)
        add_stages(d, &p->sends[i], i, &bytes, elem);
    add_stages(d, &p->self, -1, &bytes, elem);
    /* a thread per CVMPI_DEVICE_COPY_BYTES of faces, up to the plan's: the
     * faces are small, and a team of every core in each rank of a node
     * made the exchange many times slower (docs/scale.md, "Boxes on the
     * device") */
    size_t want = bytes / CVMPI_DEVICE_COPY_BYTES + 1;
    d->copy_threads = p->threads > 0 && (size_t)p->threads < want ? p->threads
                      : want > 64                                 ? 64
                                                                  : (int)want;
    cudaError_t e = cudaSuccess;
    if (bytes && (e = cudaMallocHost((void **)&d->staging, bytes)) != cudaSuccess)
        return cuda_fail(ctx, e, "cudaMallocHost (the faces' staging buffer)");
    for (int k = 0; k < p->work.npieces; k++) {
        const cvmpi_piece *pc = &p->work.piece[k];
        size_t count = p->user_in.channels;
        for (int a = 0; a < 3; a++) {
            d->ext[k][a] = (size_t)(pc->in[a].hi - pc->in[a].lo);
            count *= d->ext[k][a];
        }
        d->in_bytes[k] = count * p->user_in.esize;
        if ((e = cudaMallocHost((void **)&d->host_in[k], d->in_bytes[k])) != cudaSuccess)
            return cuda_fail(ctx, e, "cudaMallocHost (an edge piece's input)");
        if ((e = cudaMalloc(&d->din[k], d->in_bytes[k])) != cudaSuccess ||
            (e = cudaMalloc(&d->dout[k], count * p->user_out.esize)) != cudaSuccess)
            return cuda_fail(ctx, e, "cudaMalloc (an edge piece's boxes)");
    }
    for (; d->nev < 4; d->nev++)
        if ((e = cudaEventCreateWithFlags(&d->ev[d->nev], cudaEventDisableTiming)) != cudaSuccess)
            return cuda_fail(ctx, e, "cudaEventCreateWithFlags");
    if ((e = cudaStreamCreateWithFlags(&d->side, cudaStreamNonBlocking)) != cudaSuccess)
        return cuda_fail(ctx, e, "cudaStreamCreateWithFlags");
    d->have_side = 1;
    d->ipc = -1; /* decided by ipc_setup, collectively, once every rank has its buffers */
    return CONVOLVE_OK;
}

/* 3. of a call: the edge pieces on `side` (with `upload`, first the input
 * boxes of those not copied on the device), beside the interior; their
 * outputs over the interior's, on the caller's stream s after both. */
static convolve_status launch_pieces(convolve_mpi_plan *p, void *out, cudaStream_t s, int upload)
{
    cvmpi_device_state *d = p->dev;
    convolve_context *ctx = p->ctx;
    convolve_status st = CONVOLVE_OK;
    cudaError_t e;
    for (int k = 0; k < p->work.npieces && st == CONVOLVE_OK; k++) {
        e = d->direct[k] || !upload ? cudaSuccess
                                    : cudaMemcpyAsync(d->din[k], d->host_in[k], d->in_bytes[k],
                                                      cudaMemcpyHostToDevice, d->side);
        if (e != cudaSuccess)
            return cuda_fail(ctx, e, "cudaMemcpyAsync (an edge piece to the device)");
        convolve_status c = convolve_execute_device(p->pr[k].plan, d->din[k], d->dout[k], d->side);
        if (c != CONVOLVE_OK)
            st = cvmpi_fail_core(ctx, c, "computing an edge piece");
    }
    if (st == CONVOLVE_OK && ((e = cudaEventRecord(d->ev[EV_PIECES], d->side)) != cudaSuccess ||
                              (e = cudaStreamWaitEvent(s, d->ev[EV_PIECES], 0)) != cudaSuccess))
        st = cuda_fail(ctx, e, "cudaEventRecord / cudaStreamWaitEvent (the pieces)");
    for (int k = 0; k < p->work.npieces && st == CONVOLVE_OK; k++) {
        const cvmpi_piece *pc = &p->work.piece[k];
        size_t ext[3], from[3], at[3], shape[3];
        for (int a = 0; a < 3; a++) {
            ext[a] = (size_t)(pc->in[a].hi - pc->in[a].lo);
            from[a] = (size_t)(pc->out[a].lo - pc->in[a].lo);
            at[a] = (size_t)(pc->out[a].lo - p->work.box[a].lo);
            shape[a] = (size_t)(pc->out[a].hi - pc->out[a].lo);
        }
        cvmpi_view v;
        packed_view(&p->user_out, ext, &v);
        e = copy_box((unsigned char *)out + offset_of(&p->user_out, at), p->user_out.stride,
                     (const unsigned char *)d->dout[k] + offset_of(&v, from), v.stride, shape,
                     p->user_out.channels * p->user_out.esize, cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess)
            st = cuda_fail(ctx, e, "cudaMemcpyAsync (an edge piece's outputs)");
    }
    p->stats.pieces = p->work.npieces;
    return st;
}

/* ---- the parts both exchanges share ------------------------------------------- */

/* The stages' sub-boxes of the input box to the pinned staging block, on
 * `side`: every stage, or (own_only) those of the own link. */
static convolve_status stages_to_host(convolve_mpi_plan *p, const unsigned char *bin, int own_only)
{
    cvmpi_device_state *d = p->dev;
    const size_t elem = p->user_in.channels * p->user_in.esize;
    for (int k = 0; k < d->nstage; k++) {
        if (own_only && d->stage[k].link != -1)
            continue;
        cvmpi_view v;
        packed_view(&p->user_in, d->stage[k].shape, &v);
        cudaError_t e = copy_box(d->staging + d->stage[k].offset, v.stride,
                                 bin + offset_of(&p->user_in, d->stage[k].lo), p->user_in.stride,
                                 d->stage[k].shape, elem, cudaMemcpyDeviceToHost, d->side);
        if (e != cudaSuccess)
            return cuda_fail(p->ctx, e, "cudaMemcpyAsync (faces or own elements to the host)");
    }
    return CONVOLVE_OK;
}

/* Where box-like transfer t's elements come from (into_piece). */
enum { FROM_BOX, FROM_PIECE, FROM_PACKED };

/* Copies box-like transfer t's elements into its piece's device input box,
 * on `side`, from: the rank's box `from` at the transfer's source indices
 * (FROM_BOX), a buffer `from` laid out as the piece's box at the same
 * positions (FROM_PIECE), or `from` packed in C order (FROM_PACKED). */
static cudaError_t into_piece(const convolve_mpi_plan *p, const cvmpi_transfer *t,
                              const unsigned char *from, int how, enum cudaMemcpyKind kind)
{
    const cvmpi_device_state *d = p->dev;
    size_t pos[3], src[3], shape[3];
    transfer_box(t, pos, src, shape);
    cvmpi_view v, f;
    packed_view(&p->user_in, d->ext[t->piece], &v);
    if (how == FROM_BOX)
        f = p->user_in, from += offset_of(&f, src);
    else if (how == FROM_PIECE)
        f = v, from += offset_of(&f, pos);
    else
        packed_view(&p->user_in, shape, &f);
    return copy_box((unsigned char *)d->din[t->piece] + offset_of(&v, pos), v.stride, from,
                    f.stride, shape, p->user_in.channels * p->user_in.esize, kind, d->side);
}

/* The own elements of the pieces whose transfers are all sub-boxes, from
 * the input box into their device input boxes, on `side`. */
static convolve_status own_on_device(convolve_mpi_plan *p, const unsigned char *bin)
{
    cvmpi_device_state *d = p->dev;
    for (int k = 0; k < p->self.nt; k++) {
        const cvmpi_transfer *t = &p->self.t[k];
        if (!d->direct[t->piece])
            continue;
        cudaError_t e = into_piece(p, t, bin, FROM_BOX, cudaMemcpyDeviceToDevice);
        if (e != cudaSuccess)
            return cuda_fail(p->ctx, e, "cudaMemcpyAsync (own elements into an edge piece)");
    }
    return CONVOLVE_OK;
}

/* pr: the pieces' runs with their input boxes in the pinned host buffers;
 * the own link's staged elements (reflected or wrapped into the pieces:
 * d->staging, once on the host) copied into them. */
static void own_on_host(convolve_mpi_plan *p, cvmpi_piece_run *pr)
{
    cvmpi_device_state *d = p->dev;
    memcpy(pr, p->pr, sizeof p->pr);
    for (int k = 0; k < p->work.npieces; k++)
        pr[k].in = d->host_in[k];
    for (int k = 0; k < d->nstage; k++) {
        if (d->stage[k].link != -1)
            continue;
        cvmpi_view v;
        packed_view(&p->user_in, d->stage[k].shape, &v);
        cvmpi_copy_self_transfer(d->stage[k].t, d->staging + d->stage[k].offset, &v, d->stage[k].lo,
                                 pr, &p->work, d->copy_threads);
    }
}

/* Steps 1 and 2 of a call, with `usable` (nothing is done without it):
 * with `stage`, the stages to the host (with own_only those of the own link
 * only) and EV_FACES recorded after them; the own elements of the pieces
 * copied on the device; then the interior on the caller's stream s.
 * times[0] and times[1] are taken before and after the interior's launch. */
static convolve_status faces_and_interior(convolve_mpi_plan *p, const unsigned char *bin, void *out,
                                          cudaStream_t s, int stage, int own_only, int usable,
                                          double *times)
{
    cvmpi_device_state *d = p->dev;
    convolve_status st = CONVOLVE_OK;
    cudaError_t e;
    if (usable && stage && (st = stages_to_host(p, bin, own_only)) != CONVOLVE_OK)
        usable = 0;
    if (usable && stage && (e = cudaEventRecord(d->ev[EV_FACES], d->side)) != cudaSuccess) {
        st = cuda_fail(p->ctx, e, "cudaEventRecord");
        usable = 0;
    }
    if (usable && (st = own_on_device(p, bin)) != CONVOLVE_OK)
        usable = 0;
    times[0] = MPI_Wtime();
    if (usable && p->run_interior) {
        convolve_status c = convolve_execute_device(p->interior, bin, out, s);
        if (c != CONVOLVE_OK)
            st = cvmpi_fail_core(p->ctx, c, "computing this rank's box");
    }
    times[1] = MPI_Wtime();
    return st;
}

/* ---- halos GPU to GPU (CUDA IPC) ------------------------------------------- */

/* The emulation (tests/emu) has no interprocess handles: staged there. */
#ifndef CONVOLVE_MPI_CUDA_EMULATED
#define CVMPI_HAVE_IPC 1
#endif

/* Message tags of the exchange's setup and of each call's tokens (the
 * halos' own messages use tag 0). */
enum { TAG_TO_SOURCE = 7101, TAG_TO_DEST, TAG_FREE, TAG_WRITTEN };

#ifdef CVMPI_HAVE_IPC
/* What a rank tells a peer when the exchange is set up: to a rank it
 * receives from, its receive buffer, where that rank's elements go in it and
 * its `consumed` event; to a rank it sends to, its `written` event. */
typedef struct {
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t ev;
    unsigned long long offset;
    int ok;
} ipc_msg;

/* 1 if every transfer this rank receives or sends is a sub-box on both
 * sides (no reversed or wrapped runs: those are packed on the host), and
 * CONVOLVE_MPI_DEVICE_EXCHANGE does not ask for host staging. (Its own
 * elements may be reflected or wrapped into its pieces: those still go
 * through the host, as on the staged path.) */
static int ipc_wanted(const convolve_mpi_plan *p)
{
    const char *env = getenv("CONVOLVE_MPI_DEVICE_EXCHANGE");
    if (env && strcmp(env, "host") == 0)
        return 0;
    for (int i = 0; i < p->nrecvs + p->nsends; i++) {
        const cvmpi_link *l = i < p->nrecvs ? &p->recvs[i] : &p->sends[i - p->nrecvs];
        for (int k = 0; k < l->nt; k++)
            if (!box_like(&l->t[k]))
                return 0;
    }
    return 1;
}
#endif

/* Frees what ipc_setup made (the plan's device current). */
static void ipc_release(convolve_mpi_plan *p)
{
    cvmpi_device_state *d = p->dev;
#ifdef CVMPI_HAVE_IPC
    for (int j = 0; j < p->nsends; j++) {
        if (d->peer_base && d->peer_base[j])
            (void)cudaIpcCloseMemHandle(d->peer_base[j]);
        if (d->peer_consumed && d->peer_consumed[j])
            (void)cudaEventDestroy(d->peer_consumed[j]);
    }
    for (int i = 0; i < p->nrecvs; i++)
        if (d->peer_written && d->peer_written[i])
            (void)cudaEventDestroy(d->peer_written[i]);
#endif
    if (d->have_consumed)
        (void)cudaEventDestroy(d->consumed);
    if (d->have_written)
        (void)cudaEventDestroy(d->written);
    (void)cudaFree(d->rbuf);
    (void)cudaGetLastError();
    free(d->roff);
    free(d->peer_base);
    free(d->peer_buf);
    free(d->peer_consumed);
    free(d->peer_written);
    free(d->tokens);
    free(d->treq);
    d->rbuf = NULL;
    d->roff = NULL;
    d->peer_base = NULL;
    d->peer_buf = NULL;
    d->peer_consumed = d->peer_written = NULL;
    d->tokens = NULL;
    d->treq = NULL;
    d->have_consumed = d->have_written = 0;
    d->ipc = 0;
}

/*
 * Collective, at the first device-resident call: decides whether the halos
 * go GPU to GPU. They do when every rank of the plan is on one node with a
 * GPU of its own, every transfer is a sub-box on both sides (ipc_wanted)
 * and every rank made its
 * receive buffer and events and opened its peers' handles; otherwise (or
 * where CUDA lacks interprocess handles) they are staged through host
 * memory. Only an MPI failure is an error.
 */
static convolve_status ipc_setup(convolve_mpi_plan *p)
{
    cvmpi_device_state *d = p->dev;
    d->ipc = 0;
#ifdef CVMPI_HAVE_IPC
    int ok = p->nranks > 1 && ipc_wanted(p), all = 0, err;
    MPI_Comm node;
    int node_size = 0;
    if ((err = MPI_Comm_split_type(p->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)) !=
        MPI_SUCCESS)
        return cvmpi_fail_mpi(p->ctx, err, "MPI_Comm_split_type (the exchange's setup)");
    err = MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    ok = ok && err == MPI_SUCCESS && node_size == p->nranks;
    /* a GPU a rank: ranks sharing one wait on each other's contexts, which
     * the GPU runs in turns (2.9 ms a call against 0.7 staged, 2 ranks on
     * one H100, 256^3 a rank); CONVOLVE_MPI_DEVICE_EXCHANGE=gpu takes
     * the GPU path anyway (the tests, on one GPU) */
    int *devs = malloc((size_t)p->nranks * sizeof *devs);
    if (!devs)
        return cvmpi_fail(p->ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a plan");
    if ((err = MPI_Allgather(&p->device, 1, MPI_INT, devs, 1, MPI_INT, p->comm)) != MPI_SUCCESS) {
        free(devs);
        return cvmpi_fail_mpi(p->ctx, err, "MPI_Allgather (the exchange's setup)");
    }
    const char *env = getenv("CONVOLVE_MPI_DEVICE_EXCHANGE");
    if (!(env && strcmp(env, "gpu") == 0))
        for (int r = 0; r < p->nranks; r++)
            ok = ok && devs[r] != (r == p->rank ? -1 : p->device);
    free(devs);
    if ((err = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, p->comm)) != MPI_SUCCESS)
        return cvmpi_fail_mpi(p->ctx, err, "MPI_Allreduce (the exchange's setup)");
    if (!all)
        return CONVOLVE_OK;
    const int nr = p->nrecvs, ns = p->nsends, links = nr + ns;
    d->roff = calloc((size_t)nr + 1, sizeof *d->roff);
    d->peer_base = calloc((size_t)ns + 1, sizeof *d->peer_base);
    d->peer_buf = calloc((size_t)ns + 1, sizeof *d->peer_buf);
    d->peer_consumed = calloc((size_t)ns + 1, sizeof *d->peer_consumed);
    d->peer_written = calloc((size_t)nr + 1, sizeof *d->peer_written);
    d->tokens = calloc(2 * (size_t)links + 1, sizeof *d->tokens);
    d->treq = calloc(2 * (size_t)links + 1, sizeof *d->treq);
    ipc_msg msg[2 * links + 1]; /* out: [0, links), in: after (links: 26 at most) */
    MPI_Request req[2 * links + 1];
    memset(msg, 0, sizeof msg);
    ok = d->roff && d->peer_base && d->peer_buf && d->peer_consumed && d->peer_written &&
         d->tokens && d->treq;
    size_t bytes = 0;
    for (int i = 0; ok && i < nr; i++) {
        d->roff[i] = bytes;
        bytes += (p->recvs[i].bytes + 255) / 256 * 256;
    }
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t consumed, written;
    memset(&mem, 0, sizeof mem);
    memset(&consumed, 0, sizeof consumed);
    memset(&written, 0, sizeof written);
    const unsigned flags = cudaEventDisableTiming | cudaEventInterprocess;
    ok = ok && (!bytes || (cudaMalloc(&d->rbuf, bytes) == cudaSuccess &&
                           cudaIpcGetMemHandle(&mem, d->rbuf) == cudaSuccess));
    ok = ok && (d->have_consumed = cudaEventCreateWithFlags(&d->consumed, flags) == cudaSuccess) &&
         (d->have_written = cudaEventCreateWithFlags(&d->written, flags) == cudaSuccess) &&
         cudaIpcGetEventHandle(&consumed, d->consumed) == cudaSuccess &&
         cudaIpcGetEventHandle(&written, d->written) == cudaSuccess;
    (void)cudaGetLastError();
    /* every rank exchanges its handles with each peer, whatever failed */
    int nreq = 0;
    err = MPI_SUCCESS;
    for (int i = 0; i < links && err == MPI_SUCCESS; i++) {
        ipc_msg *out = &msg[i], *in = &msg[links + i];
        const int to_source = i < nr, peer = to_source ? p->recvs[i].rank : p->sends[i - nr].rank;
        out->ok = ok;
        out->mem = mem;
        out->ev = to_source ? consumed : written;
        out->offset = to_source && d->roff ? d->roff[i] : 0;
        /* a rank's sources send to it with TAG_TO_DEST, its destinations with TAG_TO_SOURCE */
        err = MPI_Isend(out, (int)sizeof *out, MPI_BYTE, peer,
                        to_source ? TAG_TO_SOURCE : TAG_TO_DEST, p->comm, &req[nreq++]);
        if (err == MPI_SUCCESS)
            err = MPI_Irecv(in, (int)sizeof *in, MPI_BYTE, peer,
                            to_source ? TAG_TO_DEST : TAG_TO_SOURCE, p->comm, &req[nreq++]);
    }
    if (err == MPI_SUCCESS && nreq)
        err = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    if (err != MPI_SUCCESS) {
        ipc_release(p);
        return cvmpi_fail_mpi(p->ctx, err, "exchanging the GPUs' handles");
    }
    for (int j = 0; ok && j < ns; j++) { /* the receivers' buffers and events */
        const ipc_msg *in = &msg[links + nr + j];
        ok = in->ok &&
             cudaIpcOpenMemHandle(&d->peer_base[j], in->mem, cudaIpcMemLazyEnablePeerAccess) ==
                 cudaSuccess &&
             cudaIpcOpenEventHandle(&d->peer_consumed[j], in->ev) == cudaSuccess;
        if (ok)
            d->peer_buf[j] = (unsigned char *)d->peer_base[j] + in->offset;
    }
    for (int i = 0; ok && i < nr; i++) /* the senders' events */
        ok = msg[links + i].ok &&
             cudaIpcOpenEventHandle(&d->peer_written[i], msg[links + i].ev) == cudaSuccess;
    (void)cudaGetLastError();
    if ((err = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, p->comm)) != MPI_SUCCESS) {
        ipc_release(p);
        return cvmpi_fail_mpi(p->ctx, err, "MPI_Allreduce (the exchange's setup)");
    }
    if (!all)
        ipc_release(p);
    else
        d->ipc = 1;
#endif
    return CONVOLVE_OK;
}

/*
 * One call with the halos GPU to GPU (the plan's device current, every rank
 * in this call). On `side`, after the caller's stream s: `consumed` (the
 * last call's reads of rbuf are behind it), the own elements into the
 * pieces' input boxes; on s the interior; once each receiver's `free` token
 * has come (it recorded `consumed`), on `side` after its `consumed`, this
 * rank's elements straight from the input box into the receiver's rbuf,
 * `written`, and a `written` token to each receiver; once each sender's
 * token has come, on `side` after its `written`, the received elements
 * from rbuf into the pieces' input boxes, and the pieces. The host waits
 * only for the tokens (peers entering the call), never for the GPU. Every
 * token is sent whatever failed, so that no rank waits forever. times[0..3]:
 * MPI_Wtime after the setup of the copies, the interior, the sends and the
 * wait for the senders' tokens.
 */
static convolve_status ipc_call(convolve_mpi_plan *p, const unsigned char *bin, void *out,
                                cudaStream_t s, double *times)
{
    cvmpi_device_state *d = p->dev;
    convolve_context *ctx = p->ctx;
    convolve_status st = CONVOLVE_OK;
    const size_t elem = p->user_in.channels * p->user_in.esize;
    const int nr = p->nrecvs, ns = p->nsends;
    int usable = 1, err = MPI_SUCCESS, e_mpi;
    cudaError_t e;
    /* token buffers and requests: [0, nr) free to the sources, [nr, nr+ns)
     * free from the destinations, then written to the destinations, then
     * written from the sources */
    int *tok = d->tokens;
    MPI_Request *rq = d->treq;
    for (int i = 0; i < 2 * (nr + ns); i++)
        rq[i] = MPI_REQUEST_NULL;
    MPI_Request *free_out = rq, *free_in = rq + nr, *wr_out = rq + nr + ns,
                *wr_in = rq + nr + 2 * ns;
    const int token = (int)(++d->calls & 0x7fffffff);
    if ((e = cudaEventRecord(d->ev[EV_START], s)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(d->side, d->ev[EV_START], 0)) != cudaSuccess ||
        (e = cudaEventRecord(d->consumed, d->side)) != cudaSuccess) {
        st = cuda_fail(ctx, e, "cudaEventRecord (the call's start)");
        usable = 0;
    }
    for (int j = 0; j < ns && err == MPI_SUCCESS; j++)
        err = MPI_Irecv(&tok[nr + j], 1, MPI_INT, p->sends[j].rank, TAG_FREE, p->comm, &free_in[j]);
    for (int i = 0; i < nr && err == MPI_SUCCESS; i++)
        err = MPI_Irecv(&tok[nr + 2 * ns + i], 1, MPI_INT, p->recvs[i].rank, TAG_WRITTEN, p->comm,
                        &wr_in[i]);
    for (int i = 0; i < nr && err == MPI_SUCCESS; i++) {
        tok[i] = token;
        err = MPI_Isend(&tok[i], 1, MPI_INT, p->recvs[i].rank, TAG_FREE, p->comm, &free_out[i]);
    }
    /* own elements into the pieces' input boxes: on the device where they
     * are sub-boxes (d->direct: every piece's received transfers are, here),
     * else through the host as on the staged path (the stages of the own
     * link; the last call's upload from host_in done first) */
    int staged = 0;
    for (int k = 0; k < d->nstage; k++)
        staged |= d->stage[k].link == -1;
    if (staged && usable && d->done_recorded &&
        (e = cudaEventSynchronize(d->ev[EV_DONE])) != cudaSuccess) {
        st = cuda_fail(ctx, e, "cudaEventSynchronize (the last call)");
        usable = 0;
    }
    convolve_status c = faces_and_interior(p, bin, out, s, staged, 1, usable, times);
    if (c != CONVOLVE_OK) {
        st = c;
        usable = 0;
    }
    if (staged && usable) { /* own elements of the other pieces, on the host */
        cvmpi_piece_run pr[6];
        if ((e = cudaEventSynchronize(d->ev[EV_FACES])) != cudaSuccess) {
            st = cuda_fail(ctx, e, "cudaEventSynchronize (own elements)");
            usable = 0;
        } else {
            own_on_host(p, pr);
        }
    }
    /* this rank's elements into each receiver's buffer, once it has read the last ones */
    if (err == MPI_SUCCESS && ns)
        err = MPI_Waitall(ns, free_in, MPI_STATUSES_IGNORE);
    for (int j = 0; j < ns && usable && err == MPI_SUCCESS; j++) {
        if ((e = cudaStreamWaitEvent(d->side, d->peer_consumed[j], 0)) != cudaSuccess) {
            st = cuda_fail(ctx, e, "cudaStreamWaitEvent (a receiver's buffer)");
            usable = 0;
            break;
        }
        unsigned char *dst = d->peer_buf[j];
        for (int k = 0; k < p->sends[j].nt && usable; k++) {
            const cvmpi_transfer *t = &p->sends[j].t[k];
            size_t pos[3], src[3], shape[3];
            transfer_box(t, pos, src, shape);
            cvmpi_view v;
            packed_view(&p->user_in, shape, &v);
            e = copy_box(dst, v.stride, bin + offset_of(&p->user_in, src), p->user_in.stride, shape,
                         elem, cudaMemcpyDefault, d->side);
            if (e != cudaSuccess) {
                st = cuda_fail(ctx, e, "cudaMemcpyAsync (halos to a peer's GPU)");
                usable = 0;
            }
            dst += t->count * elem;
        }
        p->stats.bytes_sent += p->sends[j].bytes;
    }
    if (usable && (e = cudaEventRecord(d->written, d->side)) != cudaSuccess) {
        st = cuda_fail(ctx, e, "cudaEventRecord (the halos sent)");
        usable = 0;
    }
    for (int j = 0; j < ns && err == MPI_SUCCESS; j++) {
        tok[nr + ns + j] = token;
        err = MPI_Isend(&tok[nr + ns + j], 1, MPI_INT, p->sends[j].rank, TAG_WRITTEN, p->comm,
                        &wr_out[j]);
    }
    times[2] = MPI_Wtime();
    if (err == MPI_SUCCESS && nr)
        err = MPI_Waitall(nr, wr_in, MPI_STATUSES_IGNORE);
    times[3] = MPI_Wtime();
    /* the input boxes of the pieces assembled on the host uploaded, then the
     * received elements over them (and into the others), then the pieces */
    for (int k = 0; k < p->work.npieces && usable; k++)
        if (!d->direct[k] &&
            (e = cudaMemcpyAsync(d->din[k], d->host_in[k], d->in_bytes[k], cudaMemcpyHostToDevice,
                                 d->side)) != cudaSuccess) {
            st = cuda_fail(ctx, e, "cudaMemcpyAsync (an edge piece to the device)");
            usable = 0;
        }
    for (int i = 0; i < nr && usable && err == MPI_SUCCESS; i++) {
        if ((e = cudaStreamWaitEvent(d->side, d->peer_written[i], 0)) != cudaSuccess) {
            st = cuda_fail(ctx, e, "cudaStreamWaitEvent (a sender's halos)");
            usable = 0;
            break;
        }
        const unsigned char *from = (const unsigned char *)d->rbuf + d->roff[i];
        for (int k = 0; k < p->recvs[i].nt && usable; k++) {
            const cvmpi_transfer *t = &p->recvs[i].t[k];
            e = into_piece(p, t, from, FROM_PACKED, cudaMemcpyDeviceToDevice);
            if (e != cudaSuccess) {
                st = cuda_fail(ctx, e, "cudaMemcpyAsync (halos into an edge piece)");
                usable = 0;
            }
            from += t->count * elem;
        }
        p->stats.bytes_received += p->recvs[i].bytes;
    }
    if (usable && err == MPI_SUCCESS)
        st = launch_pieces(p, out, s, 0);
    /* the tokens sent have left (their buffers are the plan's) */
    if ((e_mpi = MPI_Waitall(2 * (nr + ns), rq, MPI_STATUSES_IGNORE)) != MPI_SUCCESS &&
        err == MPI_SUCCESS)
        err = e_mpi;
    if (err != MPI_SUCCESS && st == CONVOLVE_OK)
        st = cvmpi_fail_mpi(ctx, err, "the halos' tokens");
    p->stats.peers_received = nr;
    p->stats.peers_sent = ns;
    p->stats.device_exchange = 1;
    return st;
}

void cvmpi_device_release(convolve_mpi_plan *p)
{
    cvmpi_device_state *d = p->dev;
    if (!d)
        return;
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(p->device) != cudaSuccess)
        prev = -1;
    if (d->done_recorded)
        (void)cudaEventSynchronize(d->ev[EV_DONE]); /* nothing of ours still in flight */
    if (d->have_side)
        (void)cudaStreamSynchronize(d->side);
    ipc_release(p);
    for (int k = 0; k < 6; k++) {
        (void)cudaFreeHost(d->host_in[k]);
        (void)cudaFree(d->din[k]);
        (void)cudaFree(d->dout[k]);
    }
    (void)cudaFreeHost(d->staging);
    for (int k = 0; k < d->nev; k++)
        (void)cudaEventDestroy(d->ev[k]);
    if (d->have_side)
        (void)cudaStreamDestroy(d->side);
    (void)cudaGetLastError();
    if (prev >= 0)
        (void)cudaSetDevice(prev);
    free(d->stage);
    free(d);
    p->dev = NULL;
}

/* ptr must be device memory of the plan's device (the emulation of
 * tests/emu does not tag device memory: there, only pinned host memory is
 * told apart). */
static convolve_status check_device_pointer(const convolve_mpi_plan *p, const void *ptr,
                                            const char *what)
{
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t e = cudaPointerGetAttributes(&a, ptr);
    if (e != cudaSuccess)
        return cuda_fail(p->ctx, e, "cudaPointerGetAttributes (the boxes)");
#ifdef CONVOLVE_MPI_CUDA_EMULATED
    const int device = a.type != cudaMemoryTypeHost;
#else
    const int device = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
#endif
    if (!device)
        return cvmpi_fail(p->ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_execute_device: the %s box is host memory; pass device "
                          "memory of device %d, or run host boxes with convolve_mpi_execute",
                          what, p->device);
    if (a.type == cudaMemoryTypeDevice && a.device != p->device)
        return cvmpi_fail(p->ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_execute_device: the %s box is memory of device %d; this "
                          "rank's plan runs on device %d",
                          what, a.device, p->device);
    return CONVOLVE_OK;
}

convolve_status cvmpi_check_host_pointers(const convolve_mpi_plan *p, const void *in,
                                          const void *out)
{
    if (p->device < 0) /* a CPU plan: no CUDA context to ask (nor to pay for) */
        return CONVOLVE_OK;
    const void *ptr[2] = {in, out};
    for (int k = 0; k < 2; k++) {
        struct cudaPointerAttributes a;
        memset(&a, 0, sizeof a);
        if (cudaPointerGetAttributes(&a, ptr[k]) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        if (a.type == cudaMemoryTypeDevice)
            return cvmpi_fail(p->ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                              "convolve_mpi_execute: the %s box is device memory; run "
                              "device-resident boxes with convolve_mpi_execute_device",
                              k ? "output" : "input");
    }
    return CONVOLVE_OK;
}

/* Checks done before any message moves (every rank agrees on them after). */
static convolve_status check(convolve_mpi_plan *p, const void *in, const void *out)
{
    convolve_context *ctx = p->ctx;
    if (p->backend != CONVOLVE_BACKEND_CUDA || p->device < 0)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                          "convolve_mpi_execute_device needs a plan on a GPU; this one runs "
                          "'%s' on the CPU",
                          p->strategy);
    if (!in || !out)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_execute_device: %s is NULL", in ? "out" : "in");
    if (!device_view_ok(&p->user_in) || !device_view_ok(&p->user_out))
        return cvmpi_fail(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                          "convolve_mpi_execute_device: device-resident boxes need elements "
                          "one after another along the last axis (channels interleaved) and no "
                          "negative stride");
    if (cvmpi_boxes_overlap(p, in, out))
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_execute_device: the output box overlaps the input box");
    convolve_status st = check_device_pointer(p, in, "input");
    return st != CONVOLVE_OK ? st : check_device_pointer(p, out, "output");
}

/*
 * One call with the halos staged through pinned host memory (the plan's
 * device current, every rank in this call): the steps of this file's
 * opening comment. times[0..3]: MPI_Wtime after the faces' copies are
 * queued, the interior, the sends and the wait for the halos.
 */
static convolve_status staged_call(convolve_mpi_plan *p, const unsigned char *bin, void *out,
                                   cudaStream_t s, double *times)
{
    cvmpi_device_state *d = p->dev;
    convolve_context *ctx = p->ctx;
    convolve_status st = CONVOLVE_OK;
    cudaError_t e;
    const size_t elem = p->user_in.channels * p->user_in.esize;
    int usable = 1, err = MPI_SUCCESS, nreq = 0;

    /* the last call's uploads from the pinned buffers are done */
    if (d->done_recorded && (e = cudaEventSynchronize(d->ev[EV_DONE])) != cudaSuccess) {
        st = cuda_fail(ctx, e, "cudaEventSynchronize (the last call)");
        usable = 0;
    }
    for (int i = 0; i < p->nreq; i++)
        p->req[i] = MPI_REQUEST_NULL;
    for (int i = 0; i < p->nrecvs && err == MPI_SUCCESS; i++) {
        err = cvmpi_post(0, &p->recvs[i], p->comm, &p->req[nreq]);
        nreq += p->recvs[i].nreq;
        p->stats.bytes_received += p->recvs[i].bytes;
    }
    /* 1. on `side` after what the caller's stream holds (what wrote `in`):
     * the faces and own elements to the host, and the own elements of the
     * pieces whose transfers are sub-boxes on the device; 2. the interior
     * on the GPU, while the faces travel */
    if (usable && ((e = cudaEventRecord(d->ev[EV_START], s)) != cudaSuccess ||
                   (e = cudaStreamWaitEvent(d->side, d->ev[EV_START], 0)) != cudaSuccess)) {
        st = cuda_fail(ctx, e, "cudaEventRecord / cudaStreamWaitEvent (the call's start)");
        usable = 0;
    }
    convolve_status c = faces_and_interior(p, bin, out, s, 1, 0, usable, times);
    if (c != CONVOLVE_OK) {
        st = c;
        usable = 0;
    }
    if (usable && (e = cudaEventSynchronize(d->ev[EV_FACES])) != cudaSuccess) {
        st = cuda_fail(ctx, e, "cudaEventSynchronize (the faces)");
        usable = 0;
    }
    /* a failed rank still sends (stale buffers), so that no rank waits forever */
    for (int i = 0, k = 0; i < p->nsends && err == MPI_SUCCESS; i++) {
        unsigned char *dst = p->sends[i].buf;
        for (; k < d->nstage && d->stage[k].link == i; k++) {
            cvmpi_view v;
            packed_view(&p->user_in, d->stage[k].shape, &v);
            if (usable)
                cvmpi_pack_transfer(d->stage[k].t, d->staging + d->stage[k].offset, &v,
                                    d->stage[k].lo, dst, d->copy_threads);
            dst += d->stage[k].t->count * elem;
        }
        err = cvmpi_post(1, &p->sends[i], p->comm, &p->req[nreq]);
        nreq += p->sends[i].nreq;
        p->stats.bytes_sent += p->sends[i].bytes;
    }
    p->stats.peers_received = p->nrecvs;
    p->stats.peers_sent = p->nsends;
    if (err != MPI_SUCCESS) {
        st = cvmpi_fail_mpi(ctx, err, "posting the halo messages");
        usable = 0;
    }
    cvmpi_piece_run pr[6];
    if (usable)
        own_on_host(p, pr);
    times[2] = MPI_Wtime();

    if (p->nreq && (err = MPI_Waitall(p->nreq, p->req, MPI_STATUSES_IGNORE)) != MPI_SUCCESS &&
        st == CONVOLVE_OK) {
        st = cvmpi_fail_mpi(ctx, err, "MPI_Waitall (the halo messages)");
        usable = 0;
    }
    times[3] = MPI_Wtime();

    /* 3. the edge pieces on `side`, beside the interior; their outputs over
     * the interior's, on the caller's stream after both */
    if (usable) {
        for (int i = 0; i < p->nrecvs; i++)
            cvmpi_unpack(&p->recvs[i], p->recvs[i].buf, pr, &p->work, d->copy_threads);
        /* the halos of the pieces whose own elements are there already */
        for (int i = 0; i < p->nrecvs && st == CONVOLVE_OK; i++)
            for (int k = 0; k < p->recvs[i].nt && st == CONVOLVE_OK; k++) {
                const cvmpi_transfer *t = &p->recvs[i].t[k];
                if (!d->direct[t->piece])
                    continue;
                e = into_piece(p, t, d->host_in[t->piece], FROM_PIECE, cudaMemcpyHostToDevice);
                if (e != cudaSuccess)
                    st = cuda_fail(ctx, e, "cudaMemcpyAsync (halos to the device)");
            }
        if (st == CONVOLVE_OK)
            st = launch_pieces(p, out, s, 1);
    }
    return st;
}

convolve_status convolve_mpi_execute_device(convolve_mpi_plan *p, const void *in, void *out,
                                            void *stream)
{
    if (!p)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    convolve_context *ctx = p->ctx;
    const double t0 = MPI_Wtime();
    memset(&p->stats, 0, sizeof p->stats);
    convolve_status st = check(p, in, out);
    int prev = -1;
    cudaError_t e = cudaSuccess;
    if (st == CONVOLVE_OK) {
        if ((e = cudaGetDevice(&prev)) != cudaSuccess ||
            (e = cudaSetDevice(p->device)) != cudaSuccess) {
            prev = -1;
            st = cuda_fail(ctx, e, "cudaSetDevice (the plan's device)");
        } else if (!p->dev) {
            st = setup(p);
            if (st != CONVOLVE_OK)
                cvmpi_device_release(p);
        }
    }
    /* every rank runs the exchange below, or none */
    if ((st = cvmpi_agree(ctx, p->comm, st)) != CONVOLVE_OK) {
        if (prev >= 0)
            (void)cudaSetDevice(prev);
        p->stats.total_ms = (MPI_Wtime() - t0) * 1e3;
        return st;
    }
    cvmpi_device_state *d = p->dev;
    /* the first call decides how the halos travel (collective) */
    if (d->ipc < 0 && (st = cvmpi_agree(ctx, p->comm, ipc_setup(p))) != CONVOLVE_OK) {
        (void)cudaSetDevice(prev);
        p->stats.total_ms = (MPI_Wtime() - t0) * 1e3;
        return st;
    }
    cudaStream_t s = (cudaStream_t)stream;
    double tm[4];
    st = d->ipc == 1 ? ipc_call(p, (const unsigned char *)in, out, s, tm)
                     : staged_call(p, (const unsigned char *)in, out, s, tm);
    const double t1 = tm[0], t2 = tm[1], t3 = tm[2], t4 = tm[3];
    /* whatever failed, the caller's stream ends behind `side` (which reads
     * `in`), and the next call waits for this event */
    if ((e = cudaEventRecord(d->ev[EV_PIECES], d->side)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(s, d->ev[EV_PIECES], 0)) != cudaSuccess ||
        (e = cudaEventRecord(d->ev[EV_DONE], s)) != cudaSuccess) {
        if (st == CONVOLVE_OK)
            st = cuda_fail(ctx, e, "cudaEventRecord (the call's end)");
        d->done_recorded = 0;
        (void)cudaStreamSynchronize(d->side);
        (void)cudaStreamSynchronize(s);
    } else {
        d->done_recorded = 1;
    }
    const double t5 = MPI_Wtime();
    if (prev >= 0)
        (void)cudaSetDevice(prev);

    st = cvmpi_agree(ctx, p->comm, st);
    p->stats.post_ms = (t1 - t0 + t3 - t2) * 1e3;
    p->stats.interior_ms = (t2 - t1) * 1e3;
    p->stats.wait_ms = (t4 - t3) * 1e3;
    p->stats.edges_ms = (t5 - t4) * 1e3;
    p->stats.total_ms = (MPI_Wtime() - t0) * 1e3;
    return st;
}

#else /* no CUDA: no plan runs on a GPU */

void cvmpi_device_release(convolve_mpi_plan *p)
{
    (void)p;
}

convolve_status cvmpi_check_host_pointers(const convolve_mpi_plan *p, const void *in,
                                          const void *out)
{
    (void)p, (void)in, (void)out;
    return CONVOLVE_OK;
}

convolve_status convolve_mpi_execute_device(convolve_mpi_plan *p, const void *in, void *out,
                                            void *stream)
{
    (void)in, (void)out, (void)stream;
    if (!p)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    memset(&p->stats, 0, sizeof p->stats);
    convolve_status st = cvmpi_fail(p->ctx, CONVOLVE_ERROR_UNSUPPORTED,
                                    "convolve_mpi_execute_device needs a plan on a GPU; this "
                                    "one runs '%s' on the CPU (libconvolve_mpi was built without "
                                    "CUDA)",
                                    p->strategy);
    return cvmpi_agree(p->ctx, p->comm, st);
}

#endif
