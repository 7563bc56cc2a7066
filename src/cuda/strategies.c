/*
 * strategies.c - the CUDA backend's strategy table: the convolution
 * chapter's kernels by name, the dimensionalities each serves, its tile
 * extents, the checks that say (with the limit named) when it cannot serve a
 * problem, and the "auto" choice among them.
 */
#include "strategies.h"
#include "kernels.h"
#include "backend.h"
#include "fast.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Filter extents and tap counts the kernels' int loops accept. */
#define CVC_MAX_TAPS ((size_t)INT_MAX / 2)

size_t cvc_acc_size(const cvi_problem *p)
{
    return p->in_type == CONVOLVE_FLOAT64 ? 8 : 4;
}

int cvc_kernel_for(int sid, int ndim)
{
    static const int table[6][3] = {
        /* 1-D              2-D               3-D */
        {CVK_1D_BASIC, CVK_2D_BASIC, CVK_3D_BASIC},
        {CVK_1D_CONSTANT, CVK_2D_CONSTANT, CVK_3D_CONSTANT},
        {CVK_1D_TILED, -1, CVK_3D_TILED},
        {-1, CVK_2D_TILED_IN, -1},
        {-1, CVK_2D_TILED_OUT, -1},
        {CVK_1D_CACHED, CVK_2D_CACHED, CVK_3D_CACHED},
    };
    if (sid < 0 || sid > CVS_CACHED || ndim < 1 || ndim > 3)
        return -1;
    return table[sid][ndim - 1];
}

/* n = a * b * c, SIZE_MAX on overflow. */
static size_t mul3(size_t a, size_t b, size_t c)
{
    size_t r;
    if (!cvi_mul_size(a, b, &r) || !cvi_mul_size(r, c, &r))
        return SIZE_MAX;
    return r;
}

size_t cvc_dynamic_shared(int kernel, const cvi_problem *p)
{
    const size_t acc = cvc_acc_size(p);
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2];
    size_t r;
    switch (kernel) {
    case CVK_1D_TILED:
        r = mul3(CVK_TILED_X - 1 + K2, 1, acc);
        break;
    case CVK_2D_TILED_OUT:
        r = mul3(CVK_TILED_OUT_X - 1 + K2, CVK_TILED_OUT_Y - 1 + K1, acc);
        break;
    case CVK_3D_TILED:
        r = mul3(CVK_TILED_X - 1 + K2, CVK_TILED_Y - 1 + K1, CVK_TILED_Z - 1 + K0);
        r = r == SIZE_MAX ? r : mul3(r, acc, 1);
        break;
    default:
        return 0;
    }
    return r;
}

/* The device's opt-in shared memory per block (48 KiB if not probed). */
static size_t shared_limit(const convolve_context *ctx)
{
    return ctx && ctx->shared_memory_per_block ? ctx->shared_memory_per_block
                                               : (size_t)CVK_DEFAULT_SHARED;
}

/* Limits every CUDA kernel has: int tap loops, and the padded axes of the
 * dimensionality being extents of one. */
static convolve_status check_common(const cvi_problem *p, char *why, size_t why_size)
{
    for (int a = 0; a < 3; a++)
        if (p->ksize[a] > CVC_MAX_TAPS) {
            snprintf(why, why_size, "filter extent %zu on axis %d is over the CUDA kernels' "
                     "limit of %zu", p->ksize[a], a - (3 - p->ndim), CVC_MAX_TAPS);
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
    if (p->kcount > CVC_MAX_TAPS) {
        snprintf(why, why_size, "the filter's %zu weights are over the CUDA kernels' limit of "
                 "%zu", p->kcount, CVC_MAX_TAPS);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    for (int a = 0; a < 3 - p->ndim; a++)
        if (p->shape[a] != 1 || p->ksize[a] != 1) {
            snprintf(why, why_size, "internal: padded axis %d is not of extent 1", a);
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
    return CONVOLVE_OK;
}

/* The filter bank: kcount weights of the accumulation type in 16 KiB. */
static convolve_status check_bank(const cvi_problem *p, char *why, size_t why_size)
{
    size_t cap = p->in_type == CONVOLVE_FLOAT64 ? CVK_BANK_DOUBLES : CVK_BANK_FLOATS;
    if (p->kcount > cap) {
        snprintf(why, why_size, "the filter has %zu weights, more than the %zu %s weights its "
                 "constant bank holds (a %d-byte __grid_constant__ kernel parameter); use "
                 "'basic'", p->kcount, cap, p->in_type == CONVOLVE_FLOAT64 ? "double" : "float",
                 CVK_BANK_BYTES);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return CONVOLVE_OK;
}

/* Dynamic shared memory within the device's opt-in limit. */
static convolve_status check_shared(int kernel, const cvi_problem *p, const convolve_context *ctx,
                                    char *why, size_t why_size)
{
    size_t need = cvc_dynamic_shared(kernel, p), limit = shared_limit(ctx);
    if (need > limit) {
        snprintf(why, why_size, "its input tile needs %zu bytes of shared memory per block "
                 "(the tile plus K - 1 halo cells per axis), over the device's limit of %zu",
                 need, limit);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return CONVOLVE_OK;
}

static convolve_status check_basic(const cvi_strategy *s, const cvi_problem *p,
                                   const convolve_context *ctx, char *why, size_t why_size)
{
    (void)s, (void)ctx;
    return check_common(p, why, why_size);
}

static convolve_status check_banked(const cvi_strategy *s, const cvi_problem *p,
                                    const convolve_context *ctx, char *why, size_t why_size)
{
    convolve_status st;
    if ((st = check_common(p, why, why_size)) != CONVOLVE_OK ||
        (st = check_bank(p, why, why_size)) != CONVOLVE_OK)
        return st;
    int kernel = cvc_kernel_for(s->id, p->ndim);
    if (kernel < 0) {
        snprintf(why, why_size, "it does not serve %d-D arrays", p->ndim);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (s->id == CVS_TILED_IN &&
        (p->ksize[1] > CVK_TILED_IN_MAX_K || p->ksize[2] > CVK_TILED_IN_MAX_K)) {
        snprintf(why, why_size, "its blocks are the %dx%d input tile, so the output tile "
                 "(33 - K per axis) needs filter extents of at most %d; this filter is %zux%zu "
                 "(use 'tiled-out' or 'cached')", CVK_TILED_IN_Y, CVK_TILED_IN_X,
                 CVK_TILED_IN_MAX_K, p->ksize[1], p->ksize[2]);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return check_shared(kernel, p, ctx, why, why_size);
}

static const cvi_strategy k_cuda_strategies[] = {
    {"basic", CONVOLVE_BACKEND_CUDA, 7u, CVS_BASIC,
     "one thread per output, filter read from global memory (chapter 7.2)", check_basic,
     {0, 0, 0}},
    {"constant", CONVOLVE_BACKEND_CUDA, 7u, CVS_CONSTANT,
     "one thread per output, filter in the constant bank as a __grid_constant__ parameter "
     "(7.3)", check_banked, {0, 0, 0}},
    {"tiled", CONVOLVE_BACKEND_CUDA, 1u | 4u, CVS_TILED,
     "blocks the size of the output tile stage input tile plus halo in shared memory (7.4)",
     check_banked, {CVK_TILED_X, CVK_TILED_Y, CVK_TILED_Z}},
    {"tiled-in", CONVOLVE_BACKEND_CUDA, 2u, CVS_TILED_IN,
     "32x32 blocks the size of the input tile; edge threads idle while outputs are computed "
     "(7.4)", check_banked, {CVK_TILED_IN_X, CVK_TILED_IN_Y, 0}},
    {"tiled-out", CONVOLVE_BACKEND_CUDA, 2u, CVS_TILED_OUT,
     "32x32 blocks the size of the output tile; threads loop to stage the input tile (7.4)",
     check_banked, {CVK_TILED_OUT_X, CVK_TILED_OUT_Y, 0}},
    {"cached", CONVOLVE_BACKEND_CUDA, 7u, CVS_CACHED,
     "only the tile's own elements in shared memory; halo cells read through the caches (7.5)",
     check_banked, {CVK_CACHED_X, CVK_CACHED_Y, CVK_CACHED_Z}},
    /* the fast path (src/cuda/fast.c) */
    {"direct", CONVOLVE_BACKEND_CUDA, 7u, CVS_DIRECT,
     "fast: register-blocked tiles staged in shared memory (3-D: planes streamed through "
     "rolling accumulators), specialised at plan time (NVRTC) to the filter, types and "
     "channels; any type, channel count, layout and filter up to 64 taps an axis",
     cvf_check, {0, 0, 0}},
    {"separable", CONVOLVE_BACKEND_CUDA, 2u | 4u, CVS_SEPARABLE,
     "fast: separable filters fused in one pass (2-D: strips keeping x-filtered rows in a "
     "shared-memory ring; 3-D: planes, z taps in registers), up to 257 taps an axis",
     cvf_check, {0, 0, 0}},
    {"fft", CONVOLVE_BACKEND_CUDA, 7u, CVS_FFT,
     "fast: cuFFT on the input extended by the mode, for large filters", cvf_check, {0, 0, 0}},
};

#define CVC_STRATEGY_COUNT (sizeof k_cuda_strategies / sizeof k_cuda_strategies[0])

const cvi_strategy *cvi_cuda_strategies(size_t *count)
{
    *count = CVC_STRATEGY_COUNT;
    return k_cuda_strategies;
}

/* "auto": the first strategy of the dimensionality's preference list that
 * can serve p. The order follows the chapter's analysis (tiles before the
 * constant bank before global memory; cached is left out, as halo reads
 * through the caches lose to staging them); docs/strategies.md has the
 * reasons, and measurements may reorder it. */
const cvi_strategy *cvi_cuda_pick(const convolve_context *ctx, const cvi_problem *p, char *why,
                                  size_t why_size)
{
    static const int order1[] = {CVS_TILED, CVS_CONSTANT, CVS_BASIC, -1};
    static const int order2[] = {CVS_TILED_OUT, CVS_TILED_IN, CVS_CONSTANT, CVS_BASIC, -1};
    static const int order3[] = {CVS_TILED, CVS_CONSTANT, CVS_BASIC, -1};
    const int *order = p->ndim == 1 ? order1 : p->ndim == 2 ? order2 : order3;
    size_t used = 0;
    if (why_size)
        why[0] = '\0';
    const cvi_strategy *fast = cvf_pick(ctx, p, k_cuda_strategies, CVC_STRATEGY_COUNT);
    if (fast)
        return fast;
    for (int i = 0; order[i] >= 0; i++) {
        const cvi_strategy *s = NULL;
        for (size_t j = 0; j < CVC_STRATEGY_COUNT; j++)
            if (k_cuda_strategies[j].id == order[i])
                s = &k_cuda_strategies[j];
        if (!s || !(s->dims >> (p->ndim - 1) & 1))
            continue;
        char reason[CVI_REASON_SIZE];
        if (s->check(s, p, ctx, reason, sizeof reason) == CONVOLVE_OK)
            return s;
        if (used < why_size) {
            int w = snprintf(why + used, why_size - used, "%s%s: %s", used ? "; " : "",
                             s->name, reason);
            used = w < 0 ? why_size : used + (size_t)w;
        }
    }
    return NULL;
}
