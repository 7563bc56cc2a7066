/*
 * cli_run.c - `convolve INPUT OUTPUT [options]`: parses the options (the
 * table in cli_spec.c), tells the single-file form from the batch form
 * (--output-dir: cli_batch.c), loads the input and the filter, checks that
 * the output format can hold the result before any work, plans, runs (timing
 * convolve_execute alone for --time) and saves the result atomically. Also
 * the steps both forms share (weights, filter and origins, output type and
 * format checks), which write their message into a buffer.
 */
#include "convolve_cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_msg(char *msg, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, CLI_MSG_SIZE, fmt, ap);
    va_end(ap);
    return code;
}

/* 1 if path names an existing folder, or ends with '/'. */
static int names_folder(const char *path)
{
    struct stat st;
    size_t len = strlen(path);
    return (len && path[len - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
}

/* The batch options given without --output-dir, or NULL. */
static const char *batch_option_without_dir(const cli_run_args *a)
{
    return a->suffix ? "--suffix" : a->format ? "--format" : a->inputs_from ? "--inputs-from"
         : a->have_jobs ? "--jobs" : NULL;
}

/* Checks the options' combination once all are parsed. */
static int check_args(cli_run_args *a)
{
    if (a->output_dir) {
        if (!a->weights == !a->filter)
            return cli_fail(CLI_BAD_INPUT, "%s", a->weights
                            ? "give either --weights or --filter, not both"
                            : "no filter: give --weights FILE or --filter NAME (e.g. gaussian:2)");
        if (a->time || a->have_repeat)
            return cli_fail(CLI_BAD_INPUT, "%s times one file's convolution and cannot be used "
                            "with --output-dir (the summary gives the batch's time)",
                            a->time ? "--time" : "--repeat");
        return CLI_OK;
    }
    const char *batch_only = batch_option_without_dir(a);
    if (batch_only)
        return cli_fail(CLI_BAD_INPUT, "%s applies to many files: give --output-dir DIR too (see "
                        "convolve --help)", batch_only);
    if (a->npos > 2)
        return cli_fail(CLI_BAD_INPUT, "unexpected argument '%s': the single-file form takes one "
                        "INPUT and one OUTPUT; to convolve many files, give --output-dir DIR "
                        "(convolve INPUT... --output-dir DIR ...)", a->pos[2]);
    if (a->npos != 2)
        return cli_fail(CLI_BAD_INPUT, "%s (see convolve --help)",
                        a->npos == 0 ? "no INPUT and OUTPUT given" : "no OUTPUT given");
    a->input = a->pos[0];
    a->output = a->pos[1];
    if (!a->weights == !a->filter)
        return cli_fail(CLI_BAD_INPUT, "%s", a->weights
                        ? "give either --weights or --filter, not both"
                        : "no filter: give --weights FILE or --filter NAME (e.g. gaussian:2)");
    if (!*a->input || !*a->output)
        return cli_fail(CLI_BAD_INPUT, "empty file name");
    if (names_folder(a->output))
        return cli_fail(CLI_BAD_INPUT, "OUTPUT '%s' is a folder: name the output file, or write "
                        "the result into the folder with --output-dir %s (convolve INPUT... "
                        "--output-dir DIR ...)", a->output, a->output);
    return CLI_OK;
}

static int is_float(convolve_dtype t)
{
    return t == CONVOLVE_FLOAT32 || t == CONVOLVE_FLOAT64;
}

convolve_dtype cli_output_dtype(const cli_run_args *a, convolve_format f, convolve_dtype t)
{
    if (a->have_dtype)
        return a->out_dtype;
    return convolve_format_is_image(f) && is_float(t) ? CONVOLVE_UINT8 : t;
}

/* (The library says what the format holds; the CLI adds what it was asked.) */
int cli_check_output(convolve_context *ctx, const char *path, convolve_format f,
                     const convolve_layout *in, convolve_dtype t, char *msg)
{
    convolve_layout L = *in;
    L.dtype = CONVOLVE_FLOAT64;
    int holds_float64 = convolve_format_can_hold(ctx, f, &L) == CONVOLVE_OK;
    L.dtype = t;
    convolve_status st = convolve_format_can_hold(ctx, f, &L);
    if (st == CONVOLVE_OK)
        return CLI_OK;
    if (st != CONVOLVE_ERROR_UNSUPPORTED)
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(ctx));
    return cli_msg(msg, CLI_BAD_INPUT, "cannot write the result (%d-D, %zu channel%s, %s) to %s "
                   "file '%s': %s%s; use .npy for other arrays", L.ndim, L.channels,
                   L.channels == 1 ? "" : "s", convolve_dtype_name(t), convolve_format_name(f),
                   path, convolve_last_error(ctx),
                   holds_float64 ? " (add --output-dtype float64)" : "");
}

int cli_same_file(const char *p, const char *q)
{
    if (!strcmp(p, q))
        return 1;
    struct stat a, b;
    return stat(p, &a) == 0 && stat(q, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void cli_weights_free(cli_weights *w)
{
    if (w) {
        free(w->data);
        w->data = NULL;
    }
}

int cli_weights_read(convolve_context *ctx, const char *path, cli_weights *w, char *msg)
{
    memset(w, 0, sizeof *w);
    w->path = path;
    unsigned char head[CONVOLVE_FORMAT_DETECT_BYTES];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return cli_msg(msg, CLI_BAD_INPUT, "cannot open weights '%s': %s", path,
                       strerror(errno));
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
        return cli_msg(msg, CLI_BAD_INPUT, "weights '%s' look like an image; give a .npy file "
                       "or a text file of numbers", path);
    convolve_array *raw = NULL, *w64 = NULL;
    convolve_status st = convolve_array_load(ctx, &raw, path, fmt);
    if (st == CONVOLVE_OK) {
        st = convolve_array_convert(ctx, raw, CONVOLVE_FLOAT64, &w64);
        convolve_array_free(raw);
    }
    if (st != CONVOLVE_OK)
        return cli_msg(msg, cli_exit_code(st), "weights: %s", convolve_last_error(ctx));
    const convolve_layout *L = convolve_array_layout(w64);
    if (L->channels != 1) {
        size_t channels = L->channels;
        convolve_array_free(w64);
        return cli_msg(msg, CLI_BAD_INPUT, "weights '%s' have %zu channels; give one (gray)", path,
                       channels);
    }
    w->text = fmt == CONVOLVE_FORMAT_TEXT;
    w->ndim = L->ndim;
    memcpy(w->shape, L->shape, sizeof w->shape);
    if (!(w->data = malloc(convolve_array_bytes(w64)))) {
        convolve_array_free(w64);
        return cli_msg(msg, CLI_RESOURCE, "out of memory");
    }
    memcpy(w->data, convolve_array_const_data(w64), convolve_array_bytes(w64));
    convolve_array_free(w64);
    return CLI_OK;
}

int cli_filter_for(convolve_context *ctx, const cli_run_args *a, const cli_weights *w, int ndim,
                   convolve_filter **f, convolve_options *o, char *msg)
{
    *f = NULL;
    convolve_status st;
    if (w) {
        if (w->ndim > ndim || (!w->text && w->ndim != ndim))
            return cli_msg(msg, CLI_BAD_INPUT, "weights '%s' have %d dimension%s and the input "
                           "%d; they must match%s", w->path, w->ndim, w->ndim == 1 ? "" : "s",
                           ndim, w->text ? " (text weights may have fewer)" : "");
        /* text weights with fewer dimensions get leading axes of 1 */
        size_t shape[CONVOLVE_MAX_DIMS];
        for (int k = 0; k < ndim; k++)
            shape[k] = k < ndim - w->ndim ? 1 : w->shape[k - (ndim - w->ndim)];
        if ((st = convolve_filter_create(ctx, f, ndim, shape, w->data)) != CONVOLVE_OK)
            return cli_msg(msg, cli_exit_code(st), "weights '%s': %s", w->path,
                           convolve_last_error(ctx));
    } else if ((st = convolve_filter_create_named(ctx, f, a->filter, ndim)) != CONVOLVE_OK) {
        return cli_msg(msg, cli_exit_code(st), "%s", convolve_last_error(ctx));
    }
    if (a->n_origin > 1 && a->n_origin != ndim) {
        convolve_filter_free(*f);
        *f = NULL;
        return cli_msg(msg, CLI_BAD_INPUT, "--origin has %d values and the input %d dimension%s; "
                       "give one value, or one per axis", a->n_origin, ndim, ndim == 1 ? "" : "s");
    }
    *o = a->opt;
    for (int k = 0; k < ndim; k++)
        o->origin[k] = a->n_origin == 0 ? 0 : a->origin[a->n_origin == 1 ? 0 : k];
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
static int compute(convolve_context *ctx, const cli_run_args *a, const convolve_options *o,
                   const convolve_array *in, const convolve_filter *f, convolve_array *out)
{
    convolve_plan *plan = NULL;
    convolve_status st;
    if (a->wisdom && access(a->wisdom, F_OK) == 0 &&
        (st = convolve_wisdom_load(ctx, a->wisdom)) != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(ctx));
    const size_t known = convolve_wisdom_count(ctx);
    st = convolve_plan_create(ctx, &plan, convolve_array_layout(in), convolve_array_layout(out), f, o);
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
    if (!a->force && cli_same_file(a->input, a->output))
        return cli_fail(CLI_BAD_INPUT, "OUTPUT '%s' is the input file; choose another name, or "
                        "pass --force to replace it", a->output);
    if (!a->force && a->weights && cli_same_file(a->weights, a->output))
        return cli_fail(CLI_BAD_INPUT, "OUTPUT '%s' is the weights file; choose another name, "
                        "or pass --force to replace it", a->output);

    char msg[CLI_MSG_SIZE];
    convolve_array *in = NULL, *out = NULL;
    convolve_filter *f = NULL;
    cli_weights w = {0};
    convolve_options o;
    convolve_status st = convolve_array_load(ctx, &in, a->input, CONVOLVE_FORMAT_AUTO);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    const convolve_layout *L = convolve_array_layout(in);
    int rc = a->weights ? cli_weights_read(ctx, a->weights, &w, msg) : CLI_OK;
    if (rc == CLI_OK)
        rc = cli_filter_for(ctx, a, a->weights ? &w : NULL, L->ndim, &f, &o, msg);
    convolve_dtype odt = cli_output_dtype(a, ofmt, L->dtype);
    if (rc == CLI_OK)
        rc = cli_check_output(ctx, a->output, ofmt, L, odt, msg);
    if (rc != CLI_OK) {
        cli_fail(rc, "%s", msg);
        goto done;
    }
    if ((st = convolve_array_create(ctx, &out, odt, L->ndim, L->shape, L->channels)) !=
        CONVOLVE_OK) {
        rc = cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
        goto done;
    }
    if ((rc = compute(ctx, a, &o, in, f, out)) != CLI_OK)
        goto done;
    st = convolve_array_save(ctx, out, a->output, ofmt, a->quality);
    if (st != CONVOLVE_OK)
        rc = cli_fail(st == CONVOLVE_ERROR_IO ? CLI_RESOURCE : cli_exit_code(st), "%s",
                      convolve_last_error(ctx));
done:
    cli_weights_free(&w);
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
        rc = CLI_OK;
    else if (rc == CLI_OK && (rc = check_args(&a)) == CLI_OK) {
        if (a.output_dir) {
            rc = cli_batch(&a);
        } else {
            convolve_context *ctx = NULL;
            if (convolve_context_create(&ctx) != CONVOLVE_OK)
                rc = cli_fail(CLI_RESOURCE, "out of memory");
            else
                rc = run(ctx, &a);
            convolve_context_free(ctx);
        }
    }
    cli_run_args_free(&a);
    return rc;
}
