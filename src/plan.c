/*
 * plan.c - plans: validation of everything a convolution is given (once, at
 * the API boundary), the canonical problem every backend receives, the choice
 * of backend and strategy, and execution on host or device memory.
 */
#include "backend.h"
#include "layout.h"
#include "tune.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The defaults (static: its padding is zero too); every other field 0. */
static const convolve_options k_default_options = {
    .operation = CONVOLVE_OP_CONVOLVE,
    .mode = CONVOLVE_MODE_REFLECT,
    .backend = CONVOLVE_BACKEND_AUTO,
};

void convolve_options_init_size(convolve_options *o, size_t size)
{
    if (!o || size < sizeof o->size)
        return;
    const size_t ours = sizeof k_default_options;
    memcpy(o, &k_default_options, size < ours ? size : ours);
    if (size > ours) /* a newer header's fields: 0 by default */
        memset((char *)o + ours, 0, size - ours);
    o->size = size;
}

void(convolve_options_init)(convolve_options *o)
{
    convolve_options_init_size(o, sizeof *o);
}

/* The caller's options (*src, src->size bytes, as its convolve.h laid them
 * out: ours, or a prefix or an extension of ours) as this library lays them
 * out, in *dst: the fields within src->size, the defaults past it.
 * Errors: INVALID_ARGUMENT (size 0: never filled; fields set past ours). */
static convolve_status copy_options(convolve_context *ctx, const convolve_options *src,
                                    convolve_options *dst)
{
    const size_t n = src->size;
    if (n <= sizeof src->size)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "options->size is %zu: fill options with convolve_options_init first", n);
    for (size_t i = sizeof *dst; i < n; i++)
        if (((const unsigned char *)src)[i])
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "options set a field this library does not know (byte %zu of "
                             "%zu; it knows %zu): the program was built against a newer "
                             "convolve.h",
                             i, n, sizeof *dst);
    convolve_options_init(dst);
    memcpy(dst, src, n < sizeof *dst ? n : sizeof *dst);
    dst->size = sizeof *dst;
    return CONVOLVE_OK;
}

static convolve_status check_options(convolve_context *ctx, const convolve_options *o)
{
    if (o->operation != CONVOLVE_OP_CONVOLVE && o->operation != CONVOLVE_OP_CORRELATE)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "unknown operation %d",
                         (int)o->operation);
    if (!convolve_mode_name(o->mode))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "unknown boundary mode %d",
                         (int)o->mode);
    if (!convolve_backend_name(o->backend))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "unknown backend %d",
                         (int)o->backend);
    if (o->autotune != 0 && o->autotune != 1)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "autotune is %d; use 0 or 1",
                         o->autotune);
    if (o->threads < 0)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "threads is %d; use 0 for all, or a positive count", o->threads);
    if (o->integer_cast != CONVOLVE_CAST_ROUND_SATURATE &&
        o->integer_cast != CONVOLVE_CAST_TRUNCATE)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "unknown integer_cast %d; use CONVOLVE_CAST_ROUND_SATURATE (0) or "
                         "CONVOLVE_CAST_TRUNCATE (1)",
                         (int)o->integer_cast);
    if (!(isfinite(o->divisor) && o->divisor >= 0.0))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "divisor is %g; use a finite positive number (0 or 1: none)", o->divisor);
    if (o->device_count < -1)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "device_count is %d; use -1 for every device, 0 for the current one, "
                         "or the number of entries of devices",
                         o->device_count);
    if (o->device_count > 0 && !o->devices)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "device_count is %d but devices is NULL", o->device_count);
    for (int i = 0; i < o->device_count; i++) {
        if (o->devices[i] < 0)
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "devices[%d] is %d; device numbers start at 0", i, o->devices[i]);
        for (int j = 0; j < i; j++)
            if (o->devices[j] == o->devices[i])
                return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                                 "device %d is listed twice in devices", o->devices[i]);
    }
    return CONVOLVE_OK;
}

/* The devices of a CUDA plan: plan->devices[0..device_count-1] from the
 * options (-1: every device of the host; 0: none listed, the current
 * device). INVALID_ARGUMENT naming a device the host does not have. */
static convolve_status choose_devices(convolve_plan *plan, const convolve_options *o)
{
    convolve_context *ctx = plan->ctx;
    plan->device_count = 0;
    if (o->device_count == 0 || plan->strategy->backend != CONVOLVE_BACKEND_CUDA)
        return CONVOLVE_OK;
    const cvi_backend *b = plan->backend;
    int have = b->device_count ? b->device_count() : 0;
    int n = o->device_count < 0 ? have : o->device_count;
    if (n < 1)
        return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE, "no CUDA device found");
    if (!(plan->devices = malloc((size_t)n * sizeof *plan->devices)))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the device list");
    for (int i = 0; i < n; i++) {
        int d = o->device_count < 0 ? i : o->devices[i];
        if (d >= have)
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "devices[%d] is %d, and this host has %d CUDA device%s", i, d, have,
                             have == 1 ? "" : "s");
        plan->devices[i] = d;
    }
    plan->device_count = n;
    return CONVOLVE_OK;
}

/* 1 if the plan's input and output hold less than CVI_STREAM_MIN_BYTES in
 * all: on the current device, out of place, they run in one shot whatever
 * the automatic budget (cvi_stream_choose). */
static int small_arrays(const convolve_plan *plan)
{
    size_t n = plan->in.channels, bytes;
    for (int a = 0; a < plan->in.ndim; a++)
        if (!cvi_mul_size(n, plan->in.shape[a], &n))
            return 0;
    return cvi_mul_size(n,
                        convolve_dtype_size(plan->in.dtype) + convolve_dtype_size(plan->out.dtype),
                        &bytes) &&
           bytes < CVI_STREAM_MIN_BYTES;
}

/* A CUDA plan's device memory budget: the options', else
 * CONVOLVE_DEVICE_BUDGET's, else 80% of the free memory of its device (the
 * least of its devices'). With may_defer, a plan of small arrays on the
 * current device leaves the device unasked (plan->budget_deferred; 30-80 us
 * of cudaMemGetInfo, a tenth of a 512^2 float32 call from Python): an
 * execution in place asks first (execute_host). */
static convolve_status choose_budget(convolve_plan *plan, int may_defer)
{
    const cvi_backend *b = plan->backend;
    if (plan->strategy->backend != CONVOLVE_BACKEND_CUDA || plan->budget)
        return CONVOLVE_OK;
    if ((plan->budget = cvi_stream_env_budget()) != 0)
        return CONVOLVE_OK;
    plan->budget_deferred = may_defer && plan->device_count == 0 && small_arrays(plan);
    if (plan->budget_deferred)
        return CONVOLVE_OK;
    size_t least = SIZE_MAX;
    for (int i = 0; i < (plan->device_count ? plan->device_count : 1); i++) {
        size_t free_bytes = 0, total = 0;
        convolve_status st = b->memory_info(plan->ctx, plan->device_count ? plan->devices[i] : -1,
                                            &free_bytes, &total);
        if (st != CONVOLVE_OK)
            return st;
        least = free_bytes < least ? free_bytes : least;
    }
    plan->budget = least / 5 * 4;
    return CONVOLVE_OK;
}

/* Separable filters of at most this many dense weights keep their box axes
 * (all taps equal) unfolded. */
#define CVI_BOX_UNFOLDED_MAX ((size_t)1 << 20)
/* Only axes of at least this many taps are folded: shorter ones cost little
 * unfolded, and keep the sums (the bits) of a plan on a part of the array
 * (a slab, an MPI rank's box) equal to the whole array's. */
#define CVI_FOLD_MIN_TAPS 128

/*
 * Folds the taps of padded axis a of p onto the array when they are longer
 * than it (and at least CVI_FOLD_MIN_TAPS): the same outputs from at most
 * 2n + 1 taps (n = shape[a]), so that
 * a filter of any length costs what one as long as the array costs. Every
 * mode but CONSTANT and NEAREST extends the input periodically (period P = n
 * for WRAP, 2n for REFLECT, 2n - 2 for MIRROR, 1 for MIRROR with n = 1):
 * taps k and k + P read the same element, so tap k adds into tap k mod P and
 * koff becomes koff mod P. NEAREST and CONSTANT read one value (the edge
 * element, or cval) at every offset d = k - koff <= -n (and >= n) whatever
 * the output: those taps add into the tap at -n (at n). Sums are compensated
 * (Neumaier), so a folded tap is its taps' sum correctly rounded or nearly.
 * *t (ksize[a] taps) is replaced by a new array when folded; returns
 * OUT_OF_MEMORY (with *t unchanged) or OK.
 */
static convolve_status fold_taps(cvi_problem *p, int a, double **t)
{
    const size_t K = p->ksize[a], n = p->shape[a];
    const ptrdiff_t koff = p->koff[a];
    size_t P = 0; /* the period, or 0 */
    ptrdiff_t dlo = -koff, dhi = (ptrdiff_t)K - 1 - koff;
    switch (p->mode) {
    case CVI_MODE_WRAP: P = n; break;
    case CVI_MODE_REFLECT: P = 2 * n; break;
    case CVI_MODE_MIRROR: P = n == 1 ? 1 : 2 * n - 2; break;
    default: /* NEAREST, CONSTANT */
        if (dlo < -(ptrdiff_t)n)
            dlo = -(ptrdiff_t)n;
        if (dhi > (ptrdiff_t)n)
            dhi = (ptrdiff_t)n;
        break;
    }
    const size_t K2 = P ? P : (size_t)(dhi - dlo + 1);
    if (K2 >= K || K < CVI_FOLD_MIN_TAPS)
        return CONVOLVE_OK;
    double *s = calloc(2 * K2, sizeof(double)); /* sums, then their compensations */
    if (!s)
        return CONVOLVE_ERROR_OUT_OF_MEMORY;
    double *c = s + K2;
    for (size_t k = 0; k < K; k++) {
        size_t j;
        if (P) {
            j = k % P;
        } else {
            ptrdiff_t d = (ptrdiff_t)k - koff;
            d = d < dlo ? dlo : d > dhi ? dhi : d;
            j = (size_t)(d - dlo);
        }
        double v = (*t)[k], u = s[j] + v; /* Neumaier's compensated sum */
        c[j] += fabs(s[j]) >= fabs(v) ? (s[j] - u) + v : (v - u) + s[j];
        s[j] = u;
    }
    for (size_t j = 0; j < K2; j++)
        s[j] += c[j];
    free(*t);
    *t = s; /* the compensations' half stays allocated, unused */
    p->ksize[a] = K2;
    p->koff[a] = P ? koff % (ptrdiff_t)P : -dlo;
    return CONVOLVE_OK;
}

/* Builds the canonical problem (see internal.h) into plan->problem. */
static convolve_status build_problem(convolve_plan *plan, const convolve_filter *f,
                                     const convolve_options *o)
{
    convolve_context *ctx = plan->ctx;
    cvi_problem *p = &plan->problem;
    int nd = plan->in.ndim, pad = 3 - nd;
    memset(p, 0, sizeof *p);
    p->ndim = nd;
    p->channels = plan->in.channels;
    p->in_type = plan->in.dtype;
    p->out_type = plan->out.dtype;
    p->in_cstride = plan->in.channel_stride;
    p->out_cstride = plan->out.channel_stride;
    p->mode = (int)o->mode;
    p->cval = o->cval;
    p->threads = o->threads;
    p->divisor = 1.0;
    if (o->integer_cast == CONVOLVE_CAST_TRUNCATE &&
        (p->out_type == CONVOLVE_UINT8 || p->out_type == CONVOLVE_UINT16)) {
        p->cast = CVI_CAST_TRUNCATE;
        if (o->divisor != 0.0)
            p->divisor = o->divisor;
    } else if (o->divisor != 0.0 && o->divisor != 1.0) {
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "divisor %g applies to integer outputs with CONVOLVE_CAST_TRUNCATE "
                         "only; here it must be 0 or 1",
                         o->divisor);
    }
    int flip = o->operation == CONVOLVE_OP_CONVOLVE;
    for (int a = 0; a < 3; a++) {
        p->shape[a] = p->ksize[a] = 1;
        p->koff[a] = 0;
    }
    for (int a = 0; a < nd; a++) {
        size_t K = f->shape[a];
        ptrdiff_t origin = o->origin[a];
        ptrdiff_t lo = -(ptrdiff_t)(K / 2), hi = (ptrdiff_t)((K - 1) / 2);
        if (origin < lo || origin > hi)
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_ORIGIN,
                             "origin %td on axis %d is outside the filter: with extent %zu it must "
                             "lie in [%td, %td]",
                             origin, a, K, lo, hi);
        if (flip)
            origin = -origin - (K % 2 == 0 ? 1 : 0);
        p->shape[a + pad] = plan->in.shape[a];
        p->in_strides[a + pad] = plan->in.strides[a];
        p->out_strides[a + pad] = plan->out.strides[a];
        p->ksize[a + pad] = K;
        p->koff[a + pad] = (ptrdiff_t)(K / 2) + origin;
    }
    p->snap = ((double)f->count + 1.0) * 0x1p-52;
    /* dense weights as given; so too a rank one found in them under scipy's
     * cast, which sums dense weights as given: taps found by the rank-one
     * test may be inexact quotients, whose rounding can move an exact
     * integer sum below the integer */
    if (!f->separable || (!f->given_separable && cvi_truncates(p))) {
        p->kcount = f->count;
        plan->weights = malloc(f->count * sizeof(double));
        if (!plan->weights)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for the filter");
        for (size_t i = 0; i < f->count; i++) /* C-order reversal flips every axis */
            plan->weights[i] = f->dense[flip ? f->count - 1 - i : i];
        p->weights = plan->weights;
        return CONVOLVE_OK;
    }

    /* separable: the taps (flipped for a convolution), each axis folded onto
     * the array when longer than it (fold_taps), and the dense weights as
     * their outer product */
    static const double one = 1.0;
    int folded = 0;
    for (int a = 0; a < 3; a++)
        p->taps[a] = &one;
    for (int a = 0; a < nd; a++) {
        size_t K = f->shape[a];
        double *t = malloc(K * sizeof(double));
        if (!t)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for %zu filter taps",
                             K);
        for (size_t i = 0; i < K; i++)
            t[i] = f->taps[a][flip ? K - 1 - i : i];
        plan->taps[a] = t;
        /* box axes stay boxes while the dense product stays small: the CPU
         * sums them in O(n) whatever their length (fast_box.c, image_box.c) */
        int box = K > 1 && f->count <= CVI_BOX_UNFOLDED_MAX;
        for (size_t i = 1; box && i < K; i++)
            box = memcmp(&t[i], &t[0], sizeof t[0]) == 0;
        if (!box && fold_taps(p, a + pad, &plan->taps[a]) != CONVOLVE_OK)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for %zu filter taps",
                             K);
        folded |= p->ksize[a + pad] != K;
        p->taps[a + pad] = plan->taps[a];
    }
    p->separable = 1;
    p->folded = folded;
    size_t count = p->ksize[0] * p->ksize[1] * p->ksize[2]; /* <= f->count */
    p->kcount = count;
    if (f->dense && !folded) { /* rank one found in dense weights: those, as given */
        plan->weights = malloc(count * sizeof(double));
        if (!plan->weights)
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                             "out of memory for the filter's %zu weights", count);
        for (size_t i = 0; i < count; i++)
            plan->weights[i] = f->dense[flip ? count - 1 - i : i];
    } else {
        if (count > SIZE_MAX / sizeof(double) || !(plan->weights = malloc(count * sizeof(double))))
            return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                             "out of memory for the separable filter's %zu dense weights (%zu x "
                             "%zu x %zu after folding onto the array)",
                             count, p->ksize[0], p->ksize[1], p->ksize[2]);
        size_t i = 0;
        for (size_t k0 = 0; k0 < p->ksize[0]; k0++)
            for (size_t k1 = 0; k1 < p->ksize[1]; k1++)
                for (size_t k2 = 0; k2 < p->ksize[2]; k2++)
                    plan->weights[i++] = p->taps[0][k0] * p->taps[1][k1] * p->taps[2][k2];
    }
    p->weights = plan->weights;
    return CONVOLVE_OK;
}

/* An output of at least this many bytes is taken to be new memory whose
 * pages each run faults in (glibc maps allocations past 32 MiB afresh and
 * unmaps them when freed: numpy's outputs from Python), costing the
 * backends these milliseconds a MiB: the CPU's threads fault as they
 * write, the GPU's host threads all at once before the slabs
 * (cvi_stream_prefault_out). H100 host, 16 cores, gaussian sigma 2 from
 * Python, new output against one given: CPU +3.7 ms at 4096^2 float32,
 * +15 to +25 ms at 8192^2; GPU +2.6 and +6 ms (docs/architecture.md,
 * "Measured choices"). */
#define NEW_OUTPUT_BYTES ((size_t)32 << 20)
#define NEW_OUTPUT_CPU_MS_PER_MIB 0.06
#define NEW_OUTPUT_GPU_MS_PER_MIB 0.025

/* Milliseconds a started GPU would have saved on the executions of AUTO
 * plans that took the CPU only because CUDA's start-up was counted (each
 * run's measured time less the GPU's estimate), summed over the process
 * (microseconds); and whether that sum has once paid for the start-up
 * (rent_or_move). */
static atomic_llong forgone_us;
static atomic_int forgone_spent;

double cvi_auto_forgone_ms(void)
{
    return (double)atomic_load(&forgone_us) / 1e3;
}

/* Under AUTO with no strategy named: does the GPU pay for p? The two
 * backends' estimates of a host-memory execution (the GPU's with its
 * copies, and with starting CUDA unless the process has: cvi_cuda_started), each
 * with the faults of a new output where it is large enough to be one,
 * made before touching CUDA, so small work never pays CUDA's start-up.
 * When only the start-up makes the CPU the faster (and the sum above has
 * not been spent), *gpu_ms = the started GPU's estimate of an execution
 * and *start_up = the start-up; else both 0. */
static int gpu_pays(const convolve_context *ctx, const cvi_problem *p, double *gpu_ms,
                    double *start_up)
{
    *gpu_ms = *start_up = 0.0;
    if (!cvcu_backend.estimate_ms || !cvcpu_backend.estimate_ms)
        return 0;
    const int started = cvi_cuda_started(ctx);
    double gpu = cvcu_backend.estimate_ms(p, 1);
    const double start = started ? 0.0 : cvcu_backend.estimate_ms(p, 0) - gpu;
    double cpu = cvcpu_backend.estimate_ms(p, 0);
    const double out = (double)p->shape[0] * (double)p->shape[1] * (double)p->shape[2] *
                       (double)p->channels * (double)convolve_dtype_size(p->out_type);
    if (out >= (double)NEW_OUTPUT_BYTES) {
        gpu += out / (1 << 20) * NEW_OUTPUT_GPU_MS_PER_MIB;
        cpu += out / (1 << 20) * NEW_OUTPUT_CPU_MS_PER_MIB;
    }
    if (gpu + start < cpu)
        return 1;
    if (!started && gpu < cpu && !atomic_load(&forgone_spent)) {
        *gpu_ms = gpu;
        *start_up = start;
    }
    return 0;
}

/* The backend a plan runs on: the one asked for, or under AUTO the GPU
 * when it is usable and pays (gpu_pays; or, with a strategy named, when
 * the GPU has a strategy of that name). BACKEND_UNAVAILABLE when CUDA is
 * asked for and cannot be used. */
static convolve_status choose_backend(convolve_plan *plan, const convolve_options *o, int named,
                                      convolve_backend *backend)
{
    convolve_context *ctx = plan->ctx;
    *backend = o->backend;
    if (o->backend == CONVOLVE_BACKEND_CUDA) {
        if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA))
            return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE,
                             "the CUDA backend was asked for, but this libconvolve was built "
                             "without CUDA");
        if (!cvi_cuda_usable(ctx))
            return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE,
                             "the CUDA backend was asked for, but no GPU can be used: %s",
                             ctx->cuda.info.reason);
    }
    if (o->backend == CONVOLVE_BACKEND_AUTO) {
        int gpu = 0;
        if (named) /* the backend that has a strategy of that name; the GPU first */
            gpu = cvi_strategy_find(CONVOLVE_BACKEND_CUDA, o->strategy) && cvi_cuda_usable(ctx);
        else if (convolve_backend_built(CONVOLVE_BACKEND_CUDA))
            gpu = gpu_pays(ctx, &plan->problem, &plan->rent_gpu_ms, &plan->rent_start_ms) &&
                  cvi_cuda_usable(ctx);
        *backend = gpu ? CONVOLVE_BACKEND_CUDA : CONVOLVE_BACKEND_CPU;
    }
    return CONVOLVE_OK;
}

/* The strategy called `name` on `backend`, if it serves the problem; else
 * the error that says why not (BACKEND_UNAVAILABLE for a GPU strategy
 * without a GPU, INVALID_ARGUMENT naming the strategies there are,
 * UNSUPPORTED naming the limit). */
static convolve_status find_named(convolve_plan *plan, const convolve_options *o,
                                  convolve_backend backend, const cvi_strategy **found)
{
    convolve_context *ctx = plan->ctx;
    const cvi_problem *p = &plan->problem;
    const char *name = o->strategy;
    const cvi_strategy *s = cvi_strategy_find(backend, name);
    if (!s && backend == CONVOLVE_BACKEND_CPU && o->backend == CONVOLVE_BACKEND_AUTO &&
        cvi_strategy_find(CONVOLVE_BACKEND_CUDA, name))
        return cvi_error(ctx, CONVOLVE_ERROR_BACKEND_UNAVAILABLE,
                         "strategy '%s' runs on the GPU, and no GPU can be used: %s", name,
                         convolve_backend_built(CONVOLVE_BACKEND_CUDA)
                             ? ctx->cuda.info.reason
                             : "this libconvolve was built without CUDA");
    if (!s) {
        const cvi_backend *b = cvi_backend_of(backend);
        char list[512] = "";
        for (size_t i = 0; i < b->strategy_count; i++) {
            const cvi_strategy *t = &b->strategies[i];
            if (cvi_strategy_serves_ndim(t, p->ndim)) {
                strncat(list, " ", sizeof list - strlen(list) - 1);
                strncat(list, t->name, sizeof list - strlen(list) - 1);
            }
        }
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "no strategy '%s' on the %s backend; %d-D strategies there:%s", name,
                         convolve_backend_name(backend), p->ndim, list);
    }
    convolve_status st = cvi_strategy_check(ctx, s, p, &ctx->cuda);
    if (st == CONVOLVE_OK)
        *found = s;
    return st;
}

/* Makes plan->state for strategy s: plan->strategy, ->backend and ->state
 * are set on success. */
static convolve_status prepare(convolve_plan *plan, const cvi_strategy *s)
{
    const cvi_backend *b = cvi_backend_of(s->backend);
    void *state = NULL;
    convolve_status st = b->prepare(plan->ctx, &plan->ctx->cuda, s, &plan->problem, &state);
    if (st == CONVOLVE_OK) {
        plan->strategy = s;
        plan->backend = b;
        plan->state = state;
    }
    return st;
}

/* The CPU backend's own choice for the plan's problem. */
static const cvi_strategy *cpu_pick(const convolve_plan *plan)
{
    char why[CVI_REASON_SIZE];
    return cvcpu_backend.pick(NULL, &plan->problem, why, sizeof why);
}

/* Picks backend and strategy (named, remembered or timed by the autotune,
 * or the backend's own pick) and prepares the plan's state. Under AUTO
 * with no strategy named, a GPU that cannot serve or prepare the case
 * leaves the plan to the CPU. */
static convolve_status choose(convolve_plan *plan, const convolve_options *o)
{
    convolve_context *ctx = plan->ctx;
    const cvi_problem *p = &plan->problem;
    const int named = o->strategy && *o->strategy && strcmp(o->strategy, "auto") != 0;
    const int may_fall_back = o->backend == CONVOLVE_BACKEND_AUTO && !named;
    convolve_backend backend;
    convolve_status st = choose_backend(plan, o, named, &backend);
    if (st != CONVOLVE_OK)
        return st;
    const cvi_backend *b = cvi_backend_of(backend);

    const cvi_strategy *s = NULL;
    char why[CVI_REASON_SIZE] = "";
    if (named)
        st = find_named(plan, o, backend, &s);
    else if (o->autotune)
        st = cvi_tune(ctx, p, b, &s);
    if (st != CONVOLVE_OK)
        return st;
    if (!s)
        s = b->pick(&ctx->cuda, p, why, sizeof why);
    if (!s) {
        if (o->backend == CONVOLVE_BACKEND_CUDA)
            return cvi_error(ctx, CONVOLVE_ERROR_UNSUPPORTED,
                             "no CUDA strategy can serve this case: %s", why);
        s = cpu_pick(plan);
    }
    st = prepare(plan, s);
    if (st != CONVOLVE_OK && s->backend == CONVOLVE_BACKEND_CUDA && may_fall_back)
        st = prepare(plan, cpu_pick(plan));
    if (st != CONVOLVE_OK)
        return st;
    plan->cpu_fallback = plan->strategy->backend == CONVOLVE_BACKEND_CUDA && may_fall_back;
    /* renting needs the CPU's own pick, and a plan the GPU could take as
     * it is: no autotune result, no device list */
    if (!may_fall_back || o->autotune || o->device_count != 0 ||
        plan->strategy->backend != CONVOLVE_BACKEND_CPU)
        plan->rent_start_ms = 0.0;
    return CONVOLVE_OK;
}

convolve_status convolve_plan_create(convolve_context *ctx, convolve_plan **out_plan,
                                     const convolve_layout *in, const convolve_layout *out,
                                     const convolve_filter *filter, const convolve_options *options)
{
    if (!out_plan)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "convolve_plan_create: plan is NULL");
    *out_plan = NULL;
    if (!ctx || !filter)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "convolve_plan_create: %s is NULL",
                         ctx ? "filter" : "context");
    convolve_options copy;
    convolve_status st;
    if (!options)
        convolve_options_init(&copy);
    else if ((st = copy_options(ctx, options, &copy)) != CONVOLVE_OK)
        return st;
    options = &copy;
    if ((st = check_options(ctx, options)) != CONVOLVE_OK ||
        (st = cvi_check_layout(ctx, in, "input", 0)) != CONVOLVE_OK ||
        (st = cvi_check_layout(ctx, out, "output", 1)) != CONVOLVE_OK)
        return st;
    if (in->ndim != out->ndim || in->channels != out->channels)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                         "input (%d-D, %zu channel%s) and output (%d-D, %zu channel%s) differ",
                         in->ndim, in->channels, in->channels == 1 ? "" : "s", out->ndim,
                         out->channels, out->channels == 1 ? "" : "s");
    for (int a = 0; a < in->ndim; a++)
        if (in->shape[a] != out->shape[a])
            return cvi_error(ctx, CONVOLVE_ERROR_BAD_LAYOUT,
                             "input and output differ along axis %d (%zu and %zu)", a, in->shape[a],
                             out->shape[a]);
    if (filter->ndim != in->ndim)
        return cvi_error(ctx, CONVOLVE_ERROR_BAD_FILTER,
                         "the filter has %d dimension%s and the input %d; they must match",
                         filter->ndim, filter->ndim == 1 ? "" : "s", in->ndim);

    convolve_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a plan");
    plan->ctx = ctx;
    plan->in = *in;
    plan->out = *out;
    plan->budget = options->device_memory_budget;
    plan->progress = options->progress;
    plan->progress_user = options->progress_user;
    if ((st = build_problem(plan, filter, options)) != CONVOLVE_OK ||
        (st = choose(plan, options)) != CONVOLVE_OK ||
        (st = choose_devices(plan, options)) != CONVOLVE_OK ||
        (st = choose_budget(plan, 1)) != CONVOLVE_OK) {
        convolve_plan_free(plan);
        return st;
    }
    *out_plan = plan;
    return cvi_ok(ctx);
}

void convolve_plan_free(convolve_plan *plan)
{
    if (!plan)
        return;
    if (plan->backend)
        plan->backend->release(plan->state);
    for (int a = 0; a < 3; a++)
        free(plan->taps[a]);
    free(plan->weights);
    free(plan->devices);
    free(plan->device_probes);
    free(plan);
}

convolve_backend convolve_plan_backend(const convolve_plan *plan)
{
    return plan && plan->strategy ? plan->strategy->backend : CONVOLVE_BACKEND_AUTO;
}

const char *convolve_plan_strategy(const convolve_plan *plan)
{
    return plan && plan->strategy ? plan->strategy->name : NULL;
}

/* 1 if out == in and every output element has the bytes of its input
 * element (same element size, same strides): the plan may run in place. */
static int same_bytes(const convolve_plan *plan, const void *in, const void *out)
{
    if (in != out || convolve_dtype_size(plan->in.dtype) != convolve_dtype_size(plan->out.dtype) ||
        plan->in.channel_stride != plan->out.channel_stride)
        return 0;
    for (int a = 0; a < plan->in.ndim; a++)
        if (plan->in.strides[a] != plan->out.strides[a])
            return 0;
    return 1;
}

/* Checks data pointers: non-NULL, aligned to the element, and (host memory)
 * the output's bytes apart from the input's unless they are the same bytes
 * (*in_place = 1; NULL: not allowed). */
static convolve_status check_pointers(convolve_plan *plan, const void *in, void *out,
                                      int check_overlap, int *in_place)
{
    if (in_place)
        *in_place = 0;
    convolve_context *ctx = plan->ctx;
    if (!in || !out)
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT, "%s pointer is NULL",
                         in ? "output" : "input");
    if ((uintptr_t)in % convolve_dtype_size(plan->in.dtype) ||
        (uintptr_t)out % convolve_dtype_size(plan->out.dtype))
        return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                         "%s pointer is not aligned to its element size",
                         (uintptr_t)in % convolve_dtype_size(plan->in.dtype) ? "input" : "output");
    if (check_overlap && in_place && same_bytes(plan, in, out)) {
        *in_place = 1;
    } else if (check_overlap) {
        ptrdiff_t ilo, ihi, olo, ohi;
        cvi_layout_span(&plan->in, &ilo, &ihi);
        cvi_layout_span(&plan->out, &olo, &ohi);
        uintptr_t i0 = (uintptr_t)in + (uintptr_t)ilo, i1 = (uintptr_t)in + (uintptr_t)ihi;
        uintptr_t o0 = (uintptr_t)out + (uintptr_t)olo, o1 = (uintptr_t)out + (uintptr_t)ohi;
        if (o0 < i1 && i0 < o1)
            return cvi_error(ctx, CONVOLVE_ERROR_INVALID_ARGUMENT,
                             "the output overlaps the input; only an output that is the input "
                             "itself (the same pointer, element size and strides) runs in place");
    }
    return CONVOLVE_OK;
}

/* Runs the whole plan as one slab, with the progress callback (if any)
 * called before and after. */
static convolve_status execute_one_shot(convolve_plan *plan, const void *in, void *out)
{
    convolve_progress pr;
    memset(&pr, 0, sizeof pr);
    pr.slabs_total = 1;
    pr.rows_total = plan->problem.shape[3 - plan->problem.ndim];
    double t0 = cvi_now_s();
    if (plan->progress && plan->progress(plan->progress_user, &pr) != 0)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_CANCELLED,
                         "cancelled by the progress callback before the start");
    convolve_status st = plan->backend->execute_host(plan->ctx, plan->state, in, out);
    if (st == CONVOLVE_OK && plan->progress) {
        pr.slabs_done = 1;
        pr.rows_done = pr.rows_total;
        pr.bytes_done = convolve_layout_count(&plan->in) * convolve_dtype_size(plan->in.dtype) +
                        convolve_layout_count(&plan->out) * convolve_dtype_size(plan->out.dtype);
        pr.elapsed_s = cvi_now_s() - t0;
        (void)plan->progress(plan->progress_user, &pr); /* all done: nothing left to cancel */
    }
    return st;
}

/* Copies the output's elements from src to dst, two arrays of the plan's
 * output layout (the bytes between elements are left alone). */
static void copy_elements(const convolve_plan *plan, char *dst, const char *src)
{
    const cvi_problem *p = &plan->problem;
    const size_t es = convolve_dtype_size(p->out_type);
    ptrdiff_t lo, hi;
    cvi_problem_span(p, 1, &lo, &hi);
    if ((size_t)(hi - lo) == convolve_layout_count(&plan->out) * es) { /* no gaps */
        memcpy(dst + lo, src + lo, (size_t)(hi - lo));
        return;
    }
    const int run = p->channels == 1 || p->out_cstride == (ptrdiff_t)es; /* channels adjacent */
    for (size_t i0 = 0; i0 < p->shape[0]; i0++)
        for (size_t i1 = 0; i1 < p->shape[1]; i1++)
            for (size_t i2 = 0; i2 < p->shape[2]; i2++) {
                const ptrdiff_t e = (ptrdiff_t)i0 * p->out_strides[0] +
                                    (ptrdiff_t)i1 * p->out_strides[1] +
                                    (ptrdiff_t)i2 * p->out_strides[2];
                if (run)
                    memcpy(dst + e, src + e, p->channels * es);
                else
                    for (size_t c = 0; c < p->channels; c++)
                        memcpy(dst + e + (ptrdiff_t)c * p->out_cstride,
                               src + e + (ptrdiff_t)c * p->out_cstride, es);
            }
}

static convolve_status execute_host(convolve_plan *plan, const void *in, void *out, int in_place,
                                    int *wrote);

/* In place through a temporary array of the output's layout: the plan runs
 * out of place into it, then its elements are copied over the array. Takes
 * the bytes the layout spans (the array's, for a packed one); the array is
 * written only once the run succeeded. */
static convolve_status execute_copied(convolve_plan *plan, void *array, int *wrote)
{
    enum { ALIGN = 64 };
    ptrdiff_t lo, hi;
    cvi_problem_span(&plan->problem, 1, &lo, &hi);
    const size_t bytes = (size_t)(hi - lo);
    char *mem = malloc(bytes + ALIGN);
    if (!mem)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_OUT_OF_MEMORY,
                         "running in place: out of memory for a copy of the output (%zu bytes)",
                         bytes);
    /* the copy's first byte sits where the array's does modulo ALIGN, so
     * that every element has the alignment it has in the array */
    const size_t shift = ((uintptr_t)array + (uintptr_t)lo - (uintptr_t)mem) % ALIGN;
    char *copy = mem + shift - lo; /* element 0 */
    plan->in_place_extra = bytes + ALIGN;
    plan->in_place_store = 0;
    int wrote_copy = 0;
    convolve_status st = execute_host(plan, array, copy, 0, &wrote_copy);
    if (st == CONVOLVE_OK) {
        *wrote = 1;
        copy_elements(plan, array, copy);
    }
    free(mem);
    return st;
}

/* How an in-place run goes: CONVOLVE_IN_PLACE=slabs or =copy forces one
 * way (tests); otherwise the one that takes less memory. */
enum { IN_PLACE_AUTO, IN_PLACE_SLABS, IN_PLACE_COPY };
static int in_place_forced(void)
{
    const char *e = getenv("CONVOLVE_IN_PLACE");
    if (e && strcmp(e, "slabs") == 0)
        return IN_PLACE_SLABS;
    if (e && strcmp(e, "copy") == 0)
        return IN_PLACE_COPY;
    return IN_PLACE_AUTO;
}

/* Runs the plan on host memory: streamed in slabs or in one shot. In
 * place, in slabs (each reading the rows other slabs own from a store
 * saved first) or through a temporary copy, whichever takes less memory
 * beyond the array: never more than the array's layout spans. *wrote:
 * output rows may have been written. */
static convolve_status execute_host(convolve_plan *plan, const void *in, void *out, int in_place,
                                    int *wrote)
{
    size_t slab_rows = 0;
    *wrote = 0;
    convolve_status st;
    if (in_place && plan->budget_deferred && (st = choose_budget(plan, 0)) != CONVOLVE_OK)
        return st;
    st = cvi_stream_choose(plan, in_place, &slab_rows);
    if (in_place) {
        int route = in_place_forced();
        if (route == IN_PLACE_AUTO) {
            size_t slabs = SIZE_MAX;
            ptrdiff_t lo, hi;
            cvi_problem_span(&plan->problem, 1, &lo, &hi);
            if (st == CONVOLVE_OK &&
                (st = cvi_stream_in_place_bytes(plan, slab_rows, &slabs)) != CONVOLVE_OK)
                return st;
            /* no slab fits the device budget: the copy may run in one shot */
            route = slabs <= (size_t)(hi - lo) ? IN_PLACE_SLABS : IN_PLACE_COPY;
        }
        if (route == IN_PLACE_COPY)
            return execute_copied(plan, out, wrote);
    }
    if (st != CONVOLVE_OK)
        return st;
    if (slab_rows)
        return cvi_stream_execute(plan, slab_rows, in, out, wrote);
    *wrote = 1;
    return execute_one_shot(plan, in, out);
}

/* An AUTO plan on the CPU only because CUDA's start-up was counted
 * (plan->rent_start_ms > 0) rents the start-up: each execution adds what a
 * started GPU would have saved (its measured time less the GPU's estimate,
 * rent_add) to the process's sum. The first execution after the sum
 * reaches the start-up (once a process), or any execution after some
 * context of the process started CUDA, moves the plan to the GPU for good
 * (the CUDA backend's pick; convolve_plan_backend then says so). A process
 * running such work often pays the start-up at most about twice over (the
 * ski-rental bound, up to the GPU's estimate's error); one running little
 * never pays it. Nothing moves when no GPU is usable, when the sum was
 * spent by a probe that found none, or when the GPU cannot serve or
 * prepare the plan: it stays on the CPU, renting no more. Returns 1 when
 * the plan still rents (time this execution), else 0. */
static int rent_or_move(convolve_plan *plan)
{
    convolve_context *ctx = plan->ctx;
    if (!cvi_cuda_started(ctx)) {
        if (atomic_load(&forgone_spent))
            return 0; /* a probe is under way, or found no GPU */
        if ((double)atomic_load(&forgone_us) < plan->rent_start_ms * 1e3)
            return 1;
        if (atomic_exchange(&forgone_spent, 1))
            return 0;
    }
    plan->rent_start_ms = 0.0;
    char why[CVI_REASON_SIZE];
    const cvi_strategy *s = NULL;
    if (!cvi_cuda_usable(ctx) ||
        !(s = cvcu_backend.pick(&ctx->cuda, &plan->problem, why, sizeof why)))
        return 0;
    const cvi_strategy *cpu_strategy = plan->strategy;
    const cvi_backend *cpu = plan->backend;
    void *cpu_state = plan->state;
    const size_t budget = plan->budget;
    if (prepare(plan, s) != CONVOLVE_OK)
        return 0;
    if (choose_budget(plan, 1) != CONVOLVE_OK) {
        plan->backend->release(plan->state);
        plan->strategy = cpu_strategy;
        plan->backend = cpu;
        plan->state = cpu_state;
        plan->budget = budget;
        plan->budget_deferred = 0;
        return 0;
    }
    cpu->release(cpu_state);
    plan->cpu_fallback = 1;
    return 0;
}

/* A renting plan's execution took ms on the CPU: what a started GPU would
 * have saved goes to the process's sum. */
static void rent_add(const convolve_plan *plan, double ms)
{
    const double us = (ms - plan->rent_gpu_ms) * 1e3;
    if (us > 0.0)
        atomic_fetch_add(&forgone_us, us < 1e15 ? (long long)us : (long long)1e15);
}

convolve_status convolve_execute(convolve_plan *plan, const void *in, void *out)
{
    if (!plan)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    int in_place = 0, wrote = 0;
    convolve_status st = check_pointers(plan, in, out, 1, &in_place);
    if (st != CONVOLVE_OK)
        return st;
    const int renting = plan->rent_start_ms > 0.0 && rent_or_move(plan);
    const double t0 = renting ? cvi_now_s() : 0.0;
    st = execute_host(plan, in, out, in_place, &wrote);
    if (renting && st == CONVOLVE_OK)
        rent_add(plan, (cvi_now_s() - t0) * 1e3);
    if (st == CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY && plan->cpu_fallback && in_place && wrote) {
        /* slabs already overwrote their input rows: nothing to start again from */
        cvi_error_prefix(plan->ctx, st, "running in place, the array is partly filtered: ");
    } else if (st == CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY && plan->cpu_fallback) {
        /* AUTO chose the GPU and its memory ran out: the plan moves to the
         * CPU for good (convolve_plan_backend then says so) */
        const cvi_backend *gpu = plan->backend;
        void *gpu_state = plan->state;
        st = prepare(plan, cpu_pick(plan));
        if (st == CONVOLVE_OK) {
            gpu->release(gpu_state);
            plan->cpu_fallback = 0;
            st = execute_host(plan, in, out, in_place, &wrote);
        }
    }
    return st == CONVOLVE_OK ? cvi_ok(plan->ctx) : st;
}

convolve_status convolve_execute_device(convolve_plan *plan, const void *in, void *out,
                                        void *stream)
{
    if (!plan)
        return CONVOLVE_ERROR_INVALID_ARGUMENT;
    if (!plan->backend->execute_device)
        return cvi_error(plan->ctx, CONVOLVE_ERROR_UNSUPPORTED,
                         "convolve_execute_device needs a CUDA plan; this one runs '%s' on the CPU",
                         plan->strategy->name);
    convolve_status st = check_pointers(plan, in, out, 0, NULL);
    if (st != CONVOLVE_OK)
        return st;
    st = plan->backend->execute_device(plan->ctx, plan->state, in, out, stream);
    return st == CONVOLVE_OK ? cvi_ok(plan->ctx) : st;
}

convolve_status convolve_run(convolve_context *ctx, const convolve_layout *in_layout,
                             const void *in, const convolve_layout *out_layout, void *out,
                             const convolve_filter *filter, const convolve_options *options)
{
    convolve_plan *plan;
    convolve_status st = convolve_plan_create(ctx, &plan, in_layout, out_layout, filter, options);
    if (st != CONVOLVE_OK)
        return st;
    st = convolve_execute(plan, in, out);
    convolve_plan_free(plan);
    return st;
}
