/*
 * test_gpu_stream.c - streamed execution of host-memory CUDA plans (issue
 * 12) on the GPU (CTest label gpu) or the CUDA emulation (emu_test_gpu_stream
 * and emu_test_gpu_stream_4, label emu, with --small and CVK_EMU_DEVICES=2
 * and 4): random cases over every
 * CUDA strategy, mode, 1-D to 3-D, channels, element types, strided
 * layouts, filters longer than a slab and than the array, uneven last
 * slabs, run once in one shot and once streamed (device 0 listed with a
 * budget that leaves room for a few rows, or several devices); the outputs must be equal
 * byte for byte (FFT too: fft_slabs streams it in several slabs), the caller's arrays now and
 * then pinned (convolve_host_register; and pinned edge slabs in every mode,
 * whose rows past the array are gathered), now and then in place (out ==
 * in: in slabs, the rows other slabs read saved first, or through a copy).
 * Also: pinned staging taken slot by slot (fewer slabs than slots, staging
 * that grows, and on the emulation a slot that cannot pin), CONVOLVE_DEVICE_BUDGET,
 * a budget too small for one slab, cancellation from the progress
 * callback, and every device of the host when it has several (skipped
 * with a message on a one-GPU machine). And: the pinned pool's size classes,
 * the parked worker threads reused by a later execution, several caller
 * threads streaming at once, and (emulation) streaming in a fork() child.
 * Exit 77 without a usable GPU.
 *   test_gpu_stream [--small] [--cases N]
 */
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef CONVOLVE_WITH_CUDA
#include "cuda/backend.h"
#include "cuda/device_images.h"
#include "cuda/pinned_pool.h"
#include "cuda/stream_workers.h"
#include "stream.h"
#endif

static convolve_context *ctx;

#include "stream_cases.h"

static int g_small = 0;
static int g_devices = 1;
static int g_emulated; /* the CPU emulation of CUDA (tests/emu), not a GPU */

/* The CUDA strategies that serve ndim, in registry order. */
static int cuda_strategies(int ndim, const char **names, int max)
{
    int n = 0;
    for (size_t i = 0; i < convolve_strategy_count() && n < max; i++) {
        convolve_strategy_info s;
        if (convolve_strategy_get(i, &s) == CONVOLVE_OK && s.backend == CONVOLVE_BACKEND_CUDA &&
            (s.dims >> (ndim - 1) & 1u))
            names[n++] = s.name;
    }
    return n;
}

/* The budget that leaves slabs of `rows` rows for c (three buffer sets of
 * the rows and the filter's halo, input and output). */
static size_t budget_for(const s_case *c, size_t rows)
{
    size_t row = c->channels * (convolve_dtype_size(c->in_type) + convolve_dtype_size(c->out_type));
    for (int a = 1; a < c->ndim; a++)
        row *= c->shape[a];
    return 3 * (rows + s_plan_k0(c) - 1) * row;
}

static const int k_two[2] = {0, 1};

static void random_cases(int cases)
{
    static const convolve_dtype types[][2] = {{CONVOLVE_FLOAT32, CONVOLVE_FLOAT32},
                                              {CONVOLVE_FLOAT64, CONVOLVE_FLOAT64},
                                              {CONVOLVE_UINT8, CONVOLVE_UINT8},
                                              {CONVOLVE_UINT16, CONVOLVE_FLOAT32},
                                              {CONVOLVE_UINT8, CONVOLVE_FLOAT32}};
    int ran = 0;
    for (int i = 0; i < cases; i++) {
        s_case c;
        memset(&c, 0, sizeof c);
        c.backend = CONVOLVE_BACKEND_CUDA;
        c.ndim = (int)h_randint(1, 3);
        const char *names[32];
        int ns = cuda_strategies(c.ndim, names, 32);
        c.strategy = h_randint(0, 4) ? names[h_randint(0, ns - 1)] : NULL;
        int t = (int)h_randint(0, 4);
        c.in_type = types[t][0], c.out_type = types[t][1];
        c.channels = h_randint(0, 3) ? 1 : (size_t)h_randint(2, 4);
        const long big[3] = {g_small ? 120 : 100000, g_small ? 26 : 700, g_small ? 9 : 70};
        for (int a = 0; a < c.ndim; a++) {
            c.shape[a] = (size_t)h_randint(1, big[c.ndim - 1]);
            long kmax = h_randint(0, 4) ? (c.ndim == 3 ? 5 : 9) : (long)(2 * c.shape[a] + 3);
            kmax = kmax > (c.ndim == 3 ? 9 : 41) ? (c.ndim == 3 ? 9 : 41) : kmax;
            c.ksize[a] = (size_t)h_randint(1, kmax);
            c.origin[a] = h_randint(-(long)(c.ksize[a] / 2), (long)((c.ksize[a] - 1) / 2));
        }
        if (c.shape[0] < 3)
            c.shape[0] = 3 + (size_t)h_randint(0, 5); /* room for slabs */
        c.separable = c.strategy && strcmp(c.strategy, "separable") == 0 ? 1 : (int)h_randint(0, 1);
        c.mode = (convolve_mode)h_randint(0, 4);
        c.cval = h_randint(0, 1) ? h_uniform(-2, 2) : 0;
        c.layout = (int)h_randint(0, H_LAYOUT_KINDS - 1);
        c.exact = 1; /* fft too: its slabs run the whole array's tiles */
        /* slabs of 1 to a few rows (shorter than the filter, often), or, with
         * several devices, an automatic budget and the slabs shared */
        /* the emulation launches slowly: there, 3 to 8 slabs; at most 64 on a GPU */
        long lo = g_small ? (long)c.shape[0] / 8 + 1 : (long)c.shape[0] / 64 + 1;
        size_t rows = (size_t)h_randint(lo, g_small ? (long)c.shape[0] / 3 + 1
                                                    : (long)(c.shape[0] / 3 + 1));
        if (g_devices > 1 && h_randint(0, 2) == 0) {
            c.devices = h_randint(0, 1) ? k_two : NULL;
            c.device_count = c.devices ? 2 : -1;
            c.budget = h_randint(0, 1) ? budget_for(&c, rows) : 0;
            c.min_slabs = c.shape[0] > 1 ? 2 : 1;
        } else {
            /* one device listed: streamed whatever the array's size, in
             * slabs of `rows` rows (the budget leaves room for no more) */
            c.devices = k_two;
            c.device_count = 1;
            c.budget = budget_for(&c, rows);
            c.min_slabs = rows < c.shape[0] ? 2 : 1;
        }
        /* now and then the caller's arrays pinned: copied straight (packed) */
        c.pin = h_randint(0, 3) == 0;
        if (c.pin && h_randint(0, 1))
            c.layout = H_PACKED;
        /* a quarter of the cases whose types have one size run in place */
        c.in_place = t <= 2 && h_randint(0, 3) == 0;
        c.route = (const char *[]){NULL, "slabs", "copy"}[h_randint(0, 2)];
        ran += s_run_case(&c);
    }
    CHECK(ran > cases / 2, "%d of %d cases ran", ran, cases);
}

/* The FFT streamed in several slabs equals its one-shot run byte for byte
 * (its slabs run the whole array's groups of tiles): every mode, 1-D to
 * 3-D, channels, pinned and in place, one device and two, in groups of one
 * tile (CONVOLVE_FFT_GROUP_POINTS=1) and the default's (one slab unless
 * the array is large). */
static void fft_slabs(void)
{
    static const struct {
        int ndim;
        size_t shape[3], ksize[3];
        size_t rows; /* the budget's slab rows (rounded up to the groups) */
    } k_geo[] = {
        /* shapes whose one-shot plan tiles the slowest axis (fft_extents
         * tiles only axes past 16384 points): tiles of 512 (504 outputs),
         * 512 (504), 1024 (1005), 384 (380) */
        {1, {20000}, {9}, 1200},
        {2, {20000, 2}, {9, 3}, 1200},
        {2, {17000, 3}, {20, 3}, 2100},
        {3, {17000, 2, 2}, {5, 3, 3}, 800},
    };
    static const convolve_dtype types[][2] = {{CONVOLVE_FLOAT32, CONVOLVE_FLOAT32},
                                              {CONVOLVE_FLOAT64, CONVOLVE_FLOAT64},
                                              {CONVOLVE_UINT8, CONVOLVE_FLOAT32},
                                              {CONVOLVE_UINT16, CONVOLVE_UINT16}};
    const size_t ng = sizeof k_geo / sizeof k_geo[0];
    for (size_t i = 0; i < ng * 5; i++) {
        s_case c;
        memset(&c, 0, sizeof c);
        c.backend = CONVOLVE_BACKEND_CUDA;
        c.strategy = "fft";
        c.ndim = k_geo[i % ng].ndim;
        c.mode = (convolve_mode)(i % 5);
        c.cval = c.mode == CONVOLVE_MODE_CONSTANT ? 0.75 : 0;
        for (int a = 0; a < c.ndim; a++) {
            c.shape[a] = k_geo[i % ng].shape[a];
            c.ksize[a] = k_geo[i % ng].ksize[a];
            c.origin[a] = h_randint(-(long)(c.ksize[a] / 2), (long)((c.ksize[a] - 1) / 2));
        }
        c.channels = i % 3 == 2 ? 3 : 1;
        c.in_type = types[i % 4][0], c.out_type = types[i % 4][1];
        c.layout = (int)h_randint(0, H_LAYOUT_KINDS - 1);
        c.exact = 1;
        c.fft_groups = i % 7 != 6;
        c.devices = k_two;
        c.device_count = g_devices > 1 && i % 4 == 3 ? 2 : 1;
        if (c.device_count == 2 && g_devices > 2) /* every device of the host */
            c.devices = NULL, c.device_count = -1;
        c.budget = budget_for(&c, k_geo[i % ng].rows);
        c.min_slabs = c.fft_groups ? 2 : 1;
        c.pin = i % 5 == 1;
        c.in_place = i % 6 == 4 &&
                     convolve_dtype_size(c.in_type) == convolve_dtype_size(c.out_type);
        s_run_case(&c);
    }
}

/* Separable filters on integer images whose rows are not of interleaved
 * channels (planar, every other element along x): the slabs, packed, run
 * the kernel the one-shot run does (the fused integer kernels serve rows of
 * interleaved channels only, by the whole array's layout), so streamed and
 * one shot agree byte for byte. */
static void integer_layouts(void)
{
    static const struct {
        convolve_dtype t;
        size_t C;
    } imgs[] = {{CONVOLVE_UINT8, 1},
                {CONVOLVE_UINT8, 3},
                {CONVOLVE_UINT8, 4},
                {CONVOLVE_UINT16, 1},
                {CONVOLVE_UINT16, 3}};
    static const int layouts[] = {H_PACKED, H_PLANAR, H_STEPPED};
    for (size_t i = 0; i < 15; i++) {
        s_case c;
        memset(&c, 0, sizeof c);
        c.backend = CONVOLVE_BACKEND_CUDA;
        c.strategy = "separable";
        c.ndim = 2, c.shape[0] = 41, c.shape[1] = 29;
        c.ksize[0] = c.ksize[1] = 7;
        c.separable = 1;
        c.mode = (convolve_mode)(i % 5);
        c.cval = c.mode == CONVOLVE_MODE_CONSTANT ? 3.0 : 0;
        c.channels = imgs[i % 5].C;
        c.in_type = imgs[i % 5].t;
        c.out_type = CONVOLVE_FLOAT32;
        c.layout = layouts[i / 5];
        c.exact = 1;
        c.devices = k_two;
        c.device_count = 1;
        c.budget = budget_for(&c, 9);
        c.min_slabs = 2;
        s_run_case(&c);
    }
    printf("test_gpu_stream: integer images of every layout, separable: checked\n");
}

/* CONVOLVE_DEVICE_BUDGET streams a plan made with budget 0; a budget too
 * small for one slab is DEVICE_OUT_OF_MEMORY for a CUDA plan, and moves an
 * AUTO plan to the CPU. */
static void budgets(void)
{
    s_case c;
    memset(&c, 0, sizeof c);
    c.backend = CONVOLVE_BACKEND_CUDA;
    c.strategy = "direct";
    c.in_type = c.out_type = CONVOLVE_FLOAT32;
    c.ndim = 2, c.shape[0] = g_small ? 30 : 3000, c.shape[1] = g_small ? 17 : 1777;
    c.channels = 1, c.ksize[0] = c.ksize[1] = 5;
    c.exact = 1;
    char text[64];
    if (g_small) /* bytes */
        snprintf(text, sizeof text, "%zu", budget_for(&c, c.shape[0] / 7));
    else /* kibibytes */
        snprintf(text, sizeof text, "%zuK", budget_for(&c, c.shape[0] / 7) / 1024);
    setenv("CONVOLVE_DEVICE_BUDGET", text, 1);
    c.min_slabs = 5;
    s_run_case(&c); /* the one-shot plan streams too here: a plan without devices */
    unsetenv("CONVOLVE_DEVICE_BUDGET");

    /* the automatic budget, which a plan of small arrays on the current
     * device does not read when it is made, is read by an execution in
     * place (in slabs): a small array, every mode */
    for (int m = 0; m < 5; m++) {
        s_case s = c;
        s.shape[0] = 41 + (size_t)m, s.shape[1] = 23;
        s.mode = (convolve_mode)m;
        s.cval = 0.25;
        s.in_place = 1;
        s.route = "slabs";
        s.min_slabs = 1;
        s_run_case(&s);
    }

    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, c.shape, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, "box:2", 2));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.device_memory_budget = 100;
    convolve_plan *p;
    size_t n = c.shape[0] * c.shape[1];
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    h_fill_typed(CONVOLVE_FLOAT32, in, n, 1.0);
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    CHECK_STATUS(ctx, convolve_execute(p, in, out), CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY);
    CHECK(strstr(convolve_last_error(ctx), "budget") != NULL, "the message names the budget: %s",
          convolve_last_error(ctx));
    convolve_plan_free(p);
    o.backend = CONVOLVE_BACKEND_AUTO;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    if (convolve_plan_backend(p) == CONVOLVE_BACKEND_CUDA) {
        CHECK_OK(ctx, convolve_execute(p, in, out));
        CHECK(convolve_plan_backend(p) == CONVOLVE_BACKEND_CPU, "AUTO moved to the CPU");
    }
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(in), free(out);
}

/* Registering host memory: twice, or unregistering what is not, fails. */
static void registration(void)
{
    size_t bytes = 3 * 4096 + 17;
    char *buf = malloc(bytes);
    CHECK_OK(ctx, convolve_host_register(ctx, buf, bytes));
    CHECK_STATUS(ctx, convolve_host_register(ctx, buf, bytes), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_host_unregister(ctx, buf + 4096), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_OK(ctx, convolve_host_unregister(ctx, buf));
    CHECK_STATUS(ctx, convolve_host_unregister(ctx, buf), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_host_register(ctx, NULL, bytes), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_host_register(ctx, buf, 0), CONVOLVE_ERROR_INVALID_ARGUMENT);
    free(buf);
}

/* Emulation only (a GPU ignores CVK_EMU_FAIL_MALLOC_DEVICE): device 1's
 * allocations fail; the run over both devices says so (naming the device),
 * nothing hangs or leaks, and the plan works once the device does again. */
static void device_failure(void)
{
    if (!g_emulated || g_devices < 2)
        return;
    size_t shape[2] = {60, 21}, n = 60 * 21;
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, "box:1", 2));
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    h_fill_typed(CONVOLVE_FLOAT32, in, n, 1.0);
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.devices = k_two;
    o.device_count = 2;
    o.device_memory_budget = 3 * 8 * 21 * 8;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
#ifdef CONVOLVE_WITH_CUDA
    /* no idle pipeline of the earlier cases to serve device 1 without
     * allocating */
    (void)cvcu_stream_release_idle(0);
    (void)cvcu_stream_release_idle(1);
#endif
    setenv("CVK_EMU_FAIL_MALLOC_DEVICE", "1", 1);
    CHECK_STATUS(ctx, convolve_execute(p, in, out), CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY);
    CHECK(strstr(convolve_last_error(ctx), "device 1") != NULL, "the device is named: %s",
          convolve_last_error(ctx));
    unsetenv("CVK_EMU_FAIL_MALLOC_DEVICE");
    CHECK_OK(ctx, convolve_execute(p, in, out));
    printf("test_gpu_stream: a failing device (emulated): checked\n");
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(in), free(out);
}

/* Several devices: slabs of a quarter of a device's share, but not thinner
 * than 8 halos unless that leaves a device without a slab (src/stream.c). */
static void slab_shares(void)
{
    if (g_devices < 2)
        return;
    static const struct {
        size_t rows, k;
        int slabs;
    } t[] = {
        {200, 9, 4}, /* 8 halos (64 rows), not 200 / 8 = 25 */
        {40, 9, 2},  /* half the rows each: 8 halos would leave one device idle */
        {200, 3, 8}, /* a short filter: 25 rows, 8 slabs */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        s_case c;
        memset(&c, 0, sizeof c);
        c.backend = CONVOLVE_BACKEND_CUDA;
        c.strategy = "direct";
        c.in_type = c.out_type = CONVOLVE_FLOAT32;
        c.ndim = 2, c.shape[0] = t[i].rows, c.shape[1] = 21;
        c.channels = 1, c.ksize[0] = t[i].k, c.ksize[1] = 3;
        c.mode = CONVOLVE_MODE_REFLECT;
        c.devices = k_two, c.device_count = 2;
        c.exact = 1;
        c.min_slabs = c.max_slabs = t[i].slabs;
        s_run_case(&c);
    }
}

/* Pinned packed arrays are copied straight from the caller's input, but an
 * edge slab's rows past the array come from the mode: those are gathered
 * and copied beside the direct rows. Every mode, 1-D to 3-D: a short
 * filter, a filter longer than the slabs, and one longer than the array
 * (slabs reaching past both ends); each also in place, in slabs (own rows
 * copied straight, halo rows from the saved store; on the emulation, half
 * of them). */
static void pinned_edges(void)
{
    static const convolve_mode modes[] = {CONVOLVE_MODE_REFLECT, CONVOLVE_MODE_MIRROR,
                                          CONVOLVE_MODE_NEAREST, CONVOLVE_MODE_WRAP,
                                          CONVOLVE_MODE_CONSTANT};
    const size_t n0[3] = {g_small ? 97 : 4099, g_small ? 23 : 301, g_small ? 13 : 61};
    const size_t k_long[3] = {41, 41, 9};
    for (int ndim = 1; ndim <= 3; ndim++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            for (int v = 0; v < 6; v++) {
                const int in_place = v >= 3;
                if (in_place && g_emulated && (m + (size_t)v) % 2)
                    continue;
                s_case c;
                memset(&c, 0, sizeof c);
                c.backend = CONVOLVE_BACKEND_CUDA;
                /* the emulation compiles each generated kernel (direct's)
                 * for seconds: there the chapter's basic kernel */
                c.strategy = g_emulated ? "basic" : "direct";
                c.in_type = c.out_type = CONVOLVE_FLOAT32;
                c.ndim = ndim;
                const int w = v % 3; /* the filter variant */
                c.in_place = in_place;
                c.route = "slabs"; /* the store, through the pipeline */
                c.shape[0] = w == 2 ? k_long[ndim - 1] / 2 : n0[ndim - 1];
                c.shape[1] = ndim > 1 ? (g_small ? 9 : 77) : 1;
                c.shape[2] = ndim > 2 ? 7 : 1;
                c.channels = 1;
                c.ksize[0] = w == 0 ? 3 : k_long[ndim - 1];
                c.ksize[1] = c.ksize[2] = 3;
                c.origin[0] = w == 0 ? 0 : 1;
                c.mode = modes[m];
                c.cval = 0.5;
                c.layout = H_PACKED;
                c.pin = 1;
                c.exact = 1;
                size_t rows = w == 0 ? c.shape[0] / 5 : w == 1 ? c.ksize[0] / 6 : 2;
                c.devices = k_two, c.device_count = 1;
                c.budget = budget_for(&c, rows);
                c.min_slabs = 2;
                s_run_case(&c);
            }
}

/* Waits for the pinned pool's background pinning (src/cuda/pinned_pool.c). */
static void settle_pinning(void)
{
#ifdef CONVOLVE_WITH_CUDA
    cvcu_pinned_settle();
#endif
}

/* One streamed run of a 2-D float32 3x3 problem of `rows` x 33 on device 0
 * in slabs of slab_rows rows (the arrays pinned where `pin`), with
 * CVK_EMU_FAIL_PIN_AFTER=knob: status `want`, and on success (or on a rerun
 * without the knob after a failure) the one-shot run's bytes in
 * `want_slabs` slabs. */
static void staging_run(size_t rows, size_t slab_rows, convolve_mode mode, int pin,
                        const char *knob, convolve_status want, size_t want_slabs)
{
    const size_t shape[2] = {rows, 33}, ks[2] = {3, 3}, n = rows * 33;
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    double w[9];
    h_fill(w, 9);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));
    float *in = malloc(n * sizeof *in), *one = malloc(n * sizeof *one),
          *out = malloc(n * sizeof *out);
    h_fill_typed(CONVOLVE_FLOAT32, in, n, 4.0);
    h_poison(CONVOLVE_FLOAT32, one, n);
    h_poison(CONVOLVE_FLOAT32, out, n);
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = "basic";
    o.mode = mode;
    o.cval = 0.5;
    CHECK_OK(ctx, convolve_run(ctx, &l, in, &l, one, f, &o));
    s_case c;
    memset(&c, 0, sizeof c);
    c.in_type = c.out_type = CONVOLVE_FLOAT32;
    c.ndim = 2, c.shape[0] = rows, c.shape[1] = 33, c.channels = 1;
    c.ksize[0] = c.ksize[1] = 3;
    o.devices = k_two, o.device_count = 1;
    o.device_memory_budget = budget_for(&c, slab_rows);
    s_progress_log log = {0, -1, {0}, 1};
    o.progress = s_on_progress, o.progress_user = &log;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    if (pin) {
        CHECK_OK(ctx, convolve_host_register(ctx, in, n * sizeof *in));
        CHECK_OK(ctx, convolve_host_register(ctx, out, n * sizeof *out));
    }
    /* the pool's background pinning reads the knob too: settled first */
    settle_pinning();
    setenv("CVK_EMU_FAIL_PIN_AFTER", knob, 1);
    CHECK_STATUS(ctx, convolve_execute(p, in, out), want);
    unsetenv("CVK_EMU_FAIL_PIN_AFTER");
    if (want != CONVOLVE_OK) {
        CHECK(strstr(convolve_last_error(ctx), "pinned staging") != NULL,
              "the message names the staging: %s", convolve_last_error(ctx));
        log = (s_progress_log){0, -1, {0}, 1};
        CHECK_OK(ctx, convolve_execute(p, in, out));
    }
    CHECK(memcmp(out, one, n * sizeof *out) == 0,
          "staging: %zu rows in slabs of %zu, %s%s: the streamed run differs from the one-shot "
          "run",
          rows, slab_rows, convolve_mode_name(mode), pin ? ", pinned" : "");
    CHECK(log.last.slabs_total == want_slabs, "staging: %zu slabs, want %zu", log.last.slabs_total,
          want_slabs);
    if (pin) {
        CHECK_OK(ctx, convolve_host_unregister(ctx, in));
        CHECK_OK(ctx, convolve_host_unregister(ctx, out));
    }
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(in), free(one), free(out);
}

/* Emulation only (CVK_EMU_FAIL_PIN_AFTER), and first: the process's pinned
 * pool (src/cuda/pinned_pool.c) holds nothing yet. The first host-array
 * run on the device primes it: CVI_STREAM_BUFFERS buffers of the staging
 * size pinned in the background, taken later with pinning failing. With
 * those held (the pool empty), a slot takes its staging (one pinned buffer
 * for its input and output rows) when a slab first reaches it, and only
 * what the slab needs: pinned packed arrays in CONSTANT mode (no row
 * gathered, the output copied straight) pin nothing; a run in one slab
 * pins one buffer; a run in three slabs of that size whose second slot
 * cannot pin (the first takes the pool's buffer) fails with
 * DEVICE_OUT_OF_MEMORY naming the staging, leaking nothing (ASan), and the
 * plan runs once pinning works again. */
static void staging_pins(void)
{
    if (!g_emulated)
        return;
    staging_run(60, 20, CONVOLVE_MODE_CONSTANT, 1, "0", CONVOLVE_OK, 3);
#ifdef CONVOLVE_WITH_CUDA
    void *held[CVI_STREAM_BUFFERS + 1] = {0};
    size_t held_size[CVI_STREAM_BUFFERS + 1] = {0};
    const size_t staging = cvi_stream_staging_bytes();
    settle_pinning();
    setenv("CVK_EMU_FAIL_PIN_AFTER", "0", 1);
    for (int i = 0; i <= CVI_STREAM_BUFFERS; i++) {
        const cudaError_t e = cvcu_pinned_take(staging, &held[i], &held_size[i]);
        CHECK((i < CVI_STREAM_BUFFERS) == (e == cudaSuccess && held[i] && held_size[i] >= staging),
              "primed pool: take %d of %d MiB: %s", i, (int)(staging >> 20),
              e == cudaSuccess ? "taken" : "not taken");
    }
    unsetenv("CVK_EMU_FAIL_PIN_AFTER");
#endif
    staging_run(20, 20, CONVOLVE_MODE_REFLECT, 0, "1", CONVOLVE_OK, 1);
    staging_run(60, 20, CONVOLVE_MODE_REFLECT, 0, "0", CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY, 3);
#ifdef CONVOLVE_WITH_CUDA
    for (int i = 0; i < CVI_STREAM_BUFFERS; i++)
        cvcu_pinned_give(held[i], held_size[i]);
#endif
    printf("test_gpu_stream: pinned staging primed, taken slot by slot (emulated): checked\n");
}

/* *c = a float32 2-D case of one channel, packed, exact, on the GPU's
 * direct strategy (basic in the emulation); shape, filter and the rest
 * zero for the caller to set. */
static void f32_2d(s_case *c)
{
    memset(c, 0, sizeof *c);
    c->backend = CONVOLVE_BACKEND_CUDA;
    c->strategy = g_emulated ? "basic" : "direct";
    c->in_type = c->out_type = CONVOLVE_FLOAT32;
    c->ndim = 2, c->channels = 1;
    c->layout = H_PACKED;
    c->exact = 1;
}

/* Fewer slabs than a device's slots (those no slab reaches take no
 * staging): one and two slabs on one device, one a device on two; every
 * mode, pageable, pinned, the input alone pinned, in place. */
static void few_slabs(void)
{
    for (int v = 0; v < 16; v++) {
        const int two = v % 2 && g_devices > 1;
        s_case c;
        f32_2d(&c);
        /* two devices: rows for one slab a device (8 halos would leave
         * one idle: slab_shares) */
        c.shape[0] = two ? 40 : g_small ? 23 : 601, c.shape[1] = g_small ? 13 : 301;
        c.ksize[0] = two ? 9 : 5, c.ksize[1] = 3;
        c.origin[0] = v % 3 - 1;
        c.mode = (convolve_mode)(v % 5);
        c.cval = 0.5;
        c.pin = v / 4 % 3;
        c.in_place = v / 4 == 3;
        c.route = "slabs";
        c.devices = k_two;
        c.device_count = two ? 2 : 1;
        const size_t slabs = two ? 2 : 1 + (size_t)(v / 2 % 2);
        c.budget = two ? 0 : budget_for(&c, (c.shape[0] + slabs - 1) / slabs);
        c.min_slabs = c.max_slabs = (int)slabs;
        s_run_case(&c);
    }
}

/* Staging that grows: small slabs, then a plan whose slabs need more than
 * the pool's buffers hold, and with only the input pinned (the output
 * staged): a slot first reached by a middle slab takes room for output rows
 * alone, and takes a larger buffer when an edge slab (rows past the array
 * gathered) reaches it. */
static void staging_grows(void)
{
    for (int v = 0; v < 3; v++) {
        s_case c;
        f32_2d(&c);
        /* slabs of about 330 rows of 4 KiB: 1.3 MiB of output rows, 2.6 MiB
         * with the input's (past the 2 MiB class of the output's); 4 or more slabs,
         * so that a slot first reached by a middle slab gets the last */
        const size_t rows = v == 0 ? 5 : 400;
        c.shape[0] = 5 * rows, c.shape[1] = 1024;
        c.ksize[0] = c.ksize[1] = 3;
        c.mode = CONVOLVE_MODE_REFLECT;
        c.pin = v == 1 ? 2 : 0;
        c.devices = k_two, c.device_count = 1;
        c.budget = budget_for(&c, rows);
        c.min_slabs = 4;
        s_run_case(&c);
    }
}

static void cancellation(void)
{
    s_case c;
    memset(&c, 0, sizeof c);
    c.backend = CONVOLVE_BACKEND_CUDA;
    c.in_type = c.out_type = CONVOLVE_FLOAT32;
    c.ndim = 2, c.shape[0] = g_small ? 40 : 4000, c.shape[1] = g_small ? 19 : 1999;
    c.channels = 1, c.ksize[0] = c.ksize[1] = 3;
    c.budget = budget_for(&c, c.shape[0] / 10);
    s_cancel_case(&c, 1);
    s_cancel_case(&c, 4);
    if (g_devices > 1) {
        c.device_count = -1;
        s_cancel_case(&c, 2);
    }
}

/* A slow progress callback (the CLI's releases pages, and may wait on the
 * disk): the workers may not run ahead of it by more than 5 slabs (3 in
 * flight and 2 more) a device, so what the callback releases bounds what
 * the run holds. Each call sleeps; the slabs done between two calls must
 * stay within that lag, and the result equals the one-shot run's. */
typedef struct {
    int calls;
    size_t last, max_jump;
} slow_log;

static int slow_progress(void *user, const convolve_progress *p)
{
    slow_log *l = user;
    if (l->calls++ > 0 && p->slabs_done - l->last > l->max_jump)
        l->max_jump = p->slabs_done - l->last;
    l->last = p->slabs_done;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return 0;
}

static void slow_callback(void)
{
    const size_t shape[2] = {g_small ? 120 : 400, 64};
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    const size_t n = shape[0] * shape[1];
    float *in = malloc(n * sizeof *in), *want = malloc(n * sizeof *want),
          *out = malloc(n * sizeof *out);
    h_fill_typed(CONVOLVE_FLOAT32, in, n, 1.0);
    h_poison(CONVOLVE_FLOAT32, out, n);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, "box:1", 2));
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = "direct";
    CHECK_OK(ctx, convolve_run(ctx, &l, in, &l, want, f, &o));
    const int devices = g_devices > 1 ? g_devices : 1; /* device_count -1: every device */
    if (devices > 1)
        o.device_count = -1;
    o.device_memory_budget = 3 * (2 + 2) * shape[1] * 8; /* slabs of 2 rows */
    slow_log log = {0, 0, 0};
    o.progress = slow_progress;
    o.progress_user = &log;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    CHECK_OK(ctx, convolve_execute(p, in, out));
    CHECK(memcmp(out, want, n * sizeof *out) == 0, "slow callback: the result differs from "
                                                   "the one-shot run's");
    CHECK(log.last == shape[0] / 2, "slow callback: %zu slabs reported of %zu", log.last,
          shape[0] / 2);
    CHECK(log.max_jump <= (size_t)devices * 5,
          "slow callback: %zu slabs done between two "
          "calls, more than 5 a device (%d device%s)",
          log.max_jump, devices, devices > 1 ? "s" : "");
    printf("test_gpu_stream: slow callback: %d calls, at most %zu slabs between two\n", log.calls,
           log.max_jump);
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(in), free(want), free(out);
}

/* ---- the process's parked worker threads and pinned size classes -------- */

#ifdef CONVOLVE_WITH_CUDA
/* A 2-D float32 plan of rows x 37 (3x3 weights w) streamed on device 0 in
 * slabs of about slab_rows rows, in context c. */
static convolve_plan *streamed_plan(convolve_context *c, size_t rows, size_t slab_rows,
                                    convolve_filter *f, convolve_layout *l)
{
    const size_t shape[2] = {rows, 37};
    convolve_layout_init(l, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.strategy = "basic";
    o.mode = CONVOLVE_MODE_MIRROR;
    o.devices = k_two, o.device_count = 1;
    s_case sc;
    memset(&sc, 0, sizeof sc);
    sc.in_type = sc.out_type = CONVOLVE_FLOAT32;
    sc.ndim = 2, sc.shape[0] = rows, sc.shape[1] = 37, sc.channels = 1;
    sc.ksize[0] = sc.ksize[1] = 3;
    o.device_memory_budget = budget_for(&sc, slab_rows);
    convolve_plan *p = NULL;
    if (convolve_plan_create(c, &p, l, l, f, &o) != CONVOLVE_OK)
        return NULL;
    return p;
}

/* The layout and options of the one-shot run of the same problem (not
 * streamed), and its result. */
static void one_shot_setup(size_t rows, convolve_layout *l, convolve_options *o)
{
    const size_t shape[2] = {rows, 37};
    convolve_layout_init(l, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_options_init(o);
    o->backend = CONVOLVE_BACKEND_CUDA;
    o->strategy = "basic";
    o->mode = CONVOLVE_MODE_MIRROR;
}

static void one_shot(size_t rows, convolve_filter *f, const float *in, float *out)
{
    convolve_layout l;
    convolve_options o;
    one_shot_setup(rows, &l, &o);
    CHECK_OK(ctx, convolve_run(ctx, &l, in, &l, out, f, &o));
}

/* cvcu_pinned_class: whole 2 MiB, the rest rounded up to a power of two
 * from 64 KiB; and the pool gives a buffer back to a request of its class. */
static void pinned_classes(void)
{
    const size_t K = 1024, M = 1024 * K;
    static const size_t want[][2] = {
        {1, 64 * 1024},
        {64 * 1024, 64 * 1024},
        {64 * 1024 + 1, 128 * 1024},
        {300 * 1024, 512 * 1024},
        {(size_t)1 << 20, (size_t)1 << 20},
        {((size_t)1 << 20) + 1, (size_t)2 << 20},
        {(size_t)2 << 20, (size_t)2 << 20},
        {((size_t)2 << 20) + 1, ((size_t)2 << 20) + 64 * 1024},
        /* a 2048^2 float32 slab: 272 rows of 8 KiB in, 256 out */
        {(272 + 256) * 8192, ((size_t)4 << 20) + 128 * 1024},
        /* a 2000^2 one: 266 rows of 8000 bytes in, 250 out (256-aligned) */
        {266 * 8000 + 2000128, (size_t)4 << 20},
        {((size_t)16 << 20) + 300 * 1024, ((size_t)16 << 20) + 512 * 1024},
        {SIZE_MAX, SIZE_MAX},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        size_t got = cvcu_pinned_class(want[i][0]);
        CHECK(got == want[i][1], "pinned class of %zu bytes: %zu, want %zu", want[i][0], got,
              want[i][1]);
    }
    for (int i = 0; i < 2000; i++) { /* random sizes: the rule's bounds */
        size_t b = (size_t)h_randint(1, 40 * (long)M);
        const size_t c = cvcu_pinned_class(b), whole = b / (2 * M) * (2 * M), tail = b - whole;
        const size_t step = c - whole;
        CHECK(tail == 0 ? c == b
                        : step >= tail && step >= 64 * K && step <= 2 * M &&
                              (step & (step - 1)) == 0 && (step == 64 * K || step < 2 * tail),
              "pinned class of %zu bytes: %zu", b, c);
    }
    /* a buffer given back serves a later request of its class (a size no
     * staging of the earlier cases reaches: slabs hold about 64 MiB) */
    void *a = NULL, *b = NULL;
    size_t as = 0, bs = 0;
    const size_t first = ((size_t)160 << 20) + 70 * 1024, second = first + 50 * 1024;
    CHECK(cvcu_pinned_take(first, &a, &as) == cudaSuccess && a, "pinned take");
    CHECK(as == ((size_t)160 << 20) + 128 * 1024, "pinned take of %zu bytes: %zu", first, as);
    cvcu_pinned_give(a, as);
    CHECK(cvcu_pinned_take(second, &b, &bs) == cudaSuccess && b == a && bs == as,
          "a request of the same class takes the buffer given back (%p %zu, %p %zu)", a, as, b, bs);
    cvcu_pinned_give(b, bs);
    printf("test_gpu_stream: pinned size classes: checked\n");
}

/* A random 3x3 filter, a random float32 input of `rows` x 37, its one-shot
 * result, room for an output and a plan streaming it in slabs of
 * slab_rows rows (NULL if it could not be made): what the cases below run. */
typedef struct {
    convolve_filter *f;
    size_t rows, n;
    float *in, *want, *out;
    convolve_layout l;
    convolve_plan *p;
} small_case;

static void small_case_make(small_case *c, size_t rows, size_t slab_rows)
{
    double w[9];
    h_fill(w, 9);
    c->f = NULL;
    CHECK_OK(ctx, convolve_filter_create(ctx, &c->f, 2, (const size_t[]){3, 3}, w));
    c->rows = rows, c->n = rows * 37;
    c->in = malloc(c->n * sizeof *c->in);
    c->want = malloc(c->n * sizeof *c->want);
    c->out = malloc(c->n * sizeof *c->out);
    h_fill_typed(CONVOLVE_FLOAT32, c->in, c->n, 2.0);
    one_shot(rows, c->f, c->in, c->want);
    c->p = streamed_plan(ctx, rows, slab_rows, c->f, &c->l);
}

static void small_case_free(small_case *c)
{
    convolve_plan_free(c->p);
    convolve_filter_free(c->f);
    free(c->in), free(c->want), free(c->out);
}

/* Pinned memory of the pool (convolve_host_alloc): the arguments checked;
 * a streamed run writes its output straight into it, bit for bit the
 * one-shot run; given back, the pool hands the same buffer to the next
 * request of its size, also with CONVOLVE_HOST_ALLOC_POOLED; POOLED finds
 * nothing for a size the pool has not held until convolve_host_reserve
 * pinned one, and a reserve past the pool's limit pins nothing; free
 * ignores NULL and pointers it did not hand out. */
static void host_alloc(void)
{
    void *mem = (void *)&mem;
    CHECK_STATUS(ctx, convolve_host_alloc(ctx, 0, 0, &mem), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK(mem == NULL, "host_alloc: *ptr NULL on an error");
    CHECK_STATUS(ctx, convolve_host_alloc(ctx, 64, 2, &mem), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_host_alloc(ctx, 64, 0, NULL), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(NULL, convolve_host_alloc(NULL, 64, 0, &mem), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_host_reserve(ctx, 0), CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_host_free(NULL);
    convolve_host_free(&mem); /* not the pool's: ignored */

    small_case c;
    small_case_make(&c, 70, 20);
    CHECK(c.p != NULL, "host_alloc: plan: %s", convolve_last_error(ctx));
    const size_t bytes = c.n * sizeof(float);
    CHECK_OK(ctx, convolve_host_alloc(ctx, bytes, 0, &mem));
    CHECK(mem && (uintptr_t)mem % 256 == 0, "host_alloc: %p, aligned", mem);
    void *in2 = NULL;
    if (mem && c.p) {
        float *out = mem;
        h_poison(CONVOLVE_FLOAT32, out, c.n);
        CHECK_OK(ctx, convolve_execute(c.p, c.in, out));
        CHECK(memcmp(out, c.want, bytes) == 0,
              "host_alloc: the streamed run into pool memory differs from the one-shot run");
        /* the input in pool memory too (both copied straight) */
        CHECK_OK(ctx, convolve_host_alloc(ctx, bytes, 0, &in2));
        CHECK(in2 && in2 != mem, "host_alloc: a second buffer (%p, %p)", in2, mem);
        if (in2) {
            memcpy(in2, c.in, bytes);
            h_poison(CONVOLVE_FLOAT32, out, c.n);
            CHECK_OK(ctx, convolve_execute(c.p, in2, out));
            CHECK(memcmp(out, c.want, bytes) == 0,
                  "host_alloc: pinned input and output: differs from the one-shot run");
        }
    }
    convolve_host_free(mem); /* in2 still held: the pool's only buffer of this class */
    void *again = NULL;
    CHECK_OK(ctx, convolve_host_alloc(ctx, bytes, CONVOLVE_HOST_ALLOC_POOLED, &again));
    CHECK(again == mem, "host_alloc: POOLED gets the buffer given back (%p, %p)", again, mem);
    convolve_host_free(again);
    CHECK_OK(ctx, convolve_host_alloc(ctx, bytes - 5, 0, &again));
    CHECK(again == mem, "host_alloc: a request of its class gets it (%p, %p)", again, mem);
    convolve_host_free(again);
    convolve_host_free(in2);
    small_case_free(&c);

    /* POOLED takes what the pool holds of a size (at most twice its
     * class) until nothing is left; convolve_host_reserve then pins one */
    const size_t odd = ((size_t)5 << 20) + 12345; /* staging buffers (16 MiB) do not fit it */
    void *held[17];
    int nheld = 0;
    do {
        mem = NULL;
        CHECK_OK(ctx, convolve_host_alloc(ctx, odd, CONVOLVE_HOST_ALLOC_POOLED, &mem));
        if (mem)
            held[nheld++] = mem;
    } while (mem && nheld < 16);
    CHECK(mem == NULL,
          "host_alloc: POOLED finds nothing once the pool's fitting buffers are taken");
    CHECK_OK(ctx, convolve_host_reserve(ctx, odd));
    settle_pinning();
    CHECK_OK(ctx, convolve_host_alloc(ctx, odd, CONVOLVE_HOST_ALLOC_POOLED, &mem));
    CHECK(mem != NULL, "host_alloc: POOLED after convolve_host_reserve");
    if (mem) {
        ((char *)mem)[0] = 1, ((char *)mem)[odd - 1] = 2;
        held[nheld++] = mem;
    }
    for (int i = 0; i < nheld; i++)
        for (int j = 0; j < i; j++)
            CHECK(held[i] != held[j], "host_alloc: a buffer handed twice");
    while (nheld > 0)
        convolve_host_free(held[--nheld]);

    /* the pool's limit (CONVOLVE_PINNED_POOL_MIB, else an eighth of the
     * host's memory) bounds what convolve_host_reserve pins: a buffer past
     * it is not pinned (a bound that did not hold would pin it here) */
    size_t limit = (size_t)1024 << 20;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        limit = (size_t)pages / 8 * (size_t)page;
    const char *env = getenv("CONVOLVE_PINNED_POOL_MIB");
    if (env && *env)
        limit = (size_t)strtoull(env, NULL, 10) << 20;
    const size_t past = limit + ((size_t)2 << 20);
    CHECK_OK(ctx, convolve_host_reserve(ctx, past));
    settle_pinning();
    mem = (void *)&mem;
    CHECK_OK(ctx, convolve_host_alloc(ctx, past, CONVOLVE_HOST_ALLOC_POOLED, &mem));
    CHECK(mem == NULL,
          "host_alloc: convolve_host_reserve of %zu MiB, past the pool's limit of "
          "%zu MiB, pinned it",
          past >> 20, limit >> 20);
    convolve_host_free(mem);
    printf("test_gpu_stream: pinned memory of the pool (convolve_host_alloc): checked\n");
}

/* Streamed executions reuse the process's parked worker threads: a second
 * execution creates none, and threads are parked after it. */
static void workers_persist(void)
{
    small_case c;
    small_case_make(&c, 90, 20);
    CHECK(c.p != NULL, "workers: plan: %s", convolve_last_error(ctx));
    int idle0, idle1, idle2;
    unsigned long made0, made1, made2;
    cvcu_workers_stats(&idle0, &made0);
    for (int run = 0; c.p && run < 2; run++) {
        h_poison(CONVOLVE_FLOAT32, c.out, c.n);
        CHECK_OK(ctx, convolve_execute(c.p, c.in, c.out));
        CHECK(memcmp(c.out, c.want, c.n * sizeof *c.out) == 0, "workers: run %d differs", run);
        cvcu_workers_stats(run ? &idle2 : &idle1, run ? &made2 : &made1);
    }
    if (c.p) {
        CHECK(made1 - made0 <= 1 && made2 == made1 && idle1 >= 1 && idle2 == idle1,
              "workers: threads made %lu then %lu, parked %d then %d (before: %d)", made1 - made0,
              made2 - made1, idle1, idle2, idle0);
    }
    small_case_free(&c);
    printf("test_gpu_stream: parked workers reused: checked\n");
}

/* A plan's first execution takes the pipeline (streams, events, device
 * buffers) an earlier execution of another plan gave back, its buffers
 * grown for larger slabs or kept where larger, and the results are the
 * one-shot ones. */
static void pipes_reused(void)
{
    small_case c[2];
    small_case_make(&c[0], 90, 20);
    small_case_make(&c[1], 300, 120); /* larger slabs: larger device images */
    CHECK(c[0].p && c[1].p, "pipes: plans: %s", convolve_last_error(ctx));
    int idle0 = 0, idle1 = 0;
    unsigned long made0 = 0, made1 = 0;
    for (int run = 0; c[0].p && c[1].p && run < 4; run++) {
        small_case *k = &c[run % 2];
        if (run == 1)
            cvcu_stream_pipes_stats(&idle0, &made0);
        h_poison(CONVOLVE_FLOAT32, k->out, k->n);
        CHECK_OK(ctx, convolve_execute(k->p, k->in, k->out));
        CHECK(memcmp(k->out, k->want, k->n * sizeof *k->out) == 0, "pipes: run %d differs", run);
    }
    cvcu_stream_pipes_stats(&idle1, &made1);
    if (c[0].p && c[1].p)
        CHECK(made1 == made0 && idle0 >= 1 && idle1 == idle0,
              "pipes: %lu made after the first run; idle %d then %d", made1 - made0, idle0, idle1);
    if (g_emulated && c[0].p) {
        /* a device image that finds no room (emulated: the next cudaMalloc
         * fails): the idle pipelines are freed and it is tried once more */
        convolve_layout l;
        convolve_options o;
        one_shot_setup(c[0].rows, &l, &o);
        convolve_plan *p = NULL; /* one shot: its images allocated at its first run */
        CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, c[0].f, &o));
        (void)cvcu_image_release_idle(0); /* no idle image to take */
        int before = 0, after = 0;
        unsigned long m = 0;
        cvcu_stream_pipes_stats(&before, &m);
        setenv("CVK_EMU_FAIL_MALLOC_NEXT", "1", 1);
        h_poison(CONVOLVE_FLOAT32, c[0].out, c[0].n);
        if (p)
            CHECK_OK(ctx, convolve_execute(p, c[0].in, c[0].out));
        unsetenv("CVK_EMU_FAIL_MALLOC_NEXT");
        cvcu_stream_pipes_stats(&after, &m);
        CHECK(p && memcmp(c[0].out, c[0].want, c[0].n * sizeof *c[0].out) == 0,
              "pipes: the run after a failed allocation differs");
        CHECK(before >= 1 && after < before, "pipes: idle %d before a failed allocation, %d after",
              before, after);
        convolve_plan_free(p);
    }
    small_case_free(&c[0]);
    small_case_free(&c[1]);
    printf("test_gpu_stream: pipelines reused across plans: checked\n");
}

/* A streamed execution on one device with the automatic budget makes its
 * slots' device buffers at least as large as the pinned staging, which
 * bounds a slab on one device: a later plan whose slabs are twice as large
 * allocates none (growing them cost 1.0 ms of a 2048^2 float32 first call
 * of 4.2 ms on an H200), and its results are the one-shot ones. */
static void buffers_kept(void)
{
    unsigned long made[2] = {0, 0};
    for (int v = 0; v < 2; v++) {
        s_case c;
        f32_2d(&c);
        /* slabs of 256 rows (CVI_STREAM_MIN_SLAB_BYTES), 2 MiB in and out,
         * then of 550 (an eighth), 4.3 MiB */
        c.shape[0] = v ? 4400 : 300, c.shape[1] = 1024;
        c.ksize[0] = c.ksize[1] = 3;
        c.mode = CONVOLVE_MODE_NEAREST;
        c.devices = k_two, c.device_count = 1; /* streamed, automatic budget */
        c.min_slabs = v ? 8 : 2;
        s_run_case(&c);
        made[v] = cvcu_stream_buffers_made();
    }
    CHECK(made[1] == made[0], "buffers: slabs twice as large allocated %lu device buffers",
          made[1] - made[0]);
    printf("test_gpu_stream: slot device buffers kept for larger slabs: checked\n");
}

/* One-shot executions on host arrays take their device images from the
 * process's idle ones (device_images.h): a first execution of a new plan
 * that fits them allocates nothing and computes what fresh images did; one
 * that does not fit allocates, and its images stay idle after it. */
static void images_reused(void)
{
    (void)cvcu_image_release_idle(0);
    small_case c; /* its `want`: a one-shot run in fresh images */
    small_case_make(&c, 90, 20);
    int idle0 = 0, idle1 = 0, idle2 = 0;
    unsigned long made0 = 0, made1 = 0, made2 = 0;
    const size_t big = 5000, bn = big * 37; /* rows of 256 bytes: past the 1 MiB of the first */
    float *in = malloc(bn * sizeof *in), *out = malloc(bn * sizeof *out),
          *want = malloc(bn * sizeof *want);
    h_fill_typed(CONVOLVE_FLOAT32, in, bn, 1.5);
    cvcu_image_stats(&idle0, &made0);
    one_shot(big, c.f, in, want);
    cvcu_image_stats(&idle1, &made1);
    CHECK(idle0 >= 2 && made1 == made0 + 2 && idle1 == idle0 + 2,
          "images: a larger shape allocated %lu, idle %d then %d", made1 - made0, idle0, idle1);
    for (int run = 0; run < 2; run++) {
        h_poison(CONVOLVE_FLOAT32, c.out, c.n);
        one_shot(c.rows, c.f, c.in, c.out);
        CHECK(memcmp(c.out, c.want, c.n * sizeof *c.out) == 0,
              "images: run %d in idle images differs from the run in fresh ones", run);
        h_poison(CONVOLVE_FLOAT32, out, bn);
        one_shot(big, c.f, in, out);
        CHECK(memcmp(out, want, bn * sizeof *out) == 0,
              "images: run %d of the larger shape differs", run);
    }
    cvcu_image_stats(&idle2, &made2);
    CHECK(made2 == made1 && idle2 == idle1 && idle2 <= CVCU_IMAGES_KEPT,
          "images: %lu allocated by shapes the idle images hold; idle %d then %d", made2 - made1,
          idle1, idle2);
    free(in), free(out), free(want);
    small_case_free(&c);
    printf("test_gpu_stream: one-shot device images reused across plans: checked\n");
}

/* Several caller threads streaming at once, each with its own context and
 * plan, each run equal to the one-shot result. */
#define CALLERS 3
typedef struct {
    size_t rows;
    convolve_filter *f;
    const float *in, *want;
    int bad; /* runs that failed or differed */
    char msg[256];
} caller_job;

static void *caller(void *p)
{
    caller_job *j = p;
    convolve_context *c = NULL;
    if (convolve_context_create(&c) != CONVOLVE_OK) {
        j->bad++;
        return NULL;
    }
    const size_t n = j->rows * 37;
    float *out = malloc(n * sizeof *out);
    convolve_layout l;
    convolve_plan *plan = streamed_plan(c, j->rows, j->rows / 5 + 1, j->f, &l);
    for (int run = 0; run < 4 && plan && out; run++) {
        memset(out, 0xFF, n * sizeof *out);
        if (convolve_execute(plan, j->in, out) != CONVOLVE_OK) {
            snprintf(j->msg, sizeof j->msg, "%s", convolve_last_error(c));
            j->bad++;
        } else if (memcmp(out, j->want, n * sizeof *out) != 0) {
            j->bad++;
        }
    }
    if (!plan || !out)
        j->bad++;
    convolve_plan_free(plan);
    free(out);
    convolve_context_free(c);
    return NULL;
}

static void concurrent_callers(void)
{
    caller_job jobs[CALLERS];
    pthread_t th[CALLERS];
    float *bufs[CALLERS][2];
    convolve_filter *f;
    double w[9];
    h_fill(w, 9);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, (const size_t[]){3, 3}, w));
    for (int t = 0; t < CALLERS; t++) {
        const size_t rows = 50 + 17 * (size_t)t, n = rows * 37;
        bufs[t][0] = malloc(n * sizeof(float));
        bufs[t][1] = malloc(n * sizeof(float));
        h_fill_typed(CONVOLVE_FLOAT32, bufs[t][0], n, 3.0);
        one_shot(rows, f, bufs[t][0], bufs[t][1]);
        jobs[t] = (caller_job){rows, f, bufs[t][0], bufs[t][1], 0, {0}};
    }
    int started[CALLERS];
    for (int t = 0; t < CALLERS; t++)
        started[t] = pthread_create(&th[t], NULL, caller, &jobs[t]) == 0;
    for (int t = 0; t < CALLERS; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        CHECK(started[t] && jobs[t].bad == 0, "concurrent caller %d: %d bad runs %s", t,
              jobs[t].bad, jobs[t].msg);
        free(bufs[t][0]), free(bufs[t][1]);
    }
    int idle;
    unsigned long made;
    cvcu_workers_stats(&idle, &made);
    CHECK(idle >= 1 && idle <= CVCU_WORKERS_IDLE_MAX, "concurrent callers: %d threads parked",
          idle);
    convolve_filter_free(f);
    printf("test_gpu_stream: %d callers streaming at once: checked\n", CALLERS);
}

/* Emulation only (CUDA itself does not survive fork()): a fork() child,
 * where the parent's parked threads do not exist, streams with threads of
 * its own (were it to hand its work to a parked thread of the parent's, it
 * would wait for ever: the alarm ends it). */
static void fork_child(void)
{
    if (!g_emulated)
        return;
    /* the caller's thread runs an OpenMP team first (a CPU plan), and the
     * output spans several 2 MiB chunks: OpenMP on that thread in the
     * child would hang (the output's prefault ran there once) */
    {
        const size_t n = 512 * 512;
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        convolve_layout l;
        convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, (const size_t[]){512, 512}, 1);
        convolve_options o;
        convolve_options_init(&o);
        o.backend = CONVOLVE_BACKEND_CPU;
        convolve_filter *f = NULL;
        CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, "box:1", 2));
        h_fill_typed(CONVOLVE_FLOAT32, x, n, 1.0);
        CHECK_OK(ctx, convolve_run(ctx, &l, x, &l, y, f, &o));
        convolve_filter_free(f);
        free(x), free(y);
    }
    small_case c;
    small_case_make(&c, 40000, 8000); /* 5.6 MiB out */
    CHECK(c.p != NULL && convolve_execute(c.p, c.in, c.out) == CONVOLVE_OK, "fork: parent's run");
    int idle;
    unsigned long made;
    cvcu_workers_stats(&idle, &made);
    CHECK(idle >= 1, "fork: no thread parked before the fork");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        int code = 0;
        cvcu_workers_stats(&idle, &made);
        if (idle != 0 || made != 0)
            code = 2;
        memset(c.out, 0xFF, c.n * sizeof *c.out);
        if (convolve_execute(c.p, c.in, c.out) != CONVOLVE_OK ||
            memcmp(c.out, c.want, c.n * sizeof *c.out))
            code = 3;
        cvcu_workers_stats(&idle, &made);
        if (made == 0 || idle == 0)
            code = 4;
        _exit(code);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork: fork or wait failed");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "fork: the child's streamed run: %s %d (2: parked threads seen, 3: wrong result, "
          "4: no thread made or parked)",
          WIFEXITED(status) ? "exit" : "signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    /* the parent's threads still serve it */
    memset(c.out, 0xFF, c.n * sizeof *c.out);
    CHECK(c.p && convolve_execute(c.p, c.in, c.out) == CONVOLVE_OK &&
              memcmp(c.out, c.want, c.n * sizeof *c.out) == 0,
          "fork: the parent's run after the fork");
    small_case_free(&c);
    printf("test_gpu_stream: streaming in a fork() child: checked\n");
}
#endif

int main(int argc, char **argv)
{
    int cases = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--small") == 0)
            g_small = 1;
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = atoi(argv[++i]);
    }
    h_seed("test_gpu_stream");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    convolve_device_info info;
    CHECK_OK(ctx, convolve_device_query(ctx, &info));
    if (!info.available) {
        printf("test_gpu_stream: skipped: %s\n", info.reason);
        convolve_context_free(ctx);
        return 77;
    }
    CHECK_OK(ctx, convolve_device_count(ctx, &g_devices));
    g_emulated = strstr(info.name, "CPU emulation") != NULL;
    printf("test_gpu_stream: %s, %d device%s\n", info.name, g_devices, g_devices == 1 ? "" : "s");
    if (g_devices < 2)
        printf("test_gpu_stream: one device: the several-device cases are skipped\n");
    staging_pins(); /* first: the pinned pool is empty */
    random_cases(cases >= 0 ? cases : g_small ? 40 : 150);
    few_slabs();
    integer_layouts();
    staging_grows();
    fft_slabs();
    budgets();
    registration();
    device_failure();
    slab_shares();
    pinned_edges();
    cancellation();
    slow_callback();
#ifdef CONVOLVE_WITH_CUDA
    pinned_classes();
    host_alloc();
    workers_persist();
    pipes_reused();
    buffers_kept();
    images_reused();
    concurrent_callers();
    fork_child();
#endif
    convolve_context_free(ctx);
    return h_finish("test_gpu_stream");
}
