/*
 * test_stream.c - the API of issue 12 on any build (CTest label cpu): the
 * new options' defaults and validation, the device count and per-device
 * query, the progress callback on a plan that runs as one slab, and
 * cancellation from it; and the CPU's slabs (a progress callback and
 * CONVOLVE_CPU_SLAB_BYTES set small): results byte for byte those of the
 * one-shot run for every mode, 1-D to 3-D, channels, strided layouts,
 * filters longer than a slab and than the array, uneven last slabs;
 * cancellation between slabs; in place (out == in), in slabs and in one,
 * and the overlaps still refused; the CPU backend's windows of output rows,
 * which its slabs are out of place: every strategy byte for byte, windows
 * that cut FFT tiles and bands, and the slab size the CPU chooses; outputs
 * newly mapped (pages not in memory, which the CPU faults in before it
 * computes) give the bytes of a written output, in one shot and in slabs,
 * and the bytes between their elements stay as they were.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include "harness.h"
#include "backend.h"
#include "internal.h" /* the plan's in-place byte counts */
#include "cpu/fast.h"
#include "stream.h" /* cvi_pages_resident */

#include <sys/mman.h>

static convolve_context *ctx;

#include "stream_cases.h"

static void api(void)
{
    convolve_options o;
    memset(&o, 0x5A, sizeof o);
    convolve_options_init(&o);
    CHECK(o.device_memory_budget == 0 && o.devices == NULL && o.device_count == 0 &&
              o.progress == NULL && o.progress_user == NULL,
          "options_init zeroes the streaming fields");
    CHECK(strcmp(convolve_status_name(CONVOLVE_ERROR_CANCELLED), "CONVOLVE_ERROR_CANCELLED") == 0,
          "CANCELLED has a name");
    CHECK(strcmp(convolve_status_description(CONVOLVE_ERROR_CANCELLED), "unknown status") != 0,
          "CANCELLED has a description");

    int count = -5;
    CHECK_OK(ctx, convolve_device_count(ctx, &count));
    CHECK(count >= 0, "device count %d", count);
    if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA))
        CHECK(count == 0, "no CUDA built in: %d devices", count);
    CHECK_STATUS(ctx, convolve_device_count(ctx, NULL), CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_device_info info;
    for (int d = 0; d < count; d++) {
        memset(&info, 0, sizeof info);
        CHECK_OK(ctx, convolve_device_query_index(ctx, d, &info));
        CHECK(info.device_count == count, "device %d: count %d", d, info.device_count);
        CHECK(info.available ? info.name[0] != 0 : info.reason[0] != 0,
              "device %d: a name or a reason", d);
    }
    CHECK_STATUS(ctx, convolve_device_query_index(ctx, count, &info),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_device_query_index(ctx, -1, &info), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_device_query_index(ctx, 0, NULL), CONVOLVE_ERROR_INVALID_ARGUMENT);

    /* pinning host memory needs a usable GPU */
    char page[64];
    if (count == 0 || !convolve_backend_built(CONVOLVE_BACKEND_CUDA)) {
        CHECK_STATUS(ctx, convolve_host_register(ctx, page, sizeof page),
                     CONVOLVE_ERROR_BACKEND_UNAVAILABLE);
        CHECK_STATUS(ctx, convolve_host_unregister(ctx, page), CONVOLVE_ERROR_BACKEND_UNAVAILABLE);
        void *mem = page;
        CHECK_STATUS(ctx, convolve_host_alloc(ctx, 64, 0, &mem),
                     CONVOLVE_ERROR_BACKEND_UNAVAILABLE);
        CHECK(mem == NULL, "convolve_host_alloc: *ptr NULL on an error");
        CHECK_STATUS(ctx, convolve_host_reserve(ctx, 64), CONVOLVE_ERROR_BACKEND_UNAVAILABLE);
        /* only what the pool holds: nothing, whether or not that is an error */
        mem = page;
        (void)convolve_host_alloc(ctx, 64, CONVOLVE_HOST_ALLOC_POOLED, &mem);
        CHECK(mem == NULL, "convolve_host_alloc POOLED without a GPU: NULL");
    }
    void *none = page;
    CHECK_STATUS(ctx, convolve_host_alloc(ctx, 0, 0, &none), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK(none == NULL, "convolve_host_alloc of 0 bytes: *ptr NULL");
    CHECK_STATUS(ctx, convolve_host_alloc(ctx, 64, 4, &none), CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_host_free(NULL);
    convolve_host_free(page); /* not from convolve_host_alloc: ignored */
    CHECK_STATUS(ctx, convolve_host_register(ctx, NULL, 64), CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(ctx, convolve_host_unregister(ctx, NULL), CONVOLVE_ERROR_INVALID_ARGUMENT);

    /* validation at plan creation */
    size_t shape[2] = {9, 11};
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, "box:1", 2));
    convolve_plan *p = NULL;
    convolve_options_init(&o);
    o.device_count = -2;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    o.device_count = 2;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    int twice[2] = {0, 0}, negative[1] = {-1};
    o.devices = twice;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    o.devices = negative;
    o.device_count = 1;
    CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o),
                 CONVOLVE_ERROR_INVALID_ARGUMENT);
    CHECK(p == NULL, "no plan after a failure");
    /* devices are ignored by CPU plans */
    int one[1] = {0};
    o.devices = one;
    o.backend = CONVOLVE_BACKEND_CPU;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    convolve_plan_free(p);
    /* a CUDA plan on a device the host does not have */
    if (count > 0) {
        int beyond[1] = {count};
        o.devices = beyond;
        o.backend = CONVOLVE_BACKEND_CUDA;
        CHECK_STATUS(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o),
                     CONVOLVE_ERROR_INVALID_ARGUMENT);
    }
    convolve_filter_free(f);
}

/* A small CPU plan runs as one slab: the callback sees 0 of 1, then 1 of 1;
 * cancelling at the start writes nothing and says CANCELLED. */
static void progress_one_slab(void)
{
    size_t shape[2] = {17, 23}, n = 17 * 23;
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT64, 2, shape, 1);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, "gaussian:1", 2));
    double *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    h_fill(in, n);
    h_poison(CONVOLVE_FLOAT64, out, n);
    s_progress_log log = {0, -1, {0}, 1};
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.progress = s_on_progress;
    o.progress_user = &log;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    CHECK_OK(ctx, convolve_execute(p, in, out));
    CHECK(log.calls == 2 && log.monotonic, "%d calls", log.calls);
    CHECK(log.last.slabs_done == 1 && log.last.slabs_total == 1 && log.last.rows_done == 17 &&
              log.last.rows_total == 17 && log.last.bytes_done == 2 * n * sizeof(double) &&
              log.last.elapsed_s >= 0,
          "the last report: %zu/%zu slabs, %zu/%zu rows, %zu bytes", log.last.slabs_done,
          log.last.slabs_total, log.last.rows_done, log.last.rows_total, log.last.bytes_done);
    int finite = 1;
    for (size_t i = 0; i < n; i++)
        finite &= isfinite(out[i]);
    CHECK(finite, "the output is written");

    h_poison(CONVOLVE_FLOAT64, out, n);
    log = (s_progress_log){0, 0, {0}, 1};
    CHECK_STATUS(ctx, convolve_execute(p, in, out), CONVOLVE_ERROR_CANCELLED);
    CHECK(log.calls == 1, "cancelled at the first call: %d calls", log.calls);
    int untouched = 1;
    for (size_t i = 0; i < n; i++)
        untouched &= isnan(out[i]);
    CHECK(untouched, "nothing written when cancelled before the start");
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(in);
    free(out);
}

/* The CPU's strategies (NULL: auto), and which of them give, run in place
 * (sub-problems of other sizes), results equal to the one-shot run's to
 * rounding only: those that pick their method or their FFT tiles by size. */
static const char *const k_cpu_strategies[] = {"reference", "fast",  "direct", "separable",
                                               "fft",       "image", NULL};
#define CPU_STRATEGY_CHOICES 7

static int sized_by_slab(const char *strategy)
{
    return !strategy || strcmp(strategy, "fast") == 0 || strcmp(strategy, "fft") == 0;
}

/* Slabs of `rows` rows of c's input (CONVOLVE_CPU_SLAB_BYTES). */
static void set_slab_rows(const s_case *c, size_t rows)
{
    size_t row = c->channels * convolve_dtype_size(c->in_type);
    for (int a = 1; a < c->ndim; a++)
        row *= c->shape[a];
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%zu", rows * row);
    setenv("CONVOLVE_CPU_SLAB_BYTES", bytes, 1);
}

/* Random small cases on the CPU, every strategy, with slabs of a random few
 * rows: windows of the whole problem (not in place), byte for byte the
 * one-shot run; sub-problems (in place). */
static void cpu_slabs(int cases)
{
    static const convolve_dtype types[][2] = {{CONVOLVE_FLOAT32, CONVOLVE_FLOAT32},
                                              {CONVOLVE_FLOAT64, CONVOLVE_FLOAT64},
                                              {CONVOLVE_UINT8, CONVOLVE_UINT8},
                                              {CONVOLVE_UINT16, CONVOLVE_FLOAT32}};
    int ran = 0;
    for (int i = 0; i < cases; i++) {
        s_case c;
        memset(&c, 0, sizeof c);
        c.backend = CONVOLVE_BACKEND_CPU;
        c.strategy = k_cpu_strategies[h_randint(0, CPU_STRATEGY_CHOICES - 1)];
        /* image: 1-D or 2-D uint8/uint16 with pixels contiguous in a row */
        const int image = c.strategy && strcmp(c.strategy, "image") == 0;
        int t = image ? (int)h_randint(2, 3) : (int)h_randint(0, 3);
        c.in_type = types[t][0], c.out_type = types[t][1];
        c.ndim = (int)h_randint(1, image ? 2 : 3);
        c.channels = h_randint(0, 3) ? 1 : (size_t)h_randint(2, 3);
        for (int a = 0; a < c.ndim; a++) {
            c.shape[a] = (size_t)h_randint(1, c.ndim == 1 ? 90 : c.ndim == 2 ? 30 : 12);
            /* now and then a filter longer than the array */
            c.ksize[a] = (size_t)h_randint(1, h_randint(0, 4) ? 7 : (long)(2 * c.shape[a] + 3));
            c.origin[a] = h_randint(-(long)(c.ksize[a] / 2), (long)((c.ksize[a] - 1) / 2));
        }
        c.separable = c.strategy && strcmp(c.strategy, "separable") == 0 ? 1 : (int)h_randint(0, 1);
        c.mode = (convolve_mode)h_randint(0, 4);
        c.cval = h_randint(0, 1) ? h_uniform(-2, 2) : 0;
        if (image && c.mode == CONVOLVE_MODE_CONSTANT && h_randint(0, 1))
            c.cval = (double)h_randint(0, 300); /* the box path's integer cval */
        c.layout = (int)h_randint(0, image ? H_REVERSED : H_LAYOUT_KINDS - 1);
        /* slabs of 1 to 5 rows: often shorter than the filter */
        size_t rows = (size_t)h_randint(1, 5);
        set_slab_rows(&c, rows);
        c.min_slabs = rows < c.shape[0] ? 2 : 1;
        /* a third of the cases whose types have one size run in place: in
         * slabs, through a copy, or as the library chooses */
        c.in_place = t <= 2 && h_randint(0, 2) == 0;
        c.route = (const char *[]){NULL, "slabs", "copy"}[h_randint(0, 2)];
        c.exact = !(c.in_place && sized_by_slab(c.strategy));
        ran += s_run_case(&c);
    }
    CHECK(ran > cases / 2, "%d of %d cases ran", ran, cases);

    /* cancellation after the first slab, then after the third */
    s_case c;
    memset(&c, 0, sizeof c);
    c.backend = CONVOLVE_BACKEND_CPU;
    c.in_type = c.out_type = CONVOLVE_FLOAT32;
    c.ndim = 2, c.shape[0] = 40, c.shape[1] = 33, c.channels = 1;
    setenv("CONVOLVE_CPU_SLAB_BYTES", "528", 1); /* 4 rows */
    s_cancel_case(&c, 1);
    s_cancel_case(&c, 3);
    c.ndim = 3, c.shape[0] = 9, c.shape[1] = 5, c.shape[2] = 4;
    setenv("CONVOLVE_CPU_SLAB_BYTES", "80", 1); /* 1 plane */
    s_cancel_case(&c, 2);
    unsetenv("CONVOLVE_CPU_SLAB_BYTES");
}

/* Larger cases whose slabs cut every strategy's tiles and bands (FFT tiles
 * along the slab axis, bands of rows, column tiles of a 1-D signal): byte
 * for byte the one-shot run, slabs of uneven sizes. */
static void cpu_windows(void)
{
    static const struct {
        int ndim;
        size_t shape[3], ksize[3], channels;
        convolve_dtype type;
    } k_shapes[] = {
        {1, {20000}, {65}, 1, CONVOLVE_FLOAT64},
        {1, {9000}, {17}, 3, CONVOLVE_UINT8},
        {2, {300, 170}, {17, 15}, 1, CONVOLVE_FLOAT32},
        {2, {260, 90}, {9, 5}, 3, CONVOLVE_UINT8},
        {2, {200, 64}, {1, 21}, 1, CONVOLVE_FLOAT64},
        {3, {70, 24, 20}, {9, 7, 5}, 1, CONVOLVE_FLOAT32},
        {3, {60, 16, 12}, {5, 1, 3}, 2, CONVOLVE_FLOAT64},
    };
    static const size_t k_rows[] = {1, 7, 13, 61};
    for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++)
        for (int st = 0; st < CPU_STRATEGY_CHOICES; st++) {
            s_case c;
            memset(&c, 0, sizeof c);
            c.backend = CONVOLVE_BACKEND_CPU;
            c.strategy = k_cpu_strategies[st];
            c.ndim = k_shapes[i].ndim;
            c.channels = k_shapes[i].channels;
            c.in_type = c.out_type = k_shapes[i].type;
            for (int a = 0; a < c.ndim; a++) {
                c.shape[a] = k_shapes[i].shape[a];
                c.ksize[a] = k_shapes[i].ksize[a];
            }
            c.separable = (int)(i % 2);
            if (c.strategy && strcmp(c.strategy, "separable") == 0)
                c.separable = 1;
            if (c.strategy && strcmp(c.strategy, "reference") == 0 && c.ndim == 3)
                continue; /* slow, and the small cases cover it */
            c.mode = (convolve_mode)((i + (size_t)st) % 5);
            c.cval = 0.5;
            c.layout = (int)((i + (size_t)st) % 3); /* packed, pitched, reversed */
            c.exact = 1;
            size_t rows = k_rows[(i + (size_t)st) % 4];
            set_slab_rows(&c, rows);
            c.min_slabs = rows < c.shape[0] ? 2 : 1;
            s_run_case(&c);
        }
    unsetenv("CONVOLVE_CPU_SLAB_BYTES");
}

/* The CPU backend's windows on their own (execute_host_rows): a window
 * writes its rows with the bytes of the one-shot run and leaves every other
 * row untouched, for every strategy, 1-D to 3-D; windows one after another
 * with one memo make the whole output. */
static void cpu_window_rows(void)
{
    static const struct {
        int ndim;
        size_t shape[3], ksize[3], channels;
        convolve_dtype type;
    } k_shapes[] = {
        {1, {3000}, {33}, 1, CONVOLVE_FLOAT64},
        {1, {700}, {5}, 3, CONVOLVE_UINT8},
        {2, {90, 70}, {17, 9}, 1, CONVOLVE_FLOAT32},
        {2, {64, 40}, {5, 5}, 3, CONVOLVE_UINT8},
        {2, {50, 33}, {1, 7}, 1, CONVOLVE_FLOAT64},
        {3, {30, 12, 10}, {7, 3, 5}, 1, CONVOLVE_FLOAT64},
        {3, {25, 9, 8}, {3, 3, 3}, 2, CONVOLVE_FLOAT32},
    };
    int ran = 0;
    for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++)
        for (int st = 0; st < CPU_STRATEGY_CHOICES; st++) {
            const int nd = k_shapes[i].ndim;
            const convolve_dtype t = k_shapes[i].type;
            convolve_layout l;
            convolve_layout_init(&l, t, nd, k_shapes[i].shape, k_shapes[i].channels);
            const size_t n = convolve_layout_count(&l), es = convolve_dtype_size(t);
            const size_t rows = k_shapes[i].shape[0], rb = n / rows * es;
            size_t kc = 1;
            for (int a = 0; a < nd; a++)
                kc *= k_shapes[i].ksize[a];
            const char *strategy = k_cpu_strategies[st];
            convolve_filter *f;
            if (i % 2 || (strategy && strcmp(strategy, "separable") == 0)) {
                double *taps[3];
                for (int a = 0; a < nd; a++) {
                    taps[a] = malloc(k_shapes[i].ksize[a] * sizeof(double));
                    h_fill(taps[a], k_shapes[i].ksize[a]);
                    for (size_t k = 0; k < k_shapes[i].ksize[a]; k++)
                        taps[a][k] = 0.5 * taps[a][k] + 0.6; /* integer outputs in range */
                }
                CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, nd, k_shapes[i].ksize,
                                                               (const double *const *)taps));
                for (int a = 0; a < nd; a++)
                    free(taps[a]);
            } else {
                double *w = malloc(kc * sizeof *w);
                h_fill(w, kc);
                for (size_t k = 0; k < kc; k++)
                    w[k] = (w[k] + 1.1) / (double)kc;
                CHECK_OK(ctx, convolve_filter_create(ctx, &f, nd, k_shapes[i].ksize, w));
                free(w);
            }
            convolve_options o;
            convolve_options_init(&o);
            o.backend = CONVOLVE_BACKEND_CPU;
            o.strategy = strategy;
            o.mode = (convolve_mode)((i + (size_t)st) % 5);
            o.cval = 2.0;
            convolve_plan *p = NULL;
            convolve_status s0 = convolve_plan_create(ctx, &p, &l, &l, f, &o);
            if (s0 == CONVOLVE_ERROR_UNSUPPORTED) {
                convolve_filter_free(f);
                continue;
            }
            CHECK_OK(ctx, s0);
            ran++;
            char *in = malloc(n * es), *want = malloc(n * es), *got = malloc(n * es);
            char *poison = malloc(n * es);
            h_fill_typed(t, in, n, 3.0);
            h_poison(t, poison, n);
            CHECK_OK(ctx, convolve_execute(p, in, want));
            const cvi_backend *b = p->backend;
            CHECK(b->execute_host_rows != NULL, "the CPU backend runs windows");
            for (int trial = 0; trial < 6; trial++) {
                size_t r0 = (size_t)h_randint(0, (long)rows - 1);
                size_t r1 = (size_t)h_randint((long)r0 + 1, (long)rows);
                memcpy(got, poison, n * es);
                void *memo = NULL;
                CHECK_OK(ctx, b->execute_host_rows(ctx, p->state, in, got, r0, r1, &memo));
                b->rows_end(p->state, memo);
                CHECK(memcmp(got, poison, r0 * rb) == 0 &&
                          memcmp(got + r1 * rb, poison + r1 * rb, (rows - r1) * rb) == 0,
                      "%s, shape %zu: window [%zu, %zu) of %zu wrote outside it",
                      convolve_plan_strategy(p), i, r0, r1, rows);
                CHECK(memcmp(got + r0 * rb, want + r0 * rb, (r1 - r0) * rb) == 0,
                      "%s, shape %zu: window [%zu, %zu) of %zu differs from the one-shot run",
                      convolve_plan_strategy(p), i, r0, r1, rows);
            }
            /* uneven windows one after another, one memo */
            memcpy(got, poison, n * es);
            void *memo = NULL;
            for (size_t r0 = 0, step = 1; r0 < rows; r0 += step, step = step % 7 + 2) {
                size_t r1 = r0 + step < rows ? r0 + step : rows;
                CHECK_OK(ctx, b->execute_host_rows(ctx, p->state, in, got, r0, r1, &memo));
            }
            b->rows_end(p->state, memo);
            CHECK(memcmp(got, want, n * es) == 0, "%s, shape %zu: windows in turn differ",
                  convolve_plan_strategy(p), i);
            free(in), free(want), free(got), free(poison);
            convolve_plan_free(p);
            convolve_filter_free(f);
        }
    CHECK(ran >= 35, "%d window plans ran", ran);
}

/* The CPU's slab size with a progress callback (no data needed): about
 * 64 MiB of input, a whole number of FFT tiles along the slab axis, at
 * least 16 times the rows or planes the separable passes filter again; in
 * one slab when smaller; none without a callback. (64 threads: the
 * estimates stay below the slab's time, which the next test covers.) */
static void cpu_slab_choice(void)
{
    static const struct {
        int ndim;
        size_t shape[3], ksize[3];
        const char *strategy;
        size_t want; /* rows per slab; 0: one shot */
    } k_cases[] = {
        /* 4096 doubles a row: 2048 rows of 64 MiB */
        {2, {4096, 4096}, {5, 5}, "direct", 2048},
        {2, {4096, 4096}, {5, 5}, "reference", 2048},
        {2, {1000, 4096}, {5, 5}, "direct", 0},
        /* rows of 8 MiB: 8 rows, or 16 x 16 rows the V pass filters again */
        {2, {1000, 1 << 20}, {17, 17}, "direct", 8},
        {2, {1000, 1 << 20}, {17, 17}, "separable", 256},
        /* 512 x 512 doubles a plane: 32 planes, or 16 x 32 planes again */
        {3, {600, 512, 512}, {3, 3, 3}, "separable", 32},
        {3, {600, 512, 512}, {33, 3, 3}, "separable", 512},
        {3, {600, 512, 512}, {33, 3, 3}, "direct", 32},
    };
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
        for (int progress = 0; progress < 2; progress++) {
            convolve_layout l;
            convolve_layout_init(&l, CONVOLVE_FLOAT64, k_cases[i].ndim, k_cases[i].shape, 1);
            convolve_filter *f;
            size_t kc = 1;
            for (int a = 0; a < k_cases[i].ndim; a++)
                kc *= k_cases[i].ksize[a];
            double *w = malloc(kc * sizeof *w);
            for (size_t k = 0; k < kc; k++)
                w[k] = 1.0; /* rank one: separable */
            CHECK_OK(ctx, convolve_filter_create(ctx, &f, k_cases[i].ndim, k_cases[i].ksize, w));
            free(w);
            s_progress_log log = {0, -1, {0}, 1};
            convolve_options o;
            convolve_options_init(&o);
            o.backend = CONVOLVE_BACKEND_CPU;
            o.strategy = k_cases[i].strategy;
            o.threads = 64;
            if (progress) {
                o.progress = s_on_progress;
                o.progress_user = &log;
            }
            convolve_plan *p;
            CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
            size_t rows = 99;
            CHECK_OK(ctx, cvi_stream_choose(p, 0, &rows));
            size_t want = progress ? k_cases[i].want : 0;
            CHECK(rows == want, "case %zu, %s callback: %zu rows a slab, want %zu", i,
                  progress ? "a" : "no", rows, want);
            convolve_plan_free(p);
            convolve_filter_free(f);
        }
    /* FFT: slabs start on its tiles along the slab axis (V = T - K + 1) */
    size_t shape[2] = {8192, 4096}, ks[2] = {31, 31};
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT64, 2, shape, 1);
    double *w = malloc(31 * 31 * sizeof *w);
    h_fill(w, 31 * 31);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));
    free(w);
    s_progress_log log = {0, -1, {0}, 1};
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "fft";
    o.threads = 64;
    o.progress = s_on_progress;
    o.progress_user = &log;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    size_t rows = 0, align = cvcpu_fft_window_align(&p->problem);
    CHECK_OK(ctx, cvi_stream_choose(p, 0, &rows));
    CHECK(align > 1 && rows % align == 0 && rows <= 2048 && rows > 2048 - align,
          "FFT slabs of %zu rows, tiles of %zu", rows, align);
    convolve_plan_free(p);
    convolve_filter_free(f);
}

/* With a progress callback, a CPU run estimated longer than CVI_CPU_SLAB_MS
 * (25 ms) goes in slabs of about that time even below 64 MiB (the Python
 * package checks for Ctrl-C between them): byte for byte the one-shot run,
 * and cancellable after a slab, with no leak; a short one is one slab. */
static void cpu_slab_time(void)
{
    size_t shape[2] = {1024, 1000}, ks[2] = {41, 41}, n = 1024 * 1000;
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, shape, 1);
    double *w = malloc(41 * 41 * sizeof *w);
    h_fill(w, 41 * 41);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));
    free(w);
    float *in = malloc(n * sizeof *in), *want = malloc(n * sizeof *want),
          *got = malloc(n * sizeof *got);
    for (size_t i = 0; i < n; i++)
        in[i] = (float)h_uniform(-1, 1);
    s_progress_log log = {0, -1, {0}, 1};
    convolve_options o;
    convolve_options_init(&o);
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "direct";
    o.threads = 1;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    CHECK_OK(ctx, convolve_execute(p, in, want));
    convolve_plan_free(p);
    o.progress = s_on_progress;
    o.progress_user = &log;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    size_t rows = 0;
    CHECK_OK(ctx, cvi_stream_choose(p, 0, &rows));
    const double ms = cvcpu_backend.plan_estimate_ms(p->state);
    const double expect = 1024 * 25.0 / ms;
    CHECK(ms > 50 && rows > 0 && rows < 1024 && fabs((double)rows - expect) <= 1,
          "estimated %.1f ms: slabs of %zu rows, want about %.1f", ms, rows, expect);
    h_poison(CONVOLVE_FLOAT32, got, n);
    CHECK_OK(ctx, convolve_execute(p, in, got));
    CHECK(log.last.slabs_total == (1024 + rows - 1) / rows && log.monotonic,
          "%zu slabs of %zu rows", log.last.slabs_total, rows);
    CHECK(memcmp(got, want, n * sizeof *got) == 0, "slabs by time differ from one shot");
    /* cancelled after the first slab: its rows final, the last untouched */
    h_poison(CONVOLVE_FLOAT32, got, n);
    log = (s_progress_log){0, 1, {0}, 1};
    CHECK_STATUS(ctx, convolve_execute(p, in, got), CONVOLVE_ERROR_CANCELLED);
    CHECK(memcmp(got, want, rows * 1000 * sizeof *got) == 0, "the first slab is final");
    CHECK(isnan(got[n - 1]), "the last row is not written after a cancel");
    convolve_plan_free(p);
    convolve_filter_free(f);
    /* short: one slab */
    size_t small[2] = {256, 256}, k3[2] = {3, 3};
    convolve_layout_init(&l, CONVOLVE_FLOAT32, 2, small, 1);
    double w3[9];
    h_fill(w3, 9);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, k3, w3));
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    rows = 99;
    CHECK_OK(ctx, cvi_stream_choose(p, 0, &rows));
    CHECK(rows == 0, "a short run: slabs of %zu rows, want one shot", rows);
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(in), free(want), free(got);
}

/* In place without a progress callback: equal to the run into another
 * array for every mode, on the CPU and, where there is one, the GPU; in one
 * slab and in several, through a copy, and as the library chooses. Outputs
 * that overlap the input otherwise are refused. */
static void in_place(void)
{
    static const convolve_mode modes[] = {CONVOLVE_MODE_REFLECT, CONVOLVE_MODE_MIRROR,
                                          CONVOLVE_MODE_NEAREST, CONVOLVE_MODE_WRAP,
                                          CONVOLVE_MODE_CONSTANT};
    int gpus = 0;
    if (convolve_device_count(ctx, &gpus) != CONVOLVE_OK)
        gpus = 0;
    size_t shape[2] = {37, 29}, n = 37 * 29;
    convolve_layout l;
    convolve_layout_init(&l, CONVOLVE_FLOAT64, 2, shape, 1);
    convolve_filter *f;
    size_t ks[2] = {13, 5}; /* 13 rows: longer than the 2-row slabs */
    double w[13 * 5];
    h_fill(w, 13 * 5);
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));
    double *in = malloc(n * sizeof *in), *want = malloc(n * sizeof *want);
    double *buf = malloc((n + 1) * sizeof *buf);
    h_fill(in, n);
    static const char *routes[] = {NULL, "slabs", "copy"};
    for (int b = 0; b < (gpus > 0 ? 2 : 1); b++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            for (int v = 0; v < 6; v++) {
                const int slabs = v / 3;
                const char *route = routes[v % 3];
                if (route)
                    setenv("CONVOLVE_IN_PLACE", route, 1);
                if (slabs)
                    setenv("CONVOLVE_CPU_SLAB_BYTES", "464", 1); /* 2 rows */
                convolve_options o;
                convolve_options_init(&o);
                o.backend = b ? CONVOLVE_BACKEND_CUDA : CONVOLVE_BACKEND_CPU;
                /* the CPU's auto ("fast") picks its method by slab size:
                 * equal to rounding only; a named strategy byte for byte */
                o.strategy = b ? NULL : "direct";
                o.mode = modes[m];
                o.cval = 0.75;
                if (b && slabs) /* 3 buffer sets of 2 rows and the halo */
                    o.device_memory_budget = 3 * (2 + 12) * 2 * 29 * sizeof(double);
                convolve_plan *p;
                CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
                h_poison(CONVOLVE_FLOAT64, want, n);
                CHECK_OK(ctx, convolve_execute(p, in, want));
                memcpy(buf, in, n * sizeof *buf);
                CHECK_OK(ctx, convolve_execute(p, buf, buf));
                CHECK(memcmp(buf, want, n * sizeof *buf) == 0,
                      "%s %s, %s, %s: in place differs from out of place",
                      convolve_backend_name(o.backend), convolve_mode_name(o.mode),
                      slabs ? "slabs of 2 rows" : "automatic slabs",
                      route ? route : "automatic route");
                /* an output one element past the input overlaps it */
                memcpy(buf, in, n * sizeof *buf);
                CHECK_STATUS(ctx, convolve_execute(p, buf, buf + 1),
                             CONVOLVE_ERROR_INVALID_ARGUMENT);
                convolve_plan_free(p);
                unsetenv("CONVOLVE_CPU_SLAB_BYTES");
                unsetenv("CONVOLVE_IN_PLACE");
            }
    /* the same pointer with other bytes per element, or other strides */
    convolve_layout l32, pitched = l;
    convolve_layout_init(&l32, CONVOLVE_FLOAT32, 2, shape, 1);
    pitched.strides[0] = 30 * sizeof(double);
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l32, f, NULL));
    CHECK_STATUS(ctx, convolve_execute(p, buf, buf), CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_plan_free(p);
    double *wide = malloc(37 * 30 * sizeof *wide);
    h_fill(wide, 37 * 30);
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &pitched, &l, f, NULL));
    CHECK_STATUS(ctx, convolve_execute(p, wide, wide), CONVOLVE_ERROR_INVALID_ARGUMENT);
    convolve_plan_free(p);
    free(wide);
    convolve_filter_free(f);
    free(in), free(want), free(buf);
}

/* scipy's boundary rule for index j of an axis of n (the test's own). */
static ptrdiff_t t_boundary(ptrdiff_t j, ptrdiff_t n, convolve_mode mode)
{
    while (j < 0 || j >= n) {
        switch (mode) {
        case CONVOLVE_MODE_NEAREST: j = j < 0 ? 0 : n - 1; break;
        case CONVOLVE_MODE_WRAP: j = j < 0 ? j + n : j - n; break;
        case CONVOLVE_MODE_MIRROR:
            if (n == 1)
                return 0;
            j = j < 0 ? -j : 2 * (n - 1) - j;
            break;
        default: j = j < 0 ? -j - 1 : 2 * n - 1 - j; break; /* reflect */
        }
    }
    return j;
}

/* In place in slabs, the store holds each array row that some slab reads
 * and does not own once (counted here by brute force), never more than
 * the array; a long filter and slabs thinner than it, and a short one. The
 * automatic choice takes at most the array's bytes beyond it. */
static void in_place_store(void)
{
    static const convolve_mode modes[] = {CONVOLVE_MODE_REFLECT, CONVOLVE_MODE_MIRROR,
                                          CONVOLVE_MODE_NEAREST, CONVOLVE_MODE_WRAP,
                                          CONVOLVE_MODE_CONSTANT};
    static const struct {
        size_t n, k, slab;
    } cases[] = {{10, 13, 3}, {40, 5, 8}, {23, 47, 2}, {9, 3, 9}};
    const size_t cols = 7, rb = cols * sizeof(double);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            const size_t n = cases[ci].n, K = cases[ci].k, S = cases[ci].slab;
            const ptrdiff_t koff = (ptrdiff_t)(K / 2);
            /* the rows each slab reads outside its own, by the mode */
            char *stored = calloc(n, 1);
            size_t rows = 0, halo_sum = 0;
            for (size_t r0 = 0; r0 < n; r0 += S) {
                const size_t r1 = r0 + S < n ? r0 + S : n;
                ptrdiff_t lo = (ptrdiff_t)r0 - koff, hi = (ptrdiff_t)r1 + (ptrdiff_t)K - 1 - koff;
                if (modes[m] == CONVOLVE_MODE_CONSTANT) {
                    lo = lo < 0 ? 0 : lo;
                    hi = hi > (ptrdiff_t)n ? (ptrdiff_t)n : hi;
                }
                halo_sum += (size_t)(hi - lo) - (r1 - r0);
                for (ptrdiff_t e = lo; e < hi; e++) {
                    size_t g = (size_t)t_boundary(e, (ptrdiff_t)n, modes[m]);
                    if ((g < r0 || g >= r1) && !stored[g]) {
                        stored[g] = 1;
                        rows++;
                    }
                }
            }
            free(stored);
            size_t shape[2] = {n, cols}, ks[2] = {K, 3};
            convolve_layout l;
            convolve_layout_init(&l, CONVOLVE_FLOAT64, 2, shape, 1);
            double *w = malloc(K * 3 * sizeof *w), *in = malloc(n * rb), *want = malloc(n * rb);
            double *buf = malloc(n * rb);
            h_fill(w, K * 3);
            h_fill(in, n * cols);
            convolve_filter *f;
            CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));
            convolve_options o;
            convolve_options_init(&o);
            o.backend = CONVOLVE_BACKEND_CPU;
            o.strategy = "direct";
            o.mode = modes[m];
            o.cval = -0.5;
            convolve_plan *p;
            CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
            CHECK_OK(ctx, convolve_execute(p, in, want));
            char bytes[32];
            snprintf(bytes, sizeof bytes, "%zu", S * rb);
            setenv("CONVOLVE_CPU_SLAB_BYTES", bytes, 1);
            setenv("CONVOLVE_IN_PLACE", "slabs", 1);
            memcpy(buf, in, n * rb);
            CHECK_OK(ctx, convolve_execute(p, buf, buf));
            CHECK(memcmp(buf, want, n * rb) == 0,
                  "%zu rows, %zu taps, slabs of %zu, %s: in "
                  "place in slabs differs from out of place",
                  n, K, S, convolve_mode_name(o.mode));
            const size_t buffers = 2 * (S + K - 1) * rb;
            CHECK(p->in_place_store == rows * rb && p->in_place_store <= n * rb &&
                      p->in_place_extra == p->in_place_store + buffers,
                  "%zu rows, %zu taps, slabs of %zu, %s: a store of %zu bytes (want %zu rows: "
                  "%zu bytes; every slab's halo: %zu rows), %zu bytes in all (want %zu)",
                  n, K, S, convolve_mode_name(o.mode), p->in_place_store, rows, rows * rb, halo_sum,
                  p->in_place_extra, rows * rb + buffers);
            /* the automatic choice: in slabs only when they take less than
             * a copy of the array */
            unsetenv("CONVOLVE_IN_PLACE");
            memcpy(buf, in, n * rb);
            CHECK_OK(ctx, convolve_execute(p, buf, buf));
            CHECK(memcmp(buf, want, n * rb) == 0, "%zu rows, %zu taps, %s: in place differs", n, K,
                  convolve_mode_name(o.mode));
            CHECK(p->in_place_extra <= n * rb + 64 &&
                      (p->in_place_store == 0 || rows * rb + buffers <= n * rb),
                  "%zu rows, %zu taps, slabs of %zu, %s: %zu bytes beyond the array's %zu", n, K, S,
                  convolve_mode_name(o.mode), p->in_place_extra, n * rb);
            unsetenv("CONVOLVE_CPU_SLAB_BYTES");
            convolve_plan_free(p);
            convolve_filter_free(f);
            free(w), free(in), free(want), free(buf);
        }
}

/* Outputs whose pages are not in memory yet (an anonymous mapping never
 * touched: it reads as zeros): the CPU faults them in before computing
 * (cpu/dispatch.c, prefault_output). float32 1031 x 1024 (4 MiB) filtered
 * 5x7, packed, pitched (5 elements between rows) and with rows reversed
 * (not faulted in ahead), in one shot and in slabs of 3 MiB of input: the
 * bytes of the same plan into a poisoned malloc'd output, and the bytes
 * between elements still zero. */
static void fresh_outputs(void)
{
    const size_t shape[2] = {1031, 1024}, n = shape[0] * shape[1], ks[2] = {5, 7};
    double w[35];
    for (int i = 0; i < 35; i++)
        w[i] = h_uniform(-1.0, 1.0);
    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, 2, ks, w));
    float *in = malloc(n * sizeof *in);
    CHECK(in != NULL, "out of memory");
    if (!in || !f) {
        free(in);
        convolve_filter_free(f);
        return;
    }
    h_fill_typed(CONVOLVE_FLOAT32, in, n, 1.0);
    convolve_layout lin;
    convolve_layout_init(&lin, CONVOLVE_FLOAT32, 2, shape, 1);
    for (int kind = 0; kind < 3; kind++) /* packed, pitched, reversed */
        for (int slabs = 0; slabs < 2; slabs++) {
            const int k = kind == 0 ? H_PACKED : kind == 1 ? H_PITCHED : H_REVERSED;
            convolve_layout lout;
            size_t bytes, origin;
            h_make_layout(&lout, CONVOLVE_FLOAT32, 2, shape, 1, k, &bytes, &origin);
            char *want = malloc(bytes);
            char *got = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                             0);
            CHECK(want != NULL && got != MAP_FAILED, "out of memory");
            if (!want || got == MAP_FAILED) {
                free(want);
                if (got != MAP_FAILED)
                    munmap(got, bytes);
                continue;
            }
            CHECK(!cvi_pages_resident(got, bytes), "a new mapping's pages are not in memory");
            memset(want, 0, bytes);
            for (size_t i = 0; i < n; i++) /* elements poisoned, gaps zero as in got */
                memset(want + origin + h_layout_offset(&lout, i), 0xAB, sizeof(float));
            convolve_options o;
            convolve_options_init(&o);
            o.backend = CONVOLVE_BACKEND_CPU;
            o.threads = 2;
            s_progress_log log = {0, -1, {0}, 1};
            if (slabs) {
                o.progress = s_on_progress;
                o.progress_user = &log;
                setenv("CONVOLVE_CPU_SLAB_BYTES", "3M", 1);
            }
            convolve_plan *plan = NULL;
            CHECK_OK(ctx, convolve_plan_create(ctx, &plan, &lin, &lout, f, &o));
            if (plan) {
                CHECK_OK(ctx, convolve_execute(plan, in, want + origin));
                CHECK_OK(ctx, convolve_execute(plan, in, got + origin));
                CHECK(cvi_pages_resident(got, bytes), "the output's pages are in memory after");
                CHECK(memcmp(want, got, bytes) == 0,
                      "layout %d, %s: a new output's bytes differ from a written one's", kind,
                      slabs ? "slabs" : "one shot");
                if (slabs)
                    CHECK(log.calls >= 3, "ran in slabs: %d progress calls", log.calls);
            }
            convolve_plan_free(plan);
            unsetenv("CONVOLVE_CPU_SLAB_BYTES");
            free(want);
            munmap(got, bytes);
        }
    free(in);
    convolve_filter_free(f);
}

int main(void)
{
    h_seed("test_stream");
    CHECK_OK(NULL, convolve_context_create(&ctx));
    api();
    progress_one_slab();
    cpu_slabs(300);
    cpu_windows();
    cpu_window_rows();
    cpu_slab_choice();
    cpu_slab_time();
    in_place();
    in_place_store();
    fresh_outputs();
    convolve_context_free(ctx);
    return h_finish("test_stream");
}
