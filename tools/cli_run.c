/*
 * cli_run.c - `convolve INPUT OUTPUT [options]`: parses the options (GNU
 * style), loads the input and the filter, checks that the output format can
 * hold the result before any work, plans, runs (timing convolve_execute
 * alone for --time) and saves the result atomically.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const char *input, *output;
    const char *weights, *filter;
    convolve_options opt;
    int n_origin;
    long origin[CONVOLVE_MAX_DIMS];
    int have_dtype;
    convolve_dtype out_dtype;
    int quality;
    int time;
    long repeat;
    int force;
    const char *wisdom;
} run_args;

typedef enum { OPT_NONE, OPT_VALUE } opt_kind;

static const struct {
    const char *name;
    opt_kind kind;
} k_options[] = {
    {"weights", OPT_VALUE}, {"filter", OPT_VALUE},    {"mode", OPT_VALUE},
    {"cval", OPT_VALUE},    {"origin", OPT_VALUE},    {"correlate", OPT_NONE},
    {"backend", OPT_VALUE}, {"strategy", OPT_VALUE},  {"output-dtype", OPT_VALUE},
    {"threads", OPT_VALUE}, {"quality", OPT_VALUE},   {"time", OPT_NONE},
    {"repeat", OPT_VALUE},  {"force", OPT_NONE},      {"help", OPT_NONE},
    {"version", OPT_NONE},  {"autotune", OPT_NONE},   {"wisdom", OPT_VALUE},
};

/* Parses all of s as a long in [lo, hi]. */
static int parse_long(const char *s, long lo, long hi, long *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (*end || errno == ERANGE || x < lo || x > hi)
        return 0;
    *v = x;
    return 1;
}

static int parse_finite(const char *s, double *v)
{
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(x))
        return 0;
    *v = x;
    return 1;
}

/* Applies one option; returns CLI_OK, or an exit code after a message.
 * *done is set for --help and --version. */
static int apply_option(run_args *a, const char *name, const char *val, int *done)
{
    long l;
    if (!strcmp(name, "weights")) {
        a->weights = val;
    } else if (!strcmp(name, "filter")) {
        a->filter = val;
    } else if (!strcmp(name, "mode")) {
        if (convolve_mode_parse(val, &a->opt.mode) != CONVOLVE_OK)
            return cli_fail(CLI_BAD_INPUT, "unknown mode '%s': use reflect, constant, nearest, "
                            "mirror or wrap", val);
    } else if (!strcmp(name, "cval")) {
        if (!parse_finite(val, &a->opt.cval))
            return cli_fail(CLI_BAD_INPUT, "--cval '%s' is not a finite number", val);
    } else if (!strcmp(name, "origin")) {
        const char *p = val;
        a->n_origin = 0;
        for (;;) {
            char item[64];
            size_t len = strcspn(p, ",");
            if (a->n_origin == CONVOLVE_MAX_DIMS || len == 0 || len >= sizeof item)
                return cli_fail(CLI_BAD_INPUT, "--origin '%s': give 1 to 3 integers separated "
                                "by commas, e.g. --origin=-1,0,1", val);
            memcpy(item, p, len);
            item[len] = '\0';
            if (!parse_long(item, -1000000000L, 1000000000L, &l))
                return cli_fail(CLI_BAD_INPUT, "--origin '%s': '%s' is not an integer from "
                                "-1000000000 to 1000000000", val, item);
            a->origin[a->n_origin++] = l;
            if (!p[len])
                break;
            p += len + 1;
        }
    } else if (!strcmp(name, "correlate")) {
        a->opt.operation = CONVOLVE_OP_CORRELATE;
    } else if (!strcmp(name, "backend")) {
        if (convolve_backend_parse(val, &a->opt.backend) != CONVOLVE_OK)
            return cli_fail(CLI_BAD_INPUT, "unknown backend '%s': use auto, cpu or cuda", val);
    } else if (!strcmp(name, "strategy")) {
        if (!*val)
            return cli_fail(CLI_BAD_INPUT, "--strategy needs a name (see convolve info)");
        a->opt.strategy = val;
    } else if (!strcmp(name, "output-dtype")) {
        if (convolve_dtype_parse(val, &a->out_dtype) != CONVOLVE_OK)
            return cli_fail(CLI_BAD_INPUT, "unknown output dtype '%s': use float32, float64, "
                            "uint8 or uint16", val);
        a->have_dtype = 1;
    } else if (!strcmp(name, "threads")) {
        if (!parse_long(val, 0, 4096, &l))
            return cli_fail(CLI_BAD_INPUT, "--threads '%s': give a count from 0 (all) to 4096",
                            val);
        a->opt.threads = (int)l;
    } else if (!strcmp(name, "quality")) {
        if (!parse_long(val, 1, 100, &l))
            return cli_fail(CLI_BAD_INPUT, "--quality '%s': give an integer from 1 to 100", val);
        a->quality = (int)l;
    } else if (!strcmp(name, "time")) {
        a->time = 1;
    } else if (!strcmp(name, "repeat")) {
        if (!parse_long(val, 1, 1000000, &a->repeat))
            return cli_fail(CLI_BAD_INPUT, "--repeat '%s': give a count from 1 to 1000000", val);
    } else if (!strcmp(name, "force")) {
        a->force = 1;
    } else if (!strcmp(name, "autotune")) {
        a->opt.autotune = 1;
    } else if (!strcmp(name, "wisdom")) {
        if (!*val)
            return cli_fail(CLI_BAD_INPUT, "--wisdom needs a file name");
        a->wisdom = val;
        a->opt.autotune = 1;
    } else if (!strcmp(name, "help")) {
        cli_usage(stdout);
        *done = 1;
    } else if (!strcmp(name, "version")) {
        printf("convolve %s\n", convolve_version_string());
        *done = 1;
    }
    return CLI_OK;
}

/* Parses argv[1..]; returns CLI_OK, or an exit code (after a message, or
 * with *done set when --help or --version was answered). */
static int parse_args(int argc, char **argv, run_args *a, int *done)
{
    memset(a, 0, sizeof *a);
    convolve_options_init(&a->opt);
    a->repeat = 1;
    const char *pos[2];
    int npos = 0, only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_positional || arg[0] != '-' || !strcmp(arg, "-")) {
            if (npos == 2)
                return cli_fail(CLI_BAD_INPUT, "unexpected argument '%s': give one INPUT and "
                                "one OUTPUT (see convolve --help)", arg);
            pos[npos++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_positional = 1;
            continue;
        }
        if (!strcmp(arg, "-h")) {
            cli_usage(stdout);
            *done = 1;
            return CLI_OK;
        }
        if (arg[1] != '-')
            return cli_fail(CLI_BAD_INPUT, "unknown option '%s' (options are long: see "
                            "convolve --help)", arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        size_t k, n = sizeof k_options / sizeof k_options[0];
        for (k = 0; k < n; k++)
            if (strlen(k_options[k].name) == len && !strncmp(k_options[k].name, name, len))
                break;
        if (k == n)
            return cli_fail(CLI_BAD_INPUT, "unknown option '%.*s' (see convolve --help)",
                            (int)(len + 2), arg);
        const char *val = NULL;
        if (k_options[k].kind == OPT_VALUE) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return cli_fail(CLI_BAD_INPUT, "option '--%s' needs a value", k_options[k].name);
        } else if (eq) {
            return cli_fail(CLI_BAD_INPUT, "option '--%s' takes no value", k_options[k].name);
        }
        int rc = apply_option(a, k_options[k].name, val, done);
        if (rc != CLI_OK || *done)
            return rc;
    }
    if (npos != 2)
        return cli_fail(CLI_BAD_INPUT, "%s (see convolve --help)",
                        npos == 0 ? "no INPUT and OUTPUT given" : "no OUTPUT given");
    a->input = pos[0];
    a->output = pos[1];
    if (!a->weights == !a->filter)
        return cli_fail(CLI_BAD_INPUT, "%s", a->weights
                        ? "give either --weights or --filter, not both"
                        : "no filter: give --weights FILE or --filter NAME (e.g. gaussian:2)");
    if (!*a->input || !*a->output)
        return cli_fail(CLI_BAD_INPUT, "empty file name");
    return CLI_OK;
}

static int is_image_format(convolve_format f)
{
    return f == CONVOLVE_FORMAT_PNG || f == CONVOLVE_FORMAT_JPEG || f == CONVOLVE_FORMAT_PNM;
}

static int is_float(convolve_dtype t)
{
    return t == CONVOLVE_FLOAT32 || t == CONVOLVE_FLOAT64;
}

/* Can format f hold an array of ndim dimensions, ch channels, type t? */
static int check_output(const char *path, convolve_format f, int ndim, size_t ch,
                        convolve_dtype t)
{
    const char *fname = convolve_format_name(f), *why = NULL;
    switch (f) {
    case CONVOLVE_FORMAT_PNG:
        if (t != CONVOLVE_UINT8 && t != CONVOLVE_UINT16)
            why = "PNG holds uint8 or uint16 data";
        else if (ch > 4)
            why = "PNG holds 1 to 4 channels";
        break;
    case CONVOLVE_FORMAT_JPEG:
        if (t != CONVOLVE_UINT8)
            why = "JPEG holds uint8 data";
        else if (ch != 1 && ch != 3)
            why = "JPEG holds 1 (gray) or 3 (RGB) channels";
        break;
    case CONVOLVE_FORMAT_PNM:
        if (t != CONVOLVE_UINT8 && t != CONVOLVE_UINT16)
            why = "PGM/PPM hold uint8 or uint16 data";
        else if (ch != 1 && ch != 3)
            why = "PGM/PPM hold 1 (gray) or 3 (RGB) channels";
        break;
    case CONVOLVE_FORMAT_TIFF:
        if (ndim != 2 && ndim != 3)
            why = "TIFF holds 2-D images and 3-D stacks (a page per plane)";
        else if (ch > 4)
            why = "TIFF holds 1 to 4 channels";
        break;
    case CONVOLVE_FORMAT_TEXT:
        if (!is_float(t))
            why = "text holds float data (add --output-dtype float64)";
        else if (ndim > 2 || ch != 1)
            why = "text holds 1-D or 2-D single-channel arrays";
        break;
    default:
        break;
    }
    if (!why && is_image_format(f) && ndim != 2)
        why = "image files hold 2-D images";
    if (!why)
        return CLI_OK;
    return cli_fail(CLI_BAD_INPUT, "cannot write the result (%d-D, %zu channel%s, %s) to %s "
                    "file '%s': %s; use .npy for other arrays", ndim, ch, ch == 1 ? "" : "s",
                    convolve_dtype_name(t), fname, path, why);
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
    unsigned char head[8] = {0};
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return cli_fail(CLI_BAD_INPUT, "cannot open weights '%s': %s", path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, fp);
    fclose(fp);
    convolve_format fmt = CONVOLVE_FORMAT_TEXT;
    convolve_format by_name = convolve_format_from_path(path);
    int tiff_magic = got >= 4 && (!memcmp(head, "II*", 4) || !memcmp(head, "MM\0*", 4) ||
                                  !memcmp(head, "II+", 4) || !memcmp(head, "MM\0+", 4));
    if (got >= 6 && !memcmp(head, "\x93NUMPY", 6))
        fmt = CONVOLVE_FORMAT_NPY;
    else if (by_name == CONVOLVE_FORMAT_NPY)
        fmt = CONVOLVE_FORMAT_NPY; /* the reader says what is wrong */
    else if (tiff_magic || by_name == CONVOLVE_FORMAT_TIFF)
        fmt = CONVOLVE_FORMAT_TIFF; /* a float PSF, a stack for 3-D weights */
    else if (is_image_format(by_name) || (got >= 4 && !memcmp(head, "\x89PNG", 4)) ||
             (got >= 3 && head[0] == 0xFF && head[1] == 0xD8))
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
static int compute(convolve_context *ctx, const run_args *a, const convolve_array *in,
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

static int run(convolve_context *ctx, run_args *a)
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
    else if (is_image_format(ofmt) && is_float(L->dtype))
        odt = CONVOLVE_UINT8;
    if ((rc = check_output(a->output, ofmt, L->ndim, L->channels, odt)) != CLI_OK)
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
    run_args a;
    int done = 0;
    int rc = parse_args(argc, argv, &a, &done);
    if (rc != CLI_OK || done)
        return rc;
    convolve_context *ctx = NULL;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return cli_fail(CLI_RESOURCE, "out of memory");
    rc = run(ctx, &a);
    convolve_context_free(ctx);
    return rc;
}
