/*
 * bench.c - `convolve bench`: times strategies on one shape for a list of
 * filter radii, through the public API only (convolve_plan_benchmark: the
 * median of timed runs on resident data, CUDA events inside the library;
 * convolve_device_copy_bandwidth: the device's copy bandwidth, measured in
 * the same run). For each strategy and radius it prints the median time, the
 * effective bandwidth (input read once and output written once), its share
 * of the copy bandwidth, GFLOP/s (2 flops per tap per output), and the
 * arithmetic intensity the convolution chapter derives for the strategy;
 * then the chapter's table of the tiled kernel's reduction in global-memory
 * accesses. Text or --json. Its options are a table (cli.h) like the
 * CLI's, parsed and explained by the same machinery.
 */
#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_RADII 64
#define BENCH_MAX_STRATEGIES 32
#define BENCH_MIN_RUNS 20

typedef struct {
    int ndim;
    size_t shape[3];
    int shape_given;
    int radii[BENCH_MAX_RADII];
    int nradii;
    const char *strategies[BENCH_MAX_STRATEGIES];
    int nstrategies;
    convolve_dtype dtype;
    convolve_mode mode;
    convolve_backend backend;
    int runs, warmup, json;
    size_t channels;    /* interleaved channels, each filtered alone */
    int gaussian;       /* separable Gaussian of radius r instead of dense weights */
    char *strategy_arg; /* --strategy's list, split in place (owned) */
} bench_options;

#define BENCH "convolve bench"

typedef struct {
    const char *strategy;
    char ran[32]; /* the strategy the plan ran ("auto" resolved) */
    int radius;
    size_t taps;
    int served; /* 1 timed, 0 cannot serve, -1 failed */
    char reason[512];
    convolve_timing t;
    double gbps, pct_copy, gflops, op_per_byte;
} bench_row;

static int parse_size(const char *s, size_t *v)
{
    char *end;
    unsigned long long x = strtoull(s, &end, 10);
    if (end == s || x == 0 || (*end && *end != 'x'))
        return -1;
    *v = (size_t)x;
    return (int)(end - s);
}

static int parse_shape(const char *s, bench_options *o)
{
    int nd = 0;
    while (*s) {
        if (nd == 3)
            return 0;
        int used = parse_size(s, &o->shape[nd]);
        if (used < 0)
            return 0;
        nd++;
        s += used;
        if (*s == 'x') {
            s++;
            if (!*s)
                return 0;
        }
    }
    o->ndim = nd;
    return nd > 0;
}

static int add_radius(bench_options *o, long r)
{
    if (r < 0 || r > 100000 || o->nradii == BENCH_MAX_RADII)
        return 0;
    o->radii[o->nradii++] = (int)r;
    return 1;
}

/* "1,2,3,7", "1..7" or "1-7", and mixtures. */
static int parse_radii(const char *s, bench_options *o)
{
    o->nradii = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            return 0;
        s = end;
        if ((s[0] == '.' && s[1] == '.') || s[0] == '-') {
            s += s[0] == '-' ? 1 : 2;
            b = strtol(s, &end, 10);
            if (end == s || b < a)
                return 0;
            s = end;
        }
        for (long r = a; r <= b; r++)
            if (!add_radius(o, r))
                return 0;
        if (*s == ',')
            s++;
        else if (*s)
            return 0;
    }
    return o->nradii > 0;
}

/* Splits a comma list in place. */
static int parse_strategies(char *s, bench_options *o)
{
    o->nstrategies = 0;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (o->nstrategies == BENCH_MAX_STRATEGIES)
            return 0;
        o->strategies[o->nstrategies++] = tok;
    }
    return o->nstrategies > 0;
}

/* The flops per byte of global-memory traffic that the convolution chapter's
 * analysis gives the strategy (NAN where it gives none, e.g. CPU strategies):
 *   basic      each tap loads an input and a weight: 2 / (in + weight bytes)
 *   constant   weights come from the constant cache: 2 / in bytes
 *   tiled-in   the block is the input tile IN (tile[] extents), the output
 *              tile OUT = IN - K + 1 per axis; the block loads IN once:
 *              2 * taps * prod(OUT) / (prod(IN) * in bytes)
 *   tiled, tiled-out   the block is the output tile OUT, IN = OUT + K - 1
 *   cached     the block loads its own tile; halo reads hit the caches:
 *              2 * taps * prod(T) / (prod(T) * in bytes)
 * A d-dimensional problem uses the first d tile extents. */
static double chapter_op_per_byte(const convolve_strategy_info *s, int ndim, size_t K,
                                  size_t in_bytes, size_t weight_bytes)
{
    if (s->backend != CONVOLVE_BACKEND_CUDA)
        return NAN;
    double taps = pow((double)K, ndim);
    if (strcmp(s->name, "basic") == 0)
        return 2.0 / (double)(in_bytes + weight_bytes);
    if (strcmp(s->name, "constant") == 0)
        return 2.0 / (double)in_bytes;
    int tiled_in = strcmp(s->name, "tiled-in") == 0;
    int tiled_out = strcmp(s->name, "tiled") == 0 || strcmp(s->name, "tiled-out") == 0;
    int cached = strcmp(s->name, "cached") == 0;
    if (!tiled_in && !tiled_out && !cached)
        return NAN;
    double out = 1.0, in = 1.0;
    for (int a = 0; a < ndim; a++) {
        double t = (double)s->tile[a];
        if (t <= 0)
            return NAN;
        if (tiled_in) {
            in *= t;
            out *= t - (double)K + 1.0;
        } else if (tiled_out) {
            out *= t;
            in *= t + (double)K - 1.0;
        } else {
            out *= t;
            in *= t;
        }
    }
    if (out <= 0)
        return NAN;
    return 2.0 * taps * out / (in * (double)in_bytes);
}

/* The chapter's table: global-memory accesses of the basic kernel over those
 * of the tiled one, (OUT_TILE^2 * MASK^2) / (OUT_TILE + MASK - 1)^2. */
static double reduction_ratio(double tile, double mask)
{
    return tile * tile * mask * mask / ((tile + mask - 1.0) * (tile + mask - 1.0));
}

static const int k_masks[2] = {5, 9};
static const int k_tiles[4] = {8, 16, 32, 64};

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void shape_text(const bench_options *o, char *s, size_t size)
{
    int n = 0;
    for (int a = 0; a < o->ndim; a++)
        n += snprintf(s + n, size - (size_t)n, "%s%zu", a ? "x" : "", o->shape[a]);
}

/* Dense random weights of a (2r+1)^ndim filter, the same every run; or a
 * separable Gaussian of that radius. */
static convolve_status make_filter(convolve_context *ctx, int ndim, size_t K, int gaussian,
                                   convolve_filter **f)
{
    if (gaussian) {
        char spec[64];
        snprintf(spec, sizeof spec, "gaussian:%.17g", (double)(K / 2) / 4.0);
        return K == 1 ? convolve_filter_create_named(ctx, f, "identity", ndim)
                      : convolve_filter_create_named(ctx, f, spec, ndim);
    }
    size_t shape[3] = {K, K, K}, n = 1;
    for (int a = 0; a < ndim; a++)
        n *= K;
    double *w = malloc(n * sizeof *w);
    if (!w)
        return CONVOLVE_ERROR_OUT_OF_MEMORY;
    uint64_t s = 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        w[i] = ((double)(s >> 11) * 0x1.0p-53 + 0.5) / (double)n; /* positive, sums near 1 */
    }
    convolve_status st = convolve_filter_create(ctx, f, ndim, shape, w);
    free(w);
    return st;
}

/* What one run measures, shared by its steps. */
typedef struct {
    convolve_device_info dev;
    int gpu;                 /* a usable GPU in a CUDA build */
    convolve_backend listed; /* the backend whose strategies are timed */
    convolve_layout layout;
    size_t count, esize, wsize; /* elements; input and weight bytes each */
    double bytes;               /* input read once, output written once */
    double copy_gbps;           /* NAN when not measured */
    char copy_note[300];
    bench_row *rows;
    size_t nrows;
} bench_run;

/* The backend, the default shape and strategies, the layout; CLI_OK or an
 * exit code after a message. */
static int setup(convolve_context *ctx, bench_options *o, bench_run *b)
{
    convolve_device_query(ctx, &b->dev);
    b->gpu = convolve_backend_built(CONVOLVE_BACKEND_CUDA) && b->dev.available;
    if (o->backend == CONVOLVE_BACKEND_CUDA && !b->gpu)
        return cli_error(BENCH, CLI_RESOURCE, "the CUDA backend cannot be used: %s",
                         convolve_backend_built(CONVOLVE_BACKEND_CUDA) ? b->dev.reason
                                                                       : "built without CUDA");
    b->listed = o->backend == CONVOLVE_BACKEND_AUTO
                    ? (b->gpu ? CONVOLVE_BACKEND_CUDA : CONVOLVE_BACKEND_CPU)
                    : o->backend;
    if (!o->shape_given) {
        o->ndim = 2;
        o->shape[0] = o->shape[1] = b->listed == CONVOLVE_BACKEND_CUDA ? 8192 : 512;
    }
    if (o->nstrategies == 0) /* every strategy of the backend serving ndim */
        for (size_t i = 0, n = convolve_strategy_count(); i < n; i++) {
            convolve_strategy_info info;
            convolve_strategy_get(i, &info);
            if (info.backend == b->listed && (info.dims >> (o->ndim - 1) & 1) &&
                o->nstrategies < BENCH_MAX_STRATEGIES)
                o->strategies[o->nstrategies++] = info.name;
        }
    convolve_status st = convolve_layout_init(&b->layout, o->dtype, o->ndim, o->shape, o->channels);
    if (st != CONVOLVE_OK)
        return cli_error(BENCH, CLI_BAD_INPUT, "bad shape: %s", convolve_status_description(st));
    b->count = convolve_layout_count(&b->layout);
    b->esize = convolve_dtype_size(o->dtype);
    b->wsize = o->dtype == CONVOLVE_FLOAT64 ? 8 : 4; /* weights as the GPU keeps them */
    b->bytes = (double)b->count * (double)(2 * b->esize);
    b->nrows = (size_t)o->nstrategies * (size_t)o->nradii;
    b->rows = calloc(b->nrows ? b->nrows : 1, sizeof *b->rows);
    if (!b->rows)
        return cli_error(BENCH, CLI_RESOURCE, "out of memory");
    return CLI_OK;
}

/* The device's copy bandwidth (at least 64 MiB copies), or why not. */
static void measure_copy(convolve_context *ctx, const bench_options *o, bench_run *b)
{
    b->copy_gbps = NAN;
    if (!b->gpu) {
        snprintf(b->copy_note, sizeof b->copy_note, "no GPU: %s", b->dev.reason);
        return;
    }
    size_t cb = b->count * b->esize;
    if (cb < ((size_t)64 << 20))
        cb = (size_t)64 << 20;
    if (convolve_device_copy_bandwidth(ctx, cb, o->runs, &b->copy_gbps) != CONVOLVE_OK) {
        snprintf(b->copy_note, sizeof b->copy_note, "copy bandwidth not measured: %s",
                 convolve_last_error(ctx));
        b->copy_gbps = NAN;
    } else {
        snprintf(b->copy_note, sizeof b->copy_note, "%zu MiB copies", cb >> 20);
    }
}

/* Times one strategy at one radius into row; returns 1 when it failed to
 * run (0 when it ran or cannot serve the case). */
static int time_row(convolve_context *ctx, const bench_options *o, const bench_run *b,
                    const convolve_strategy_info *info, const char *strategy, int radius,
                    bench_row *row)
{
    const size_t K = 2 * (size_t)radius + 1;
    row->strategy = strategy;
    row->radius = radius;
    row->taps = 1;
    for (int a = 0; a < o->ndim; a++)
        row->taps *= K;
    row->gbps = row->pct_copy = row->gflops = NAN;
    row->op_per_byte = info ? chapter_op_per_byte(info, o->ndim, K, b->esize, b->wsize) : NAN;
    convolve_filter *f = NULL;
    convolve_plan *plan = NULL;
    convolve_status st = make_filter(ctx, o->ndim, K, o->gaussian, &f);
    if (st == CONVOLVE_OK) {
        convolve_options opt;
        convolve_options_init(&opt);
        opt.operation = CONVOLVE_OP_CORRELATE;
        opt.mode = o->mode;
        opt.backend = o->backend;
        opt.strategy = strategy;
        st = convolve_plan_create(ctx, &plan, &b->layout, &b->layout, f, &opt);
    }
    if (st == CONVOLVE_OK) {
        snprintf(row->ran, sizeof row->ran, "%s", convolve_plan_strategy(plan));
        st = convolve_plan_benchmark(plan, o->warmup, o->runs, &row->t);
    }
    if (st == CONVOLVE_OK) {
        row->served = 1;
        double s = row->t.median_ms * 1e-3;
        /* flops the algorithm does: 2 a tap, or 2 a tap of each 1-D pass */
        double flops = o->gaussian ? 2.0 * (double)(o->ndim * K) : 2.0 * (double)row->taps;
        row->gbps = b->bytes / s * 1e-9;
        row->pct_copy = 100.0 * row->gbps / b->copy_gbps;
        row->gflops = flops * (double)b->count / s * 1e-9;
    } else {
        row->served = st == CONVOLVE_ERROR_UNSUPPORTED ? 0 : -1;
        snprintf(row->reason, sizeof row->reason, "%s",
                 convolve_last_error(ctx)[0] ? convolve_last_error(ctx)
                                             : convolve_status_description(st));
    }
    convolve_plan_free(plan);
    convolve_filter_free(f);
    return row->served < 0;
}

/* Every strategy at every radius; returns how many failed to run. */
static int time_rows(convolve_context *ctx, const bench_options *o, bench_run *b)
{
    int failures = 0;
    size_t r = 0;
    for (int si = 0; si < o->nstrategies; si++) {
        convolve_strategy_info info;
        memset(&info, 0, sizeof info);
        int found = 0;
        for (size_t i = 0, n = convolve_strategy_count(); i < n && !found; i++) {
            convolve_strategy_get(i, &info);
            found = info.backend == b->listed && strcmp(info.name, o->strategies[si]) == 0;
        }
        for (int ri = 0; ri < o->nradii; ri++, r++)
            failures += time_row(ctx, o, b, found ? &info : NULL, o->strategies[si], o->radii[ri],
                                 &b->rows[r]);
    }
    return failures;
}

static void print_json(const bench_options *o, const bench_run *b, double floor_ms)
{
    printf("{\"backend\": ");
    json_string(stdout, convolve_backend_name(b->listed));
    printf(", \"device\": ");
    json_string(stdout, b->gpu ? b->dev.name : "");
    printf(", \"ndim\": %d, \"shape\": [", o->ndim);
    for (int a = 0; a < o->ndim; a++)
        printf("%s%zu", a ? ", " : "", o->shape[a]);
    printf("], \"channels\": %zu, \"filter\": \"%s\", \"dtype\": \"%s\", \"mode\": \"%s\", "
           "\"runs\": %d, \"warmup\": %d",
           o->channels, o->gaussian ? "gaussian" : "dense", convolve_dtype_name(o->dtype),
           convolve_mode_name(o->mode), o->runs, o->warmup);
    printf(", \"bytes_moved\": %.0f, \"copy_gbps\": ", b->bytes);
    json_number(stdout, b->copy_gbps);
    printf(", \"floor_ms\": ");
    json_number(stdout, floor_ms);
    printf(",\n \"results\": [");
    for (size_t i = 0; i < b->nrows; i++) {
        const bench_row *w = &b->rows[i];
        printf("%s\n  {\"strategy\": ", i ? "," : "");
        json_string(stdout, w->strategy);
        printf(", \"ran\": ");
        json_string(stdout, w->ran);
        printf(", \"radius\": %d, \"taps\": %zu, \"supported\": %s", w->radius, w->taps,
               w->served > 0 ? "true" : "false");
        if (w->served > 0) {
            printf(", \"median_ms\": %.6g, \"min_ms\": %.6g, \"max_ms\": %.6g, \"runs\": %d",
                   w->t.median_ms, w->t.min_ms, w->t.max_ms, w->t.runs);
            printf(", \"gbps\": ");
            json_number(stdout, w->gbps);
            printf(", \"pct_copy\": ");
            json_number(stdout, w->pct_copy);
            printf(", \"gflops\": ");
            json_number(stdout, w->gflops);
        } else {
            printf(", \"error\": %s, \"reason\": ", w->served < 0 ? "true" : "false");
            json_string(stdout, w->reason);
        }
        printf(", \"op_per_byte\": ");
        json_number(stdout, w->op_per_byte);
        printf("}");
    }
    printf("\n ],\n \"tiled_reduction\": [");
    int first = 1;
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < 4; t++, first = 0)
            printf("%s{\"mask\": %d, \"tile\": %d, \"ratio\": %.4g}", first ? "" : ", ", k_masks[m],
                   k_tiles[t], reduction_ratio(k_tiles[t], k_masks[m]));
    printf("]}\n");
}

static void print_text(const bench_options *o, const bench_run *b, double floor_ms)
{
    char shape[96];
    shape_text(o, shape, sizeof shape);
    printf("convolve bench: %s backend%s%s, %d-D %s %s x%zu channel%s, %s filter, mode %s, "
           "median of %d runs after %d warm-up\n",
           convolve_backend_name(b->listed), b->gpu ? " on " : "", b->gpu ? b->dev.name : "",
           o->ndim, shape, convolve_dtype_name(o->dtype), o->channels, o->channels == 1 ? "" : "s",
           o->gaussian ? "separable gaussian" : "dense", convolve_mode_name(o->mode), o->runs,
           o->warmup);
    if (isfinite(b->copy_gbps))
        printf("device copy bandwidth %.1f GB/s (read + write; %s); floor for this shape "
               "%.3f ms (%.0f MB moved)\n",
               b->copy_gbps, b->copy_note, floor_ms, b->bytes * 1e-6);
    else
        printf("device copy bandwidth: n/a (%s)\n", b->copy_note);
    printf("%-12s %3s %6s %11s %9s %7s %9s %8s\n", "strategy", "r", "taps", "median ms", "GB/s",
           "%copy", "GFLOP/s", "OP/B");
    for (size_t i = 0; i < b->nrows; i++) {
        const bench_row *w = &b->rows[i];
        char opb[32] = "-", pct[32] = "-";
        if (isfinite(w->op_per_byte))
            snprintf(opb, sizeof opb, "%.2f", w->op_per_byte);
        if (w->served > 0) {
            if (isfinite(w->pct_copy))
                snprintf(pct, sizeof pct, "%.1f%%", w->pct_copy);
            char label[48];
            int same = strcmp(w->strategy, w->ran) == 0;
            snprintf(label, sizeof label, "%s%s%s", w->strategy, same ? "" : ":",
                     same ? "" : w->ran);
            printf("%-12s %3d %6zu %11.4f %9.1f %7s %9.1f %8s\n", label, w->radius, w->taps,
                   w->t.median_ms, w->gbps, pct, w->gflops, opb);
        } else {
            printf("%-12s %3d %6zu   %s: %s\n", w->strategy, w->radius, w->taps,
                   w->served == 0 ? "cannot serve" : "FAILED", w->reason);
        }
    }
    printf("\nglobal-memory access reduction of the tiled kernel (chapter): "
           "(OUT_TILE^2 * MASK^2) / (OUT_TILE + MASK - 1)^2\n%-10s",
           "OUT_TILE");
    for (int t = 0; t < 4; t++)
        printf(" %7d", k_tiles[t]);
    printf("\n");
    for (int m = 0; m < 2; m++) {
        printf("MASK = %-3d", k_masks[m]);
        for (int t = 0; t < 4; t++)
            printf(" %7.2f", reduction_ratio(k_tiles[t], k_masks[m]));
        printf("\n");
    }
}

static int run_bench(bench_options *o)
{
    convolve_context *ctx = NULL;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return cli_error(BENCH, CLI_RESOURCE, "out of memory");
    bench_run b;
    memset(&b, 0, sizeof b);
    int rc = setup(ctx, o, &b);
    if (rc == CLI_OK) {
        measure_copy(ctx, o, &b);
        int failures = time_rows(ctx, o, &b);
        const double floor_ms = b.bytes / (b.copy_gbps * 1e9) * 1e3;
        if (o->json)
            print_json(o, &b, floor_ms);
        else
            print_text(o, &b, floor_ms);
        /* a strategy failed to run: a device or resource failure */
        rc = failures ? CLI_RESOURCE : CLI_OK;
    }
    free(b.rows);
    convolve_context_free(ctx);
    return rc;
}

/* ---- options ------------------------------------------------------------------ */

#define OPTS(t) ((bench_options *)(t))

static int set_shape(void *t, const char *v)
{
    OPTS(t)->shape_given = 1;
    return parse_shape(v, OPTS(t)) ? CLI_OK : CLI_BAD_VALUE;
}

static int set_radius(void *t, const char *v)
{
    return parse_radii(v, OPTS(t)) ? CLI_OK : CLI_BAD_VALUE;
}

static int set_strategy(void *t, const char *v)
{
    bench_options *o = OPTS(t);
    free(o->strategy_arg);
    if (!(o->strategy_arg = strdup(v)))
        return cli_error(BENCH, CLI_RESOURCE, "out of memory");
    return parse_strategies(o->strategy_arg, o) ? CLI_OK : CLI_BAD_VALUE;
}

static int set_dtype(void *t, const char *v)
{
    return convolve_dtype_parse(v, &OPTS(t)->dtype) == CONVOLVE_OK ? CLI_OK : CLI_BAD_VALUE;
}

static int set_mode(void *t, const char *v)
{
    return convolve_mode_parse(v, &OPTS(t)->mode) == CONVOLVE_OK ? CLI_OK : CLI_BAD_VALUE;
}

static int set_backend(void *t, const char *v)
{
    return convolve_backend_parse(v, &OPTS(t)->backend) == CONVOLVE_OK ? CLI_OK : CLI_BAD_VALUE;
}

static int set_runs(void *t, const char *v)
{
    long n;
    if (!cli_parse_long(v, BENCH_MIN_RUNS, 100000, &n))
        return cli_error(BENCH, CLI_BAD_INPUT, "--runs '%s': give a count from %d to 100000", v,
                         BENCH_MIN_RUNS);
    OPTS(t)->runs = (int)n;
    return CLI_OK;
}

static int set_warmup(void *t, const char *v)
{
    long n;
    if (!cli_parse_long(v, 0, 100000, &n))
        return CLI_BAD_VALUE;
    OPTS(t)->warmup = (int)n;
    return CLI_OK;
}

static int set_channels(void *t, const char *v)
{
    long n;
    if (!cli_parse_long(v, 1, 64, &n))
        return CLI_BAD_VALUE;
    OPTS(t)->channels = (size_t)n;
    return CLI_OK;
}

static const char *filter_kinds(size_t i)
{
    static const char *const k[] = {"dense", "gaussian"};
    return i < 2 ? k[i] : NULL;
}

static int set_filter(void *t, const char *v)
{
    if (strcmp(v, "dense") != 0 && strcmp(v, "gaussian") != 0)
        return CLI_BAD_VALUE;
    OPTS(t)->gaussian = strcmp(v, "gaussian") == 0;
    return CLI_OK;
}

static int set_json(void *t, const char *v)
{
    OPTS(t)->json = 1;
    return CLI_OK;
}

static int show_help(void *t, const char *v)
{
    cli_print_help(&cli_bench_command, stdout);
    return CLI_DONE;
}

#define STR_(x) #x
#define STR(x) STR_(x)

static const cli_option k_bench_options[] = {
    {"shape", 0, "N | HxW | DxHxW", "array extents (default 8192x8192; 512x512 on the CPU)", NULL,
     set_shape, CLI_COMPLETE_NONE, NULL, 0},
    {"radius", 0, "LIST",
     "filter radii, e.g. 1,2,3,7 or 1..7 (default 1..7); the filter is (2r+1) per axis, dense, "
     "random weights",
     NULL, set_radius, CLI_COMPLETE_NONE, NULL, 0},
    {"strategy", 0, "LIST",
     "strategy names, comma-separated (default: every one of the backend that serves the "
     "shape's dimensionality); auto times the strategy the planner picks, named in the output",
     NULL, set_strategy, CLI_COMPLETE_WORDS, cli_words_strategy, 0},
    {"dtype", 0, "T", "float32 (default), float64, uint8, uint16", NULL, set_dtype,
     CLI_COMPLETE_WORDS, cli_words_dtype, 0},
    {"mode", 0, "M", "constant (default), reflect, nearest, mirror, wrap", NULL, set_mode,
     CLI_COMPLETE_WORDS, cli_words_mode, 0},
    {"channels", 0, "C", "interleaved channels, each filtered alone (default 1)", NULL,
     set_channels, CLI_COMPLETE_NONE, NULL, 0},
    {"filter", 0, "dense|gaussian",
     "random dense weights (default), or a separable Gaussian of sigma r/4 (radius r, as "
     "scipy's truncate=4)",
     NULL, set_filter, CLI_COMPLETE_WORDS, filter_kinds, 0},
    {"backend", 0, "B", "cuda (default), cpu, auto", NULL, set_backend, CLI_COMPLETE_WORDS,
     cli_words_backend, 0},
    {"runs", 0, "N", "timed runs, median reported (default and minimum " STR(BENCH_MIN_RUNS) ")",
     NULL, set_runs, CLI_COMPLETE_NONE, NULL, 0},
    {"warmup", 0, "N", "untimed runs first (default 3)", NULL, set_warmup, CLI_COMPLETE_NONE, NULL,
     0},
    {"json", 0, NULL, "one JSON object instead of the tables", NULL, set_json, CLI_COMPLETE_NONE,
     NULL, 0},
    {"help", 'h', NULL, "this text", "the usage text", show_help, CLI_COMPLETE_NONE, NULL, 0},
};

static const cli_option_group k_bench_groups[] = {
    {NULL, NULL, k_bench_options, sizeof k_bench_options / sizeof k_bench_options[0]},
};

static const cli_text k_bench_after[] = {
    {"Exit codes", NULL,
     "0 when every strategy ran (one that cannot serve the case is reported in its row); 1 for "
     "unknown or malformed options and a bad shape; 2 when a strategy failed to run, when the "
     "CUDA backend (the default) cannot be used, or when out of memory.",
     0},
};

const cli_command cli_bench_command = {
    BENCH,
    "convolve bench --help",
    "convolve bench [options]",
    "time the strategies on one shape",
    "Times strategies on one shape for a list of filter radii, through the public API: the "
    "median time, the effective bandwidth (input read once, output written once), its share of "
    "the device's copy bandwidth measured in the same run, GFLOP/s and the arithmetic intensity "
    "the convolution chapter derives for the strategy; then the chapter's table of the tiled "
    "kernel's reduction in global-memory accesses.",
    NULL,
    0,
    k_bench_groups,
    1,
    k_bench_after,
    1,
    28,
    NULL,
};

int cli_bench_main(int argc, char **argv)
{
    bench_options o;
    memset(&o, 0, sizeof o);
    o.dtype = CONVOLVE_FLOAT32;
    o.mode = CONVOLVE_MODE_CONSTANT;
    o.backend = CONVOLVE_BACKEND_CUDA;
    o.runs = BENCH_MIN_RUNS;
    o.warmup = 3;
    o.channels = 1;
    for (int r = 1; r <= 7; r++)
        add_radius(&o, r);
    int rc = cli_parse(&cli_bench_command, argc, argv, &o);
    if (rc == CLI_OK)
        rc = run_bench(&o);
    else if (rc == CLI_DONE)
        rc = CLI_OK;
    free(o.strategy_arg);
    return rc;
}
