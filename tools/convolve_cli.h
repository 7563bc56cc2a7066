/*
 * convolve_cli.h - the `convolve` program's commands: the arguments of
 * `convolve INPUT OUTPUT` and `convolve INPUT... --output-dir DIR` and their
 * description (tools/cli_spec.c, in the tools library, so that the documents
 * generator and other programs can reuse the option rows), the steps the
 * single-file and batch forms share (tools/cli_run.c), the batch form
 * (tools/cli_batch.c) and the subcommands (tools/cli_info.c, tools/bench.c).
 */
#ifndef CONVOLVE_TOOLS_CONVOLVE_CLI_H
#define CONVOLVE_TOOLS_CONVOLVE_CLI_H

#include "cli.h"

#include <pthread.h>
#include <stdatomic.h>

/* The most devices --devices names. */
#define CLI_MAX_DEVICES 64

/* When `convolve INPUT OUTPUT` maps .npy files (--mmap). */
typedef enum cli_mmap_when {
    CLI_MMAP_AUTO = 0, /* .npy in and out, without --time: map what can be mapped */
    CLI_MMAP_ON,       /* the same, and an input that must be loaded is an error */
    CLI_MMAP_OFF       /* load and save whole */
} cli_mmap_when;

/* What the options and positional arguments of `convolve INPUT OUTPUT` and
 * `convolve INPUT... --output-dir DIR` set. */
typedef struct cli_run_args {
    const char *input, *output; /* the single-file form's files, once checked */
    const char **pos;           /* the positional arguments, in order (malloc'd) */
    size_t npos, pos_cap;
    const char *weights, *filter;
    convolve_options opt;
    int n_origin;
    long origin[CONVOLVE_MAX_DIMS];
    int have_dtype;
    convolve_dtype out_dtype;
    int quality;
    long max_pixels;     /* --max-pixels; -1: the library's default */
    int png_compression; /* --png-compression; -1: the library's default */
    int time;
    int phases; /* --phases: each step's wall time on stderr */
    long repeat;
    int have_repeat;
    long warmup; /* untimed runs before --time's */
    int force;
    const char *wisdom;
    /* many files (cli_batch.c) */
    const char *output_dir;  /* --output-dir: NULL for the single-file form */
    const char *suffix;      /* --suffix, or NULL */
    const char *format;      /* --format: an extension without the dot, or NULL */
    const char *inputs_from; /* --inputs-from: a file of names, "-" for stdin */
    long jobs;               /* --jobs: 0 for one per CPU */
    int have_jobs;
    /* large arrays, devices, progress */
    cli_mmap_when mmap;               /* --mmap */
    int quiet, progress;              /* --quiet, --progress */
    int devices_first;                /* --devices N: the first N devices; 0 when not given */
    int device_list[CLI_MAX_DEVICES]; /* --devices LIST, then the devices resolved */
    int device_list_count;
    int devices_all; /* --devices all */
} cli_run_args;

/* The defaults: no files, library option defaults, --repeat 1. */
void cli_run_args_init(cli_run_args *a);

/* Applies the file settings of a (--max-pixels, --png-compression) to a new
 * context. */
void cli_context_settings(convolve_context *ctx, const cli_run_args *a);
/* Frees what parsing allocated (the list of positional arguments). */
void cli_run_args_free(cli_run_args *a);

/* `convolve INPUT OUTPUT [options]`, and the other commands of the program,
 * described for help texts and the man page. */
extern const cli_command cli_run_command;
extern const cli_command cli_info_command;
extern const cli_command cli_demo_command;

/* The option groups of `convolve INPUT OUTPUT`: the filter (--weights,
 * --filter), then everything else; their apply functions take a
 * cli_run_args. A program that takes the same options puts these groups in
 * its own command (copied at run time) and cli_run_args first in its
 * argument struct. */
extern const cli_option_group cli_run_groups[];
extern const size_t cli_run_group_count;

/* The words accepted in place of INPUT: "info", "demo", "bench", "help". */
extern const char *const cli_subcommands[];
extern const size_t cli_subcommand_count;

/* `convolve INPUT OUTPUT [options]` and `convolve INPUT... --output-dir DIR
 * [options]`: argv[0] is the program name. */
int cli_run(int argc, char **argv);

/* ---- what the single-file form and the batch share (tools/cli_run.c) ------------
 * Each function that can fail writes one line (without "convolve: ") into
 * msg[CLI_MSG_SIZE] and returns the exit code; CLI_OK on success. */
#define CLI_MSG_SIZE 4096

/* Weights read from a --weights file, before they meet an input. */
typedef struct cli_weights {
    const char *path;
    int text; /* a text file (may have fewer dimensions) */
    int ndim;
    size_t shape[CONVOLVE_MAX_DIMS];
    double *data; /* malloc'd, C order */
} cli_weights;

/* Reads the --weights file (.npy by content or name, else text). */
int cli_weights_read(convolve_context *ctx, const char *path, cli_weights *w, char *msg);
void cli_weights_free(cli_weights *w);

/* The filter (--weights as read into w, or --filter) and the options (with
 * --origin spread over the axes) for an input of ndim dimensions. */
int cli_filter_for(convolve_context *ctx, const cli_run_args *a, const cli_weights *w, int ndim,
                   convolve_filter **f, convolve_options *o, char *msg);

/* The result's element type when written in format f from input type t. */
convolve_dtype cli_output_dtype(const cli_run_args *a, convolve_format f, convolve_dtype t);

/* Can format f, for file path, hold the input's layout with element type t? */
int cli_check_output(convolve_context *ctx, const char *path, convolve_format f,
                     const convolve_layout *in, convolve_dtype t, char *msg);

/* Reads all of the file at path ("-": standard input) with one open and
 * reads to its end, so that pipes, FIFOs and /dev/stdin work: *data
 * (malloc'd, the caller frees it; a spare byte past *size) and *size.
 * Directories, devices and more than limit bytes are refused. CLI_OK, or an
 * exit code with msg saying "... <what> 'path' ...". */
int cli_read_all(const char *path, const char *what, size_t limit, unsigned char **data,
                 size_t *size, char *msg);

/* Writes into msg (CLI_MSG_SIZE bytes); returns code. */
int cli_msg(char *msg, int code, const char *fmt, ...) CLI_PRINTF(3, 4);

/* ---- .npy files mapped into memory (tools/cli_mapped.c) ------------------------ */

/* The device memory budget (convolve_options.device_memory_budget) of a
 * mapped run on the GPU when CONVOLVE_DEVICE_BUDGET sets none: larger runs
 * stream, so that resident memory stays bounded. */
#define CLI_MAPPED_DEVICE_BUDGET ((size_t)2 << 30)

/* Threads at most that fault in a mapped output ahead of a GPU run. */
#define CLI_POPULATE_THREADS 16

/* A .npy input mapped read-only. */
typedef struct cli_mapped_in {
    int fd;
    void *map; /* the whole file; NULL when not mapped */
    size_t map_bytes;
    convolve_layout layout; /* contiguous, C order, 1 channel */
    const void *data;       /* the array: map + data_offset */
    size_t data_offset, data_bytes;
    size_t released;  /* file bytes [0, released) given back */
    size_t last;      /* where the last range given back began */
    int drop_cache;   /* the pages given back leave the page cache too (a
                         file larger than half the memory) */
    const char *path; /* INPUT as given (messages) */
} cli_mapped_in;

/* A .npy output written through a mapped temporary file in its folder,
 * unnamed until complete where the file system allows. */
typedef struct cli_mapped_out {
    int fd;
    void *map; /* NULL when not mapped */
    size_t map_bytes;
    void *data; /* the array: map + data_offset */
    size_t data_offset, data_bytes;
    size_t released, last;
    struct cli_writeback *wb; /* the thread that hands released pages to
                                 writeback, or NULL */
    const char *path;         /* OUTPUT as given (messages) */
    char *target, *tmp;       /* the file replaced (a link's target), the temporary's name */
    int named;                /* the temporary file has the name tmp (else none yet) */
} cli_mapped_out;

void cli_mapped_in_init(cli_mapped_in *m);
void cli_mapped_out_init(cli_mapped_out *m);

/* Maps the .npy file at path (checked as convolve_array_load checks it).
 * CLI_OK with m->map set when mapped; CLI_OK with m->map NULL and a reason in
 * why[CLI_MSG_SIZE] when the data must be converted (other byte order,
 * Fortran order, misaligned): load it instead. Else an exit code and msg. */
int cli_map_input(convolve_context *ctx, const char *path, cli_mapped_in *m, char *why, char *msg);
void cli_unmap_input(cli_mapped_in *m);

/* Creates a temporary file beside path (a symbolic link's target; a
 * dangling link is refused) of the size of a .npy file of the layout, with
 * the owner (where permitted) and mode of the file it will replace, writes
 * its header and maps it. */
int cli_map_output(convolve_context *ctx, const char *path, const convolve_layout *layout,
                   cli_mapped_out *m, char *msg);
/* Syncs, unmaps, names (when unnamed) and renames the temporary file over
 * the output. On failure it is removed (exit code and msg). */
int cli_map_output_commit(cli_mapped_out *m, char *msg);
/* Unmaps and removes the temporary file (nothing is written). */
void cli_map_output_discard(cli_mapped_out *m);

/* The output's pages faulted in by threads of their own while the caller
 * goes on (plans a run on the GPU, which starts CUDA): the pages a CUDA run
 * faults in before its slabs anyway (an output of at most
 * CLI_MAPPED_DEVICE_BUDGET and a sixteenth of the memory), so that the
 * start-up and the faults overlap. */
typedef struct cli_populate {
    int threads; /* started; 0: none */
    pthread_t thread[CLI_POPULATE_THREADS];
    unsigned char *begin;
    size_t bytes;
    atomic_size_t next; /* the next chunk's offset */
} cli_populate;

/* Starts populating m's output, when mapped and within the bounds above
 * (else nothing: p->threads = 0). Never fails: a thread that cannot be
 * started leaves its share to the faults of the run. */
void cli_populate_start(cli_populate *p, cli_mapped_out *m);
/* Waits for cli_populate_start's threads: after the pages they have left
 * with `finish`, else after the chunks they are on (a run that will not
 * happen). Does nothing when none run. */
void cli_populate_end(cli_populate *p, int finish);

/* Gives back the pages of the arrays' first rows_done / rows_total (input
 * and output, either may be NULL or unmapped); the output's are first
 * handed to writeback. */
void cli_mapped_release(cli_mapped_in *in, cli_mapped_out *out, size_t rows_done,
                        size_t rows_total);

/* A SIGBUS from a page of a mapped file (the input truncated by another
 * program, the output's blocks lost) does not end the process: zero pages
 * replace the rest of that mapping and the failure is noted. 1 once one was
 * (the progress callback then cancels the run). */
int cli_mapped_failed(void);
/* After the run, before unmapping: CLI_OK when no page failed; else the
 * exit code and msg: the input shrank or could not be read (1), the
 * output's pages could not be written (2). The output must be discarded. */
int cli_mapped_check(const cli_mapped_in *in, const cli_mapped_out *out, char *msg);

/* ---- progress, cancellation (tools/cli_progress.c, cli_signals.c) --------------- */

/* What the progress callback keeps between calls. */
typedef struct cli_progress {
    int show;  /* 0 none; 1 a terminal line redrawn after ~1 s; 2 a line per
                                    update (--progress) */
    int drawn; /* something was shown */
    double last_draw_s;
    size_t calls;      /* callbacks so far */
    cli_mapped_in *in; /* mapped files whose pages done are given back, or NULL */
    cli_mapped_out *out;
} cli_progress;

/* show: none with quiet; every update when forced; else on a terminal. */
void cli_progress_init(cli_progress *p, int quiet, int forced, cli_mapped_in *in,
                       cli_mapped_out *out);
/* A convolve_progress_fn: user is a cli_progress. Returns non-zero (cancel)
 * once a signal was caught (cli_signals_install) or a page of a mapped
 * file failed (cli_mapped_failed). */
int cli_progress_callback(void *user, const convolve_progress *progress);
/* Ends the terminal line, if one was drawn. */
void cli_progress_finish(cli_progress *p);

/* Catches SIGINT and SIGTERM, and SIGHUP and SIGPIPE unless ignored when
 * the process started (nohup). While signals are deferred (cli_defer_signals(1): the
 * convolution and saving), the first one is remembered (the callback
 * cancels; the caller checks cli_interrupted and writes nothing); otherwise,
 * or on a second one (a SIGPIPE after the first signal is not counted), the
 * temporary output file (cli_signals_temp_path) is removed and the process
 * ends of the signal. */
void cli_signals_install(void);
void cli_defer_signals(int defer);
/* Names the temporary output file now existing under a name, which a
 * signal ending the process removes (NULL: none); and reads it back
 * (async-signal-safe, for cli_mapped.c's SIGBUS handler). */
void cli_signals_temp_path(const char *path);
const char *cli_signals_get_temp_path(void);
/* The signal caught while deferred, or 0. */
int cli_interrupted(void);
/* pthread_create with every signal blocked on the new thread, so that the
 * signals above reach the main thread; 0 or pthread_create's error. */
int cli_thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);
/* Ends the process of the signal caught, if any (exit status 128 + signal in
 * a shell: 130 for Ctrl-C); returns when there was none. */
void cli_die_of_signal(void);

/* `convolve INPUT... --output-dir DIR`, once the options are parsed and
 * checked (tools/cli_batch.c). */
int cli_batch(cli_run_args *a);
/* `convolve info`. */
int cli_info(int argc, char **argv);
/* `convolve demo [OUTPUT] [options]`: argv[0] is "demo". */
int cli_demo(int argc, char **argv);

#endif
