/*
 * plan.c - the CUDA backend's device-side plan: making it for a strategy and
 * a problem (a copy of the problem, the weights in the filter bank or in
 * device memory, cuFFT plans for fft), freeing it, and the one launch that
 * runs a plan on device arrays: a chapter kernel, a fast direct kernel, the
 * FFT, or (for layouts the fast direct kernels cannot take) the chapter's
 * constant or basic kernel. Every CUDA call is checked.
 */
#include "plan.h"
#include "backend.h"
#include "fast_cast.h"
#include "fast_direct.h"
#include "fast_direct3d.h"
#include "fast_sep_int.h"
#include "strategies.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- making a plan -------------------------------------------------------- */

static double *copy_doubles(const double *src, size_t n)
{
    double *d = malloc(n * sizeof *d);
    if (d)
        memcpy(d, src, n * sizeof *d);
    return d;
}

/* plan->p = *p, with the plan's own copies of the weights and taps. */
static int copy_problem(cvcu_plan *plan, const cvi_problem *p)
{
    plan->p = *p;
    if (!(plan->weights = copy_doubles(p->weights, p->kcount)))
        return 0;
    plan->p.weights = plan->weights;
    if (p->separable)
        for (int a = 0; a < 3; a++) {
            if (!(plan->taps[a] = copy_doubles(p->taps[a], p->ksize[a])))
                return 0;
            plan->p.taps[a] = plan->taps[a];
        }
    return 1;
}

/* 1 if the byte strides describe contiguous C order with interleaved
 * channels (axes of extent one may have any stride). */
static int is_packed(const size_t shape[3], size_t channels, size_t esize,
                     const ptrdiff_t strides[3], ptrdiff_t cstride)
{
    size_t step = esize;
    if (channels > 1 && cstride != (ptrdiff_t)step)
        return 0;
    step *= channels;
    for (int a = 2; a >= 0; a--) {
        if (shape[a] > 1 && strides[a] != (ptrdiff_t)step)
            return 0;
        step *= shape[a];
    }
    return 1;
}

/* The element sizes, packing flags and kernel arguments of the caller's
 * layouts, from plan->p. */
static void describe_layouts(cvcu_plan *plan)
{
    const cvi_problem *p = &plan->p;
    cvk_args *a = &plan->args;
    plan->in_esize = convolve_dtype_size(p->in_type);
    plan->out_esize = convolve_dtype_size(p->out_type);
    const ptrdiff_t ie = (ptrdiff_t)plan->in_esize, oe = (ptrdiff_t)plan->out_esize;
    for (int i = 0; i < 3; i++) {
        a->n[i] = (long long)p->shape[i];
        a->is[i] = (long long)(p->in_strides[i] / ie); /* exact: layouts are checked */
        a->os[i] = (long long)(p->out_strides[i] / oe);
        a->k[i] = (int)p->ksize[i];
        a->koff[i] = (int)p->koff[i];
    }
    a->ics = (long long)(p->in_cstride / ie);
    a->ocs = (long long)(p->out_cstride / oe);
    a->channels = (long long)p->channels;
    a->in_type = (int)p->in_type;
    a->out_type = (int)p->out_type;
    a->mode = p->mode;
    a->ndim = p->ndim;
    a->cval = p->cval;
    a->cast = p->cast;
    a->divisor = p->divisor;
    a->snap = p->snap;
    plan->in_packed = is_packed(p->shape, p->channels, plan->in_esize, p->in_strides,
                                p->in_cstride);
    plan->out_packed = is_packed(p->shape, p->channels, plan->out_esize, p->out_strides,
                                 p->out_cstride);
}

/* The weights, in the accumulation type, in a new filter bank. The caller
 * has checked that they fit. */
static convolve_status fill_bank(convolve_context *ctx, cvcu_plan *plan)
{
    const cvi_problem *p = &plan->p;
    if (!(plan->bank = calloc(1, sizeof *plan->bank)))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for weights");
    for (size_t i = 0; i < p->kcount; i++) {
        if (cvcu_acc_size(p) == 8)
            plan->bank->w.d[i] = p->weights[i];
        else
            plan->bank->w.f[i] = (float)p->weights[i];
    }
    return CONVOLVE_OK;
}

/* The weights, in the accumulation type, copied to new device memory
 * (plan->d_weights, also the kernels' args.weights). */
static convolve_status upload_weights(convolve_context *ctx, cvcu_plan *plan)
{
    const cvi_problem *p = &plan->p;
    const size_t bytes = p->kcount * cvcu_acc_size(p); /* kcount <= INT_MAX / 2 (checked) */
    void *host = malloc(bytes);
    if (!host)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for weights");
    for (size_t i = 0; i < p->kcount; i++) {
        if (cvcu_acc_size(p) == 8)
            ((double *)host)[i] = p->weights[i];
        else
            ((float *)host)[i] = (float)p->weights[i];
    }
    convolve_status st = cvcu_upload(ctx, host, bytes, &plan->d_weights);
    free(host);
    if (st == CONVOLVE_OK)
        plan->args.weights = plan->d_weights;
    return st;
}

/* 1 if the filter's last `dims` extents are equal. */
static int cube(const cvi_problem *p, int dims)
{
    for (int a = 3 - dims; a < 3; a++)
        if (p->ksize[a] != p->ksize[2])
            return 0;
    return 1;
}

/* 1 if the filter's last `dims` extents are equal and odd. */
static int odd_cube(const cvi_problem *p, int dims)
{
    return p->ksize[2] % 2 == 1 && cube(p, dims);
}

/* 1 if v is a whole number in [0, top]: a value of an integer image. */
static int whole_in(double v, double top)
{
    return v >= 0 && v <= top && v == (double)(long long)v;
}

/* 1 if the batched 2-D register-streaming kernels serve p's filter and
 * element type: float32, a square odd filter over the last two axes that a
 * batched instance serves (the memory-bound sizes:
 * cvk_direct2d_batch_supports), and either a 3-D stack of one channel whose
 * filter has extent 1 along z (the planes; a separable filter's z tap 1)
 * or a 2-D image of several channels (the channels, when planar).
 * CONVOLVE_DIRECT_KERNELS=generated keeps the generated kernels. */
static int batch2d_serves(int id, const cvi_problem *p)
{
    const int sep = id == CVK_SEPARABLE;
    const char *env = getenv("CONVOLVE_DIRECT_KERNELS");
    if ((env && strcmp(env, "generated") == 0) || p->in_type != CONVOLVE_FLOAT32 ||
        !odd_cube(p, 2) || !cvk_direct2d_batch_supports(CONVOLVE_FLOAT32, (int)p->ksize[2], sep))
        return 0;
    return (p->ndim == 3 && p->ksize[0] == 1 && p->channels == 1 &&
            (!sep || p->taps[0][0] == 1.0)) ||
           (p->ndim == 2 && p->channels > 1);
}

/* 1 if the generated kernels (gen.c) run strategy `id` (direct or
 * separable) on p: every case the legacy register-streaming kernels do not
 * serve, and those they serve where the generated ones measured faster
 * (docs/architecture.md, "Measured choices").
 * CONVOLVE_DIRECT_KERNELS=generated or =legacy forces one (for comparing
 * them). */
static int use_generated(int id, const cvi_problem *p)
{
    const int K = (int)p->ksize[2], C = (int)p->channels, t = (int)p->in_type;
    const char *env = getenv("CONVOLVE_DIRECT_KERNELS");
    if (env && strcmp(env, "generated") == 0)
        return 1;
    const int legacy_only = env && strcmp(env, "legacy") == 0;
    if (!legacy_only && p->ndim == 2 && t == CONVOLVE_FLOAT32 && C == 1 && odd_cube(p, 2) &&
        id == CVK_SEPARABLE && p->separable && K >= 15)
        return 1;
    /* the legacy 2-D and 3-D kernels keep integer rows as they are: cval
     * must be one of their values (uint16: the dense kernels; the fused
     * separable one takes cval as a float) */
    if ((p->ndim == 2 || p->ndim == 3) && p->mode == CVI_MODE_CONSTANT &&
        ((p->in_type == CONVOLVE_UINT8 && !whole_in(p->cval, 255)) ||
         (p->in_type == CONVOLVE_UINT16 && id != CVK_SEPARABLE && !whole_in(p->cval, 65535))))
        return 1;
    /* the fused integer kernel needs rows of interleaved channels: other
     * layouts of the images it serves take the generated strips */
    if (id == CVK_SEPARABLE && p->ndim == 2 && p->separable && odd_cube(p, 2) &&
        cvk_isep2d_supports(t, C, K) && !cvcu_fused_int_serves(p))
        return 1;
    if (id == CVK_SEPARABLE)
        return !(p->separable &&
                 ((p->ndim == 2 && odd_cube(p, 2) && cvk_direct2d_supports(t, C, K, 1)) ||
                  (p->ndim == 3 && odd_cube(p, 3) && cvk_direct3d_supports(t, C, K, 1))));
    return !((p->ndim == 1 && odd_cube(p, 1) && cvk_direct1d_supports(t, C, K)) ||
             (p->ndim == 2 && cube(p, 2) && cvk_direct2d_supports(t, C, K, 0)) ||
             (p->ndim == 2 && cvk_direct2d_rect_supports(t, C, (int)p->ksize[1], K)) ||
             (p->ndim == 3 && odd_cube(p, 3) && cvk_direct3d_supports(t, C, K, 0)));
}

/* What the plan's kernels need besides the arguments: the FFT's plans, the
 * generated direct kernel, the weights in device memory (basic), or in the
 * bank (the other chapter kernels; the legacy fast direct kernels' fallback
 * uses the bank when the filter fits, else device memory). */
static convolve_status prepare_kernels(convolve_context *ctx, cvcu_plan *plan)
{
    const cvi_problem *p = &plan->p;
    const size_t bank_cap = cvcu_acc_size(p) == 8 ? CVK_BANK_DOUBLES : CVK_BANK_FLOATS;
    switch (plan->strategy->id) {
    case CVK_FFT: {
        convolve_status st = cvk_fft_create(p, &plan->fft, plan->message, sizeof plan->message);
        if (st != CONVOLVE_OK)
            return cvi_error(ctx, st, "strategy 'fft': %s", plan->message);
        return CONVOLVE_OK;
    }
    case CVK_BASIC: return upload_weights(ctx, plan);
    case CVK_DIRECT:
    case CVK_SEPARABLE:
        if (cvi_truncates(p)) /* fast_cast.cu: the taps go with each launch */
            return CONVOLVE_OK;
        plan->batch2d = batch2d_serves(plan->strategy->id, p);
        if (use_generated(plan->strategy->id, p))
            return cvcu_gen_prepare(ctx, p, plan->strategy->id == CVK_SEPARABLE, &plan->gen);
        return p->kcount <= bank_cap ? fill_bank(ctx, plan) : upload_weights(ctx, plan);
    default: return fill_bank(ctx, plan); /* kcount within the bank (checked) */
    }
}

convolve_status cvcu_prepare(convolve_context *ctx, const cvi_device *dev, const cvi_strategy *s,
                             const cvi_problem *p, void **state)
{
    *state = NULL;
    if (!s || s->backend != CONVOLVE_BACKEND_CUDA)
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "CUDA prepare given a non-CUDA strategy");
    if (!cvi_strategy_serves_ndim(s, p->ndim))
        return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "strategy '%s' does not serve %d-D arrays", s->name, p->ndim);
    (void)dev; /* s serves p on dev: the core checked (cvi_strategy_check) */

    cvcu_plan *plan = calloc(1, sizeof *plan);
    if (!plan || !copy_problem(plan, p)) {
        cvcu_release(plan);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a CUDA plan");
    }
    plan->strategy = s;
    plan->smem = cvcu_dynamic_shared(s->id, p);
    describe_layouts(plan);
    convolve_status status = CONVOLVE_OK;
    cudaError_t e = cudaGetDevice(&plan->device);
    if (e != cudaSuccess) {
        status = cvcu_error(ctx, e, "cudaGetDevice");
        goto fail;
    }
    if (cudaDeviceGetAttribute(&plan->multiprocessors, cudaDevAttrMultiProcessorCount,
                               plan->device) != cudaSuccess)
        plan->multiprocessors = 0; /* the launchers then assume an H200 */
    (void)cudaGetLastError();
    if ((status = prepare_kernels(ctx, plan)) != CONVOLVE_OK)
        goto fail;
    *state = plan;
    return CONVOLVE_OK;
fail:
    cvcu_release(plan);
    return status;
}

void cvcu_window_cost(void *state, size_t *align, size_t *extra)
{
    const cvcu_plan *plan = state;
    *align = plan->strategy->id == CVK_FFT ? cvk_fft_slab_align(&plan->p) : 1;
    *extra = 0;
}

void cvcu_release(void *state)
{
    cvcu_plan *plan = state;
    if (!plan)
        return;
    if (plan->stream) /* its buffers are on their own devices */
        plan->stream_free(plan->stream);
    int prev = plan->device;
    int entered = cvcu_enter_device(plan, &prev) == cudaSuccess;
    /* errors are ignored here: after a failed kernel the context may be gone */
    cvk_fft_destroy(plan->fft);
    cvcu_gen_release(plan->gen);
    if (plan->d_weights)
        (void)cudaFree(plan->d_weights);
    if (entered)
        cvcu_leave_device(plan, prev);
    (void)cudaGetLastError();
    free(plan->bank);
    free(plan->h_in);
    free(plan->h_out);
    free(plan->weights);
    for (int a = 0; a < 3; a++)
        free(plan->taps[a]);
    free(plan);
}

/* ---- launching a plan ---------------------------------------------------- */

/* The FFT on the arrays of a (their strides may differ from the plan's). */
static cudaError_t launch_fft(cvcu_plan *plan, const cvk_args *a, cudaStream_t stream)
{
    const long long ie = (long long)plan->in_esize, oe = (long long)plan->out_esize;
    cvi_problem q = plan->p;
    for (int i = 0; i < 3; i++) {
        q.in_strides[i] = (ptrdiff_t)(a->is[i] * ie);
        q.out_strides[i] = (ptrdiff_t)(a->os[i] * oe);
    }
    q.in_cstride = (ptrdiff_t)(a->ics * ie);
    q.out_cstride = (ptrdiff_t)(a->ocs * oe);
    const cvk_fft_window w = {a->slab_lo, a->slab_r0, a->slab_r1};
    convolve_status st = cvk_fft_execute(plan->fft, &q, a->in, a->out, a->slab ? &w : NULL, stream,
                                         plan->message, sizeof plan->message);
    if (st == CONVOLVE_OK)
        return cudaSuccess;
    return st == CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                                     : cudaErrorLaunchFailure;
}

/* The 3-D streaming kernels (dense or separable) on rows of one channel. */
static cudaError_t launch_direct3d(const cvcu_plan *plan, const cvk_args *a, cudaStream_t stream)
{
    const cvi_problem *p = &plan->p;
    const long long ie = (long long)plan->in_esize, oe = (long long)plan->out_esize;
    cvk_direct3d_args g;
    memset(&g, 0, sizeof g);
    g.in = a->in;
    g.out = a->out;
    for (int i = 0; i < 2; i++) {
        g.in_strides[i] = (ptrdiff_t)(a->is[i] * ie);
        g.out_strides[i] = (ptrdiff_t)(a->os[i] * oe);
    }
    g.depth = a->n[0], g.height = a->n[1], g.width = a->n[2];
    g.channels = (int)a->channels;
    g.ksize = (int)p->ksize[2];
    g.koffz = (int)p->koff[0], g.koffy = (int)p->koff[1], g.koffx = (int)p->koff[2];
    g.mode = p->mode;
    g.cval = p->cval;
    g.in_type = (int)p->in_type, g.out_type = (int)p->out_type;
    g.separable = plan->strategy->id == CVK_SEPARABLE;
    g.weights = p->weights;
    g.taps_z = plan->taps[0], g.taps_y = plan->taps[1], g.taps_x = plan->taps[2];
    g.multiprocessors = plan->multiprocessors;
    return cvk_direct3d_launch(&g, stream);
}

/* The 1-D and 2-D direct kernels (dense or separable) on rows of
 * interleaved channels; batch > 1: on that many images of one channel
 * (batched2d), in_plane and out_plane elements apart. */
static cudaError_t launch_direct(const cvcu_plan *plan, const cvk_args *a, long long batch,
                                 long long in_plane, long long out_plane, cudaStream_t stream)
{
    const cvi_problem *p = &plan->p;
    const long long ie = (long long)plan->in_esize, oe = (long long)plan->out_esize;
    const int two = p->ndim >= 2;
    cvk_direct_args g;
    memset(&g, 0, sizeof g);
    g.batch = batch;
    g.in_plane = (ptrdiff_t)(in_plane * ie);
    g.out_plane = (ptrdiff_t)(out_plane * oe);
    g.in = a->in;
    g.out = a->out;
    g.in_row = two ? (ptrdiff_t)(a->is[1] * ie) : 0;
    g.out_row = two ? (ptrdiff_t)(a->os[1] * oe) : 0;
    g.height = two ? a->n[1] : 1;
    g.width = a->n[2];
    g.channels = batch > 1 ? 1 : (int)a->channels;
    g.ksize = (int)p->ksize[2];
    g.height_taps = two ? (int)p->ksize[1] : 1;
    g.koffy = two ? (int)p->koff[1] : 0;
    g.koffx = (int)p->koff[2];
    g.mode = p->mode;
    g.cval = (float)p->cval;
    g.in_type = (int)p->in_type, g.out_type = (int)p->out_type;
    g.separable = plan->strategy->id == CVK_SEPARABLE;
    g.weights = p->weights;
    g.taps_y = plan->taps[1], g.taps_x = plan->taps[2];
    g.multiprocessors = plan->multiprocessors;
    return two ? cvk_direct2d_launch(&g, stream) : cvk_direct1d_launch(&g, stream);
}

/* scipy's cast on integer images (fast_cast.cu): the plan's taps along y
 * and x (strategies.c's cvcu_cast_serves has checked the case), the tap of
 * axis 0 folded into those along y; a filter along one axis that is not
 * separable has its weights as that axis's taps. */
static cudaError_t launch_cast(const cvcu_plan *plan, const cvk_args *a, cudaStream_t stream)
{
    const cvi_problem *p = &plan->p;
    cvk_cast_args g;
    memset(&g, 0, sizeof g);
    g.in = a->in;
    g.out = a->out;
    g.planes = a->n[0], g.height = a->n[1], g.width = a->n[2];
    for (int i = 0; i < 3; i++) {
        g.is[i] = a->is[i];
        g.os[i] = a->os[i];
    }
    g.ics = a->ics, g.ocs = a->ocs;
    g.channels = (int)a->channels;
    g.type = (int)p->in_type;
    g.ky = (int)p->ksize[1], g.kx = (int)p->ksize[2];
    g.koffy = (int)p->koff[1], g.koffx = (int)p->koff[2];
    g.mode = p->mode;
    g.cval = p->cval;
    g.divisor = p->divisor;
    g.snap = p->snap;
    for (int k = 0; k < g.ky; k++)
        g.ty[k] = p->separable ? p->taps[0][0] * p->taps[1][k] : g.kx == 1 ? p->weights[k] : 1.0;
    for (int k = 0; k < g.kx; k++)
        g.tx[k] = p->separable ? p->taps[2][k] : g.kx == 1 ? 1.0 : p->weights[k];
    g.multiprocessors = plan->multiprocessors;
    return cvk_cast_launch(&g, stream);
}

/* 1 if a plan whose filter a batched kernel serves (plan->batch2d) runs the
 * arrays of a as a batch of images of one channel: rows contiguous along x,
 * and a's stack planes or planar channels; their count and distance
 * (elements) through *batch, *in_plane and *out_plane. Other layouts keep
 * the generated kernels. */
static int batched2d(const cvcu_plan *plan, const cvk_args *a, long long *batch,
                     long long *in_plane, long long *out_plane)
{
    if (!plan->batch2d || a->is[2] != 1 || a->os[2] != 1)
        return 0;
    if (plan->p.ndim == 3)
        *batch = a->n[0], *in_plane = a->is[0], *out_plane = a->os[0];
    else
        *batch = a->channels, *in_plane = a->ics, *out_plane = a->ocs;
    return *batch <= 65535; /* a grid's extent along z */
}

/* 1 if the arrays of a are rows of interleaved channels, contiguous along x. */
static int rows_interleaved(const cvk_args *a)
{
    const long long C = a->channels;
    return a->is[2] == C && a->os[2] == C && (C == 1 || (a->ics == 1 && a->ocs == 1));
}

cudaError_t cvcu_launch(cvcu_plan *plan, const cvk_args *a, cudaStream_t stream)
{
    const int id = plan->strategy->id;
    plan->message[0] = '\0';
    switch (id) {
    case CVK_FFT: return launch_fft(plan, a, stream);
    case CVK_DIRECT:
    case CVK_SEPARABLE:
        if (cvi_truncates(&plan->p))
            return launch_cast(plan, a, stream);
        long long batch, in_plane, out_plane;
        if (batched2d(plan, a, &batch, &in_plane, &out_plane))
            return launch_direct(plan, a, batch, in_plane, out_plane, stream);
        if (plan->gen)
            return cvcu_gen_launch(plan->gen, a->in, a->out, a->is, a->ics, a->os, a->ocs, stream);
        if (!rows_interleaved(a)) /* the chapter's constant (or basic) kernel: any layout */
            return cvk_launch(plan->bank ? CVK_CONSTANT : CVK_BASIC, a, plan->bank, 0, stream);
        return plan->p.ndim == 3 ? launch_direct3d(plan, a, stream)
                                 : launch_direct(plan, a, 1, 0, 0, stream);
    default: return cvk_launch(id, a, plan->bank, plan->smem, stream);
    }
}

convolve_status cvcu_launch_error(convolve_context *ctx, const cvcu_plan *plan, cudaError_t e)
{
    char what[384];
    snprintf(what, sizeof what, "launching strategy '%s'%s%s", plan->strategy->name,
             plan->message[0] ? ": " : "", plan->message);
    return cvcu_error(ctx, e, what);
}
