/*
 * stream_cases.h - what the streamed-execution tests share (test_stream.c on
 * the CPU, test_gpu_stream.c on a GPU or the CUDA emulation): one case runs
 * the same problem through a plan that runs in one shot and through one
 * that is made to stream in slabs (a small device budget, several devices,
 * or the CPU's slab size with a progress callback), on fresh random input
 * and poisoned outputs, and compares the two outputs byte for byte (or, for
 * FFT strategies, with a tolerance, and against each other's relative L2),
 * and checks the progress reports. Needs harness.h and a global `ctx`.
 */
#ifndef CONVOLVE_TEST_STREAM_CASES_H
#define CONVOLVE_TEST_STREAM_CASES_H

#include "harness.h"

typedef struct {
    int calls, cancel_at; /* cancel_at >= 0: return 1 on call number cancel_at + 1 */
    convolve_progress last;
    int monotonic;
} s_progress_log;

static int s_on_progress(void *user, const convolve_progress *p)
{
    s_progress_log *log = user;
    if (log->calls > 0 &&
        (p->slabs_done < log->last.slabs_done || p->rows_done < log->last.rows_done ||
         p->bytes_done < log->last.bytes_done))
        log->monotonic = 0;
    if (p->slabs_done > p->slabs_total || p->rows_done > p->rows_total)
        log->monotonic = 0;
    log->last = *p;
    log->calls++;
    return log->cancel_at >= 0 && log->calls > log->cancel_at;
}

typedef struct {
    convolve_backend backend;
    const char *strategy; /* NULL: auto */
    convolve_dtype in_type, out_type;
    int ndim;
    size_t shape[3], channels;
    size_t ksize[3];
    int separable;
    convolve_mode mode;
    double cval;
    ptrdiff_t origin[3];
    int layout;         /* H_PACKED, H_PITCHED, ... for both arrays */
    size_t budget;      /* the streamed plan's device budget (0: automatic) */
    const int *devices; /* the streamed plan's devices */
    int device_count;
    int exact;         /* 1: byte for byte; 0: within a tolerance (FFT) */
    int min_slabs;     /* the streamed run must report at least this many slabs */
    int max_slabs;     /* and at most this many (0: any) */
    int pin;           /* register the streamed run's arrays (convolve_host_register):
                                   1 both, 2 the input only (in place: both) */
    int in_place;      /* the streamed run writes over its input (out == in; the
                                   types' sizes must match) */
    const char *route; /* in place: CONVOLVE_IN_PLACE ("slabs", "copy"; NULL:
                                   the library's choice) */
    int fft_groups;    /* CUDA FFT: groups of one tile (CONVOLVE_FFT_GROUP_POINTS=1),
                                   min_slabs holds for it too */
} s_case;

/* The filter's extent along axis 0 as the plan holds it: a separable
 * filter's taps longer than the array (128 or more) are folded onto it (plan.c; the
 * cases' taps are random, never a box, and convolved), which shortens the
 * slabs' halo. */
static inline size_t s_plan_k0(const s_case *c)
{
    const size_t K = c->ksize[0], n = c->shape[0];
    if (!c->separable || K < 128) /* plan.c's CVI_FOLD_MIN_TAPS */
        return K;
    const ptrdiff_t koff = (ptrdiff_t)(K / 2) - c->origin[0] - (K % 2 == 0);
    size_t folded;
    switch (c->mode) {
    case CONVOLVE_MODE_WRAP: folded = n; break;
    case CONVOLVE_MODE_REFLECT: folded = 2 * n; break;
    case CONVOLVE_MODE_MIRROR: folded = n == 1 ? 1 : 2 * n - 2; break;
    default: {
        ptrdiff_t lo = -koff, hi = (ptrdiff_t)K - 1 - koff;
        lo = lo < -(ptrdiff_t)n ? -(ptrdiff_t)n : lo;
        hi = hi > (ptrdiff_t)n ? (ptrdiff_t)n : hi;
        folded = (size_t)(hi - lo + 1);
    }
    }
    return folded < K ? folded : K;
}

static const char *s_describe(const s_case *c, char *buf, size_t size)
{
    snprintf(buf, size,
             "%s/%s %s->%s %dD %zux%zux%zu C%zu k%zux%zux%zu%s %s cval %g origin "
             "%td,%td,%td layout %d budget %zu devices %d%s%s%s",
             convolve_backend_name(c->backend), c->strategy ? c->strategy : "auto",
             convolve_dtype_name(c->in_type), convolve_dtype_name(c->out_type), c->ndim,
             c->shape[0], c->ndim > 1 ? c->shape[1] : 1, c->ndim > 2 ? c->shape[2] : 1, c->channels,
             c->ksize[0], c->ndim > 1 ? c->ksize[1] : 1, c->ndim > 2 ? c->ksize[2] : 1,
             c->separable ? " sep" : "", convolve_mode_name(c->mode), c->cval, c->origin[0],
             c->origin[1], c->origin[2], c->layout, c->budget, c->device_count,
             c->pin == 2 ? " input pinned"
             : c->pin    ? " pinned"
                         : "",
             c->in_place ? " in place" : "",
             c->in_place && c->route ? (strcmp(c->route, "copy") ? " (slabs)" : " (copy)") : "");
    return buf;
}

/* Runs case c; returns 0 when a plan could not be made for a reason the
 * case allows (the strategy does not serve it), 1 otherwise. In place, the
 * streamed run's array starts as a copy of the input and the elements (not
 * the gaps) are compared. */
static int s_run_case(const s_case *c)
{
    char what[512];
    s_describe(c, what, sizeof what);
    convolve_layout li, lo;
    size_t ibytes, iorigin, obytes, oorigin;
    h_make_layout(&li, c->in_type, c->ndim, c->shape, c->channels, c->layout, &ibytes, &iorigin);
    h_make_layout(&lo, c->out_type, c->ndim, c->shape, c->channels, c->layout, &obytes, &oorigin);
    const size_t n = convolve_layout_count(&li);

    convolve_filter *f = NULL;
    double wsum = 1.0; /* sum |w|: the FFT's error scales with it */
    if (c->separable) {
        double *taps[3];
        for (int a = 0; a < c->ndim; a++) {
            taps[a] = malloc(c->ksize[a] * sizeof(double));
            h_fill(taps[a], c->ksize[a]);
            double t = 0;
            for (size_t i = 0; i < c->ksize[a]; i++)
                t += fabs(taps[a][i]);
            wsum *= t;
        }
        CHECK_OK(ctx, convolve_filter_create_separable(ctx, &f, c->ndim, c->ksize,
                                                       (const double *const *)taps));
        for (int a = 0; a < c->ndim; a++)
            free(taps[a]);
    } else {
        size_t kc = 1;
        for (int a = 0; a < c->ndim; a++)
            kc *= c->ksize[a];
        double *w = malloc(kc * sizeof *w);
        h_fill(w, kc);
        if (c->in_type == CONVOLVE_UINT8 || c->in_type == CONVOLVE_UINT16)
            for (size_t i = 0; i < kc; i++)
                w[i] /= (double)kc; /* keep integer outputs in range mostly */
        wsum = 0;
        for (size_t i = 0; i < kc; i++)
            wsum += fabs(w[i]);
        CHECK_OK(ctx, convolve_filter_create(ctx, &f, c->ndim, c->ksize, w));
        free(w);
    }
    if (!f)
        return 1;

    char *in = malloc(ibytes), *one = malloc(obytes), *two = malloc(obytes);
    char *packed_in = malloc(n * convolve_dtype_size(c->in_type));
    h_fill_typed(c->in_type, packed_in, n, 4.0);
    memset(in, 0, ibytes);
    h_scatter(&li, in + iorigin, packed_in, n);
    /* poison: the whole buffers (gaps included), so stray writes show */
    h_poison(c->out_type, one, obytes / convolve_dtype_size(c->out_type));
    memcpy(two, one, obytes);

    convolve_options o;
    convolve_options_init(&o);
    o.backend = c->backend;
    o.strategy = c->strategy;
    o.mode = c->mode;
    o.cval = c->cval;
    for (int a = 0; a < 3; a++)
        o.origin[a] = c->origin[a];
    convolve_plan *p1 = NULL, *p2 = NULL;
    if (c->fft_groups)
        setenv("CONVOLVE_FFT_GROUP_POINTS", "1", 1);
    convolve_status st = convolve_plan_create(ctx, &p1, &li, &lo, f, &o);
    if (st == CONVOLVE_ERROR_UNSUPPORTED && c->strategy) {
        unsetenv("CONVOLVE_FFT_GROUP_POINTS");
        convolve_filter_free(f);
        free(in), free(one), free(two), free(packed_in);
        return 0;
    }
    CHECK(st == CONVOLVE_OK, "%s: one-shot plan: %s", what, convolve_last_error(ctx));
    s_progress_log log = {0, -1, {0}, 1};
    o.device_memory_budget = c->budget;
    o.devices = c->devices;
    o.device_count = c->device_count;
    o.progress = s_on_progress;
    o.progress_user = &log;
    st = convolve_plan_create(ctx, &p2, &li, &lo, f, &o);
    CHECK(st == CONVOLVE_OK, "%s: streamed plan: %s", what, convolve_last_error(ctx));
    if (p1 && p2) {
        CHECK(strcmp(convolve_plan_strategy(p1), convolve_plan_strategy(p2)) == 0,
              "%s: the same strategy (%s, %s)", what, convolve_plan_strategy(p1),
              convolve_plan_strategy(p2));
        st = convolve_execute(p1, in + iorigin, one + oorigin);
        CHECK(st == CONVOLVE_OK, "%s: one shot: %s", what, convolve_last_error(ctx));
        /* in place: `two` holds the input (same layout, same-sized types) */
        const char *src = c->in_place ? two + oorigin : in + iorigin;
        if (c->in_place)
            memcpy(two, in, ibytes < obytes ? ibytes : obytes);
        const int pin_out = c->pin == 1 || (c->pin && c->in_place);
        if (c->pin && !c->in_place)
            CHECK_OK(ctx, convolve_host_register(ctx, in, ibytes));
        if (pin_out)
            CHECK_OK(ctx, convolve_host_register(ctx, two, obytes));
        if (c->in_place && c->route)
            setenv("CONVOLVE_IN_PLACE", c->route, 1);
        st = convolve_execute(p2, src, two + oorigin);
        unsetenv("CONVOLVE_IN_PLACE");
        CHECK(st == CONVOLVE_OK, "%s: streamed: %s", what, convolve_last_error(ctx));
        if (c->pin && !c->in_place)
            CHECK_OK(ctx, convolve_host_unregister(ctx, in));
        if (pin_out)
            CHECK_OK(ctx, convolve_host_unregister(ctx, two));
        /* a CUDA FFT's slabs hold whole groups of its tiles: often one */
        size_t min_slabs = (size_t)c->min_slabs;
        if (c->backend == CONVOLVE_BACKEND_CUDA && !c->fft_groups &&
            strcmp(convolve_plan_strategy(p2), "fft") == 0)
            min_slabs = 1;
        CHECK(log.monotonic && log.calls >= 2 && log.last.slabs_done == log.last.slabs_total &&
                  log.last.rows_done == log.last.rows_total && log.last.slabs_total >= min_slabs &&
                  (c->max_slabs == 0 || log.last.slabs_total <= (size_t)c->max_slabs),
              "%s: progress: %d calls, %zu/%zu slabs, %zu/%zu rows", what, log.calls,
              log.last.slabs_done, log.last.slabs_total, log.last.rows_done, log.last.rows_total);
        if (c->exact) {
            int same = !c->in_place && memcmp(one, two, obytes) == 0;
            if (!same) {
                size_t es = convolve_dtype_size(c->out_type), first = 0, bad = 0;
                for (size_t i = 0; i < n; i++) {
                    ptrdiff_t off = (ptrdiff_t)oorigin + h_layout_offset(&lo, i);
                    if (memcmp(one + off, two + off, es)) {
                        if (!bad)
                            first = i;
                        bad++;
                    }
                }
                CHECK(bad == 0 && (same || c->in_place),
                      "%s: streamed differs from one shot: %zu of %zu elements (first %zu: "
                      "%.17g vs %.17g), or the gaps",
                      what, bad, n, first,
                      h_get(c->out_type, one + oorigin + h_layout_offset(&lo, first), 0),
                      h_get(c->out_type, two + oorigin + h_layout_offset(&lo, first), 0));
            }
        } else {
            size_t es = convolve_dtype_size(c->out_type);
            char *a = malloc(n * es), *b = malloc(n * es);
            h_gather(&lo, one + oorigin, a, n);
            h_gather(&lo, two + oorigin, b, n);
            /* FFTs of other sizes: an error relative to the signal's scale
             * (the largest input or cval times sum |w|), not to each
             * element; integer outputs may round the other way */
            double xmax = c->in_type == CONVOLVE_UINT8    ? 255.0
                          : c->in_type == CONVOLVE_UINT16 ? 65535.0
                                                          : 4.0;
            if (fabs(c->cval) > xmax)
                xmax = fabs(c->cval);
            int f64 = c->in_type == CONVOLVE_FLOAT64 && c->out_type == CONVOLVE_FLOAT64;
            double eps = f64 ? 1e-9 : 1e-5;
            double tol = eps * xmax * wsum;
            if (c->out_type == CONVOLVE_UINT8 || c->out_type == CONVOLVE_UINT16)
                tol += 1.0;
            h_diff d = h_compare(c->out_type, b, c->out_type, a, n, tol, eps);
            CHECK(d.bad == 0, "%s: %zu elements differ (max %g, rel L2 %g)", what, d.bad, d.max_abs,
                  d.rel_l2);
            free(a), free(b);
        }
    }
    unsetenv("CONVOLVE_FFT_GROUP_POINTS");
    convolve_plan_free(p1);
    convolve_plan_free(p2);
    convolve_filter_free(f);
    free(in), free(one), free(two), free(packed_in);
    return 1;
}

/* Cancels a streamed run after `after` progress calls: CANCELLED, the
 * reported slabs written, nothing crashes or leaks. */
static void s_cancel_case(const s_case *c, int after)
{
    char what[512];
    s_describe(c, what, sizeof what);
    convolve_layout l;
    convolve_layout_init(&l, c->in_type, c->ndim, c->shape, c->channels);
    const size_t n = convolve_layout_count(&l), es = convolve_dtype_size(c->in_type);
    convolve_filter *f;
    CHECK_OK(ctx, convolve_filter_create_named(ctx, &f, "box:1", c->ndim));
    char *in = malloc(n * es), *out = malloc(n * es), *poison = malloc(n * es);
    h_fill_typed(c->in_type, in, n, 1.0);
    h_poison(c->in_type, out, n);
    /* floats: NaNs whose every byte is set, so that a run that wrote any
     * byte of a row it did not compute is seen */
    for (size_t i = 0; i < n && c->in_type == CONVOLVE_FLOAT32; i++)
        ((uint32_t *)(void *)out)[i] = 0x7FC0ABCDu;
    for (size_t i = 0; i < n && c->in_type == CONVOLVE_FLOAT64; i++)
        ((uint64_t *)(void *)out)[i] = 0x7FF8ABCDABCDABCDull;
    memcpy(poison, out, n * es);
    s_progress_log log = {0, after, {0}, 1};
    convolve_options o;
    convolve_options_init(&o);
    o.backend = c->backend;
    o.strategy = c->strategy;
    o.device_memory_budget = c->budget;
    o.devices = c->devices;
    o.device_count = c->device_count;
    o.progress = s_on_progress;
    o.progress_user = &log;
    convolve_plan *p;
    CHECK_OK(ctx, convolve_plan_create(ctx, &p, &l, &l, f, &o));
    CHECK_STATUS(ctx, convolve_execute(p, in, out), CONVOLVE_ERROR_CANCELLED);
    CHECK(log.calls == after + 1 && log.last.slabs_done < log.last.slabs_total,
          "%s: cancelled after %d calls: %d calls, %zu/%zu slabs", what, after, log.calls,
          log.last.slabs_done, log.last.slabs_total);
    /* the rows reported done are written (slab order is not promised with
     * several devices: count the rows that are) */
    size_t row = n / c->shape[0] * (c->ndim == 1 ? 1 : 1), written_rows = 0, touched_rows = 0;
    if (c->ndim == 1)
        row = c->channels;
    for (size_t r = 0; r < c->shape[0]; r++) {
        int all = 1;
        for (size_t i = 0; i < row; i++)
            all &= !isnan(h_get(c->in_type, out, r * row + i));
        written_rows += all;
        /* a row not written keeps the caller's bytes, every one */
        touched_rows += !all && memcmp(out + r * row * es, poison + r * row * es, row * es) != 0;
    }
    CHECK(written_rows >= log.last.rows_done, "%s: %zu rows written, %zu reported", what,
          written_rows, log.last.rows_done);
    CHECK(touched_rows == 0, "%s: %zu rows neither computed nor left as they were", what,
          touched_rows);
    /* the plan still works after a cancellation (the slabs a cancelled CUDA
     * execution left running are drained first), and a plan freed at once
     * after one waits for them */
    log = (s_progress_log){0, -1, {0}, 1};
    CHECK_OK(ctx, convolve_execute(p, in, out));
    log = (s_progress_log){0, after, {0}, 1};
    CHECK_STATUS(ctx, convolve_execute(p, in, out), CONVOLVE_ERROR_CANCELLED);
    convolve_plan_free(p);
    convolve_filter_free(f);
    free(in), free(out), free(poison);
}

#endif
