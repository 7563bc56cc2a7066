/*
 * fast.c - the fast GPU strategies as the CUDA runtime sees them:
 *   direct     register-streaming kernels (fast_direct.cu, fast_direct3d.cu)
 *              for odd square/cubic filters: 1-D K <= 33, 2-D K <= 17,
 *              3-D K <= 9 (float32; uint8 gray/RGB 2-D K <= 5);
 *   separable  the fused one-pass 2-D kernel for separable filters, K <= 33;
 *   fft        cuFFT for any filter, every mode (fast_fft.cu);
 * their checks, their plans and launches, and the "auto" model that picks
 * among them and the chapter's kernels.
 */
#include "fast.h"
#include "fast_direct.h"
#include "fast_direct3d.h"
#include "fast_fft.h"
#include "gen_plan.h"
#include "strategies.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* auto: dense filters of up to this many taps run direct, larger ones by
 * FFT. Measured on an H100 (BENCHMARKS.md): direct beat the FFT at every
 * size the legacy kernels were compiled for (2-D 17x17: 1.1 ms against 3.4
 * ms on 8192^2; 3-D 7x7x7: 0.42 against 0.88 ms on 256^3). */
#define CVF_DIRECT_OVER_FFT 400

struct cvf_plan {
    int sid;
    cvi_problem p;              /* the plan's problem; weights point into this plan */
    double *weights, *taps[3];
    int multiprocessors;
    cvi_fft_plan *fft;
    cvcu_gen_plan *gen;         /* the generated kernels (gen.c), when they serve */
    cvk_bank *bank;             /* fallback: the constant kernel's bank, or */
    void *d_weights;            /* the basic kernel's weights in device memory */
    char message[256];
};

int cvf_is_fast(int sid)
{
    return sid == CVS_DIRECT || sid == CVS_SEPARABLE || sid == CVS_FFT;
}

static int odd_cube(const cvi_problem *p, int dims)
{
    size_t K = p->ksize[2];
    if (K % 2 == 0)
        return 0;
    for (int a = 3 - dims; a < 3; a++)
        if (p->ksize[a] != K)
            return 0;
    return 1;
}

convolve_status cvf_check(const cvi_strategy *s, const cvi_problem *p, const convolve_context *ctx,
                          char *why, size_t n)
{
    switch (s->id) {
    case CVS_DIRECT:
        return cvcu_gen_serves(p, 0, why, n) ? CONVOLVE_OK : CONVOLVE_ERROR_UNSUPPORTED;
    case CVS_SEPARABLE:
        if (p->ndim < 2) {
            snprintf(why, n, "a 1-D filter is its own separable form; use 'direct'");
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
        return cvcu_gen_serves(p, 1, why, n) ? CONVOLVE_OK : CONVOLVE_ERROR_UNSUPPORTED;
    case CVS_FFT: {
        size_t bytes = cvi_fft_workspace_bytes(p);
        size_t total = ctx ? ctx->device.total_memory : 0;
        if (bytes == 0) {
            snprintf(why, n, "its transform sizes overflow");
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
        if (total && bytes > total / 10 * 9) {
            snprintf(why, n, "its buffers need %zu MiB, more than the device's %zu MiB allows",
                     bytes >> 20, total >> 20);
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
        return CONVOLVE_OK;
    }
    }
    snprintf(why, n, "internal: unknown fast strategy %d", s->id);
    return CONVOLVE_ERROR_INTERNAL;
}

void cvf_release(cvf_plan *f)
{
    if (!f)
        return;
    cvi_fft_destroy(f->fft);
    cvcu_gen_release(f->gen);
    if (f->d_weights)
        (void)cudaFree(f->d_weights);
    free(f->bank);
    free(f->weights);
    for (int a = 0; a < 3; a++)
        free(f->taps[a]);
    free(f);
}

static double *copy_doubles(const double *src, size_t n)
{
    double *d = malloc(n * sizeof *d);
    if (d)
        memcpy(d, src, n * sizeof *d);
    return d;
}

/* 1 if the generated kernels (gen.c) run strategy sid on p: every case
 * the legacy register-streaming kernels do not serve, and those they serve
 * where the generated ones measured faster on the H100 (BENCHMARKS.md,
 * 8192^2 float32: dense 3x3 0.28 against 0.33 ms, 9x9 0.44 against 0.54;
 * separable 17 taps 0.46 against 0.63). CONVOLVE_DIRECT_KERNELS=generated
 * or =legacy forces one (for comparing them). */
static int use_generated(int sid, const cvi_problem *p)
{
    const int K = (int)p->ksize[2], C = (int)p->channels, t = (int)p->in_type;
    const char *env = getenv("CONVOLVE_DIRECT_KERNELS");
    if (env && strcmp(env, "generated") == 0)
        return 1;
    const int legacy_only = env && strcmp(env, "legacy") == 0;
    if (!legacy_only && p->ndim == 2 && t == CONVOLVE_FLOAT32 && C == 1 && odd_cube(p, 2) &&
        (sid == CVS_SEPARABLE ? p->separable && K >= 11 : K == 3 || (K >= 9 && K <= 15)))
        return 1;
    /* the legacy 2-D kernels keep uint8 rows as bytes: cval must be one */
    if (p->ndim == 2 && p->in_type == CONVOLVE_UINT8 && p->mode == CVI_MODE_CONSTANT &&
        !(p->cval >= 0 && p->cval <= 255 && p->cval == (double)(int)p->cval))
        return 1;
    if (sid == CVS_SEPARABLE)
        return !(p->ndim == 2 && p->separable && odd_cube(p, 2) && cvi_fd2d_supports(t, C, K, 1));
    return !((p->ndim == 1 && odd_cube(p, 1) && cvi_fd1d_supports(t, C, K)) ||
             (p->ndim == 2 && odd_cube(p, 2) && cvi_fd2d_supports(t, C, K, 0)) ||
             (p->ndim == 3 && odd_cube(p, 3) && cvi_f3_supports(t, C, K)));
}

convolve_status cvf_prepare(convolve_context *ctx, const cvi_strategy *s, const cvi_problem *p,
                            cvf_plan **out)
{
    *out = NULL;
    cvf_plan *f = calloc(1, sizeof *f);
    if (!f || !(f->weights = copy_doubles(p->weights, p->kcount))) {
        free(f);
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a CUDA plan");
    }
    f->sid = s->id;
    f->p = *p;
    f->p.weights = f->weights;
    if (p->separable)
        for (int a = 0; a < 3; a++) {
            if (!(f->taps[a] = copy_doubles(p->taps[a], p->ksize[a]))) {
                cvf_release(f);
                return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for taps");
            }
            f->p.taps[a] = f->taps[a];
        }
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&f->multiprocessors, cudaDevAttrMultiProcessorCount, dev) !=
            cudaSuccess)
        f->multiprocessors = 0; /* the launchers assume an H100/H200 */
    (void)cudaGetLastError();

    if (s->id != CVS_FFT && use_generated(s->id, p)) {
        convolve_status st = cvcu_gen_prepare(ctx, &f->p, s->id == CVS_SEPARABLE, &f->gen);
        if (st != CONVOLVE_OK) {
            cvf_release(f);
            return st;
        }
    } else if (s->id == CVS_FFT) {
        convolve_status st = cvi_fft_create(&f->p, &f->fft, f->message, sizeof f->message);
        if (st != CONVOLVE_OK) {
            cvi_error(ctx, st, "strategy 'fft': %s", f->message);
            cvf_release(f);
            return st;
        }
    } else {
        /* the fallback for device layouts the fast kernels cannot take */
        const int dbl = p->in_type == CONVOLVE_FLOAT64;
        const size_t cap = dbl ? CVK_BANK_DOUBLES : CVK_BANK_FLOATS;
        if (p->kcount <= cap) {
            if (!(f->bank = calloc(1, sizeof *f->bank))) {
                cvf_release(f);
                return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for weights");
            }
            for (size_t i = 0; i < p->kcount; i++) {
                if (dbl)
                    f->bank->w.d[i] = p->weights[i];
                else
                    f->bank->w.f[i] = (float)p->weights[i];
            }
        } else {
            size_t bytes = p->kcount * (dbl ? 8 : 4);
            void *host = malloc(bytes);
            cudaError_t e = host ? cudaMalloc(&f->d_weights, bytes) : cudaErrorMemoryAllocation;
            if (e == cudaSuccess) {
                for (size_t i = 0; i < p->kcount; i++) {
                    if (dbl)
                        ((double *)host)[i] = p->weights[i];
                    else
                        ((float *)host)[i] = (float)p->weights[i];
                }
                e = cudaMemcpy(f->d_weights, host, bytes, cudaMemcpyHostToDevice);
            }
            free(host);
            if (e != cudaSuccess) {
                cvf_release(f);
                return cvi_error(ctx, e == cudaErrorMemoryAllocation
                                          ? CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY
                                          : CONVOLVE_ERROR_DEVICE,
                                 "CUDA: uploading the filter weights failed: %s",
                                 cudaGetErrorString(e));
            }
        }
    }
    *out = f;
    return CONVOLVE_OK;
}

const char *cvf_message(const cvf_plan *f)
{
    return f ? f->message : "";
}

/* The chapter's constant (or basic) kernel: any layout. */
static cudaError_t launch_fallback(cvf_plan *f, const cvk_args *a, cudaStream_t stream)
{
    cvk_args b = *a;
    int kernel = cvc_kernel_for(f->bank ? CVS_CONSTANT : CVS_BASIC, f->p.ndim);
    b.weights = f->d_weights;
    return cvk_launch(kernel, &b, f->bank, 0, stream);
}

/* 1 if the arrays of a are rows of interleaved channels, contiguous along x. */
static int rows_interleaved(const cvk_args *a)
{
    const long long C = a->channels;
    return a->is[2] == C && a->os[2] == C && (C == 1 || (a->ics == 1 && a->ocs == 1));
}

cudaError_t cvf_launch(cvf_plan *f, const cvk_args *a, cudaStream_t stream)
{
    const cvi_problem *p = &f->p;
    const long long ie = (long long)convolve_dtype_size(p->in_type);
    const long long oe = (long long)convolve_dtype_size(p->out_type);
    f->message[0] = '\0';
    if (f->sid == CVS_FFT) {
        cvi_problem q = *p;
        for (int i = 0; i < 3; i++) {
            q.in_strides[i] = (ptrdiff_t)(a->is[i] * ie);
            q.out_strides[i] = (ptrdiff_t)(a->os[i] * oe);
        }
        q.in_cstride = (ptrdiff_t)(a->ics * ie);
        q.out_cstride = (ptrdiff_t)(a->ocs * oe);
        convolve_status st = cvi_fft_execute(f->fft, &q, a->in, a->out, stream, f->message,
                                             sizeof f->message);
        if (st == CONVOLVE_OK)
            return cudaSuccess;
        return st == CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY ? cudaErrorMemoryAllocation
                                                         : cudaErrorLaunchFailure;
    }
    if (f->gen) {
        const long long is[3] = {a->is[0], a->is[1], a->is[2]};
        const long long os[3] = {a->os[0], a->os[1], a->os[2]};
        return cvcu_gen_launch(f->gen, a->in, a->out, is, a->ics, os, a->ocs, stream);
    }
    if (!rows_interleaved(a))
        return launch_fallback(f, a, stream);
    if (p->ndim == 3) {
        cvi_f3_args g;
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
        g.cval = (float)p->cval;
        g.in_type = (int)p->in_type, g.out_type = (int)p->out_type;
        g.weights = p->weights;
        g.multiprocessors = f->multiprocessors;
        return cvi_f3_launch(&g, stream);
    }
    cvi_fd2d_args g;
    memset(&g, 0, sizeof g);
    g.in = a->in;
    g.out = a->out;
    g.in_row = p->ndim == 2 ? (ptrdiff_t)(a->is[1] * ie) : 0;
    g.out_row = p->ndim == 2 ? (ptrdiff_t)(a->os[1] * oe) : 0;
    g.height = p->ndim == 2 ? a->n[1] : 1;
    g.width = a->n[2];
    g.channels = (int)a->channels;
    g.ksize = (int)p->ksize[2];
    g.height_taps = p->ndim == 2 ? (int)p->ksize[1] : 1;
    g.koffy = p->ndim == 2 ? (int)p->koff[1] : 0;
    g.koffx = (int)p->koff[2];
    g.mode = p->mode;
    g.cval = (float)p->cval;
    g.in_type = (int)p->in_type, g.out_type = (int)p->out_type;
    g.separable = f->sid == CVS_SEPARABLE;
    g.weights = p->weights;
    g.taps_y = f->taps[1], g.taps_x = f->taps[2];
    g.multiprocessors = f->multiprocessors;
    return p->ndim == 1 ? cvi_fd1d_launch(&g, stream) : cvi_fd2d_launch(&g, stream);
}

static const cvi_strategy *find(const cvi_strategy *table, size_t count, int sid)
{
    for (size_t i = 0; i < count; i++)
        if (table[i].id == sid)
            return &table[i];
    return NULL;
}

static int serves(const cvi_strategy *s, const convolve_context *ctx, const cvi_problem *p)
{
    char why[CVI_REASON_SIZE];
    return s && (s->dims >> (p->ndim - 1) & 1) && cvf_check(s, p, ctx, why, sizeof why) == 0;
}

const cvi_strategy *cvf_pick(const convolve_context *ctx, const cvi_problem *p,
                             const cvi_strategy *table, size_t count)
{
    const cvi_strategy *sep = find(table, count, CVS_SEPARABLE);
    const cvi_strategy *dir = find(table, count, CVS_DIRECT);
    const cvi_strategy *fft = find(table, count, CVS_FFT);
    /* a fused separable pass costs 4K flops an output: it beats both others */
    if (serves(sep, ctx, p))
        return sep;
    /* dense: direct up to about 400 taps (20 x 20, 7 x 7 x 7), where its
     * 2 flops a tap meet the FFT's cost nearly independent of the filter */
    if (p->kcount <= CVF_DIRECT_OVER_FFT && serves(dir, ctx, p))
        return dir;
    if (serves(fft, ctx, p))
        return fft;
    if (serves(dir, ctx, p))
        return dir;
    return NULL;
}
