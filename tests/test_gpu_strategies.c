/*
 * test_gpu_strategies.c - every CUDA strategy, for every dimensionality it
 * serves, against the CPU reference through the public API: fresh random
 * inputs (seeded, seed printed), poisoned outputs (and the gaps between
 * strided output elements checked untouched), odd sizes, one-element arrays,
 * a large image, filters larger than a tile, larger than the constant bank
 * and larger than shared memory (UNSUPPORTED exactly where docs/strategies.md
 * says), every mode with a non-zero cval, even filters with origins,
 * convolve and correlate, every input and output type, 1, 3 and 4 channels,
 * pitched, planar, reversed (negative strides) and broadcast (zero stride)
 * layouts, on host memory (convolve_execute) and on device memory
 * (convolve_execute_device on a stream).
 *
 *   test_gpu_strategies            the full run (about a minute on an H100)
 *   test_gpu_strategies --small    two small cases per dimensionality, for
 *                                  compute-sanitizer
 *   test_gpu_strategies --medium   the full run less its large arrays (for
 *                                  the CPU emulation, tests/emu/run.sh)
 *   test_gpu_strategies --large    arrays past 2^31 elements (1-D and 2-D)
 *
 * Without a usable GPU it prints why and exits 77 (skipped).
 */
#include "harness.h"

#ifdef CONVOLVE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static convolve_context *ctx;
static int g_verbose = 0;
static int g_medium = 0; /* the full run less its large arrays */

/* ---- limits documented in docs/strategies.md ---------------------------- */

#define BANK_FLOATS 4096
#define BANK_DOUBLES 2048
#define SHARED_DEFAULT (48 * 1024)
#define SHARED_MAX (227 * 1024) /* the largest opt-in of any CUDA device */

/* 1 if the documented limits say strategy `name` serves the case, 0 if they
 * say it cannot, -1 if it depends on the device (shared memory between the
 * default 48 KiB and the largest opt-in) or the strategy is not known here. */
static int expect_support(const char *name, int ndim, const size_t K[3], convolve_dtype tin)
{
    size_t kcount = K[0] * K[1] * K[2];
    size_t acc = tin == CONVOLVE_FLOAT64 ? 8 : 4;
    size_t cap = tin == CONVOLVE_FLOAT64 ? BANK_DOUBLES : BANK_FLOATS;
    size_t shared = 0;
    if (strcmp(name, "basic") == 0)
        return 1;
    if (strcmp(name, "constant") && strcmp(name, "tiled") && strcmp(name, "tiled-in") &&
        strcmp(name, "tiled-out") && strcmp(name, "cached"))
        return -1;
    if (kcount > cap)
        return 0;
    if (strcmp(name, "tiled-in") == 0 && (K[1] > 31 || K[2] > 31))
        return 0;
    if (strcmp(name, "tiled") == 0)
        shared = ndim == 1 ? (63 + K[2]) * acc : (63 + K[2]) * (3 + K[1]) * (3 + K[0]) * acc;
    if (strcmp(name, "tiled-out") == 0)
        shared = (31 + K[2]) * (31 + K[1]) * acc;
    if (shared > SHARED_MAX)
        return 0;
    if (shared > SHARED_DEFAULT)
        return -1;
    return 1;
}

/* ---- layouts ------------------------------------------------------------ */

enum { L_PACKED, L_PITCHED, L_PLANAR, L_REVERSED, L_BROADCAST, L_KINDS };
static const char *k_kind_names[] = {"packed", "pitched", "planar", "reversed", "broadcast"};

typedef struct {
    convolve_layout l;
    size_t bytes;  /* buffer size */
    size_t origin; /* byte offset of element 0 in the buffer */
} tlayout;

/* A layout of one of the kinds above (REVERSED and BROADCAST: inputs only;
 * REVERSED also serves outputs, its elements stay apart). */
static void make_layout(tlayout *t, convolve_dtype dt, int ndim, const size_t *shape, size_t C,
                        int kind)
{
    size_t es = convolve_dtype_size(dt);
    convolve_layout_init(&t->l, dt, ndim, shape, C);
    convolve_layout *l = &t->l;
    if (kind == L_PITCHED || kind == L_REVERSED || kind == L_BROADCAST) {
        /* interleaved channels, each axis padded: rows are not adjacent */
        ptrdiff_t step = (ptrdiff_t)(C * es);
        for (int a = ndim - 1; a >= 0; a--) {
            l->strides[a] = step;
            step = step * (ptrdiff_t)shape[a] + (ptrdiff_t)((a == ndim - 1 ? 3 : 1) * es);
        }
        if (kind == L_REVERSED) {
            l->strides[ndim - 1] = -l->strides[ndim - 1];
            if (ndim > 1)
                l->strides[0] = -l->strides[0];
            if (C > 1)
                l->channel_stride = -(ptrdiff_t)es; /* channel c at -c elements */
        }
        if (kind == L_BROADCAST && ndim > 1)
            l->strides[0] = 0; /* every plane (row, for 2-D) the same */
    } else if (kind == L_PLANAR) {
        ptrdiff_t step = (ptrdiff_t)es;
        for (int a = ndim - 1; a >= 0; a--) {
            l->strides[a] = step;
            step *= (ptrdiff_t)shape[a];
        }
        l->channel_stride = step + (ptrdiff_t)(2 * es); /* planes with a gap */
    }
    h_layout_extent(l, &t->bytes, &t->origin);
}

/* Byte offset from element 0 of element i (C-order index over the shape,
 * channels interleaved last) in the layout. */
static ptrdiff_t elem_offset(const convolve_layout *l, size_t idx)
{
    size_t c = idx % l->channels;
    idx /= l->channels;
    ptrdiff_t off = (ptrdiff_t)c * l->channel_stride;
    for (int a = l->ndim - 1; a >= 0; a--) {
        off += (ptrdiff_t)(idx % l->shape[a]) * l->strides[a];
        idx /= l->shape[a];
    }
    return off;
}

/* Copies the n elements of a strided layout into a contiguous buffer. */
static void gather(const tlayout *t, const unsigned char *buf, unsigned char *dst, size_t n)
{
    size_t es = convolve_dtype_size(t->l.dtype);
    for (size_t i = 0; i < n; i++)
        memcpy(dst + i * es, buf + t->origin + elem_offset(&t->l, i), es);
}

/* Checks that the bytes of buf outside the layout's elements still hold the
 * poison in ref (a copy of buf made before the run). Returns the count. */
static size_t gap_damage(const tlayout *t, const unsigned char *buf, const unsigned char *ref,
                         size_t n)
{
    size_t es = convolve_dtype_size(t->l.dtype);
    unsigned char *mask = calloc(t->bytes, 1);
    if (!mask)
        return 0;
    for (size_t i = 0; i < n; i++)
        memset(mask + t->origin + elem_offset(&t->l, i), 1, es);
    size_t bad = 0;
    for (size_t b = 0; b < t->bytes; b++)
        if (!mask[b] && buf[b] != ref[b])
            bad++;
    free(mask);
    return bad;
}

/* ---- cases -------------------------------------------------------------- */

typedef struct {
    int ndim;
    size_t shape[3];
    size_t channels;
    convolve_dtype tin, tout;
    size_t kshape[3];
    ptrdiff_t origin[3];
    convolve_operation op;
    convolve_mode mode;
    double cval;
    int in_kind, out_kind;
    int positive; /* weights >= 0 summing to 1 */
    int device;   /* also run on device memory */
} gcase;

typedef struct {
    size_t cases, runs, unsupported, failures;
} tally;

static tally g_tally;

static void describe(const gcase *c, char *s, size_t size)
{
    int n = snprintf(s, size, "%d-D ", c->ndim);
    for (int a = 0; a < c->ndim; a++)
        n += snprintf(s + n, size - (size_t)n, "%s%zu", a ? "x" : "", c->shape[a]);
    n += snprintf(s + n, size - (size_t)n, " c%zu %s->%s k", c->channels,
                  convolve_dtype_name(c->tin), convolve_dtype_name(c->tout));
    for (int a = 0; a < c->ndim; a++)
        n += snprintf(s + n, size - (size_t)n, "%s%zu", a ? "x" : "", c->kshape[a]);
    n += snprintf(s + n, size - (size_t)n, " origin");
    for (int a = 0; a < c->ndim; a++)
        n += snprintf(s + n, size - (size_t)n, "%s%td", a ? "," : " ", c->origin[a]);
    snprintf(s + n, size - (size_t)n, " %s cval=%g %s in:%s out:%s%s", convolve_mode_name(c->mode),
             c->cval, c->op == CONVOLVE_OP_CONVOLVE ? "convolve" : "correlate",
             k_kind_names[c->in_kind], k_kind_names[c->out_kind], c->device ? " +device" : "");
}

/* Tolerances: float accumulation (any input but float64) is held to
 * tol = 1e-6 * S * (1 + sqrt(taps)) and eps = 1e-5, relative L2 <= 1e-5,
 * where S = (max |input| + |cval|) * sum |w| bounds every term's size;
 * float64 in and out to 1e-12 (S-scaled), relative L2 <= 1e-12; integer
 * outputs to within 1 of the reference's rounded value. The relative L2
 * is taken against ||ref|| but no less than 0.01 * S * sqrt(n): an output
 * that cancels to a small fraction of its terms (a 1x1 array whose taps
 * sum to nearly nothing) has no meaningful relative error, and its
 * elements are still held to tol. */
typedef struct {
    double tol, eps, l2, l2_floor; /* l2_floor: per element, times sqrt(n) */
} tolerance;

static tolerance tolerance_for(const gcase *c, double S, size_t taps)
{
    tolerance t;
    if (c->tout == CONVOLVE_UINT8 || c->tout == CONVOLVE_UINT16) {
        t.tol = 1.0, t.eps = 0.0, t.l2 = 1.0; /* the L2 is not the criterion */
    } else if (c->tin == CONVOLVE_FLOAT64 && c->tout == CONVOLVE_FLOAT64) {
        t.tol = 1e-12 * S, t.eps = 1e-12, t.l2 = 1e-12;
    } else {
        t.tol = 1e-6 * S * (1.0 + sqrt((double)taps)), t.eps = 1e-5, t.l2 = 1e-5;
    }
    t.l2_floor = 0.01 * S;
    return t;
}

/* Compares a run's output buffer with the reference; returns 1 if good. */
static int judge(const char *what, const gcase *c, const tlayout *out, const unsigned char *buf,
                 const unsigned char *poison_copy, const void *ref, convolve_dtype tref, size_t n,
                 tolerance tl)
{
    size_t es = convolve_dtype_size(c->tout);
    unsigned char *flat = malloc(n * es);
    if (!flat) {
        CHECK(0, "%s: out of memory", what);
        return 0;
    }
    gather(out, buf, flat, n);
    h_diff d = h_compare(c->tout, flat, tref, ref, n, tl.tol, tl.eps);
    size_t gaps = gap_damage(out, buf, poison_copy, n);
    int int_out = c->tout == CONVOLVE_UINT8 || c->tout == CONVOLVE_UINT16;
    double den = d.l2_ref > tl.l2_floor * sqrt((double)n) ? d.l2_ref
                                                          : tl.l2_floor * sqrt((double)n);
    int ok = d.bad == 0 && gaps == 0 && (int_out || !(d.l2_err > tl.l2 * den));
    if (!ok) {
        double o = h_get(c->tout, flat, d.first_bad), r = h_get(tref, ref, d.first_bad);
        CHECK(0,
              "%s: %zu of %zu elements off (first at %zu: got %.9g, want %.9g), max |err| "
              "%.3g, rel L2 %.3g (limit %.1g), tol %.3g eps %.1g, %zu gap bytes written",
              what, d.bad, n, d.first_bad, o, r, d.max_abs, d.rel_l2, tl.l2, tl.tol, tl.eps, gaps);
    } else {
        h_checks++;
    }
    free(flat);
    return ok;
}

static void poison_buffer(convolve_dtype t, unsigned char *buf, size_t bytes)
{
    size_t es = convolve_dtype_size(t);
    h_poison(t, buf, bytes / es);
    memset(buf + bytes / es * es, 0xAB, bytes % es);
}

#ifdef CONVOLVE_WITH_CUDA
/* Runs the plan on device memory on a stream; fills host_out (bytes of
 * out) with what it wrote over a poisoned device buffer. Returns 0 if a
 * CUDA call failed (recorded as a failure). */
static int run_on_device(convolve_plan *plan, const char *what, const tlayout *in,
                         const unsigned char *host_in, const tlayout *out,
                         const unsigned char *poisoned, unsigned char *host_out)
{
    void *d_in = NULL, *d_out = NULL;
    cudaStream_t stream = NULL;
    int ok = 0;
    cudaError_t e;
    if ((e = cudaMalloc(&d_in, in->bytes)) != cudaSuccess ||
        (e = cudaMalloc(&d_out, out->bytes)) != cudaSuccess ||
        (e = cudaMemcpy(d_in, host_in, in->bytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(d_out, poisoned, out->bytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
        /* copies from pageable memory may return before their DMA lands, and
         * a non-blocking stream is not ordered after the default one */
        (e = cudaDeviceSynchronize()) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess) {
        CHECK(0, "%s: CUDA set-up failed: %s", what, cudaGetErrorString(e));
        goto done;
    }
    convolve_status st = convolve_execute_device(plan, (const char *)d_in + in->origin,
                                                 (char *)d_out + out->origin, stream);
    CHECK(st == CONVOLVE_OK, "%s: convolve_execute_device: %s: %s", what, convolve_status_name(st),
          convolve_last_error(ctx));
    if (st != CONVOLVE_OK)
        goto done;
    if ((e = cudaStreamSynchronize(stream)) != cudaSuccess ||
        (e = cudaMemcpy(host_out, d_out, out->bytes, cudaMemcpyDeviceToHost)) != cudaSuccess) {
        CHECK(0, "%s: device run failed: %s", what, cudaGetErrorString(e));
        goto done;
    }
    ok = 1;
done:
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(d_in);
    cudaFree(d_out);
    return ok;
}
#endif

static void run_case(const gcase *c)
{
    char label[400];
    describe(c, label, sizeof label);
    g_tally.cases++;
    size_t n = c->channels, kcount = 1, K[3] = {1, 1, 1};
    for (int a = 0; a < c->ndim; a++) {
        n *= c->shape[a];
        kcount *= c->kshape[a];
        K[a + 3 - c->ndim] = c->kshape[a];
    }
    tlayout in, out;
    make_layout(&in, c->tin, c->ndim, c->shape, c->channels, c->in_kind);
    make_layout(&out, c->tout, c->ndim, c->shape, c->channels, c->out_kind);
    convolve_dtype tref = c->tout == CONVOLVE_UINT8 || c->tout == CONVOLVE_UINT16
                              ? c->tout
                              : CONVOLVE_FLOAT64;
    convolve_layout ref_layout;
    convolve_layout_init(&ref_layout, tref, c->ndim, c->shape, c->channels);

    unsigned char *inbuf = malloc(in.bytes), *outbuf = malloc(out.bytes);
    unsigned char *poisoned = malloc(out.bytes);
    void *ref = malloc(n * convolve_dtype_size(tref));
    double *w = malloc(kcount * sizeof *w);
    if (!inbuf || !outbuf || !poisoned || !ref || !w) {
        CHECK(0, "%s: out of memory", label);
        goto done;
    }
    h_fill_typed(c->tin, inbuf, in.bytes / convolve_dtype_size(c->tin), 1.0);
    double wsum = 0.0, wabs = 0.0;
    h_fill(w, kcount);
    if (c->positive) {
        for (size_t i = 0; i < kcount; i++)
            wsum += w[i] = fabs(w[i]) + 0.01;
        for (size_t i = 0; i < kcount; i++)
            w[i] /= wsum;
    }
    for (size_t i = 0; i < kcount; i++)
        wabs += fabs(w[i]);
    double xmax = c->tin == CONVOLVE_UINT8 ? 255.0 : c->tin == CONVOLVE_UINT16 ? 65535.0 : 1.0;
    double S = (xmax + fabs(c->cval)) * wabs;
    tolerance tl = tolerance_for(c, S, kcount);

    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, c->ndim, c->kshape, w));
    if (!f)
        goto done;
    convolve_options o;
    convolve_options_init(&o);
    o.operation = c->op;
    o.mode = c->mode;
    o.cval = c->cval;
    for (int a = 0; a < c->ndim; a++)
        o.origin[a] = c->origin[a];
    o.backend = CONVOLVE_BACKEND_CPU;
    o.strategy = "reference";
    convolve_status st = convolve_run(ctx, &in.l, inbuf + in.origin, &ref_layout, ref, f, &o);
    CHECK(st == CONVOLVE_OK, "%s: reference: %s", label, convolve_last_error(ctx));
    if (st != CONVOLVE_OK)
        goto done;
    poison_buffer(c->tout, poisoned, out.bytes);

    int served = 0, refused = 0, bad = 0;
    o.backend = CONVOLVE_BACKEND_CUDA;
    for (size_t i = 0, total = convolve_strategy_count(); i <= total; i++) {
        convolve_strategy_info info;
        const char *name;
        if (i < total) {
            convolve_strategy_get(i, &info);
            if (info.backend != CONVOLVE_BACKEND_CUDA || !(info.dims >> (c->ndim - 1) & 1))
                continue;
            name = info.name;
        } else {
            name = NULL; /* "auto" last */
        }
        char what[512];
        snprintf(what, sizeof what, "[%s] strategy %s", label, name ? name : "auto");
        o.strategy = name;
        convolve_plan *plan = NULL;
        st = convolve_plan_create(ctx, &plan, &in.l, &out.l, f, &o);
        int want = name ? expect_support(name, c->ndim, K, c->tin) : 1;
        if (st == CONVOLVE_ERROR_UNSUPPORTED) {
            CHECK(want != 1,
                  "%s: UNSUPPORTED, but the documented limits say it serves this "
                  "case: %s",
                  what, convolve_last_error(ctx));
            CHECK(strlen(convolve_last_error(ctx)) > 0, "%s: UNSUPPORTED without a reason", what);
            if (g_verbose)
                printf("  %s: unsupported: %s\n", what, convolve_last_error(ctx));
            refused++;
            g_tally.unsupported++;
            continue;
        }
        CHECK(st == CONVOLVE_OK, "%s: plan: %s: %s", what, convolve_status_name(st),
              convolve_last_error(ctx));
        if (st != CONVOLVE_OK) {
            bad++;
            continue;
        }
        CHECK(want != 0, "%s: served, but the documented limits say it cannot", what);
        CHECK(convolve_plan_backend(plan) == CONVOLVE_BACKEND_CUDA, "%s: not on CUDA", what);

        /* host memory */
        memcpy(outbuf, poisoned, out.bytes);
        st = convolve_execute(plan, inbuf + in.origin, outbuf + out.origin);
        CHECK(st == CONVOLVE_OK, "%s: convolve_execute: %s: %s", what, convolve_status_name(st),
              convolve_last_error(ctx));
        if (st == CONVOLVE_OK) {
            char w2[600];
            snprintf(w2, sizeof w2, "%s (host)", what);
            bad += !judge(w2, c, &out, outbuf, poisoned, ref, tref, n, tl);
            g_tally.runs++;
            /* a second execute reuses the plan's device buffers */
            if (c->device) {
                memcpy(outbuf, poisoned, out.bytes);
                st = convolve_execute(plan, inbuf + in.origin, outbuf + out.origin);
                CHECK(st == CONVOLVE_OK, "%s: second convolve_execute: %s", what,
                      convolve_last_error(ctx));
                snprintf(w2, sizeof w2, "%s (host, again)", what);
                if (st == CONVOLVE_OK)
                    bad += !judge(w2, c, &out, outbuf, poisoned, ref, tref, n, tl);
            }
        } else {
            bad++;
        }
#ifdef CONVOLVE_WITH_CUDA
        if (c->device) {
            char w2[600];
            snprintf(w2, sizeof w2, "%s (device)", what);
            if (run_on_device(plan, w2, &in, inbuf, &out, poisoned, outbuf)) {
                bad += !judge(w2, c, &out, outbuf, poisoned, ref, tref, n, tl);
                g_tally.runs++;
            } else {
                bad++;
            }
        }
#endif
        served++;
        convolve_plan_free(plan);
    }
    printf("%s %s: %d served, %d unsupported%s\n", bad ? "FAIL" : "ok  ", label, served, refused,
           bad ? " (see above)" : "");
    if (bad)
        g_tally.failures++;
done:
    convolve_filter_free(f);
    free(inbuf);
    free(outbuf);
    free(poisoned);
    free(ref);
    free(w);
}

/* ---- case lists --------------------------------------------------------- */

static gcase base_case(int ndim)
{
    gcase c;
    memset(&c, 0, sizeof c);
    c.ndim = ndim;
    c.channels = 1;
    c.tin = c.tout = CONVOLVE_FLOAT32;
    c.op = CONVOLVE_OP_CORRELATE;
    c.mode = CONVOLVE_MODE_REFLECT;
    c.cval = 0.75;
    for (int a = 0; a < 3; a++)
        c.shape[a] = c.kshape[a] = 1;
    c.device = 1;
    return c;
}

static void set_shape(gcase *c, size_t a, size_t b, size_t d)
{
    const size_t v[3] = {a, b, d};
    for (int i = 0; i < c->ndim; i++)
        c->shape[i] = v[i];
}

static void set_kernel(gcase *c, size_t a, size_t b, size_t d)
{
    const size_t v[3] = {a, b, d};
    for (int i = 0; i < c->ndim; i++)
        c->kshape[i] = v[i];
}

/* A random case: any type pair, channels, layouts, sizes, filter, origin. */
static gcase random_case(int ndim)
{
    static const convolve_dtype types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                            CONVOLVE_UINT16};
    static const size_t chans[4] = {1, 1, 3, 4};
    gcase c = base_case(ndim);
    c.tin = types[h_randint(0, 3)];
    c.tout = types[h_randint(0, 3)];
    c.channels = chans[h_randint(0, 3)];
    c.op = h_randint(0, 1) ? CONVOLVE_OP_CORRELATE : CONVOLVE_OP_CONVOLVE;
    c.mode = (convolve_mode)h_randint(0, 4);
    c.cval = h_uniform(-2, 2);
    c.in_kind = (int)h_randint(0, L_KINDS - 1);
    c.out_kind = (int)h_randint(0, L_REVERSED);
    c.positive = c.tout == CONVOLVE_UINT8 || c.tout == CONVOLVE_UINT16;
    for (int a = 0; a < ndim; a++) {
        long maxn = ndim == 1 ? 700 : ndim == 2 ? 90 : 24;
        long maxk = ndim == 1 ? 40 : ndim == 2 ? 12 : 6;
        c.shape[a] = (size_t)h_randint(1, maxn);
        c.kshape[a] = (size_t)h_randint(1, maxk);
        long k = (long)c.kshape[a];
        c.origin[a] = h_randint(-(k / 2), (k - 1) / 2);
    }
    c.device = h_randint(0, 2) == 0;
    return c;
}

static void small_cases(void)
{
    gcase c = base_case(1);
    c.shape[0] = 301, c.channels = 2, c.kshape[0] = 7, c.origin[0] = -2;
    c.in_kind = L_PITCHED, c.out_kind = L_PLANAR, c.op = CONVOLVE_OP_CONVOLVE;
    run_case(&c);
    c = base_case(1);
    c.shape[0] = 70, c.kshape[0] = 100, c.mode = CONVOLVE_MODE_CONSTANT; /* filter > input */
    c.tin = CONVOLVE_UINT8, c.tout = CONVOLVE_UINT8, c.positive = 1, c.in_kind = L_REVERSED;
    run_case(&c);

    c = base_case(2);
    set_shape(&c, 37, 29, 1), set_kernel(&c, 5, 4, 1);
    c.origin[0] = 1, c.origin[1] = -2, c.channels = 3, c.mode = CONVOLVE_MODE_MIRROR;
    c.tin = CONVOLVE_UINT16, c.tout = CONVOLVE_FLOAT32, c.in_kind = L_PITCHED,
    c.out_kind = L_PLANAR;
    run_case(&c);
    c = base_case(2);
    set_shape(&c, 40, 70, 1), set_kernel(&c, 3, 3, 1);
    c.mode = CONVOLVE_MODE_CONSTANT, c.tin = CONVOLVE_FLOAT64, c.tout = CONVOLVE_FLOAT64;
    c.in_kind = L_REVERSED, c.out_kind = L_REVERSED, c.op = CONVOLVE_OP_CONVOLVE;
    run_case(&c);

    c = base_case(3);
    set_shape(&c, 9, 10, 11), set_kernel(&c, 3, 4, 3);
    c.origin[1] = 1, c.mode = CONVOLVE_MODE_WRAP, c.tin = c.tout = CONVOLVE_FLOAT64;
    c.in_kind = L_PITCHED;
    run_case(&c);
    c = base_case(3);
    set_shape(&c, 5, 9, 70), set_kernel(&c, 2, 3, 5), c.channels = 4;
    c.origin[0] = -1, c.mode = CONVOLVE_MODE_NEAREST, c.tin = CONVOLVE_UINT8;
    c.tout = CONVOLVE_UINT16, c.positive = 1, c.out_kind = L_PITCHED;
    run_case(&c);
}

static void full_cases(void)
{
    static const convolve_dtype types[4] = {CONVOLVE_FLOAT32, CONVOLVE_FLOAT64, CONVOLVE_UINT8,
                                            CONVOLVE_UINT16};
    for (int nd = 1; nd <= 3; nd++) {
        gcase c;
        /* one element (pixel, voxel), filters larger than it, every mode */
        for (int m = 0; m < 5; m++) {
            c = base_case(nd);
            set_kernel(&c, 3, 4, 5);
            c.origin[nd - 1] = -1;
            c.mode = (convolve_mode)m;
            c.cval = -1.25;
            run_case(&c);
        }
        /* odd sizes, every mode, both operations, non-zero cval */
        for (int m = 0; m < 5; m++)
            for (int op = 0; op < 2; op++) {
                c = base_case(nd);
                if (nd == 1)
                    set_shape(&c, 1001, 1, 1), set_kernel(&c, 9, 1, 1);
                else if (nd == 2)
                    set_shape(&c, 37, 53, 1), set_kernel(&c, 5, 3, 1);
                else
                    set_shape(&c, 9, 11, 13), set_kernel(&c, 3, 5, 3);
                c.mode = (convolve_mode)m;
                c.op = (convolve_operation)op;
                c.cval = 1.5;
                c.device = op;
                run_case(&c);
            }
        /* even filter extents with extreme origins */
        for (int e = 0; e < 3; e++) {
            size_t k = (size_t)(2 + 2 * e); /* 2, 4, 6 */
            for (int side = 0; side < 2; side++) {
                c = base_case(nd);
                set_shape(&c, nd == 1 ? 257 : nd == 2 ? 33 : 11, nd == 2 ? 64 : 17, 18);
                set_kernel(&c, k, nd == 3 ? 2 : k, k);
                for (int a = 0; a < nd; a++) {
                    ptrdiff_t K = (ptrdiff_t)c.kshape[a];
                    c.origin[a] = side ? (K - 1) / 2 : -(K / 2);
                }
                c.mode = (convolve_mode)((e + side) % 5);
                c.op = (convolve_operation)side;
                run_case(&c);
            }
        }
        /* every input and output type */
        for (int ti = 0; ti < 4; ti++)
            for (int to = 0; to < 4; to++) {
                c = base_case(nd);
                set_shape(&c, nd == 1 ? 513 : nd == 2 ? 45 : 12, 38, 13);
                set_kernel(&c, 3, nd == 3 ? 2 : 4, 3);
                c.origin[0] = -1;
                c.tin = types[ti], c.tout = types[to];
                c.positive = to >= 2;
                c.mode = (convolve_mode)((ti + to) % 5);
                c.device = (ti + to) % 2;
                run_case(&c);
            }
        /* channels and layouts */
        static const size_t chans[3] = {1, 3, 4};
        for (int ch = 0; ch < 3; ch++)
            for (int k = 0; k < L_KINDS; k++) {
                c = base_case(nd);
                set_shape(&c, nd == 1 ? 300 : nd == 2 ? 31 : 7, nd == 2 ? 67 : 9, 33);
                set_kernel(&c, 3, 3, 3);
                c.channels = chans[ch];
                c.in_kind = k;
                c.out_kind = (k + ch) % (L_REVERSED + 1);
                c.mode = (convolve_mode)((k + ch) % 5);
                c.tin = types[(k + ch) % 4];
                c.tout = types[(k + 2 * ch) % 4];
                c.positive = c.tout == CONVOLVE_UINT8 || c.tout == CONVOLVE_UINT16;
                c.device = k % 2 == 0;
                run_case(&c);
            }
        /* large arrays (skipped by --medium, for the CPU emulation) */
        c = base_case(nd);
        if (nd == 1)
            set_shape(&c, 1000003, 1, 1), set_kernel(&c, 31, 1, 1);
        else if (nd == 2)
            set_shape(&c, 2049, 1537, 1), set_kernel(&c, 5, 5, 1);
        else
            set_shape(&c, 67, 45, 131), set_kernel(&c, 3, 3, 3);
        c.mode = CONVOLVE_MODE_CONSTANT;
        if (!g_medium)
            run_case(&c);
        /* filters larger than a tile (tiled-in refuses K > 31) */
        c = base_case(nd);
        if (nd == 1)
            set_shape(&c, 5000, 1, 1), set_kernel(&c, 300, 1, 1), c.origin[0] = 77;
        else if (nd == 2)
            set_shape(&c, 100, 90, 1), set_kernel(&c, 33, 33, 1), c.origin[0] = -10;
        else
            set_shape(&c, 20, 21, 22), set_kernel(&c, 9, 9, 9), c.origin[2] = 3;
        c.mode = CONVOLVE_MODE_MIRROR;
        run_case(&c);
        if (nd == 2) {
            c = base_case(2);
            set_shape(&c, 50, 300, 1), set_kernel(&c, 5, 40, 1);
            c.mode = CONVOLVE_MODE_WRAP;
            run_case(&c);
        }
        /* filters larger than the constant bank: only basic serves */
        c = base_case(nd);
        if (nd == 1)
            set_shape(&c, 9000, 1, 1), set_kernel(&c, 5000, 1, 1);
        else if (nd == 2)
            set_shape(&c, 80, 90, 1), set_kernel(&c, 65, 65, 1);
        else
            set_shape(&c, 20, 20, 20), set_kernel(&c, 17, 17, 17);
        c.mode = CONVOLVE_MODE_NEAREST;
        c.device = 0;
        run_case(&c);
        c.tin = c.tout = CONVOLVE_FLOAT64; /* 2048 doubles */
        if (nd == 1)
            set_kernel(&c, 2049, 1, 1);
        else if (nd == 2)
            set_kernel(&c, 46, 46, 1);
        else
            set_kernel(&c, 13, 13, 13);
        run_case(&c);
        /* input tiles larger than any device's shared memory */
        if (nd >= 2) {
            c = base_case(nd);
            if (nd == 2)
                set_shape(&c, 4, 4001, 1), set_kernel(&c, 1, 4000, 1);
            else
                set_shape(&c, 2, 2, 4001), set_kernel(&c, 1, 1, 4000);
            c.mode = CONVOLVE_MODE_REFLECT;
            c.device = 0;
            run_case(&c);
        }
        /* random cases */
        for (int r = 0; r < 25; r++) {
            c = random_case(nd);
            run_case(&c);
        }
    }
}

/* ---- arrays past 2^31 elements ------------------------------------------ */

/* uint8 in, uint16 out, correlate with two non-zero taps, wrap mode; the
 * expected output is computed here directly: out = x[p - 1] + 2 x[p + 1]
 * per axis shift (1-D: taps at -2 and +2). */
static void large_case(int ndim)
{
    size_t shape[2], n;
    if (ndim == 1) {
        shape[0] = ((size_t)1 << 31) + 1000003;
        n = shape[0];
    } else {
        shape[0] = 40001, shape[1] = 53687; /* 2147533687 elements */
        n = shape[0] * shape[1];
    }
    printf("large %d-D case: %zu elements\n", ndim, n);
    fflush(stdout);
    unsigned char *x = malloc(n);
    uint16_t *y = malloc(n * sizeof *y);
    if (!x || !y) {
        CHECK(0, "large %d-D: out of host memory", ndim);
        free(x);
        free(y);
        return;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = (unsigned char)(h_rand_u64() >> 56);
    size_t kshape[2];
    double w[9] = {0};
    if (ndim == 1) {
        kshape[0] = 5;
        w[0] = 1.0, w[4] = 2.0; /* koff 2: out[i] = x[i-2] + 2 x[i+2] */
    } else {
        kshape[0] = kshape[1] = 3;
        w[0] = 1.0, w[8] = 2.0; /* out[r][c] = x[r-1][c-1] + 2 x[r+1][c+1] */
    }
    convolve_layout li, lo;
    convolve_layout_init(&li, CONVOLVE_UINT8, ndim, shape, 1);
    convolve_layout_init(&lo, CONVOLVE_UINT16, ndim, shape, 1);
    convolve_filter *f = NULL;
    CHECK_OK(ctx, convolve_filter_create(ctx, &f, ndim, kshape, w));
    convolve_options o;
    convolve_options_init(&o);
    o.operation = CONVOLVE_OP_CORRELATE;
    o.mode = CONVOLVE_MODE_WRAP;
    o.backend = CONVOLVE_BACKEND_CUDA;
    for (size_t s = 0, total = convolve_strategy_count(); f && s < total; s++) {
        convolve_strategy_info info;
        convolve_strategy_get(s, &info);
        if (info.backend != CONVOLVE_BACKEND_CUDA || !(info.dims >> (ndim - 1) & 1))
            continue;
        o.strategy = info.name;
        convolve_plan *plan = NULL;
        convolve_status st = convolve_plan_create(ctx, &plan, &li, &lo, f, &o);
        /* the fast strategies serve fewer cases (docs/strategies.md): a
         * refusal with its reason is right for them; the chapter's serve all */
        int fast = !strcmp(info.name, "direct") || !strcmp(info.name, "separable") ||
                   !strcmp(info.name, "fft");
        if (fast && st == CONVOLVE_ERROR_UNSUPPORTED) {
            printf("large %d-D %s: refused as documented: %s\n", ndim, info.name,
                   convolve_last_error(ctx));
            continue;
        }
        CHECK(st == CONVOLVE_OK, "large %d-D %s: plan: %s", ndim, info.name,
              convolve_last_error(ctx));
        if (st != CONVOLVE_OK)
            continue;
        memset(y, 0xAB, n * sizeof *y);
        st = convolve_execute(plan, x, y);
        CHECK(st == CONVOLVE_OK, "large %d-D %s: execute: %s", ndim, info.name,
              convolve_last_error(ctx));
        size_t bad = 0, first = 0;
        if (st == CONVOLVE_OK) {
            if (ndim == 1) {
                for (size_t i = 0; i < n; i++) {
                    /* the wrap-around only near the ends */
                    size_t a = i >= 2 ? i - 2 : i + n - 2, b = i + 2 < n ? i + 2 : i + 2 - n;
                    if (y[i] != x[a] + 2 * x[b] && !bad++)
                        first = i;
                }
            } else {
                const size_t H = shape[0], W = shape[1];
                for (size_t r = 0; r < H; r++) {
                    const unsigned char *up = x + (r ? r - 1 : H - 1) * W;
                    const unsigned char *dn = x + (r + 1 < H ? r + 1 : 0) * W;
                    const uint16_t *row = y + r * W;
                    for (size_t c = 0; c < W; c++) {
                        size_t cl = c ? c - 1 : W - 1, cr = c + 1 < W ? c + 1 : 0;
                        if (row[c] != up[cl] + 2 * dn[cr] && !bad++)
                            first = r * W + c;
                    }
                }
            }
            CHECK(bad == 0, "large %d-D %s: %zu of %zu outputs wrong, first at %zu", ndim,
                  info.name, bad, n, first);
        }
        printf("%s large %d-D %s\n", st == CONVOLVE_OK && bad == 0 ? "ok  " : "FAIL", ndim,
               info.name);
        fflush(stdout);
        convolve_plan_free(plan);
    }
    convolve_filter_free(f);
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    int small = 0, large = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--small") == 0)
            small = 1;
        else if (strcmp(argv[i], "--large") == 0)
            large = 1;
        else if (strcmp(argv[i], "--medium") == 0)
            g_medium = 1;
        else if (strcmp(argv[i], "--verbose") == 0)
            g_verbose = 1;
        else {
            fprintf(stderr, "usage: test_gpu_strategies [--small | --medium | --large] "
                            "[--verbose]\n");
            return 2;
        }
    }
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return 1;
    convolve_device_info dev;
    convolve_device_query(ctx, &dev);
    if (!convolve_backend_built(CONVOLVE_BACKEND_CUDA) || !dev.available) {
        printf("test_gpu_strategies: SKIPPED: no usable CUDA device (%s)\n",
               convolve_backend_built(CONVOLVE_BACKEND_CUDA)
                   ? dev.reason
                   : "libconvolve was built without CUDA");
        convolve_context_free(ctx);
        return 77;
    }
    printf("test_gpu_strategies: %s, compute %d.%d, %d SMs, %.1f GiB\n", dev.name,
           dev.compute_major, dev.compute_minor, dev.multiprocessors,
           (double)dev.total_memory / (1 << 30));
    h_seed("test_gpu_strategies");
    printf("criteria: float accumulation |out-ref| <= 1e-6*S*(1+sqrt(taps)) + |ref|*1e-5 and "
           "rel L2 <= 1e-5; float64 in and out 1e-12*S + |ref|*1e-12, rel L2 <= 1e-12; integer "
           "outputs within 1; S = (max|x| + |cval|) * sum|w|; rel L2 against max(||ref||, "
           "0.01*S*sqrt(n))\n");
#ifndef CONVOLVE_WITH_CUDA
    printf("note: built without the CUDA runtime headers; device-memory runs are skipped\n");
#endif
    if (large) {
        large_case(1);
        large_case(2);
    } else if (small) {
        small_cases();
    } else {
        small_cases();
        full_cases();
    }
    printf("test_gpu_strategies: %zu cases, %zu runs compared, %zu refusals as documented, %zu "
           "failing cases\n",
           g_tally.cases, g_tally.runs, g_tally.unsupported, g_tally.failures);
    convolve_context_free(ctx);
    return h_finish("test_gpu_strategies");
}
