/*
 * plan.c - distributed plans: checking that the ranks agree, the grid of
 * boxes, the backend and strategy every rank uses, the local libconvolve
 * plans (one over the caller's box, one per edge piece), the exchange lists
 * and their buffers; freeing and describing a plan.
 */
#include "mpi_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* What every rank must pass alike; compared with rank 0's. */
typedef struct {
    int ndim, in_dtype, out_dtype, mode, operation, backend, autotune, named;
    unsigned long long n[3], channels, extent[3];
    long long origin[3];
    double cval;
    uint64_t strategy_hash, weights_hash;
} agreed;

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static int strategy_named(const char *s)
{
    return s && *s && strcmp(s, "auto") != 0;
}

/* Local checks of what the core does not see, and the values to agree on. */
static convolve_status describe(convolve_context *ctx, const size_t *global_shape,
                                const size_t *block_start, const convolve_layout *in,
                                const convolve_layout *out, const convolve_filter *filter,
                                const convolve_options *o, agreed *ag)
{
    memset(ag, 0, sizeof *ag);
    if (!global_shape || !block_start || !in || !out || !filter)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_plan_create: NULL argument");
    if (in->ndim < 1 || in->ndim > CONVOLVE_MAX_DIMS || out->ndim != in->ndim)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                          "convolve_mpi_plan_create: the boxes have %d and %d dimensions; use "
                          "1 to 3, alike",
                          in->ndim, out->ndim);
    if (convolve_filter_ndim(filter) != in->ndim)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_BAD_FILTER,
                          "the filter has %d dimensions and the array %d; they must match",
                          convolve_filter_ndim(filter), in->ndim);
    ag->ndim = in->ndim;
    ag->in_dtype = (int)in->dtype;
    ag->out_dtype = (int)out->dtype;
    ag->channels = in->channels;
    ag->mode = (int)o->mode;
    ag->operation = (int)o->operation;
    ag->backend = (int)o->backend;
    ag->autotune = o->autotune;
    ag->cval = o->cval;
    ag->named = strategy_named(o->strategy);
    ag->strategy_hash = ag->named ? fnv(14695981039346656037ull, o->strategy, strlen(o->strategy))
                                  : 0;
    size_t count = 1;
    for (int a = 0; a < 3; a++) {
        ag->n[a] = a < in->ndim ? global_shape[a] : 0;
        ag->extent[a] = a < in->ndim ? convolve_filter_extent(filter, a) : 0;
        ag->origin[a] = a < in->ndim ? (long long)o->origin[a] : 0;
        if (a < in->ndim)
            count *= convolve_filter_extent(filter, a);
    }
    double *w = malloc(count * sizeof *w);
    if (!w)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                          "out of memory for the filter's "
                          "weights");
    convolve_filter_weights(filter, w, count);
    ag->weights_hash = fnv(14695981039346656037ull, w, count * sizeof *w);
    free(w);
    return cvmpi_ok(ctx);
}

static convolve_status compare(const convolve_context *ctx, const agreed *mine, const agreed *first)
{
    const char *what = NULL;
    if (mine->ndim != first->ndim || memcmp(mine->n, first->n, sizeof mine->n))
        what = "global shape";
    else if (mine->in_dtype != first->in_dtype || mine->out_dtype != first->out_dtype)
        what = "dtypes";
    else if (mine->channels != first->channels)
        what = "channels";
    else if (memcmp(mine->extent, first->extent, sizeof mine->extent) ||
             mine->weights_hash != first->weights_hash)
        what = "filter";
    else if (mine->mode != first->mode || memcmp(&mine->cval, &first->cval, sizeof mine->cval))
        what = "mode or cval";
    else if (mine->operation != first->operation ||
             memcmp(mine->origin, first->origin, sizeof mine->origin))
        what = "operation or origin";
    else if (mine->backend != first->backend || mine->autotune != first->autotune ||
             mine->named != first->named || mine->strategy_hash != first->strategy_hash)
        what = "backend, strategy or autotune";
    if (what)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "this rank's %s differ%s from rank 0's: every rank must pass the same",
                          what, what[strlen(what) - 1] == 's' ? "" : "s");
    return CONVOLVE_OK;
}

/* The strategy `fast` would run on the CPU, short of the FFT: separable for
 * a separable filter with taps along two or more axes (cheaper than direct
 * in every case its cost model covers), else direct. */
static const char *cpu_choice(const convolve_filter *f, int ndim)
{
    int axes = 0;
    for (int a = 0; a < ndim; a++)
        axes += convolve_filter_extent(f, a) > 1;
    return convolve_filter_is_separable(f) && axes >= 2 ? "separable" : "direct";
}

/* The axes of a layout as three (leading axes of extent 1). */
static void view_of(const convolve_layout *l, cvmpi_view *v)
{
    int pad = 3 - l->ndim;
    for (int a = 0; a < 3; a++)
        v->stride[a] = a < pad ? 0 : l->strides[a - pad];
    v->cstride = l->channel_stride;
    v->esize = convolve_dtype_size(l->dtype);
    v->channels = l->channels;
}

/* The geometry's reach from the filter, operation and origin (libconvolve's
 * canonical problem: a convolution is a correlation with every axis
 * reversed and origin o turned into -o - (K even)). */
static void reach(cvmpi_geometry *geo, const convolve_filter *f, const convolve_options *o,
                  int ndim)
{
    int pad = 3 - ndim;
    for (int a = 0; a < 3; a++) {
        geo->before[a] = geo->after[a] = 0;
        if (a < pad)
            continue;
        ptrdiff_t K = (ptrdiff_t)convolve_filter_extent(f, a - pad), origin = o->origin[a - pad];
        if (o->operation == CONVOLVE_OP_CONVOLVE)
            origin = -origin - (K % 2 == 0);
        ptrdiff_t koff = K / 2 + origin; /* in [0, K): the local plan checked the origin */
        geo->before[a] = (size_t)koff;
        geo->after[a] = (size_t)(K - 1 - koff);
    }
}

/* A local plan; one process's GPU strategy (preferred, not named by the
 * caller) gives way to the GPU's own choice where it cannot serve. */
static convolve_status local_plan(convolve_mpi_plan *p, convolve_plan **plan,
                                  const convolve_layout *in, const convolve_layout *out,
                                  const convolve_filter *filter, const convolve_options *lopt)
{
    convolve_status st = convolve_plan_create(p->ctx, plan, in, out, filter, lopt);
    if (st == CONVOLVE_ERROR_UNSUPPORTED && p->gpu_choice[0] && lopt->strategy == p->gpu_choice) {
        convolve_options any = *lopt;
        any.strategy = NULL;
        st = convolve_plan_create(p->ctx, plan, in, out, filter, &any);
    }
    return st;
}

static convolve_status make_pieces(convolve_mpi_plan *p, const convolve_layout *in,
                                   const convolve_layout *out, const convolve_filter *filter,
                                   const convolve_options *lopt)
{
    const int pad = 3 - p->ndim;
    for (int k = 0; k < p->work.npieces; k++) {
        const cvmpi_piece *pc = &p->work.piece[k];
        cvmpi_piece_run *r = &p->pr[k];
        size_t shape[3];
        for (int a = pad; a < 3; a++)
            shape[a - pad] = (size_t)(pc->in[a].hi - pc->in[a].lo);
        convolve_layout li, lo;
        convolve_status st;
        if ((st = convolve_layout_init(&li, in->dtype, p->ndim, shape, in->channels)) ||
            (st = convolve_layout_init(&lo, out->dtype, p->ndim, shape, in->channels)))
            return cvmpi_fail_core(p->ctx, st, "an edge piece's layout");
        if ((st = local_plan(p, &r->plan, &li, &lo, filter, lopt)) != CONVOLVE_OK)
            return cvmpi_fail_core(p->ctx, st, "planning an edge piece");
        const size_t count = convolve_layout_count(&li);
        const size_t ib = count * convolve_dtype_size(in->dtype);
        const size_t ob = count * convolve_dtype_size(out->dtype);
        /* a piece on the GPU: pinned boxes, copied at the link's speed
         * (malloc'd ones went through pageable copies or staging) */
        r->pinned = convolve_plan_backend(r->plan) == CONVOLVE_BACKEND_CUDA &&
                    convolve_host_alloc(p->ctx, ib, 0, &r->in) == CONVOLVE_OK;
        if (r->pinned && convolve_host_alloc(p->ctx, ob, 0, &r->out) != CONVOLVE_OK) {
            convolve_host_free(r->in);
            r->in = NULL, r->pinned = 0;
        }
        if (!r->pinned) {
            r->in = malloc(ib);
            r->out = malloc(ob);
        }
        if (!r->in || !r->out)
            return cvmpi_fail(p->ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                              "out of memory for an edge piece of %zu elements", count);
        view_of(&li, &r->in_view);
        view_of(&lo, &r->out_view);
    }
    return CONVOLVE_OK;
}

static int add_link(cvmpi_link **list, int *n, const cvmpi_link *l)
{
    cvmpi_link *t = realloc(*list, ((size_t)*n + 1) * sizeof *t);
    if (!t)
        return 0;
    *list = t;
    t[(*n)++] = *l;
    return 1;
}

/* The lists of elements exchanged with every other rank, and their buffers. */
static convolve_status make_links(convolve_mpi_plan *p)
{
    const size_t elem = p->user_in.channels * p->user_in.esize;
    if (!cvmpi_link_build(&p->geo, &p->work, p->rank, &p->self))
        goto oom;
    for (int q = 0; q < p->nranks; q++) {
        if (q == p->rank)
            continue;
        cvmpi_link l;
        /* what q sends me, for my pieces */
        if (!cvmpi_link_build(&p->geo, &p->work, q, &l))
            goto oom;
        if (l.nt && !add_link(&p->recvs, &p->nrecvs, &l)) {
            cvmpi_link_free(&l);
            goto oom;
        }
        if (!l.nt)
            cvmpi_link_free(&l);
        /* what I send q, for its pieces */
        cvmpi_work wq;
        cvmpi_work_of(&p->geo, q, &wq);
        if (!cvmpi_link_build(&p->geo, &wq, p->rank, &l))
            goto oom;
        l.rank = q;
        if (l.nt && !add_link(&p->sends, &p->nsends, &l)) {
            cvmpi_link_free(&l);
            goto oom;
        }
        if (!l.nt)
            cvmpi_link_free(&l);
    }
    p->nreq = 0;
    for (int pass = 0; pass < 2; pass++) {
        cvmpi_link *ls = pass ? p->sends : p->recvs;
        int n = pass ? p->nsends : p->nrecvs;
        for (int i = 0; i < n; i++) {
            size_t count = 0;
            for (int k = 0; k < ls[i].nt; k++)
                count += ls[i].t[k].count;
            ls[i].bytes = count * elem;
            ls[i].nreq = (int)((ls[i].bytes + CVMPI_CHUNK_BYTES - 1) / CVMPI_CHUNK_BYTES);
            p->nreq += ls[i].nreq;
            if (!(ls[i].buf = malloc(ls[i].bytes ? ls[i].bytes : 1)))
                goto oom;
        }
    }
    p->req = malloc(((size_t)p->nreq + 1) * sizeof *p->req);
    if (!p->req)
        goto oom;
    return CONVOLVE_OK;
oom:
    return cvmpi_fail(p->ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                      "out of memory for the halo exchange's lists and buffers");
}

/* Frees what a plan holds, except its communicator. */
static void release(convolve_mpi_plan *p)
{
    cvmpi_device_release(p);
    convolve_plan_free(p->interior);
    for (int k = 0; k < 6; k++) {
        convolve_plan_free(p->pr[k].plan);
        if (p->pr[k].pinned) {
            convolve_host_free(p->pr[k].in);
            convolve_host_free(p->pr[k].out);
        } else {
            free(p->pr[k].in);
            free(p->pr[k].out);
        }
    }
    for (int i = 0; i < p->nsends; i++)
        cvmpi_link_free(&p->sends[i]);
    for (int i = 0; i < p->nrecvs; i++)
        cvmpi_link_free(&p->recvs[i]);
    free(p->sends);
    free(p->recvs);
    cvmpi_link_free(&p->self);
    free(p->req);
    cvmpi_grid_free(&p->grid);
}

/* Everything after the communicator is duplicated; every rank runs the same
 * collectives whatever its local status. */
/* Every rank compares its arguments with rank 0's (*first on return); all
 * ranks agree on the outcome. */
static convolve_status agree_arguments(convolve_mpi_plan *p, convolve_status st, const agreed *mine,
                                       agreed *first)
{
    convolve_context *ctx = p->ctx;
    int err;
    *first = *mine;
    if ((err = MPI_Bcast(first, (int)sizeof *first, MPI_BYTE, 0, p->comm)) != MPI_SUCCESS)
        return cvmpi_fail_mpi(ctx, err, "MPI_Bcast (comparing the ranks' arguments)");
    if (st == CONVOLVE_OK && p->rank != 0)
        st = compare(ctx, mine, first);
    return cvmpi_agree(ctx, p->comm, st);
}

/* The grid of boxes: every rank's block gathered, checked to tile the array. */
static convolve_status build_grid(convolve_mpi_plan *p, const agreed *first,
                                  const size_t *block_start, const convolve_layout *in)
{
    convolve_context *ctx = p->ctx;
    convolve_status st;
    int err;
    p->ndim = in->ndim;
    const int pad = 3 - p->ndim;
    unsigned long long box[6], *boxes = malloc((size_t)p->nranks * sizeof box);
    for (int a = 0; a < 3; a++) {
        box[a] = a < pad ? 0 : block_start[a - pad];
        box[3 + a] = a < pad ? 1 : in->shape[a - pad];
        p->geo.n[a] = a < pad ? 1 : (size_t)first->n[a - pad];
    }
    st = boxes ? CONVOLVE_OK
               : cvmpi_fail(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                            "out of memory for the boxes of "
                            "%d ranks",
                            p->nranks);
    if ((st = cvmpi_agree(ctx, p->comm, st)) != CONVOLVE_OK) {
        free(boxes);
        return st;
    }
    err = MPI_Allgather(box, 6, MPI_UNSIGNED_LONG_LONG, boxes, 6, MPI_UNSIGNED_LONG_LONG, p->comm);
    if (err != MPI_SUCCESS) {
        free(boxes);
        return cvmpi_fail_mpi(ctx, err, "MPI_Allgather (the ranks' boxes)");
    }
    char why[512] = "";
    st = cvmpi_grid_build(&p->grid, p->geo.n, p->nranks, boxes, why, sizeof why);
    free(boxes);
    if (st != CONVOLVE_OK)
        cvmpi_fail(ctx, st, "%s", why);
    return cvmpi_agree(ctx, p->comm, st);
}

/* The backend and device: what one process would choose for the whole array
 * (plans allocate no array memory: this costs little): AUTO's backend (the
 * GPU only when the work pays) and, on the GPU, the strategy (p->gpu_choice),
 * which local plans then prefer. Sets lopt->backend to CPU or CUDA. */
static void choose_backend(convolve_mpi_plan *p, convolve_options *lopt, const convolve_layout *in,
                           const convolve_layout *out, const convolve_filter *filter,
                           const convolve_options *o, int named)
{
    convolve_context *ctx = p->ctx;
    int want_gpu = o->backend == CONVOLVE_BACKEND_CUDA ||
                   (o->backend == CONVOLVE_BACKEND_AUTO &&
                    convolve_backend_built(CONVOLVE_BACKEND_CUDA));
    p->device = cvmpi_select_device(p->comm, want_gpu);
    if (want_gpu && !(o->autotune && !named)) {
        convolve_layout gi, go;
        size_t shape[CONVOLVE_MAX_DIMS];
        for (int a = 0; a < p->ndim; a++)
            shape[a] = p->geo.n[3 - p->ndim + a];
        convolve_plan *probe = NULL;
        if (convolve_layout_init(&gi, in->dtype, p->ndim, shape, in->channels) == CONVOLVE_OK &&
            convolve_layout_init(&go, out->dtype, p->ndim, shape, in->channels) == CONVOLVE_OK &&
            convolve_plan_create(ctx, &probe, &gi, &go, filter, lopt) == CONVOLVE_OK) {
            if (o->backend == CONVOLVE_BACKEND_AUTO)
                lopt->backend = convolve_plan_backend(probe);
            if (convolve_plan_backend(probe) == CONVOLVE_BACKEND_CUDA && !named)
                snprintf(p->gpu_choice, sizeof p->gpu_choice, "%s", convolve_plan_strategy(probe));
        }
        convolve_plan_free(probe);
    }
    if (lopt->backend == CONVOLVE_BACKEND_AUTO) { /* no probe, or it failed */
        convolve_device_info info;
        int gpu = want_gpu && convolve_device_query(ctx, &info) == CONVOLVE_OK && info.available;
        lopt->backend = gpu ? CONVOLVE_BACKEND_CUDA : CONVOLVE_BACKEND_CPU;
    }
    if (lopt->backend != CONVOLVE_BACKEND_CUDA)
        p->device = -1;
}

/* The strategy every rank runs, unless the caller named one: rank 0's
 * autotuned choice, the image strategy where it serves every rank's box on
 * the CPU, or the whole array's GPU choice. Sets lopt->strategy. */
static convolve_status choose_strategy(convolve_mpi_plan *p, convolve_options *lopt,
                                       const convolve_layout *in, const convolve_layout *out,
                                       const convolve_filter *filter, const convolve_options *o,
                                       int named)
{
    convolve_context *ctx = p->ctx;
    convolve_status st = CONVOLVE_OK;
    int err;
    if (!named && o->autotune) {
        /* rank 0 measures; everyone runs its choice */
        char name[64] = "";
        if (p->rank == 0) {
            convolve_options topt = *lopt;
            topt.autotune = 1;
            convolve_plan *tp = NULL;
            st = convolve_plan_create(ctx, &tp, in, out, filter, &topt);
            if (st != CONVOLVE_OK)
                cvmpi_fail_core(ctx, st, "autotuning on rank 0");
            else
                snprintf(name, sizeof name, "%s", convolve_plan_strategy(tp));
            convolve_plan_free(tp);
        }
        if ((st = cvmpi_agree(ctx, p->comm, st)) != CONVOLVE_OK)
            return st;
        if ((err = MPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, p->comm)) != MPI_SUCCESS)
            return cvmpi_fail_mpi(ctx, err, "MPI_Bcast (the autotuned strategy)");
        snprintf(p->strategy, sizeof p->strategy, "%s", name);
        lopt->strategy = p->strategy;
    } else if (!named && lopt->backend == CONVOLVE_BACKEND_CPU) {
        /* `fast` runs the image strategy wherever it serves (8/16-bit
         * images): so do the ranks, when it serves every rank's box */
        convolve_options img = *lopt;
        img.strategy = "image";
        convolve_plan *probe_img = NULL;
        int serves = convolve_plan_create(ctx, &probe_img, in, out, filter, &img) == CONVOLVE_OK;
        int all = 0;
        convolve_plan_free(probe_img);
        if ((err = MPI_Allreduce(&serves, &all, 1, MPI_INT, MPI_LAND, p->comm)) != MPI_SUCCESS)
            return cvmpi_fail_mpi(ctx, err, "MPI_Allreduce (the image strategy)");
        lopt->strategy = all ? "image" : cpu_choice(filter, p->ndim);
    } else if (!named) {
        /* one process's GPU strategy where a local plan can run it, else the
         * GPU's own choice for that plan */
        lopt->strategy = p->gpu_choice[0] ? p->gpu_choice : NULL;
    }
    return st;
}

/* The geometry of this rank's work (inner box), the user's views, whether a
 * progress thread runs the exchange, and the thread count. */
static void set_up_work(convolve_mpi_plan *p, const convolve_layout *in, const convolve_layout *out,
                        const convolve_filter *filter, const convolve_options *o)
{
    p->geo.mode = (int)o->mode;
    p->geo.grid = &p->grid;
    reach(&p->geo, filter, o, p->ndim);
    view_of(in, &p->user_in);
    view_of(out, &p->user_out);
    cvmpi_work_of(&p->geo, p->rank, &p->work);
    p->run_interior = 1;
    for (int a = 0; a < 3; a++)
        p->run_interior &= p->work.inner[a].hi > p->work.inner[a].lo;
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    const char *env = getenv("CONVOLVE_MPI_PROGRESS");
    p->progress_thread = level >= MPI_THREAD_SERIALIZED && !(env && !strcmp(env, "0"));
#ifdef _OPENMP
    p->threads = o->threads > 0 ? o->threads : omp_get_max_threads();
#else
    p->threads = 1;
#endif
}

static convolve_status build(convolve_mpi_plan *p, convolve_status st, const agreed *mine,
                             const size_t *block_start, const convolve_layout *in,
                             const convolve_layout *out, const convolve_filter *filter,
                             const convolve_options *o)
{
    convolve_context *ctx = p->ctx;
    agreed first;
    if ((st = agree_arguments(p, st, mine, &first)) != CONVOLVE_OK)
        return st;
    if ((st = build_grid(p, &first, block_start, in)) != CONVOLVE_OK)
        return st;

    /* backend, device and strategy */
    convolve_options lopt = *o;
    lopt.autotune = 0;
    int named = strategy_named(o->strategy) && strcmp(o->strategy, "fast") != 0;
    choose_backend(p, &lopt, in, out, filter, o, named);
    if ((st = choose_strategy(p, &lopt, in, out, filter, o, named)) != CONVOLVE_OK)
        return st;

    /* the plan over the caller's box: it also checks layouts, filter, origin */
    st = local_plan(p, &p->interior, in, out, filter, &lopt);
    if (st != CONVOLVE_OK)
        cvmpi_fail_core(ctx, st, "planning this rank's box");
    if ((st = cvmpi_agree(ctx, p->comm, st)) != CONVOLVE_OK)
        return st;
    snprintf(p->strategy, sizeof p->strategy, "%s", convolve_plan_strategy(p->interior));
    p->backend = convolve_plan_backend(p->interior);

    /* the work: inner box, pieces and their plans, exchange lists */
    set_up_work(p, in, out, filter, o);
    st = make_pieces(p, in, out, filter, &lopt);
    if (st == CONVOLVE_OK)
        st = make_links(p);
    return cvmpi_agree(ctx, p->comm, st);
}

convolve_status convolve_mpi_plan_create(convolve_context *ctx, convolve_mpi_plan **plan,
                                         MPI_Comm comm, const size_t *global_shape,
                                         const size_t *block_start, const convolve_layout *in,
                                         const convolve_layout *out, const convolve_filter *filter,
                                         const convolve_options *options)
{
    if (plan)
        *plan = NULL;
    if (comm == MPI_COMM_NULL)
        return cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                          "convolve_mpi_plan_create: the communicator is MPI_COMM_NULL");
    convolve_options copy;
    convolve_options_init(&copy);
    if (options && options->size < sizeof copy) {
        /* built against an older convolve.h: its fields, the defaults past
         * them (convolve_plan_create checks the size) */
        memcpy(&copy, options, options->size);
        copy.size = options->size;
    }
    if (!options || options->size < sizeof copy)
        options = &copy;
    agreed mine;
    convolve_status st = CONVOLVE_OK;
    if (!plan || !ctx)
        st = cvmpi_fail(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                        "convolve_mpi_plan_create: %s is NULL", plan ? "the context" : "plan");
    else
        st = describe(ctx, global_shape, block_start, in, out, filter, options, &mine);
    if (st != CONVOLVE_OK)
        memset(&mine, 0, sizeof mine);

    convolve_mpi_plan *p = calloc(1, sizeof *p);
    if (!p && st == CONVOLVE_OK)
        st = cvmpi_fail(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a plan");
    MPI_Comm dup = MPI_COMM_NULL;
    int err = MPI_Comm_dup(comm, &dup);
    if (err != MPI_SUCCESS) {
        free(p);
        return cvmpi_fail_mpi(ctx, err, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    if (!p) { /* the others still run the collectives: join them, failing */
        convolve_mpi_plan stub;
        memset(&stub, 0, sizeof stub);
        stub.ctx = ctx;
        stub.comm = dup;
        MPI_Comm_rank(dup, &stub.rank);
        MPI_Comm_size(dup, &stub.nranks);
        memset(&mine, 0, sizeof mine);
        st = build(&stub, st, &mine, block_start, in, out, filter, options);
        MPI_Comm_free(&dup);
        return st;
    }
    p->ctx = ctx;
    p->comm = dup;
    MPI_Comm_rank(dup, &p->rank);
    MPI_Comm_size(dup, &p->nranks);
    st = build(p, st, &mine, block_start, in, out, filter, options);
    if (st != CONVOLVE_OK) {
        convolve_mpi_plan_free(p);
        return st;
    }
    *plan = p;
    return CONVOLVE_OK;
}

void convolve_mpi_plan_free(convolve_mpi_plan *p)
{
    if (!p)
        return;
    release(p);
    if (p->comm != MPI_COMM_NULL)
        MPI_Comm_free(&p->comm);
    free(p);
}

convolve_backend convolve_mpi_plan_backend(const convolve_mpi_plan *p)
{
    return p ? p->backend : CONVOLVE_BACKEND_AUTO;
}

const char *convolve_mpi_plan_strategy(const convolve_mpi_plan *p)
{
    return p ? p->strategy : NULL;
}

int convolve_mpi_plan_device(const convolve_mpi_plan *p)
{
    return p ? p->device : -1;
}

convolve_status convolve_mpi_plan_stats(const convolve_mpi_plan *p, convolve_mpi_stats *stats)
{
    if (!p || !stats)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    *stats = p->stats;
    return CONVOLVE_OK;
}
