/*
 * cli_spec.c - the `convolve` program described once: the options of
 * `convolve INPUT OUTPUT` and `convolve INPUT... --output-dir DIR` (one row
 * each: name, value, --help text, the longer text of docs/cli.md and the man
 * page, what applying it does, what completes its value), the prose of the
 * usage text, and the other commands.
 * The parser, --help, docs/cli.md's tables, the man page and the bash
 * completion are all made from these tables (tools/cli_options.c,
 * tools/cli_docs.c).
 */
#include "convolve_cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void cli_run_args_init(cli_run_args *a)
{
    memset(a, 0, sizeof *a);
    convolve_options_init(&a->opt);
    a->repeat = 1;
    a->max_pixels = -1;
    a->png_compression = -1;
}

void cli_context_settings(convolve_context *ctx, const cli_run_args *a)
{
    /* the values were checked when parsed */
    if (a->max_pixels >= 0)
        convolve_context_set_max_pixels(ctx, (size_t)a->max_pixels);
    if (a->png_compression >= 0)
        convolve_context_set_png_compression(ctx, a->png_compression);
}

void cli_run_args_free(cli_run_args *a)
{
    free(a->pos);
    a->pos = NULL;
    a->npos = a->pos_cap = 0;
}

/* ---- what each option does --------------------------------------------------- */

#define ARGS(t) ((cli_run_args *)(t))

static int set_weights(void *t, const char *v)
{
    ARGS(t)->weights = v;
    return CLI_OK;
}

static int set_filter(void *t, const char *v)
{
    ARGS(t)->filter = v;
    return CLI_OK;
}

static int set_mode(void *t, const char *v)
{
    if (convolve_mode_parse(v, &ARGS(t)->opt.mode) != CONVOLVE_OK)
        return cli_fail(CLI_BAD_INPUT,
                        "unknown mode '%s': use reflect, constant, nearest, "
                        "mirror or wrap",
                        v);
    return CLI_OK;
}

static int set_cval(void *t, const char *v)
{
    if (!cli_parse_finite(v, &ARGS(t)->opt.cval))
        return cli_fail(CLI_BAD_INPUT, "--cval '%s' is not a finite number", v);
    return CLI_OK;
}

static int set_origin(void *t, const char *v)
{
    cli_run_args *a = ARGS(t);
    const char *p = v;
    a->n_origin = 0;
    for (;;) {
        char item[64];
        size_t len = strcspn(p, ",");
        long l;
        if (a->n_origin == CONVOLVE_MAX_DIMS || len == 0 || len >= sizeof item)
            return cli_fail(CLI_BAD_INPUT,
                            "--origin '%s': give 1 to 3 integers separated by "
                            "commas, e.g. --origin=-1,0,1",
                            v);
        memcpy(item, p, len);
        item[len] = '\0';
        if (!cli_parse_long(item, -1000000000L, 1000000000L, &l))
            return cli_fail(CLI_BAD_INPUT,
                            "--origin '%s': '%s' is not an integer from "
                            "-1000000000 to 1000000000",
                            v, item);
        a->origin[a->n_origin++] = l;
        if (!p[len])
            return CLI_OK;
        p += len + 1;
    }
}

static int set_correlate(void *t, const char *v)
{
    ARGS(t)->opt.operation = CONVOLVE_OP_CORRELATE;
    return CLI_OK;
}

static int set_backend(void *t, const char *v)
{
    if (convolve_backend_parse(v, &ARGS(t)->opt.backend) != CONVOLVE_OK)
        return cli_fail(CLI_BAD_INPUT, "unknown backend '%s': use auto, cpu or cuda", v);
    return CLI_OK;
}

static int set_strategy(void *t, const char *v)
{
    if (!*v)
        return cli_fail(CLI_BAD_INPUT, "--strategy needs a name (see convolve info)");
    ARGS(t)->opt.strategy = v;
    return CLI_OK;
}

static int set_autotune(void *t, const char *v)
{
    ARGS(t)->opt.autotune = 1;
    return CLI_OK;
}

static int set_wisdom(void *t, const char *v)
{
    if (!*v)
        return cli_fail(CLI_BAD_INPUT, "--wisdom needs a file name");
    ARGS(t)->wisdom = v;
    ARGS(t)->opt.autotune = 1;
    return CLI_OK;
}

static int set_output_dtype(void *t, const char *v)
{
    if (convolve_dtype_parse(v, &ARGS(t)->out_dtype) != CONVOLVE_OK)
        return cli_fail(CLI_BAD_INPUT,
                        "unknown output dtype '%s': use float32, float64, uint8 "
                        "or uint16",
                        v);
    ARGS(t)->have_dtype = 1;
    return CLI_OK;
}

static int set_threads(void *t, const char *v)
{
    long l;
    if (!cli_parse_long(v, 0, 4096, &l))
        return cli_fail(CLI_BAD_INPUT, "--threads '%s': give a count from 0 (all) to 4096", v);
    ARGS(t)->opt.threads = (int)l;
    return CLI_OK;
}

static int set_quality(void *t, const char *v)
{
    long l;
    if (!cli_parse_long(v, 1, 100, &l))
        return cli_fail(CLI_BAD_INPUT, "--quality '%s': give an integer from 1 to 100", v);
    ARGS(t)->quality = (int)l;
    return CLI_OK;
}

static int set_max_pixels(void *t, const char *v)
{
    if (!cli_parse_long(v, 0, LONG_MAX, &ARGS(t)->max_pixels))
        return cli_fail(CLI_BAD_INPUT, "--max-pixels '%s': give a pixel count, or 0 for no limit",
                        v);
    return CLI_OK;
}

static int set_png_compression(void *t, const char *v)
{
    long l;
    if (!cli_parse_long(v, 0, 9, &l))
        return cli_fail(CLI_BAD_INPUT,
                        "--png-compression '%s': give a level from 0 (fastest) to "
                        "9 (smallest)",
                        v);
    ARGS(t)->png_compression = (int)l;
    return CLI_OK;
}

static int set_time(void *t, const char *v)
{
    ARGS(t)->time = 1;
    return CLI_OK;
}

static int set_phases(void *t, const char *v)
{
    (void)v;
    ARGS(t)->phases = 1;
    return CLI_OK;
}

static int set_repeat(void *t, const char *v)
{
    if (!cli_parse_long(v, 1, 1000000, &ARGS(t)->repeat))
        return cli_fail(CLI_BAD_INPUT, "--repeat '%s': give a count from 1 to 1000000", v);
    ARGS(t)->have_repeat = 1;
    return CLI_OK;
}

static int set_warmup(void *t, const char *v)
{
    if (!cli_parse_long(v, 0, 1000000, &ARGS(t)->warmup))
        return cli_fail(CLI_BAD_INPUT, "--warmup '%s': give a count from 0 to 1000000", v);
    ARGS(t)->have_repeat = 1;
    return CLI_OK;
}

static int set_force(void *t, const char *v)
{
    ARGS(t)->force = 1;
    return CLI_OK;
}

static int set_output_dir(void *t, const char *v)
{
    if (!*v)
        return cli_fail(CLI_BAD_INPUT, "--output-dir needs a folder name");
    ARGS(t)->output_dir = v;
    return CLI_OK;
}

static int set_suffix(void *t, const char *v)
{
    if (strchr(v, '/'))
        return cli_fail(CLI_BAD_INPUT,
                        "--suffix '%s' holds a '/': it is added to file names; "
                        "put folders in --output-dir",
                        v);
    ARGS(t)->suffix = v;
    return CLI_OK;
}

static int set_format(void *t, const char *v)
{
    char probe[64];
    const char *ext = *v == '.' ? v + 1 : v;
    if (!*ext || strchr(ext, '/') || strchr(ext, '.') ||
        snprintf(probe, sizeof probe, "x.%s", ext) >= (int)sizeof probe ||
        convolve_format_from_path(probe) == CONVOLVE_FORMAT_AUTO) {
        char list[256] = "";
        for (size_t i = 0; cli_words_extension(i); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     cli_words_extension(i));
        return cli_fail(CLI_BAD_INPUT, "unknown --format '%s': give an output extension (%s)", v,
                        list);
    }
    ARGS(t)->format = ext;
    return CLI_OK;
}

static int set_inputs_from(void *t, const char *v)
{
    if (!*v)
        return cli_fail(CLI_BAD_INPUT, "--inputs-from needs a file name (or - for standard "
                                       "input)");
    ARGS(t)->inputs_from = v;
    return CLI_OK;
}

static int set_jobs(void *t, const char *v)
{
    if (!cli_parse_long(v, 0, 4096, &ARGS(t)->jobs))
        return cli_fail(CLI_BAD_INPUT, "--jobs '%s': give a count from 0 (one per CPU) to 4096", v);
    ARGS(t)->have_jobs = 1;
    return CLI_OK;
}

static int set_mmap(void *t, const char *v)
{
    cli_run_args *a = ARGS(t);
    if (!strcmp(v, "auto"))
        a->mmap = CLI_MMAP_AUTO;
    else if (!strcmp(v, "on"))
        a->mmap = CLI_MMAP_ON;
    else if (!strcmp(v, "off"))
        a->mmap = CLI_MMAP_OFF;
    else
        return cli_fail(CLI_BAD_INPUT, "--mmap '%s': use auto, on or off", v);
    return CLI_OK;
}

static const char *mmap_words(size_t i)
{
    static const char *const w[] = {"auto", "on", "off"};
    return i < 3 ? w[i] : NULL;
}

/* all | N | LIST (device numbers separated by commas; a list of one ends with
 * a comma: "2,") */
static int set_devices(void *t, const char *v)
{
    cli_run_args *a = ARGS(t);
    a->devices_all = a->devices_first = a->device_list_count = 0;
    if (!strcmp(v, "all")) {
        a->devices_all = 1;
        return CLI_OK;
    }
    long n;
    if (!strchr(v, ',')) {
        if (!cli_parse_long(v, 1, CLI_MAX_DEVICES, &n))
            return cli_fail(CLI_BAD_INPUT,
                            "--devices '%s': give all, a count from 1 to %d, or "
                            "device numbers separated by commas (0,2; one device: 2,)",
                            v, CLI_MAX_DEVICES);
        a->devices_first = (int)n;
        return CLI_OK;
    }
    for (const char *p = v; *p;) {
        char item[32];
        size_t len = strcspn(p, ",");
        if (len > 0 && len < sizeof item) {
            memcpy(item, p, len);
            item[len] = '\0';
        }
        if (len == 0 || len >= sizeof item || !cli_parse_long(item, 0, 1023, &n))
            return cli_fail(CLI_BAD_INPUT,
                            "--devices '%s': '%.*s' is not a device number "
                            "(0 to 1023)",
                            v, (int)len, p);
        for (int k = 0; k < a->device_list_count; k++)
            if (a->device_list[k] == (int)n)
                return cli_fail(CLI_BAD_INPUT, "--devices '%s': device %ld is named twice", v, n);
        if (a->device_list_count == CLI_MAX_DEVICES)
            return cli_fail(CLI_BAD_INPUT, "--devices '%s': more than %d devices", v,
                            CLI_MAX_DEVICES);
        a->device_list[a->device_list_count++] = (int)n;
        p += len;
        if (*p == ',')
            p++;
    }
    return CLI_OK;
}

static int set_quiet(void *t, const char *v)
{
    ARGS(t)->quiet = 1;
    return CLI_OK;
}

static int set_progress(void *t, const char *v)
{
    ARGS(t)->progress = 1;
    return CLI_OK;
}

static int show_help(void *t, const char *v)
{
    cli_print_help(&cli_run_command, stdout);
    return CLI_DONE;
}

static int show_version(void *t, const char *v)
{
    printf("convolve %s\n", convolve_version_string());
    return CLI_DONE;
}

/* INPUT, then OUTPUT; or, with --output-dir, INPUTs: kept in order, told
 * apart once every option is parsed. */
static int take_positional(void *t, const char *arg)
{
    cli_run_args *a = ARGS(t);
    if (a->npos == a->pos_cap) {
        size_t cap = a->pos_cap ? 2 * a->pos_cap : 8;
        const char **p = realloc(a->pos, cap * sizeof *p);
        if (!p)
            return cli_fail(CLI_RESOURCE, "out of memory");
        a->pos = p;
        a->pos_cap = cap;
    }
    a->pos[a->npos++] = arg;
    return CLI_OK;
}

/* ---- the tables ------------------------------------------------------------------ */

static const cli_option k_filter_options[] = {
    {"weights", 0, "FILE",
     ".npy with as many dimensions as the input, or a text file of whitespace-separated "
     "numbers, a line a row, a blank line between planes; text with fewer dimensions gets "
     "leading axes of 1",
     "A `.npy` file with as many dimensions as the input, or a text file (any other name): "
     "whitespace-separated numbers, one row per line, a blank line between the planes of 3-D "
     "weights, `#` starting a comment. Text weights with fewer dimensions than the input get "
     "leading axes of 1, so a one-line file `1 2 1` filters each row of an image. Weights may "
     "have any size, odd or even, also longer than the input.",
     set_weights, CLI_COMPLETE_FILE, NULL, 0},
    {"filter", 0, "SPEC", "",
     "A named filter (see the table of named filters), made with the input's number of "
     "dimensions.",
     set_filter, CLI_COMPLETE_WORDS, cli_words_named_filter, CLI_HELP_LISTS_WORDS},
};

static const cli_option k_batch_options[] = {
    {"output-dir", 0, "DIR",
     "convolve every INPUT (any number of them) and write each result into DIR, named after "
     "its input (see Many files at once)",
     "makes every positional argument an INPUT and writes each result into DIR (which must "
     "exist) as `DIR/NAME`: NAME is the input's file name without its folder, with `--suffix` "
     "put before its extension and that extension replaced by `--format`'s. Files are "
     "convolved in parallel (`--jobs`); one that fails is reported and the others go on (see "
     "Many files at once below)",
     set_output_dir, CLI_COMPLETE_DIR, NULL, 0},
    {"suffix", 0, "S",
     "added to each output's name before its extension (default none): --suffix _blur makes "
     "DIR/a_blur.png of a.png",
     "added to each output's name before its extension (default none): with `--suffix _blur`, "
     "`a.png` gives `DIR/a_blur.png`",
     set_suffix, CLI_COMPLETE_NONE, NULL, 0},
    {"format", 0, "EXT", "each output's extension, hence its format (default: the input's); one of",
     "each output's extension, hence its format: an extension of the Files table (`npy`, "
     "`png`, `jpg`, ...; default: the input's own)",
     set_format, CLI_COMPLETE_WORDS, cli_words_extension, CLI_HELP_LISTS_WORDS},
    {"inputs-from", 0, "FILE",
     "more INPUTs: FILE's lines, or its NUL-separated names if it holds a NUL (find -print0); "
     "- reads standard input",
     "more INPUTs, after those on the command line: one name per line of FILE, or, when FILE "
     "holds a NUL byte, NUL-separated names (as `find -print0` writes them); empty names are "
     "skipped; `-` reads the list from standard input",
     set_inputs_from, CLI_COMPLETE_FILE, NULL, 0},
    {"jobs", 'j', "N", "files convolved at once (default 0: one per CPU, at most one per file)",
     "files convolved at once, each by a worker thread with its own library context (default "
     "0: one per CPU, at most one per file). Unless `--threads` says otherwise, each worker's "
     "convolutions share out the CPUs: CPUs / N threads each",
     set_jobs, CLI_COMPLETE_NONE, NULL, 0},
};

static const cli_option k_other_options[] = {
    {"mode", 0, "M", "reflect (default), constant, nearest, mirror, wrap",
     "how the input is extended past its edges: `reflect` (default, as scipy), `constant`, "
     "`nearest`, `mirror`, `wrap`",
     set_mode, CLI_COMPLETE_WORDS, cli_words_mode, 0},
    {"cval", 0, "V", "the value outside the input in constant mode (default 0)",
     "the value outside the input in `constant` mode (default 0)", set_cval, CLI_COMPLETE_NONE,
     NULL, 0},
    {"origin", 0, "O[,O[,O]]", "shift of the filter per axis, as scipy; one value for all axes",
     "scipy's origin per axis; one value applies to every axis. Each must lie in "
     "`[-(K/2), (K-1)/2]` for a filter extent K",
     set_origin, CLI_COMPLETE_NONE, NULL, 0},
    {"correlate", 0, NULL, "correlate instead of convolve (the weights are not flipped)",
     "correlate (weights not flipped) instead of convolve", set_correlate, CLI_COMPLETE_NONE, NULL,
     0},
    {"backend", 0, "B", "auto (default), cpu, cuda", "`auto` (default), `cpu`, `cuda`", set_backend,
     CLI_COMPLETE_WORDS, cli_words_backend, 0},
    {"strategy", 0, "NAME", "a strategy from `convolve info` (default auto)",
     "a strategy listed by `convolve info` (default `auto`)", set_strategy, CLI_COMPLETE_WORDS,
     cli_words_strategy, 0},
    {"autotune", 0, NULL, "time the strategies that serve and keep the fastest",
     "with no strategy named: times every strategy of the backend that serves the case "
     "(1 warm-up, median of 5, on resident data) and runs the fastest",
     set_autotune, CLI_COMPLETE_NONE, NULL, 0},
    {"wisdom", 0, "FILE",
     "remember what --autotune measured in FILE, per device and problem class, and reuse it "
     "(implies --autotune)",
     "implies `--autotune`; loads FILE if it exists (a malformed one is an error, exit 1), "
     "reuses what it says for the same device and problem class (dimensionality, types, "
     "channels, filter extents and kind, mode, extents rounded up to powers of two), and saves "
     "new measurements back to FILE atomically. The API: `convolve_wisdom_load`/`_save`",
     set_wisdom, CLI_COMPLETE_FILE, NULL, 0},
    {"output-dtype", 0, "T",
     "float32, float64, uint8, uint16 (default: the input's; float data written to "
     "PNG/JPEG/PGM/PPM defaults to uint8). Integers are rounded to nearest (ties to even) and "
     "saturated.",
     "`float32`, `float64`, `uint8`, `uint16`. Default: the input's type, except that float "
     "data written to PNG, JPEG, PGM or PPM becomes uint8. Integer outputs are rounded to "
     "nearest (ties to even) and saturated, as numpy's `clip(rint(x))`",
     set_output_dtype, CLI_COMPLETE_WORDS, cli_words_dtype, 0},
    {"threads", 0, "N", "CPU threads (default 0: all; with --output-dir, per job)",
     "CPU threads, 0 for all (default); with `--output-dir`, threads of each job's "
     "convolutions (0: the CPUs divided among the jobs)",
     set_threads, CLI_COMPLETE_NONE, NULL, 0},
    {"quality", 0, "Q", "JPEG quality 1..100 (default 95)", NULL, set_quality, CLI_COMPLETE_NONE,
     NULL, 0},
    {"png-compression", 0, "N", "PNG zlib level 0 (fastest) .. 9 (smallest); default 1",
     "zlib level of PNG outputs, 0 (stored: fastest, largest) to 9 (smallest, many times "
     "slower); default 1, fast. A 12-megapixel RGB photo: level 1 0.3 s and 8.9 MB, 6 (what "
     "libpng does by default) 2.4 s and 7.2 MB, 9 34 s and 6.6 MB",
     set_png_compression, CLI_COMPLETE_NONE, NULL, 0},
    {"max-pixels", 0, "N",
     "refuse image files that declare more pixels (default 268435456 = 2^28; 0: no limit)",
     "image INPUTs (PNG, JPEG, PGM/PPM, TIFF; a TIFF stack's pages together) that declare more "
     "pixels than N are refused from their header (exit 1) before anything is decoded, so that "
     "a small file cannot take gigabytes and minutes to read (a decompression bomb). Default "
     "268435456 (2^28, e.g. 16384 x 16384); 0 lifts the limit. `.npy` and text files are not "
     "limited",
     set_max_pixels, CLI_COMPLETE_NONE, NULL, 0},
    {"time", 0, NULL,
     "print `time_ms: <median> (n=<N>)` on standard error: the time of the convolution alone "
     "(no file I/O, no planning)",
     "prints exactly one line on standard error, `time_ms: <median> (n=<N>)`: the median time "
     "of `convolve_execute` alone (no file I/O, plan creation excluded)",
     set_time, CLI_COMPLETE_NONE, NULL, 0},
    {"phases", 0, NULL,
     "print `phases_ms: open A plan B filter C save D total E` on standard error: each step's "
     "wall time",
     "prints one line on standard error, `phases_ms: open A plan B filter C save D total E`: "
     "the wall time, in milliseconds, of opening (reading or mapping the input, reading the "
     "weights, creating or mapping the output), planning, the convolution (every run of "
     "`--repeat`), saving (encoding and writing, or syncing a mapped output to disk, then "
     "renaming it over OUTPUT) and of them all; the single-file form only. docs/cli.md says "
     "what bounds each step",
     set_phases, CLI_COMPLETE_NONE, NULL, 0},
    {"repeat", 0, "N", "run the convolution N times for --time (default 1)",
     "runs the convolution N times for `--time` (default 1)", set_repeat, CLI_COMPLETE_NONE, NULL,
     0},
    {"warmup", 0, "N", "with --time, first run it N times untimed (default 0)",
     "with `--time`, first runs the convolution N times untimed (default 0): the first run "
     "pays for touching the output's pages and starting threads, and the CPU's clock may take "
     "a few milliseconds to ramp up, so the median then gives the steady state",
     set_warmup, CLI_COMPLETE_NONE, NULL, 0},
    {"force", 0, NULL, "allow OUTPUT to be the input file (with --output-dir: each its own)",
     "allows OUTPUT to be the input (or weights) file; with `--output-dir`, allows each result "
     "to replace its own input (never another file's input)",
     set_force, CLI_COMPLETE_NONE, NULL, 0},
    {"help", 'h', NULL, "this text", "usage text with examples", show_help, CLI_COMPLETE_NONE, NULL,
     0},
    {"version", 0, NULL, "the version", NULL, show_version, CLI_COMPLETE_NONE, NULL, 0},
};

static const cli_option k_large_options[] = {
    {"mmap", 0, "WHEN",
     "auto (default): a .npy INPUT and OUTPUT are mapped, not loaded, so files larger than "
     "memory work (not with --time); on: the same, and an input that must be converted (other "
     "byte order, Fortran order) is an error; off: load and save whole",
     "`auto` (default): with a `.npy` INPUT and a `.npy` OUTPUT, the input is memory-mapped "
     "(not read) and the output written through a memory-mapped temporary file, so that "
     "files larger than memory work with bounded resident memory (see Files larger than "
     "memory); not with `--time`, which times resident data. An input stored in the other "
     "byte order or in Fortran order is loaded whole (converted) instead. `on`: the same, "
     "but such an input, or a file that is not `.npy`, is an error (exit 1), and `--time` "
     "is allowed. `off`: files are loaded and saved whole",
     set_mmap, CLI_COMPLETE_WORDS, mmap_words, 0},
    {"devices", 0, "all|N|LIST",
     "the CUDA devices a run spreads over: all, the first N, or numbers such as 0,2 (one "
     "device: 2,); default: the current device",
     "the CUDA devices a run on host memory spreads over (`convolve_options.devices`): `all` "
     "(every device of the host), `N` (the first N: devices 0 to N-1), or device numbers "
     "separated by commas (`0,2`; a list of one ends with a comma: `2,`). Default: the "
     "current device (0, or the first of `CUDA_VISIBLE_DEVICES`). The work is cut into slabs "
     "shared among the devices; results do not depend on the devices. More devices than the "
     "host has is an error (exit 1); ignored with `--backend cpu`",
     set_devices, CLI_COMPLETE_NONE, NULL, 0},
    {"progress", 0, NULL,
     "show progress on standard error even when it is not a terminal (a line per update)",
     "shows progress on standard error even when it is not a terminal, a line per update "
     "(slab): `convolve:  45% (9/20 slabs), 1.20 GB/s, 12 s left`. Without it, progress is "
     "shown only on a terminal, for runs longer than about a second, on one line redrawn in "
     "place",
     set_progress, CLI_COMPLETE_NONE, NULL, 0},
    {"quiet", 'q', NULL, "no progress on standard error (errors are still printed)",
     "shows no progress (errors, `--time` and the batch summary are still printed)", set_quiet,
     CLI_COMPLETE_NONE, NULL, 0},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const cli_option_group cli_run_groups[] = {
    {"Filter", "exactly one", k_filter_options, COUNT(k_filter_options)},
    {"Many files", NULL, k_batch_options, COUNT(k_batch_options)},
    {"Options", "--opt VALUE or --opt=VALUE; negative numbers are values; -- ends options",
     k_other_options, COUNT(k_other_options)},
    {"Large arrays, devices, progress", NULL, k_large_options, COUNT(k_large_options)},
};
const size_t cli_run_group_count = COUNT(cli_run_groups);

static const cli_text k_before[] = {
    {"Files", "format by extension; on input also by magic number",
     "  .npy              float32, float64, uint8, uint16; either byte order, C or Fortran\n"
     "                    order; 1 to 3 dimensions\n"
     "  .png              8/16-bit gray, gray+alpha, RGB, RGBA (weights apply per channel)\n"
     "  .jpg .jpeg        8-bit gray or RGB\n"
     "  .pgm .ppm .pnm    P2 P3 P5 P6, 8 or 16 bits (written as P5/P6)\n"
     "  .tif .tiff        8/16-bit or float32/64; gray, gray+alpha, RGB, RGBA; pages are a\n"
     "                    3-D stack (read and written)\n"
     "  .txt              numbers, as for text weights; written from float data, 1-D or 2-D\n",
     1},
};

static const cli_text k_after[] = {
    {"Output", NULL,
     "written to a temporary file in OUTPUT's folder (without a name until complete, where the "
     "file system allows) renamed over OUTPUT when complete: a failed or killed run leaves any "
     "old OUTPUT untouched. A replaced OUTPUT keeps its mode (and owner and group, where "
     "permitted). An OUTPUT that is a folder is refused: name a file, or use --output-dir; "
     "so is, as cp does, a symbolic link to a file that does not exist.",
     0},
    {"Files larger than memory", NULL,
     "With a .npy INPUT and a .npy OUTPUT (--mmap auto, the default; not with --time), the "
     "input is memory-mapped instead of read, and the output is written through a "
     "memory-mapped temporary file beside OUTPUT, sized up front and renamed over OUTPUT when "
     "complete. An INPUT that another program truncates meanwhile ends the run with exit 1, "
     "nothing written. The library works in slabs along the slowest axis and, after each, the "
     "pages "
     "of both files that are done are given back (madvise MADV_DONTNEED; the output's are "
     "handed to writeback first), so resident memory stays bounded whatever the file size "
     "(see docs/cli.md for the bound). An input in the other byte order or in Fortran order "
     "is loaded whole and converted. With --output-dir, files are loaded and saved whole.",
     0},
    {"Progress and Ctrl-C", NULL,
     "On a terminal, runs longer than about a second show progress on standard error (slabs "
     "done, throughput, time left); --quiet hides it, --progress shows it anywhere. Ctrl-C "
     "(SIGINT; also SIGTERM, SIGHUP, SIGPIPE) stops the run cleanly: no slab starts after it, "
     "nothing is written (an old OUTPUT stays as it was, no temporary file is left), and "
     "convolve ends of the signal (exit status 130 in a shell; 143 for SIGTERM, 129 for "
     "SIGHUP, 141 for SIGPIPE).",
     0},
    {"Many files at once", NULL,
     "Every INPUT's result goes to DIR/NAME, NAME being the input's file name with --suffix "
     "before its extension and that extension replaced by --format's (an input without a known "
     "extension needs --format). Before any work the command is refused (exit 1) when two "
     "inputs would give the same output (the same name, or one file through a symbolic link), "
     "when an output would replace an input (with --force: "
     "only its own), or for - as an INPUT (list names on standard input with --inputs-from -). "
     "--jobs workers convolve the files, each with its own library context, filters, and one "
     "plan per distinct layout (shape, element type, channels) reused for every file of that "
     "layout. With --backend cuda the workers load and save files in parallel while the "
     "convolutions go one at a time through a single GPU context (one plan per layout); with "
     "--backend auto in a build with CUDA, that context decides per layout whether the GPU "
     "pays, and layouts it leaves to the CPU run on the workers. A file that fails prints "
     "`convolve: INPUT: <reason>`, writes nothing (an old output stays as it was) and does not "
     "stop the others. The last line on standard error sums up: `convolve: N files: D done, F "
     "failed; P plans; T s`.",
     0},
    {"Exit codes", NULL,
     "0 success; 1 bad input or usage (options, unreadable or malformed files, bad filters or "
     "origins, unsupported combinations); 2 resource or device failure (out of memory, CUDA "
     "error, writing the output failed); 130 interrupted by Ctrl-C, nothing written (the "
     "process ends of SIGINT). With --output-dir: 0 when every file was written, else the "
     "highest code of the files that failed.",
     0},
    {"Examples", NULL,
     "  convolve photo.jpg blurred.png --filter gaussian:2\n"
     "  convolve scan.png edges.png --filter sobel-x --mode nearest\n"
     "  convolve signal.npy out.npy --weights taps.txt --mode wrap --correlate\n"
     "  convolve volume.npy out.npy --weights k.npy --mode constant --cval -1 --origin=-1,0,1\n"
     "  convolve stack.tif blurred.tif --filter gaussian:1.5\n"
     "  convolve big.npy out.npy --filter box:3 --backend cuda --time --repeat 20\n"
     "  convolve huge.npy out.npy --filter gaussian:2 --backend cuda --devices all\n"
     "  convolve *.jpg --output-dir blurred --suffix _blur --format png --filter gaussian:2\n"
     "  find scans -name '*.png' -print0 | convolve --inputs-from - --output-dir out --filter "
     "box:2\n"
     "  convolve demo\n",
     1},
};

const cli_command cli_run_command = {
    "convolve",
    "convolve --help",
    "convolve INPUT OUTPUT (--weights FILE | --filter NAME[:ARGS]) [options]\n"
    "convolve INPUT... --output-dir DIR (--weights FILE | --filter NAME[:ARGS]) [options]\n"
    "convolve info | demo [OUTPUT] [options] | bench [options] | --help | --version",
    "convolve signals, images and volumes on CPUs and NVIDIA GPUs",
    "Convolves (or correlates) a 1-D signal, 2-D image or 3-D volume with scipy.ndimage's "
    "semantics, on the CPU or an NVIDIA GPU; with --output-dir, many files at once.",
    k_before,
    COUNT(k_before),
    cli_run_groups,
    COUNT(cli_run_groups),
    k_after,
    COUNT(k_after),
    20,
    take_positional,
};

const cli_command cli_info_command = {
    "convolve info",
    "convolve --help",
    "convolve info",
    "describe the build and the GPUs",
    "Prints the version, the backends built, the strategies (the backend and dimensions each "
    "serves), the current GPU (name, memory, compute capability) or why there is none, and "
    "every CUDA device of the host by number (the numbers --devices takes).",
    NULL,
    0,
    NULL,
    0,
    NULL,
    0,
    20,
    NULL,
};

const cli_command cli_demo_command = {
    "convolve demo",
    "convolve --help",
    "convolve demo [OUTPUT] [options]",
    "blur the bundled photo",
    "Blurs the bundled photo grace_hopper.jpg with gaussian:2 and says where it wrote the "
    "result (default ./grace_hopper_blurred.png). The photo is looked for in "
    "$CONVOLVE_DATA_DIR, then in the source tree's data/, then in the installed "
    "share/convolve/. Options other than --weights and --filter (e.g. --backend cpu, --time) "
    "are passed on to the convolution.",
    NULL,
    0,
    NULL,
    0,
    NULL,
    0,
    20,
    NULL,
};

const char *const cli_subcommands[] = {"info", "demo", "bench", "help"};
const size_t cli_subcommand_count = COUNT(cli_subcommands);
