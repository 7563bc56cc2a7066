/*
 * cli_run.c - `convolve INPUT OUTPUT [options]`: parses the options (the
 * table in cli_spec.c), tells the single-file form from the batch form
 * (--output-dir: cli_batch.c), loads the input and the filter, checks that
 * the output format can hold the result before any work, plans, runs (timing
 * convolve_execute alone for --time) and saves the result atomically. The
 * steps both forms share are cli_steps.c.
 */
#include "convolve_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    return a->suffix        ? "--suffix"
           : a->format      ? "--format"
           : a->inputs_from ? "--inputs-from"
           : a->have_jobs   ? "--jobs"
                            : NULL;
}

/* Checks the options' combination once all are parsed. */
static int check_args(cli_run_args *a)
{
    if (a->output_dir) {
        if (!a->weights == !a->filter)
            return cli_fail(
                CLI_BAD_INPUT, "%s",
                a->weights ? "give either --weights or --filter, not both"
                           : "no filter: give --weights FILE or --filter NAME (e.g. gaussian:2)");
        if (a->time || a->have_repeat || a->phases)
            return cli_fail(CLI_BAD_INPUT,
                            "%s times one file's convolution and cannot be used "
                            "with --output-dir (the summary gives the batch's time)",
                            a->time     ? "--time"
                            : a->phases ? "--phases"
                                        : "--repeat (or --warmup)");
        return CLI_OK;
    }
    const char *batch_only = batch_option_without_dir(a);
    if (batch_only)
        return cli_fail(CLI_BAD_INPUT,
                        "%s applies to many files: give --output-dir DIR too (see "
                        "convolve --help)",
                        batch_only);
    if (a->npos > 2)
        return cli_fail(CLI_BAD_INPUT,
                        "unexpected argument '%s': the single-file form takes one "
                        "INPUT and one OUTPUT; to convolve many files, give --output-dir DIR "
                        "(convolve INPUT... --output-dir DIR ...)",
                        a->pos[2]);
    if (a->npos != 2)
        return cli_fail(CLI_BAD_INPUT, "%s (see convolve --help)",
                        a->npos == 0 ? "no INPUT and OUTPUT given" : "no OUTPUT given");
    a->input = a->pos[0];
    a->output = a->pos[1];
    if (!a->weights == !a->filter)
        return cli_fail(CLI_BAD_INPUT, "%s",
                        a->weights
                            ? "give either --weights or --filter, not both"
                            : "no filter: give --weights FILE or --filter NAME (e.g. gaussian:2)");
    if (!*a->input || !*a->output)
        return cli_fail(CLI_BAD_INPUT, "empty file name");
    if (a->have_repeat && !a->time)
        return cli_fail(CLI_BAD_INPUT, "--repeat and --warmup run the convolution again for "
                                       "--time's median: give --time too");
    if (names_folder(a->output))
        return cli_fail(CLI_BAD_INPUT,
                        "OUTPUT '%s' is a folder: name the output file, or write "
                        "the result into the folder with --output-dir %s (convolve INPUT... "
                        "--output-dir DIR ...)",
                        a->output, a->output);
    return CLI_OK;
}

/* 1 if the two paths name the same existing file (or are the same string). */
static int same_file(const char *p, const char *q)
{
    if (!strcmp(p, q))
        return 1;
    struct stat a, b;
    return stat(p, &a) == 0 && stat(q, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Plans and runs on in (layout Lin) into out (layout Lout); CLI_OK, an exit
 * code, or CLI_INTERRUPTED after the progress callback cancelled. */
/* --phases: when each step of run() ended (cli_now_s). */
typedef struct {
    double start, opened, planned, filtered, saved;
} phase_clock;

static int compute(convolve_context *ctx, const cli_run_args *a, const convolve_options *o,
                   const convolve_filter *f, const convolve_layout *Lin, const void *in,
                   const convolve_layout *Lout, void *out, cli_populate *pop, phase_clock *clock)
{
    convolve_plan *plan = NULL;
    convolve_status st;
    if (a->wisdom && access(a->wisdom, F_OK) == 0 &&
        (st = convolve_wisdom_load(ctx, a->wisdom)) != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(ctx));
    const size_t known = convolve_wisdom_count(ctx);
    st = convolve_plan_create(ctx, &plan, Lin, Lout, f, o);
    cli_populate_end(pop, st == CONVOLVE_OK); /* the output's pages, faulted in meanwhile */
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    if (a->wisdom && convolve_wisdom_count(ctx) != known &&
        (st = convolve_wisdom_save(ctx, a->wisdom)) != CONVOLVE_OK) {
        convolve_plan_free(plan);
        return cli_fail(cli_exit_code(st), "--wisdom: %s", convolve_last_error(ctx));
    }

    clock->planned = cli_now_s();
    double *ms = malloc((size_t)a->repeat * sizeof *ms);
    if (!ms) {
        convolve_plan_free(plan);
        return cli_fail(CLI_RESOURCE, "out of memory");
    }
    for (long r = 0; r < a->warmup && st == CONVOLVE_OK; r++)
        st = convolve_execute(plan, in, out);
    for (long r = 0; r < a->repeat && st == CONVOLVE_OK; r++) {
        double t0 = cli_now_s();
        st = convolve_execute(plan, in, out);
        ms[r] = (cli_now_s() - t0) * 1e3;
    }
    clock->filtered = cli_now_s();
    if (o->progress)
        cli_progress_finish(o->progress_user);
    int rc = CLI_OK;
    if (st == CONVOLVE_ERROR_CANCELLED) {
        rc = CLI_INTERRUPTED;
    } else if (st != CONVOLVE_OK) {
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

/* CUDA started on a thread of its own (a context of its own, the device
 * probed: the driver and the device's context start), so that a run asked
 * for on the GPU pays the start-up while it reads and decodes its input. */
static void *start_cuda(void *unused)
{
    (void)unused;
    convolve_context *c = NULL;
    if (convolve_context_create(&c) == CONVOLVE_OK) {
        convolve_device_info info;
        (void)convolve_device_query(c, &info); /* its errors are the plan's to report */
        convolve_context_free(c);
    }
    return NULL;
}

/* 1 if the file at path is a regular file that opens with the .npy magic. */
static int is_npy_file(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return 0;
    unsigned char head[CONVOLVE_FORMAT_DETECT_BYTES];
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    size_t got = fread(head, 1, sizeof head, fp);
    fclose(fp);
    return convolve_format_detect(head, got) == CONVOLVE_FORMAT_NPY;
}

/* The files of one run: the input loaded or mapped, the output made in
 * memory or mapped. */
typedef struct run_files {
    convolve_array *in, *out;
    cli_mapped_in min;
    cli_mapped_out mout;
} run_files;

/* Opens the input: mapped when asked and possible (see --mmap), else loaded. */
static int open_input(convolve_context *ctx, const cli_run_args *a, int map, run_files *rf,
                      const convolve_layout **L, const void **data)
{
    char msg[CLI_MSG_SIZE], why[CLI_MSG_SIZE];
    if (map) {
        int rc = cli_map_input(ctx, a->input, &rf->min, why, msg);
        if (rc != CLI_OK)
            return cli_fail(rc, "%s", msg);
        if (!rf->min.map && a->mmap == CLI_MMAP_ON)
            return cli_fail(CLI_BAD_INPUT,
                            "--mmap on: %s; convert it first (numpy: "
                            "np.save(name, np.ascontiguousarray(a, a.dtype.newbyteorder('=')))) "
                            "or use --mmap auto",
                            why);
        if (rf->min.map) {
            *L = &rf->min.layout;
            *data = rf->min.data;
            return CLI_OK;
        }
    }
    convolve_status st = convolve_array_load(ctx, &rf->in, a->input, CONVOLVE_FORMAT_AUTO);
    if (st != CONVOLVE_OK)
        return cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
    *L = convolve_array_layout(rf->in);
    *data = convolve_array_const_data(rf->in);
    return CLI_OK;
}

/* As cp, a symbolic link OUTPUT to nothing (or a loop) is not written
 * through: refused before any work. */
static int check_link(const char *output)
{
    struct stat sb;
    if (lstat(output, &sb) != 0 || !S_ISLNK(sb.st_mode) || stat(output, &sb) == 0 ||
        (errno != ENOENT && errno != ELOOP))
        return CLI_OK;
    int e = errno;
    char to[1024];
    ssize_t n = readlink(output, to, sizeof to - 1);
    to[n > 0 ? n : 0] = '\0';
    if (e == ENOENT)
        return cli_fail(CLI_BAD_INPUT,
                        "OUTPUT '%s' is a symbolic link to '%s', which does not "
                        "exist; as cp, convolve does not write through a dangling link: create "
                        "the file it names, or remove the link",
                        output, to);
    return cli_fail(CLI_BAD_INPUT,
                    "OUTPUT '%s' is a symbolic link to '%s', which cannot be "
                    "followed: %s",
                    output, to, strerror(e));
}

static int run(convolve_context *ctx, cli_run_args *a)
{
    convolve_format ofmt = convolve_format_from_path(a->output);
    if (ofmt == CONVOLVE_FORMAT_AUTO)
        return cli_fail(
            CLI_BAD_INPUT,
            "cannot tell the output format of '%s' from its "
            "extension: use .npy, .png, .jpg, .jpeg, .pgm, .ppm, .pnm, .tif, .tiff or .txt",
            a->output);
    if (!a->force && same_file(a->input, a->output))
        return cli_fail(CLI_BAD_INPUT,
                        "OUTPUT '%s' is the input file; choose another name, or "
                        "pass --force to replace it",
                        a->output);
    if (!a->force && a->weights && same_file(a->weights, a->output))
        return cli_fail(CLI_BAD_INPUT,
                        "OUTPUT '%s' is the weights file; choose another name, "
                        "or pass --force to replace it",
                        a->output);
    int rc = check_link(a->output);
    if (rc != CLI_OK)
        return rc;
    /* --mmap: the output is mapped when it is .npy, the input when it is a
     * .npy file too (and stored as it is used) */
    const int input_npy = is_npy_file(a->input);
    if (a->mmap == CLI_MMAP_ON && (ofmt != CONVOLVE_FORMAT_NPY || !input_npy))
        return cli_fail(CLI_BAD_INPUT,
                        "--mmap on maps .npy files: %s '%s' is not one (use "
                        "--mmap auto)",
                        ofmt != CONVOLVE_FORMAT_NPY ? "OUTPUT" : "INPUT",
                        ofmt != CONVOLVE_FORMAT_NPY ? a->output : a->input);
    const int map = ofmt == CONVOLVE_FORMAT_NPY &&
                    (a->mmap == CLI_MMAP_ON || (a->mmap == CLI_MMAP_AUTO && !a->time));

    phase_clock clock = {cli_now_s(), 0, 0, 0, 0};
    pthread_t cuda_thread;
    int cuda_starting = a->opt.backend == CONVOLVE_BACKEND_CUDA &&
                        cli_thread_start(&cuda_thread, start_cuda, NULL) == 0;
    char msg[CLI_MSG_SIZE];
    run_files rf = {0};
    cli_mapped_in_init(&rf.min);
    cli_mapped_out_init(&rf.mout);
    convolve_filter *f = NULL;
    cli_weights w = {0};
    convolve_options o;
    const convolve_layout *L = NULL;
    const void *in_data = NULL;
    convolve_layout Lout;
    rc = open_input(ctx, a, map && input_npy, &rf, &L, &in_data);
    if (rc != CLI_OK)
        goto done;
    rc = a->weights ? cli_weights_read(ctx, a->weights, &w, msg) : CLI_OK;
    if (rc == CLI_OK)
        rc = cli_filter_for(ctx, a, a->weights ? &w : NULL, L->ndim, &f, &o, msg);
    convolve_dtype odt = cli_output_dtype(a, ofmt, L->dtype);
    if (rc == CLI_OK)
        rc = cli_check_output(ctx, a->output, ofmt, L, odt, msg);
    if (rc == CLI_OK && map)
        rc = convolve_layout_init(&Lout, odt, L->ndim, L->shape, L->channels) == CONVOLVE_OK
                 ? cli_map_output(ctx, a->output, &Lout, &rf.mout, msg)
                 : cli_msg(msg, CLI_BAD_INPUT, "%s", "cannot describe the output");
    if (rc != CLI_OK) {
        cli_fail(rc, "%s", msg);
        goto done;
    }
    convolve_status st;
    if (!map) {
        if ((st = convolve_array_create(ctx, &rf.out, odt, L->ndim, L->shape, L->channels)) !=
            CONVOLVE_OK) {
            rc = cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx));
            goto done;
        }
        Lout = *convolve_array_layout(rf.out);
    }
    /* mapped files on the GPU: a run that would copy more than the cap at
     * once (and so hold all its pages resident) streams instead */
    const char *env_budget = getenv("CONVOLVE_DEVICE_BUDGET");
    if (map && o.device_memory_budget == 0 && !(env_budget && *env_budget))
        o.device_memory_budget = CLI_MAPPED_DEVICE_BUDGET;
    cli_progress prog;
    cli_progress_init(&prog, a->quiet, a->progress, &rf.min, &rf.mout);
    o.progress = cli_progress_callback;
    o.progress_user = &prog;
    cli_defer_signals(1);
    clock.opened = cli_now_s();
    /* on the GPU, the output's pages are faulted in while CUDA starts */
    cli_populate pop = {0};
    if (map && o.backend == CONVOLVE_BACKEND_CUDA)
        cli_populate_start(&pop, &rf.mout);
    if (cuda_starting) {
        pthread_join(cuda_thread, NULL);
        cuda_starting = 0;
    }
    rc = compute(ctx, a, &o, f, L, in_data, &Lout, map ? rf.mout.data : convolve_array_data(rf.out),
                 &pop, &clock);
    cli_populate_end(&pop, 0);
    int frc; /* a page of a mapped file failed (the run was cancelled then) */
    if ((rc == CLI_OK || rc == CLI_INTERRUPTED) &&
        (frc = cli_mapped_check(&rf.min, &rf.mout, msg)) != CLI_OK)
        rc = cli_fail(frc, "%s", msg);
    if (rc == CLI_OK && cli_interrupted())
        rc = CLI_INTERRUPTED;
    if (rc == CLI_OK && map) {
        /* the input's pages are no longer needed while the output is synced */
        cli_unmap_input(&rf.min);
        if ((rc = cli_map_output_commit(&rf.mout, msg)) != CLI_OK && rc != CLI_INTERRUPTED)
            cli_fail(rc, "%s", msg);
    } else if (rc == CLI_OK) {
        st = convolve_array_save(ctx, rf.out, a->output, ofmt, a->quality);
        if (st != CONVOLVE_OK)
            rc = cli_fail(st == CONVOLVE_ERROR_IO ? CLI_RESOURCE : cli_exit_code(st), "%s",
                          convolve_last_error(ctx));
    }
    if (rc == CLI_OK && a->phases) {
        clock.saved = cli_now_s();
        fprintf(stderr, "phases_ms: open %.1f plan %.1f filter %.1f save %.1f total %.1f\n",
                (clock.opened - clock.start) * 1e3, (clock.planned - clock.opened) * 1e3,
                (clock.filtered - clock.planned) * 1e3, (clock.saved - clock.filtered) * 1e3,
                (clock.saved - clock.start) * 1e3);
    }
done:
    if (cuda_starting)
        pthread_join(cuda_thread, NULL);
    cli_map_output_discard(&rf.mout);
    cli_defer_signals(0);
    if (rc == CLI_INTERRUPTED)
        cli_fail(rc, "interrupted: '%s' not written%s", a->output,
                 access(a->output, F_OK) == 0 ? " (the old file is as it was)" : "");
    cli_weights_free(&w);
    convolve_filter_free(f);
    convolve_array_free(rf.out);
    convolve_array_free(rf.in);
    cli_unmap_input(&rf.min);
    return rc;
}

/* --devices N or LIST as device numbers in the options, checked against the
 * devices of the host (ignored with --backend cpu). */
static int resolve_devices(cli_run_args *a)
{
    if (a->opt.backend == CONVOLVE_BACKEND_CPU ||
        (!a->devices_all && !a->devices_first && !a->device_list_count))
        return CLI_OK;
    if (a->devices_all) {
        a->opt.devices = NULL;
        a->opt.device_count = -1;
        return CLI_OK;
    }
    int need = a->devices_first, count = 0;
    for (int k = 0; k < a->device_list_count; k++)
        if (a->device_list[k] + 1 > need)
            need = a->device_list[k] + 1;
    convolve_context *ctx = NULL;
    if (convolve_context_create(&ctx) != CONVOLVE_OK)
        return cli_fail(CLI_RESOURCE, "out of memory");
    convolve_status st = convolve_device_count(ctx, &count);
    int rc = st != CONVOLVE_OK ? cli_fail(cli_exit_code(st), "%s", convolve_last_error(ctx))
                               : CLI_OK;
    convolve_context_free(ctx);
    if (rc != CLI_OK)
        return rc;
    if (need > count) {
        if (a->devices_first)
            return cli_fail(CLI_BAD_INPUT,
                            "--devices %d: this host has %d CUDA device%s (see "
                            "convolve info)",
                            a->devices_first, count, count == 1 ? "" : "s");
        return cli_fail(CLI_BAD_INPUT,
                        "--devices: there is no device %d; this host has %d CUDA "
                        "device%s, numbered from 0 (see convolve info)",
                        need - 1, count, count == 1 ? "" : "s");
    }
    if (a->devices_first) {
        a->device_list_count = a->devices_first;
        for (int k = 0; k < a->devices_first; k++)
            a->device_list[k] = k;
    }
    a->opt.devices = a->device_list;
    a->opt.device_count = a->device_list_count;
    return CLI_OK;
}

int cli_run(int argc, char **argv)
{
    cli_run_args a;
    cli_run_args_init(&a);
    int rc = cli_parse(&cli_run_command, argc, argv, &a);
    if (rc == CLI_DONE)
        rc = CLI_OK;
    else if (rc == CLI_OK && (rc = check_args(&a)) == CLI_OK &&
             (rc = resolve_devices(&a)) == CLI_OK) {
        if (a.output_dir) {
            rc = cli_batch(&a);
        } else {
            convolve_context *ctx = NULL;
            if (convolve_context_create(&ctx) != CONVOLVE_OK)
                rc = cli_fail(CLI_RESOURCE, "out of memory");
            else {
                cli_context_settings(ctx, &a);
                cli_signals_install();
                rc = run(ctx, &a);
            }
            convolve_context_free(ctx);
        }
    }
    cli_run_args_free(&a);
    /* cancelled (CLI_INTERRUPTED), or a signal while the result was saved:
     * end of it */
    cli_die_of_signal();
    return rc;
}
