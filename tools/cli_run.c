/*
 * cli_run.c - `convolve INPUT OUTPUT [options]`: parses the options (the
 * table in cli_spec.c), loads the input and the filter, checks that the
 * output format can hold the result before any work, plans, runs (timing
 * convolve_execute alone for --time) and saves the result atomically.
 */
#include "convolve_cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Checks the options' combination once all are parsed. */
static int check_args(const cli_run_args *a)
{
    if (a->npos != 2)
        return cli_fail(CLI_BAD_INPUT, "%s (see convolve --help)",
                        a->npos == 0 ? "no INPUT and OUTPUT given" : "no OUTPUT given");
    if (!a->weights == !a->filter)
        return cli_fail(CLI_BAD_INPUT, "%s", a->weights
                        ? "give either --weights or --filter, not both"
                        : "no filter: give --weights FILE or --filter NAME (e.g. gaussian:2)");
    if (!*a->input || !*a->output)
        return cli_fail(CLI_BAD_INPUT, "empty file name");
    return CLI_OK;
}

static int is_float(convolve_dtype t)
{
    return t == CONVOLVE_FLOAT32 || t == CONVOLVE_FLOAT64;
}

/* Can format f hold the result: the input's layout with element type t?
 * (The library says what the format holds; the CLI adds what it was asked.) */
static int check_output(convolve_context *ctx, const char *path, convolve_format f,
                        const convolve_layout *in, convolve_dtype t)
{
    convolve_layout L = *in;
    L.dtype = CONVOLVE_FLOAT64;
    int holds_float64 = convolve_format_can_hold(ctx, f, &L) == CONVOLVE_OK;
    L.dtype = t;
    convolve_status st = convolve_format_can_hold(ctx, f, &L);
    if (st == CONVOLVE_OK)
        return CLI_OK;
    if (st != CONVOLVE_ERROR_UNSUPPORTED)
        return cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    return cli_fail(CLI_BAD_INPUT, "cannot write the result (%d-D, %zu channel%s, %s) to %s file "
                    "'%s': %s%s; use .npy for other arrays", L.ndim, L.channels,
                    L.channels == 1 ? "" : "s", convolve_dtype_name(t), convolve_format_name(f),
                    path, convolve_last_error(ctx),
                    holds_float64 ? " (add --output-dtype float64)" : "");
}

/* 1 if the two paths name the same existing file (or are the same string). */
static int same_file(const char *p, const char *q)
{
    if (!strcmp(p, q))
        return 1;
    struct stat a, b;
    return stat(p, &a) == 0 && stat(q, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Loads the --weights file as a filter of ndim dimensions. */
static int load_weights(convolve_context *ctx, const char *path, int ndim, convolve_filter **f)
{
    unsigned char head[CONVOLVE_FORMAT_DETECT_BYTES];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return cli_fail(CLI_BAD_INPUT, "cannot open weights '%s': %s", path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, fp);
    fclose(fp);
    /* .npy by content or name (the reader says what is wrong); else text */
    convolve_format by_content = convolve_format_detect(head, got);
    convolve_format by_name = convolve_format_from_path(path);
    convolve_format fmt = CONVOLVE_FORMAT_TEXT;
    if (by_content == CONVOLVE_FORMAT_NPY || by_name == CONVOLVE_FORMAT_NPY)
        fmt = CONVOLVE_FORMAT_NPY;
    else if (by_content == CONVOLVE_FORMAT_TIFF || by_name == CONVOLVE_FORMAT_TIFF)
        fmt = CONVOLVE_FORMAT_TIFF; /* a float PSF; a stack for 3-D weights */
    else if (convolve_format_is_image(by_name) || convolve_format_is_image(by_content))
        return cli_fail(CLI_BAD_INPUT, "weights '%s' look like an image; give a .npy file or "
                        "a text file of numbers", path);
    convolve_array *w = NULL, *w64 = NULL;
    convolve_status st = convolve_array_load(ctx, &w, path, fmt);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "weights: %s", convolve_last_error(ctx));
    const convolve_layout *L = convolve_array_layout(w);
    size_t shape[CONVOLVE_MAX_DIMS];
    int wd = L->ndim;
    if (L->channels != 1) {
        convolve_array_free(w);
        return cli_fail(CLI_BAD_INPUT, "weights '%s' have %zu channels; give one (gray)", path,
                        L->channels);
    }
    if (wd > ndim || (fmt != CONVOLVE_FORMAT_TEXT && wd != ndim)) {
        convolve_array_free(w);
        return cli_fail(CLI_BAD_INPUT, "weights '%s' have %d dimension%s and the input %d; "
                        "they must match%s", path, wd, wd == 1 ? "" : "s", ndim,
                        fmt == CONVOLVE_FORMAT_TEXT ? " (text weights may have fewer)" : "");
    }
    /* text weights with fewer dimensions get leading axes of 1 */
    for (int k = 0; k < ndim; k++)
        shape[k] = k < ndim - wd ? 1 : L->shape[k - (ndim - wd)];
    st = convolve_array_convert(ctx, w, CONVOLVE_FLOAT64, &w64);
    convolve_array_free(w);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "weights: %s", convolve_last_error(ctx));
    st = convolve_filter_create(ctx, f, ndim, shape, convolve_array_const_data(w64));
    convolve_array_free(w64);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "weights '%s': %s", path, convolve_last_error(ctx));
    return CLI_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Plans and runs; returns CLI_OK with the result in *out. */
static int compute(convolve_context *ctx, const cli_run_args *a, const convolve_array *in,
                   const convolve_filter *f, convolve_array *out)
{
    convolve_plan *plan = NULL;
    convolve_status st;
    if (a->wisdom && access(a->wisdom, F_OK) == 0 &&
        (st = convolve_wisdom_load(ctx, a->wisdom)) != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(ctx));
    const size_t known = convolve_wisdom_count(ctx);
    st = convolve_plan_create(ctx, &plan, convolve_array_layout(in), convolve_array_layout(out), f,
                              &a->opt);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    if (a->wisdom && convolve_wisdom_count(ctx) != known &&
        (st = convolve_wisdom_save(ctx, a->wisdom)) != CONVOLVE_OK) {
        convolve_plan_free(plan);
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(ctx));
    }

    double *ms = malloc((size_t)a->repeat * sizeof *ms);
    if (!ms) {
        convolve_plan_free(plan);
        return cli_fail(CLI_RESOURCE, "out of memory");
    }
    for (long r = 0; r < a->repeat && st == CONVOLVE_OK; r++) {
        double t0 = now_ms();
        st = convolve_execute(plan, convolve_array_const_data(in), convolve_array_data(out));
        ms[r] = now_ms() - t0;
    }
    int rc = CLI_OK;
    if (st != CONVOLVE_OK) {
        rc = cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    } else if (a->time) {
        size_t n = (size_t)a->repeat;
        qsort(ms, n, sizeof *ms, cmp_double);
        double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
        fprintf(stderr, "time_ms: %.3f (n=%ld)\n", median, a->repeat);
    }
    free(ms);
    convolve_plan_free(plan);
    return rc;
}

static int run(convolve_context *ctx, cli_run_args *a)
{
    convolve_format ofmt = convolve_format_from_path(a->output);
    if (ofmt == CONVOLVE_FORMAT_AUTO)
        return cli_fail(CLI_BAD_INPUT, "cannot tell the output format of '%s' from its "
                        "extension: use .npy, .png, .jpg, .jpeg, .pgm, .ppm, .pnm, .tif, .tiff or .txt",
                        a->output);
    if (!a->force && same_file(a->input, a->output))
        return cli_fail(CLI_BAD_INPUT, "OUTPUT '%s' is the input file; choose another name, or "
                        "pass --force to replace it", a->output);
    if (!a->force && a->weights && same_file(a->weights, a->output))
        return cli_fail(CLI_BAD_INPUT, "OUTPUT '%s' is the weights file; choose another name, "
                        "or pass --force to replace it", a->output);

    convolve_array *in = NULL, *out = NULL;
    convolve_filter *f = NULL;
    convolve_status st = convolve_array_load(ctx, &in, a->input, CONVOLVE_FORMAT_AUTO);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    const convolve_layout *L = convolve_array_layout(in);
    int rc = CLI_OK;
    if (a->weights) {
        rc = load_weights(ctx, a->weights, L->ndim, &f);
    } else if ((st = convolve_filter_create_named(ctx, &f, a->filter, L->ndim)) != CONVOLVE_OK) {
        rc = cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    }
    if (rc != CLI_OK)
        goto done;

    convolve_options *o = &a->opt;
    if (a->n_origin > 1 && a->n_origin != L->ndim) {
        rc = cli_fail(CLI_BAD_INPUT, "--origin has %d values and the input %d dimension%s; give "
                      "one value, or one per axis", a->n_origin, L->ndim, L->ndim == 1 ? "" : "s");
        goto done;
    }
    for (int k = 0; k < L->ndim; k++)
        o->origin[k] = a->n_origin == 0 ? 0 : a->origin[a->n_origin == 1 ? 0 : k];

    convolve_dtype odt = L->dtype;
    if (a->have_dtype)
        odt = a->out_dtype;
    else if (convolve_format_is_image(ofmt) && is_float(L->dtype))
        odt = CONVOLVE_UINT8;
    if ((rc = check_output(ctx, a->output, ofmt, L, odt)) != CLI_OK)
        goto done;
    if ((st = convolve_array_create(ctx, &out, odt, L->ndim, L->shape, L->channels)) !=
        CONVOLVE_OK) {
        rc = cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
        goto done;
    }
    if ((rc = compute(ctx, a, in, f, out)) != CLI_OK)
        goto done;
    st = convolve_array_save(ctx, out, a->output, ofmt, a->quality);
    if (st != CONVOLVE_OK)
        rc = cli_fail(st == CONVOLVE_ERROR_IO ? CLI_RESOURCE : cli_exit_code(st), "%s",
                      convolve_last_error(ctx));
done:
    convolve_filter_free(f);
    convolve_array_free(out);
    convolve_array_free(in);
    return rc;
}

int cli_run(int argc, char **argv)
{
    cli_run_args a;
    cli_run_args_init(&a);
    int rc = cli_parse(&cli_run_command, argc, argv, &a);
    if (rc == CLI_DONE)
        return CLI_OK;
    if (rc != CLI_OK || (rc = check_args(&a)) != CLI_OK)
        return rc;
    convolve_context *ctx = NULL;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return cli_fail(CLI_RESOURCE, "out of memory");
    rc = run(ctx, &a);
    convolve_context_free(ctx);
    return rc;
}
