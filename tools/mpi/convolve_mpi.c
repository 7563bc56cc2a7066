/*
 * convolve_mpi.c - `mpirun -n N convolve-mpi IN.npy OUT.npy [options]`: the
 * convolution of a .npy array distributed over MPI ranks (libconvolve_mpi).
 *
 * Rank 0 reads the input's header (and a --weights file) and broadcasts
 * them; the array is cut into boxes (slabs along axis 0, or --grid); each
 * rank reads its box straight from the file with MPI-IO, the distributed
 * plan exchanges the halos and computes, and each rank writes its box of
 * the output into a temporary file beside OUT (rank 0 writes the header),
 * which rank 0 renames over OUT only when every rank succeeded: a failure
 * loses nothing and leaves no partial file. The output is the file
 * `convolve IN.npy OUT.npy` writes, byte for byte.
 *
 * Options are convolve's core options (same names, values and exit codes),
 * plus --grid. Messages are printed once, by rank 0.
 */
#include "convolve_mpi.h"
#include "npy_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CLI_OK = 0, CLI_BAD_INPUT = 1, CLI_RESOURCE = 2 };

static int g_rank, g_size;

/* Prints "convolve-mpi: <message>" on rank 0; returns code. */
static int say(int code, const char *fmt, ...)
{
    if (g_rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fputs("convolve-mpi: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    return code;
}

/* The exit code for a failed library call, as `convolve` maps it. */
static int exit_code(convolve_status st)
{
    switch (st) {
    case CONVOLVE_OK:
        return CLI_OK;
    case CONVOLVE_ERROR_OUT_OF_MEMORY:
    case CONVOLVE_ERROR_DEVICE:
    case CONVOLVE_ERROR_DEVICE_OUT_OF_MEMORY:
    case CONVOLVE_ERROR_INTERNAL:
    case CONVOLVE_ERROR_IO:
        return CLI_RESOURCE;
    case CONVOLVE_ERROR_BACKEND_UNAVAILABLE:
        return convolve_backend_built(CONVOLVE_BACKEND_CUDA) ? CLI_RESOURCE : CLI_BAD_INPUT;
    default:
        return CLI_BAD_INPUT;
    }
}

/*
 * Collective: every rank brings an exit code and a message; all return the
 * code of the lowest-numbered failing rank, whose message rank 0 prints
 * ("rank R: " before it when R is not 0).
 */
static int agree(int rc, const char *msg)
{
    int mine = rc != CLI_OK ? g_rank : g_size, first = g_size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == g_size)
        return CLI_OK;
    struct {
        int rc;
        char msg[1024];
    } m;
    memset(&m, 0, sizeof m);
    if (g_rank == first) {
        m.rc = rc;
        snprintf(m.msg, sizeof m.msg, "%s", msg ? msg : "");
    }
    MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, MPI_COMM_WORLD);
    m.msg[sizeof m.msg - 1] = '\0';
    if (first == 0)
        say(m.rc, "%s", m.msg);
    else
        say(m.rc, "rank %d: %s", first, m.msg);
    return m.rc;
}

static void usage(void)
{
    if (g_rank != 0)
        return;
    fputs(
        "usage: mpirun -n N convolve-mpi INPUT.npy OUTPUT.npy (--weights FILE | --filter SPEC)\n"
        "                                [options]\n"
        "\n"
        "Convolves (or correlates) a 1-D, 2-D or 3-D .npy array distributed over the MPI\n"
        "ranks: each rank reads its box of INPUT with MPI-IO, exchanges halos with the\n"
        "others, and writes its box of OUTPUT. The result is the file `convolve INPUT\n"
        "OUTPUT` writes with the same options, byte for byte (CPU, strategies other than\n"
        "fft).\n"
        "\n"
        "Filter (exactly one):\n"
        "  --weights FILE    .npy with as many dimensions as the input, or a text file of\n"
        "                    numbers (read by rank 0)\n"
        "  --filter SPEC     box:R  gaussian:SIGMA  sobel-x  sobel-y  laplacian  sharpen\n"
        "                    emboss  identity\n"
        "\n"
        "Options (as convolve's):\n"
        "  --mode M          reflect (default), constant, nearest, mirror, wrap\n"
        "  --cval V          the value outside the input in constant mode (default 0)\n"
        "  --origin O[,O[,O]]  shift of the filter per axis, as scipy; one value for all axes\n"
        "  --correlate       correlate instead of convolve\n"
        "  --backend B       auto (default), cpu, cuda (each rank: GPU local-rank % count)\n"
        "  --strategy NAME   a strategy from `convolve info` (default auto)\n"
        "  --output-dtype T  float32, float64, uint8, uint16 (default: the input's)\n"
        "  --threads N       CPU threads per rank (default 0: all the rank may use)\n"
        "  --time            print `time_ms: <median> (n=<N>)` on standard error: the\n"
        "                    distributed convolution alone (slowest rank; no file I/O)\n"
        "  --repeat N        run the convolution N times for --time (default 1)\n"
        "  --force           allow OUTPUT to be the input or weights file\n"
        "  --grid AxBxC      ranks along each axis (default: slabs, N x 1 x 1); 0 lets MPI\n"
        "                    choose an axis's count; auto: a balanced grid (docs/scale.md)\n"
        "  -h, --help        this text;   --version   the version\n"
        "\n"
        "OUTPUT is written to a temporary file beside it, renamed over OUTPUT when every\n"
        "rank succeeded: a failed run leaves any old OUTPUT untouched.\n"
        "\n"
        "Exit codes: 0 success; 1 bad input or usage; 2 resource, device or I/O failure.\n"
        "\n"
        "Example:\n"
        "  mpirun -n 4 convolve-mpi volume.npy out.npy --filter gaussian:2 --mode wrap\n",
        stdout);
}

typedef struct {
    const char *input, *output, *weights, *filter;
    convolve_options opt;
    int n_origin;
    long origin[CONVOLVE_MAX_DIMS];
    int have_dtype;
    convolve_dtype out_dtype;
    int have_grid;
    int grid[CONVOLVE_MAX_DIMS];
    int time, force;
    long repeat;
} args;

static int parse_long(const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = *s ? strtol(s, &end, 10) : 0;
    if (!*s || *end || errno == ERANGE || x < lo || x > hi)
        return 0;
    *v = x;
    return 1;
}

/* "A", "A,B" or "A,B,C" (sep ','), or "AxBxC" (sep 'x'): the count, or -1. */
static int parse_list(const char *s, char sep, long lo, long hi, long *out)
{
    int n = 0;
    for (;;) {
        char item[64];
        size_t len = strcspn(s, sep == ',' ? "," : "x");
        if (n == CONVOLVE_MAX_DIMS || len == 0 || len >= sizeof item)
            return -1;
        memcpy(item, s, len);
        item[len] = '\0';
        if (!parse_long(item, lo, hi, &out[n++]))
            return -1;
        if (!s[len])
            return n;
        s += len + 1;
    }
}

static const char *const k_valued[] = {"weights", "filter", "mode", "cval", "origin", "backend",
                                       "strategy", "output-dtype", "threads", "repeat", "grid"};
static const char *const k_flags[] = {"correlate", "time", "force", "help", "version"};

static int apply(args *a, const char *name, const char *val, int *done)
{
    long l, list[CONVOLVE_MAX_DIMS];
    char *end;
    if (!strcmp(name, "weights")) {
        a->weights = val;
    } else if (!strcmp(name, "filter")) {
        a->filter = val;
    } else if (!strcmp(name, "mode")) {
        if (convolve_mode_parse(val, &a->opt.mode))
            return say(CLI_BAD_INPUT, "unknown mode '%s': use reflect, constant, nearest, "
                       "mirror or wrap", val);
    } else if (!strcmp(name, "cval")) {
        errno = 0;
        a->opt.cval = strtod(val, &end);
        if (!*val || *end || errno == ERANGE || !isfinite(a->opt.cval))
            return say(CLI_BAD_INPUT, "--cval '%s' is not a finite number", val);
    } else if (!strcmp(name, "origin")) {
        if ((a->n_origin = parse_list(val, ',', -1000000000L, 1000000000L, a->origin)) < 0)
            return say(CLI_BAD_INPUT, "--origin '%s': give 1 to 3 integers separated by "
                       "commas, e.g. --origin=-1,0,1", val);
    } else if (!strcmp(name, "correlate")) {
        a->opt.operation = CONVOLVE_OP_CORRELATE;
    } else if (!strcmp(name, "backend")) {
        if (convolve_backend_parse(val, &a->opt.backend))
            return say(CLI_BAD_INPUT, "unknown backend '%s': use auto, cpu or cuda", val);
    } else if (!strcmp(name, "strategy")) {
        if (!*val)
            return say(CLI_BAD_INPUT, "--strategy needs a name (see convolve info)");
        a->opt.strategy = val;
    } else if (!strcmp(name, "output-dtype")) {
        if (convolve_dtype_parse(val, &a->out_dtype))
            return say(CLI_BAD_INPUT, "unknown output dtype '%s': use float32, float64, uint8 "
                       "or uint16", val);
        a->have_dtype = 1;
    } else if (!strcmp(name, "threads")) {
        if (!parse_long(val, 0, 4096, &l))
            return say(CLI_BAD_INPUT, "--threads '%s': give a count from 0 (all) to 4096", val);
        a->opt.threads = (int)l;
    } else if (!strcmp(name, "repeat")) {
        if (!parse_long(val, 1, 1000000, &a->repeat))
            return say(CLI_BAD_INPUT, "--repeat '%s': give a count from 1 to 1000000", val);
    } else if (!strcmp(name, "grid")) {
        int n = !strcmp(val, "auto") ? 3 : parse_list(val, 'x', 0, 1 << 20, list);
        if (!strcmp(val, "auto"))
            list[0] = list[1] = list[2] = 0;
        if (n < 1)
            return say(CLI_BAD_INPUT, "--grid '%s': give ranks per axis, e.g. 2x2x1 (0: "
                       "chosen), or auto", val);
        for (int k = 0; k < CONVOLVE_MAX_DIMS; k++)
            a->grid[k] = k < n ? (int)list[k] : 1;
        a->have_grid = n;
    } else if (!strcmp(name, "time")) {
        a->time = 1;
    } else if (!strcmp(name, "force")) {
        a->force = 1;
    } else if (!strcmp(name, "help")) {
        usage();
        *done = 1;
    } else if (!strcmp(name, "version")) {
        if (g_rank == 0)
            printf("convolve-mpi %s\n", convolve_version_string());
        *done = 1;
    }
    return CLI_OK;
}

/* GNU-style options, as convolve parses them. Every rank parses alike. */
static int parse(int argc, char **argv, args *a, int *done)
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
                return say(CLI_BAD_INPUT, "unexpected argument '%s': give one INPUT and one "
                           "OUTPUT (see convolve-mpi --help)", arg);
            pos[npos++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_positional = 1;
            continue;
        }
        if (!strcmp(arg, "-h")) {
            usage();
            *done = 1;
            return CLI_OK;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int valued = -1;
        for (size_t k = 0; k < sizeof k_valued / sizeof *k_valued && valued < 0; k++)
            if (strlen(k_valued[k]) == len && !strncmp(k_valued[k], name, len))
                valued = 1;
        for (size_t k = 0; k < sizeof k_flags / sizeof *k_flags && valued < 0; k++)
            if (strlen(k_flags[k]) == len && !strncmp(k_flags[k], name, len))
                valued = 0;
        if (arg[1] != '-' || valued < 0)
            return say(CLI_BAD_INPUT, "unknown option '%.*s' (see convolve-mpi --help)",
                       arg[1] == '-' ? (int)(len + 2) : (int)strlen(arg), arg);
        char key[32];
        snprintf(key, sizeof key, "%.*s", (int)len, name);
        const char *val = NULL;
        if (valued) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return say(CLI_BAD_INPUT, "option '--%s' needs a value", key);
        } else if (eq) {
            return say(CLI_BAD_INPUT, "option '--%s' takes no value", key);
        }
        int rc = apply(a, key, val, done);
        if (rc != CLI_OK || *done)
            return rc;
    }
    if (npos != 2)
        return say(CLI_BAD_INPUT, "%s (see convolve-mpi --help)",
                   npos == 0 ? "no INPUT and OUTPUT given" : "no OUTPUT given");
    a->input = pos[0];
    a->output = pos[1];
    if (!a->weights == !a->filter)
        return say(CLI_BAD_INPUT, "%s", a->weights
                   ? "give either --weights or --filter, not both"
                   : "no filter: give --weights FILE or --filter NAME (e.g. gaussian:2)");
    return CLI_OK;
}

static int same_file(const char *p, const char *q)
{
    if (!strcmp(p, q))
        return 1;
    struct stat x, y;
    return stat(p, &x) == 0 && stat(q, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* What rank 0 learns and every rank needs. */
typedef struct {
    cli_npy h;
    int wndim;
    size_t wshape[CONVOLVE_MAX_DIMS];
    size_t wcount;
} setup;

/* Rank 0: the input's header and the --weights file's values. */
static int read_setup(convolve_context *ctx, const args *a, setup *s, double **w, char *msg,
                      size_t cap)
{
    size_t n = strlen(a->output);
    if (n < 4 || strcmp(a->output + n - 4, ".npy"))
        return snprintf(msg, cap, "OUTPUT '%s' must be a .npy file", a->output), CLI_BAD_INPUT;
    if (!a->force && same_file(a->input, a->output))
        return snprintf(msg, cap, "OUTPUT '%s' is the input file; choose another name, or pass "
                        "--force to replace it", a->output), CLI_BAD_INPUT;
    if (!a->force && a->weights && same_file(a->weights, a->output))
        return snprintf(msg, cap, "OUTPUT '%s' is the weights file; choose another name, or "
                        "pass --force to replace it", a->output), CLI_BAD_INPUT;
    if (cli_npy_read_header(a->input, &s->h, msg, cap))
        return CLI_BAD_INPUT;
    if (!a->weights)
        return CLI_OK;
    /* weights as convolve reads them: .npy with the input's dimensions, or
     * text with as many or fewer (leading axes of 1) */
    convolve_format fmt = convolve_format_from_path(a->weights);
    if (fmt != CONVOLVE_FORMAT_NPY)
        fmt = CONVOLVE_FORMAT_TEXT;
    FILE *fp = fopen(a->weights, "rb");
    if (fp) {
        unsigned char head[6] = {0};
        if (fread(head, 1, sizeof head, fp) == sizeof head && !memcmp(head, "\x93NUMPY", 6))
            fmt = CONVOLVE_FORMAT_NPY;
        fclose(fp);
    }
    convolve_array *arr = NULL, *a64 = NULL;
    convolve_status st = convolve_array_load(ctx, &arr, a->weights, fmt);
    if (st == CONVOLVE_OK)
        st = convolve_array_convert(ctx, arr, CONVOLVE_FLOAT64, &a64);
    convolve_array_free(arr);
    if (st != CONVOLVE_OK)
        return snprintf(msg, cap, "weights: %s", convolve_last_error(ctx)), exit_code(st);
    const convolve_layout *L = convolve_array_layout(a64);
    int nd = s->h.ndim, wd = L->ndim;
    if (wd > nd || (fmt == CONVOLVE_FORMAT_NPY && wd != nd)) {
        convolve_array_free(a64);
        return snprintf(msg, cap, "weights '%s' have %d dimension%s and the input %d; they "
                        "must match", a->weights, wd, wd == 1 ? "" : "s", nd), CLI_BAD_INPUT;
    }
    s->wndim = nd;
    s->wcount = convolve_layout_count(L);
    for (int k = 0; k < nd; k++)
        s->wshape[k] = k < nd - wd ? 1 : L->shape[k - (nd - wd)];
    *w = malloc(s->wcount * sizeof **w);
    if (!*w) {
        convolve_array_free(a64);
        return snprintf(msg, cap, "out of memory"), CLI_RESOURCE;
    }
    memcpy(*w, convolve_array_const_data(a64), s->wcount * sizeof **w);
    convolve_array_free(a64);
    return CLI_OK;
}

static void swap_bytes(unsigned char *p, size_t count, size_t size)
{
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t x = 0, y = size - 1; x < y; x++, y--) {
            unsigned char c = p[x];
            p[x] = p[y];
            p[y] = c;
        }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int mpi_msg(int err, const char *what, char *msg, size_t cap)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, text, &len);
    snprintf(msg, cap, "%s: %s", what, text);
    return CLI_RESOURCE;
}

/* Rank 0: a new temporary file beside path, named into tmp; writes header. */
static int make_temp(const char *path, const char *header, size_t hlen, char *tmp, size_t cap,
                     char *msg, size_t mcap)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%d", dirlen, path, slash ? slash + 1 : path,
                 (long)getpid(), attempt);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            break;
        ssize_t put = write(fd, header, hlen);
        if (close(fd) != 0 || put != (ssize_t)hlen) {
            unlink(tmp);
            break;
        }
        return CLI_OK;
    }
    snprintf(msg, mcap, "cannot create a temporary file beside '%s': %s", path,
             strerror(errno ? errno : EIO));
    tmp[0] = '\0';
    return CLI_RESOURCE;
}

static int run(convolve_context *ctx, const args *a)
{
    char msg[1024] = "";
    setup s;
    memset(&s, 0, sizeof s);
    double *w = NULL;
    int rc = g_rank == 0 ? read_setup(ctx, a, &s, &w, msg, sizeof msg) : CLI_OK;
    if ((rc = agree(rc, msg)) != CLI_OK)
        return free(w), rc;
    MPI_Bcast(&s, (int)sizeof s, MPI_BYTE, 0, MPI_COMM_WORLD);
    const int nd = s.h.ndim;
    const convolve_dtype tin = s.h.dtype, tout = a->have_dtype ? a->out_dtype : tin;

    /* the filter, the options, the boxes */
    convolve_filter *f = NULL;
    convolve_status st;
    if (a->weights) {
        if (g_rank != 0 && !(w = malloc(s.wcount * sizeof *w)))
            rc = CLI_RESOURCE;
        if ((rc = agree(rc, "out of memory for the weights")) != CLI_OK)
            return free(w), rc;
        MPI_Bcast(w, (int)s.wcount, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        st = convolve_filter_create(ctx, &f, nd, s.wshape, w);
        free(w);
    } else {
        st = convolve_filter_create_named(ctx, &f, a->filter, nd);
    }
    if (st != CONVOLVE_OK) /* alike on every rank */
        return say(exit_code(st), "%s%s", a->weights ? "weights: " : "", convolve_last_error(ctx));
    convolve_options o = a->opt;
    rc = CLI_OK;
    if (a->n_origin > 1 && a->n_origin != nd)
        rc = say(CLI_BAD_INPUT, "--origin has %d values and the input %d dimension%s; give one "
                 "value, or one per axis", a->n_origin, nd, nd == 1 ? "" : "s");
    for (int k = 0; k < nd; k++)
        o.origin[k] = a->n_origin == 0 ? 0 : a->origin[a->n_origin == 1 ? 0 : k];
    size_t start[CONVOLVE_MAX_DIMS], box[CONVOLVE_MAX_DIMS];
    int auto_grid = a->have_grid && !a->grid[0] && !a->grid[1] && !a->grid[2];
    if (rc == CLI_OK && a->have_grid > nd && !auto_grid)
        rc = say(CLI_BAD_INPUT, "--grid has %d axes and the input %d", a->have_grid, nd);
    if (rc == CLI_OK &&
        (st = convolve_mpi_decompose(ctx, MPI_COMM_WORLD, nd, s.h.shape,
                                     a->have_grid ? a->grid : NULL, start, box)) != CONVOLVE_OK)
        rc = say(exit_code(st), "%s", convolve_mpi_last_error(ctx));
    if (rc != CLI_OK) {
        convolve_filter_free(f);
        return rc;
    }

    convolve_layout lin, lout;
    convolve_layout_init(&lin, tin, nd, box, 1);
    convolve_layout_init(&lout, tout, nd, box, 1);
    size_t count = convolve_layout_count(&lin);
    unsigned char *in = malloc(count * convolve_dtype_size(tin));
    unsigned char *out = malloc(count * convolve_dtype_size(tout));
    rc = in && out ? CLI_OK : CLI_RESOURCE;
    convolve_mpi_plan *plan = NULL;
    char tmp[PATH_MAX + 64] = "";
    if ((rc = agree(rc, "out of memory for this rank's box")) != CLI_OK)
        goto done;

    /* this rank's box of the input, straight from the file */
    MPI_File fh;
    int err = MPI_File_open(MPI_COMM_WORLD, a->input, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    if (err == MPI_SUCCESS) {
        err = cli_npy_box_io(fh, 0, s.h.offset, tin, nd, s.h.shape, start, box, in);
        MPI_File_close(&fh);
    }
    rc = err == MPI_SUCCESS ? CLI_OK : mpi_msg(err, "reading the input", msg, sizeof msg);
    if ((rc = agree(rc, msg)) != CLI_OK)
        goto done;
    if (s.h.swap)
        swap_bytes(in, count, convolve_dtype_size(tin));

    /* plan and run */
    st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, s.h.shape, start, &lin, &lout, f, &o);
    if (st != CONVOLVE_OK) {
        rc = say(exit_code(st), "%s", convolve_mpi_last_error(ctx));
        goto done;
    }
    double *ms = malloc((size_t)a->repeat * sizeof *ms);
    for (long r = 0; r < a->repeat && st == CONVOLVE_OK; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        st = convolve_mpi_execute(plan, in, out);
        double t = (MPI_Wtime() - t0) * 1e3, worst = 0.0;
        MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (ms)
            ms[r] = worst;
    }
    if (st != CONVOLVE_OK) {
        free(ms);
        rc = say(exit_code(st), "%s", convolve_mpi_last_error(ctx));
        goto done;
    }
    if (a->time && ms && g_rank == 0) {
        size_t n = (size_t)a->repeat;
        qsort(ms, n, sizeof *ms, cmp_double);
        fprintf(stderr, "time_ms: %.3f (n=%ld)\n",
                n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]), a->repeat);
    }
    free(ms);

    /* the output: a temporary file, renamed when every rank wrote its box */
    char header[512];
    size_t hlen = cli_npy_format_header(tout, nd, s.h.shape, header);
    rc = g_rank == 0 ? make_temp(a->output, header, hlen, tmp, sizeof tmp, msg, sizeof msg)
                     : CLI_OK;
    if ((rc = agree(rc, msg)) != CLI_OK)
        goto done;
    MPI_Bcast(tmp, (int)sizeof tmp, MPI_CHAR, 0, MPI_COMM_WORLD);
    err = MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    if (err == MPI_SUCCESS) {
        err = cli_npy_box_io(fh, 1, hlen, tout, nd, s.h.shape, start, box, out);
        if (err == MPI_SUCCESS)
            err = MPI_File_sync(fh);
        int cerr = MPI_File_close(&fh);
        if (err == MPI_SUCCESS)
            err = cerr;
    }
    rc = err == MPI_SUCCESS ? CLI_OK : mpi_msg(err, "writing the output", msg, sizeof msg);
    /* for tests/mpi/test_mpi_cli.py: this rank's write fails (a full disk) */
    const char *fail_rank = getenv("CONVOLVE_MPI_CLI_FAIL_WRITE");
    if (fail_rank && atoi(fail_rank) == g_rank && rc == CLI_OK) {
        snprintf(msg, sizeof msg, "writing the output: failure injected for testing");
        rc = CLI_RESOURCE;
    }
    if ((rc = agree(rc, msg)) != CLI_OK)
        goto done;
    if (g_rank == 0 && rename(tmp, a->output) != 0) {
        snprintf(msg, sizeof msg, "cannot rename the output into '%s': %s", a->output,
                 strerror(errno));
        rc = CLI_RESOURCE;
    } else if (g_rank == 0) {
        tmp[0] = '\0'; /* renamed: nothing to remove */
    }
    rc = agree(rc, msg);
done:
    if (g_rank == 0 && tmp[0])
        unlink(tmp);
    convolve_mpi_plan_free(plan);
    convolve_filter_free(f);
    free(in);
    free(out);
    return rc;
}

int main(int argc, char **argv)
{
    int level; /* SERIALIZED: the plan's progress thread drives the halos */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    args a;
    int done = 0, rc = parse(argc, argv, &a, &done);
    if (rc == CLI_OK && !done) {
        convolve_context *ctx = NULL;
        rc = convolve_context_create(&ctx) == CONVOLVE_OK ? CLI_OK : CLI_RESOURCE;
        if ((rc = agree(rc, "out of memory")) == CLI_OK)
            rc = run(ctx, &a);
        convolve_context_free(ctx);
    }
    MPI_Finalize();
    return rc;
}
