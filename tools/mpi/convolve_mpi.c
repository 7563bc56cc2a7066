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
 * Options are convolve's (its option rows from the tools library, less
 * --quality and --wisdom), plus --grid. Messages are printed once, by rank 0.
 */
#include "convolve_cli.h"
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

static int g_rank, g_size;

/* Prints "convolve-mpi: <message>" on rank 0; returns code. */
static int say(int code, const char *fmt, ...) CLI_PRINTF(2, 3);
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

/* The exit code for a failed library call: convolve's mapping, and an MPI
 * failure (IO from libconvolve_mpi) is a resource failure. */
static int exit_code(convolve_status st)
{
    return st == CONVOLVE_ERROR_IO ? CLI_RESOURCE : cli_exit_code(st);
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

/* ---- the command: convolve's option rows, and --grid ------------------------- */

/* convolve's arguments first (its option rows apply to them), then ours. */
typedef struct {
    cli_run_args run;
    int have_grid;
    int grid[CONVOLVE_MAX_DIMS];
} args;

static int set_grid(void *t, const char *v)
{
    args *a = t;
    if (!strcmp(v, "auto")) {
        a->grid[0] = a->grid[1] = a->grid[2] = 0;
        a->have_grid = -1;
        return CLI_OK;
    }
    int n = 0;
    for (const char *p = v;; n++) {
        char item[32];
        size_t len = strcspn(p, "x");
        long l;
        if (n == CONVOLVE_MAX_DIMS || len == 0 || len >= sizeof item)
            return CLI_BAD_VALUE;
        memcpy(item, p, len);
        item[len] = '\0';
        if (!cli_parse_long(item, 0, 1 << 20, &l))
            return CLI_BAD_VALUE;
        a->grid[n] = (int)l;
        if (!p[len])
            break;
        p += len + 1;
    }
    for (int k = n + 1; k < CONVOLVE_MAX_DIMS; k++)
        a->grid[k] = 1;
    a->have_grid = n + 1;
    return CLI_OK;
}

static const cli_command *k_self; /* the command, for --help */

static int show_help(void *t, const char *v)
{
    (void)t;
    (void)v;
    cli_print_help(k_self, stdout);
    return CLI_DONE;
}

static int show_version(void *t, const char *v)
{
    (void)t;
    (void)v;
    printf("convolve-mpi %s\n", convolve_version_string());
    return CLI_DONE;
}

static const cli_option k_mpi_options[] = {
    {"grid", 0, "AxBxC",
     "ranks along each axis (default: slabs, N x 1 x 1); 0 lets MPI choose an axis's count; "
     "auto: a balanced grid, best on many nodes (docs/scale.md)",
     NULL, set_grid, CLI_COMPLETE_NONE, NULL, 0},
    {"help", 'h', NULL, "this text", NULL, show_help, CLI_COMPLETE_NONE, NULL, 0},
    {"version", 0, NULL, "the version", NULL, show_version, CLI_COMPLETE_NONE, NULL, 0},
};

/* convolve's rows that convolve-mpi has no use for (image quality, a wisdom
 * file) or answers itself (help, version). */
static int skipped(const char *name)
{
    static const char *const names[] = {"quality", "wisdom", "help", "version"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (!strcmp(name, names[k]))
            return 1;
    return 0;
}

static const cli_text k_after[] = {
    {"Files", NULL,
     "INPUT and OUTPUT are .npy files (float32, float64, uint8, uint16; C order; 1 to 3 "
     "dimensions). Each rank reads its box of INPUT and writes its box of OUTPUT with MPI-IO; "
     "OUTPUT is written to a temporary file beside it, renamed over OUTPUT by rank 0 when "
     "every rank succeeded: a failed run leaves any old OUTPUT untouched.",
     0},
    {"Exit codes", NULL, "0 success; 1 bad input or usage; 2 resource, device, MPI or I/O failure.",
     0},
    {"Example", NULL,
     "  mpirun -n 4 convolve-mpi volume.npy out.npy --filter gaussian:2 --mode wrap", 1},
};

/* Builds the command (its option groups are made at run time from
 * convolve's) and parses argv; messages only on rank 0. */
static int parse(int argc, char **argv, args *a)
{
    static cli_option rows[64];
    static cli_option_group groups[2];
    static cli_command cmd;
    size_t n = 0;
    /* convolve's general options (not its "Many files" group: one file here) */
    const cli_option_group *other = &cli_run_groups[0];
    for (size_t g = 0; g < cli_run_group_count; g++)
        if (!strcmp(cli_run_groups[g].title, "Options"))
            other = &cli_run_groups[g];
    for (size_t k = 0; k < other->count && n < 60; k++)
        if (!skipped(other->options[k].name))
            rows[n++] = other->options[k];
    for (size_t k = 0; k < sizeof k_mpi_options / sizeof *k_mpi_options; k++)
        rows[n++] = k_mpi_options[k];
    groups[0] = cli_run_groups[0];
    groups[1] = *other;
    groups[1].options = rows;
    groups[1].count = n;
    cmd = cli_run_command;
    cmd.program = "convolve-mpi";
    cmd.help_hint = "convolve-mpi --help";
    cmd.synopsis = "mpirun -n N convolve-mpi INPUT.npy OUTPUT.npy (--weights FILE | --filter "
                   "NAME[:ARGS]) [options]";
    cmd.summary = "convolve a .npy array distributed over MPI ranks";
    cmd.description = "Convolves (or correlates) a 1-D, 2-D or 3-D .npy array distributed over "
                      "the MPI ranks: each rank reads its box of INPUT, exchanges halos with the "
                      "others and writes its box of OUTPUT. The result is the file `convolve "
                      "INPUT OUTPUT` writes with the same options, byte for byte (on the CPU, "
                      "wherever convolve's `fast` does not pick its FFT; name --strategy direct "
                      "to be sure).";
    cmd.before = NULL;
    cmd.nbefore = 0;
    cmd.groups = groups;
    cmd.ngroups = 2;
    cmd.after = k_after;
    cmd.nafter = sizeof k_after / sizeof *k_after;
    k_self = &cmd;

    memset(a, 0, sizeof *a);
    cli_run_args_init(&a->run);
    /* the option rows print their own messages: on rank 0 only */
    int out = -1, err = -1;
    if (g_rank != 0) {
        fflush(stdout);
        fflush(stderr);
        int null = open("/dev/null", O_WRONLY);
        out = dup(1);
        err = dup(2);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
            close(null);
        }
    }
    int rc = cli_parse(&cmd, argc, argv, a);
    if (g_rank != 0) {
        fflush(stdout);
        fflush(stderr);
        if (out >= 0)
            dup2(out, 1), close(out);
        if (err >= 0)
            dup2(err, 2), close(err);
    }
    if (rc != CLI_OK)
        return rc;
    if (a->run.npos > 2)
        return say(CLI_BAD_INPUT,
                   "unexpected argument '%s': give one INPUT and one OUTPUT (see "
                   "convolve-mpi --help)",
                   a->run.pos[2]);
    if (a->run.npos != 2)
        return say(CLI_BAD_INPUT, "%s (see convolve-mpi --help)",
                   a->run.npos == 0 ? "no INPUT and OUTPUT given" : "no OUTPUT given");
    a->run.input = a->run.pos[0];
    a->run.output = a->run.pos[1];
    if (!a->run.weights == !a->run.filter)
        return say(CLI_BAD_INPUT, "%s",
                   a->run.weights
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
    size_t n = strlen(a->run.output);
    if (n < 4 || strcmp(a->run.output + n - 4, ".npy"))
        return snprintf(msg, cap, "OUTPUT '%s' must be a .npy file", a->run.output), CLI_BAD_INPUT;
    if (!a->run.force && same_file(a->run.input, a->run.output))
        return snprintf(msg, cap,
                        "OUTPUT '%s' is the input file; choose another name, or pass "
                        "--force to replace it",
                        a->run.output),
               CLI_BAD_INPUT;
    if (!a->run.force && a->run.weights && same_file(a->run.weights, a->run.output))
        return snprintf(msg, cap,
                        "OUTPUT '%s' is the weights file; choose another name, or "
                        "pass --force to replace it",
                        a->run.output),
               CLI_BAD_INPUT;
    if (cli_npy_read_header(ctx, a->run.input, &s->h, msg, cap))
        return CLI_BAD_INPUT;
    if (!a->run.weights)
        return CLI_OK;
    /* weights as convolve reads them: .npy with the input's dimensions, or
     * text with as many or fewer (leading axes of 1) */
    convolve_format fmt = convolve_format_from_path(a->run.weights);
    if (fmt != CONVOLVE_FORMAT_NPY)
        fmt = CONVOLVE_FORMAT_TEXT;
    FILE *fp = fopen(a->run.weights, "rb");
    if (fp) {
        unsigned char head[6] = {0};
        if (fread(head, 1, sizeof head, fp) == sizeof head && !memcmp(head, "\x93NUMPY", 6))
            fmt = CONVOLVE_FORMAT_NPY;
        fclose(fp);
    }
    convolve_array *arr = NULL, *a64 = NULL;
    convolve_status st = convolve_array_load(ctx, &arr, a->run.weights, fmt);
    if (st == CONVOLVE_OK)
        st = convolve_array_convert(ctx, arr, CONVOLVE_FLOAT64, &a64);
    convolve_array_free(arr);
    if (st != CONVOLVE_OK)
        return snprintf(msg, cap, "weights: %s", convolve_last_error(ctx)), exit_code(st);
    const convolve_layout *L = convolve_array_layout(a64);
    int nd = s->h.ndim, wd = L->ndim;
    if (wd > nd || (fmt == CONVOLVE_FORMAT_NPY && wd != nd)) {
        convolve_array_free(a64);
        return snprintf(msg, cap,
                        "weights '%s' have %d dimension%s and the input %d; they "
                        "must match",
                        a->run.weights, wd, wd == 1 ? "" : "s", nd),
               CLI_BAD_INPUT;
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

/* Rank 0: a new temporary file beside path, named into tmp (MPI-IO opens it
 * by name on every rank, so it cannot be an unnamed O_TMPFILE one), with the
 * owner and mode of the file it replaces; writes header. */
static int make_temp(const char *path, const char *header, size_t hlen, char *tmp, size_t cap,
                     char *msg, size_t mcap)
{
    int fd = convolve_temp_file_open(path, 1, tmp, cap);
    if (fd >= 0) {
        int ok = write(fd, header, hlen) == (ssize_t)hlen;
        ok = close(fd) == 0 && ok;
        if (ok)
            return CLI_OK;
        unlink(tmp);
    }
    snprintf(msg, mcap, "cannot create a temporary file beside '%s': %s", path,
             strerror(errno ? errno : EIO));
    tmp[0] = '\0';
    return CLI_RESOURCE;
}

/* Collective: the filter, from the weights rank 0 read (w: rank 0's values,
 * NULL elsewhere; freed here) or by name; the same on every rank. */
static int make_filter(convolve_context *ctx, const args *a, const setup *s, double *w,
                       convolve_filter **f)
{
    const int nd = s->h.ndim;
    convolve_status st;
    int rc = CLI_OK;
    if (a->run.weights) {
        if (g_rank != 0 && !(w = malloc(s->wcount * sizeof *w)))
            rc = CLI_RESOURCE;
        if ((rc = agree(rc, "out of memory for the weights")) != CLI_OK)
            return free(w), rc;
        MPI_Bcast(w, (int)s->wcount, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        st = convolve_filter_create(ctx, f, nd, s->wshape, w);
        free(w);
    } else {
        st = convolve_filter_create_named(ctx, f, a->run.filter, nd);
    }
    if (st != CONVOLVE_OK) /* alike on every rank */
        return say(exit_code(st), "%s%s", a->run.weights ? "weights: " : "",
                   convolve_last_error(ctx));
    return CLI_OK;
}

/* Collective: the options with the origin per axis, and this rank's box
 * (its first index and shape) of the array. */
static int decompose(convolve_context *ctx, const args *a, const setup *s, convolve_options *o,
                     size_t *start, size_t *box)
{
    const int nd = s->h.ndim;
    convolve_status st;
    int rc = CLI_OK;
    *o = a->run.opt;
    if (a->run.n_origin > 1 && a->run.n_origin != nd)
        rc = say(CLI_BAD_INPUT,
                 "--origin has %d values and the input %d dimension%s; give one "
                 "value, or one per axis",
                 a->run.n_origin, nd, nd == 1 ? "" : "s");
    for (int k = 0; k < nd; k++)
        o->origin[k] = a->run.n_origin == 0 ? 0 : a->run.origin[a->run.n_origin == 1 ? 0 : k];
    int auto_grid = a->have_grid && !a->grid[0] && !a->grid[1] && !a->grid[2];
    if (rc == CLI_OK && a->have_grid > nd && !auto_grid)
        rc = say(CLI_BAD_INPUT, "--grid has %d axes and the input %d", a->have_grid, nd);
    if (rc == CLI_OK &&
        (st = convolve_mpi_decompose(ctx, MPI_COMM_WORLD, nd, s->h.shape,
                                     a->have_grid ? a->grid : NULL, start, box)) != CONVOLVE_OK)
        rc = say(exit_code(st), "%s", convolve_mpi_last_error(ctx));
    return rc;
}

/* Collective: this rank's box of the input (count elements), straight from
 * the file, in native byte order. */
static int read_box(const args *a, const setup *s, const size_t *start, const size_t *box,
                    unsigned char *in, size_t count, char *msg, size_t cap)
{
    const convolve_dtype tin = s->h.dtype;
    MPI_File fh;
    int err = MPI_File_open(MPI_COMM_WORLD, a->run.input, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    if (err == MPI_SUCCESS) {
        err = cli_npy_box_io(fh, 0, s->h.offset, tin, s->h.ndim, s->h.shape, start, box, in);
        MPI_File_close(&fh);
    }
    int rc = err == MPI_SUCCESS ? CLI_OK : mpi_msg(err, "reading the input", msg, cap);
    if ((rc = agree(rc, msg)) != CLI_OK)
        return rc;
    if (s->h.swap)
        swap_bytes(in, count, convolve_dtype_size(tin));
    return CLI_OK;
}

/* Collective: --repeat runs of the plan; with --time, rank 0 prints the
 * median of the slowest rank's times. */
static int execute_timed(convolve_context *ctx, const args *a, convolve_mpi_plan *plan,
                         const unsigned char *in, unsigned char *out)
{
    convolve_status st = CONVOLVE_OK;
    double *ms = malloc((size_t)a->run.repeat * sizeof *ms);
    for (long r = 0; r < a->run.repeat && st == CONVOLVE_OK; r++) {
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
        return say(exit_code(st), "%s", convolve_mpi_last_error(ctx));
    }
    if (a->run.time && ms && g_rank == 0) {
        size_t n = (size_t)a->run.repeat;
        qsort(ms, n, sizeof *ms, cmp_double);
        fprintf(stderr, "time_ms: %.3f (n=%ld)\n",
                n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]), a->run.repeat);
    }
    free(ms);
    return CLI_OK;
}

/* Collective: the output, written into a temporary file (its name in tmp,
 * tcap bytes, on every rank) and renamed over OUTPUT by rank 0 when every
 * rank wrote its box; tmp is emptied once renamed. */
static int write_output(const args *a, const setup *s, convolve_dtype tout, const size_t *start,
                        const size_t *box, unsigned char *out, char *tmp, size_t tcap, char *msg,
                        size_t cap)
{
    const int nd = s->h.ndim;
    char header[512];
    size_t hlen = cli_npy_format_header(tout, nd, s->h.shape, header);
    int rc = g_rank == 0 ? make_temp(a->run.output, header, hlen, tmp, tcap, msg, cap) : CLI_OK;
    if ((rc = agree(rc, msg)) != CLI_OK)
        return rc;
    MPI_Bcast(tmp, (int)tcap, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_File fh;
    int err = MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    if (err == MPI_SUCCESS) {
        err = cli_npy_box_io(fh, 1, hlen, tout, nd, s->h.shape, start, box, out);
        if (err == MPI_SUCCESS)
            err = MPI_File_sync(fh);
        int cerr = MPI_File_close(&fh);
        if (err == MPI_SUCCESS)
            err = cerr;
    }
    rc = err == MPI_SUCCESS ? CLI_OK : mpi_msg(err, "writing the output", msg, cap);
    /* for tests/mpi/test_mpi_cli.py: this rank's write fails (a full disk) */
    const char *fail_rank = getenv("CONVOLVE_MPI_CLI_FAIL_WRITE");
    if (fail_rank && atoi(fail_rank) == g_rank && rc == CLI_OK) {
        snprintf(msg, cap, "writing the output: failure injected for testing");
        rc = CLI_RESOURCE;
    }
    if ((rc = agree(rc, msg)) != CLI_OK)
        return rc;
    if (g_rank == 0 && rename(tmp, a->run.output) != 0) {
        snprintf(msg, cap, "cannot rename the output into '%s': %s", a->run.output,
                 strerror(errno));
        rc = CLI_RESOURCE;
    } else if (g_rank == 0) {
        tmp[0] = '\0'; /* renamed: nothing to remove */
    }
    return agree(rc, msg);
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
    const convolve_dtype tin = s.h.dtype, tout = a->run.have_dtype ? a->run.out_dtype : tin;

    /* the filter, the options, the boxes */
    convolve_filter *f = NULL;
    if ((rc = make_filter(ctx, a, &s, w, &f)) != CLI_OK)
        return rc;
    convolve_options o;
    size_t start[CONVOLVE_MAX_DIMS], box[CONVOLVE_MAX_DIMS];
    if ((rc = decompose(ctx, a, &s, &o, start, box)) != CLI_OK) {
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
    convolve_status st;
    char tmp[PATH_MAX + 64] = "";
    if ((rc = agree(rc, "out of memory for this rank's box")) != CLI_OK)
        goto done;
    if ((rc = read_box(a, &s, start, box, in, count, msg, sizeof msg)) != CLI_OK)
        goto done;

    /* plan and run */
    st = convolve_mpi_plan_create(ctx, &plan, MPI_COMM_WORLD, s.h.shape, start, &lin, &lout, f, &o);
    if (st != CONVOLVE_OK) {
        rc = say(exit_code(st), "%s", convolve_mpi_last_error(ctx));
        goto done;
    }
    if ((rc = execute_timed(ctx, a, plan, in, out)) != CLI_OK)
        goto done;
    rc = write_output(a, &s, tout, start, box, out, tmp, sizeof tmp, msg, sizeof msg);
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
    int rc = parse(argc, argv, &a);
    if (rc == CLI_DONE) {
        rc = CLI_OK;
    } else if (rc == CLI_OK) {
        convolve_context *ctx = NULL;
        rc = convolve_context_create(&ctx) == CONVOLVE_OK ? CLI_OK : CLI_RESOURCE;
        if ((rc = agree(rc, "out of memory")) == CLI_OK)
            rc = run(ctx, &a);
        convolve_context_free(ctx);
    }
    cli_run_args_free(&a.run);
    MPI_Finalize();
    return rc;
}
