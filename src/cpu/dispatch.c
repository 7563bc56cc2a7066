/*
 * dispatch.c - the CPU backend's table (cvcpu_backend, src/backend.h): its
 * strategies, its "auto" choice, a plan's state (the strategy, the problem
 * and the thread count, resolved once), the dispatch of a plan (or of a
 * window of its output rows) to the chosen strategy, and the benchmark on
 * host memory.
 */
#include "cpu_backend.h"
#include "fast.h"
#include "image.h"
#include "../stream.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

enum {
    CPU_REFERENCE = 0,
    CPU_FAST,
    CPU_DIRECT,
    CPU_SEPARABLE,
    CPU_FFT,
    CPU_IMAGE,
    CPU_STRATEGY_COUNT
};

static convolve_status check_separable(const cvi_strategy *s, const cvi_problem *p,
                                       const cvi_device *dev, char *why, size_t why_size)
{
    (void)s, (void)dev;
    if (p->separable)
        return CONVOLVE_OK;
    snprintf(why, why_size,
             "the filter is not separable (give one 1-D filter per axis, or "
             "dense weights of rank one)");
    return CONVOLVE_ERROR_UNSUPPORTED;
}

static convolve_status check_fft(const cvi_strategy *s, const cvi_problem *p, const cvi_device *dev,
                                 char *why, size_t why_size)
{
    (void)s, (void)dev;
    return cvcpu_fft_check(p, why, why_size);
}

static convolve_status check_image(const cvi_strategy *s, const cvi_problem *p,
                                   const cvi_device *dev, char *why, size_t why_size)
{
    (void)s, (void)dev;
    return cvcpu_image_check(p, why, why_size);
}

/* Indexed by id; the order is the public strategy list's. */
static const cvi_strategy k_cpu_strategies[CPU_STRATEGY_COUNT] = {
    [CPU_REFERENCE] = {"reference",
                       CONVOLVE_BACKEND_CPU,
                       CVI_DIMS_ALL,
                       CPU_REFERENCE,
                       "exact loops accumulating in double: the oracle every strategy is "
                       "tested against",
                       NULL,
                       {0, 0, 0}},
    [CPU_FAST] = {"fast",
                  CONVOLVE_BACKEND_CPU,
                  CVI_DIMS_ALL,
                  CPU_FAST,
                  "picks image (uint8/uint16 images), else direct, separable or fft by "
                  "cost; threaded and vectorised (AVX2/AVX-512)",
                  NULL,
                  {0, 0, 0}},
    [CPU_DIRECT] = {"direct",
                    CONVOLVE_BACKEND_CPU,
                    CVI_DIMS_ALL,
                    CPU_DIRECT,
                    "dense taps over rings of gathered rows, register-blocked SIMD, threads "
                    "over tiles",
                    NULL,
                    {0, 0, 0}},
    [CPU_SEPARABLE] = {"separable",
                       CONVOLVE_BACKEND_CPU,
                       CVI_DIMS_ALL,
                       CPU_SEPARABLE,
                       "one 1-D pass per axis, strip-mined through rings of rows that stay in "
                       "cache",
                       check_separable,
                       {0, 0, 0}},
    [CPU_FFT] = {"fft",
                 CONVOLVE_BACKEND_CPU,
                 CVI_DIMS_ALL,
                 CPU_FFT,
                 "overlap-save FFT tiles: cost nearly independent of the filter size",
                 check_fft,
                 {0, 0, 0}},
    [CPU_IMAGE] = {"image",
                   CONVOLVE_BACKEND_CPU,
                   CVI_DIMS_1D | CVI_DIMS_2D,
                   CPU_IMAGE,
                   "uint8/uint16 images, channels interleaved in place: integer running sums "
                   "for box filters, float taps (folded when symmetric) otherwise",
                   check_image,
                   {0, 0, 0}},
};

/* "auto" on the CPU: `fast`, which chooses per problem (fast.c). */
static const cvi_strategy *pick(const cvi_device *dev, const cvi_problem *p, char *why,
                                size_t why_size)
{
    (void)dev, (void)p, (void)why, (void)why_size;
    return &k_cpu_strategies[CPU_FAST];
}

/* The number of threads to use for p: its own setting, else all there are. */
static int threads_for(const cvi_problem *p)
{
    if (p->threads > 0)
        return p->threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static void device_key(const cvi_device *dev, const cvi_problem *p, char *key, size_t size)
{
    (void)dev;
    snprintf(key, size, "cpu:%d-threads", threads_for(p));
}

static double estimate_ms(const cvi_problem *p, int started)
{
    (void)started;
    return cvcpu_estimate_ms(p, threads_for(p));
}

/* A CPU plan. */
typedef struct cpu_plan {
    const cvi_strategy *strategy;
    const cvi_problem *p;
    int threads;
    cvcpu_img_scratch scratch; /* the image strategy's row buffers */
} cpu_plan;

static convolve_status prepare(convolve_context *ctx, const cvi_device *dev, const cvi_strategy *s,
                               const cvi_problem *p, void **state)
{
    (void)dev;
    *state = NULL;
    cpu_plan *plan = malloc(sizeof *plan);
    if (!plan)
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a plan");
    plan->strategy = s;
    plan->p = p;
    plan->threads = threads_for(p);
    cvcpu_img_scratch_init(&plan->scratch);
    *state = plan;
    return CONVOLVE_OK;
}

static void release(void *state)
{
    cpu_plan *plan = state;
    if (plan)
        cvcpu_img_scratch_free(&plan->scratch);
    free(state);
}

/* What the windows of one execution share (execute_host_rows' memo). */
typedef struct cpu_memo {
    int pick;           /* 1 + what `fast` chose (its choice reads the
                                   whole input: once an execution); 0: not yet */
    cvcpu_fft_keep fft; /* the FFT's spectrum and blocks */
} cpu_memo;

/* Outputs of at least this many bytes not in memory yet are faulted in
 * before the strategy runs (prefault_output). */
#define CPU_PREFAULT_MIN_BYTES ((size_t)2 << 20)

/* Faults in the output rows p writes (its window's, along the slowest
 * axis, when the rows lie one after another in memory) when they are not
 * in memory yet (a newly allocated output: numpy's, with transparent huge
 * pages asked for): by all the plan's threads, 2 MiB-aligned chunks each,
 * rather than by the strategy's threads as they store (H100 host:
 * gaussian_filter(float32 8192^2, 2) into new arrays 36-37 ms against
 * 31-32 with this; docs/architecture.md, "Measured choices"). Short work
 * on busy cores takes only the free cores, as the strategies do. */
static void prefault_output(const cpu_plan *plan, const cvi_problem *p, void *out)
{
    const int ax = cvi_slow_axis(p);
    const ptrdiff_t s = p->out_strides[ax];
    ptrdiff_t lo, hi;
    cvi_problem_span(p, 1, &lo, &hi);
    if (s <= 0 || p->shape[ax] == 0)
        return;
    const ptrdiff_t row = (hi - lo) - (ptrdiff_t)(p->shape[ax] - 1) * s; /* a row's bytes */
    if (row <= 0 || row > s)
        return; /* rows interleaved (another axis is the slower in memory) */
    size_t r0, r1;
    cvi_window_range(p, ax, &r0, &r1);
    if (r1 <= r0)
        return;
    char *begin = (char *)out + lo + (ptrdiff_t)r0 * s;
    const size_t bytes = (size_t)((ptrdiff_t)(r1 - r0 - 1) * s + row);
    if (bytes < CPU_PREFAULT_MIN_BYTES || cvi_pages_resident(begin, bytes))
        return;
    int threads = plan->threads;
    if (threads > 1 && p->threads == 0)
        threads = cvcpu_threads_for_free(threads, cvcpu_free_cores());
    cvi_prefault_range(begin, bytes, threads);
}

/* Runs the plan's strategy on p (the plan's problem, or it with a window);
 * m: what earlier windows of the execution left, or NULL (one shot). */
static convolve_status run(convolve_context *ctx, cpu_plan *plan, const cvi_problem *p,
                           const void *in, void *out, cpu_memo *m)
{
    const int threads = plan->threads;
    convolve_status st;
    int pick;
    prefault_output(plan, p, out);
    switch (plan->strategy->id) {
    case CPU_REFERENCE: st = cvcpu_reference(p, threads, in, out); break;
    case CPU_FAST:
        if (cvcpu_image_check(p, NULL, 0) == CONVOLVE_OK) {
            st = cvcpu_image(p, threads, in, out, &plan->scratch);
            break;
        }
        if (!m)
            pick = cvcpu_choose(p, threads, in);
        else if (!m->pick)
            m->pick = 1 + (pick = cvcpu_choose(p, threads, in));
        else
            pick = m->pick - 1;
        switch (pick) {
        case CVCPU_SEPARABLE: st = cvcpu_separable(p, threads, in, out); break;
        case CVCPU_FFT: st = cvcpu_fft(p, threads, in, out, m ? &m->fft : NULL); break;
        case CVCPU_BOX: st = cvcpu_box(p, threads, in, out); break;
        default: st = cvcpu_direct(p, threads, in, out); break;
        }
        break;
    case CPU_DIRECT: st = cvcpu_direct(p, threads, in, out); break;
    case CPU_SEPARABLE: st = cvcpu_separable(p, threads, in, out); break;
    case CPU_FFT: st = cvcpu_fft(p, threads, in, out, m ? &m->fft : NULL); break;
    case CPU_IMAGE: st = cvcpu_image(p, threads, in, out, &plan->scratch); break;
    default:
        return cvi_error(ctx, CONVOLVE_ERROR_INTERNAL, "unknown CPU strategy %d",
                         plan->strategy->id);
    }
    if (st == CONVOLVE_ERROR_OUT_OF_MEMORY)
        return cvi_error(ctx, st, "out of memory in CPU strategy '%s'", plan->strategy->name);
    return st;
}

static convolve_status execute(convolve_context *ctx, void *state, const void *in, void *out)
{
    cpu_plan *plan = state;
    return run(ctx, plan, plan->p, in, out, NULL);
}

static convolve_status execute_rows(convolve_context *ctx, void *state, const void *in, void *out,
                                    size_t r0, size_t r1, void **memo)
{
    cpu_plan *plan = state;
    if (!*memo && !(*memo = calloc(1, sizeof(cpu_memo))))
        return cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for a window");
    cvi_problem w = *plan->p;
    w.win_lo = r0;
    w.win_hi = r1;
    return run(ctx, plan, &w, in, out, *memo);
}

static void rows_end(void *state, void *memo)
{
    (void)state;
    cpu_memo *m = memo;
    if (m)
        cvcpu_fft_keep_free(&m->fft);
    free(m);
}

/* What a window costs beyond its own rows: the FFT's tiles along the
 * slowest axis (a window that cuts one computes it twice), the separable
 * passes' K - 1 rows (2-D) or planes (3-D) filtered again before each
 * window (each band of it), the image bands' K1 - 1 rows read again. */
static void window_cost(void *state, size_t *align, size_t *extra)
{
    const cpu_plan *plan = state;
    const cvi_problem *p = plan->p;
    const int ax = cvi_slow_axis(p);
    int id = plan->strategy->id;
    *align = 1;
    *extra = 0;
    if (id == CPU_IMAGE || (id == CPU_FAST && cvcpu_image_check(p, NULL, 0) == CONVOLVE_OK)) {
        *extra = ax == 1 ? p->ksize[1] - 1 : 0;
        return;
    }
    if (id == CPU_FAST) { /* what it picks for finite input */
        int pick = cvcpu_choose(p, plan->threads, NULL);
        if (pick == CVCPU_BOX) { /* each window counts its first sums again */
            size_t n2 = 2 * p->shape[ax];
            *extra = p->ksize[ax] > 1 ? (p->ksize[ax] < n2 ? p->ksize[ax] : n2) - 1 : 0;
            return;
        }
        id = pick == CVCPU_SEPARABLE ? CPU_SEPARABLE : pick == CVCPU_FFT ? CPU_FFT : CPU_DIRECT;
    }
    if (id == CPU_SEPARABLE && ax < 2)
        *extra = p->ksize[ax] - 1;
    else if (id == CPU_FFT)
        *align = cvcpu_fft_window_align(p);
}

static double plan_estimate_ms(void *state)
{
    const cpu_plan *plan = state;
    const cvi_problem *p = plan->p;
    switch (plan->strategy->id) {
    case CPU_REFERENCE: return cvcpu_estimate_method_ms(p, plan->threads, -1);
    case CPU_DIRECT: return cvcpu_estimate_method_ms(p, plan->threads, CVCPU_DIRECT);
    case CPU_SEPARABLE: return cvcpu_estimate_method_ms(p, plan->threads, CVCPU_SEPARABLE);
    case CPU_FFT: return cvcpu_estimate_method_ms(p, plan->threads, CVCPU_FFT);
    default: return cvcpu_estimate_ms(p, plan->threads); /* fast, image: the cheapest */
    }
}

/* ---- the benchmark ------------------------------------------------------- */

/* Fills `bytes` bytes with pseudo-random values that are finite in every
 * dtype: float32/64 arrays get values in [-1, 1), integer arrays random bits. */
static void fill_random(convolve_dtype t, void *data, size_t bytes)
{
    uint64_t s = 0x9E3779B97F4A7C15ull;
    size_t esize = convolve_dtype_size(t), n = bytes / esize;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = (double)(s >> 11) * 0x1.0p-53 * 2.0 - 1.0;
        char *p = (char *)data + i * esize;
        switch (t) {
        case CONVOLVE_FLOAT32: *(float *)p = (float)u; break;
        case CONVOLVE_FLOAT64: *(double *)p = u; break;
        case CONVOLVE_UINT8: *(uint8_t *)p = (uint8_t)(s >> 56); break;
        default: *(uint16_t *)p = (uint16_t)(s >> 48); break;
        }
    }
}

/* Times the plan on host arrays laid out as its problem says, the input
 * random. */
static convolve_status benchmark(convolve_context *ctx, void *state, int warmup, int runs,
                                 double *times)
{
    const cpu_plan *plan = state;
    ptrdiff_t ilo, ihi, olo, ohi;
    cvi_problem_span(plan->p, 0, &ilo, &ihi);
    cvi_problem_span(plan->p, 1, &olo, &ohi);
    char *in = malloc((size_t)(ihi - ilo)), *out = malloc((size_t)(ohi - olo));
    convolve_status st = CONVOLVE_OK;
    if (!in || !out) {
        st = cvi_error(ctx, CONVOLVE_ERROR_OUT_OF_MEMORY, "out of memory for benchmark arrays");
        goto done;
    }
    fill_random(plan->p->in_type, in, (size_t)(ihi - ilo));
    memset(out, 0, (size_t)(ohi - olo));
    for (int i = 0; i < warmup + runs && st == CONVOLVE_OK; i++) {
        double t0 = cvi_now_s();
        st = execute(ctx, state, in - ilo, out - olo);
        if (i >= warmup)
            times[i - warmup] = (cvi_now_s() - t0) * 1e3;
    }
done:
    free(in);
    free(out);
    return st;
}

const cvi_backend cvcpu_backend = {
    .id = CONVOLVE_BACKEND_CPU,
    .strategies = k_cpu_strategies,
    .strategy_count = CPU_STRATEGY_COUNT,
    .probe = NULL,
    .pick = pick,
    .prepare = prepare,
    .execute_host = execute,
    .execute_device = NULL,
    .benchmark = benchmark,
    .release = release,
    .device_key = device_key,
    .copy_bandwidth = NULL,
    .estimate_ms = estimate_ms,
    .execute_host_rows = execute_rows,
    .rows_end = rows_end,
    .window_cost = window_cost,
    .plan_estimate_ms = plan_estimate_ms,
};
