/*
 * strategies.c - the CUDA backend's strategy table: the convolution
 * chapter's kernels and the fast kernels by name, the dimensionalities each
 * serves, its tile extents, the checks that say (with the limit named) when
 * it cannot serve a problem, and the whole "auto" choice among them.
 */
#include "strategies.h"
#include "backend.h"
#include "fast_cast.h"
#include "fast_fft.h"
#include "fast_sep_int.h"
#include "gen_plan.h"
#include "kernels.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Filter extents and tap counts the kernels' int loops accept. */
#define CVCU_MAX_TAPS ((size_t)INT_MAX / 2)

/* auto: dense filters of up to this many taps run direct, larger ones by
 * FFT: direct beat the FFT at every size the legacy kernels were compiled
 * for (this and the two below: docs/architecture.md, "Measured choices"). */
#define CVCU_DIRECT_OVER_FFT 400
/* Separable 2-D filters of at most this many dense taps (5 x 5) run direct:
 * the dense tile keeps more warps busy than the separable strip, whose
 * ring of rows limits its occupancy. */
#define CVCU_DIRECT_OVER_SEPARABLE 25
/* Separable filters whose extents sum past this run by FFT: the strip's
 * cost grows with the taps, the FFT's hardly. */
#define CVCU_FFT_OVER_SEPARABLE 300

int cvcu_fused_int_serves(const cvi_problem *p)
{
    /* a slab's rows are packed, but it runs what the whole array's one-shot
     * run does (cvi_rows_interleaved), so that their bytes agree */
    return p->ndim == 2 && p->separable && p->ksize[1] == p->ksize[2] && p->ksize[2] % 2 == 1 &&
           cvi_rows_interleaved(p) &&
           cvk_isep2d_supports((int)p->in_type, (int)p->channels, (int)p->ksize[2]);
}

size_t cvcu_acc_size(const cvi_problem *p)
{
    return p->in_type == CONVOLVE_FLOAT64 || cvi_truncates(p) ? 8 : 4;
}

/* n = a * b * c, SIZE_MAX on overflow. */
static size_t mul3(size_t a, size_t b, size_t c)
{
    size_t r;
    if (!cvi_mul_size(a, b, &r) || !cvi_mul_size(r, c, &r))
        return SIZE_MAX;
    return r;
}

size_t cvcu_dynamic_shared(int strategy, const cvi_problem *p)
{
    const size_t acc = cvcu_acc_size(p);
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2];
    size_t r;
    if (strategy == CVK_TILED && p->ndim == 1)
        return mul3(CVK_TILED_X - 1 + K2, 1, acc);
    if (strategy == CVK_TILED_OUT && p->ndim == 2)
        return mul3(CVK_TILED_OUT_X - 1 + K2, CVK_TILED_OUT_Y - 1 + K1, acc);
    if (strategy == CVK_TILED && p->ndim == 3) {
        r = mul3(CVK_TILED_X - 1 + K2, CVK_TILED_Y - 1 + K1, CVK_TILED_Z - 1 + K0);
        return r == SIZE_MAX ? r : mul3(r, acc, 1);
    }
    return 0;
}

/* ---- the chapter's kernels' checks ------------------------------------ */

/* The device's opt-in shared memory per block (48 KiB if not probed). */
static size_t shared_limit(const cvi_device *dev)
{
    return dev && dev->shared_memory_per_block ? dev->shared_memory_per_block
                                               : (size_t)CVK_DEFAULT_SHARED;
}

/* Limits every chapter kernel has: int tap loops, and the padded axes of
 * the dimensionality being extents of one. */
static convolve_status check_common(const cvi_problem *p, char *why, size_t why_size)
{
    for (int a = 0; a < 3; a++)
        if (p->ksize[a] > CVCU_MAX_TAPS) {
            snprintf(why, why_size,
                     "filter extent %zu on axis %d is over the CUDA kernels' "
                     "limit of %zu",
                     p->ksize[a], a - (3 - p->ndim), CVCU_MAX_TAPS);
            return CONVOLVE_ERROR_UNSUPPORTED;
        }
    if (p->kcount > CVCU_MAX_TAPS) {
        snprintf(why, why_size,
                 "the filter's %zu weights are over the CUDA kernels' limit of "
                 "%zu",
                 p->kcount, CVCU_MAX_TAPS);
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
    const int dbl = cvcu_acc_size(p) == 8;
    size_t cap = dbl ? CVK_BANK_DOUBLES : CVK_BANK_FLOATS;
    if (p->kcount > cap) {
        snprintf(why, why_size,
                 "the filter has %zu weights, more than the %zu %s weights its "
                 "constant bank holds (a %d-byte __grid_constant__ kernel parameter); use "
                 "'basic'",
                 p->kcount, cap, dbl ? "double" : "float", CVK_BANK_BYTES);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return CONVOLVE_OK;
}

/* Dynamic shared memory within the device's opt-in limit. */
static convolve_status check_shared(int strategy, const cvi_problem *p, const cvi_device *dev,
                                    char *why, size_t why_size)
{
    size_t need = cvcu_dynamic_shared(strategy, p), limit = shared_limit(dev);
    if (need > limit) {
        snprintf(why, why_size,
                 "its input tile needs %zu bytes of shared memory per block "
                 "(the tile plus K - 1 halo cells per axis), over the device's limit of %zu",
                 need, limit);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return CONVOLVE_OK;
}

/* scipy's cast (CONVOLVE_CAST_TRUNCATE) sums in double: basic and constant
 * have double instances for integer inputs; direct and separable run the
 * integer-image kernel (fast_cast.cu) where cvcu_cast_serves says so (their
 * checks); the others refuse it. */
static convolve_status check_cast(const cvi_strategy *s, const cvi_problem *p, char *why,
                                  size_t why_size)
{
    if (!cvi_truncates(p) || s->id == CVK_BASIC || s->id == CVK_CONSTANT)
        return CONVOLVE_OK;
    snprintf(why, why_size,
             "it computes integer data in float: scipy's cast "
             "(CONVOLVE_CAST_TRUNCATE), which sums in double, runs on 'basic' or 'constant' "
             "(and on 'direct' and 'separable' for uint8 or uint16 images of 1 to %d channels "
             "filtered along y and x by separable or one-axis filters of up to %d taps an axis)",
             CVK_CAST_MAX_CHANNELS, CVK_CAST_MAX_K);
    return CONVOLVE_ERROR_UNSUPPORTED;
}

int cvcu_cast_serves(const cvi_problem *p, char *why, size_t n)
{
    const size_t K0 = p->ksize[0], K1 = p->ksize[1], K2 = p->ksize[2];
    if (p->in_type != p->out_type ||
        (p->in_type != CONVOLVE_UINT8 && p->in_type != CONVOLVE_UINT16))
        snprintf(why, n,
                 "its kernel for scipy's cast takes uint8 to uint8 or uint16 to "
                 "uint16; this is %s to %s",
                 convolve_dtype_name(p->in_type), convolve_dtype_name(p->out_type));
    else if (p->channels > CVK_CAST_MAX_CHANNELS)
        snprintf(why, n,
                 "its kernel for scipy's cast takes 1 to %d interleaved channels, not "
                 "%zu",
                 CVK_CAST_MAX_CHANNELS, p->channels);
    else if (K0 != 1)
        snprintf(why, n,
                 "its kernel for scipy's cast filters along y and x only; this filter "
                 "has %zu taps along axis 0",
                 K0);
    else if (K1 > CVK_CAST_MAX_K || K2 > CVK_CAST_MAX_K || p->folded)
        snprintf(why, n,
                 "its kernel for scipy's cast takes up to %d taps an axis; this filter "
                 "is %zux%zu",
                 CVK_CAST_MAX_K, K1, K2);
    else if (!p->separable && K1 > 1 && K2 > 1)
        snprintf(why, n,
                 "its kernel for scipy's cast takes separable filters (or filters "
                 "along one axis); this %zux%zu filter is dense",
                 K1, K2);
    else
        return 1;
    return 0;
}

static convolve_status check_basic(const cvi_strategy *s, const cvi_problem *p,
                                   const cvi_device *dev, char *why, size_t why_size)
{
    (void)s, (void)dev;
    return check_common(p, why, why_size);
}

/* constant, tiled, tiled-in, tiled-out and cached: the weights in the bank. */
static convolve_status check_banked(const cvi_strategy *s, const cvi_problem *p,
                                    const cvi_device *dev, char *why, size_t why_size)
{
    convolve_status st;
    if ((st = check_common(p, why, why_size)) != CONVOLVE_OK ||
        (st = check_cast(s, p, why, why_size)) != CONVOLVE_OK ||
        (st = check_bank(p, why, why_size)) != CONVOLVE_OK)
        return st;
    if (!cvi_strategy_serves_ndim(s, p->ndim)) {
        snprintf(why, why_size, "it does not serve %d-D arrays", p->ndim);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (s->id == CVK_TILED_IN &&
        (p->ksize[1] > CVK_TILED_IN_MAX_K || p->ksize[2] > CVK_TILED_IN_MAX_K)) {
        snprintf(why, why_size,
                 "its blocks are the %dx%d input tile, so the output tile "
                 "(%d - K per axis) needs filter extents of at most %d; this filter is %zux%zu "
                 "(use 'tiled-out' or 'cached')",
                 CVK_TILED_IN_Y, CVK_TILED_IN_X, CVK_TILED_IN_X + 1, CVK_TILED_IN_MAX_K,
                 p->ksize[1], p->ksize[2]);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    return check_shared(s->id, p, dev, why, why_size);
}

/* ---- the fast kernels' checks ------------------------------------------ */

/* direct and separable: the generated kernels (gen.c) serve every case the
 * legacy register-streaming kernels serve, and more. */
static convolve_status check_direct(const cvi_strategy *s, const cvi_problem *p,
                                    const cvi_device *dev, char *why, size_t n)
{
    (void)s, (void)dev;
    if (cvi_truncates(p))
        return cvcu_cast_serves(p, why, n) ? CONVOLVE_OK : CONVOLVE_ERROR_UNSUPPORTED;
    return cvcu_gen_serves(p, 0, why, n) ? CONVOLVE_OK : CONVOLVE_ERROR_UNSUPPORTED;
}

static convolve_status check_separable(const cvi_strategy *s, const cvi_problem *p,
                                       const cvi_device *dev, char *why, size_t n)
{
    (void)s, (void)dev;
    if (p->ndim < 2) {
        snprintf(why, n, "a 1-D filter is its own separable form; use 'direct'");
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (cvi_truncates(p) && !p->separable) {
        snprintf(why, n,
                 "the filter is not separable (under scipy's cast, dense weights are "
                 "summed as given)");
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (cvi_truncates(p))
        return cvcu_cast_serves(p, why, n) ? CONVOLVE_OK : CONVOLVE_ERROR_UNSUPPORTED;
    return cvcu_gen_serves(p, 1, why, n) ? CONVOLVE_OK : CONVOLVE_ERROR_UNSUPPORTED;
}

/* The range check counts the FFT's transforms at this many points, more
 * than a device holds, whatever the shape: a slab's sub-problem gets the
 * plan's answer. */
#define CVCU_FFT_MAX_POINTS 68719476736.0 /* 2^36 */

static convolve_status check_fft(const cvi_strategy *s, const cvi_problem *p, const cvi_device *dev,
                                 char *why, size_t n)
{
    if (check_cast(s, p, why, n) != CONVOLVE_OK)
        return CONVOLVE_ERROR_UNSUPPORTED;
    size_t bytes = cvk_fft_workspace_bytes(p);
    size_t total = dev ? dev->info.total_memory : 0;
    if (bytes == 0) {
        snprintf(why, n, "its transform sizes overflow");
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    if (total && bytes > total / 10 * 9) {
        snprintf(why, n, "its buffers need %zu MiB, more than the device's %zu MiB allows",
                 bytes >> 20, total >> 20);
        return CONVOLVE_ERROR_UNSUPPORTED;
    }
    /* float64 inputs transform in double, the others in float (fast_fft.cu) */
    return cvi_fft_range(p, p->in_type == CONVOLVE_FLOAT64, CVCU_FFT_MAX_POINTS, -1.0, why, n);
}

/* ---- the table ---------------------------------------------------------- */

/* Indexed by id (kernels.h); the order is the public strategy list's. */
const cvi_strategy cvcu_strategies[CVK_STRATEGY_COUNT] = {
    [CVK_BASIC] = {"basic",
                   CONVOLVE_BACKEND_CUDA,
                   CVI_DIMS_ALL,
                   CVK_BASIC,
                   "one thread per output, filter read from global memory (chapter 7.2)",
                   check_basic,
                   {0, 0, 0}},
    [CVK_CONSTANT] = {"constant",
                      CONVOLVE_BACKEND_CUDA,
                      CVI_DIMS_ALL,
                      CVK_CONSTANT,
                      "one thread per output, filter in the constant bank as a "
                      "__grid_constant__ parameter (7.3)",
                      check_banked,
                      {0, 0, 0}},
    [CVK_TILED] = {"tiled",
                   CONVOLVE_BACKEND_CUDA,
                   CVI_DIMS_1D | CVI_DIMS_3D,
                   CVK_TILED,
                   "blocks the size of the output tile stage input tile plus halo in shared "
                   "memory (7.4)",
                   check_banked,
                   {CVK_TILED_X, CVK_TILED_Y, CVK_TILED_Z}},
    [CVK_TILED_IN] = {"tiled-in",
                      CONVOLVE_BACKEND_CUDA,
                      CVI_DIMS_2D,
                      CVK_TILED_IN,
                      "32x32 blocks the size of the input tile; edge threads idle while "
                      "outputs are computed (7.4)",
                      check_banked,
                      {CVK_TILED_IN_X, CVK_TILED_IN_Y, 0}},
    [CVK_TILED_OUT] = {"tiled-out",
                       CONVOLVE_BACKEND_CUDA,
                       CVI_DIMS_2D,
                       CVK_TILED_OUT,
                       "32x32 blocks the size of the output tile; threads loop to stage the "
                       "input tile (7.4)",
                       check_banked,
                       {CVK_TILED_OUT_X, CVK_TILED_OUT_Y, 0}},
    [CVK_CACHED] = {"cached",
                    CONVOLVE_BACKEND_CUDA,
                    CVI_DIMS_ALL,
                    CVK_CACHED,
                    "only the tile's own elements in shared memory; halo cells read through "
                    "the caches (7.5)",
                    check_banked,
                    {CVK_CACHED_X, CVK_CACHED_Y, CVK_CACHED_Z}},
    [CVK_DIRECT] = {"direct",
                    CONVOLVE_BACKEND_CUDA,
                    CVI_DIMS_ALL,
                    CVK_DIRECT,
                    "fast: register-blocked tiles staged in shared memory (3-D: planes "
                    "streamed through rolling accumulators), specialised at plan time (NVRTC) "
                    "to the filter, types and channels; any type, channel count, layout and "
                    "filter up to 64 taps an axis",
                    check_direct,
                    {0, 0, 0}},
    [CVK_SEPARABLE] = {"separable",
                       CONVOLVE_BACKEND_CUDA,
                       CVI_DIMS_2D | CVI_DIMS_3D,
                       CVK_SEPARABLE,
                       "fast: separable filters fused in one pass (2-D: strips keeping "
                       "x-filtered rows in a shared-memory ring; 3-D: planes, z taps in "
                       "registers), up to 257 taps an axis",
                       check_separable,
                       {0, 0, 0}},
    [CVK_FFT] = {"fft",
                 CONVOLVE_BACKEND_CUDA,
                 CVI_DIMS_ALL,
                 CVK_FFT,
                 "fast: cuFFT on the input extended by the mode, for large filters",
                 check_fft,
                 {0, 0, 0}},
};

/* 1 if strategy `id` serves p. */
static int serves(int id, const cvi_device *dev, const cvi_problem *p, char *why, size_t why_size)
{
    const cvi_strategy *s = &cvcu_strategies[id];
    return cvi_strategy_serves_ndim(s, p->ndim) &&
           s->check(s, p, dev, why, why_size) == CONVOLVE_OK;
}

/* "auto" on the GPU. First the fast kernels, by a roofline model: a fused
 * separable pass (4K flops an output) beats both others, except for small
 * 2-D filters (direct) and very long ones (FFT), as measured; dense filters run
 * direct up to CVCU_DIRECT_OVER_FFT taps (20 x 20, 7 x 7 x 7), where its 2
 * flops a tap meet the FFT's cost nearly independent of the filter, then by
 * FFT, then direct where the FFT cannot serve. Else the first chapter
 * strategy of the dimensionality's preference list that can serve p: the
 * order follows the chapter's analysis (tiles before the constant bank
 * before global memory; cached is left out, as halo reads through the
 * caches lose to staging them); docs/strategies.md has the reasons, and
 * measurements may reorder it. */
const cvi_strategy *cvcu_pick(const cvi_device *dev, const cvi_problem *p, char *why,
                              size_t why_size)
{
    static const int order1[] = {CVK_TILED, CVK_CONSTANT, CVK_BASIC, -1};
    static const int order2[] = {CVK_TILED_OUT, CVK_TILED_IN, CVK_CONSTANT, CVK_BASIC, -1};
    static const int order3[] = {CVK_TILED, CVK_CONSTANT, CVK_BASIC, -1};
    const int *order = p->ndim == 1 ? order1 : p->ndim == 2 ? order2 : order3;
    char reason[CVI_REASON_SIZE];
    size_t used = 0;
    if (why_size)
        why[0] = '\0';
    if (serves(CVK_SEPARABLE, dev, p, reason, sizeof reason)) {
        const size_t taps = p->ksize[0] + p->ksize[1] + p->ksize[2];
        /* the fused integer kernels (fast_sep_int.cu) beat the dense tile:
         * H100, uint8 RGBA 4096^2 box:2 0.248-0.251 against 0.400-0.424 ms */
        if (p->ndim == 2 && p->kcount <= CVCU_DIRECT_OVER_SEPARABLE && !cvcu_fused_int_serves(p) &&
            serves(CVK_DIRECT, dev, p, reason, sizeof reason))
            return &cvcu_strategies[CVK_DIRECT];
        if (taps > CVCU_FFT_OVER_SEPARABLE && serves(CVK_FFT, dev, p, reason, sizeof reason))
            return &cvcu_strategies[CVK_FFT];
        return &cvcu_strategies[CVK_SEPARABLE];
    }
    if (p->kcount <= CVCU_DIRECT_OVER_FFT && serves(CVK_DIRECT, dev, p, reason, sizeof reason))
        return &cvcu_strategies[CVK_DIRECT];
    if (serves(CVK_FFT, dev, p, reason, sizeof reason))
        return &cvcu_strategies[CVK_FFT];
    if (serves(CVK_DIRECT, dev, p, reason, sizeof reason))
        return &cvcu_strategies[CVK_DIRECT];
    for (int i = 0; order[i] >= 0; i++) {
        const cvi_strategy *s = &cvcu_strategies[order[i]];
        if (serves(order[i], dev, p, reason, sizeof reason))
            return s;
        if (cvi_strategy_serves_ndim(s, p->ndim) && used < why_size) {
            int w = snprintf(why + used, why_size - used, "%s%s: %s", used ? "; " : "", s->name,
                             reason);
            used = w < 0 ? why_size : used + (size_t)w;
        }
    }
    return NULL;
}

void cvcu_device_key(const cvi_device *dev, const cvi_problem *p, char *key, size_t size)
{
    (void)p;
    snprintf(key, size, "cuda:%s", dev->info.name);
}

/* ---- the estimate for AUTO's choice of backend ---------------------------- */

/* Starting CUDA in a process (driver, context; the first call pays it).
 * This constant and the four below as measured: docs/architecture.md,
 * "Measured choices". */
#define CVCU_START_MS 300.0
/* Host <-> device copies of pageable host arrays, bytes (in plus out) per
 * millisecond: in one shot, cudaMemcpy; streamed (from CVI_STREAM_MIN_BYTES
 * on), staged by host threads while the device copies, into an output
 * whose pages are there (a new one's page faults: gpu_pays in src/plan.c),
 * plus the pipeline's start (workers woken, the first slab's copy in). */
#define CVCU_HOST_BYTES_PER_MS 10e6
#define CVCU_STREAMED_BYTES_PER_MS 36e6
#define CVCU_STREAMED_START_MS 0.6
/* Filter taps per millisecond a GPU sustains (about 2e12 multiply-adds
 * a second), and the cost of a launch and its synchronisation. */
#define CVCU_TAPS_PER_MS 2e9
#define CVCU_LAUNCH_MS 0.05

double cvcu_estimate_ms(const cvi_problem *p, int started)
{
    const double outputs = (double)p->shape[0] * (double)p->shape[1] * (double)p->shape[2] *
                           (double)p->channels;
    const double bytes = outputs * (double)(convolve_dtype_size(p->in_type) +
                                            convolve_dtype_size(p->out_type));
    double taps = p->separable ? (double)(p->ksize[0] + p->ksize[1] + p->ksize[2])
                               : (double)p->kcount;
    if (taps > CVCU_DIRECT_OVER_FFT) /* the FFT takes over */
        taps = CVCU_DIRECT_OVER_FFT;
    const int streamed = bytes >= (double)CVI_STREAM_MIN_BYTES;
    const double copies = streamed ? CVCU_STREAMED_START_MS + bytes / CVCU_STREAMED_BYTES_PER_MS
                                   : bytes / CVCU_HOST_BYTES_PER_MS;
    return (started ? 0.0 : CVCU_START_MS) + copies + outputs * taps / CVCU_TAPS_PER_MS +
           CVCU_LAUNCH_MS;
}
